//! The Controller's side of task DAGs and start windows: which tasks are ready, which branch
//! is skipped, when a progress point is reached, and how a job with dependencies ends.
//!
//! Rules (also in traces/FORMAT.md):
//! - A task is ready when every dependency is met and its window is open (`not_before`).
//! - A dependency that can no longer be met is `never`: the task ends `Skipped`, which its own
//!   dependents see as "did not succeed" (`any` dependents still run).
//! - `data` and `checkpoint` dependencies are met the moment the upstream's work reaches the
//!   point, and stay met if it later fails and loses that work (the artifact was written).
//! - A task that fails for good (retries spent, or its window closed before it started): in a
//!   job without dependencies (a plain gang of tasks) the whole job fails at once, its other
//!   tasks stopped; in a DAG job the failure flows along the edges (dependents are skipped or
//!   run by the rules above), the other tasks go on, and the job ends with its last task.
//! - A job ends when its last task does. It succeeded unless a task failed with no `failure`
//!   dependent to handle it; then it failed with the first such task's reason.

use crate::controller::Controller;
use crate::ids::{JobId, TaskId};
use crate::state::{JobOutcome, TaskStatus};
use crate::time::{SimDuration, SimTime};
use crate::view::Change;
use crate::workload::{DepKind, JobSpec, Workload};
use std::collections::BTreeMap;

/// Something the Controller asked its driver to tell it about at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// The task's start window opens (`not_before`).
    Opens(TaskId),
    /// The task's start window closes (`not_after`).
    Closes(TaskId),
    /// The task's attempt `attempt` reaches the next progress point a dependent waits for.
    Progress { task: TaskId, attempt: u32 },
    /// GPUs let go of fall due to return to the free pool (the release latency).
    Release,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EdgeState {
    Waiting,
    Met,
    Never,
}

/// One dependency of a task, as the Controller tracks it.
#[derive(Debug, Clone, Copy)]
struct Edge {
    kind: DepKind,
    /// For `data` and `checkpoint`: the upstream's work (ms) that meets it.
    point_ms: u64,
    state: EdgeState,
}

/// The DAG bookkeeping of a run; empty (and free) for workloads without dependencies.
#[derive(Debug, Default)]
pub(crate) struct Dag {
    /// Every dependency of each task that has some.
    edges: BTreeMap<TaskId, Vec<Edge>>,
    /// Each upstream's dependents: (dependent, index into its edges).
    dependents: BTreeMap<TaskId, Vec<(TaskId, usize)>>,
    /// For upstreams with progress dependents: the points watched (ascending) and the most
    /// work reached so far.
    watched: BTreeMap<TaskId, Watch>,
}

#[derive(Debug)]
struct Watch {
    points_ms: Vec<u64>,
    reached_ms: u64,
}

impl Dag {
    /// `checkpoint(task)`: the task's effective checkpoint interval (the engine has refused a
    /// `checkpoint` dependency on a task that checkpoints continuously).
    pub(crate) fn new(workload: &Workload, checkpoint: impl Fn(TaskId) -> SimDuration) -> Dag {
        let mut dag = Dag::default();
        if !workload.has_dags() {
            return dag;
        }
        let mut first = 0u32;
        for job in workload.jobs() {
            dag.add_job(job, TaskId(first), &checkpoint);
            first += job.tasks.len() as u32;
        }
        dag
    }

    /// Adds the edges of `job`, whose first task is `first` (a job's edges stay inside it).
    pub(crate) fn add_job(&mut self, job: &JobSpec, first: TaskId, checkpoint: impl Fn(TaskId) -> SimDuration) {
        let id = |index: usize| TaskId(first.0 + index as u32);
        let mut watched = Vec::new();
        for (t, task) in job.tasks.iter().enumerate() {
            if task.deps.is_empty() {
                continue;
            }
            let mut edges = Vec::with_capacity(task.deps.len());
            for (d, dep) in task.deps.iter().enumerate() {
                let upstream = id(dep.upstream);
                let point = dep.kind.point(checkpoint(upstream), job.tasks[dep.upstream].work);
                let point_ms = point.map_or(0, SimDuration::as_ms);
                if point.is_some() {
                    let watch = self.watched.entry(upstream).or_insert(Watch { points_ms: Vec::new(), reached_ms: 0 });
                    watch.points_ms.push(point_ms);
                    watched.push(upstream);
                }
                edges.push(Edge { kind: dep.kind, point_ms, state: EdgeState::Waiting });
                self.dependents.entry(upstream).or_default().push((id(t), d));
            }
            self.edges.insert(id(t), edges);
        }
        for upstream in watched {
            if let Some(watch) = self.watched.get_mut(&upstream) {
                watch.points_ms.sort_unstable();
                watch.points_ms.dedup();
            }
        }
    }

