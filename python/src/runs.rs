//! Runs for Python: a RunSpec from the JSON of `simulate`'s keyword arguments, a run's tables
//! written by the reports' own writers into memory (Python reads them with polars, so the
//! columns have one definition), and sweeps through `run::many`'s executor.

use crate::RunError;
use pyo3::prelude::*;
use run::many::Executor;
use run::{Keep, RunOutcome, RunSpec, Runner, Spelling};
use sim::Policy;
use std::sync::{Arc, Mutex};

/// The RunSpec that `json` (an object of RunSpec fields) spells; unknown fields and bad values
/// are the RunSpec's own errors.
pub fn parse_spec(json: &str) -> PyResult<RunSpec> {
    serde_json::from_str(json).map_err(|e| RunError::new_err(format!("run settings: {e}")))
}

/// What one run keeps: the time series always (Python gets timeseries.csv), the decision log
/// when the spec asks for it.
fn keep(spec: &RunSpec) -> Keep {
    Keep { decisions: spec.decisions, series: true }
}

/// Runs `spec` under `policy` (the one the spec names without), writes its files into the
/// spec's `out` folder when it has one, and returns the outcome with the trace's notes. As
/// `simulate --out`, a folder holding files no run writes is refused before the run, and so
/// is a time series past the bucket limit (Python always keeps the series), unless `force`.
pub fn simulate(
    spec: &RunSpec,
    policy: Option<&mut dyn Policy>,
    force: bool,
) -> Result<(RunOutcome, Vec<String>), String> {
    if let Some(dir) = &spec.out {
        run::check_run_folder(dir, Spelling::Python, force)?;
    }
    let notes = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&notes);
    let runner = Runner::default().spelling(Spelling::Python).forced(force).with_notes(move |path, note| {
        sink.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(format!("{}: {note}", path.display()))
    });
    let outcome = match policy {
        Some(policy) => runner.run_with_policy(spec, policy, keep(spec)),
        None => runner.run(spec, keep(spec)),
    }
    .map_err(|e| e.to_string())?;
    if let Some(dir) = &spec.out {
        outcome.write(dir, spec.decisions)?;
    }
    let notes = notes.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).clone();
    Ok((outcome, notes))
}

/// One run's outputs as Python receives them.
pub struct Tables {
    pub summary_json: Vec<u8>,
    pub jobs_csv: Vec<u8>,
    pub tasks_csv: Vec<u8>,
    pub timeseries_csv: Vec<u8>,
    /// decisions.csv, when the run kept its decision log.
    pub decisions_csv: Option<Vec<u8>>,
}

/// Writes `outcome` as summary.json, jobs.csv, tasks.csv and timeseries.csv (and decisions.csv
/// when `decisions`), in memory.
pub fn tables(outcome: &RunOutcome, decisions: bool) -> Result<Tables, String> {
    fn write(file: &str, write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Result<Vec<u8>, String> {
        let mut bytes = Vec::new();
        write(&mut bytes).map_err(|e| format!("writing {file}: {e}"))?;
        Ok(bytes)
    }
    let run = &outcome.result;
    Ok(Tables {
        summary_json: write("summary.json", |w| reports::write_summary_json(&outcome.summary, w))?,
        jobs_csv: write("jobs.csv", |w| reports::write_job_records_csv(run, w))?,
        tasks_csv: write("tasks.csv", |w| reports::write_tasks_csv(run, w))?,
        timeseries_csv: write("timeseries.csv", |w| reports::write_timeseries_csv(run, w))?,
        decisions_csv: match decisions {
            true => Some(write("decisions.csv", |w| reports::write_decisions_csv(run, w))?),
            false => None,
        },
    })
}

/// Runs every spec, on `threads` threads (one per core without), each trace read once, and
/// writes sweep.csv (the columns of `schedlab sweep`'s) into memory. A run with `out` writes
/// its files there (its folder checked first, as `simulate` checks it). A failed run fails the
/// sweep, named by its index (the lowest, when several fail).
pub fn sweep(specs: &[RunSpec], threads: Option<usize>, force: bool) -> Result<Vec<u8>, String> {
    for (index, dir) in specs.iter().enumerate().filter_map(|(i, s)| Some((i, s.out.as_ref()?))) {
        run::check_run_folder(dir, Spelling::Python, force).map_err(|e| format!("run {index}: {e}"))?;
    }
    let runner = Runner::default().keeping_traces().spelling(Spelling::Python).forced(force);
    let done = Executor::new(threads)?
        .execute_specs(&runner, specs)
        .map_err(|failed| format!("run {}: {}", failed.index, failed.error))?;
    let rows: Vec<Vec<String>> =
        specs.iter().zip(&done).enumerate().map(|(index, (spec, done))| row(index, spec, &done.summary)).collect();
    let mut csv = Vec::new();
    reports::sweep::write_sweep_csv(&rows, &mut csv).map_err(|e| format!("writing sweep.csv: {e}"))?;
    Ok(csv)
}

/// One run's row of sweep.csv.
fn row(index: usize, spec: &RunSpec, summary: &reports::Summary) -> Vec<String> {
    let trace = spec.trace.as_ref().map_or(reports::sweep::SYNTHETIC_TRACE.to_string(), |t| t.display().to_string());
    let run = reports::sweep::SweepRun {
        run: index,
        dir: String::new(),
        trace,
        spec: spec.policy.to_string(),
        settings: Vec::new(),
        seed: spec.seed,
    };
    reports::sweep::sweep_row(&run, summary)
}
