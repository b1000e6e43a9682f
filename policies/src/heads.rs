//! The first task of each shape, in key order: what "the first task in order" and "the first
//! task in order whose shape fits" read, for a queue kept per shape (`WaitQueue`, themis'
//! `RankedQueue`).

use sim::TaskId;

/// The shapes' first tasks (key, task, shape index) in key order, in a sorted `Vec`: there are
/// only tens of shapes, and a shape's first task changes on most insertions and removals of a
/// preemptive policy (srtf: nearly all), so this upkeep must be cheap. A `BTreeSet` here cost
/// a removal and an insertion with node upkeep each time (srtf at 100k jobs: 3.02 G
/// instructions against 2.96 G); here the new first task takes the old one's slot and moves to
/// its place by swaps, a shape's first task moving past few others.
#[derive(Debug)]
pub(crate) struct Heads<K>(Vec<(K, TaskId, usize)>);

impl<K: Ord + Copy> Heads<K> {
    pub(crate) fn len(&self) -> usize {
        self.0.len()
    }

    pub(crate) fn first(&self) -> Option<(K, TaskId)> {
        self.0.first().map(|&(key, task, _)| (key, task))
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = (K, TaskId, usize)> + '_ {
        self.0.iter().copied()
    }

    /// Shape `index`'s first task is now `new` instead of `old` (`None`: no task). Inline, as
    /// `WaitQueue::insert` (its options of (key, task) are passed in memory otherwise).
    #[inline]
    pub(crate) fn replace(&mut self, index: usize, old: Option<(K, TaskId)>, new: Option<(K, TaskId)>) {
        match (old, new) {
            (None, None) => {}
            (None, Some((key, task))) => {
                let (Ok(at) | Err(at)) = self.0.binary_search(&(key, task, index));
                self.0.insert(at, (key, task, index));
            }
            (Some((key, task)), new) => {
                let at = self.position((key, task, index));
                self.replace_at(at, index, new);
            }
        }
    }

    /// As `replace` with an old first task, found by a walk from the front that compares
    /// shape indexes only: for a queue read from its front (themis' ranked order, whose
    /// round and fills start the first tasks in order), where the head that changes is
    /// nearly always among the first few, and a binary search's key comparisons (exact
    /// fractions there) cost more than the walk.
    pub(crate) fn replace_near_front(&mut self, index: usize, old: (K, TaskId), new: Option<(K, TaskId)>) {
        let at = self.0.iter().position(|&(_, _, i)| i == index).expect("a shape's old first task is among the heads");
        debug_assert!(self.0[at].1 == old.1, "the heads hold one entry per shape");
        self.replace_at(at, index, new);
    }

    /// Shape `index`'s first task, at `at`, is now `new` (`None`: no task).
    fn replace_at(&mut self, at: usize, index: usize, new: Option<(K, TaskId)>) {
        match new {
            None => {
                self.0.remove(at);
            }
            Some((key, task)) => {
                self.0[at] = (key, task, index);
                settle(&mut self.0, at);
            }
        }
    }

    fn position(&self, head: (K, TaskId, usize)) -> usize {
        self.0.binary_search(&head).expect("a shape's old first task is among the heads")
    }

    pub(crate) fn clear(&mut self) {
        self.0.clear();
    }
}

/// Moves the entry at `at` of `sorted`, the others being in order, to its place: by swaps, as
/// it moves past few others (see `Heads`, and `WaitQueue`'s merge).
pub(crate) fn settle<K: Ord>(sorted: &mut [(K, TaskId, usize)], mut at: usize) {
    while at > 0 && sorted[at - 1] > sorted[at] {
        sorted.swap(at - 1, at);
        at -= 1;
    }
    while at + 1 < sorted.len() && sorted[at + 1] < sorted[at] {
        sorted.swap(at, at + 1);
        at += 1;
    }
}

impl<K> Default for Heads<K> {
    fn default() -> Self {
        Heads(Vec::new())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `replace_near_front` leaves the heads as `replace` does, whatever shape changes.
    #[test]
    fn replace_near_front_matches_replace() {
        let mut next = crate::test_numbers(0x5851_f42d_4c95_7f2d);
        for round in 0..50 {
            let shapes = 1 + (next() % 12) as usize;
            let mut by_search = Heads::default();
            let mut by_walk = Heads::default();
            let mut firsts: Vec<Option<(u64, TaskId)>> = vec![None; shapes];
            let mut id = 0;
            for _ in 0..200 {
                let shape = (next() % shapes as u64) as usize;
                let new = if next().is_multiple_of(5) {
                    None
                } else {
                    id += 1;
                    Some((next() % 20, TaskId(id)))
                };
                let old = firsts[shape];
                by_search.replace(shape, old, new);
                match old {
                    Some(old) => by_walk.replace_near_front(shape, old, new),
                    None => by_walk.replace(shape, None, new),
                }
                firsts[shape] = new;
                assert_eq!(by_walk.0, by_search.0, "round {round}");
            }
        }
    }
}
