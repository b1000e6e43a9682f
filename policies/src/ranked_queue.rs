//! Waiting tasks in the order of one ranking (a key each, given at one instant), per shape,
//! sorted only as far as they are read.
//!
//! themis ranks every waiting task at each lease round, and every rank changes from one round
//! to the next (a waiting task's rho grows with its wait, each at its own rate). A round then
//! reads its order only until its first task that neither fits nor can preempt, and between
//! rounds the free GPUs go to the first tasks in that order whose shape fits. Sorting the
//! whole queue and rebuilding its ordered trees at every round cost O(n log n); here each
//! shape's tasks are heapified, O(n) in all, and sorted lazily ([`LazySorted`]) as the round
//! and the fills read them. A task that leaves (started, ended) is dropped when it reaches
//! the front of its shape's order.
//!
//! The order read is exactly that of sorting every task by `(key, task)`: the first task
//! overall is the smallest of the shapes' first tasks, kept in order ([`Heads`]) as in
//! `WaitQueue`, so that the first task whose shape fits (read at every decision between rounds)
//! is a walk of those. Shapes are `WaitQueue`'s indices (`WaitQueue::shape`), so the two agree
//! on what fits.

use crate::heads::Heads;
use crate::id_table::IdTable;
use crate::lazy_sorted::LazySorted;
use sim::TaskId;

/// Waiting tasks ordered by `(K, TaskId)`, smallest first, per shape index.
#[derive(Debug)]
pub struct RankedQueue<K: Ord + Copy> {
    by_shape: Vec<LazySorted<(K, TaskId)>>,
    /// Per shape: how many of its first tasks are known to have left.
    gone: Vec<usize>,
    /// By task: its shape index while it is queued here (paged: it holds the tasks queued,
    /// not every task of the run).
    shape_of: IdTable<u32>,
    len: usize,
    /// Each shape's first task still here (the one at `gone`), in order: a task that leaves
    /// as its shape's first is replaced at once, so these are always tasks still here.
    heads: Heads<K>,
    /// Per shape, the entries of a `rebuild` (kept to allocate nothing in steady state).
    buckets: Vec<Vec<(K, TaskId)>>,
}

impl<K: Ord + Copy> Default for RankedQueue<K> {
    fn default() -> Self {
        RankedQueue {
            by_shape: Vec::new(),
            gone: Vec::new(),
            shape_of: IdTable::default(),
            len: 0,
            heads: Heads::default(),
            buckets: Vec::new(),
        }
    }
}

impl<K: Ord + Copy> RankedQueue<K> {
    /// Replaces the contents by `entries` (shape index, key, task), O(n).
    pub fn rebuild(&mut self, entries: impl IntoIterator<Item = (usize, K, TaskId)>) {
        for bucket in &mut self.buckets {
            bucket.clear();
        }
        self.len = 0;
        for (shape, key, task) in entries {
            if self.buckets.len() <= shape {
                self.buckets.resize_with(shape + 1, Vec::new);
            }
            self.buckets[shape].push((key, task));
            let before = self.shape_of.insert(task.index(), u32::try_from(shape).expect("fewer than 2^32 shapes"));
            debug_assert!(before.is_none(), "{task} is queued once");
            self.len += 1;
        }
        self.by_shape.resize_with(self.buckets.len(), LazySorted::default);
        self.gone.clear();
        self.gone.resize(self.buckets.len(), 0);
        for (list, bucket) in self.by_shape.iter_mut().zip(&mut self.buckets) {
            list.refill(bucket.drain(..));
        }
        self.heads.clear();
        for shape in 0..self.by_shape.len() {
            let first = self.by_shape[shape].get(0);
            self.heads.replace(shape, None, first);
        }
    }

    /// Takes every task out, giving each (task, shape index, key) to `each` in no particular
    /// order.
    pub fn drain(&mut self, mut each: impl FnMut(TaskId, usize, K)) {
        for (shape, list) in self.by_shape.iter().enumerate() {
            for (key, task) in list.iter_unordered() {
                if self.shape_of.get(task.index()) == Some(shape as u32) {
                    self.shape_of.remove(task.index());
                    each(task, shape, key);
                }
            }
        }
        self.len = 0;
        self.rebuild(std::iter::empty());
    }

