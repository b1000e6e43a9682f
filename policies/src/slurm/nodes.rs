//! Which nodes Slurm gives a job (select/cons_tres, `_eval_nodes` in
//! `src/plugins/select/cons_tres/job_test.c`): nodes in slurm.conf order, grouped in blocks of
//! consecutive nodes that can take their share; the first block that is big enough, unless a
//! later one has strictly fewer free CPUs; in it, a one-node job takes the node with the
//! fewest free CPUs (ties: the lowest), a several-node job the nodes in order.
//!
//! Here a node's order is its id (`cluster import` numbers Slurm's nodes in its order), and
//! each node of a job holds one CPU of it (a batch job of one task per node).

use super::node_set::NodeSet;
use sim::NodeId;

/// Where one task goes: each node and the GPUs it gives.
pub type Parts = Vec<(NodeId, u32)>;

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
/// and each node's pool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Nodes {
    pub gpus: Vec<u32>,
    pub cpus: Vec<u32>,
    pub pools: Vec<u32>,
}

impl Nodes {
    /// The nodes Slurm picks for `ask` among those `allowed`; `None`: it does not fit. A gang
    /// that Slurm would spread over two pools (two GPU types: schedlab's gangs stay in one)
    /// takes the first pool that holds it.
    pub fn select(&self, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
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

    /// The nodes that can take one share of `ask`: a free CPU and `per_node` free GPUs.
    pub fn fitting(&self, ask: &Ask) -> NodeSet {
        let mut set = NodeSet::empty(self.gpus.len());
        (0..self.gpus.len()).filter(|&n| self.takes_share(n, ask)).for_each(|n| set.insert(n));
        set
    }

    /// The nodes whose free GPUs a task of no fixed split may spread over: a free CPU and a
    /// free GPU.
    pub fn spreading(&self) -> NodeSet {
        let mut set = NodeSet::empty(self.gpus.len());
        (0..self.gpus.len()).filter(|&n| self.spreads_on(n)).for_each(|n| set.insert(n));
        set
    }

    /// Whether a task of no fixed split may take GPUs of `node`.
    pub fn spreads_on(&self, node: usize) -> bool {
        self.cpus[node] >= 1 && self.gpus[node] > 0
    }

    /// Whether `node` can take one share of `ask`: a free CPU and `per_node` free GPUs.
    pub fn takes_share(&self, node: usize, ask: &Ask) -> bool {
        self.cpus[node] >= 1 && self.gpus[node] >= ask.per_node
    }

    /// Whether [`Nodes::select_among`] finds room for `ask`, counted without choosing: backfill
    /// asks far more often than a job fits, and choosing walks blocks of nodes.
    pub fn has_room(&self, ask: &Ask, allowed: &NodeSet) -> bool {
        let mut fitting = 0;
        let mut gpus = 0;
        for n in allowed.iter().filter(|&n| self.cpus[n] >= 1) {
            fitting += u32::from(self.takes_share(n, ask));
            gpus += self.gpus[n];
            if ask.has_room_in(fitting, gpus) {
                return true;
            }
        }
        false
    }

    fn select_among(&self, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
        if !self.has_room(ask, allowed) {
            return None;
        }
        let on_nodes = self.on_nodes(ask, allowed);
        if ask.spread && on_nodes.is_none() {
            return self.spread(ask.per_node, allowed);
        }
        on_nodes
    }

    fn on_nodes(&self, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
        if ask.nodes == 1 {
            return self.one_node(ask, allowed);
        }
        self.in_blocks(ask, allowed)
    }

    /// [`Nodes::in_blocks`] for a one-node task, in one walk over the nodes that keeps only
    /// the best block so far (most tasks take one node, and each start chose among every node).
    fn one_node(&self, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
        let fits = |n: usize| allowed.contains(n) && self.takes_share(n, ask);
        let count = self.gpus.len();
        // The block's free CPUs and its node with the fewest (the lowest on ties).
        let mut best: Option<(u64, usize)> = None;
        let mut n = 0;
        while n < count {
            if !fits(n) {
                n += 1;
                continue;
            }
            let (mut cpus, mut fewest) = (0, n);
            while n < count && fits(n) {
                cpus += u64::from(self.cpus[n]);
                if self.cpus[n] < self.cpus[fewest] {
                    fewest = n;
                }
                n += 1;
            }
            if best.is_none_or(|(most, _)| cpus < most) {
                best = Some((cpus, fewest));
            }
        }
        best.map(|(_, node)| vec![(NodeId(node as u32), ask.per_node)])
    }

    /// The nodes for `ask` block by block ([`pick_block`]).
    fn in_blocks(&self, ask: &Ask, allowed: &NodeSet) -> Option<Parts> {
        let fits = |n: usize| allowed.contains(n) && self.takes_share(n, ask);
        let mut taken = vec![false; self.gpus.len()];
        let mut chosen = Vec::with_capacity(ask.nodes as usize);
        let mut left = ask.nodes;
        while left > 0 {
            let blocks = blocks(self.gpus.len(), |n| fits(n) && !taken[n], &self.cpus);
            let block = pick_block(&blocks, left)?;
            let nodes: Vec<usize> = if left == 1 {
                // The node with the fewest free CPUs, the lowest on ties.
                let best = block.nodes.clone().min_by_key(|&n| (self.cpus[n], n))?;
                vec![best]
            } else {
                block.nodes.clone().take(left as usize).collect()
            };
            for n in nodes {
                taken[n] = true;
                chosen.push((NodeId(n as u32), ask.per_node));
                left -= 1;
            }
        }
        Some(chosen)
    }

    /// `total` GPUs from the allowed nodes in order, as many from each as it has free.
    fn spread(&self, total: u32, allowed: &NodeSet) -> Option<Parts> {
        let mut left = total;
        let mut chosen = Vec::new();
        for n in allowed.iter().filter(|&n| self.gpus[n] > 0 && self.cpus[n] > 0) {
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
            self.gpus[node.index()] -= gpus;
            self.cpus[node.index()] = self.cpus[node.index()].saturating_sub(1);
        }
    }

    /// Gives back what [`Nodes::take`] took.
    pub fn give(&mut self, parts: &[(NodeId, u32)]) {
        for &(node, gpus) in parts {
            self.gpus[node.index()] += gpus;
            self.cpus[node.index()] += 1;
        }
    }
}

/// A run of consecutive nodes that can each take a share, and their free CPUs.
#[derive(Debug, Clone)]
struct Block {
    nodes: std::ops::Range<usize>,
    cpus: u64,
}

fn blocks(count: usize, fits: impl Fn(usize) -> bool, cpus: &[u32]) -> Vec<Block> {
    let mut out = Vec::new();
    let mut n = 0;
    while n < count {
        if !fits(n) {
            n += 1;
            continue;
        }
        let start = n;
        while n < count && fits(n) {
            n += 1;
        }
        out.push(Block { nodes: start..n, cpus: cpus[start..n].iter().map(|&c| u64::from(c)).sum() });
    }
    out
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
        Nodes { gpus: gpus.to_vec(), cpus: cpus.to_vec(), pools: vec![0; gpus.len()] }
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
        let n = nodes(&[0, 4, 4, 4], &[16, 15, 15, 14]);
        assert_eq!(picked(n.select(&Ask::of(1, Some(1)), &NodeSet::full(4))), [3]);
        // Equal CPUs: the lowest node.
        let n = nodes(&[8, 8, 8, 8], &[16, 16, 16, 16]);
        assert_eq!(picked(n.select(&Ask::of(1, Some(1)), &NodeSet::full(4))), [0]);
    }

