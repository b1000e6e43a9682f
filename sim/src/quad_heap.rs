//! A min-heap of four children a node, for the heaps a run pops at every event: the engine's
//! events, and the times a policy keeps per job (tiresias' threshold crossings).
//!
//! A run at scale holds an entry for every running task or job (tens of thousands to over a
//! million at 100,000 GPUs), and each pop walks from the root to a leaf. Four children a node
//! halve the levels of a binary heap, and the four compared at a level sit side by side, where
//! a binary heap took a cache miss per level. The heap's lower levels are still out of the
//! core's caches: a pop asks for the level below the one it compares next, so that each level
//! loads while the one above is compared (60 % of the engine's pop time was the wait for the
//! first child's key, before).

use crate::prefetch::prefetch_span;

/// Items in a min-heap; equal items pop in either order (the engine's keys are unique).
#[derive(Debug, Clone)]
pub struct QuadHeap<T> {
    items: Vec<T>,
}

impl<T> Default for QuadHeap<T> {
    fn default() -> Self {
        QuadHeap { items: Vec::new() }
    }
}

impl<T: Ord> From<Vec<T>> for QuadHeap<T> {
    /// The heap of `items`, sorted (a sorted list is a heap).
    fn from(mut items: Vec<T>) -> QuadHeap<T> {
        items.sort_unstable();
        QuadHeap { items }
    }
}

impl<T: Ord + Copy> QuadHeap<T> {
    pub fn push(&mut self, item: T) {
        self.items.push(item);
        self.sift_up(self.items.len() - 1);
    }

    /// The smallest item.
    pub fn peek(&self) -> Option<&T> {
        self.items.first()
    }

    /// The item that pops after the first: the smallest of the root's children.
    pub fn second(&self) -> Option<&T> {
        self.items.get(1..self.items.len().min(5))?.iter().min()
    }

    pub fn pop(&mut self) -> Option<T> {
        let last = self.items.pop()?;
        if self.items.is_empty() {
            return Some(last);
        }
        let top = std::mem::replace(&mut self.items[0], last);
        // The last item most often belongs near the bottom: move the smallest children up
        // to a leaf, then the item up from there (fewer comparisons than stopping on the way).
        let end = self.items.len();
        let mut hole = 0;
        while let Some(child) = self.load_grandchildren(hole).smallest_child(hole, end) {
            self.items[hole] = self.items[child];
            hole = child;
        }
        self.items[hole] = last;
        self.sift_up(hole);
        Some(top)
    }

    /// Keeps only the items `keep` accepts.
    pub fn retain(&mut self, keep: impl FnMut(&T) -> bool) {
        self.items.retain(keep);
        // A sorted list is a heap; the order it pops in is the items' either way.
        self.items.sort_unstable();
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// The items, in no order.
    pub fn into_vec(self) -> Vec<T> {
        self.items
    }

    /// Asks for `at`'s grandchildren, among whom the pop compares next.
    fn load_grandchildren(&self, at: usize) -> &QuadHeap<T> {
        // The children of `at` are 4at+1 to 4at+4; theirs are the 16 items after 16at+4.
        let first = (16 * at + 5).min(self.items.len());
        let grandchildren = &self.items[first..(first + 16).min(self.items.len())];
        prefetch_span(grandchildren.as_ptr().cast::<u8>(), size_of_val(grandchildren));
        self
    }

    /// The child of `at` with the smallest item, among the items before `end`.
    fn smallest_child(&self, at: usize, end: usize) -> Option<usize> {
        let first = 4 * at + 1;
        if first + 4 <= end {
            // Most nodes have four children: two pairs, then their winners.
            let item = |i: usize| &self.items[i];
            let left = if item(first) < item(first + 1) { first } else { first + 1 };
            let right = if item(first + 2) < item(first + 3) { first + 2 } else { first + 3 };
            return Some(if item(left) < item(right) { left } else { right });
        }
        (first..end).min_by_key(|&i| self.items[i])
    }

    fn sift_up(&mut self, mut at: usize) {
        let item = self.items[at];
        while at > 0 {
            let parent = (at - 1) / 4;
            if self.items[parent] <= item {
                break;
            }
            self.items[at] = self.items[parent];
            at = parent;
        }
        self.items[at] = item;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_heap_pops_and_peeks_two_deep_in_key_order_through_pushes_pops_and_retains() {
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = move |below: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % below
        };
        let (mut heap, mut reference) = (QuadHeap::<u128>::default(), std::collections::BTreeSet::new());
        for round in 0..20_000 {
            if next(3) > 0 {
                let key = u128::from(next(1_000)) << 64 | u128::from(round as u64);
                heap.push(key);
                reference.insert(key);
            } else {
                assert_eq!(heap.pop(), reference.pop_first(), "round {round}");
            }
            if round % 5_000 == 4_999 {
                heap.retain(|k| k % 3 != 0);
                reference.retain(|k| k % 3 != 0);
            }
            assert_eq!(heap.peek().copied(), reference.first().copied());
            assert_eq!(heap.second().copied(), reference.iter().nth(1).copied(), "round {round}");
        }
        while let Some(key) = reference.pop_first() {
            assert_eq!(heap.pop(), Some(key));
        }
        assert_eq!(heap.len(), 0);
    }
}
