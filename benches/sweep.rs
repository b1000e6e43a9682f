//! `schedlab sweep` of 6 policies x 5 seeds (30 runs) of philly.csv (82,247 jobs) on 480 GPUs,
//! end to end: the sweep of docs/sweeps-and-regression.md, reading the trace, every run on every core, and
//! every file the sweep writes into its output folder.
//!
//! `cargo bench --bench sweep`. The sweep lives in the `schedlab` binary (src/cli/sweep.rs;
//! there is no library target), so the bench runs that binary, as benches/report.rs does for
//! its setup, with the same arguments: nothing of the sweep is re-implemented here. Process
//! start-up is in the time, as it is for a user. Without ../shared/traces the bench says
//! SKIPPED and measures nothing.

use std::path::PathBuf;
use std::process::{Command, Stdio};

fn main() {
    divan::main();
}

/// The sweep of docs/sweeps-and-regression.md (and benches/report.rs's).
const POLICIES: &[&str] = &["fifo", "fifo[skip=true]", "sjf", "srtf", "easy-backfill", "fifo[placement=spread]"];

fn trace() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/philly-pollux/philly.csv")
}

/// The sweep's arguments, writing into `out`.
fn args(out: &std::path::Path) -> Vec<String> {
    let mut args: Vec<String> = vec!["sweep".into(), "--trace".into(), trace().display().to_string()];
    args.extend(["--format", "philly", "--cluster", "60x8:V100"].map(String::from));
    for policy in POLICIES {
        args.extend(["--policy".into(), policy.to_string()]);
    }
    args.extend(["--seeds".into(), "0..5".into(), "--out".into(), out.display().to_string()]);
    args
}

// One sample is one whole sweep (several seconds), so few samples.
#[divan::bench(sample_count = 3, sample_size = 1)]
fn sweep_philly_6_policies_5_seeds(bencher: divan::Bencher) {
    if !trace().is_file() {
        eprintln!("SKIPPED sweep: {} not found; this bench measured nothing", trace().display());
        return;
    }
    let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-sweep");
    bencher
        // A sweep writes into a new or empty folder: clear the last sample's, outside the time.
        .with_inputs(|| {
            let _ = std::fs::remove_dir_all(&out);
            args(&out)
        })
        .bench_values(|args| {
            let status = Command::new(env!("CARGO_BIN_EXE_schedlab"))
                .args(&args)
                .stdout(Stdio::null())
                .status()
                .expect("schedlab runs");
            assert!(status.success(), "the sweep failed");
        });
}
