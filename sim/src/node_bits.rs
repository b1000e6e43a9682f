//! A set of node positions `0..len` as a bitset with a summary (one bit per non-empty word),
//! so that the next member at or after any position is found in a few word reads: the free
//! index's per-pool, per-free-count node sets (`alloc.rs`), in node order.

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct NodeBits {
    words: Vec<u64>,
    /// Bit `w` set = `words[w]` is not zero.
    summary: Vec<u64>,
    count: u32,
}

impl NodeBits {
    /// An empty set of positions below `len`.
    pub(crate) fn new(len: usize) -> NodeBits {
        let words = len.div_ceil(64);
        NodeBits { words: vec![0; words], summary: vec![0; words.div_ceil(64)], count: 0 }
    }
    pub(crate) fn len(&self) -> u32 {
        self.count
    }
    pub(crate) fn is_empty(&self) -> bool {
        self.count == 0
    }
    pub(crate) fn contains(&self, at: usize) -> bool {
        self.words.get(at / 64).is_some_and(|w| w & (1 << (at % 64)) != 0)
    }
    pub(crate) fn insert(&mut self, at: usize) {
        let (w, bit) = (at / 64, 1u64 << (at % 64));
        debug_assert!(self.words[w] & bit == 0, "position {at} inserted twice");
        self.words[w] |= bit;
        self.summary[w / 64] |= 1 << (w % 64);
        self.count += 1;
    }
    /// Removes `at` (a member); whether the set is empty now, which the free index's summary
    /// of non-empty levels wants at every removal.
    pub(crate) fn remove(&mut self, at: usize) -> bool {
        let (w, bit) = (at / 64, 1u64 << (at % 64));
        let word = &mut self.words[w];
        debug_assert!(*word & bit != 0, "position {at} removed but absent");
        *word &= !bit;
        if *word == 0 {
            self.summary[w / 64] &= !(1 << (w % 64));
        }
        self.count -= 1;
        self.count == 0
    }
    /// The smallest member at or after `from`.
    pub(crate) fn next_from(&self, from: usize) -> Option<usize> {
        let w = from / 64;
        let here = self.words.get(w)? & (u64::MAX << (from % 64));
        if here != 0 {
            return Some(w * 64 + here.trailing_zeros() as usize);
        }
        // The next non-empty word after `w`, through the summary.
        let next = w + 1;
        let mut s = next / 64;
        let mut bits = self.summary.get(s)? & (u64::MAX.checked_shl((next % 64) as u32).unwrap_or(0));
        loop {
            if bits != 0 {
                let word = s * 64 + bits.trailing_zeros() as usize;
                return Some(word * 64 + self.words[word].trailing_zeros() as usize);
            }
            s += 1;
            bits = *self.summary.get(s)?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::RngExt;
    use std::collections::BTreeSet;

    #[test]
    fn agrees_with_an_ordered_set_under_random_changes() {
        let mut rng = crate::rng::stream(7, "node-bits");
        for len in [1, 63, 64, 65, 4095, 4096, 4097, 20_000] {
            let (mut bits, mut set) = (NodeBits::new(len), BTreeSet::new());
            for _ in 0..3_000 {
                let at = rng.random_range(0..len);
                if set.insert(at) {
                    bits.insert(at);
                } else {
                    set.remove(&at);
                    assert_eq!(bits.remove(at), set.is_empty(), "remove says whether the set is empty now");
                }
                let from = rng.random_range(0..len);
                assert_eq!(bits.next_from(from), set.range(from..).next().copied(), "len {len} from {from}");
                assert_eq!(bits.len() as usize, set.len());
                assert_eq!(bits.contains(at), set.contains(&at));
            }
        }
    }

    #[test]
    fn finds_members_across_empty_words_and_summary_words() {
        let mut bits = NodeBits::new(300_000);
        bits.insert(5);
        bits.insert(262_144 + 70);
        assert_eq!(bits.next_from(0), Some(5));
        assert_eq!(bits.next_from(6), Some(262_214));
        assert_eq!(bits.next_from(262_215), None);
        assert_eq!(bits.next_from(300_000), None);
        bits.remove(5);
        assert_eq!(bits.next_from(0), Some(262_214));
    }
}
