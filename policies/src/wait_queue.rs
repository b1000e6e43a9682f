//! The waiting tasks of a policy, ordered by a policy-chosen key and indexed by shape.
//!
//! Tasks of one shape (GPU count, eligible pools, single-node flag) fit or do not fit
//! together, so "the first task in key order that fits now" is the first of the shapes' first
//! tasks whose shape fits. Each shape keeps its tasks in order on its own (`ShapeTasks`: a
//! sorted ring buffer while the shape is used as a FIFO, else a tree), and the shapes'
//! first tasks (the *heads*, one per shape with tasks, shapes in the tens on real traces) are
//! kept in key order in a short sorted list beside them (`Heads`): `head` is the first head,
//! `first_fitting` walks the heads and stops at the first that fits. That is what keeps fifo,
//! sjf and srtf incremental.
//!
//! A tree of all tasks in key order doubles the cost of every insertion and removal (a second
//! descent in a tree of the whole queue), so it is kept only by a queue made with
//! [`WaitQueue::keeping_order`], for a policy that reads a prefix of the order at each
//! decision (easy-backfill's candidates, `iter_shaped`): merging the shapes' trees at each
//! read cost easy-backfill about 40 instructions a candidate more than walking one tree (2.93 G
//! instructions against 2.56 G at 100k jobs), more than the tree's upkeep. Other queues merge
//! when read in order (`iter`, `iter_shaped`, `drain_queued`): themis reads the whole order
//! once a round and then re-keys every task, which would rebuild the tree. The heads change
//! only when a shape's first task does.
//!
//! A task its queue's quota holds back is *parked*, out of the order, until a task of that
//! queue stops (see `tracking::sync_waiting`): it is not waiting for GPUs, so it neither
//! blocks the tasks behind it nor costs a query anything.

use crate::heads::{Heads, settle};
use crate::id_table::IdTable;
use crate::placement::Shape;
use crate::shape_tasks::{self, ShapeTasks};
use sim::{FreeGpus, QueueId, TaskId};
use std::collections::{BTreeMap, BTreeSet, btree_set};

/// Smaller keys go first; ties break by task id (arrival order).
pub type Key = u64;

/// A shape's index among those a queue has seen, as its entries hold it.
type ShapeIndex = u32;

fn narrow(index: usize) -> ShapeIndex {
    ShapeIndex::try_from(index).expect("fewer than 2^32 shapes")
}

/// A policy's waiting tasks: in key order, by shape, and parked by queue.
#[derive(Debug, Default)]
pub struct WaitQueue {
    /// Shapes seen, interned: a task's entry holds the shape's index, so inserting and
    /// removing a task compares shapes once (to find the index), not on every tree descent.
    shape_index: BTreeMap<Shape, usize>,
    shapes: Vec<Shape>,
    /// Queued tasks by shape index (a shape with none left keeps its empty set).
    by_shape: Vec<ShapeTasks>,
    /// The first task of each shape that has one, with the shape's index, in key order.
    heads: Heads<Key>,
    /// Every queued task in key order, kept only by a queue made with `keeping_order`.
    in_order: BTreeSet<(Key, TaskId, ShapeIndex)>,
    keeps_order: bool,
    /// Each queued task's key and shape index, by task id.
    entry: Entries,
    /// Parked tasks by queue, and each parked task's queue.
    parked: BTreeMap<QueueId, BTreeMap<TaskId, (Key, Shape)>>,
    parked_in: BTreeMap<TaskId, QueueId>,
}

impl WaitQueue {
    /// An empty queue that also keeps every task in key order, for a policy that reads a
    /// prefix of the order at each decision (`iter_shaped`): easy-backfill.
    pub fn keeping_order() -> WaitQueue {
        WaitQueue { keeps_order: true, ..WaitQueue::default() }
    }

    /// Queues `task`; a task already queued is re-keyed. Inline: called out of line, it read
    /// the 40-byte shape back from where its caller had just stored it field by field, a
    /// store-forwarding stall on a third of its wall time.
    #[inline]
    pub fn insert(&mut self, task: TaskId, key: Key, shape: Shape) {
        // Already queued so (a policy queues its victims at once, and the next decision's
        // changes name them again): nothing to move.
        if let Some((queued_key, index)) = self.entry.get(task)
            && queued_key == key
            && self.shapes[index] == shape
        {
            return;
        }
        self.remove(task);
        let index = self.intern(shape);
        self.entry.set(task, key, index);
        let tasks = &mut self.by_shape[index];
        let old_first = tasks.first();
        tasks.insert((key, task));
        if old_first.is_none_or(|first| (key, task) < first) {
            self.heads.replace(index, old_first, Some((key, task)));
        }
        if self.keeps_order {
            self.in_order.insert((key, task, narrow(index)));
        }
    }

