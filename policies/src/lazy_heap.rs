//! A min-heap whose entries are deleted lazily: an entry the owner no longer holds is left in
//! the heap, *stale*, and dropped when it reaches the top.
//!
//! tiresias keeps each job's next threshold crossing (and promotion) as a time in its job
//! table, and needs the earliest of them. An ordered set of (time, job) paid a tree descent
//! with node upkeep to insert and another to remove at every change of a job's time (a job
//! started, preempted, finished), about 280 instructions each at 100k jobs; here a change is
//! a push (a short sift up) and the old entry is left behind. Whether an entry is live is the
//! owner's to say (its table holds the current time of each job), so the heap keeps no index.
//! Stale entries are bounded: once they outnumber the live ones (plus a little slack, so that
//! a small heap is not rebuilt at every change) the heap keeps only its live entries, O(n)
//! amortised over the n changes that made them stale.

use sim::quad_heap::QuadHeap;

/// Stale entries allowed beyond the live ones before the heap is rebuilt.
const SLACK: usize = 64;

/// Items in a min-heap, some of them stale as the owner's `is_live` says. The owner tells the
/// heap when an item it pushed goes stale (`retire`) or is taken (`pop_first`), so that the
/// heap knows how many live items it holds. An item the owner makes live again after retiring
/// it may be in the heap twice: the copies are equal, so which one is read first is the same.
#[derive(Debug)]
pub struct LazyHeap<T> {
    heap: QuadHeap<T>,
    /// Items pushed and neither retired nor popped.
    live: usize,
}

impl<T: Ord> Default for LazyHeap<T> {
    fn default() -> Self {
        LazyHeap { heap: QuadHeap::default(), live: 0 }
    }
}

impl<T: Ord + Copy> LazyHeap<T> {
    /// Adds `item`, live.
    pub fn push(&mut self, item: T) {
        self.heap.push(item);
        self.live += 1;
    }

    /// Notes that one item pushed earlier is no longer live (`is_live` says so from now on);
    /// keeps only the live items once the stale ones are too many.
    pub fn retire(&mut self, is_live: impl Fn(&T) -> bool) {
        self.live -= 1;
        self.bound_stale(is_live);
    }

    /// The smallest live item, dropping the stale ones above it.
    pub fn first(&mut self, is_live: impl Fn(&T) -> bool) -> Option<T> {
        while let Some(&top) = self.heap.peek() {
            if is_live(&top) {
                return Some(top);
            }
            self.heap.pop();
        }
        None
    }

    /// The smallest item, live or stale (for a hint: which item is next, without the owner's
    /// liveness test).
    pub fn peek_any(&self) -> Option<&T> {
        self.heap.peek()
    }

    /// Takes out the smallest item, which `first` just gave and the owner no longer holds
    /// (`is_live` says so); keeps only the live items once the stale ones are too many, as
    /// taking live items from above stale ones can leave those the majority.
    pub fn pop_first(&mut self, is_live: impl Fn(&T) -> bool) {
        self.heap.pop();
        self.live -= 1;
        self.bound_stale(is_live);
    }

    /// Holds the heap to at most twice its live items plus the slack.
    fn bound_stale(&mut self, is_live: impl Fn(&T) -> bool) {
        if self.heap.len() > 2 * self.live + SLACK {
            self.keep_live(is_live);
        }
    }

