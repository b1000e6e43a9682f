//! A set of dense ids (task indexes) as a bitset with summaries: insert and remove in a few
//! word operations, and the members largest first, each found in a few more.
//!
//! tiresias keeps its running tasks per pool and level, and reads a level's tasks latest (the
//! largest id) first when it looks for victims. An ordered tree set did this in O(log n) node
//! searches an insert and a removal, each a cache miss or more at a million jobs; here both
//! touch one word per level of summary (two or three levels up to 10M ids), and the walk
//! skips empty stretches 64 words at a time. A set costs one bit per id up to its largest:
//! 125 KB at a million tasks.

/// `levels[0]` holds a bit per id; `levels[k + 1]` a bit per word of `levels[k]` that is not
/// zero. The top level is one word (or none while the set has never held an id).
#[derive(Debug, Default, Clone)]
pub struct IdSet {
    levels: Vec<Vec<u64>>,
}

impl IdSet {
    /// Adds `id`; false if it was a member already.
    pub fn insert(&mut self, id: usize) -> bool {
        self.grow_to(id);
        let mut at = id;
        for (depth, level) in self.levels.iter_mut().enumerate() {
            let (word, bit) = (at / 64, 1u64 << (at % 64));
            let before = level[word];
            level[word] = before | bit;
            if depth == 0 && before & bit != 0 {
                return false;
            }
            if before != 0 {
                break; // the levels above already note this word
            }
            at = word;
        }
        true
    }

    /// Takes `id` out; false if it was not a member.
    pub fn remove(&mut self, id: usize) -> bool {
        if !self.contains(id) {
            return false;
        }
        let mut at = id;
        for level in &mut self.levels {
            let (word, bit) = (at / 64, 1u64 << (at % 64));
            level[word] &= !bit;
            if level[word] != 0 {
                break; // the word still has members: the levels above stay as they are
            }
            at = word;
        }
        true
    }

    pub fn contains(&self, id: usize) -> bool {
        let word = self.levels.first().and_then(|ids| ids.get(id / 64)).copied().unwrap_or(0);
        word & (1u64 << (id % 64)) != 0
    }

    /// The members, largest first.
    pub fn descending(&self) -> Descending<'_> {
        Descending { set: self, below: usize::MAX }
    }

    /// The largest member below `bound`, if any.
    pub fn last_below(&self, bound: usize) -> Option<usize> {
        // Climb until a word holds a bit below the bound (a bound at one level is, one level
        // up, the index of the word it fell in), then descend along the highest bits.
        let (mut depth, mut bound) = (0, bound);
        let mut found = loop {
            let level = self.levels.get(depth)?;
            let last = bound.min(level.len() * 64).checked_sub(1)?;
            let (word, bit) = (last / 64, last % 64);
            let below = level[word] & (u64::MAX >> (63 - bit));
            if below != 0 {
                break word * 64 + highest_bit(below);
            }
            (depth, bound) = (depth + 1, word);
        };
        for level in self.levels[..depth].iter().rev() {
            found = found * 64 + highest_bit(level[found]);
        }
        Some(found)
    }

    /// Makes room for `id` at every level, adding levels until the top is one word.
    fn grow_to(&mut self, id: usize) {
        if self.levels.first().is_some_and(|ids| id / 64 < ids.len()) {
            return;
        }
        let mut words = id / 64 + 1;
        for depth in 0.. {
            match self.levels.get_mut(depth) {
                Some(level) if level.len() < words => level.resize(words, 0),
                Some(_) => {}
                // A new top: a bit for each word of the old top that is not zero.
                None => {
                    let below = depth.checked_sub(1).map(|d| &self.levels[d]);
                    let mut level = vec![0u64; words];
                    for (w, _) in below.into_iter().flatten().enumerate().filter(|&(_, &bits)| bits != 0) {
                        level[w / 64] |= 1u64 << (w % 64);
                    }
                    self.levels.push(level);
                }
            }
            if words == 1 {
                break;
            }
            words = words.div_ceil(64);
        }
    }
}

fn highest_bit(word: u64) -> usize {
    63 - word.leading_zeros() as usize
}

/// An [`IdSet`]'s members, largest first.
#[derive(Debug, Clone)]
pub struct Descending<'s> {
    set: &'s IdSet,
    /// Members below this are still to come.
    below: usize,
}

impl Iterator for Descending<'_> {
    type Item = usize;

    fn next(&mut self) -> Option<usize> {
        let id = self.set.last_below(self.below)?;
        self.below = id;
        Some(id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeSet;

    #[test]
    fn members_come_largest_first_across_words_and_levels() {
        let mut set = IdSet::default();
        for id in [5, 0, 63, 64, 4095, 4096, 262_144, 70_000] {
            assert!(set.insert(id));
        }
        assert!(!set.insert(64));
        assert_eq!(set.descending().collect::<Vec<_>>(), [262_144, 70_000, 4096, 4095, 64, 63, 5, 0]);
        assert!(set.remove(4096) && !set.remove(4096) && !set.remove(1_000_000));
        assert_eq!(set.last_below(70_000), Some(4095));
        assert_eq!(set.last_below(0), None);
        assert_eq!(set.last_below(usize::MAX), Some(262_144));
    }

    #[test]
    fn an_emptied_set_has_no_members() {
        let mut set = IdSet::default();
        assert_eq!(set.descending().next(), None);
        set.insert(100_000);
        set.remove(100_000);
        assert_eq!(set.descending().next(), None);
        assert!(!set.contains(100_000));
    }

    proptest! {
        /// Any sequence of inserts and removals leaves the members, and their order, of an
        /// ordered set given the same sequence; growing after inserts keeps the summaries.
        #[test]
        fn matches_an_ordered_set(ops in prop::collection::vec((any::<bool>(), 0usize..300_000), 0..400)) {
            let (mut set, mut reference) = (IdSet::default(), BTreeSet::new());
            for (insert, id) in ops {
                let id = if id % 3 == 0 { id / 1000 } else { id }; // dense and sparse ids both
                if insert {
                    prop_assert_eq!(set.insert(id), reference.insert(id));
                } else {
                    prop_assert_eq!(set.remove(id), reference.remove(&id));
                }
                prop_assert_eq!(set.contains(id), reference.contains(&id));
            }
            prop_assert!(set.descending().eq(reference.iter().rev().copied()));
            for bound in [0, 1, 64, 4097, 150_000, usize::MAX] {
                prop_assert_eq!(set.last_below(bound), reference.range(..bound).next_back().copied());
            }
        }
    }
}
