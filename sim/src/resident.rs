//! Values by dense id (jobs, tasks) held only for the ids still resident: from the oldest id
//! a run still needs to the newest admitted. A streamed run admits jobs as simulated time
//! reaches them and lets them go, oldest first, once they have ended and been recorded, so
//! its memory follows the jobs in the system, not the jobs in the trace. An old id still
//! needed while the ids after it are done with is set aside, so that it alone is held.

use rustc_hash::FxHashMap;
use std::collections::VecDeque;
use std::ops::{Index, IndexMut};

/// Ids `base..base + items.len()` live in `items`, oldest first: letting the oldest go pops
/// it from the front, where no value moves (a `Vec` drained from the front moved every value
/// held, each time). Ids before `base` still held are `aside`: values set aside from the
/// front while still needed, so that one old id does not keep every id after it. They are
/// hashed, not in a B-tree: a run may hold tens of thousands, read on its hot paths (a task's
/// end, the engine's look-ahead), where a B-tree's levels were cache misses (fifo at 3M jobs
/// on 100,000 GPUs: 5.8 s with a B-tree, against 3.9 s with nothing set aside).
#[derive(Debug, Clone)]
pub struct Resident<T> {
    base: usize,
    items: VecDeque<T>,
    aside: FxHashMap<usize, T>,
}

impl<T> Default for Resident<T> {
    fn default() -> Self {
        Resident { base: 0, items: VecDeque::new(), aside: FxHashMap::default() }
    }
}

impl<T> Resident<T> {
    /// Adds the next id's value; returns its id.
    pub fn push(&mut self, value: T) -> usize {
        // Grown by half, not doubled: a ring buffer cycles through all of its room, so all of
        // it is memory in use, and the span held at the peak sets it for the whole run.
        if self.items.len() == self.items.capacity() {
            self.items.reserve_exact(self.items.len() / 2 + 16);
        }
        self.items.push_back(value);
        self.end() - 1
    }

    /// One past the newest id: how many ids were ever admitted.
    pub fn end(&self) -> usize {
        self.base + self.items.len()
    }

    /// The oldest id held in order (ids before it may be held set aside).
    pub fn first(&self) -> usize {
        self.base
    }

    /// The ids held set aside, in order.
    pub fn aside_ids(&self) -> Vec<usize> {
        let mut ids: Vec<usize> = self.aside.keys().copied().collect();
        ids.sort_unstable();
        ids
    }

    /// How many ids are held, set aside or not.
    pub fn held(&self) -> usize {
        self.items.len() + self.aside.len()
    }

    /// How many ids are held set aside.
    pub fn held_aside(&self) -> usize {
        self.aside.len()
    }

    /// Whether `id` is held set aside.
    pub fn is_aside(&self, id: usize) -> bool {
        id < self.base && self.aside.contains_key(&id)
    }

    // An id before `base` wraps round to a position past the end: one comparison finds the
    // ids held in order (indexing is on every path of the run); the rest may be set aside.
    #[inline]
    pub fn get(&self, id: usize) -> Option<&T> {
        match self.items.get(id.wrapping_sub(self.base)) {
            Some(value) => Some(value),
            None => self.aside.get(&id),
        }
    }

    #[inline]
    pub fn get_mut(&mut self, id: usize) -> Option<&mut T> {
        match self.items.get_mut(id.wrapping_sub(self.base)) {
            Some(value) => Some(value),
            None => self.aside.get_mut(&id),
        }
    }

    /// The oldest value held in order.
    pub fn front(&self) -> Option<&T> {
        self.items.front()
    }

    /// Lets `id` go: the oldest held in order, or one set aside.
    pub fn let_go(&mut self, id: usize) {
        if id == self.base && !self.items.is_empty() {
            self.items.pop_front();
            self.base += 1;
        } else if self.aside.remove(&id).is_none() {
            panic!("id {id} cannot be let go: only the oldest held in order ({}) or one set aside", self.base);
        }
    }

    /// Sets the oldest id held in order aside: still held (and read and written by id), but
    /// no longer keeping the ids after it in order.
    pub fn set_aside_front(&mut self) {
        let value = self.items.pop_front().expect("nothing held in order to set aside");
        self.aside.insert(self.base, value);
        self.base += 1;
    }