    fn intern(&mut self, shape: Shape) -> usize {
        if let Some(&index) = self.shape_index.get(&shape) {
            return index;
        }
        let index = self.shapes.len();
        self.shape_index.insert(shape, index);
        self.shapes.push(shape);
        self.by_shape.push(ShapeTasks::default());
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

    /// Takes `task` out if queued (not parked), with what puts it back in its place
    /// (`insert`).
    pub fn take(&mut self, task: TaskId) -> Option<(TaskId, Key, Shape)> {
        let (key, index) = self.entry.get(task)?;
        let shape = self.shapes[index];
        self.remove(task);
        Some((task, key, shape))
    }

    /// Removes `task` if queued or parked.
    #[inline]
    pub fn remove(&mut self, task: TaskId) {
        // Most calls find nothing to remove (a policy syncs every start, finish and job end,
        // and its own starts already took the task off): a look-up inline, not a call that
        // saves and restores a dozen registers (a twentieth of fifo's decisions).
        if self.parked_in.is_empty() && self.entry.get(task).is_none() {
            return;
        }
        self.take_out(task);
    }

    /// `remove` for a task that is queued or parked, or when some task is parked.
    fn take_out(&mut self, task: TaskId) {
        if !self.parked_in.is_empty()
            && let Some(queue) = self.parked_in.remove(&task)
            && let Some(set) = self.parked.get_mut(&queue)
        {
            set.remove(&task);
        }
        let Some((key, index)) = self.entry.take(task) else {
            return;
        };
        let tasks = &mut self.by_shape[index];
        if tasks.first() == Some((key, task)) {
            tasks.pop_first();
            let next = tasks.first();
            // Nearly always a start, of a task at or near the front of the order.
            self.heads.replace_near_front(index, (key, task), next);
        } else {
            tasks.remove((key, task));
        }
        if self.keeps_order {
            self.in_order.remove(&(key, task, narrow(index)));
        }
    }

    /// Gives every task in order (parked ones excepted), which must be exactly those,
    /// the keys 0, 1, 2, ... in `order`: the bulk form of `insert` for a policy that ranks
    /// its whole queue anew (themis' rounds). The trees are built from sorted runs, O(n),
    /// instead of a removal and an insertion per task.
    pub fn rekey_in_order(&mut self, order: &[TaskId]) {
        debug_assert!(order.len() == self.len(), "rekey_in_order takes every queued task");
        let mut per_shape: Vec<Vec<(Key, TaskId)>> = vec![Vec::new(); self.shapes.len()];
        let mut in_order = Vec::new();
        for (rank, &task) in order.iter().enumerate() {
            let (_, index) = self.entry.get(task).expect("only queued tasks are re-keyed");
            self.entry.set(task, rank as Key, index);
            per_shape[index].push((rank as Key, task));
            if self.keeps_order {
                in_order.push((rank as Key, task, narrow(index)));
            }
        }
        self.heads.clear();
        for (index, tasks) in per_shape.iter().enumerate() {
            self.heads.replace(index, None, tasks.first().copied());
        }
        self.by_shape = per_shape.into_iter().map(ShapeTasks::from_iter).collect();
        self.in_order = BTreeSet::from_iter(in_order);
    }

    /// Takes every queued task out (parked ones stay), appending (task, shape index) to `out`
    /// in key order: for a policy that keeps its ranked tasks elsewhere between rankings
    /// (themis' `RankedQueue`), O(n log shapes).
    pub fn drain_queued(&mut self, out: &mut Vec<(TaskId, usize)>) {
        let drained = out.len();
        out.extend(self.merged().map(|(_, task, index)| (task, index)));
        for &(task, _) in &out[drained..] {
            self.entry.take(task).expect("a queued task has an entry");
        }
        self.heads.clear();
        self.by_shape.iter_mut().for_each(ShapeTasks::clear);
        self.in_order.clear();
    }

    /// The shape of index `index` (as `drain_queued` gives them).
    pub fn shape(&self, index: usize) -> Shape {
        self.shapes[index]
    }

    /// The first task in key order.
    pub fn head(&self) -> Option<(Key, TaskId)> {
        self.heads.first()
    }

    /// Tasks in key order, from the head: the shapes' trees merged, for a policy that reads
    /// the whole order once per ranking of it (themis), which re-keys every task anyway.
    pub fn iter(&self) -> impl Iterator<Item = (Key, TaskId)> + '_ {
        self.merged().map(|(key, task, _)| (key, task))
    }

