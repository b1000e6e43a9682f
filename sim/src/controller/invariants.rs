//! The invariants the Controller checks after every step in debug builds and tests. Each check
//! recomputes from scratch what the Controller keeps incrementally, so a bookkeeping slip shows
//! up at the step that made it.

use super::Controller;
use crate::alloc::WHOLE_GPU_MILLI;
use crate::ids::GpuId;
use crate::state::TaskStatus;

impl Controller {
    /// `Err` names the first invariant found broken. Each room checks itself from scratch
    /// (its counts against a recount, its own consistency); the checks here span rooms.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.free.check_consistent()?;
        self.occupancy.check(&self.tasks)?;
        self.census.check(&self.tasks, &self.jobs)?;
        self.releases.check()?;
        let (cluster, health) = (&self.cluster, &self.health);
        self.faults.check(|n| cluster.node(n).gpu_count, |n| health.node_dead(n))?;
        self.check_free_index()?;
        self.check_placements()?;
        self.check_gpu_time_conserved()?;
        self.check_quotas()
    }

    /// Queue usage equals the recount from running tasks; no queue holds more GPUs than its cap
    /// unless it may borrow, nor runs more jobs than its cap.
    fn check_quotas(&self) -> Result<(), String> {
        let running = |t: crate::ids::TaskId| self.tasks[t.index()].status == TaskStatus::Running;
        if let Some(differs) = self.quota.recount_differs(&self.tasks, &self.job_queue, running) {
            return Err(differs);
        }
        for (q, queue) in self.queues.iter() {
            let used = self.quota.used_mgpus(q);
            if queue.max_mgpus.is_some_and(|max| used > max && !queue.borrow) {
                return Err(format!("queue `{}` holds {used} milli-GPUs, over its quota", queue.name));
            }
            if queue.max_running_jobs.is_some_and(|max| self.quota.running_jobs(q) > max) {
                return Err(format!("queue `{}` runs more jobs than its quota", queue.name));
            }
        }
        Ok(())
    }

    /// A GPU is free exactly when no task holds it, nothing of it is being released and the
    /// scheduler may use it (not on a node known dead, not known failed); a shared GPU's room
    /// in the free index is what its sharers and releasing shares leave. Every GPU is held,
    /// free, or idle and unusable.
    fn check_free_index(&self) -> Result<(), String> {
        let gpus = || (0..self.cluster.gpu_count()).map(GpuId);
        for gpu in gpus() {
            let owner = self.occupancy.owner(gpu);
            let free = self.free.is_free(self.cluster.node_of(gpu), gpu);
            let usable = self.health.usable(gpu);
            let sharers = self.occupancy.sharers(gpu);
            // Milli-GPUs let go of and not yet returned (release latency): neither free nor held.
            let releasing = self.releases.pending(gpu);
            match (owner, sharers) {
                (None, None) if free != (usable && releasing == 0) => {
                    return Err(format!(
                        "{gpu} is held by no task, usable {usable}, {releasing} milli-GPUs releasing, but free {free}"
                    ));
                }
                (Some(task), _) if free => return Err(format!("{gpu} names {task} as owner, but it is free")),
                (None, Some(sharing)) => {
                    let used: u32 = sharing.iter().map(|t| self.tasks[t.index()].milli).sum::<u32>() + releasing;
                    if free
                        || self.free.shared_room(gpu) != Some(WHOLE_GPU_MILLI.saturating_sub(used))
                        || used > WHOLE_GPU_MILLI
                    {
                        return Err(format!(
                            "{gpu} is shared by {sharing:?} ({used} milli-GPUs), which the free index disagrees with"
                        ));
                    }
                }
                _ => {}
            }
            // Shares let go of stay used in the free index until they return.
            let releasing_shares_agree =
                releasing > 0 && self.free.shared_room(gpu) == Some(WHOLE_GPU_MILLI.saturating_sub(releasing));
            if sharers.is_none() && self.free.is_shared(gpu) && !releasing_shares_agree {
                return Err(format!("{gpu} is shared in the free index but by no task nor releasing share"));
            }
        }
        let held = gpus().filter(|&g| !self.idle(g)).count() as u32;
        let idle_unusable = gpus().filter(|&g| self.idle(g) && !self.health.usable(g)).count() as u32;
        if held + self.free.total() + idle_unusable != self.cluster.gpu_count() {
            return Err("held + free + idle unusable GPUs differ from the cluster's GPUs".into());
        }
        Ok(())
    }

    /// Running gangs are whole, inside one allowed pool, on usable GPUs, on one node when asked.
    fn check_placements(&self) -> Result<(), String> {
        for (index, t) in self.tasks.iter() {
            if t.status != TaskStatus::Running {
                continue;
            }
            if t.placed.len() != t.gpus as usize {
                return Err(format!("task t{index} holds {} of its {} GPUs", t.placed.len(), t.gpus));
            }
            let pool = self.cluster.pool_of(t.placed[0]);
            if !t.pools.contains(pool) {
                return Err(format!("task t{index} runs in pool {pool}, outside its GPU type"));
            }
            for &gpu in &t.placed {
                if !self.health.usable(gpu) {
                    return Err(format!("task t{index} runs on {gpu}, which is known to be unusable"));
                }
                if self.cluster.pool_of(gpu) != pool {
                    return Err(format!("task t{index}'s gang is split across pools"));
                }
            }
            if let Some(n) = t.per_node().filter(|&n| !self.cluster.splits_as(&t.placed, n)) {
                return Err(format!("task t{index} runs with other than {n} of its GPUs on each node"));
            }
        }
        Ok(())
    }

    /// The allocated-GPU integral equals the GPU-time the tasks say they held (each task's
    /// ended attempts split into productive and lost time by construction: `close_attempt`).
    fn check_gpu_time_conserved(&self) -> Result<(), String> {
        let held: u128 =
            self.gone_mgpu_ms + self.tasks.iter().map(|(_, t)| u128::from(t.mgpu_ms_at(self.now))).sum::<u128>();
        if held != self.stats.allocated_mgpu_ms {
            return Err(format!(
                "GPU-time not conserved: tasks held {held} GPU-ms, the cluster integral is {}",
                self.stats.allocated_mgpu_ms
            ));
        }
        Ok(())
    }
}