    /// Node 1 cannot take the job, so blocks are {0} (16 CPUs) and {2, 3} (32): the first
    /// block is kept, a later one replaces it only with strictly fewer CPUs.
    #[test]
    fn the_first_block_wins_unless_a_later_one_has_fewer_free_cpus() {
        let n = nodes(&[8, 0, 8, 8], &[16, 16, 16, 16]);
        assert_eq!(picked(n.select(&Ask::of(4, Some(4)), &NodeSet::full(4))), [0]);
        let n = nodes(&[8, 0, 8, 8], &[16, 16, 6, 16]);
        // {2, 3} has 22 CPUs, more than {0}'s 16: still node 0.
        assert_eq!(picked(n.select(&Ask::of(4, Some(4)), &NodeSet::full(4))), [0]);
        let n = nodes(&[8, 0, 8, 8], &[16, 16, 6, 4]);
        // {2, 3} has 10: it wins, and in it node 3 (4 CPUs).
        assert_eq!(picked(n.select(&Ask::of(4, Some(4)), &NodeSet::full(4))), [3]);
    }

    /// `-N 2 --gres=gpu:4`: nodes in order within the block that holds two; the dump's job 34
    /// got n[2,4] when n1 and n3 could not take it.
    #[test]
    fn a_two_node_job_takes_nodes_in_order_across_blocks_if_it_must() {
        let n = nodes(&[2, 6, 2, 6], &[16, 16, 16, 16]);
        assert_eq!(picked(n.select(&Ask::of(12, Some(6)), &NodeSet::full(4))), [1, 3]);
        let n = nodes(&[8, 8, 8, 8], &[16, 16, 16, 16]);
        assert_eq!(picked(n.select(&Ask::of(16, Some(8)), &NodeSet::full(4))), [0, 1]);
        assert_eq!(picked(n.select(&Ask::of(16, Some(8)), &set(&[1, 3]))), [1, 3]);
        assert_eq!(n.select(&Ask::of(24, Some(8)), &set(&[0, 3])), None);
    }

