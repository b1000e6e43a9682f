//! Runs for Python: a RunSpec from the JSON of `simulate`'s keyword arguments, a run's tables
//! written by the reports' own writers into memory (Python reads them with polars, so the
//! columns have one definition), and sweeps in parallel on rayon.

use crate::RunError;
use crate::interim::{RunOutcome, RunSpec};
use pyo3::prelude::*;
use rayon::prelude::*;

/// The RunSpec that `json` (an object of RunSpec fields) spells; unknown fields and bad values
/// are the RunSpec's own errors.
pub fn parse_spec(json: &str) -> PyResult<RunSpec> {
    serde_json::from_str(json).map_err(|e| RunError::new_err(format!("run settings: {e}")))
}

/// One run's outputs as Python receives them.
pub struct Tables {
    pub summary_json: Vec<u8>,
    pub jobs_csv: Vec<u8>,
    pub tasks_csv: Vec<u8>,
    pub timeseries_csv: Vec<u8>,
    pub digest: String,
}

/// Writes `outcome` as summary.json, jobs.csv, tasks.csv and timeseries.csv, in memory.
pub fn tables(outcome: &RunOutcome) -> PyResult<Tables> {
    let failed = |file: &str, e: std::io::Error| RunError::new_err(format!("writing {file}: {e}"));
    let mut tables = Tables {
        summary_json: Vec::new(),
        jobs_csv: Vec::new(),
        tasks_csv: Vec::new(),
        timeseries_csv: Vec::new(),
        digest: outcome.summary.digest.clone(),
    };
    reports::write_summary_json(&outcome.summary, &mut tables.summary_json).map_err(|e| failed("summary.json", e))?;
    reports::write_jobs_csv(&outcome.result, &mut tables.jobs_csv).map_err(|e| failed("jobs.csv", e))?;
    reports::write_tasks_csv(&outcome.result, &mut tables.tasks_csv).map_err(|e| failed("tasks.csv", e))?;
    reports::write_timeseries_csv(&outcome.result, &mut tables.timeseries_csv)
        .map_err(|e| failed("timeseries.csv", e))?;
    Ok(tables)
}

/// Runs every spec, on `threads` threads (rayon's default without), and writes sweep.csv (the
/// columns of `schedlab sweep`'s) into memory. The first run to fail fails the sweep, named by
/// its index.
pub fn sweep(specs: &[RunSpec], threads: Option<usize>) -> Result<Vec<u8>, String> {
    let run_all = || {
        specs
            .par_iter()
            .enumerate()
            .map(|(index, spec)| {
                spec.run().map(|outcome| row(index, spec, &outcome)).map_err(|e| format!("run {index}: {e}"))
            })
            .collect::<Result<Vec<_>, String>>()
    };
    let rows = match threads {
        Some(threads) => rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| format!("cannot start {threads} threads: {e}"))?
            .install(run_all),
        None => run_all(),
    }?;
    let mut csv = Vec::new();
    reports::sweep::write_sweep_csv(&rows, &mut csv).map_err(|e| format!("writing sweep.csv: {e}"))?;
    Ok(csv)
}

/// One run's row of sweep.csv.
fn row(index: usize, spec: &RunSpec, outcome: &RunOutcome) -> Vec<String> {
    let trace = spec.trace.as_ref().map_or(reports::sweep::SYNTHETIC_TRACE.to_string(), |t| t.display().to_string());
    let run = reports::sweep::SweepRun {
        run: index,
        dir: String::new(),
        trace,
        spec: spec.policy.to_string(),
        settings: Vec::new(),
        seed: spec.seed,
    };
    reports::sweep::sweep_row(&run, &outcome.summary)
}
