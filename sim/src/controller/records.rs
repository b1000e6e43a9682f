//! A run's records: each job's (and each task's, for jobs of several tasks) built once the job
//! can change no more, handed to a [`RecordSink`] in job order; the decision log with the
//! names it needs; and at the end, the counters and digest.

use super::Controller;
use crate::ids::JobId;
use crate::record::{JobRecord, RunResult, TaskRecord};
use crate::sink::{Collect, RecordSink};
use crate::state::{JobState, Losses, TaskStatus};
use crate::time::{SimTime, earliest};
use crate::workload::{JobSpec, Name};

impl Controller {
    /// Ends a simulated run: [`Self::finish`], with the span its failure feed covered
    /// (`Some(None)`: the feed went on to the run's end; `None`: no feed).
    pub fn finish_with_feed(self, fed: Option<Option<SimTime>>) -> RunResult {
        let mut records = Collect::default();
        let end = self.finish_with_feed_into(fed, &mut records);
        records.into_result(end)
    }

    /// [`Self::finish_with_feed`], the records handed to `sink` (the result's left empty).
    pub fn finish_with_feed_into(mut self, fed: Option<Option<SimTime>>, sink: &mut dyn RecordSink) -> RunResult {
        let end = self.now;
        self.stats.failures_until = fed.map(|until| until.map_or(end, |t| t.min(end)));
        self.finish_into(sink)
    }

    /// Ends the run: per-job records, counters and the digest.
    pub fn finish(self) -> RunResult {
        let mut records = Collect::default();
        let end = self.finish_into(&mut records);
        records.into_result(end)
    }

    /// Ends the run: the decision log and every job's record not yet handed over go to `sink`
    /// (each job still held, ended or not, in order), then the counters and digest.
    pub fn finish_into(mut self, sink: &mut dyn RecordSink) -> RunResult {
        self.stats.peak_jobs_held = self.stats.peak_jobs_held.max(self.specs.held() as u64);
        self.hand_over_decisions(sink);
        while self.specs.held() > 0 {
            self.hand_over_front(sink);
        }
        let levels = self.levels();
        let mut series = self.series;
        series.finish(&levels, self.now);
        let mut stats = self.stats;
        stats.digest = self.digest.hex();
        stats.last_event = self.now;
        RunResult {
            policy: self.policy_name,
            seed: self.config.seed,
            jobs: Vec::new(),
            tasks: Vec::new(),
            queues: self.queues.iter().map(|(_, q)| q.clone()).collect(),
            stats,
            decisions: Vec::new(),
            health_series: self.faults.into_samples(),
            series,
        }
    }

    /// A streamed run, between timestamps: the decision log so far goes to `sink`, then the
    /// oldest jobs, as long as each has ended and the policy has been told so (it may read an
    /// ended job until then): their records go to `sink` and the run lets them go.
    pub fn hand_over(&mut self, sink: &mut dyn RecordSink) {
        self.stats.peak_jobs_held = self.stats.peak_jobs_held.max(self.specs.held() as u64);
        self.hand_over_decisions(sink);
        while self.jobs.front().is_some_and(|j| j.told_ended) {
            self.hand_over_front(sink);
        }
    }

    fn hand_over_decisions(&mut self, sink: &mut dyn RecordSink) {
        for d in self.decision_log.drain(..) {
            let spec = &self.specs[d.job.index()];
            let first = self.jobs[d.job.index()].first_task;
            let task_name = match d.task {
                Some(t) if spec.tasks.len() > 1 => Some(spec.tasks[(t.0 - first.0) as usize].name.as_str()),
                _ => None,
            };
            sink.decision(d, spec.name.as_str(), task_name);
        }
    }

    /// The oldest job held: its record (and its tasks') to `sink`, then every room lets it go.
    fn hand_over_front(&mut self, sink: &mut dyn RecordSink) {
        let index = self.specs.first();
        // Its name and queue move to the record: the spec goes next.
        let name = std::mem::take(&mut self.specs[index].name);
        let queue = self.specs[index].queue.take();
        let state = &self.jobs[index];
        let spec = &self.specs[index];
        let job = self.job_record(index, state, spec, (name, queue));
        self.gone_mgpu_ms += u128::from(job.mgpu_ms);
        let tasks = if self.shape.has_jobs_of_several_tasks() { self.task_records(state, spec) } else { Vec::new() };
        sink.job(job, tasks);
        let state = &self.jobs[index];
        let after = state.first_task.index() + state.task_count as usize;
        for t in state.tasks() {
            self.dag.let_go(t);
        }
        self.tasks.let_go_before(after);
        self.marks.let_go_before(after);
        self.specs.let_go();
        self.jobs.let_go();
        self.series_queue.let_go();
        self.job_queue.let_go();
        self.quota.let_go();
    }

    /// The record of job `index`, with its `names` (the job's and its queue's, moved from its
    /// spec). Built in one piece from locals: a record filled in after it is built is copied
    /// whole more often.
    fn job_record(&self, index: usize, state: &JobState, spec: &JobSpec, names: (Name, Option<Name>)) -> JobRecord {
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
            name: names.0,
            queue: names.1,
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

    /// The records of a job's tasks when it has several (none for a job of one task).
    fn task_records(&self, state: &JobState, spec: &JobSpec) -> Vec<TaskRecord> {
        if spec.tasks.len() < 2 {
            return Vec::new();
        }
        let record = |(task, t_spec): (crate::ids::TaskId, &crate::workload::TaskSpec)| {
            let t = &self.tasks[task.index()];
            TaskRecord {
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
            }
        };
        state.tasks().zip(&spec.tasks).map(record).collect()
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
