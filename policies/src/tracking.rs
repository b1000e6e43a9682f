//! Keeping a policy's waiting queue in step with the view's changes: every policy here does
//! it the same way, only the key differs.

use crate::placement::Shape;
use crate::wait_queue::{Key, WaitQueue};
use sim::{Change, ClusterView, TaskId};

/// Applies the view's changes to `queue`: startable tasks are queued under `key(task)`, tasks
/// that started or finished, and those of ended jobs, are dropped.
pub fn sync_waiting(view: &ClusterView<'_>, queue: &mut WaitQueue, mut key: impl FnMut(TaskId) -> Key) {
    for change in view.changes() {
        match *change {
            Change::TaskReady(t) | Change::TaskPreempted(t) => {
                queue.insert(t, key(t), Shape::of(view.task(t)));
            }
            Change::TaskStarted(t) | Change::TaskFinished(t) => queue.remove(t),
            Change::JobEnded(job) => view.job(job).tasks().for_each(|t| queue.remove(t)),
        }
    }
}
