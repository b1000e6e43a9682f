//! A set of nodes as bits, 64 nodes a word: backfill intersects a job's nodes with the nodes
//! free in each slot of its plan at every try, so the intersection must cost words, not nodes.

#[derive(Debug, Clone, Default, PartialEq, Eq)]
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
        let mut set = NodeSet::default();
        set.fill(len);
        set
    }

    /// Becomes [`NodeSet::empty`]`(len)`, keeping its own allocation.
    pub fn empty_to(&mut self, len: usize) {
        self.words.clear();
        self.words.resize(len.div_ceil(64), 0);
    }

    /// Becomes [`NodeSet::full`]`(len)`, keeping its own allocation.
    pub fn fill(&mut self, len: usize) {
        self.words.clear();
        self.words.resize(len.div_ceil(64), u64::MAX);
        if let Some(last) = self.words.last_mut().filter(|_| !len.is_multiple_of(64)) {
            *last = (1 << (len % 64)) - 1;
        }
    }

    /// The set whose words are `words` ([`NodeSet::words`]).
    pub fn from_words(words: Vec<u64>) -> NodeSet {
        NodeSet { words }
    }

    /// How many nodes are in the set.
    pub fn count(&self) -> u32 {
        self.words.iter().map(|w| w.count_ones()).sum()
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

    /// Becomes `other`, keeping its own allocation (grown if `other` has more nodes).
    pub fn copy_from(&mut self, other: &NodeSet) {
        self.words.clear();
        self.words.extend_from_slice(&other.words);
    }

    /// The nodes in the set, in order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.words.iter().enumerate().flat_map(|(w, &word)| bits_of(w, word))
    }

    /// The runs of consecutive nodes in the set, in order: found a word at a time (Slurm's
    /// blocks of nodes), where a walk looked at every node.
    pub fn runs(&self) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
        let mut from = 0;
        std::iter::from_fn(move || {
            let start = self.next_with(from, false)?;
            // Bits past the last node are clear, so every run ends.
            let end = self.next_with(start, true).unwrap_or(self.words.len() * 64);
            from = end;
            Some(start..end)
        })
    }

    /// The first node at or after `from` that is in the set (`invert`: not in it).
    fn next_with(&self, from: usize, invert: bool) -> Option<usize> {
        let flip = if invert { u64::MAX } else { 0 };
        let mut w = from / 64;
        let mut word = (self.words.get(w)? ^ flip) & (u64::MAX << (from % 64));
        loop {
            if word != 0 {
                return Some(w * 64 + word.trailing_zeros() as usize);
            }
            w += 1;
            word = self.words.get(w)? ^ flip;
        }
    }
}

/// The starts of the runs of consecutive members that start in `word` and are shorter than
/// `len`: `previous` and `next` are the words either side, and a run that starts in `word` is
/// `len` long or more, for `len` up to 64, within `word` and `next` (past that, every start).
/// A few operations a word, where a walk over the runs cost two searches each.
pub fn runs_shorter(previous: u64, word: u64, next: u64, len: u64) -> u64 {
    let starts = word & !(word << 1 | previous >> 63);
    if starts == 0 || len > 64 {
        return starts;
    }
    let both = u128::from(word) | u128::from(next) << 64;
    // Bit p of `long`: bits p..p + covered of `both` are all set (doubled at most six times).
    let (mut long, mut covered) = (both, 1);
    while covered < len {
        let step = covered.min(len - covered);
        long &= long >> step;
        covered += step;
    }
    starts & !(long as u64)
}

/// The length of the run of members that starts at bit `bit` of word `w`, in a set of
/// `words` words, word `k` of which is `word_at(k)` (read only as far as the run goes).
pub fn run_length(word_at: impl Fn(usize) -> u64, words: usize, w: usize, bit: usize) -> usize {
    let mut length = (!(word_at(w) >> bit)).trailing_zeros() as usize;
    let mut k = w + 1;
    while k < words && bit + length == (k - w) * 64 {
        length += word_at(k).trailing_ones() as usize;
        k += 1;
    }
    length
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

    /// The runs found a word at a time are the runs of a walk over every node, on random
    /// sets whose runs cross words and end at the last node.
    #[test]
    fn runs_are_the_runs_of_consecutive_members() {
        let mut next = super::super::test_draws(0x1234_5678_9abc_def1_u64);
        for _ in 0..500 {
            let len = 1 + next(200) as usize;
            let mut set = NodeSet::empty(len);
            let dense = 1 + next(4);
            (0..len).filter(|_| next(dense + 1) > 0).for_each(|n| set.insert(n));
            let mut walked: Vec<std::ops::Range<usize>> = Vec::new();
            for n in set.iter() {
                match walked.last_mut() {
                    Some(run) if run.end == n => run.end = n + 1,
                    _ => walked.push(n..n + 1),
                }
            }
            assert_eq!(set.runs().collect::<Vec<_>>(), walked);
            let words = set.words();
            let word_at = |k: usize| words[k];
            for len in [0, 1, 2, 3, 5, 8, 17, 63, 64, 65, u64::MAX] {
                let mut short = Vec::new();
                for w in 0..words.len() {
                    let (previous, next) =
                        (if w > 0 { words[w - 1] } else { 0 }, words.get(w + 1).copied().unwrap_or(0));
                    let starts = runs_shorter(previous, words[w], next, len);
                    short.extend(bits_of(w, starts).map(|n| n..n + run_length(word_at, words.len(), w, n % 64)));
                }
                let expected: Vec<_> = walked.iter().filter(|r| len > 64 || (r.len() as u64) < len).cloned().collect();
                assert_eq!(short, expected, "runs shorter than {len}");
            }
        }
    }
}
