//! `critical-path`: critical-path priority for DAG jobs, the list-scheduling rule of
//! Kelley & Walker's Critical Path Method ("Critical-Path Planning and Scheduling", 1959) and of
//! HLFET (Adam, Chandy, Dickson, "A comparison of list schedules for parallel processing
//! systems", CACM 1974): ready tasks are ranked by the longest path that remains through them.
//!
//! When a job's first task becomes ready, the job's longest-path schedule is computed once
//! (`sim::dag::schedule`) from expected durations (`duration=oracle|estimate`) and edge lags
//! (the upstream's duration for `success`, `any` and `failure` edges, its progress point for
//! `data` and `checkpoint` edges, capped at its duration). For each task it gives
//! - its *path*: the longest path from its start to the end of its job, its own duration
//!   included (the job's length less the task's latest start), and
//! - its *slack*: latest start - earliest start.
//!
//! Waiting tasks go in this order: zero-slack (critical) tasks first, then the others; within
//! each, the longest path first, less the work the task has already done (a preempted or
//! retried task is that much closer to its end); ties by task id. A single-task job's path is
//! its own duration and its slack is zero. The pass is greedy and non-preemptive: the first task
//! in that order that fits starts, so a non-critical task is lowered (it runs when nothing ahead
//! of it fits) but never preempted or killed for a critical one. Quotas and reclaiming as the
//! other greedy policies. The path is computed for every task of the DAG, including branches
//! that may later be skipped: which branch runs is not known in advance.
//!
//! Parameters: `duration=oracle|estimate`, `placement`, `avoid_failed_h`.
//!
//! Decision cost: O((starts + 1) x shapes x log n), plus O((tasks + edges) x log tasks) once per
//! DAG job when its first task becomes ready (O(1) for a single-task job).

use crate::id_table::IdTable;
use crate::params::{AVOID_FAILED, DURATION, PLACEMENT, ParamInfo, Params, Source, SpecError};
use crate::placement::Placer;
use crate::tracking::{
    Aside, Placed, pass_over, place_and_start, put_back, reclaim_for_head, sync_waiting, tasks_of_ended_jobs,
};
use crate::wait_queue::{Key, WaitQueue};
use sim::{ClusterView, DepKind, DurationSource, JobId, Plan, Policy, TaskId};

pub const PARAMS: &[ParamInfo] = &[DURATION, PLACEMENT, AVOID_FAILED];

/// The largest path a key can hold (ms; 146,000 years): bit 62 marks non-critical tasks.
const PATH_MAX: u64 = (1 << 62) - 1;

/// A task's place in its job's longest-path schedule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Rank {
    path_ms: u64,
    slack_ms: u64,
}

pub struct CriticalPath {
    name: String,
    source: DurationSource,
    placer: Placer,
    waiting: WaitQueue,
    /// By task id; filled for a whole job when its first task becomes ready, emptied when
    /// the job ends (paged: it holds the jobs in the system, not every task of the run).
    rank: IdTable<Rank>,
}

impl CriticalPath {
    pub fn new(params: &Params) -> Result<CriticalPath, SpecError> {
        let Source(source) = params.get("duration")?;
        let placer = Placer::from_params(params)?;
        Ok(CriticalPath {
            name: format!("critical-path[duration={},{placer}]", source.as_str()),
            source,
            placer,
            waiting: WaitQueue::default(),
            rank: IdTable::default(),
        })
    }

    /// Ranks every task of `job` (once): O(tasks + edges) and a topological sort.
    fn rank_job(&mut self, view: &ClusterView<'_>, job: JobId) {
        let spec = view.job_spec(job);
        let first = view.job(job).first_task.0;
        let id = |i: usize| TaskId(first + i as u32);
        let durations: Vec<u64> =
            (0..spec.tasks.len()).map(|i| view.expected_duration(id(i), self.source).as_ms()).collect();
        if spec.tasks.len() == 1 {
            self.rank.insert(first as usize, Rank { path_ms: durations[0], slack_ms: 0 });
            return;
        }
        let lag = |t: usize, d: usize| {
            let dep = spec.tasks[t].deps[d];
            let u = dep.upstream;
            let point = match dep.kind {
                DepKind::Data(at) => at.as_ms(),
                DepKind::Checkpoint(n) => u64::from(n).saturating_mul(view.task(id(u)).checkpoint.as_ms()),
                DepKind::Success | DepKind::Any | DepKind::Failure => durations[u],
            };
            point.min(durations[u])
        };
        let schedule = sim::dag::schedule(spec, |t| durations[t], lag);
        for t in 0..spec.tasks.len() {
            let rank =
                Rank { path_ms: schedule.length_ms - schedule.latest_start_ms[t], slack_ms: schedule.slack_ms(t) };
            self.rank.insert(id(t).index(), rank);
        }
    }

    /// Critical tasks first, then the longest remaining path, as a key (smaller first).
    fn key(&mut self, view: &ClusterView<'_>, task: TaskId) -> Key {
        if !self.rank.contains(task.index()) {
            self.rank_job(view, view.task(task).job);
        }
        let rank = self.rank.get(task.index()).expect("ranked with its job");
        let done = view.expected_duration(task, self.source) - view.expected_remaining(task, self.source);
        let path = rank.path_ms.saturating_sub(done.as_ms()).min(PATH_MAX);
        (u64::from(rank.slack_ms > 0) << 62) | (PATH_MAX - path)
    }
}

impl Policy for CriticalPath {
    fn name(&self) -> &str {
        &self.name
    }

    fn needs_estimates(&self) -> bool {
        self.source == DurationSource::Estimate
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let mut waiting = std::mem::take(&mut self.waiting);
        sync_waiting(view, &mut waiting, |t| self.key(view, t));
        self.waiting = waiting;
        // After the waiting tasks' keys: no rank is needed for an ended job from here on.
        tasks_of_ended_jobs(view).for_each(|t| _ = self.rank.remove(t.index()));
        let mut aside = Aside::new();
        while let Some((_, task)) = self.waiting.first_fitting(plan.free()) {
            let placed = place_and_start(view, plan, self.placer, &mut self.waiting, task);
            if placed == Placed::NoRoom && !pass_over(plan, &mut self.waiting, task, &mut aside) {
                unreachable!("a task whose shape fits has a placement");
            }
        }
        put_back(&mut self.waiting, aside);
        reclaim_for_head(view, plan, self.placer, &mut self.waiting);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Ranks are held for the jobs in the system: none is left once every job has ended.
    #[test]
    fn ended_jobs_leave_no_rank() {
        let policy = crate::run_to_the_end(CriticalPath::new(&crate::params_of("critical-path")).expect("builds"));
        assert!(policy.rank.is_empty(), "ranks left for ended jobs");
    }
}
