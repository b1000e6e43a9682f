//! A run's records: each job's (and each task's, for jobs of several tasks) built once the job
//! can change no more, handed to a [`RecordSink`] (in job order, but for jobs set aside); the
//! decision log with the names it needs; and at the end, the counters and digest.

use super::Controller;
use crate::ids::JobId;
use crate::record::{JobRecord, RunResult, TaskRecord};
use crate::sink::{Collect, RecordSink};
use crate::state::{JobState, Losses, TaskStatus};
use crate::time::{SimTime, earliest};
use crate::workload::{JobSpec, Name};

/// The jobs ended and told, waiting to leave the run.
#[derive(Debug, Default)]
pub(super) struct Leaving {
    /// Those held in order (not set aside): each waits for every job before it.
    ended_in_order: usize,
    /// Those set aside, in the order they were told: each leaves at the next hand-over.
    ended_aside: Vec<JobId>,
}

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
        // Every job still held, in job order: those set aside come before the rest.
        self.leaving.ended_aside.clear();
        for index in self.specs.aside_ids() {
            self.hand_over_job(JobId::from_index(index), sink);
        }
        while self.specs.front().is_some() {
            self.hand_over_job(JobId::from_index(self.specs.first()), sink);
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
    /// ended job until then): their records go to `sink` and the run lets them go. When more
    /// than `set_aside_after` ended jobs wait behind the oldest, which is still in the system,
    /// it is set aside and they go; a job set aside goes once it has ended and been told.
    pub fn hand_over(&mut self, sink: &mut dyn RecordSink) {
        self.stats.peak_jobs_held = self.stats.peak_jobs_held.max(self.specs.held() as u64);
        self.hand_over_decisions(sink);
        loop {
            while self.jobs.front().is_some_and(|j| j.told_ended) {
                self.hand_over_job(JobId::from_index(self.jobs.first()), sink);
            }
            if self.leaving.ended_in_order <= self.config.set_aside_after || self.jobs.front().is_none() {
                break;
            }
            self.set_aside_oldest();
        }
        for job in std::mem::take(&mut self.leaving.ended_aside) {
            self.hand_over_job(job, sink);
        }
    }

    /// Notes that the policy has been told `job` ended: it may leave the run now.
    pub(super) fn told_ended(&mut self, job: JobId) {
        let state = &mut self.jobs[job.index()];
        if state.told_ended {
            return;
        }
        state.told_ended = true;
        if self.jobs.is_aside(job.index()) {
            self.leaving.ended_aside.push(job);
        } else {
            self.leaving.ended_in_order += 1;
        }
    }

    /// Sets the oldest job held in order aside, with its tasks: every room holding something
    /// by job or task id holds it alone from now on.
    fn set_aside_oldest(&mut self) {
        let state = &self.jobs[self.jobs.first()];
        let tasks = state.tasks();
        debug_assert_eq!(self.tasks.first(), state.first_task.index(), "the oldest job's tasks are the oldest held");
        for _ in tasks {
            self.tasks.set_aside_front();
            self.marks.set_aside_front();
        }
        self.specs.set_aside_front();
        self.jobs.set_aside_front();
        self.series_queue.set_aside_front();
        self.job_queue.set_aside_front();
        self.quota.set_aside_front();
        self.stats.jobs_set_aside += 1;
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

    /// Job `job`, the oldest held in order or one set aside: its record (and its tasks') to
    /// `sink`, then every room lets it go.
    fn hand_over_job(&mut self, id: JobId, sink: &mut dyn RecordSink) {
        let index = id.index();
        if self.jobs[index].told_ended && !self.jobs.is_aside(index) {
            self.leaving.ended_in_order -= 1;
        }
        // Its name and queue move to the record: the spec goes next.
        let name = std::mem::take(&mut self.specs[index].name);
        let queue = self.specs[index].queue.take();
        let state = &self.jobs[index];
        let spec = &self.specs[index];
        let job = self.job_record(index, state, spec, (name, queue));
        self.gone_mgpu_ms += u128::from(job.mgpu_ms);
        let tasks = if self.shape.has_jobs_of_several_tasks() { self.task_records(state, spec) } else { Vec::new() };
        sink.job(job, tasks);
        for t in self.jobs[index].tasks() {
            self.dag.let_go(t);
            self.tasks.let_go(t.index());
            self.marks.let_go(t.index());
        }
        self.specs.let_go(index);
        self.jobs.let_go(index);
        self.series_queue.let_go(index);
        self.job_queue.let_go(id);
        self.quota.let_go(id);
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
