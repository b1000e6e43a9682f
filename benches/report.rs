//! `schedlab report` over a sweep of 6 policies x 5 seeds (30 runs) of philly.csv (82,247 jobs)
//! on 480 GPUs: reading every run folder (summary.json, jobs.csv, timeseries.csv,
//! queue_timeseries.csv), building and drawing every chart, and writing the page in memory.
//!
//! `cargo bench --bench report`. The sweep is made once, before measuring, by the `schedlab`
//! binary (in the bench's temporary folder). Without ../shared/traces the bench says so and
//! uses a synthetic workload of the same size instead.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

fn main() {
    divan::main();
}

const POLICIES: &[&str] = &["fifo", "fifo[skip=true]", "sjf", "srtf", "easy-backfill", "fifo[placement=spread]"];

/// The sweep folder, made on first use.
fn sweep() -> &'static Path {
    static SWEEP: OnceLock<PathBuf> = OnceLock::new();
    SWEEP.get_or_init(|| {
        let out = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-report-sweep");
        let _ = std::fs::remove_dir_all(&out);
        let trace = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/philly-pollux/philly.csv");
        let mut args: Vec<String> = vec!["sweep".into(), "--cluster".into(), "60x8:V100".into()];
        if trace.is_file() {
            args.extend(["--trace".into(), trace.display().to_string(), "--format".into(), "philly".into()]);
        } else {
            eprintln!(
                "SKIPPED philly: {} not found; measuring a synthetic sweep of the same size instead",
                trace.display()
            );
            args.extend(["--jobs".into(), "82247".into(), "--load".into(), "1.1".into()]);
        }
        for policy in POLICIES {
            args.extend(["--policy".into(), policy.to_string()]);
        }
        args.extend(["--seeds".into(), "0..5".into(), "--out".into(), out.display().to_string()]);
        let status = Command::new(env!("CARGO_BIN_EXE_schedlab")).args(&args).status().expect("schedlab runs");
        assert!(status.success(), "the sweep for the report bench failed");
        out
    })
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn report_philly_sweep(bencher: divan::Bencher) {
    let dir = sweep();
    bencher.bench(|| {
        let input = reports::report::load(dir).expect("the sweep loads");
        reports::report::render(&input).expect("the report renders").html.len()
    });
}
