//! Which nodes Slurm gives a job (select/cons_tres, `_eval_nodes` in
//! `src/plugins/select/cons_tres/job_test.c`): nodes in slurm.conf order, grouped in blocks of
//! consecutive nodes that can take their share; the first block that is big enough, unless a
//! later one has strictly fewer free CPUs; in it, a one-node job takes the node with the
//! fewest free CPUs (ties: the lowest), a several-node job the nodes in order.
//!
//! Here a node's order is its id (`cluster import` numbers Slurm's nodes in its order), and
//! each node of a job holds one CPU of it (a batch job of one task per node).

use super::node_set::{self, NodeSet};
use sim::NodeId;

/// Where one task goes: each node and the GPUs it gives.
pub type Parts = smallvec::SmallVec<[(NodeId, u32); 2]>;

/// The parts of each task of a candidate, in its tasks' order: held in place for one task,
/// as most candidates are (a list on the heap was an allocation and a free per job started).
pub type TaskParts = smallvec::SmallVec<[Parts; 1]>;

/// A job's part: `nodes` nodes with `per_node` GPUs on each; `spread`: a gang of no fixed
/// split, on one node if one holds it, else over as many as it takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ask {
    pub nodes: u32,
    pub per_node: u32,
    pub spread: bool,
}

impl Ask {
    /// The GPUs it asks for in all.
    pub fn gpus(&self) -> u32 {
        if self.spread { self.per_node } else { self.nodes * self.per_node }
    }

    /// Whether `fitting` usable nodes that each take one share ([`Nodes::takes_share`]), with
    /// `gpus` free GPUs on the usable nodes with a free CPU, make room for it.
    pub fn has_room_in(&self, fitting: u32, gpus: u32) -> bool {
        fitting >= self.nodes || (self.spread && gpus >= self.per_node)
    }

    /// The shape of a task of `gpus` GPUs, split `per_node` on each node (all on one node when
    /// `per_node` is `gpus`), or with no fixed split.
    pub fn of(gpus: u32, per_node: Option<u32>) -> Ask {
        match per_node {
            Some(n) => Ask { nodes: gpus.div_ceil(n.max(1)), per_node: n, spread: false },
            None => Ask { nodes: 1, per_node: gpus, spread: true },
        }
    }
}

/// Free GPUs and CPUs of every node, as a pass sees them (it takes them as it starts jobs),
/// and each node's pool; indexed by sets of nodes, so that a choice or a count of the nodes
/// that can take a share costs words, not a walk over every node.
///
/// The sets follow the counts lazily: backfill's will-run test gives back and takes again
/// thousands of running tasks' parts for each job it plans, and chooses nodes only a few
/// times among them, so a change only marks its node, and the next choice
/// ([`Nodes::settle`]) moves the nodes marked between the sets (where every change moving
/// its node through up to eight sets was a quarter of a slurm run).
#[derive(Debug, Clone, Default)]
pub struct Nodes {
    gpus: Vec<u32>,
    cpus: Vec<u32>,
    pools: Vec<u32>,
    /// The sets by free GPUs, one after another in one buffer, `words` words each: the `k`th
    /// holds the nodes with `k` free GPUs or more (the first: every node); and `with_cpu`, the
    /// nodes with a free CPU; as of the last settle, when each node had `settled_gpus` free
    /// GPUs. One buffer, as a node that changes flips its bit in each set between its old and
    /// new counts, a stride apart (a set each, behind a pointer each, cost a third of a saturated
    /// run on big gangs, where tasks of eight GPUs come and go).
    at_least: Vec<u64>,
    words: usize,
    with_cpu: NodeSet,
    settled_gpus: Vec<u32>,
    /// The nodes whose GPUs or CPUs were set since the last settle, as a set and as a list
    /// in the order first set: a settle reads the list alone, where reading the set cost it
    /// every word, 196 at 12,500 nodes.
    unsettled: NodeSet,
    unsettled_list: Vec<u32>,
    /// The nodes whose GPUs or CPUs were set since [`Nodes::take_changed`] (for a view
    /// kept beside this one, [`super::Slurm`]'s nodes once every running task has ended).
    changed: NodeSet,
}

