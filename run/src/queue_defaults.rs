//! Per-queue defaults of checkpoint interval, checkpoint cost and restart overhead, filled
//! into the tasks of each queue's jobs that set none.

use crate::per_queue::to_map;
use crate::{RunSpec, Seconds};
use sim::{JobSpec, WorkloadShape};
use std::collections::{BTreeMap, BTreeSet};

/// The three per-queue settings of a RunSpec, read (a queue given twice refused).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueDefaults {
    checkpoints: BTreeMap<String, Seconds>,
    overheads: BTreeMap<String, Seconds>,
    costs: BTreeMap<String, Seconds>,
}

impl QueueDefaults {
    /// The per-queue settings of `spec`.
    pub fn of(spec: &RunSpec) -> Result<QueueDefaults, String> {
        Ok(QueueDefaults {
            checkpoints: to_map("queue_checkpoint_s", &spec.queue_checkpoint_s)?,
            overheads: to_map("queue_restart_overhead_s", &spec.queue_restart_overhead_s)?,
            costs: to_map("queue_checkpoint_cost_s", &spec.queue_checkpoint_cost_s)?,
        })
    }

    /// Whether any queue has a default.
    pub fn is_empty(&self) -> bool {
        self.checkpoints.is_empty() && self.overheads.is_empty() && self.costs.is_empty()
    }

    /// Refuses a queue named in a setting that no job of `workload` uses: a typo would
    /// otherwise change nothing, silently.
    pub fn check_used(&self, workload: &WorkloadShape) -> Result<(), String> {
        let queues: BTreeSet<&str> = workload.queues().collect();
        let named = self.checkpoints.keys().chain(self.overheads.keys()).chain(self.costs.keys());
        match named.into_iter().find(|q| !queues.contains(q.as_str())) {
            None => Ok(()),
            Some(unknown) => Err(format!(
                "no job is in queue `{unknown}` (queues: {})",
                queues.into_iter().collect::<Vec<_>>().join(", ")
            )),
        }
    }

    /// `job`'s tasks with their unset values taken from its queue's defaults (applying it
    /// twice is applying it once: a filled value is the task's own).
    pub fn apply_to_job(&self, job: &mut JobSpec) {
        let Some(queue) = job.queue.as_deref() else { return };
        let checkpoint = self.checkpoints.get(queue).map(|s| s.duration());
        let overhead = self.overheads.get(queue).map(|s| s.duration());
        let cost = self.costs.get(queue).map(|s| s.duration());
        for task in &mut job.tasks {
            let set = task.options();
            let fills = (set.checkpoint.is_none() && checkpoint.is_some())
                || (set.restart_overhead.is_none() && overhead.is_some())
                || (set.checkpoint_cost.is_none() && cost.is_some());
            if !fills {
                continue; // nothing to fill, so nothing to allocate
            }
            let options = task.options_mut();
            options.checkpoint = options.checkpoint.or(checkpoint);
            options.restart_overhead = options.restart_overhead.or(overhead);
            options.checkpoint_cost = options.checkpoint_cost.or(cost);
        }
    }
}
