//! Shared helpers for the integration tests: where the real traces live.
#![allow(dead_code)] // each test file uses its own subset

pub mod damage;

use std::path::PathBuf;

/// `../shared/traces` next to the workspace root.
fn data_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces")
}

/// The real traces, or `None` (with a note on stderr) when this checkout has no data; tests
/// that need them then return without checking anything.
pub fn shared_traces() -> Option<PathBuf> {
    let dir = data_dir();
    if dir.is_dir() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: ../shared/traces not found; importer facts not checked");
        None
    }
}

/// The first `lines` lines of a real trace file, for mutation tests; `None` without data.
pub fn head_of(relative: &str, lines: usize) -> Option<String> {
    let text = std::fs::read_to_string(data_dir().join(relative)).ok()?;
    Some(text.split_inclusive('\n').take(lines).collect())
}