/// The same free GPUs and CPUs on the same nodes, and the same sets once both are settled (a
/// view kept long may hold empty sets for counts no node has now; what changed is history).
impl PartialEq for Nodes {
    fn eq(&self, other: &Nodes) -> bool {
        let (mut a, mut b) = (self.clone(), other.clone());
        a.settle();
        b.settle();
        let level =
            |nodes: &Nodes, k: usize| nodes.level(k).filter(|words| words.iter().any(|&w| w != 0)).map(<[u64]>::to_vec);
        let levels = a.levels().max(b.levels());
        (&a.gpus, &a.cpus, &a.pools, &a.with_cpu) == (&b.gpus, &b.cpus, &b.pools, &b.with_cpu)
            && (0..levels).all(|k| level(&a, k) == level(&b, k))
    }
}

impl Nodes {
    /// Nodes with these free GPUs, free CPUs and pools, node by node.
    pub fn new(gpus: Vec<u32>, cpus: Vec<u32>, pools: Vec<u32>) -> Nodes {
        let len = gpus.len();
        let mut nodes = Nodes {
            gpus,
            cpus,
            pools,
            at_least: NodeSet::full(len).words().to_vec(),
            words: len.div_ceil(64),
            with_cpu: NodeSet::empty(len),
            settled_gpus: vec![0; len],
            unsettled: NodeSet::full(len),
            unsettled_list: (0..len as u32).collect(),
            changed: NodeSet::full(len),
        };
        nodes.settle();
        nodes
    }

    pub fn len(&self) -> usize {
        self.gpus.len()
    }

    pub fn gpus(&self, node: usize) -> u32 {
        self.gpus[node]
    }

    pub fn cpus(&self, node: usize) -> u32 {
        self.cpus[node]
    }

    /// `node` has `gpus` free GPUs.
    #[inline]
    pub fn set_gpus(&mut self, node: usize, gpus: u32) {
        self.gpus[node] = gpus;
        self.mark(node);
    }

    /// `node` has `by_node[node]` free GPUs (marked only if that is a change).
    pub fn set_gpus_if_changed(&mut self, node: usize, by_node: &[u32]) {
        if self.gpus.get(node).is_some_and(|&gpus| gpus != by_node[node]) {
            self.set_gpus(node, by_node[node]);
        }
    }

    /// `node` has `cpus` free CPUs.
    #[inline]
    pub fn set_cpus(&mut self, node: usize, cpus: u32) {
        self.cpus[node] = cpus;
        self.mark(node);
    }

    #[inline]
    fn mark(&mut self, node: usize) {
        if !self.unsettled.contains(node) {
            self.unsettled.insert(node);
            self.unsettled_list.push(node as u32);
        }
        self.changed.insert(node);
    }

    /// Brings the sets up to date with the counts: each node marked since the last settle
    /// moves between the sets of more than its old count and up to its new one.
    pub fn settle(&mut self) {
        let words = self.words;
        let mut unsettled = std::mem::take(&mut self.unsettled_list);
        for node in unsettled.drain(..).map(|n| n as usize) {
            self.unsettled.remove(node);
            let (old, gpus) = (self.settled_gpus[node], self.gpus[node]);
            let (low, high) = (old.min(gpus) as usize + 1, old.max(gpus) as usize);
            if self.at_least.len() < (high + 1) * words {
                self.at_least.resize((high + 1) * words, 0);
            }
            if low <= high {
                // The node's bit is in the sets of `low..=high` exactly when it had more GPUs.
                let (word, bit) = (node / 64, 1u64 << (node % 64));
                let flipped = self.at_least[low * words + word..].iter_mut().step_by(words).take(high + 1 - low);
                flipped.for_each(|w| *w ^= bit);
            }
            self.settled_gpus[node] = gpus;
            set_to(&mut self.with_cpu, node, self.cpus[node] >= 1);
        }
        self.unsettled_list = unsettled;
    }

    /// The nodes set since the last call (all of them, the first time).
    pub fn take_changed(&mut self) -> NodeSet {
        let len = self.len();
        std::mem::replace(&mut self.changed, NodeSet::empty(len))
    }