    /// Rebuilds the heap from its live items, one copy each.
    fn keep_live(&mut self, is_live: impl Fn(&T) -> bool) {
        let mut items = std::mem::take(&mut self.heap).into_vec();
        items.retain(|item| is_live(item));
        items.sort_unstable();
        items.dedup();
        debug_assert_eq!(items.len(), self.live, "every live item is in the heap");
        self.heap = QuadHeap::from(items);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[derive(Debug, Clone)]
    enum Op {
        /// Gives `key` the time `at` (`None`: no time).
        Set { key: u32, at: Option<u64> },
        /// Takes out the earliest (time, key) if its time is at most `now`.
        PopDue { now: u64 },
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..40u32, prop::option::of(0..30u64)).prop_map(|(key, at)| Op::Set { key, at }),
            1 => (0..30u64).prop_map(|now| Op::PopDue { now }),
        ]
    }

    /// The owner's side, as tiresias holds it: each key's current time in a table, the heap
    /// told of every change.
    struct Owner {
        times: Vec<Option<u64>>,
        heap: LazyHeap<(u64, u32)>,
    }

    impl Owner {
        fn set(&mut self, key: u32, at: Option<u64>) {
            let old = std::mem::replace(&mut self.times[key as usize], at);
            if old == at {
                return;
            }
            if let Some(at) = at {
                self.heap.push((at, key));
            }
            if old.is_some() {
                let times = &self.times;
                self.heap.retire(|&(at, key)| times[key as usize] == Some(at));
            }
        }

        fn first(&mut self) -> Option<(u64, u32)> {
            let times = &self.times;
            self.heap.first(|&(at, key)| times[key as usize] == Some(at))
        }

        /// Takes out the item `first` just gave.
        fn take_first(&mut self) {
            let (_, key) = self.heap.heap.peek().copied().expect("first gave an item");
            self.times[key as usize] = None;
            let times = &self.times;
            self.heap.pop_first(|&(at, key)| times[key as usize] == Some(at));
        }
    }

    /// Entries made stale deep in the heap (their keys moved earlier) stay there while the live
    /// ones above them are taken: taking them must keep the stale ones bounded too.
    #[test]
    fn taking_live_items_keeps_the_stale_ones_bounded() {
        let mut owner = Owner { times: vec![None; 1000], heap: LazyHeap::default() };
        for key in 0..1000 {
            owner.set(key, Some(10_000 + u64::from(key)));
        }
        for key in 0..900 {
            owner.set(key, Some(u64::from(key)));
        }
        for key in 0..900 {
            assert_eq!(owner.first(), Some((u64::from(key), key)));
            owner.take_first();
            assert!(owner.heap.heap.len() <= 2 * owner.heap.live + SLACK, "after taking key {key}");
        }
        assert_eq!(owner.first(), Some((10_900, 900)));
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(256) })]

        /// Whatever the changes, the earliest live item is the first of an ordered set kept
        /// exactly, and the heap never holds more than twice the live items plus the slack.
        #[test]
        fn agrees_with_an_ordered_set(ops in prop::collection::vec(op(), 1..400)) {
            let mut owner = Owner { times: vec![None; 40], heap: LazyHeap::default() };
            let mut model: BTreeSet<(u64, u32)> = BTreeSet::new();
            for op in ops {
                match op {
                    Op::Set { key, at } => {
                        if let Some(old) = owner.times[key as usize] {
                            model.remove(&(old, key));
                        }
                        if let Some(at) = at {
                            model.insert((at, key));
                        }
                        owner.set(key, at);
                    }
                    Op::PopDue { now } => {
                        let due = owner.first().filter(|&(at, _)| at <= now);
                        prop_assert_eq!(due, model.first().copied().filter(|&(at, _)| at <= now));
                        if let Some((at, key)) = due {
                            owner.take_first();
                            model.remove(&(at, key));
                        }
                    }
                }
                prop_assert_eq!(owner.first(), model.first().copied());
                prop_assert_eq!(owner.heap.live, model.len());
                prop_assert!(owner.heap.heap.len() <= 2 * model.len() + SLACK);
            }
        }

        /// A key set back and forth piles up copies of its two times until a rebuild keeps
        /// one copy of the live one: it is read once, and nothing after it.
        #[test]
        fn a_key_set_back_and_forth_is_read_once(flips in 1..200usize) {
            let mut owner = Owner { times: vec![None; 40], heap: LazyHeap::default() };
            for i in 0..flips {
                owner.set(0, Some(if i % 2 == 0 { 5 } else { 7 }));
            }
            let at = if (flips - 1) % 2 == 0 { 5 } else { 7 };
            prop_assert_eq!(owner.first(), Some((at, 0)));
            owner.take_first();
            prop_assert_eq!(owner.first(), None);
            prop_assert_eq!(owner.heap.live, 0);
        }
    }
}
