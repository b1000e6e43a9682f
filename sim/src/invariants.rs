//! The invariants the Controller checks after every step in debug builds and tests. Each check
//! recomputes from scratch what the Controller keeps incrementally, so a bookkeeping slip shows
//! up at the step that made it.

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
        self.check_jobs_in_system()
    }

    /// No GPU in two tasks; a GPU is free exactly when no task holds it and the scheduler may
    /// use it (not on a node known dead, not known failed).
    fn check_gpu_owners(&self) -> Result<(), String> {
        for (index, owner) in self.owner.iter().enumerate() {
            let gpu = GpuId::from_index(index);
            let free = self.free.is_free(self.cluster.node_of(gpu), gpu);
            let usable = self.health.usable(gpu);
            match owner {
                None if free != usable => {
                    return Err(format!("{gpu} is held by no task, usable {usable}, but free {free}"));
                }
                Some(task) if free => return Err(format!("{gpu} is held by {task} and also free")),
                Some(task) => {
                    let t = &self.tasks[task.index()];
                    if t.status != TaskStatus::Running || !t.placed.contains(&gpu) {
                        return Err(format!("{gpu} names {task} as owner, which does not hold it"));
                    }
                }
                None => {}
            }
        }
        Ok(())
    }

    /// Gangs whole, inside one allowed pool, on one node when asked; counts agree.
    fn check_running_tasks(&self) -> Result<(), String> {
        let (mut running, mut allocated) = (0u32, 0u32);
        for (index, t) in self.tasks.iter().enumerate() {
            let running_now = t.status == TaskStatus::Running;
            if running_now == t.placed.is_empty() {
                return Err(format!("task t{index} is {} but holds {} GPUs", t.status.as_str(), t.placed.len()));
            }
            if !running_now {
                continue;
            }
            running += 1;
            allocated += t.gpus;
            if t.placed.len() != t.gpus as usize {
                return Err(format!("task t{index} holds {} of its {} GPUs", t.placed.len(), t.gpus));
            }
            let node = self.cluster.node_of(t.placed[0]);
            let pool = self.cluster.node(node).pool;
            if !t.pools.contains(pool) {
                return Err(format!("task t{index} runs in pool {pool}, outside its GPU type"));
            }
            for &gpu in &t.placed {
                if self.owner[gpu.index()] != Some(crate::ids::TaskId::from_index(index)) {
                    return Err(format!("task t{index} holds {gpu}, whose owner disagrees"));
                }
                if !self.health.usable(gpu) {
                    return Err(format!("task t{index} runs on {gpu}, which is known to be unusable"));
                }
                let gpu_node = self.cluster.node_of(gpu);
                if self.cluster.node(gpu_node).pool != pool || (t.single_node && gpu_node != node) {
                    return Err(format!("task t{index}'s gang is split across pools or nodes"));
                }
            }
        }
        if running != self.running_tasks || allocated != self.allocated_gpus {
            return Err(format!(
                "{running} tasks hold {allocated} GPUs, but the counters say {} and {}",
                self.running_tasks, self.allocated_gpus
            ));
        }
        let idle_unusable = self
            .owner
            .iter()
            .enumerate()
            .filter(|&(g, o)| o.is_none() && !self.health.usable(GpuId::from_index(g)))
            .count() as u32;
        if allocated + self.free.total() + idle_unusable != self.cluster.gpu_count() {
            return Err("allocated + free + idle unusable GPUs differ from the cluster's GPUs".into());
        }
        Ok(())
    }

    /// The allocated-GPU integral equals the GPU-time the tasks say they held, and each task's
    /// ended attempts split exactly into productive, redone, detection-lag and overhead time.
    fn check_gpu_time_conserved(&self) -> Result<(), String> {
        for (index, t) in self.tasks.iter().enumerate() {
            let parts = t.productive_gpu_ms + t.lost_redo_gpu_ms + t.lost_lag_gpu_ms + t.lost_overhead_gpu_ms;
            if parts != t.closed_gpu_ms {
                return Err(format!("task t{index} held {} GPU-ms but its parts sum to {parts}", t.closed_gpu_ms));
            }
        }
        let held: u64 = self.tasks.iter().map(|t| t.gpu_ms_at(self.now)).sum();
        if held != self.stats.allocated_gpu_ms {
            return Err(format!(
                "GPU-time not conserved: tasks held {held} GPU-ms, the cluster integral is {}",
                self.stats.allocated_gpu_ms
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