    /// The nodes Slurm picks for `ask` among those `allowed`; `None`: it does not fit. A gang
    /// that Slurm would spread over two pools (two GPU types: schedlab's gangs stay in one)
    /// takes the first pool that holds it.
    pub fn select(&mut self, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
        self.settle();
        let parts = self.select_among(ask, allowed)?;
        let pool = |&(n, _): &(NodeId, u32)| self.pools[n.index()];
        if parts.iter().all(|p| pool(p) == pool(&parts[0])) {
            return Some(parts);
        }
        let mut pools: Vec<u32> = self.pools.clone();
        pools.dedup();
        pools.into_iter().find_map(|p| {
            let mut within = allowed.clone();
            self.pools.iter().enumerate().filter(|&(_, &q)| q != p).for_each(|(n, _)| within.remove(n));
            self.select_among(ask, &within)
        })
    }

    /// Makes `out` the nodes that can take one share of `ask`: a free CPU and `per_node` free
    /// GPUs. Into a set of the caller's: backfill asks once per job tried, and a new set each
    /// time was an allocation and a free.
    pub fn fitting_into(&mut self, ask: &Ask, out: &mut NodeSet) {
        self.settle();
        self.with_at_least_into(ask.per_node, out);
    }

    /// Makes `out` the nodes whose free GPUs a task of no fixed split may spread over: a free
    /// CPU and a free GPU.
    pub fn spreading_into(&mut self, out: &mut NodeSet) {
        self.settle();
        self.with_at_least_into(1, out);
    }

    /// Makes `out` the nodes with a free CPU and `gpus` free GPUs or more (the sets settled).
    fn with_at_least_into(&self, gpus: u32, out: &mut NodeSet) {
        debug_assert!(self.unsettled_list.is_empty(), "the sets are read settled");
        match self.level(gpus as usize) {
            Some(level) => {
                out.copy_from(&self.with_cpu);
                out.intersect_words(level);
            }
            None => out.empty_to(self.len()),
        }
    }

    /// The words of the set of nodes with `k` free GPUs or more, if any node ever had so many.
    fn level(&self, k: usize) -> Option<&[u64]> {
        self.at_least.get(k * self.words..(k + 1) * self.words)
    }

    /// How many sets by free GPUs are kept.
    fn levels(&self) -> usize {
        self.at_least.len().checked_div(self.words).unwrap_or(0)
    }

    /// The `allowed` nodes that can take one share of a task of `per_node` GPUs, read from
    /// the three sets word by word into one.
    fn fits(&self, per_node: u32, allowed: &NodeSet) -> NodeSet {
        let Some(level) = self.level(per_node as usize) else { return NodeSet::empty(self.len()) };
        let words = self.with_cpu.words().iter().zip(level).zip(allowed.words());
        NodeSet::from_words(words.map(|((cpu, gpus), allowed)| cpu & gpus & allowed).collect())
    }

    /// Whether a task of no fixed split may take GPUs of `node`.
    pub fn spreads_on(&self, node: usize) -> bool {
        self.cpus[node] >= 1 && self.gpus[node] > 0
    }

    /// Whether `node` can take one share of `ask`: a free CPU and `per_node` free GPUs.
    pub fn takes_share(&self, node: usize, ask: &Ask) -> bool {
        self.cpus[node] >= 1 && self.gpus[node] >= ask.per_node
    }

    /// The nodes for `ask` among those `allowed`: on nodes that each take a share, else (a
    /// task of no fixed split) spread over the free GPUs. Most heads of the queue do not fit,
    /// and are told so by the count of the nodes that take a share (a one-node task: by
    /// finding none).
    fn select_among(&self, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
        let on_nodes = if ask.nodes == 1 {
            self.one_node(ask, allowed)
        } else {
            let fits = self.fits(ask.per_node, allowed);
            if fits.count() >= ask.nodes { self.in_blocks(ask, fits) } else { None }
        };
        if on_nodes.is_some() {
            return on_nodes;
        }
        if ask.spread { self.spread(ask.per_node, allowed) } else { None }
    }

