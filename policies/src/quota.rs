//! Reclaiming borrowed GPUs. A queue that may borrow runs past its GPU cap on GPUs nobody else
//! uses; when a task of a queue *within* its cap then finds no room, it takes GPUs back by
//! preempting tasks of queues that are borrowing (over their cap), those that lose the least
//! work first (the work since their last checkpoint, ties on task id), until it fits. Each
//! preemption says so in the decision log. If preempting every eligible task would not make
//! room, nothing is preempted.
//!
//! Cost: nothing unless some queue borrows and a within-cap task does not fit; then
//! O(GPUs of the task's pools + victims x log) for that task.

use crate::placement::{GpuList, Placer, Shape};
use sim::{ClusterView, Plan, SimDuration, TaskId};
use std::collections::BTreeSet;

/// GPUs for `task` after preempting borrowing tasks, or `None` (and nothing changed).
pub fn reclaim(view: &ClusterView<'_>, plan: &mut Plan<'_>, placer: Placer, task: TaskId) -> Option<GpuList> {
    let queues = view.queues();
    if queues.is_empty() || !plan.within_cap(task) || !queues.iter().any(|(q, _)| plan.borrowing(q)) {
        return None;
    }
    let shape = Shape::of(view.task(task));
    let cluster = view.cluster();
    let mut victims: BTreeSet<(SimDuration, TaskId)> = BTreeSet::new();
    for pool in shape.pools.iter() {
        for node in cluster.pool(pool).nodes() {
            for gpu in cluster.node(node).gpus() {
                if let Some(v) = view.gpu_owner(gpu)
                    && !plan.is_decided(v)
                    && plan.queue_of_task(v).is_some_and(|q| plan.borrowing(q))
                {
                    victims.insert((view.work_at_risk(v), v));
                }
            }
        }
    }
    let eligible = victims.len();
    let own = plan.queue_of_task(task).map_or("-", |q| queues.get(q).name.as_str());
    let savepoint = plan.savepoint();
    for (at_risk, victim) in victims {
        let Some(q) = plan.queue_of_task(victim).filter(|&q| plan.borrowing(q)) else {
            continue; // its queue is back within its cap
        };
        let reason = format!(
            "reclaimed for {task} of queue `{own}` (within its quota) from queue `{}` (borrowing past its quota); \
             loses {:.3} s of work since its last checkpoint, the least of {eligible} eligible",
            queues.get(q).name,
            at_risk.as_secs_f64()
        );
        if plan.preempt_for(victim, reason).is_err() {
            continue;
        }
        if let Some(gpus) = placer.place(shape, view, plan.free()) {
            return Some(gpus);
        }
    }
    plan.rollback(savepoint);
    None
}
