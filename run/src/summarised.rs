//! A run for its summary and, when asked, its run folder (what `simulate --out` writes), its
//! records handed to the summary and the files as each is final and then let go: the run
//! holds the jobs in the system, not a record of every job. What a sweep needs of a run.

use crate::runner::Prepared;
use crate::{Keep, RunError, RunSpec, Runner};
use reports::{RecordFiles, Summary, SummaryBuilder};
use sim::{DecisionRecord, JobRecord, RecordSink, TaskRecord};
use std::path::Path;
use std::time::Instant;

/// Where a run writes its folder, and whether its summary.json keeps the wall time (a sweep
/// keeps it apart, in wall.csv, so that two identical sweeps write the same bytes).
#[derive(Debug, Clone, Copy)]
pub struct Folder<'a> {
    pub dir: &'a Path,
    pub wall_s: bool,
}

impl Runner {
    /// Runs `spec` for its summary (its wall time included) and, with `out`, writes its run
    /// folder there as `RunOutcome::write` does (decisions.csv when `keep.decisions`): the
    /// same bytes, written as the run goes. A trace that records its jobs' starts (sacct) is
    /// run with its records in memory, as the comparison with those starts reads them all.
    pub fn run_summarised(&self, spec: &RunSpec, keep: Keep, out: Option<Folder>) -> Result<Summary, RunError> {
        let mut policy = spec.build_policy(self.registry())?;
        let trace = self.load_trace_of(spec)?;
        let prepared = self.prepare(spec, trace, policy.as_ref(), keep)?;
        if !prepared.recorded.starts().is_empty() {
            let mut outcome = self.run_prepared(prepared, policy.as_mut())?;
            if let Some(folder) = out {
                let wall_s = outcome.summary.wall_s.take_if(|_| !folder.wall_s);
                outcome.write(folder.dir, keep.decisions)?;
                outcome.summary.wall_s = outcome.summary.wall_s.or(wall_s);
            }
            return Ok(outcome.summary);
        }
        // No recorded starts to compare with: the run reads a kept trace through its feed alone.
        let Prepared { scenario, config, recorded } = prepared;
        drop(recorded);
        let queues = scenario.queues().iter().map(|(_, q)| q);
        // Queue metrics (p95 JCTs) are gathered only for queue_metrics.csv.
        let summary = match out {
            Some(_) => SummaryBuilder::with_queue_metrics(queues),
            None => SummaryBuilder::new(queues),
        };
        let started = Instant::now();
        let engine = sim::Engine::new(scenario, policy.as_ref(), config)?;
        let dir = out.map(|folder| folder.dir);
        let files = dir.map(|dir| RecordFiles::create(dir, policy.name(), keep.decisions).map_err(|e| cannot(dir, e)));
        let mut sink = Tee { summary, files: files.transpose()? };
        let mut report = |p: sim::RunProgress| self.report_progress(p);
        let end = engine.run_into(policy.as_mut(), &mut sink, &mut report)?;
        let (mut summary, shares) = sink.summary.finish_with_queues(&end);
        summary.wall_s = Some(started.elapsed().as_secs_f64());
        if let (Some(folder), Some(files)) = (out, sink.files) {
            files.finish().map_err(|e| cannot(folder.dir, e))?;
            let wall_s = summary.wall_s.take_if(|_| !folder.wall_s);
            crate::write_streamed_rest(folder.dir, &summary, &end, &shares)?;
            summary.wall_s = summary.wall_s.or(wall_s);
        }
        Ok(summary)
    }
}

fn cannot(dir: &Path, e: std::io::Error) -> RunError {
    RunError::new(format!("cannot write into {}: {e}", dir.display()))
}

/// A run's records to the summary being built and, with a run folder, to its files (what a
/// streamed `simulate` and a sweep's runs hand their records to).
pub struct Tee {
    pub summary: SummaryBuilder,
    pub files: Option<RecordFiles>,
}

impl RecordSink for Tee {
    fn decision(&mut self, decision: DecisionRecord, job_name: &str, task_name: Option<&str>) {
        if let Some(files) = &mut self.files {
            files.decision(decision, job_name, task_name);
        }
    }
    fn job(&mut self, job: JobRecord, tasks: Vec<TaskRecord>) {
        self.summary.add(&job);
        if let Some(files) = &mut self.files {
            files.job(job, tasks);
        }
    }
}