    /// [`Nodes::in_blocks`] for a one-node task, read from the three sets a word at a time
    /// (no set of the nodes that fit is built or counted: that and a walk over every block
    /// were a fifth of a run at 12,500 nodes). It keeps only the best block so far, and looks
    /// at a block only if it is shorter than the best's free CPUs: each node that takes a
    /// share has a free CPU, so a block as long has as many ([`node_set::runs_shorter`]). For
    /// the same reason it stops at a block of one free CPU: none can have fewer.
    fn one_node(&self, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
        let count = self.words;
        // Each cut to the count of words, so that reading word `w < count` checks nothing.
        let level = &self.level(ask.per_node as usize)?[..count];
        let (cpu, allowed) = (&self.with_cpu.words()[..count], &allowed.words()[..count]);
        let fits = |w: usize| cpu[w] & level[w] & allowed[w];
        // The best block's free CPUs and its node with the fewest (the lowest on ties).
        let mut best: Option<(u64, usize)> = None;
        let (mut previous, mut word) = (0, if count > 0 { fits(0) } else { 0 });
        'words: for w in 0..count {
            let next = if w + 1 < count { fits(w + 1) } else { 0 };
            let mut starts = node_set::runs_shorter(previous, word, next, best.map_or(u64::MAX, |b| b.0));
            while starts != 0 {
                let start = w * 64 + starts.trailing_zeros() as usize;
                starts &= starts - 1;
                let most = best.map_or(u64::MAX, |b| b.0);
                let end = start + node_set::run_length(fits, count, w, start % 64);
                if ((end - start) as u64) < most
                    && let Some(better) = self.fewer_cpus(start..end, most)
                {
                    best = Some(better);
                    if better.0 == 1 {
                        // No block has fewer: each of its nodes has a free CPU. At 12,500
                        // nodes, three choices in five find one, a quarter of the way in.
                        break 'words;
                    }
                }
            }
            (previous, word) = (word, next);
        }
        best.map(|(_, node)| smallvec::smallvec![(NodeId(node as u32), ask.per_node)])
    }

    /// The free CPUs of the block `nodes` and its node with the fewest (the lowest on ties), if
    /// it has fewer than `most` in all: one pass over the block's counts, given up once they
    /// reach `most` (where the block was counted whole, then walked again for its node).
    fn fewer_cpus(&self, nodes: std::ops::Range<usize>, most: u64) -> Option<(u64, usize)> {
        let (mut total, mut fewest, mut at) = (0u64, u32::MAX, nodes.start);
        for (n, &cpus) in nodes.clone().zip(&self.cpus[nodes]) {
            total += u64::from(cpus);
            if total >= most {
                return None;
            }
            if cpus < fewest {
                (fewest, at) = (cpus, n);
            }
        }
        Some((total, at))
    }

    /// The free CPUs of a block of nodes.
    fn block_cpus(&self, nodes: &std::ops::Range<usize>) -> u64 {
        self.cpus[nodes.clone()].iter().map(|&c| u64::from(c)).sum()
    }

    /// The nodes for `ask` block by block ([`pick_block`]) among `fits`, the allowed nodes
    /// that take a share.
    fn in_blocks(&self, ask: &Ask, mut fits: NodeSet) -> Option<Parts> {
        let mut chosen = Parts::with_capacity(ask.nodes as usize);
        let mut left = ask.nodes;
        while left > 0 {
            let blocks: Vec<Block> = fits.runs().map(|nodes| Block { cpus: self.block_cpus(&nodes), nodes }).collect();
            let block = pick_block(&blocks, left)?;
            let nodes: Vec<usize> = if left == 1 {
                // The node with the fewest free CPUs, the lowest on ties.
                let best = block.nodes.clone().min_by_key(|&n| (self.cpus[n], n))?;
                vec![best]
            } else {
                block.nodes.clone().take(left as usize).collect()
            };
            for n in nodes {
                fits.remove(n);
                chosen.push((NodeId(n as u32), ask.per_node));
                left -= 1;
            }
        }
        Some(chosen)
    }

    /// `total` GPUs from the allowed nodes in order, as many from each as it has free.
    fn spread(&self, total: u32, allowed: &NodeSet) -> Option<Parts> {
        let mut left = total;
        let mut chosen = Parts::new();
        for n in self.fits(1, allowed).iter() {
            let take = self.gpus[n].min(left);
            chosen.push((NodeId(n as u32), take));
            left -= take;
            if left == 0 {
                return Some(chosen);
            }
        }
        None
    }

    /// Takes the GPUs and one CPU of each node of `parts`.
    pub fn take(&mut self, parts: &[(NodeId, u32)]) {
        for &(node, gpus) in parts {
            let n = node.index();
            self.gpus[n] -= gpus;
            self.cpus[n] = self.cpus[n].saturating_sub(1);
            self.mark(n);
        }
    }

    /// Gives back what [`Nodes::take`] took.
    pub fn give(&mut self, parts: &[(NodeId, u32)]) {
        for &(node, gpus) in parts {
            let n = node.index();
            self.gpus[n] += gpus;
            self.cpus[n] += 1;
            self.mark(n);
        }
    }
}

