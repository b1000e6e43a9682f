//! What the Controller does about broken hardware: the ground truth (tasks on broken hardware
//! stop making progress) and the observations (a node declared dead, a GPU failure seen, a
//! node back) with their consequence: failed attempts, retries within budget, failed jobs.
//! The engine decides *when* each observation happens (see `observe.rs`); the live driver
//! (`live/src/driver.rs`) calls the same methods on its heartbeat deadlines and the agents'
//! NVML health reports.

use super::Controller;
use crate::ids::{GpuId, JobId, NodeId, TaskId};
use crate::job_status::JobOutcome;
use crate::record::DecisionKind;
use crate::state::TaskStatus;
use crate::time::SimTime;
use crate::view::Change;

impl Controller {
    /// Truth: `gpu` broke now. The task on it stops making progress.
    pub fn gpu_broke(&mut self, gpu: GpuId) {
        self.stats.failures += 1;
        self.series.count(self.now, |b| b.failures += 1);
        self.health.set_gpu_broken(gpu, true);
        self.stall_tasks_on(&[gpu]);
        self.sample_health();
    }

    /// Truth: `node` went down now, with all its GPUs.
    pub fn node_broke(&mut self, node: NodeId) {
        self.stats.failures += 1;
        self.series.count(self.now, |b| b.failures += 1);
        self.health.set_node_down(node, true);
        let gpus: Vec<GpuId> = self.cluster.node(node).gpus().collect();
        self.stall_tasks_on(&gpus);
        self.sample_health();
    }

    /// Truth: `gpu` works again. A GPU the scheduler had taken out returns to service.
    pub fn gpu_repaired(&mut self, gpu: GpuId) {
        self.health.set_gpu_broken(gpu, false);
        let back = self.health.set_gpu_out(gpu, false);
        self.return_to_service(&back);
        self.sample_health();
    }

    /// Truth: `node` is up again (it rejoins the scheduler when its heartbeats reach it).
    pub fn node_repaired(&mut self, node: NodeId) {
        self.health.set_node_down(node, false);
        self.sample_health();
    }

    /// Observation: the failure of `gpu` that happened at `failed_at` is seen now; the stalled
    /// attempt on it fails. `still_down`: that same failure is not repaired yet, so the GPU is
    /// taken out of service until it is.
    pub fn gpu_failure_seen(&mut self, gpu: GpuId, failed_at: SimTime, still_down: bool) {
        self.count_detection(self.cluster.node_of(gpu), failed_at);
        if still_down {
            let out = self.health.set_gpu_out(gpu, true);
            self.take_out_of_service(&out);
        }
        self.fail_tasks_on(&[gpu], true, "its GPU failed");
        self.sample_health();
    }

    /// Observation: `node` missed its heartbeats and is declared dead. Every attempt on it fails
    /// (whether or not its hardware broke: that is what a false positive costs).
    pub fn node_declared_dead(&mut self, node: NodeId, failed_at: Option<SimTime>) {
        match failed_at {
            Some(at) => self.count_detection(node, at),
            None => {
                self.faults.seen(self.now, node);
            }
        }
        let out = self.health.set_node_dead(node, true);
        self.take_out_of_service(&out);
        let gpus: Vec<GpuId> = self.cluster.node(node).gpus().collect();
        let hit = self.fail_tasks_on(&gpus, false, "its node was declared dead");
        self.swap_in_spare(node, hit);
        self.sample_health();
    }

    /// An operator retires `node` for good (it failed too often): it leaves service as a dead
    /// node does and never rejoins; attempts still on it fail. Its GPUs count as retired
    /// capacity from now on, not as broken.
    pub fn retire_node(&mut self, node: NodeId) {
        self.stats.retired_nodes += 1;
        self.spares.forget(node);
        self.faults.retire(node, self.cluster.node(node).gpu_count);
        if !self.health.node_dead(node) {
            let out = self.health.set_node_dead(node, true);
            self.take_out_of_service(&out);
            let gpus: Vec<GpuId> = self.cluster.node(node).gpus().collect();
            self.fail_tasks_on(&gpus, false, "its node was retired");
        }
        self.sample_health();
    }

    /// Observation: `node` came back before it was declared dead, and its agent reports the
    /// tasks it lost when it went down (those that made no progress since `failed_at`).
    pub fn node_lost_tasks(&mut self, node: NodeId, failed_at: SimTime) {
        self.count_detection(node, failed_at);
        let gpus: Vec<GpuId> = self.cluster.node(node).gpus().collect();
        self.fail_tasks_on(&gpus, true, "its node restarted");
    }

    /// Observation: `node`, declared dead, heartbeats again: its usable GPUs return (or it goes
    /// to its pool's reserve of spares, when that is short).
    pub fn node_rejoined(&mut self, node: NodeId) {
        self.refill_reserve(node);
        let back = self.health.set_node_dead(node, false);
        self.return_to_service(&back);
        self.sample_health();
    }

