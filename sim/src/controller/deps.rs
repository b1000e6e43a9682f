//! The Controller's side of task DAGs and start windows (the bookkeeping is `deps.rs`'s `Dag`): which tasks are ready, which branch
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

use super::Controller;
use crate::deps::Timer;
use crate::ids::{JobId, TaskId};
use crate::job_status::JobOutcome;
use crate::state::TaskStatus;
use crate::time::{SimDuration, SimTime};
use crate::view::Change;

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
        let gone = |task: TaskId| self.tasks.get(task.index()).is_none();
        match timer {
            // The task's job ended and a streamed run let it go: nothing of it changes now.
            Timer::Opens(task) | Timer::Closes(task) | Timer::Progress { task, .. } if gone(task) => false,
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
        &self.specs[job.index()].tasks[(task.0 - first.0) as usize]
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
        if self.specs[job.index()].tasks.iter().any(|t| !t.deps.is_empty()) {
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
            self.resolve_dependents(t, status, &mut ended);
        }
        let j = &self.jobs[job.index()];
        if j.open_tasks == 0 && j.outcome.is_none() {
            let outcome =
                j.failure.as_deref().map_or(JobOutcome::Succeeded, |reason| JobOutcome::Failed(reason.into()));
            self.end_job(job, outcome);
        }
    }

    /// `upstream` ended with `status`: each dependent still waiting on it learns of it, in
    /// order, and is tried at once (ready) or skipped; skipped ones join `ended`, to cascade.
    fn resolve_dependents(&mut self, upstream: TaskId, status: TaskStatus, ended: &mut Vec<(TaskId, Option<String>)>) {
        let Some(dependents) = self.dag.dependents(upstream) else { return };
        for (d, i) in dependents {
            match self.dag.resolve(d, i, status) {
                Some(true) => {
                    self.try_ready(d);
                }
                Some(false) if self.tasks[d.index()].status == TaskStatus::Pending => {
                    self.set_status(d, TaskStatus::Skipped);
                    ended.push((d, None));
                }
                _ => {}
            }
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
        let Some(dependents) = self.dag.reach(task, done.as_ms()) else { return false };
        let mut changed = false;
        for (d, i) in dependents {
            if self.dag.meet_progress(d, i, done.as_ms()) {
                changed |= self.try_ready(d);
            }
        }
        changed
    }
}