    /// Tasks in key order, from the head, with their shape index (`shape`): what a policy
    /// that tests many tasks against the free GPUs reads so as to test each shape once. A
    /// queue made with `keeping_order` walks its tree of the whole order; another merges.
    pub fn iter_shaped(&self) -> InOrder<'_> {
        if self.keeps_order { InOrder(Walk::Kept(self.in_order.iter())) } else { InOrder(Walk::Merged(self.merged())) }
    }

    /// The first task of each shape in key order (shapes in their own order), with its shape:
    /// what a policy that scores shapes differently at each decision (data locality) compares.
    pub fn shape_heads(&self) -> impl Iterator<Item = (Shape, Key, TaskId)> + '_ {
        self.shape_index
            .iter()
            .filter_map(|(&shape, &index)| self.by_shape[index].first().map(|(key, task)| (shape, key, task)))
    }

    /// The first task in key order among those whose shape fits the free GPUs now: shapes
    /// are tested in the order of their first tasks, up to the first that fits.
    pub fn first_fitting(&self, free: &FreeGpus) -> Option<(Key, TaskId)> {
        self.heads.iter().find(|&(_, _, index)| self.shapes[index].fits(free)).map(|(key, task, _)| (key, task))
    }

    /// Queued tasks (parked ones excepted).
    fn len(&self) -> usize {
        self.by_shape.iter().map(ShapeTasks::len).sum()
    }

    /// Every queued task in key order with its shape index: the shapes'
    /// trees merged, each starting from its head.
    fn merged(&self) -> Merged<'_> {
        let mut next = Vec::with_capacity(self.heads.len());
        let mut shapes = Vec::with_capacity(self.heads.len());
        for (key, task, index) in self.heads.iter() {
            let mut rest = self.by_shape[index].iter();
            rest.next(); // the head itself
            next.push((key, task, shapes.len()));
            shapes.push((index, rest));
        }
        Merged { next, shapes }
    }
}

/// The queued tasks in key order with their shape indexes (`WaitQueue::iter_shaped`): the
/// tree of the whole order a queue `keeping_order` has, or the shapes' trees merged. An enum,
/// not a chain of two optional iterators: easy-backfill reads a hundred tasks a decision
/// through it, and the chain's adapters cost it a sixth more instructions in all.
pub struct InOrder<'a>(Walk<'a>);

enum Walk<'a> {
    Kept(btree_set::Iter<'a, (Key, TaskId, ShapeIndex)>),
    Merged(Merged<'a>),
}

impl Iterator for InOrder<'_> {
    type Item = (TaskId, usize);

    fn next(&mut self) -> Option<(TaskId, usize)> {
        match &mut self.0 {
            Walk::Kept(tasks) => tasks.next().map(|&(_, task, index)| (task, index as usize)),
            Walk::Merged(merged) => merged.next().map(|(_, task, index)| (task, index)),
        }
    }
}

/// A k-way merge of the shapes' trees: each unfinished shape's next task, sorted, and where
/// each shape's tree stands. After the first shape yields its task, its next one moves to its
/// place in the sorted list, which is often where it is: one shape (one GPU) holds most tasks,
/// so it yields runs. A binary heap instead sifts at every step: 75 instructions a task more
/// than this, when easy-backfill merged at each decision.
struct Merged<'a> {
    /// (key, task, slot in `shapes`) of each unfinished shape's next task, in key order.
    next: Vec<(Key, TaskId, usize)>,
    /// Each shape's index and the tasks of its tree after the one in `next`.
    shapes: Vec<(usize, shape_tasks::Iter<'a>)>,
}

impl Iterator for Merged<'_> {
    type Item = (Key, TaskId, usize);

    fn next(&mut self) -> Option<Self::Item> {
        let &(key, task, slot) = self.next.first()?;
        let (index, rest) = &mut self.shapes[slot];
        let index = *index;
        match rest.next() {
            Some(&(after_key, after_task)) => {
                self.next[0] = (after_key, after_task, slot);
                settle(&mut self.next, 0);
            }
            None => {
                self.next.remove(0);
            }
        }
        Some((key, task, index))
    }
}

