//! The moves every queue-based policy here makes the same way: keeping its waiting queue in
//! step with the view's changes (only the key differs), and starting a waiting task where its
//! placement puts it.

use crate::placement::{Placer, Shape};
use crate::wait_queue::{Key, WaitQueue};
use sim::{Change, ClusterView, GpuId, Plan, TaskId};

/// Applies the view's changes to `queue`: startable tasks (new, preempted, retrying after a
/// failure) are queued under `key(task)`; tasks that started, finished or failed for good, and
/// those of ended jobs, are dropped.
pub fn sync_waiting(view: &ClusterView<'_>, queue: &mut WaitQueue, mut key: impl FnMut(TaskId) -> Key) {
    for change in view.changes() {
        match *change {
            Change::TaskReady(t) | Change::TaskPreempted(t) => {
                queue.insert(t, key(t), Shape::of(view.task(t)));
            }
            Change::TaskFailed(t) if view.task(t).status.is_startable() => {
                queue.insert(t, key(t), Shape::of(view.task(t)));
            }
            Change::TaskStarted(t) | Change::TaskFinished(t) | Change::TaskFailed(t) => queue.remove(t),
            Change::JobEnded(job) => view.job(job).tasks().for_each(|t| queue.remove(t)),
        }
    }
}

/// Places `task` with `placer` on the GPUs free now and starts it, taking it off `waiting`.
/// `None` (and nothing changed) when it does not fit.
pub fn place_and_start(
    view: &ClusterView<'_>,
    plan: &mut Plan<'_>,
    placer: Placer,
    waiting: &mut WaitQueue,
    task: TaskId,
) -> Option<Vec<GpuId>> {
    let gpus = placer.place(Shape::of(view.task(task)), view, plan.free())?;
    plan.start(task, &gpus).expect("placement chose free GPUs of an eligible pool");
    waiting.remove(task);
    Some(gpus)
}
