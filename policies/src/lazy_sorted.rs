//! A list read in sorted order but sorted only as far as it is read.
//!
//! A policy that ranks n items at an instant and then reads only the first few of them (a
//! lease round that stops at its first task that neither fits nor can preempt, a victim walk
//! that stops once the gang fits) pays O(n log n) to sort them all. Here the items are
//! heapified, O(n), and the i-th smallest is taken off the heap the first time it is read,
//! O(log n) each: reading k of n items costs O(n + k log n), and the order read is exactly
//! the sorted order (`T`'s `Ord` must be total; equal items are indistinguishable).

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Items in ascending order, sorted lazily: [`LazySorted::get`] sorts up to the index read.
#[derive(Debug)]
pub struct LazySorted<T: Ord> {
    /// The smallest items, in order: what has been read so far.
    sorted: Vec<T>,
    /// The rest, as a min-heap.
    heap: BinaryHeap<Reverse<T>>,
}

impl<T: Ord> Default for LazySorted<T> {
    fn default() -> Self {
        LazySorted { sorted: Vec::new(), heap: BinaryHeap::new() }
    }
}

impl<T: Ord + Copy> LazySorted<T> {
    /// Replaces the contents by `items` in O(n), keeping the buffers (no allocation once they
    /// are large enough).
    pub fn refill(&mut self, items: impl IntoIterator<Item = T>) {
        self.sorted.clear();
        let mut buffer = std::mem::take(&mut self.heap).into_vec();
        buffer.clear();
        buffer.extend(items.into_iter().map(Reverse));
        self.heap = BinaryHeap::from(buffer);
    }

    /// The `index`-th smallest item (from 0), if there are that many.
    pub fn get(&mut self, index: usize) -> Option<T> {
        while self.sorted.len() <= index {
            let Reverse(next) = self.heap.pop()?;
            self.sorted.push(next);
        }
        Some(self.sorted[index])
    }

    /// Every item, read or not, in no particular order.
    pub fn iter_unordered(&self) -> impl Iterator<Item = T> + '_ {
        self.sorted.iter().copied().chain(self.heap.iter().map(|&Reverse(item)| item))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_in_sorted_order_as_far_as_asked() {
        let mut list = LazySorted::default();
        list.refill([5, 1, 4, 1, 3]);
        assert_eq!(list.iter_unordered().count(), 5);
        assert_eq!(list.get(1), Some(1));
        assert_eq!(list.get(0), Some(1));
        assert_eq!(list.get(3), Some(4));
        assert_eq!(list.get(2), Some(3));
        assert_eq!(list.get(4), Some(5));
        assert_eq!(list.get(5), None);
        assert_eq!(list.iter_unordered().count(), 5);
    }

    #[test]
    fn refill_forgets_the_old_items() {
        let mut list = LazySorted::default();
        list.refill([9, 8, 7]);
        assert_eq!(list.get(0), Some(7));
        list.refill([2]);
        assert_eq!(list.iter_unordered().count(), 1);
        assert_eq!(list.get(0), Some(2));
        assert_eq!(list.get(1), None);
        let mut all: Vec<i32> = list.iter_unordered().collect();
        all.sort();
        assert_eq!(all, [2]);
    }

    #[test]
    fn matches_a_full_sort_on_random_input() {
        let mut next = crate::test_numbers(0x2545_f491_4f6c_dd1d);
        let mut list = LazySorted::default();
        for round in 0..50 {
            let n = (next() % 300) as usize;
            let items: Vec<(u64, u32)> = (0..n).map(|i| (next() % 40, i as u32)).collect();
            let mut expected = items.clone();
            expected.sort();
            list.refill(items.iter().copied());
            // Read a prefix of a random length, then everything, in a random first index.
            let first = (next() as usize) % (n + 1);
            let _ = list.get(first);
            let read: Vec<(u64, u32)> = (0..n).map(|i| list.get(i).expect("n items")).collect();
            assert_eq!(read, expected, "round {round}");
            assert_eq!(list.get(n), None);
        }
    }
}
