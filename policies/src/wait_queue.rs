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

use crate::id_table::IdTable;
use crate::placement::Shape;
use sim::{FreeGpus, QueueId, TaskId};
use std::collections::{BTreeMap, BTreeSet};

/// Smaller keys go first; ties break by task id (arrival order).
pub type Key = u64;

/// A policy's waiting tasks: in key order, by shape, and parked by queue.
#[derive(Debug, Default)]
pub struct WaitQueue {
    all: BTreeSet<(Key, TaskId)>,
    /// Shapes seen, interned: a task's entry holds the shape's index, so inserting and
    /// removing a task compares shapes once (to find the index), not on every tree descent.
    shape_index: BTreeMap<Shape, usize>,
    shapes: Vec<Shape>,
    /// Queued tasks by shape index (a shape with none left keeps its empty set).
    by_shape: Vec<BTreeSet<(Key, TaskId)>>,
    /// Each queued task's key and shape index, by task id.
    entry: Entries,
    /// Parked tasks by queue, and each parked task's queue.
    parked: BTreeMap<QueueId, BTreeMap<TaskId, (Key, Shape)>>,
    parked_in: BTreeMap<TaskId, QueueId>,
}

impl WaitQueue {
    /// Queues `task`; a task already queued is re-keyed.
    pub fn insert(&mut self, task: TaskId, key: Key, shape: Shape) {
        // Already queued so (a policy queues its victims at once, and the next decision's
        // changes name them again): nothing to move in either tree.
        if let Some((queued_key, index)) = self.entry.get(task)
            && queued_key == key
            && self.shapes[index] == shape
        {
            return;
        }
        self.remove(task);
        let index = self.intern(shape);
        self.entry.set(task, key, index);
        self.all.insert((key, task));
        self.by_shape[index].insert((key, task));
    }

    fn intern(&mut self, shape: Shape) -> usize {
        if let Some(&index) = self.shape_index.get(&shape) {
            return index;
        }
        let index = self.shapes.len();
        self.shape_index.insert(shape, index);
        self.shapes.push(shape);
        self.by_shape.push(BTreeSet::new());
        index
    }

    /// Sets `task` aside until its queue `queue` has room again (`unpark`).
    pub fn park(&mut self, task: TaskId, queue: QueueId) {
        let Some((key, index)) = self.entry.get(task) else { return };
        let shape = self.shapes[index];
        self.remove(task);
        self.parked.entry(queue).or_default().insert(task, (key, shape));
        self.parked_in.insert(task, queue);
    }

    /// Puts back in order every task parked for `queue`.
    pub fn unpark(&mut self, queue: QueueId) {
        if self.parked.is_empty() {
            return;
        }
        for (task, (key, shape)) in self.parked.remove(&queue).unwrap_or_default() {
            self.parked_in.remove(&task);
            self.insert(task, key, shape);
        }
    }

    /// Removes `task` if queued or parked.
    pub fn remove(&mut self, task: TaskId) {
        if !self.parked_in.is_empty()
            && let Some(queue) = self.parked_in.remove(&task)
            && let Some(set) = self.parked.get_mut(&queue)
        {
            set.remove(&task);
        }
        let Some((key, index)) = self.entry.take(task) else {
            return;
        };
        self.all.remove(&(key, task));
        self.by_shape[index].remove(&(key, task));
    }

    /// Gives every task in order (parked ones excepted), which must be exactly those,
    /// the keys 0, 1, 2, ... in `order`: the bulk form of `insert` for a policy that ranks
    /// its whole queue anew (themis' rounds). The trees are built from sorted runs, O(n),
    /// instead of a removal and an insertion in each tree per task.
    pub fn rekey_in_order(&mut self, order: &[TaskId]) {
        debug_assert!(order.len() == self.all.len(), "rekey_in_order takes every queued task");
        let mut per_shape: Vec<Vec<(Key, TaskId)>> = vec![Vec::new(); self.shapes.len()];
        for (rank, &task) in order.iter().enumerate() {
            let (_, index) = self.entry.get(task).expect("only queued tasks are re-keyed");
            self.entry.set(task, rank as Key, index);
            per_shape[index].push((rank as Key, task));
        }
        self.all = order.iter().enumerate().map(|(rank, &task)| (rank as Key, task)).collect();
        self.by_shape = per_shape.into_iter().map(BTreeSet::from_iter).collect();
    }

    /// Takes every queued task out (parked ones stay), appending (task, shape index) to `out`
    /// in key order: for a policy that keeps its ranked tasks elsewhere between rankings
    /// (themis' `RankedQueue`), O(n).
    pub fn drain_queued(&mut self, out: &mut Vec<(TaskId, usize)>) {
        for &(_, task) in &self.all {
            let (_, index) = self.entry.take(task).expect("a queued task has an entry");
            out.push((task, index));
        }
        self.all.clear();
        self.by_shape.iter_mut().for_each(BTreeSet::clear);
    }

    /// The shape of index `index` (as `drain_queued` gives them).
    pub fn shape(&self, index: usize) -> Shape {
        self.shapes[index]
    }

    /// The first task in key order.
    pub fn head(&self) -> Option<(Key, TaskId)> {
        self.all.first().copied()
    }

    /// Tasks in key order, from the head.
    pub fn iter(&self) -> impl Iterator<Item = (Key, TaskId)> + '_ {
        self.all.iter().copied()
    }

    /// Tasks in key order, from the head, with their shape index (`shape`): what a policy
    /// that tests many tasks against the free GPUs reads so as to test each shape once.
    pub fn iter_shaped(&self) -> impl Iterator<Item = (TaskId, usize)> + '_ {
        self.all.iter().map(|&(_, task)| (task, self.entry.get(task).expect("a queued task has an entry").1))
    }

    /// The first task of each shape in key order (shapes in their own order), with its shape:
    /// what a policy that scores shapes differently at each decision (data locality) compares.
    pub fn shape_heads(&self) -> impl Iterator<Item = (Shape, Key, TaskId)> + '_ {
        self.shape_index
            .iter()
            .filter_map(|(&shape, &index)| self.by_shape[index].first().map(|&(key, task)| (shape, key, task)))
    }

    /// The first task in key order among those whose shape fits the free GPUs now.
    pub fn first_fitting(&self, free: &FreeGpus) -> Option<(Key, TaskId)> {
        self.by_shape
            .iter()
            .zip(&self.shapes)
            .filter_map(|(set, &shape)| set.first().filter(|_| shape.fits(free)).copied())
            .min()
    }
}

/// Each queued task's key and shape index (a u32), by task id: held only for the pages of
/// ids with a task queued ([`IdTable`]), so a queue costs the tasks it holds, not every task of
/// the run (a policy with several queues, as tiresias' levels, has one each).
#[derive(Debug, Default)]
struct Entries(IdTable<(Key, u32)>);

impl Entries {
    fn get(&self, task: TaskId) -> Option<(Key, usize)> {
        self.0.get(task.index()).map(|(key, index)| (key, index as usize))
    }

    fn set(&mut self, task: TaskId, key: Key, index: usize) {
        self.0.insert(task.index(), (key, u32::try_from(index).expect("fewer than 2^32 shapes")));
    }

    fn take(&mut self, task: TaskId) -> Option<(Key, usize)> {
        self.0.remove(task.index()).map(|(key, index)| (key, index as usize))
    }
}
