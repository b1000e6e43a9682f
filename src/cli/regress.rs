//! `schedlab regress`: CI regression of scheduling metrics. Runs the fixed sweep a spec file
//! describes (runs in parallel, results in key order), compares every metric and the digest
//! of each run with a committed baseline under the spec's tolerances, prints the diff table,
//! and exits 1 on a regression (2 on bad input). `--bless` writes the baseline instead.
//!
//! The spec is read and planned by `run::many::RegressSpec`, run by `run::many::Executor`
//! with the runner every command uses, and compared by `reports::regress`; here are the
//! files, the printing and the exit code.

use super::{CliResult, emit};
use clap::Args;
use reports::regress::{self, Baseline, BaselineRun};
use run::many::{Executor, RegressSpec};
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct RegressArgs {
    /// The sweep and its tolerances (TOML; see regress/regress.toml and docs/sweeps-and-regression.md).
    #[arg(long)]
    spec: PathBuf,
    /// The committed baseline (JSON) to compare with, or to write with --bless.
    #[arg(long)]
    baseline: PathBuf,
    /// Accept the current numbers: write them as the baseline, print what changed, exit 0.
    #[arg(long)]
    bless: bool,
    /// Print every metric of every run, not only those that moved.
    #[arg(long)]
    all: bool,
}

pub fn run(args: RegressArgs) -> CliResult {
    let runner = super::runner().keeping_traces();
    let spec_text =
        std::fs::read_to_string(&args.spec).map_err(|e| format!("cannot read {}: {e}", args.spec.display()))?;
    let spec = RegressSpec::parse(&spec_text, &args.spec, super::registry())
        .map_err(|e| format!("spec {}: {e}", args.spec.display()))?;
    let baseline = read_baseline(&args.baseline, args.bless)?;

    let runs = spec.runs().map_err(|e| format!("spec {}: {e}", args.spec.display()))?;
    let started = Instant::now();
    let executor = Executor::new(None)?;
    eprintln!("regress: {} runs on {} threads", runs.len(), executor.threads());
    let done = executor
        .execute(&runner, runs.len(), |i| Ok(runs[i].1.clone()))
        .map_err(|failed| format!("spec {}: run {}: {}", args.spec.display(), runs[failed.index].0, failed.error))?;
    let fresh: Vec<BaselineRun> =
        runs.into_iter().zip(&done).map(|((key, _), done)| BaselineRun::of(key, &done.summary)).collect();
    eprintln!("regress: ran in {:.3} s", started.elapsed().as_secs_f64());
    // Compare what the baseline file will hold: written and read back, floats included.
    let text = Baseline::new(fresh).to_json();
    let now = Baseline::parse(&text).map_err(|e| format!("the fresh baseline does not read back: {e}"))?;

    let comparison = regress::compare(&baseline, &now, &spec.check);
    emit(comparison.table(args.all))?;
    if args.bless {
        if let Some(dir) = args.baseline.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(&args.baseline, &text).map_err(|e| format!("cannot write {}: {e}", args.baseline.display()))?;
        let changed = comparison.changed_runs().len();
        emit(format_args!(
            "blessed: wrote {} ({} runs; {changed} new, changed or removed)\n",
            args.baseline.display(),
            now.runs.len()
        ))?;
        return Ok(());
    }
    if comparison.failed() {
        emit(format_args!(
            "FAILED: the sweep differs from {}. If the new numbers are intended, accept them with\n  \
             schedlab regress --spec {} --baseline {} --bless\nand commit the baseline.\n",
            args.baseline.display(),
            args.spec.display(),
            args.baseline.display()
        ))?;
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(1);
    }
    emit("PASSED\n")
}

/// The baseline file; none yet (or unreadable) is fine with --bless, which writes it.
fn read_baseline(path: &Path, bless: bool) -> Result<Baseline, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && bless => return Ok(Baseline::new(Vec::new())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("baseline {} does not exist; write it with --bless", path.display()));
        }
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    match Baseline::parse(&text) {
        Ok(baseline) => Ok(baseline),
        Err(e) if bless => {
            eprintln!("note: baseline {}: {e}; --bless replaces it", path.display());
            Ok(Baseline::new(Vec::new()))
        }
        Err(e) => Err(format!("baseline {}: {e}", path.display())),
    }
}
