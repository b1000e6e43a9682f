//! The waiting tasks of a policy, ordered by a policy-chosen key and indexed by shape.
//!
//! Tasks of one shape (GPU count, eligible pools, single-node flag) fit or do not fit
//! together, so "the first task in key order that fits now" is the minimum over shapes that
//! fit of each shape's first task: O(shapes x log n) per query however long the queue, with
//! shapes in the tens on real traces. That is what keeps fifo, sjf and srtf incremental.
//!
//! A task its queue's quota holds back is *parked*, out of the order, until a task of that
//! queue stops (see `tracking::sync_waiting`): it is not waiting for GPUs, so it neither
//! blocks the tasks behind it nor costs a query anything.

use crate::placement::Shape;
use sim::{FreeGpus, QueueId, TaskId};
use std::collections::{BTreeMap, BTreeSet};

/// Smaller keys go first; ties break by task id (arrival order).
pub type Key = u64;

#[derive(Debug, Default)]
pub struct WaitQueue {
    all: BTreeSet<(Key, TaskId)>,
    by_shape: BTreeMap<Shape, BTreeSet<(Key, TaskId)>>,
    /// Each queued task's key and shape, by dense task id.
    entry: Vec<Option<(Key, Shape)>>,
    /// Parked tasks by queue, and each parked task's queue.
    parked: BTreeMap<QueueId, BTreeMap<TaskId, (Key, Shape)>>,
    parked_in: BTreeMap<TaskId, QueueId>,
}

impl WaitQueue {
    /// Queues `task`; a task already queued is re-keyed.
    pub fn insert(&mut self, task: TaskId, key: Key, shape: Shape) {
        self.remove(task);
        if self.entry.len() <= task.index() {
            self.entry.resize(task.index() + 1, None);
        }
        self.entry[task.index()] = Some((key, shape));
        self.all.insert((key, task));
        self.by_shape.entry(shape).or_default().insert((key, task));
    }

    /// Sets `task` aside until its queue `queue` has room again (`unpark`).
    pub fn park(&mut self, task: TaskId, queue: QueueId) {
        let Some((key, shape)) = self.entry.get(task.index()).copied().flatten() else { return };
        self.remove(task);
        self.parked.entry(queue).or_default().insert(task, (key, shape));
        self.parked_in.insert(task, queue);
    }

    /// Puts back in order every task parked for `queue`.
    pub fn unpark(&mut self, queue: QueueId) {
        for (task, (key, shape)) in self.parked.remove(&queue).unwrap_or_default() {
            self.parked_in.remove(&task);
            self.insert(task, key, shape);
        }
    }

    /// Removes `task` if queued or parked.
    pub fn remove(&mut self, task: TaskId) {
        if let Some(queue) = self.parked_in.remove(&task)
            && let Some(set) = self.parked.get_mut(&queue)
        {
            set.remove(&task);
        }
        let Some((key, shape)) = self.entry.get_mut(task.index()).and_then(Option::take) else {
            return;
        };
        self.all.remove(&(key, task));
        if let Some(set) = self.by_shape.get_mut(&shape) {
            set.remove(&(key, task));
            if set.is_empty() {
                self.by_shape.remove(&shape);
            }
        }
    }

    /// The first task in key order.
    pub fn head(&self) -> Option<(Key, TaskId)> {
        self.all.first().copied()
    }

    /// Tasks in key order, from the head.
    pub fn iter(&self) -> impl Iterator<Item = (Key, TaskId)> + '_ {
        self.all.iter().copied()
    }

    /// The first task in key order among those whose shape fits the free GPUs now.
    /// The first task of each shape in key order (shapes in their own order), with its shape:
    /// what a policy that scores shapes differently at each decision (data locality) compares.
    pub fn shape_heads(&self) -> impl Iterator<Item = (Shape, Key, TaskId)> + '_ {
        self.by_shape.iter().filter_map(|(&shape, set)| set.first().map(|&(key, task)| (shape, key, task)))
    }

    pub fn first_fitting(&self, free: &FreeGpus) -> Option<(Key, TaskId)> {
        self.by_shape.iter().filter(|(shape, _)| shape.fits(free)).filter_map(|(_, set)| set.first().copied()).min()
    }
}
