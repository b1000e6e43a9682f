//! A run's files: what `simulate --out` and each run of a sweep write into their folder.

use crate::RunOutcome;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

impl RunOutcome {
    /// Writes summary.json, jobs.csv, timeseries.csv, queue_metrics.csv and
    /// queue_timeseries.csv into `dir` (made if missing); tasks.csv when jobs have several
    /// tasks, gpu_health.csv when hardware failed, decisions.csv when `decisions`.
    pub fn write(&self, dir: &Path, decisions: bool) -> Result<(), String> {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let run = &self.result;
        write_file(dir, "summary.json", |w| reports::write_summary_json(&self.summary, w))?;
        write_file(dir, "jobs.csv", |w| reports::write_jobs_csv(run, w))?;
        write_file(dir, "timeseries.csv", |w| reports::write_timeseries_csv(run, w))?;
        write_file(dir, "queue_metrics.csv", |w| reports::fairness::write_queue_metrics_csv(run, w))?;
        write_file(dir, "queue_timeseries.csv", |w| reports::write_queue_timeseries_csv(run, w))?;
        if !run.tasks.is_empty() {
            write_file(dir, "tasks.csv", |w| reports::write_tasks_csv(run, w))?;
        }
        if !run.health_series.is_empty() {
            write_file(dir, "gpu_health.csv", |w| reports::write_gpu_health_csv(run, w))?;
        }
        if decisions {
            write_file(dir, "decisions.csv", |w| reports::write_decisions_csv(run, w))?;
        }
        Ok(())
    }
}

/// Writes `dir/name` with `write`, the error naming the file.
fn write_file(dir: &Path, name: &str, write: impl FnOnce(&mut dyn Write) -> io::Result<()>) -> Result<(), String> {
    let path = dir.join(name);
    let failed = |e: io::Error| format!("cannot write {}: {e}", path.display());
    let mut file = BufWriter::new(File::create(&path).map_err(failed)?);
    write(&mut file).and_then(|()| file.flush()).map_err(failed)
}