    /// A failure on `node` became known now (kept for health-aware placement).
    fn count_detection(&mut self, node: NodeId, failed_at: SimTime) {
        self.faults.seen(self.now, node);
        self.stats.detections += 1;
        self.stats.detection_lag_ms += self.now.since(failed_at).as_ms();
    }

    fn stall_tasks_on(&mut self, gpus: &[GpuId]) {
        for &gpu in gpus {
            self.occupancy.stall_holders(gpu, &mut self.tasks, self.now);
        }
    }

    /// GPUs that just became unusable leave the free index (those held by a task leave it
    /// when the task lets go: see `release_to_free`; a shared one's room is offered to no
    /// new share meanwhile).
    pub(crate) fn take_out_of_service(&mut self, gpus: &[GpuId]) {
        for &gpu in gpus {
            if self.idle(gpu) {
                self.free.take(self.cluster.node_of(gpu), gpu);
            } else {
                self.free.set_shared_usable(gpu, false);
            }
        }
    }

    pub(crate) fn return_to_service(&mut self, gpus: &[GpuId]) {
        for &gpu in gpus {
            if self.idle(gpu) {
                self.free.release(self.cluster.node_of(gpu), gpu);
            } else {
                self.free.set_shared_usable(gpu, true);
            }
        }
    }

    /// Fails the running attempts on `gpus` (only stalled ones when `stalled_only`); how many.
    fn fail_tasks_on(&mut self, gpus: &[GpuId], stalled_only: bool, why: &str) -> u64 {
        let mut hit: Vec<TaskId> = gpus.iter().flat_map(|&g| self.holders(g)).collect();
        hit.sort_unstable();
        hit.dedup();
        let mut failed = 0;
        for task in hit {
            let t = &self.tasks[task.index()];
            // An earlier task's job may have failed and stopped this one already.
            if t.status == TaskStatus::Running && (!stalled_only || t.stalled_since.is_some()) {
                self.fail_attempt(task, why);
                failed += 1;
            }
        }
        failed
    }

    /// A running attempt failed: it loses its work since the last checkpoint and retries if
    /// its budget allows; otherwise the task fails, and its job with it.
    fn fail_attempt(&mut self, task: TaskId, why: &str) {
        let gpus = self.end_attempt(task);
        self.release_to_free(task, &gpus);
        let budget = self.retry_budget(task);
        let t = &mut self.tasks[task.index()];
        t.failures += 1;
        let (job, failures) = (t.job, t.failures);
        self.stats.task_failures += 1;
        self.changes.push(Change::TaskFailed(task));
        if failures <= budget {
            self.set_status(task, TaskStatus::Retrying);
            let t = &mut self.tasks[task.index()];
            t.retries += 1;
            self.stats.retries += 1;
            self.log(DecisionKind::Fail, job, Some(task), &gpus, &format!("{why}; retry {failures} of {budget}"));
        } else {
            let reason = format!("task {task} failed {failures} times ({why}); its retry budget was {budget}");
            self.log(DecisionKind::Fail, job, Some(task), &gpus, &reason);
            self.task_failed_for_good(task, reason);
        }
    }

    /// Retries `task` may have: `R_max`, or with a deadline
    /// `min(R_max, max(1, floor((deadline - elapsed) / mean attempt time)))`.
    fn retry_budget(&self, task: TaskId) -> u32 {
        let max = self.config.failures.max_retries;
        let t = &self.tasks[task.index()];
        let spec = &self.specs[t.job.index()];
        let Some(deadline) = spec.deadline.get() else { return max };
        let mean_attempt_ms = t.attempts_ms() / u64::from(t.attempt.max(1));
        if mean_attempt_ms == 0 {
            return max;
        }
        let left = deadline.saturating_sub(self.now.since(spec.submit)).as_ms();
        let fits = u32::try_from(left / mean_attempt_ms).unwrap_or(u32::MAX);
        max.min(fits.max(1))
    }

    /// Ends `job` as failed: its running tasks stop, its waiting tasks will never run.
    pub(crate) fn fail_job(&mut self, job: JobId, reason: String) {
        self.stop_job(job);
        self.end_job(job, JobOutcome::Failed(reason.into()));
    }

    /// Stops every task of `job` that has not ended (running ones lose their GPUs) and takes
    /// the job out of the system; the caller ends it with its outcome.
    pub(crate) fn stop_job(&mut self, job: JobId) {
        for task in self.jobs[job.index()].tasks() {
            let status = self.tasks[task.index()].status;
            if status == TaskStatus::Running {
                let gpus = self.end_attempt(task);
                self.release_to_free(task, &gpus);
                self.changes.push(Change::TaskFailed(task));
            }
            if !status.is_final() {
                self.set_status(task, TaskStatus::Failed);
            }
            self.tasks[task.index()].finish.get_or_insert(self.now);
        }
        self.jobs[job.index()].open_tasks = 0;
    }

    fn sample_health(&mut self) {
        self.faults.sample(self.now, self.health.broken_gpus(), self.health.unusable_gpus());
    }
}
