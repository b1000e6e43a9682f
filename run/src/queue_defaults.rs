//! Per-queue defaults of checkpoint interval, checkpoint cost and restart overhead, filled
//! into the tasks of each queue's jobs that set none.

use crate::RunSpec;
use crate::per_queue::to_map;
use sim::Workload;
use std::collections::BTreeSet;

/// `workload` with its tasks' unset values taken from their queue's defaults in `spec`. A
/// queue named in a setting that no job uses is an error (a typo would otherwise change
/// nothing, silently).
pub fn apply(spec: &RunSpec, workload: Workload) -> Result<Workload, String> {
    let checkpoints = to_map("queue_checkpoint_s", &spec.queue_checkpoint_s)?;
    let overheads = to_map("queue_restart_overhead_s", &spec.queue_restart_overhead_s)?;
    let costs = to_map("queue_checkpoint_cost_s", &spec.queue_checkpoint_cost_s)?;
    if checkpoints.is_empty() && overheads.is_empty() && costs.is_empty() {
        return Ok(workload);
    }
    let queues: BTreeSet<&str> = workload.jobs().iter().filter_map(|j| j.queue.as_deref()).collect();
    let named = checkpoints.keys().chain(overheads.keys()).chain(costs.keys());
    if let Some(unknown) = named.into_iter().find(|q| !queues.contains(q.as_str())) {
        return Err(format!(
            "no job is in queue `{unknown}` (queues: {})",
            queues.into_iter().collect::<Vec<_>>().join(", ")
        ));
    }
    let mut jobs = workload.into_jobs();
    for job in &mut jobs {
        let Some(queue) = job.queue.as_deref() else { continue };
        let checkpoint = checkpoints.get(queue).map(|s| s.duration());
        let overhead = overheads.get(queue).map(|s| s.duration());
        let cost = costs.get(queue).map(|s| s.duration());
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
    Workload::new(jobs).map_err(|e| e.to_string())
}
