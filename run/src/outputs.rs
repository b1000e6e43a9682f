//! A run's files: what `simulate --out` and each run of a sweep write into their folder.
//!
//! A run folder holds one run's files, never two runs' mixed: the folder's files are owned by
//! the run that writes it ([`RUN_FOLDER_FILES`]), each write removes the ones it does not
//! write this time, and [`check_run_folder`] refuses a folder holding anything else (a user's
//! file, a sweep) unless forced, so nothing a run did not make is overwritten or mixed in.

use crate::{RunOutcome, Spelling};
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;

/// Every file a run folder may hold: the run's own files and `schedlab report`'s page of
/// them, which describes the run it was made from and so goes with it.
pub const RUN_FOLDER_FILES: [&str; 9] = [
    "summary.json",
    "jobs.csv",
    "timeseries.csv",
    "queue_metrics.csv",
    "queue_timeseries.csv",
    "tasks.csv",
    "gpu_health.csv",
    "decisions.csv",
    "report.html",
];

/// Checks that `dir` may receive a run's files: it is missing, or holds only
/// [`RUN_FOLDER_FILES`] (an earlier run's, replaced whole by the next write), or `force` is
/// set (the other files are left as they are). Errors name the settings as `spelling` writes
/// them.
pub fn check_run_folder(dir: &Path, spelling: Spelling, force: bool) -> Result<(), String> {
    let out = spelling.setting("out", dir.display());
    let entries = match fs::read_dir(dir) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(format!("{out}: cannot read the folder: {e}")),
        Ok(entries) => entries,
    };
    let mut foreign: Vec<String> = entries
        .filter_map(Result::ok)
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| !RUN_FOLDER_FILES.contains(&name.as_str()))
        .collect();
    if foreign.is_empty() || force {
        return Ok(());
    }
    foreign.sort();
    let shown = match foreign.len() {
        1 => format!("{}, which no run writes", foreign[0]),
        n if n <= 3 => format!("{}, which no run writes", foreign.join(", ")),
        n => format!("{} and {} more files no run writes", foreign[..3].join(", "), n - 3),
    };
    let it = if foreign.len() == 1 { "it" } else { "them" };
    Err(format!(
        "{out} holds {shown}: give a new folder, one that only a run wrote into, or {} to write beside {it}",
        spelling.force()
    ))
}

impl RunOutcome {
    /// Writes summary.json, jobs.csv, timeseries.csv, queue_metrics.csv and
    /// queue_timeseries.csv into `dir` (made if missing); tasks.csv when jobs have several
    /// tasks, gpu_health.csv when hardware failed, decisions.csv when `decisions`. Every other
    /// file of [`RUN_FOLDER_FILES`] is removed: it was an earlier run's.
    pub fn write(&self, dir: &Path, decisions: bool) -> Result<(), String> {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let run = &self.result;
        let files: [(&str, bool, &Writer); 8] = [
            ("summary.json", true, &|w| reports::write_summary_json(&self.summary, w)),
            ("jobs.csv", true, &|w| reports::write_job_records_csv(run, w)),
            ("timeseries.csv", true, &|w| reports::write_timeseries_csv(run, w)),
            ("queue_metrics.csv", true, &|w| reports::fairness::write_queue_metrics_csv(run, w)),
            ("queue_timeseries.csv", true, &|w| reports::write_queue_timeseries_csv(run, w)),
            ("tasks.csv", !run.tasks.is_empty(), &|w| reports::write_tasks_csv(run, w)),
            ("gpu_health.csv", !run.health_series.is_empty(), &|w| reports::write_gpu_health_csv(run, w)),
            ("decisions.csv", decisions, &|w| reports::write_decisions_csv(run, w)),
        ];
        // The report described the earlier run; `schedlab report` makes this run's.
        remove_if_present(&dir.join("report.html"))?;
        for (name, wanted, write) in files {
            if wanted { write_file(dir, name, write)? } else { remove_if_present(&dir.join(name))? }
        }
        Ok(())
    }
}

/// A streamed run's files besides those written as it went (jobs.csv, tasks.csv and
/// decisions.csv: [`reports::RecordFiles`]): summary.json, timeseries.csv, queue_metrics.csv
/// (from `shares`, gathered with the summary), queue_timeseries.csv, and gpu_health.csv when
/// hardware failed (else an earlier run's is removed, as is its report.html).
pub fn write_streamed_rest(
    dir: &Path,
    summary: &reports::Summary,
    end: &sim::RunResult,
    shares: &[reports::fairness::QueueShare],
) -> Result<(), String> {
    let files: [(&str, bool, &Writer); 5] = [
        ("summary.json", true, &|w| reports::write_summary_json(summary, w)),
        ("timeseries.csv", true, &|w| reports::write_timeseries_csv(end, w)),
        ("queue_metrics.csv", true, &|w| reports::fairness::write_queue_shares_csv(shares, w)),
        ("queue_timeseries.csv", true, &|w| reports::write_queue_timeseries_csv(end, w)),
        ("gpu_health.csv", !end.health_series.is_empty(), &|w| reports::write_gpu_health_csv(end, w)),
    ];
    remove_if_present(&dir.join("report.html"))?;
    for (name, wanted, write) in files {
        if wanted { write_file(dir, name, write)? } else { remove_if_present(&dir.join(name))? }
    }
    Ok(())
}

/// Writes one file of a run into the writer it is given.
type Writer<'a> = dyn Fn(&mut dyn Write) -> io::Result<()> + 'a;

fn remove_if_present(path: &Path) -> Result<(), String> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(format!("cannot remove {} (an earlier run's): {e}", path.display()))
        }
        _ => Ok(()),
    }
}

/// Writes `dir/name` with `write`, the error naming the file.
fn write_file(dir: &Path, name: &str, write: &Writer) -> Result<(), String> {
    let path = dir.join(name);
    let failed = |e: io::Error| format!("cannot write {}: {e}", path.display());
    let mut file = BufWriter::new(File::create(&path).map_err(failed)?);
    write(&mut file).and_then(|()| file.flush()).map_err(failed)
}
