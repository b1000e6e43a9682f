//! The one test helper of the end-to-end tests: run the `schedlab` binary, read what it printed,
//! give each test a fresh folder, find the shared public traces. [`live`]: the session helpers
//! of the live-mode tests.

#![allow(dead_code)]

pub mod fake_coordinator;
pub mod live;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

pub fn schedlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_schedlab")).args(args).output().expect("schedlab runs")
}

pub fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

pub fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A fresh, empty directory `suite/name` under the target dir for one test's files.
pub fn scratch(suite: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(suite).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("scratch dir");
    dir
}

/// A file of `../shared/traces`, or `None` (saying what was skipped) when it is absent.
pub fn shared_trace(relative: &str) -> Option<PathBuf> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces").join(relative);
    if path.exists() {
        Some(path)
    } else {
        eprintln!("SKIPPED: {} not found; this test checked nothing", path.display());
        None
    }
}

pub fn read_json(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).expect("file exists")).expect("valid JSON")
}