    /// The values held, with their ids, oldest first (those set aside, then the rest).
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (usize, &T)> {
        let first = self.base;
        let in_order = self.items.iter().enumerate().map(move |(i, v)| (first + i, v));
        self.aside_ids().into_iter().map(|id| (id, &self.aside[&id])).chain(in_order)
    }

    /// The values held, in no particular order.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.aside.values_mut().chain(self.items.iter_mut())
    }
}

impl<T: PartialEq> PartialEq for Resident<T> {
    fn eq(&self, other: &Self) -> bool {
        self.base == other.base && self.items == other.items && self.aside == other.aside
    }
}

impl<T> Index<usize> for Resident<T> {
    type Output = T;
    #[inline]
    fn index(&self, id: usize) -> &T {
        match self.get(id) {
            Some(value) => value,
            None => gone(id, self.first(), self.end()),
        }
    }
}

impl<T> IndexMut<usize> for Resident<T> {
    #[inline]
    fn index_mut(&mut self, id: usize) -> &mut T {
        let (first, end) = (self.first(), self.end());
        match self.get_mut(id) {
            Some(value) => value,
            None => gone(id, first, end),
        }
    }
}

#[cold]
#[inline(never)]
fn gone(id: usize, first: usize, end: usize) -> ! {
    panic!("id {id} is not resident (held: {first}..{end} and any set aside): it left the run, or never joined it")
}

#[cfg(test)]
mod tests {
    use super::Resident;

    #[test]
    fn ids_stay_put_as_the_oldest_go() {
        let mut r = Resident::default();
        for i in 0..1000 {
            assert_eq!(r.push(i * 10), i);
        }
        (0..700).for_each(|id| r.let_go(id));
        assert_eq!((r.first(), r.end(), r.held()), (700, 1000, 300));
        assert_eq!(r[700], 7000);
        assert_eq!(r[999], 9990);
        assert_eq!(r.get(699), None);
        assert_eq!(r.get(1000), None);
        assert_eq!(r.iter().next(), Some((700, &7000)));
        r.push(5);
        assert_eq!(r[1000], 5);
        // What is let go is dropped.
        assert_eq!(r.items.len(), 301);
    }

    #[test]
    fn an_id_set_aside_is_held_alone_until_let_go() {
        let mut r = Resident::default();
        for i in 0..10 {
            r.push(i * 10);
        }
        r.set_aside_front();
        r.let_go(1);
        r.set_aside_front();
        r.let_go(3);
        assert_eq!((r.first(), r.end(), r.held(), r.held_aside()), (4, 10, 8, 2));
        assert!(r.is_aside(0) && r.is_aside(2) && !r.is_aside(1) && !r.is_aside(4));
        assert_eq!((r[0], r[2], r[4], r.get(1), r.get(3)), (0, 20, 40, None, None));
        r[2] += 1;
        assert_eq!(r.iter().map(|(id, _)| id).collect::<Vec<_>>(), [0, 2, 4, 5, 6, 7, 8, 9]);
        assert_eq!(r.iter().next_back(), Some((9, &90)));
        r.let_go(2);
        r.let_go(0);
        assert_eq!((r.held(), r.held_aside(), r.get(2)), (6, 0, None));
        // Every id set aside, none left in order.
        (4..10).for_each(|_| r.set_aside_front());
        assert_eq!((r.first(), r.end(), r[9]), (10, 10, 90));
        assert_eq!(r.push(100), 10);
        assert_eq!(r.iter().map(|(id, _)| id).collect::<Vec<_>>(), [4, 5, 6, 7, 8, 9, 10]);
    }

    #[test]
    #[should_panic(expected = "id 5 cannot be let go")]
    fn only_the_oldest_in_order_or_one_set_aside_goes() {
        let mut r = Resident::default();
        (0..10).for_each(|i| _ = r.push(i));
        r.let_go(5);
    }

    #[test]
    #[should_panic(expected = "id 3 is not resident (held: 100..200")]
    fn an_id_let_go_is_refused_by_name() {
        let mut r = Resident::default();
        for i in 0..200 {
            r.push(i);
        }
        (0..100).for_each(|id| r.let_go(id));
        let _ = r[3];
    }
}