    fn blocked(&self, task: TaskId) -> bool {
        self.edges.get(&task).is_some_and(|edges| edges.iter().any(|e| e.state != EdgeState::Met))
    }

    /// Whether a dependent runs because `task` failed: its failure is handled.
    fn handles_failure(&self, task: TaskId) -> bool {
        self.dependent_kinds(task).any(|k| k == DepKind::Failure)
    }

    fn dependent_kinds(&self, task: TaskId) -> impl Iterator<Item = DepKind> + '_ {
        self.dependents.get(&task).into_iter().flatten().map(|&(d, i)| self.edges[&d][i].kind)
    }

    /// The first watched point past what `task` has reached, if any.
    fn next_point(&self, task: TaskId) -> Option<u64> {
        let watch = self.watched.get(&task)?;
        watch.points_ms.iter().copied().find(|&p| p > watch.reached_ms)
    }
}

impl Controller {
    /// `job` arrived and can run: tasks with nothing to wait for become ready; the others wait
    /// (pending) for their dependencies and window, whose timers are set here.
    pub(crate) fn arrive_tasks(&mut self, job: JobId) {
        for t in self.jobs[job.index()].tasks() {
            let window = self.spec_of(t).options().window;
            let opens = window.not_before.filter(|&at| at > self.now);
            if let Some(at) = opens {
                self.timers.push((at, Timer::Opens(t)));
            }
            if let Some(at) = window.not_after {
                self.timers.push((at.max(self.now), Timer::Closes(t)));
            }
            if opens.is_none() {
                self.ready_if_unblocked(t);
            }
        }
    }

    /// Applies a timer the driver was asked for. Returns whether anything changed.
    pub fn timer_fired(&mut self, timer: Timer) -> bool {
        self.stats.events += 1;
        match timer {
            Timer::Opens(task) => self.try_ready(task),
            Timer::Closes(task) => self.close_window(task),
            Timer::Progress { task, attempt } => self.progress_point(task, attempt),
            Timer::Release => self.release_due(),
        }
    }

