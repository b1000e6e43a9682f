//! The end of a run: each job's record (and each task's, for jobs of several tasks), built
//! from the last job back so that the run's state shrinks as the records grow, and the
//! counters and digest.

use super::Controller;
use crate::ids::JobId;
use crate::record::{JobRecord, RunResult, TaskRecord};
use crate::state::{JobState, Losses, TaskStatus};
use crate::time::{SimTime, earliest};
use crate::workload::JobSpec;
use std::collections::VecDeque;

/// How many jobs' records [`Controller::finish`] builds between handing back the memory of
/// the state they were built from.
const SHRINK_EVERY: usize = 1 << 16;

impl Controller {
    /// Ends a simulated run: [`Self::finish`], with the span its failure feed covered
    /// (`Some(None)`: the feed went on to the run's end; `None`: no feed).
    pub fn finish_with_feed(mut self, fed: Option<Option<SimTime>>) -> RunResult {
        let end = self.now;
        self.stats.failures_until = fed.map(|until| until.map_or(end, |t| t.min(end)));
        self.finish()
    }

    /// Ends the run: per-job records, counters and the digest.
    pub fn finish(mut self) -> RunResult {
        let tasks = self.task_records();
        let jobs = self.job_records();
        let levels = self.levels();
        let mut series = self.series;
        series.finish(&levels, self.now);
        let mut stats = self.stats;
        stats.digest = self.digest.hex();
        stats.last_event = self.now;
        RunResult {
            policy: self.policy_name,
            seed: self.config.seed,
            jobs,
            tasks,
            queues: self.queues.iter().map(|(_, q)| q.clone()).collect(),
            stats,
            decisions: self.decision_log,
            health_series: self.faults.into_samples(),
            series,
        }
    }

    /// Every job's record, built from the last job back so that the run's per-job and per-task
    /// state and the specs shrink as the records grow (their memory returned every
    /// [`SHRINK_EVERY`] jobs): at a million jobs, records built beside them would add a third
    /// to the run's peak memory. Names and queues move from the specs: no copy of any name.
    fn job_records(&mut self) -> Vec<JobRecord> {
        let mut specs = std::mem::take(&mut self.workload).into_jobs();
        // Filled from its back, so that the records come out in job order with no reversal
        // (swapping every record once cost about 3 % of the engine bench's wall time).
        let mut records = VecDeque::with_capacity(specs.len());
        while let (Some(spec), Some(state)) = (specs.last_mut(), self.jobs.pop()) {
            records.push_front(self.job_record(self.jobs.len(), &state, spec));
            // Dropped where it lies: popping a spec would copy it whole first.
            specs.truncate(self.jobs.len());
            self.tasks.truncate(state.first_task.index());
            if specs.len().is_multiple_of(SHRINK_EVERY) {
                specs.shrink_to_fit();
                self.jobs.shrink_to_fit();
                self.tasks.shrink_to_fit();
            }
        }
        // O(1) when the records fill the buffer from its start (the capacity asked for), else
        // one move of them to it.
        Vec::from(records)
    }

    /// The record of job `index`, its name and queue taken from its spec (which is dropped
    /// next). Built in one piece from locals: a record filled in after it is built is copied
    /// whole more often.
    fn job_record(&self, index: usize, state: &JobState, spec: &mut JobSpec) -> JobRecord {
        let sums = self.task_sums(state);
        let critical_path_ms = self.critical_path_ms(state, spec);
        let unfinished_reason = self.unfinished_reason(state, spec);
        let alone_ms = critical_path_ms.unwrap_or_else(|| spec.tasks.iter().map(|t| t.work.as_ms()).max().unwrap_or(0));
        JobRecord {
            job: JobId::from_index(index),
            submit: spec.submit,
            first_start: sums.first_start,
            waited_ms: state.waited_until(state.end.get().unwrap_or(self.now)).as_ms(),
            end: state.end.get(),
            tasks: state.task_count,
            gpus: spec.gpus(),
            mgpus: sums.mgpus,
            productive_mgpu_ms: sums.productive_mgpu_ms,
            preemptions: sums.preemptions,
            failures: sums.failures,
            retries: sums.retries,
            mgpu_ms: sums.mgpu_ms,
            lost_redo_mgpu_ms: sums.losses.redo_mgpu_ms,
            lost_lag_mgpu_ms: sums.losses.lag_mgpu_ms,
            lost_overhead_mgpu_ms: sums.losses.overhead_mgpu_ms,
            lost_checkpoint_mgpu_ms: sums.losses.checkpoint_mgpu_ms,
            outcome: state.outcome.clone(),
            unfinished_reason,
            critical_path_ms,
            alone_ms,
            name: std::mem::take(&mut spec.name),
            queue: spec.queue.take(),
        }
    }

    /// What a job's record sums over its tasks, in one pass (a pass per sum read each task a
    /// dozen times).
    fn task_sums(&self, state: &JobState) -> TaskSums {
        let mut sums = TaskSums::default();
        for t in state.tasks().map(|t| &self.tasks[t.index()]) {
            sums.first_start = earliest(sums.first_start, t.first_start.get());
            sums.mgpus += t.mgpus();
            sums.productive_mgpu_ms += t.productive_mgpu_ms;
            sums.preemptions += t.preemptions;
            sums.failures += t.failures;
            sums.retries += t.retries;
            sums.mgpu_ms += t.mgpu_ms_at(self.now);
            sums.losses.add(*t.losses());
        }
        sums
    }

    /// The critical path of a DAG job over its tasks that were not skipped; `None` for a job
    /// without dependencies.
    fn critical_path_ms(&self, state: &JobState, spec: &JobSpec) -> Option<u64> {
        if spec.tasks.iter().all(|t| t.deps.is_empty()) {
            return None;
        }
        let ran = |i: usize| self.tasks[state.first_task.index() + i].status != TaskStatus::Skipped;
        let duration = |i: usize| if ran(i) { spec.tasks[i].work.as_ms() } else { 0 };
        let lag = |i: usize, d: usize| {
            let dep = spec.tasks[i].deps[d];
            let upstream = &self.tasks[state.first_task.index() + dep.upstream];
            if !ran(dep.upstream) {
                return 0;
            }
            dep.kind.point(upstream.checkpoint, upstream.work).map_or(duration(dep.upstream), |p| p.as_ms())
        };
        Some(crate::dag::schedule(spec, duration, lag).length_ms)
    }

    /// Records of the tasks of jobs with several tasks.
    fn task_records(&self) -> Vec<TaskRecord> {
        let mut records = Vec::new();
        if !self.workload.has_jobs_of_several_tasks() {
            return records;
        }
        for (state, spec) in self.jobs.iter().zip(self.workload.jobs()) {
            if spec.tasks.len() < 2 {
                continue;
            }
            for (task, t_spec) in state.tasks().zip(&spec.tasks) {
                let t = &self.tasks[task.index()];
                records.push(TaskRecord {
                    task,
                    job: t.job,
                    name: t_spec.name.clone(),
                    status: t.status,
                    gpus: t.gpus,
                    first_start: t.first_start.get(),
                    finish: t.finish.get(),
                    preemptions: t.preemptions,
                    failures: t.failures,
                    deps: t_spec.deps.to_vec(),
                });
            }
        }
        records
    }
}

/// A job's sums over its tasks, for its record.
#[derive(Default)]
struct TaskSums {
    first_start: Option<SimTime>,
    mgpus: u64,
    productive_mgpu_ms: u64,
    preemptions: u32,
    failures: u32,
    retries: u32,
    mgpu_ms: u64,
    losses: Losses,
}
