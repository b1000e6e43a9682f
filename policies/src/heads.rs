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

    /// Shape `index`'s first task is now `new` instead of `old` (`None`: no task).
    pub(crate) fn replace(&mut self, index: usize, old: Option<(K, TaskId)>, new: Option<(K, TaskId)>) {
        match (old, new) {
            (None, None) => {}
            (None, Some((key, task))) => {
                let (Ok(at) | Err(at)) = self.0.binary_search(&(key, task, index));
                self.0.insert(at, (key, task, index));
            }
            (Some((key, task)), None) => {
                let at = self.position((key, task, index));
                self.0.remove(at);
            }
            (Some((key, task)), Some(new)) => {
                let at = self.position((key, task, index));
                self.0[at] = (new.0, new.1, index);
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
