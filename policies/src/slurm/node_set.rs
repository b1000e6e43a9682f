//! A set of nodes as bits, 64 nodes a word: backfill intersects a job's nodes with the nodes
//! free in each slot of its plan at every try, so the intersection must cost words, not nodes.

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSet {
    words: Vec<u64>,
}

impl NodeSet {
    /// Nodes `0..len`, none in the set.
    pub fn empty(len: usize) -> NodeSet {
        NodeSet { words: vec![0; len.div_ceil(64)] }
    }

    /// Nodes `0..len`, all in the set.
    pub fn full(len: usize) -> NodeSet {
        let mut set = NodeSet { words: vec![u64::MAX; len.div_ceil(64)] };
        if let Some(last) = set.words.last_mut().filter(|_| !len.is_multiple_of(64)) {
            *last = (1 << (len % 64)) - 1;
        }
        set
    }

    pub fn contains(&self, node: usize) -> bool {
        self.words[node / 64] & (1 << (node % 64)) != 0
    }

    pub fn insert(&mut self, node: usize) {
        self.words[node / 64] |= 1 << (node % 64);
    }

    pub fn remove(&mut self, node: usize) {
        self.words[node / 64] &= !(1 << (node % 64));
    }

    /// Keeps the nodes also in `other`.
    pub fn intersect(&mut self, other: &NodeSet) {
        self.intersect_words(&other.words);
    }

    /// Keeps the nodes also in the set whose words are `words` (sets kept side by side in one
    /// buffer, as [`NodeSet::words`] gives them).
    pub fn intersect_words(&mut self, words: &[u64]) {
        self.words.iter_mut().zip(words).for_each(|(a, b)| *a &= b);
    }

    /// The set as words of 64 nodes, the first node in the lowest bit of the first word.
    pub fn words(&self) -> &[u64] {
        &self.words
    }

    /// Drops the nodes in `other`.
    pub fn subtract(&mut self, other: &NodeSet) {
        self.words.iter_mut().zip(&other.words).for_each(|(a, b)| *a &= !b);
    }

    /// How many nodes are in both sets.
    pub fn count_common(&self, other: &NodeSet) -> u32 {
        self.words.iter().zip(&other.words).map(|(a, b)| (a & b).count_ones()).sum()
    }

    /// The nodes in both sets, in order.
    pub fn common<'a>(&'a self, other: &'a NodeSet) -> impl Iterator<Item = usize> + 'a {
        self.words.iter().zip(&other.words).enumerate().flat_map(|(w, (&a, &b))| bits_of(w, a & b))
    }

    /// Becomes `other`, keeping its own allocation.
    pub fn copy_from(&mut self, other: &NodeSet) {
        self.words.copy_from_slice(&other.words);
    }

    /// The nodes in the set, in order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| bits_of(w, word))
    }
}

/// The nodes of word `w` whose bits are set in `word`.
fn bits_of(w: usize, word: u64) -> impl Iterator<Item = usize> {
    let mut bits = word;
    std::iter::from_fn(move || {
        (bits != 0).then(|| {
            let at = bits.trailing_zeros() as usize;
            bits &= bits - 1;
            w * 64 + at
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_set_holds_exactly_its_nodes_and_intersects_by_words() {
        let mut a = NodeSet::full(70);
        assert_eq!(a.iter().count(), 70);
        let mut b = NodeSet::empty(70);
        [3, 64, 69].into_iter().for_each(|n| b.insert(n));
        a.intersect(&b);
        assert_eq!(a.iter().collect::<Vec<_>>(), [3, 64, 69]);
        a.remove(64);
        assert!(!a.contains(64) && a.contains(69));
        let mut c = NodeSet::full(70);
        c.subtract(&a);
        assert_eq!(c.iter().count(), 68);
        assert_eq!((c.count_common(&b), c.count_common(&NodeSet::full(70))), (1, 68));
    }
}
