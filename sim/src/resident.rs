//! Values by dense id (jobs, tasks) held only for the ids still resident: from the oldest id
//! a run still needs to the newest admitted. A streamed run admits jobs as simulated time
//! reaches them and lets them go, oldest first, once they have ended and been recorded, so
//! its memory follows the jobs in the system, not the jobs in the trace.

use std::collections::VecDeque;
use std::ops::{Index, IndexMut};

/// Ids `base..base + items.len()` live in `items`, oldest first: letting the oldest go pops
/// it from the front, where no value moves (a `Vec` drained from the front moved every value
/// held, each time).
#[derive(Debug, Clone)]
pub struct Resident<T> {
    base: usize,
    items: VecDeque<T>,
}

impl<T> Default for Resident<T> {
    fn default() -> Self {
        Resident { base: 0, items: VecDeque::new() }
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

    /// The oldest id still held.
    pub fn first(&self) -> usize {
        self.base
    }

    /// How many ids are held.
    pub fn held(&self) -> usize {
        self.items.len()
    }

    // An id before `base` wraps round to a position past the end: one comparison refuses
    // both (indexing is on every path of the run).
    pub fn get(&self, id: usize) -> Option<&T> {
        self.items.get(id.wrapping_sub(self.base))
    }

    pub fn get_mut(&mut self, id: usize) -> Option<&mut T> {
        self.items.get_mut(id.wrapping_sub(self.base))
    }

    /// The oldest value held.
    pub fn front(&self) -> Option<&T> {
        self.items.front()
    }

    /// Lets the oldest id go.
    pub fn let_go(&mut self) {
        assert!(self.items.pop_front().is_some(), "nothing held to let go");
        self.base += 1;
    }

    /// Lets every id before `id` go.
    pub fn let_go_before(&mut self, id: usize) {
        while self.base < id {
            self.let_go();
        }
    }

    /// The values held, with their ids, oldest first.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = (usize, &T)> + ExactSizeIterator {
        let first = self.base;
        self.items.iter().enumerate().map(move |(i, v)| (first + i, v))
    }

    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut T> {
        self.items.iter_mut()
    }
}

impl<T: PartialEq> PartialEq for Resident<T> {
    fn eq(&self, other: &Self) -> bool {
        self.base == other.base && self.items == other.items
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
        let at = id.wrapping_sub(self.base);
        if at >= self.items.len() {
            gone(id, self.first(), self.end());
        }
        &mut self.items[at]
    }
}

#[cold]
#[inline(never)]
fn gone(id: usize, first: usize, end: usize) -> ! {
    panic!("id {id} is not resident (held: {first}..{end}): it left the run, or never joined it")
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
        r.let_go_before(700);
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
    #[should_panic(expected = "id 3 is not resident (held: 100..200)")]
    fn an_id_let_go_is_refused_by_name() {
        let mut r = Resident::default();
        for i in 0..200 {
            r.push(i);
        }
        r.let_go_before(100);
        let _ = r[3];
    }
}