    /// What the Controller asked to be told about, and when; the driver takes them after
    /// every event it applies and every decision.
    pub fn take_timers(&mut self) -> std::vec::Drain<'_, (SimTime, Timer)> {
        self.timers.drain(..)
    }

    fn spec_of(&self, task: TaskId) -> &crate::workload::TaskSpec {
        let job = self.tasks[task.index()].job;
        let first = self.jobs[job.index()].first_task;
        &self.workload.jobs()[job.index()].tasks[(task.0 - first.0) as usize]
    }

    /// Makes `task` ready if it is pending, met every dependency and its window is open.
    fn try_ready(&mut self, task: TaskId) -> bool {
        let open = self.spec_of(task).options().window.not_before.is_none_or(|at| at <= self.now);
        open && self.ready_if_unblocked(task)
    }

    /// `try_ready` for a task whose window is open.
    fn ready_if_unblocked(&mut self, task: TaskId) -> bool {
        if self.tasks[task.index()].status != TaskStatus::Pending || self.dag.blocked(task) {
            return false;
        }
        self.set_status(task, TaskStatus::Ready);
        self.changes.push(Change::TaskReady(task));
        true
    }

    /// The window of `task` closed: if it never started, it fails for good.
    fn close_window(&mut self, task: TaskId) -> bool {
        let t = &self.tasks[task.index()];
        if t.first_start.is_some() || t.status.is_final() {
            return false;
        }
        let was_ready = t.status.is_startable();
        let reason = format!("task {task}'s start window closed at {} before it could start", self.now);
        if was_ready {
            self.changes.push(Change::TaskFailed(task));
        }
        self.task_failed_for_good(task, reason);
        true
    }

    /// `task` failed and will not be retried. A job without dependencies fails at once; in a
    /// DAG job only the task ends, and the DAG decides the rest.
    pub(crate) fn task_failed_for_good(&mut self, task: TaskId, reason: String) {
        self.set_status(task, TaskStatus::Failed);
        let job = self.tasks[task.index()].job;
        if self.workload.jobs()[job.index()].tasks.iter().any(|t| !t.deps.is_empty()) {
            self.task_ended(task, Some(reason));
        } else {
            self.fail_job(job, reason);
        }
    }

    /// `task` reached a final state now (succeeded, failed, skipped): its dependents learn of
    /// it, skipped ones cascade, and its job ends with its last task.
    pub(crate) fn task_ended(&mut self, task: TaskId, failure: Option<String>) {
        let job = self.tasks[task.index()].job;
        // Tasks that ended and whose dependents are still to see it: a task without dependents
        // (every task of a plain job) ends without allocating.
        let mut ended = Vec::new();
        let mut next = Some((task, failure));
        while let Some((t, failure)) = next.take().or_else(|| ended.pop()) {
            self.tasks[t.index()].finish = self.now.into();
            let j = &mut self.jobs[job.index()];
            j.open_tasks -= 1;
            if let Some(reason) = failure
                && !self.dag.handles_failure(t)
            {
                self.jobs[job.index()].failure.get_or_insert(reason.into_boxed_str());
            }
            let status = self.tasks[t.index()].status;
            let Some(dependents) = self.dag.dependents.get(&t).cloned() else { continue };
            for (d, i) in dependents {
                let edge = &mut self.dag.edges.get_mut(&d).expect("a dependent has edges")[i];
                if edge.state != EdgeState::Waiting {
                    continue;
                }
                let met = match edge.kind {
                    DepKind::Any => true,
                    DepKind::Failure => status == TaskStatus::Failed,
                    DepKind::Success | DepKind::Data(_) | DepKind::Checkpoint(_) => status == TaskStatus::Succeeded,
                };
                edge.state = if met { EdgeState::Met } else { EdgeState::Never };
                if met {
                    self.try_ready(d);
                } else if self.tasks[d.index()].status == TaskStatus::Pending {
                    self.set_status(d, TaskStatus::Skipped);
                    ended.push((d, None));
                }
            }
        }
        let j = &self.jobs[job.index()];
        if j.open_tasks == 0 && j.outcome.is_none() {
            let outcome =
                j.failure.as_deref().map_or(JobOutcome::Succeeded, |reason| JobOutcome::Failed(reason.into()));
            self.in_system -= 1;
            self.end_job(job, outcome);
        }
    }

    /// A running attempt of `task` started now: if a dependent waits for a point of its work,
    /// ask to be told when the attempt gets there.
    pub(crate) fn watch_progress(&mut self, task: TaskId) {
        let Some(point) = self.dag.next_point(task) else { return };
        let t = &self.tasks[task.index()];
        if t.stalled_since.is_some() {
            return;
        }
        let at = t.run_start + t.overhead + t.wall_to(SimDuration(point));
        self.timers.push((at, Timer::Progress { task, attempt: t.attempt }));
    }

    fn progress_point(&mut self, task: TaskId, attempt: u32) -> bool {
        let t = &self.tasks[task.index()];
        if t.status != TaskStatus::Running || t.attempt != attempt || t.stalled_since.is_some() {
            return false;
        }
        let done = t.work - t.remaining + t.progress_at(self.now);
        let changed = self.reached(task, done);
        self.watch_progress(task);
        changed
    }

    /// `task` has done `done` of its work (now, or when its attempt ended): progress
    /// dependencies up to there are met, for good.
    pub(crate) fn reached(&mut self, task: TaskId, done: SimDuration) -> bool {
        let Some(watch) = self.dag.watched.get_mut(&task) else { return false };
        if done.as_ms() <= watch.reached_ms {
            return false;
        }
        watch.reached_ms = done.as_ms();
        let mut changed = false;
        let dependents = self.dag.dependents.get(&task).cloned().unwrap_or_default();
        for (d, i) in dependents {
            let edge = &mut self.dag.edges.get_mut(&d).expect("a dependent has edges")[i];
            let progress = matches!(edge.kind, DepKind::Data(_) | DepKind::Checkpoint(_));
            if progress && edge.state == EdgeState::Waiting && edge.point_ms <= done.as_ms() {
                edge.state = EdgeState::Met;
                changed |= self.try_ready(d);
            }
        }
        changed
    }
}
