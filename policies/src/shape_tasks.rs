//! One shape's waiting tasks in (key, task id) order (`WaitQueue`): a sorted ring buffer while
//! the shape is used as a FIFO, a tree once it is not.
//!
//! Under fifo nearly every task arrives after the others of its shape (keys are equal, task ids
//! grow) and leaves as its shape's first: a `VecDeque` does both in a few instructions, where a
//! `BTreeSet` descends the tree to insert and rebalances to pop (about 500 instructions a task
//! in all at 20k jobs). A task that lands in the middle of a long run, or leaves from its
//! middle (a retry keeping its old key, sjf's keys, a backfilled task, a cancel), would move
//! half the run; from then on the shape is a tree, until it empties.

use sim::TaskId;
use std::collections::{BTreeSet, VecDeque, btree_set, vec_deque};

/// A shape's entry: its task's key, then the task (ties break by task id).
type Entry = (u64, TaskId);

/// The longest run in which a task is still inserted or removed in the middle by moving the
/// others: a few hundred bytes moved, less than a tree's upkeep.
const SHORT_RUN: usize = 32;

/// One shape's tasks in order.
#[derive(Debug)]
pub(crate) enum ShapeTasks {
    /// Sorted; tasks come at either end, or anywhere while there are at most `SHORT_RUN`.
    Run(VecDeque<Entry>),
    Tree(BTreeSet<Entry>),
}

impl Default for ShapeTasks {
    fn default() -> Self {
        ShapeTasks::Run(VecDeque::new())
    }
}

impl FromIterator<Entry> for ShapeTasks {
    /// From entries in order (`rekey_in_order`): a run, as the keys are new and sorted.
    fn from_iter<I: IntoIterator<Item = Entry>>(entries: I) -> Self {
        let run: VecDeque<Entry> = entries.into_iter().collect();
        debug_assert!(run.iter().zip(run.iter().skip(1)).all(|(a, b)| a < b), "entries in order");
        ShapeTasks::Run(run)
    }
}

impl ShapeTasks {
    pub(crate) fn first(&self) -> Option<Entry> {
        match self {
            ShapeTasks::Run(run) => run.front().copied(),
            ShapeTasks::Tree(tree) => tree.first().copied(),
        }
    }

    pub(crate) fn len(&self) -> usize {
        match self {
            ShapeTasks::Run(run) => run.len(),
            ShapeTasks::Tree(tree) => tree.len(),
        }
    }

    /// Adds `entry`, not already held.
    pub(crate) fn insert(&mut self, entry: Entry) {
        match self {
            ShapeTasks::Run(run) => {
                if run.back().is_none_or(|&last| last < entry) {
                    run.push_back(entry);
                } else if run.front().is_some_and(|&first| entry < first) {
                    run.push_front(entry);
                } else if run.len() < SHORT_RUN {
                    let (Ok(at) | Err(at)) = run.binary_search(&entry);
                    run.insert(at, entry);
                } else {
                    self.make_tree().insert(entry);
                }
            }
            ShapeTasks::Tree(tree) => {
                tree.insert(entry);
            }
        }
    }

    /// Takes out the first entry.
    pub(crate) fn pop_first(&mut self) -> Option<Entry> {
        let first = match self {
            ShapeTasks::Run(run) => run.pop_front(),
            ShapeTasks::Tree(tree) => tree.pop_first(),
        };
        self.back_to_run_if_empty();
        first
    }

    /// Takes out `entry` if held.
    pub(crate) fn remove(&mut self, entry: Entry) {
        match self {
            ShapeTasks::Run(run) => {
                let Ok(at) = run.binary_search(&entry) else { return };
                if at == 0 {
                    run.pop_front();
                } else if at + 1 == run.len() {
                    run.pop_back();
                } else if run.len() <= SHORT_RUN {
                    run.remove(at);
                } else {
                    self.make_tree().remove(&entry);
                }
            }
            ShapeTasks::Tree(tree) => {
                tree.remove(&entry);
                self.back_to_run_if_empty();
            }
        }
    }

    pub(crate) fn clear(&mut self) {
        *self = ShapeTasks::default();
    }

    pub(crate) fn iter(&self) -> Iter<'_> {
        match self {
            ShapeTasks::Run(run) => Iter::Run(run.iter()),
            ShapeTasks::Tree(tree) => Iter::Tree(tree.iter()),
        }
    }

    /// The entries as a tree, for good (until the shape empties).
    fn make_tree(&mut self) -> &mut BTreeSet<Entry> {
        if let ShapeTasks::Run(run) = self {
            *self = ShapeTasks::Tree(run.drain(..).collect());
        }
        match self {
            ShapeTasks::Tree(tree) => tree,
            ShapeTasks::Run(_) => unreachable!("made a tree above"),
        }
    }

    /// An empty tree becomes a run again: the shape's next tasks may well come in order.
    fn back_to_run_if_empty(&mut self) {
        if let ShapeTasks::Tree(tree) = self
            && tree.is_empty()
        {
            *self = ShapeTasks::default();
        }
    }
}

/// A shape's entries in order (`ShapeTasks::iter`).
pub(crate) enum Iter<'a> {
    Run(vec_deque::Iter<'a, Entry>),
    Tree(btree_set::Iter<'a, Entry>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = &'a Entry;

    fn next(&mut self) -> Option<&'a Entry> {
        match self {
            Iter::Run(run) => run.next(),
            Iter::Tree(tree) => tree.next(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[derive(Debug, Clone)]
    enum Op {
        Insert(u64, u32),
        Remove(usize),
        PopFirst,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            // Mostly in order (a growing id with an equal key), sometimes anywhere.
            3 => (0..2u64, 0..200u32).prop_map(|(key, task)| Op::Insert(key, task)),
            2 => any::<prop::sample::Index>().prop_map(|i| Op::Remove(i.index(1 << 16))),
            2 => Just(Op::PopFirst),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]
        /// Against a `BTreeSet`: the same entries in the same order after every step, through
        /// runs longer than `SHORT_RUN`, middle insertions and removals, and empty trees.
        #[test]
        fn matches_a_tree(ops in prop::collection::vec(op(), 1..400), fifo_from in 0..400u32) {
            let mut tasks = ShapeTasks::default();
            let mut model = BTreeSet::new();
            for (step, op) in ops.into_iter().enumerate() {
                match op {
                    // From `fifo_from` on, entries come in order (a long run grows).
                    Op::Insert(key, task) => {
                        let entry = if step as u32 >= fifo_from { (1, TaskId(1000 + step as u32)) } else { (key, TaskId(task)) };
                        if model.insert(entry) {
                            tasks.insert(entry);
                        }
                    }
                    Op::Remove(i) => {
                        if let Some(&entry) = model.iter().nth(i % model.len().max(1)) {
                            model.remove(&entry);
                            tasks.remove(entry);
                        }
                        tasks.remove((9, TaskId(9999))); // never held: nothing happens
                    }
                    Op::PopFirst => prop_assert_eq!(tasks.pop_first(), model.pop_first()),
                }
                prop_assert_eq!(tasks.len(), model.len());
                prop_assert_eq!(tasks.first(), model.first().copied());
                prop_assert!(tasks.iter().eq(model.iter()));
            }
        }
    }
}