fn set_to(set: &mut NodeSet, node: usize, member: bool) {
    if member {
        set.insert(node);
    } else {
        set.remove(node);
    }
}

/// A run of consecutive nodes that can each take a share, and their free CPUs.
#[derive(Debug, Clone)]
struct Block {
    nodes: std::ops::Range<usize>,
    cpus: u64,
}

/// The first block of at least `nodes` nodes, or a later one with strictly fewer free CPUs;
/// none big enough: the one with the most CPUs (the first of equals).
fn pick_block(blocks: &[Block], nodes: u32) -> Option<&Block> {
    let enough = |b: &&Block| b.nodes.len() >= nodes as usize;
    let mut best: Option<&Block> = None;
    for block in blocks.iter().filter(enough) {
        if best.is_none_or(|b| block.cpus < b.cpus) {
            best = Some(block);
        }
    }
    best.or_else(|| blocks.iter().rev().max_by_key(|b| b.cpus))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nodes(gpus: &[u32], cpus: &[u32]) -> Nodes {
        Nodes::new(gpus.to_vec(), cpus.to_vec(), vec![0; gpus.len()])
    }

    fn set(members: &[usize]) -> NodeSet {
        let mut set = NodeSet::empty(4);
        members.iter().for_each(|&n| set.insert(n));
        set
    }

    fn picked(parts: Option<Parts>) -> Vec<u32> {
        parts.unwrap_or_default().into_iter().map(|(n, _)| n.0).collect()
    }

    /// The dump's job 14 (1 GPU): n2, n3 have 15 free CPUs, n4 14: n4, the fewest (the 4 nodes
    /// form one block).
    #[test]
    fn a_one_node_job_takes_the_node_with_the_fewest_free_cpus() {
        let mut n = nodes(&[0, 4, 4, 4], &[16, 15, 15, 14]);
        assert_eq!(picked(n.select(&Ask::of(1, Some(1)), &NodeSet::full(4))), [3]);
        // Equal CPUs: the lowest node.
        let mut n = nodes(&[8, 8, 8, 8], &[16, 16, 16, 16]);
        assert_eq!(picked(n.select(&Ask::of(1, Some(1)), &NodeSet::full(4))), [0]);
    }

    /// Blocks of many nodes, and one cut short once it has more CPUs than the best: the block
    /// with fewer CPUs wins, and of two with as many the first in node order.
    #[test]
    fn a_block_with_fewer_cpus_wins_and_the_first_of_equals() {
        let long = 70;
        // Blocks: nodes 0..long, a hole, then `rest` nodes; CPUs per node in each block.
        let choose = |first_cpus: u32, rest: usize, rest_cpus: u32| {
            let count = long + 1 + rest;
            let gpus = (0..count).map(|n| if n == long { 0 } else { 8 }).collect();
            let cpus = (0..count).map(|n| if n < long { first_cpus } else { rest_cpus }).collect();
            let mut n = Nodes::new(gpus, cpus, vec![0; count]);
            picked(n.select(&Ask::of(1, Some(1)), &NodeSet::full(count)))
        };
        // As many CPUs in both (70 each): the first block, its lowest node.
        assert_eq!(choose(1, long / 2, 2), [0]);
        assert_eq!(choose(1, long, 1), [0]);
        // Fewer in the first (70 against 90).
        assert_eq!(choose(1, 30, 3), [0]);
        // Fewer in the second (15 against 140): its lowest node of the fewest.
        assert_eq!(choose(2, 5, 3), [long as u32 + 1]);
    }

    /// Node 1 cannot take the job, so blocks are {0} (16 CPUs) and {2, 3} (32): the first
    /// block is kept, a later one replaces it only with strictly fewer CPUs.
    #[test]
    fn the_first_block_wins_unless_a_later_one_has_fewer_free_cpus() {
        let mut n = nodes(&[8, 0, 8, 8], &[16, 16, 16, 16]);
        assert_eq!(picked(n.select(&Ask::of(4, Some(4)), &NodeSet::full(4))), [0]);
        let mut n = nodes(&[8, 0, 8, 8], &[16, 16, 6, 16]);
        // {2, 3} has 22 CPUs, more than {0}'s 16: still node 0.
        assert_eq!(picked(n.select(&Ask::of(4, Some(4)), &NodeSet::full(4))), [0]);
        let mut n = nodes(&[8, 0, 8, 8], &[16, 16, 6, 4]);
        // {2, 3} has 10: it wins, and in it node 3 (4 CPUs).
        assert_eq!(picked(n.select(&Ask::of(4, Some(4)), &NodeSet::full(4))), [3]);
    }

    /// `-N 2 --gres=gpu:4`: nodes in order within the block that holds two; the dump's job 34
    /// got n[2,4] when n1 and n3 could not take it.
    #[test]
    fn a_two_node_job_takes_nodes_in_order_across_blocks_if_it_must() {
        let mut n = nodes(&[2, 6, 2, 6], &[16, 16, 16, 16]);
        assert_eq!(picked(n.select(&Ask::of(12, Some(6)), &NodeSet::full(4))), [1, 3]);
        let mut n = nodes(&[8, 8, 8, 8], &[16, 16, 16, 16]);
        assert_eq!(picked(n.select(&Ask::of(16, Some(8)), &NodeSet::full(4))), [0, 1]);
        assert_eq!(picked(n.select(&Ask::of(16, Some(8)), &set(&[1, 3]))), [1, 3]);
        assert_eq!(n.select(&Ask::of(24, Some(8)), &set(&[0, 3])), None);
    }

    /// Pools {0, 1} and {2, 3}: nodes 1 and 2 would be Slurm's pair, but they are of two pools;
    /// the gang takes the first pool with room.
    #[test]
    fn a_gang_stays_in_one_pool() {
        let mut n = Nodes::new(vec![0, 8, 8, 8], vec![16; 4], vec![0, 0, 1, 1]);
        assert_eq!(picked(n.select(&Ask::of(16, Some(8)), &NodeSet::full(4))), [2, 3]);
    }

    proptest::proptest! {
        // No regression files: the crate's tests share one folder; a failure prints its case.
        #![proptest_config(proptest::prelude::ProptestConfig { failure_persistence: None, ..Default::default() })]

        /// A one-node task's walk chooses what the blocks choose.
        #[test]
        fn one_node_chooses_as_the_blocks_do(
            free in proptest::collection::vec((0u32..=8, 0u32..=3), 1..40),
            allowed_bits in proptest::collection::vec(proptest::bool::ANY, 40),
            per_node in 1u32..=8,
        ) {
            let n = Nodes::new(free.iter().map(|f| f.0).collect(), free.iter().map(|f| f.1).collect(), vec![0; free.len()]);
            let mut allowed = NodeSet::empty(free.len());
            (0..free.len()).filter(|&i| allowed_bits[i]).for_each(|i| allowed.insert(i));
            let ask = Ask::of(per_node, Some(per_node));
            proptest::prop_assert_eq!(n.one_node(&ask, &allowed), n.in_blocks(&ask, n.fits(per_node, &allowed)));
        }

        /// The same with blocks of hundreds of nodes and few holes between them (blocks that
        /// a walk cuts short once they have as many CPUs as the best).
        #[test]
        fn one_node_chooses_as_the_blocks_do_among_long_blocks(
            nodes in proptest::collection::vec((0u32..60, 1u32..=3), 1..600),
        ) {
            let gpus = nodes.iter().map(|&(hole, _)| if hole == 0 { 0 } else { 8 }).collect();
            let n = Nodes::new(gpus, nodes.iter().map(|&(_, cpus)| cpus).collect(), vec![0; nodes.len()]);
            let ask = Ask::of(1, Some(1));
            let all = NodeSet::full(nodes.len());
            proptest::prop_assert_eq!(n.one_node(&ask, &all), n.in_blocks(&ask, n.fits(1, &all)));
        }
    }

    /// What Slurm chooses, by a walk over every node (the choice before the sets by free
    /// GPUs): `None` where it does not fit.
    fn walked(n: &Nodes, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
        let fits = |node: usize, taken: &[bool]| allowed.contains(node) && n.takes_share(node, ask) && !taken[node];
        let mut taken = vec![false; n.len()];
        let mut chosen = Parts::new();
        let mut left = ask.nodes;
        while left > 0 {
            let mut blocks = Vec::new();
            let mut node = 0;
            while node < n.len() {
                let start = node;
                while node < n.len() && fits(node, &taken) {
                    node += 1;
                }
                if node > start {
                    blocks.push(Block { nodes: start..node, cpus: (start..node).map(|m| u64::from(n.cpus(m))).sum() });
                }
                node += 1;
            }
            let Some(block) = pick_block(&blocks, left) else { break };
            let picked: Vec<usize> = if left == 1 {
                vec![block.nodes.clone().min_by_key(|&m| (n.cpus(m), m)).expect("not empty")]
            } else {
                block.nodes.clone().take(left as usize).collect()
            };
            for m in picked {
                taken[m] = true;
                chosen.push((NodeId(m as u32), ask.per_node));
                left -= 1;
            }
        }
        if left == 0 {
            return Some(chosen);
        }
        if !ask.spread {
            return None;
        }
        let (mut left, mut chosen) = (ask.per_node, Parts::new());
        for m in (0..n.len()).filter(|&m| allowed.contains(m) && n.gpus(m) > 0 && n.cpus(m) > 0) {
            let take = n.gpus(m).min(left);
            chosen.push((NodeId(m as u32), take));
            left -= take;
            if left == 0 {
                return Some(chosen);
            }
        }
        None
    }

    /// The sets by free GPUs and by a free CPU, kept as tasks take and give back GPUs, are
    /// those counted node by node; and the choices made with them are a walk's over every node.
    #[test]
    fn the_kept_sets_and_the_choices_made_with_them_match_a_walk_over_every_node() {
        let mut next = super::super::test_draws(0x5851_f42d_4c95_7f2d_u64);
        for _ in 0..200 {
            let count = 1 + next(150) as usize;
            let mut n = Nodes::new(vec![8; count], vec![1 + next(3) as u32; count], vec![0; count]);
            let mut held: Vec<Parts> = Vec::new();
            for _ in 0..60 {
                if !held.is_empty() && next(3) == 0 {
                    n.give(&held.swap_remove(next(held.len() as u64) as usize));
                } else {
                    let node = next(count as u64) as usize;
                    let parts = smallvec::smallvec![(NodeId(node as u32), n.gpus(node).min(1 + next(8) as u32))];
                    n.take(&parts);
                    held.push(parts);
                }
                n.settle();
                for k in 0..=9u32 {
                    let counted: Vec<usize> = (0..count).filter(|&m| n.cpus(m) >= 1 && n.gpus(m) >= k).collect();
                    let mut set = NodeSet::default();
                    n.with_at_least_into(k, &mut set);
                    assert_eq!(set.iter().collect::<Vec<_>>(), counted, "{k} GPUs");
                }
                let mut allowed = NodeSet::full(count);
                (0..count).filter(|_| next(5) == 0).for_each(|m| allowed.remove(m));
                let ask = Ask::of(1 + next(20) as u32, [None, Some(1 + next(8) as u32)][next(2) as usize]);
                assert_eq!(n.select_among(&ask, &allowed), walked(&n, &ask, &allowed), "{ask:?}");
                assert_eq!(n, Nodes::new(n.gpus.clone(), n.cpus.clone(), n.pools.clone()));
            }
        }
    }
}
