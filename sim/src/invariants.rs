//! The invariants the Controller checks after every step in debug builds and tests. Each check
//! recomputes from scratch what the Controller keeps incrementally, so a bookkeeping slip shows
//! up at the step that made it.

use crate::alloc::WHOLE_GPU_MILLI;
use crate::controller::Controller;
use crate::ids::GpuId;
use crate::state::TaskStatus;

impl Controller {
    /// `Err` names the first invariant found broken.
    pub fn check_invariants(&self) -> Result<(), String> {
        self.free.check_consistent()?;
        self.check_gpu_owners()?;
        self.check_running_tasks()?;
        self.check_gpu_time_conserved()?;
        self.check_quotas()?;
        self.check_jobs_in_system()
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

    /// No GPU in two tasks (a shared GPU: only fractional tasks, their shares summing to what
    /// the free index says is used); a GPU is free exactly when no task holds it and the
    /// scheduler may use it (not on a node known dead, not known failed).
    fn check_gpu_owners(&self) -> Result<(), String> {
        // GPUs each task owns, to compare with what it holds: O(GPUs + tasks), where asking
        // each owner whether it holds the GPU would cost O(gang) per GPU.
        let mut owned = vec![0usize; self.tasks.len()];
        for index in 0..self.owner.len() {
            let gpu = GpuId::from_index(index);
            let free = self.free.is_free(self.cluster.node_of(gpu), gpu);
            let usable = self.health.usable(gpu);
            let sharers = self.sharers.get(&gpu);
            // Milli-GPUs let go of and not yet returned (release latency): neither free nor held.
            let releasing = self.releases.pending(gpu);
            match (self.owner[index], sharers) {
                (None, None) if free != (usable && releasing == 0) => {
                    return Err(format!(
                        "{gpu} is held by no task, usable {usable}, {releasing} milli-GPUs releasing, but free {free}"
                    ));
                }
                (None, None) => {}
                (Some(_), Some(_)) => return Err(format!("{gpu} has an owner and sharers")),
                (Some(task), None) => {
                    let t = &self.tasks[task.index()];
                    owned[task.index()] += 1;
                    if free || t.status != TaskStatus::Running || t.milli != WHOLE_GPU_MILLI {
                        return Err(format!(
                            "{gpu} names {task} as owner, which does not hold it whole, or it is free"
                        ));
                    }
                }
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
                    if let Some(t) = sharing.iter().find(|t| !self.tasks[t.index()].placed.contains(&gpu)) {
                        return Err(format!("{gpu} names {t} as a sharer, which does not hold it"));
                    }
                }
            }
            // Shares let go of stay used in the free index until they return.
            let releasing_shares_agree =
                releasing > 0 && self.free.shared_room(gpu) == Some(WHOLE_GPU_MILLI.saturating_sub(releasing));
            if sharers.is_none() && self.free.is_shared(gpu) && !releasing_shares_agree {
                return Err(format!("{gpu} is shared in the free index but by no task nor releasing share"));
            }
        }
        // With `check_running_tasks` (each GPU a task holds names it), equal counts mean each
        // GPU naming a task is one it holds.
        let whole = |t: &crate::state::TaskState| t.status == TaskStatus::Running && t.milli == WHOLE_GPU_MILLI;
        if let Some((index, t)) = self.tasks.iter().enumerate().find(|(i, t)| whole(t) && owned[*i] != t.placed.len()) {
            return Err(format!("task t{index} holds {} GPUs but {} name it as owner", t.placed.len(), owned[index]));
        }
        Ok(())
    }

    /// Gangs whole, inside one allowed pool, on one node when asked; counts agree.
    fn check_running_tasks(&self) -> Result<(), String> {
        let (mut running, mut allocated, mut stalled, mut waiting) = (0u32, 0u64, 0u64, 0u64);
        for (index, t) in self.tasks.iter().enumerate() {
            let task = crate::ids::TaskId::from_index(index);
            let running_now = t.status == TaskStatus::Running;
            waiting += u64::from(t.status.is_startable());
            if t.stalled_since.is_some() {
                if !running_now {
                    return Err(format!("task t{index} is {} but marked stalled", t.status.as_str()));
                }
                stalled += t.mgpus();
            }
            if running_now == t.placed.is_empty() {
                return Err(format!("task t{index} is {} but holds {} GPUs", t.status.as_str(), t.placed.len()));
            }
            if !running_now {
                continue;
            }
            running += 1;
            allocated += t.mgpus();
            if t.placed.len() != t.gpus as usize {
                return Err(format!("task t{index} holds {} of its {} GPUs", t.placed.len(), t.gpus));
            }
            let pool = self.cluster.pool_of(t.placed[0]);
            if !t.pools.contains(pool) {
                return Err(format!("task t{index} runs in pool {pool}, outside its GPU type"));
            }
            for &gpu in &t.placed {
                if !self.holders(gpu).any(|h| h == task) {
                    return Err(format!("task t{index} holds {gpu}, whose holders disagree"));
                }
                if !self.health.usable(gpu) {
                    return Err(format!("task t{index} runs on {gpu}, which is known to be unusable"));
                }
                let gpu_node = self.cluster.node_of(gpu);
                if self.cluster.node(gpu_node).pool != pool {
                    return Err(format!("task t{index}'s gang is split across pools"));
                }
            }
            if let Some(n) = t.per_node().filter(|&n| !self.cluster.splits_as(&t.placed, n)) {
                return Err(format!("task t{index} runs with other than {n} of its GPUs on each node"));
            }
        }
        if running != self.running_tasks || allocated != self.allocated_mgpus {
            return Err(format!(
                "{running} tasks hold {allocated} milli-GPUs, but the counters say {} and {}",
                self.running_tasks, self.allocated_mgpus
            ));
        }
        if (stalled, waiting) != (self.stalled_mgpus, self.waiting_tasks) {
            return Err(format!(
                "{stalled} stalled milli-GPUs and {waiting} waiting tasks, but the counters say {} and {}",
                self.stalled_mgpus, self.waiting_tasks
            ));
        }
        let held = (0..self.owner.len()).filter(|&g| !self.idle(GpuId::from_index(g))).count() as u32;
        let idle_unusable =
            (0..self.owner.len()).map(GpuId::from_index).filter(|&g| self.idle(g) && !self.health.usable(g)).count()
                as u32;
        if held + self.free.total() + idle_unusable != self.cluster.gpu_count() {
            return Err("held + free + idle unusable GPUs differ from the cluster's GPUs".into());
        }
        Ok(())
    }

    /// The allocated-GPU integral equals the GPU-time the tasks say they held (each task's
    /// ended attempts split into productive and lost time by construction: `close_attempt`).
    fn check_gpu_time_conserved(&self) -> Result<(), String> {
        let held: u128 = self.tasks.iter().map(|t| u128::from(t.mgpu_ms_at(self.now))).sum();
        if held != self.stats.allocated_mgpu_ms {
            return Err(format!(
                "GPU-time not conserved: tasks held {held} GPU-ms, the cluster integral is {}",
                self.stats.allocated_mgpu_ms
            ));
        }
        Ok(())
    }

    fn check_jobs_in_system(&self) -> Result<(), String> {
        let in_system = self.jobs.iter().filter(|j| j.in_system()).count() as u64;
        if in_system != self.in_system {
            return Err(format!("{in_system} jobs in the system, the counter says {}", self.in_system));
        }
        Ok(())
    }
}
