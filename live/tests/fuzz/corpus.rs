//! The committed corpus (`tests/fuzz_corpus/`, the reproducers among them): bodies
//! checked on every run, and the valid bodies damage starts from.

use super::harness::all_classes;
use std::path::{Path, PathBuf};

fn corpus_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fuzz_corpus")
}

/// The corpus files whose names start with `prefix` (`job-`, `register-`, `heartbeat-`,
/// `reply-`), by name: (name, bytes).
pub fn corpus(prefix: &str) -> Vec<(String, Vec<u8>)> {
    let mut files: Vec<(String, Vec<u8>)> = std::fs::read_dir(corpus_dir())
        .expect("tests/fuzz_corpus")
        .map(|e| e.expect("a corpus entry").path())
        .filter(|p| p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with(prefix)))
        .map(|p| (p.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&p).expect("a corpus file")))
        .collect();
    files.sort();
    files
}

/// The bytes of the corpus files of each prefix in turn.
pub fn bodies(prefixes: &[&str]) -> Vec<Vec<u8>> {
    prefixes.iter().flat_map(|p| corpus(p)).map(|(_, bytes)| bytes).collect()
}

/// Job bodies to damage: the corpus's (those with checkpoints or restart overheads only with
/// SCHEDLAB_FUZZ_ALL).
pub fn job_seeds() -> Vec<Vec<u8>> {
    let all = all_classes();
    bodies(&["job-"])
        .into_iter()
        .filter(|b| all || !["checkpoint_s", "restart_overhead"].iter().any(|f| String::from_utf8_lossy(b).contains(f)))
        .collect()
}
