//! A run folder's per-record files written as a streamed run hands its records over
//! ([`sim::RecordSink`]): jobs.csv, tasks.csv and decisions.csv, row by row, with the same row
//! formats as the whole-run writers (`write_job_records_csv`, `write_tasks_csv`,
//! `write_decisions_csv`), so the same run gives the same bytes either way.

use crate::csv_row::{CsvOut, Escaped};
use crate::tables::{DECISION_COLUMNS, JOB_COLUMNS, TASK_COLUMNS, decision_row, job_row, task_rows};
use sim::{DecisionRecord, JobRecord, RecordSink, TaskRecord};
use std::fs::{self, File};
use std::io;
use std::path::{Path, PathBuf};

/// One file being written, and its path (for errors).
struct Table {
    path: PathBuf,
    out: CsvOut<File>,
}

impl Table {
    fn create(dir: &Path, name: &str, header: &[&str]) -> io::Result<Table> {
        let path = dir.join(name);
        let file = File::create(&path).map_err(|e| named(&path, e))?;
        Ok(Table { out: CsvOut::new(file, header), path })
    }

    fn done(&mut self) -> io::Result<()> {
        self.out.done().map_err(|e| named(&self.path, e))
    }

    fn finish(self) -> io::Result<()> {
        self.out.finish().map(drop).map_err(|e| named(&self.path, e))
    }
}

fn named(path: &Path, e: io::Error) -> io::Error {
    io::Error::new(e.kind(), format!("cannot write {}: {e}", path.display()))
}

/// Writes a run folder's jobs.csv, tasks.csv and decisions.csv as the records come. Each file
/// is formatted into its own 64 KiB buffer and written to its file a chunk at a time (a
/// buffered writer's work, without a second copy of the bytes).
///
/// The files are what `RunOutcome::write` writes from the whole run: jobs.csv always;
/// tasks.csv when the run has jobs of several tasks, which a streamed run shows by handing a
/// job its task records (the file is made at the first such job, and is missing when none
/// came); decisions.csv when asked for. An earlier run's tasks.csv and (when not asked for)
/// decisions.csv are removed when the writer is made.
///
/// [`RecordSink`]'s calls cannot fail: the first error is kept, nothing more is written, and
/// [`RecordFiles::finish`] returns it.
pub struct RecordFiles {
    dir: PathBuf,
    /// decisions.csv's `policy` field, escaped once.
    policy: Escaped,
    jobs: Table,
    tasks: Option<Table>,
    decisions: Option<Table>,
    error: Option<io::Error>,
}

impl RecordFiles {
    /// Starts the files in `dir` (made if missing) for a run of `policy` (decisions.csv's
    /// `policy` column), with decisions.csv when `decisions`.
    pub fn create(dir: &Path, policy: &str, decisions: bool) -> io::Result<RecordFiles> {
        fs::create_dir_all(dir)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display())))?;
        remove_if_present(&dir.join("tasks.csv"))?;
        let decisions = match decisions {
            true => Some(Table::create(dir, "decisions.csv", &DECISION_COLUMNS)?),
            false => {
                remove_if_present(&dir.join("decisions.csv"))?;
                None
            }
        };
        Ok(RecordFiles {
            dir: dir.to_path_buf(),
            policy: Escaped::new(policy),
            jobs: Table::create(dir, "jobs.csv", &JOB_COLUMNS)?,
            tasks: None,
            decisions,
            error: None,
        })
    }

    /// Writes what is left and closes the files; the first error met, if any.
    pub fn finish(self) -> io::Result<()> {
        if let Some(e) = self.error {
            return Err(e);
        }
        self.jobs.finish()?;
        if let Some(tasks) = self.tasks {
            tasks.finish()?;
        }
        if let Some(decisions) = self.decisions {
            decisions.finish()?;
        }
        Ok(())
    }

    /// Whether tasks.csv is being written (a job of several tasks came).
    pub fn has_tasks(&self) -> bool {
        self.tasks.is_some()
    }

    fn write_job(&mut self, job: &JobRecord, tasks: &[TaskRecord]) -> io::Result<()> {
        job_row(self.jobs.out.rows(), job);
        self.jobs.done()?;
        if tasks.is_empty() {
            return Ok(());
        }
        let table = match &mut self.tasks {
            Some(table) => table,
            None => self.tasks.insert(Table::create(&self.dir, "tasks.csv", &TASK_COLUMNS)?),
        };
        task_rows(table.out.rows(), &job.name, tasks);
        table.done()
    }
}

impl RecordSink for RecordFiles {
    fn decision(&mut self, decision: DecisionRecord, job_name: &str, task_name: Option<&str>) {
        if self.error.is_some() {
            return;
        }
        if let Some(table) = &mut self.decisions {
            decision_row(table.out.rows(), &decision, job_name, task_name, &self.policy);
            if let Err(e) = table.done() {
                self.error = Some(e);
            }
        }
    }

    fn job(&mut self, job: JobRecord, tasks: Vec<TaskRecord>) {
        if self.error.is_some() {
            return;
        }
        if let Err(e) = self.write_job(&job, &tasks) {
            self.error = Some(e);
        }
    }
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => {
            Err(io::Error::new(e.kind(), format!("cannot remove {} (an earlier run's): {e}", path.display())))
        }
        _ => Ok(()),
    }
}