/// Each queued task's key and shape index (a u32), by task id: held only for the pages of
/// ids with a task queued ([`IdTable`]), so a queue costs the tasks it holds, not every task of
/// the run (a policy with several queues, as tiresias' levels, has one each).
#[derive(Debug, Default)]
struct Entries(IdTable<(Key, ShapeIndex)>);

impl Entries {
    fn get(&self, task: TaskId) -> Option<(Key, usize)> {
        self.0.get(task.index()).map(|(key, index)| (key, index as usize))
    }

    fn set(&mut self, task: TaskId, key: Key, index: usize) {
        self.0.insert(task.index(), (key, narrow(index)));
    }

    fn take(&mut self, task: TaskId) -> Option<(Key, usize)> {
        self.0.remove(task.index()).map(|(key, index)| (key, index as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use sim::{Cluster, ClusterSpec, PoolId, PoolMask, PoolSpec};

    /// Pool 0: 2 nodes of 4 GPUs; pool 1: 1 node of 8. All free, a shape fits by its size.
    fn free_gpus() -> FreeGpus {
        let pools = vec![PoolSpec::of_type("A", 2, 4), PoolSpec::of_type("B", 1, 8)];
        let cluster = Cluster::new(&ClusterSpec { pools }).unwrap();
        FreeGpus::all_free(&cluster)
    }

    /// A few shapes, some of which fit the free GPUs of `free_gpus` and some not.
    fn shape(n: u8) -> Shape {
        let pools = [PoolMask::EMPTY.with(PoolId(0)), PoolMask::EMPTY.with(PoolId(1))][usize::from(n % 2)];
        let gpus = [1, 4, 6, 8, 16][usize::from(n / 2 % 5)];
        let single_node = n >= 10;
        Shape {
            gpus,
            pools,
            gpus_per_node: single_node.then_some(gpus),
            milli: sim::WHOLE_GPU_MILLI,
            dataset: None,
            speeds: None,
        }
    }

    #[derive(Debug, Clone)]
    enum Op {
        Insert {
            task: u32,
            key: Key,
            shape: u8,
        },
        Remove {
            task: u32,
        },
        Park {
            task: u32,
            queue: u32,
        },
        Unpark {
            queue: u32,
        },
        /// Re-keys every queued task in the order of a hash of (`seed`, task).
        Rekey {
            seed: u64,
        },
        Drain,
        /// Reads the whole order, as themis (`iter`) and easy-backfill (`iter_shaped`) do.
        Read,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0..24u32, 0..8u64, 0..20u8).prop_map(|(task, key, shape)| Op::Insert { task, key, shape }),
            3 => (0..24u32).prop_map(|task| Op::Remove { task }),
            2 => (0..24u32, 0..3u32).prop_map(|(task, queue)| Op::Park { task, queue }),
            1 => (0..3u32).prop_map(|queue| Op::Unpark { queue }),
            1 => any::<u64>().prop_map(|seed| Op::Rekey { seed }),
            1 => Just(Op::Drain),
            1 => Just(Op::Read),
        ]
    }

    /// The contract, written plainly: queued tasks in one ordered set, parked ones by task.
    #[derive(Default)]
    struct Model {
        queued: BTreeSet<(Key, TaskId)>,
        shape: BTreeMap<TaskId, Shape>,
        parked: BTreeMap<TaskId, (QueueId, Key, Shape)>,
    }

    impl Model {
        fn key_of(&self, task: TaskId) -> Option<Key> {
            self.queued.iter().find(|&&(_, t)| t == task).map(|&(key, _)| key)
        }

        fn remove(&mut self, task: TaskId) {
            self.parked.remove(&task);
            if let Some(key) = self.key_of(task) {
                self.queued.remove(&(key, task));
            }
        }

        fn insert(&mut self, task: TaskId, key: Key, shape: Shape) {
            self.remove(task);
            self.queued.insert((key, task));
            self.shape.insert(task, shape);
        }

        fn park(&mut self, task: TaskId, queue: QueueId) {
            if let Some(key) = self.key_of(task) {
                self.queued.remove(&(key, task));
                self.parked.insert(task, (queue, key, self.shape[&task]));
            }
        }

        fn unpark(&mut self, queue: QueueId) {
            let tasks: Vec<TaskId> = self.parked.iter().filter(|(_, p)| p.0 == queue).map(|(&t, _)| t).collect();
            for task in tasks {
                let (_, key, shape) = self.parked.remove(&task).unwrap();
                self.insert(task, key, shape);
            }
        }

        /// The queued tasks in key order, with their shapes.
        fn order(&self) -> Vec<(Key, TaskId, Shape)> {
            self.queued.iter().map(|&(key, task)| (key, task, self.shape[&task])).collect()
        }

        /// The queued tasks in the order of a hash of (`seed`, task), as `rekey_in_order` takes them.
        fn rekey(&mut self, seed: u64) -> Vec<TaskId> {
            let mut order: Vec<TaskId> = self.queued.iter().map(|&(_, t)| t).collect();
            order.sort_by_key(|t| (u64::from(t.0) ^ seed).wrapping_mul(0x9e37_79b9_7f4a_7c15));
            self.queued = order.iter().enumerate().map(|(rank, &t)| (rank as Key, t)).collect();
            order
        }
    }

    /// What every read but `iter` and `iter_shaped` (`Op::Read`) gives.
    fn check(queue: &WaitQueue, model: &Model, free: &FreeGpus) -> Result<(), TestCaseError> {
        let expected = model.order();
        let merged: Vec<_> = queue.merged().map(|(key, task, index)| (key, task, queue.shape(index))).collect();
        prop_assert_eq!(&merged, &expected);
        if queue.keeps_order {
            let kept: BTreeSet<(Key, TaskId)> = queue.in_order.iter().map(|&(key, task, _)| (key, task)).collect();
            prop_assert_eq!(&kept, &model.queued);
        }
        prop_assert_eq!(queue.head(), model.queued.first().copied());
        let fitting = expected.iter().find(|(_, _, shape)| shape.fits(free)).map(|&(key, task, _)| (key, task));
        prop_assert_eq!(queue.first_fitting(free), fitting);
        let mut heads: BTreeMap<Shape, (Key, TaskId)> = BTreeMap::new();
        for &(key, task, shape) in expected.iter().rev() {
            heads.insert(shape, (key, task));
        }
        let heads: Vec<_> = heads.into_iter().map(|(shape, (key, task))| (shape, key, task)).collect();
        prop_assert_eq!(queue.shape_heads().collect::<Vec<_>>(), heads);
        Ok(())
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

        /// Whatever the operations, the queue (keeping the whole order or not) reads as the
        /// plain model does.
        #[test]
        fn agrees_with_an_ordered_set(ops in prop::collection::vec(op(), 1..80), keeping in any::<bool>()) {
            let free = free_gpus();
            let mut queue = if keeping { WaitQueue::keeping_order() } else { WaitQueue::default() };
            let mut model = Model::default();
            for op in ops {
                match op {
                    Op::Insert { task, key, shape: s } => {
                        queue.insert(TaskId(task), key, shape(s));
                        model.insert(TaskId(task), key, shape(s));
                    }
                    Op::Remove { task } => {
                        queue.remove(TaskId(task));
                        model.remove(TaskId(task));
                    }
                    Op::Park { task, queue: q } => {
                        queue.park(TaskId(task), QueueId(q));
                        model.park(TaskId(task), QueueId(q));
                    }
                    Op::Unpark { queue: q } => {
                        queue.unpark(QueueId(q));
                        model.unpark(QueueId(q));
                    }
                    Op::Rekey { seed } => queue.rekey_in_order(&model.rekey(seed)),
                    Op::Drain => {
                        let mut out = vec![(TaskId(999), 0)];
                        queue.drain_queued(&mut out);
                        let drained: Vec<_> = out[1..].iter().map(|&(t, i)| (t, queue.shape(i))).collect();
                        let expected: Vec<_> = model.queued.iter().map(|&(_, t)| (t, model.shape[&t])).collect();
                        prop_assert_eq!(drained, expected);
                        model.queued.clear();
                    }
                    Op::Read => {
                        let expected = model.order();
                        let keyed: Vec<_> = expected.iter().map(|&(key, task, _)| (key, task)).collect();
                        prop_assert_eq!(queue.iter().collect::<Vec<_>>(), keyed);
                        let shaped: Vec<_> = queue.iter_shaped().collect();
                        let shaped: Vec<_> = shaped.into_iter().map(|(task, index)| (task, queue.shape(index))).collect();
                        prop_assert_eq!(shaped, expected.iter().map(|&(_, task, shape)| (task, shape)).collect::<Vec<_>>());
                    }
                }
                check(&queue, &model, &free)?;
            }
        }
    }
}