    /// Takes `task` out if it is here (a task of its shape's list further on is dropped when
    /// it comes to the front).
    pub fn remove(&mut self, task: TaskId) {
        let Some(shape) = self.shape_of.remove(task.index()) else { return };
        self.len -= 1;
        let shape = shape as usize;
        if let Some((key, first)) = self.by_shape[shape].get(self.gone[shape])
            && first == task
        {
            let next = self.head(shape);
            self.heads.replace_near_front(shape, (key, task), next);
        }
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The first task in order.
    pub fn first(&self) -> Option<(K, TaskId)> {
        self.heads.first()
    }

    /// The first task in order among the shapes `fits` accepts: shapes are tested in the
    /// order of their first tasks, up to the first that fits.
    pub fn first_fitting(&self, fits: impl Fn(usize) -> bool) -> Option<(K, TaskId)> {
        self.heads.iter().find(|&(_, _, shape)| fits(shape)).map(|(key, task, _)| (key, task))
    }

    /// The first task of `shape` still here, passing over those that left.
    fn head(&mut self, shape: usize) -> Option<(K, TaskId)> {
        loop {
            let (key, task) = self.by_shape[shape].get(self.gone[shape])?;
            if self.shape_of.get(task.index()) == Some(shape as u32) {
                return Some((key, task));
            }
            self.gone[shape] += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(id: u32) -> TaskId {
        TaskId(id)
    }

    #[test]
    fn first_is_the_smallest_key_then_task_over_all_shapes() {
        let mut queue = RankedQueue::default();
        queue.rebuild([(0, 5u64, t(1)), (1, 3, t(7)), (0, 3, t(9)), (2, 8, t(2))]);
        assert_eq!(queue.len, 4);
        assert_eq!(queue.first(), Some((3, t(7))));
        assert_eq!(queue.first_fitting(|shape| shape != 1), Some((3, t(9))));
        assert_eq!(queue.first_fitting(|shape| shape == 2), Some((8, t(2))));
        assert_eq!(queue.first_fitting(|_| false), None);
        queue.remove(t(7));
        queue.remove(t(7));
        assert_eq!(queue.len, 3);
        assert_eq!(queue.shape_of.get(7), None);
        assert_eq!(queue.first(), Some((3, t(9))));
        queue.remove(t(9));
        assert_eq!(queue.first(), Some((5, t(1))));
    }

    #[test]
    fn drain_gives_the_tasks_still_here_with_their_shapes_and_keys() {
        let mut queue = RankedQueue::default();
        queue.rebuild([(0, 1u64, t(4)), (1, 2, t(5)), (1, 0, t(6))]);
        assert_eq!(queue.first(), Some((0, t(6))));
        queue.remove(t(6));
        let mut out = Vec::new();
        queue.drain(|task, shape, key| out.push((task, shape, key)));
        out.sort();
        assert_eq!(out, [(t(4), 0, 1), (t(5), 1, 2)]);
        assert!(queue.is_empty());
        assert!(queue.shape_of.is_empty(), "a drained queue notes no task's shape");
        assert_eq!(queue.first(), None);
        // A drained task can come back in the next ranking.
        queue.rebuild([(1, 9u64, t(4))]);
        assert_eq!(queue.first(), Some((9, t(4))));
    }

    #[test]
    fn matches_the_naive_order_on_random_input() {
        let mut next = crate::test_numbers(0x9e37_79b9_7f4a_7c15);
        let mut queue = RankedQueue::default();
        for round in 0..40 {
            let n = (next() % 200) as u32;
            let entries: Vec<(usize, u64, TaskId)> =
                (0..n).map(|i| ((next() % 5) as usize, next() % 30, t(i))).collect();
            queue.rebuild(entries.iter().copied());
            // The naive queue: every entry, sorted by (key, task), fitting shapes filtered.
            let mut naive: Vec<(u64, TaskId, usize)> = entries.iter().map(|&(s, k, task)| (k, task, s)).collect();
            naive.sort();
            let fits_mask = next() % 32;
            let fits = |shape: usize| fits_mask & (1 << shape) != 0;
            while !naive.is_empty() {
                // Remove a random task now and then, as a start elsewhere would.
                if next().is_multiple_of(4) {
                    let (_, task, _) = naive.remove((next() as usize) % naive.len());
                    queue.remove(task);
                    continue;
                }
                let expected = naive.iter().find(|e| fits(e.2)).map(|&(k, task, _)| (k, task));
                assert_eq!(queue.first_fitting(fits), expected, "round {round}");
                assert_eq!(queue.first(), naive.first().map(|&(k, task, _)| (k, task)), "round {round}");
                let (_, task, _) = naive.remove(0);
                queue.remove(task);
                assert_eq!(queue.len, naive.len());
            }
            assert_eq!(queue.first(), None);
        }
    }
}