    /// Pools {0, 1} and {2, 3}: nodes 1 and 2 would be Slurm's pair, but they are of two pools;
    /// the gang takes the first pool with room.
    #[test]
    fn a_gang_stays_in_one_pool() {
        let n = Nodes { gpus: vec![0, 8, 8, 8], cpus: vec![16; 4], pools: vec![0, 0, 1, 1] };
        assert_eq!(picked(n.select(&Ask::of(16, Some(8)), &NodeSet::full(4))), [2, 3]);
    }

    proptest::proptest! {
        // No regression files: the crate's tests share one folder; a failure prints its case.
        #![proptest_config(proptest::prelude::ProptestConfig { failure_persistence: None, ..Default::default() })]

        /// The count that spares backfill a choice says yes exactly when a choice is found.
        #[test]
        fn has_room_says_whether_a_choice_is_found(
            free in proptest::collection::vec((0u32..=8, 0u32..=2), 1..40),
            allowed_bits in proptest::collection::vec(proptest::bool::ANY, 40),
            gpus in 1u32..=24,
            per_node in proptest::option::of(1u32..=8),
        ) {
            let n = Nodes {
                gpus: free.iter().map(|f| f.0).collect(),
                cpus: free.iter().map(|f| f.1).collect(),
                pools: vec![0; free.len()],
            };
            let mut allowed = NodeSet::empty(free.len());
            (0..free.len()).filter(|&i| allowed_bits[i]).for_each(|i| allowed.insert(i));
            let ask = Ask::of(gpus, per_node);
            proptest::prop_assert_eq!(n.has_room(&ask, &allowed), n.on_nodes(&ask, &allowed).is_some() || (ask.spread && n.spread(ask.per_node, &allowed).is_some()));
        }

        /// A one-node task's walk chooses what the blocks choose.
        #[test]
        fn one_node_chooses_as_the_blocks_do(
            free in proptest::collection::vec((0u32..=8, 0u32..=3), 1..40),
            allowed_bits in proptest::collection::vec(proptest::bool::ANY, 40),
            per_node in 1u32..=8,
        ) {
            let n = Nodes {
                gpus: free.iter().map(|f| f.0).collect(),
                cpus: free.iter().map(|f| f.1).collect(),
                pools: vec![0; free.len()],
            };
            let mut allowed = NodeSet::empty(free.len());
            (0..free.len()).filter(|&i| allowed_bits[i]).for_each(|i| allowed.insert(i));
            let ask = Ask::of(per_node, Some(per_node));
            proptest::prop_assert_eq!(n.one_node(&ask, &allowed), n.in_blocks(&ask, &allowed));
        }
    }
}
