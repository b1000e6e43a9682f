//! Which GPUs are free, indexed so that placement never scans the whole cluster: per node a
//! bit mask of free GPUs, per pool and free count the set of nodes with exactly that many free
//! (a bitset over the pool's nodes, `node_bits.rs`). Nodes are ordered `(free GPUs, node)`:
//! best fit ("fullest node that still fits") and worst fit ("emptiest node") are a first-member
//! lookup in one level. (Bitsets replaced one ordered set of `(free, node)` per pool: an update
//! is two bit flips instead of two tree descents, and gangs free in O(gang) without a bulk path.)
//!
//! GPUs shared by fractional tasks are not free: they leave the masks while any share is held,
//! and sit in a per-pool set keyed by the room (milli-GPUs) they have left.

use crate::cluster::Cluster;
use crate::gpu_layout::GpuLayout;
use crate::ids::{GpuId, NodeId, PoolId};
use crate::node_bits::NodeBits;
use std::collections::{BTreeMap, BTreeSet};

/// A whole GPU, in milli-GPUs.
pub const WHOLE_GPU_MILLI: u32 = 1000;

/// A gang's GPUs as placement chooses them (`FreeGpus::take_from` fills it): up to 8 (a
/// node's worth, most gangs) held inline, so that placing and starting a task allocates nothing.
pub type GpuList = smallvec::SmallVec<[GpuId; 8]>;

#[derive(Debug, Clone)]
pub struct FreeGpus {
    /// Bit `i` set = the node's `i`-th GPU is free.
    node_mask: Vec<u64>,
    /// Free GPUs per node: the bits of its mask, counted as they change (a count of the bits
    /// is a dozen instructions without `popcnt` in the baseline x86-64 target).
    node_free: Vec<u32>,
    node_first_gpu: Vec<GpuId>,
    node_pool: Vec<PoolId>,
    pool_free: Vec<u32>,
    /// Per pool, the nodes with at least one free GPU by their free count.
    by_free: Vec<FreeLevels>,
    total_free: u32,
    /// Which node holds each GPU.
    layout: GpuLayout,
    /// Milli-GPUs used on each GPU held by fractional tasks (and only those).
    shared_used: BTreeMap<GpuId, u32>,
    /// Per pool: `(room left, GPU)` for every shared GPU the scheduler may use.
    by_room: Vec<BTreeSet<(u32, GpuId)>>,
    /// Shared GPUs the scheduler may not use (failed, on a dead or reserved node): their
    /// room is offered to no new share. Shares stay on a GPU that goes out of service while
    /// their tasks are stopped, or while they are being released (`release.rs`).
    shared_out: BTreeSet<GpuId>,
    /// Changes to what is free so far (see `generation`).
    generation: u64,
    /// The node of each of the latest changes, oldest first: the change that moved the
    /// generation to `log_base + i + 1` was on `log[i]` (see [`FreeGpus::changed_since`]).
    log: Vec<NodeId>,
    log_base: u64,
}

/// The most changes [`FreeGpus`] remembers the nodes of; half are let go when it is full.
const LOG_KEEP: usize = 1 << 14;

/// One pool's nodes with free GPUs: `levels[f]` holds the nodes with exactly `f` free, by their
/// position in the pool (the pool's nodes are consecutive from `first_node`).
#[derive(Debug, Clone)]
struct FreeLevels {
    first_node: u32,
    levels: Vec<NodeBits>,
    /// Bit `f - 1` set = `levels[f]` is not empty (`levels[0]` stays empty: only nodes with a
    /// free GPU are indexed, and a node holds at most 64 GPUs), so that best fit and the most
    /// free on one node are a bit scan of one word, not a look at every level.
    occupied: u64,
}

impl FreeLevels {
    fn position(&self, node: NodeId) -> usize {
        (node.0 - self.first_node) as usize
    }
    fn node(&self, position: usize) -> NodeId {
        NodeId(self.first_node + position as u32)
    }
    /// Indexes `node` with `free` (at least one) free GPUs.
    fn insert(&mut self, free: u32, node: NodeId) {
        self.insert_at(free, self.position(node));
    }
    fn insert_at(&mut self, free: u32, at: usize) {
        self.levels[free as usize].insert(at);
        self.occupied |= occupied_bit(free);
    }
    fn remove_at(&mut self, free: u32, at: usize) {
        if self.levels[free as usize].remove(at) {
            self.occupied &= !occupied_bit(free);
        }
    }
    /// Moves `node` from the level of `old` free GPUs to that of `new` (zero: not indexed).
    #[inline]
    fn change(&mut self, node: NodeId, old: u32, new: u32) {
        let at = self.position(node);
        if old > 0 {
            self.remove_at(old, at);
        }
        if new > 0 {
            self.insert_at(new, at);
        }
    }
    fn contains(&self, free: u32, node: NodeId) -> bool {
        self.levels.get(free as usize).is_some_and(|l| l.contains(self.position(node)))
    }
    fn len(&self) -> usize {
        self.levels.iter().map(|l| l.len() as usize).sum()
    }
    /// What `occupied` should be, from the levels themselves.
    /// What `occupied` should be, from the levels themselves (`None`: a node is indexed with
    /// no free GPU).
    fn occupied_levels(&self) -> Option<u64> {
        let (empty, free) = self.levels.split_first()?;
        let bits = free.iter().zip(1..).filter(|(l, _)| !l.is_empty()).fold(0, |bits, (_, f)| bits | occupied_bit(f));
        empty.is_empty().then_some(bits)
    }
    /// The node with the fewest free GPUs but at least `at_least` (one, if zero), lowest
    /// position on ties: the first member of the first non-empty level from `at_least` up.
    fn fullest_with(&self, at_least: u32) -> Option<NodeId> {
        let from = at_least.max(1);
        let above = self.occupied.checked_shr(from - 1).filter(|&bits| bits != 0)?;
        let level = from + above.trailing_zeros();
        self.levels[level as usize].next_from(0).map(|at| self.node(at))
    }
    /// The fullest node with at least `at_least` free GPUs (one, if zero) that a walk of
    /// [`Self::emptiest_first`] has not reached, when it has yielded every node up to
    /// `reached` (its free count and node): a node with fewer free than that, else one with as
    /// many and a later position. A bit scan of the levels below, or one level's next member.
    fn fullest_not_reached(&self, at_least: u32, reached: (u32, NodeId)) -> Option<NodeId> {
        let (count, node) = reached;
        let from = at_least.max(1);
        if from > count {
            return None; // every node with that many free GPUs was reached
        }
        let below = self.occupied & (occupied_bit(count) - 1);
        if let Some(bits) = below.checked_shr(from - 1).filter(|&bits| bits != 0) {
            let level = from + bits.trailing_zeros();
            return self.levels[level as usize].next_from(0).map(|at| self.node(at));
        }
        self.levels[count as usize].next_from(self.position(node) + 1).map(|at| self.node(at))
    }
    /// The most free GPUs on one node (0: none free).
    fn max(&self) -> u32 {
        64 - self.occupied.leading_zeros()
    }
    /// Nodes keyed `(free, node)` from `from` (inclusive) to `to` (exclusive), in key order.
    fn range(&self, from: (u32, NodeId), to: (u32, NodeId)) -> Walk<'_> {
        let top = (self.levels.len() as u32).saturating_sub(1);
        let (level, last) = (from.0.max(1), to.0.min(top));
        let at = if level == from.0 { self.position_at_or_after(from.1) } else { 0 };
        let last_end = if last == to.0 { self.position_at_or_after(to.1) } else { usize::MAX };
        Walk { set: self, level, at, last, last_end, descending: false }
    }
    /// Nodes with free GPUs, the most free first, ties by node id.
    fn emptiest_first(&self) -> Walk<'_> {
        Walk { set: self, level: self.max(), at: 0, last: 1, last_end: usize::MAX, descending: true }
    }
    /// The position of `node`, or 0 for a node before the pool's.
    fn position_at_or_after(&self, node: NodeId) -> usize {
        node.0.saturating_sub(self.first_node) as usize
    }
}

/// A gang's consecutive GPUs on one node, as `take_gang` and `release_gang` apply them.
struct Run {
    node: NodeId,
    /// The GPUs' bits in the node's mask, and how many GPUs (counting any listed twice).
    bits: u64,
    len: usize,
    /// Whether a GPU is listed twice.
    repeats: bool,
}

/// A walk over one pool's nodes by (free GPUs, node): its levels in turn, up or down, each
/// level's nodes by id. A hand-written iterator, not a `flat_map` of each level's range:
/// placement walks these at every start, and the nested closures cost several times this.
struct Walk<'a> {
    set: &'a FreeLevels,
    /// The level being read and the next position to read in it.
    level: u32,
    at: usize,
    /// The last level read (inclusive), and the position where it stops (exclusive).
    last: u32,
    last_end: usize,
    descending: bool,
}

impl Iterator for Walk<'_> {
    type Item = (NodeId, u32);

    fn next(&mut self) -> Option<(NodeId, u32)> {
        loop {
            let past_last = if self.descending { self.level < self.last } else { self.level > self.last };
            if past_last {
                return None;
            }
            let end = if self.level == self.last { self.last_end } else { usize::MAX };
            let level = &self.set.levels[self.level as usize];
            if let Some(at) = level.next_from(self.at).filter(|&at| at < end) {
                self.at = at + 1;
                return Some((self.set.node(at), self.level));
            }
            self.at = 0;
            if self.descending {
                self.level = self.level.checked_sub(1)?;
            } else {
                self.level += 1;
            }
        }
    }
}

impl FreeGpus {
    /// Every GPU of `cluster` free.
    pub fn all_free(cluster: &Cluster) -> FreeGpus {
        let nodes = cluster.nodes();
        let mut by_free: Vec<FreeLevels> = cluster
            .pools()
            .iter()
            .map(|p| {
                let first_node = p.first_node.0;
                let levels = (0..=p.gpus_per_node).map(|_| NodeBits::new(p.node_count as usize)).collect();
                FreeLevels { first_node, levels, occupied: 0 }
            })
            .collect();
        let mut pool_free = vec![0; cluster.pools().len()];
        for n in nodes {
            by_free[n.pool.index()].insert(n.gpu_count, n.id);
            pool_free[n.pool.index()] += n.gpu_count;
        }
        FreeGpus {
            node_mask: nodes.iter().map(|n| full_mask(n.gpu_count)).collect(),
            node_free: nodes.iter().map(|n| n.gpu_count).collect(),
            node_first_gpu: nodes.iter().map(|n| n.first_gpu).collect(),
            node_pool: nodes.iter().map(|n| n.pool).collect(),
            pool_free,
            by_free,
            total_free: cluster.gpu_count(),
            layout: cluster.layout().clone(),
            shared_used: BTreeMap::new(),
            by_room: vec![BTreeSet::new(); cluster.pools().len()],
            shared_out: BTreeSet::new(),
            generation: 0,
            log: Vec::new(),
            log_base: 0,
        }
    }

    /// A number that changes with every change to what is free (a GPU taken or freed, a
    /// share's room, a shared GPU in or out of service): between two equal readings, every
    /// shape that did not fit still does not. For a policy that remembers a task that found
    /// no room (fifo's blocked head), instead of placing it again at a decision point that
    /// freed nothing (an arrival).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The nodes whose free GPUs may have changed since `generation` (each change's node, in
    /// order, some more than once), or `None` if that is further back than is remembered
    /// (then any node may have). A planner that keeps its own count of each node's free GPUs
    /// brings it up to date from these instead of reading every node.
    pub fn changed_since(&self, generation: u64) -> Option<&[NodeId]> {
        let from = generation.checked_sub(self.log_base)?;
        self.log.get(usize::try_from(from).ok()?..)
    }

    /// A change to what is free, on `node`: the generation moves on and the node is logged.
    fn moved_on(&mut self, node: NodeId) {
        self.generation += 1;
        if self.log.len() == LOG_KEEP {
            self.log.drain(..LOG_KEEP / 2);
            self.log_base += (LOG_KEEP / 2) as u64;
        }
        self.log.push(node);
    }

    /// Milli-GPUs left on `gpu` if fractional tasks share it now.
    pub fn shared_room(&self, gpu: GpuId) -> Option<u32> {
        self.shared_used.get(&gpu).map(|used| WHOLE_GPU_MILLI - used)
    }
    /// Whether a share of `milli` fits on `gpu` now: it is free, or shared with that much room.
    pub fn can_share(&self, gpu: GpuId, milli: u32) -> bool {
        match self.shared_room(gpu) {
            Some(room) => room >= milli && !self.shared_out.contains(&gpu),
            None => self.is_free(self.layout.node_of(gpu), gpu),
        }
    }
    /// Shared GPUs of `pool` with at least `milli` room, least room first, ties by GPU id.
    pub fn shared_with_room(&self, pool: PoolId, milli: u32) -> impl DoubleEndedIterator<Item = (GpuId, u32)> + '_ {
        self.by_room[pool.index()].range((milli, GpuId(0))..).map(|&(room, gpu)| (gpu, room))
    }
    pub fn node_of(&self, gpu: GpuId) -> NodeId {
        self.layout.node_of(gpu)
    }

    /// Puts a share of `milli` on `gpu` (free, or shared with room: the caller checked).
    pub(crate) fn take_share(&mut self, gpu: GpuId, milli: u32) {
        let pool = self.layout.pool_of(gpu).index();
        let used = match self.shared_used.get(&gpu).copied() {
            Some(used) => {
                self.by_room[pool].remove(&(WHOLE_GPU_MILLI - used, gpu));
                used
            }
            None => {
                self.take(self.layout.node_of(gpu), gpu);
                0
            }
        };
        debug_assert!(used + milli <= WHOLE_GPU_MILLI, "{gpu} overcommitted");
        self.moved_on(self.layout.node_of(gpu));
        self.shared_used.insert(gpu, used + milli);
        self.by_room[pool].insert((WHOLE_GPU_MILLI - used - milli, gpu));
    }
    /// Takes a share of `milli` off `gpu`. When the last share leaves, the GPU is free again if
    /// `usable` (otherwise it stays out: its node is dead or it failed).
    pub(crate) fn release_share(&mut self, gpu: GpuId, milli: u32, usable: bool) {
        let pool = self.layout.pool_of(gpu).index();
        let used = self.shared_used.remove(&gpu).expect("a share is held on this GPU");
        self.moved_on(self.layout.node_of(gpu));
        self.by_room[pool].remove(&(WHOLE_GPU_MILLI - used, gpu));
        let left = used - milli;
        if left > 0 {
            self.shared_used.insert(gpu, left);
            if !self.shared_out.contains(&gpu) {
                self.by_room[pool].insert((WHOLE_GPU_MILLI - left, gpu));
            }
            return;
        }
        self.shared_out.remove(&gpu);
        if usable {
            self.release(self.layout.node_of(gpu), gpu);
        }
    }
    /// A shared `gpu` goes out of service (`usable` false: its room is offered to no new
    /// share) or back into it. Nothing for a GPU nobody shares.
    pub(crate) fn set_shared_usable(&mut self, gpu: GpuId, usable: bool) {
        let Some(&used) = self.shared_used.get(&gpu) else { return };
        self.moved_on(self.layout.node_of(gpu));
        let pool = self.layout.pool_of(gpu).index();
        let entry = (WHOLE_GPU_MILLI - used, gpu);
        if usable {
            self.shared_out.remove(&gpu);
            self.by_room[pool].insert(entry);
        } else {
            self.shared_out.insert(gpu);
            self.by_room[pool].remove(&entry);
        }
    }
    /// Whether any fractional task holds a share of `gpu`.
    pub fn is_shared(&self, gpu: GpuId) -> bool {
        self.shared_used.contains_key(&gpu)
    }

    pub fn total(&self) -> u32 {
        self.total_free
    }
    pub fn in_pool(&self, pool: PoolId) -> u32 {
        self.pool_free[pool.index()]
    }
    pub fn pool_of_node(&self, node: NodeId) -> PoolId {
        self.node_pool[node.index()]
    }
    pub fn on_node(&self, node: NodeId) -> u32 {
        self.node_free[node.index()]
    }
    /// Every node's free GPUs ([`FreeGpus::on_node`]), in node order: a planner that keeps its
    /// own copy compares it with this in place instead of reading the nodes one by one.
    pub fn by_node(&self) -> &[u32] {
        &self.node_free
    }
    /// The most free GPUs on any one node of `pool`.
    pub fn max_on_one_node(&self, pool: PoolId) -> u32 {
        self.by_free[pool.index()].max()
    }
    /// Nodes of `pool` with at least one free GPU, fullest first (fewest free), ties by node id.
    pub fn nodes_fullest_first(&self, pool: PoolId) -> impl Iterator<Item = (NodeId, u32)> + '_ {
        self.nodes_with_at_least(pool, 1)
    }
    /// Nodes of `pool` with at least one free GPU, emptiest first (most free), ties by node id.
    pub fn nodes_emptiest_first(&self, pool: PoolId) -> impl Iterator<Item = (NodeId, u32)> + '_ {
        self.by_free[pool.index()].emptiest_first()
    }
    /// The fullest node of `pool` that still has `at_least` free GPUs (best fit), lowest id on ties.
    #[inline]
    pub fn best_fit(&self, pool: PoolId, at_least: u32) -> Option<NodeId> {
        // Not `nodes_with_at_least(..).next()`: a walk looks at every level from `at_least`
        // up, this reads the mask of non-empty ones; placement asks at every start.
        self.by_free[pool.index()].fullest_with(at_least)
    }
    /// The fullest node of `pool` with at least `at_least` free GPUs that a walk of
    /// [`Self::nodes_emptiest_first`] has not reached: it has yielded every node up to
    /// `reached` (its free count and id). A multi-node gang's last piece, without a walk.
    #[inline]
    pub fn best_fit_not_reached(&self, pool: PoolId, at_least: u32, reached: (u32, NodeId)) -> Option<NodeId> {
        self.by_free[pool.index()].fullest_not_reached(at_least, reached)
    }
    /// Nodes of `pool` with at least `at_least` free GPUs, fullest first, ties by node id.
    pub fn nodes_with_at_least(&self, pool: PoolId, at_least: u32) -> impl Iterator<Item = (NodeId, u32)> + '_ {
        self.by_free[pool.index()].range((at_least, NodeId(0)), (u32::MAX, NodeId(0)))
    }
    /// Nodes of `pool` keyed `(free GPUs, node)` in `range`, in that order (fullest first).
    pub fn nodes_in(
        &self,
        pool: PoolId,
        range: std::ops::Range<(u32, NodeId)>,
    ) -> impl Iterator<Item = (NodeId, u32)> + '_ {
        let range = if range.start <= range.end { range } else { range.start..range.start };
        self.by_free[pool.index()].range(range.start, range.end)
    }
    /// The node of `pool` with the most free GPUs (worst fit), lowest id on ties.
    pub fn emptiest(&self, pool: PoolId) -> Option<NodeId> {
        let max = self.max_on_one_node(pool);
        if max == 0 { None } else { self.best_fit(pool, max) }
    }
    pub fn is_free(&self, node: NodeId, gpu: GpuId) -> bool {
        let slot = gpu.0 - self.node_first_gpu[node.index()].0;
        slot < 64 && self.node_mask[node.index()] & (1u64 << slot) != 0
    }
    /// Up to `count` free GPUs of `node`, lowest slot first, onto `out`. Room for them is
    /// reserved once and each is written by a plain push: placement calls this for every node
    /// of every gang, and `Extend` through an iterator cost several times this.
    #[inline]
    pub fn take_from(&self, node: NodeId, count: u32, out: &mut GpuList) {
        let (first, mut mask) = (self.node_first_gpu[node.index()].0, self.node_mask[node.index()]);
        let take = count.min(self.node_free[node.index()]);
        out.reserve(take as usize);
        for _ in 0..take {
            out.push(GpuId(first + mask.trailing_zeros()));
            mask &= mask - 1; // the lowest free slot, now handed out
        }
    }

    /// Marks `gpu` (on `node`) taken. The caller has checked it is free.
    pub(crate) fn take(&mut self, node: NodeId, gpu: GpuId) {
        let bit = self.bit(node, gpu);
        debug_assert!(self.node_mask[node.index()] & bit != 0, "{gpu} taken twice");
        self.update(node, |mask| mask & !bit, -1);
    }
    /// Marks `gpu` (on `node`) free again.
    pub(crate) fn release(&mut self, node: NodeId, gpu: GpuId) {
        let bit = self.bit(node, gpu);
        debug_assert!(self.node_mask[node.index()] & bit == 0, "{gpu} released twice");
        self.update(node, |mask| mask | bit, 1);
    }

    /// Marks a gang's whole `gpus` taken, one index update per node (placements list a
    /// gang's GPUs node by node): O(gang) bit work and O(nodes) index work. `Err(gpu)` when
    /// `gpu` is not free (or is listed twice); nothing is taken then.
    pub(crate) fn take_gang(&mut self, gpus: &[GpuId]) -> Result<(), GpuId> {
        let Err(at) = self.take_runs(gpus, None) else { return Ok(()) };
        // The offending run's first GPU that is not free, counting those earlier runs took
        // (a GPU listed in two runs) before they are given back, or listed twice in the run.
        let Run { node, len, .. } = self.run_at(gpus, at).expect("without a pool, only a run of known GPUs fails");
        let mask = self.node_mask[node.index()];
        let run = &gpus[at..at + len];
        let bad = run.iter().enumerate().find(|&(i, &g)| mask & self.bit(node, g) == 0 || run[..i].contains(&g));
        self.release_gang(&gpus[..at]);
        Err(bad.map_or(run[0], |(_, &g)| g))
    }

    /// Marks a gang's whole `gpus` taken if every one exists, is free, lies in `pool` and is
    /// listed once; otherwise takes nothing and says so (`Plan::start` then finds which rule
    /// broke, in the order it reports them). One pass: the check and the taking together.
    pub(crate) fn take_gang_in(&mut self, gpus: &[GpuId], pool: PoolId) -> bool {
        match self.take_runs(gpus, Some(pool)) {
            Ok(()) => true,
            Err(at) => {
                self.release_gang(&gpus[..at]);
                false
            }
        }
    }

    /// Takes `gpus` run by run (a run: consecutive GPUs on one node) until a run has a GPU
    /// that does not exist, is not free or is listed twice, or (given `pool`) lies on a node
    /// of another pool: `Err` with where that run starts, the runs before it still taken.
    fn take_runs(&mut self, gpus: &[GpuId], pool: Option<PoolId>) -> Result<(), usize> {
        let mut at = 0;
        while at < gpus.len() {
            let Some(run) = self.run_at(gpus, at) else { return Err(at) };
            let node = run.node.index();
            let elsewhere = pool.is_some_and(|p| self.node_pool[node] != p);
            if run.repeats || elsewhere || self.node_mask[node] & run.bits != run.bits {
                return Err(at);
            }
            self.update(run.node, |mask| mask & !run.bits, -(run.len as i32));
            at += run.len;
        }
        Ok(())
    }

    /// Marks whole `gpus` (taken, distinct) free again, one index update per node.
    pub(crate) fn release_gang(&mut self, gpus: &[GpuId]) {
        let mut at = 0;
        while let Some(run) = self.run_at(gpus, at) {
            let (node, bits) = (run.node, run.bits);
            debug_assert!(!run.repeats && self.node_mask[node.index()] & bits == 0, "{node} released twice");
            self.update(node, |mask| mask | bits, run.len as i32);
            at += run.len;
        }
    }

    /// The run of `gpus` from `at` on one node (a node may come back in a later run); `None`
    /// past the end, or when the GPU at `at` does not exist. The run ends before a GPU that
    /// does not exist.
    #[inline(always)] // a start's and an end's inner step; left out of line, 5 % more of their instructions
    fn run_at(&self, gpus: &[GpuId], at: usize) -> Option<Run> {
        let (node, on_node) = self.layout.locate(*gpus.get(at)?)?;
        let mut run = Run { node, bits: 0, len: 0, repeats: false };
        for &g in gpus[at..].iter().take_while(|g| on_node.contains(&g.0)) {
            let bit = 1u64 << (g.0 - on_node.start);
            run.repeats |= run.bits & bit != 0;
            run.bits |= bit;
            run.len += 1;
        }
        Some(run)
    }

    fn bit(&self, node: NodeId, gpu: GpuId) -> u64 {
        1u64 << (gpu.0 - self.node_first_gpu[node.index()].0)
    }

    /// Applies `change` to `node`'s mask, which frees `freed` GPUs (taking them, if negative):
    /// the caller knows how many, so that the new count is not counted again bit by bit.
    fn update(&mut self, node: NodeId, change: impl FnOnce(u64) -> u64, freed: i32) {
        let (n, pool) = (node.index(), self.node_pool[node.index()].index());
        let old_free = self.node_free[n];
        let new_free = old_free.wrapping_add_signed(freed);
        let new = change(self.node_mask[n]);
        debug_assert_eq!(new_free, new.count_ones(), "{node}: the change does not free {freed} GPUs");
        self.by_free[pool].change(node, old_free, new_free);
        self.node_mask[n] = new;
        self.node_free[n] = new_free;
        self.pool_free[pool] = self.pool_free[pool] + new_free - old_free;
        self.total_free = self.total_free + new_free - old_free;
        self.moved_on(node);
    }

    /// Recomputes the indexes from the masks and compares: the invariant check.
    pub(crate) fn check_consistent(&self) -> Result<(), String> {
        let mut pool_free = vec![0u32; self.pool_free.len()];
        for (i, &mask) in self.node_mask.iter().enumerate() {
            let node = NodeId::from_index(i);
            let pool = self.node_pool[i].index();
            let free = mask.count_ones();
            if free != self.node_free[i] {
                return Err(format!("free count of {node} disagrees with its mask"));
            }
            pool_free[pool] += free;
            if (free > 0) != self.by_free[pool].contains(free, node) {
                return Err(format!("free index of {node} disagrees with its mask"));
            }
        }
        let indexed: usize = self.by_free.iter().map(FreeLevels::len).sum();
        let nonempty = self.node_mask.iter().filter(|&&m| m != 0).count();
        if indexed != nonempty || pool_free != self.pool_free {
            return Err("per-pool free counts disagree with the node masks".into());
        }
        if pool_free.iter().sum::<u32>() != self.total_free {
            return Err("total free count disagrees with the node masks".into());
        }
        if self.by_free.iter().any(|set| Some(set.occupied) != set.occupied_levels()) {
            return Err("the free index's non-empty levels disagree with its levels".into());
        }
        for (&gpu, &used) in &self.shared_used {
            let node = self.layout.node_of(gpu);
            let pool = self.node_pool[node.index()].index();
            let offered = self.by_room[pool].contains(&(WHOLE_GPU_MILLI - used, gpu));
            if used == 0 || used > WHOLE_GPU_MILLI || offered == self.shared_out.contains(&gpu) {
                return Err(format!(
                    "shared {gpu} uses {used} milli-GPUs, or the room index disagrees with its being out of service"
                ));
            }
            if self.is_free(node, gpu) {
                return Err(format!("shared {gpu} is also free"));
            }
        }
        let offered = self.shared_used.len() - self.shared_out.len();
        if self.by_room.iter().map(BTreeSet::len).sum::<usize>() != offered
            || self.shared_out.iter().any(|g| !self.shared_used.contains_key(g))
        {
            return Err("the room index lists GPUs nobody shares, or a GPU out of service is not shared".into());
        }
        Ok(())
    }
}

/// The bit of `occupied` that stands for the level of nodes with `free` (1..=64) free GPUs.
fn occupied_bit(free: u32) -> u64 {
    debug_assert!((1..=64).contains(&free), "only nodes with 1 to 64 free GPUs are indexed");
    1 << (free - 1)
}

fn full_mask(gpus: u32) -> u64 {
    if gpus >= 64 { u64::MAX } else { (1u64 << gpus) - 1 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ClusterSpec, PoolSpec};
    use rand::RngExt;

    /// Every node of `pool` with free GPUs keyed (free, node), from each node's own count.
    fn model(free: &FreeGpus, cluster: &Cluster, pool: PoolId) -> Vec<(u32, NodeId)> {
        let mut keys: Vec<(u32, NodeId)> = cluster.pool(pool).nodes().map(|n| (free.on_node(n), n)).collect();
        keys.retain(|&(count, _)| count > 0);
        keys.sort();
        keys
    }

    /// The walks (`nodes_with_at_least`, `nodes_emptiest_first`, `nodes_in`) give the nodes
    /// in the order of their (free, node) keys, and `best_fit` and `emptiest` (direct lookups)
    /// name the first node of those walks, through random takes and releases on pools of
    /// several sizes (one past 64 nodes: two words of bits; one of 64-GPU nodes: the top level).
    #[test]
    fn lookups_and_walks_agree_with_the_nodes_own_counts() {
        let spec = ClusterSpec {
            pools: vec![
                PoolSpec::of_type("A", 3, 8),
                PoolSpec::of_type("B", 130, 4),
                PoolSpec::of_type("C", 1, 1),
                PoolSpec::of_type("D", 2, 64),
            ],
        };
        let cluster = Cluster::new(&spec).expect("valid");
        let mut free = FreeGpus::all_free(&cluster);
        let mut taken = vec![false; cluster.gpu_count() as usize];
        let mut rng = crate::rng::stream(11, "alloc-best-fit");
        for _ in 0..5_000 {
            let gpu = GpuId(rng.random_range(0..cluster.gpu_count()));
            let node = cluster.node_of(gpu);
            let was_taken = taken[gpu.index()];
            taken[gpu.index()] = !was_taken;
            if was_taken {
                free.release(node, gpu);
            } else {
                free.take(node, gpu);
            }
            free.check_consistent().expect("the indexes agree with the masks");
            for p in cluster.pools() {
                for at_least in 0..=9 {
                    let walked = free.nodes_with_at_least(p.id, at_least.max(1)).next().map(|(n, _)| n);
                    assert_eq!(free.best_fit(p.id, at_least), walked, "pool {}, at least {at_least}", p.name);
                }
                assert_eq!(free.emptiest(p.id), free.nodes_emptiest_first(p.id).next().map(|(n, _)| n));
                for (count, node) in free.nodes_emptiest_first(p.id).map(|(n, c)| (c, n)) {
                    for at_least in 0..=count + 1 {
                        let fewer = free.nodes_in(p.id, (at_least, NodeId(0))..(count, NodeId(0)));
                        let later = free.nodes_in(p.id, (count, NodeId(node.0 + 1))..(count + 1, NodeId(0)));
                        let walked = if at_least > count { None } else { fewer.chain(later).next().map(|(n, _)| n) };
                        let found = free.best_fit_not_reached(p.id, at_least, (count, node));
                        assert_eq!(found, walked, "pool {}, at least {at_least}, reached {node} with {count}", p.name);
                    }
                }
                let keys = model(&free, &cluster, p.id);
                let walked: Vec<(u32, NodeId)> = free.nodes_with_at_least(p.id, 1).map(|(n, c)| (c, n)).collect();
                assert_eq!(walked, keys);
                let mut emptiest_first = keys.clone();
                emptiest_first.sort_by_key(|&(count, node)| (std::cmp::Reverse(count), node));
                let walked: Vec<(u32, NodeId)> = free.nodes_emptiest_first(p.id).map(|(n, c)| (c, n)).collect();
                assert_eq!(walked, emptiest_first);
                let Some((&from, &to)) = keys.get(keys.len() / 3).zip(keys.get(keys.len() * 2 / 3)) else {
                    continue; // no node of the pool has a free GPU
                };
                let within: Vec<(u32, NodeId)> = keys.iter().copied().filter(|&k| k >= from && k < to).collect();
                let walked: Vec<(u32, NodeId)> = free.nodes_in(p.id, from..to).map(|(n, c)| (c, n)).collect();
                assert_eq!(walked, within, "pool {}, {from:?}..{to:?}", p.name);
            }
        }
    }

    /// Every kind of change to what is free moves the generation on, each to a value not seen
    /// before (a policy that remembered a task that found no room looks again after any of
    /// them); looking changes nothing.
    #[test]
    fn every_change_to_what_is_free_moves_the_generation_on() {
        let cluster = Cluster::new(&ClusterSpec { pools: vec![PoolSpec::of_type("A", 2, 2)] }).expect("valid");
        let mut free = FreeGpus::all_free(&cluster);
        let mut seen = vec![free.generation()];
        let mut moved_on = |free: &FreeGpus, change: &str| {
            assert!(!seen.contains(&free.generation()), "{change} left the generation at one seen before");
            seen.push(free.generation());
        };
        let (g0, g1, g2) = (GpuId(0), GpuId(1), GpuId(2));
        free.take(cluster.node_of(g0), g0);
        moved_on(&free, "take");
        free.release(cluster.node_of(g0), g0);
        moved_on(&free, "release");
        free.take_gang(&[g0, g1]).expect("free");
        moved_on(&free, "take_gang");
        free.release_gang(&[g0, g1]);
        moved_on(&free, "release_gang");
        free.take_share(g2, 300);
        moved_on(&free, "take_share of a free GPU");
        free.take_share(g2, 300);
        moved_on(&free, "take_share of a shared GPU");
        free.release_share(g2, 300, true);
        moved_on(&free, "release_share leaving a share");
        free.set_shared_usable(g2, false);
        moved_on(&free, "a shared GPU out of service");
        free.set_shared_usable(g2, true);
        moved_on(&free, "a shared GPU back in service");
        let before = free.generation();
        let _ = (free.best_fit(PoolId(0), 1), free.can_share(g2, 100), free.shared_room(g2), free.total());
        assert_eq!(free.generation(), before, "looking");
        free.release_share(g2, 300, true);
        moved_on(&free, "release_share of the last share");
    }

    /// `changed_since` names every node whose free GPUs changed since a generation it still
    /// remembers (here the log wraps round several times), and refuses one it has let go of.
    #[test]
    fn changed_since_names_every_node_that_changed() {
        let cluster = Cluster::new(&ClusterSpec { pools: vec![PoolSpec::of_type("A", 12, 4)] }).expect("valid");
        let mut free = FreeGpus::all_free(&cluster);
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |bound: u64| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state % bound
        };
        let counts = |free: &FreeGpus| (0..12).map(|n| free.on_node(NodeId(n))).collect::<Vec<u32>>();
        let mut marks: Vec<(u64, Vec<u32>)> = vec![(free.generation(), counts(&free))];
        for step in 0..60_000 {
            let gpu = GpuId(next(48) as u32);
            let node = cluster.node_of(gpu);
            if free.is_free(node, gpu) {
                free.take(node, gpu);
            } else {
                free.release(node, gpu);
            }
            if step % 997 == 0 {
                marks.push((free.generation(), counts(&free)));
            }
            if step % 1_499 == 0 {
                let now = counts(&free);
                for (generation, then) in &marks {
                    let Some(changed) = free.changed_since(*generation) else {
                        assert!(free.generation() - generation > (LOG_KEEP / 2) as u64, "{generation} let go too soon");
                        continue;
                    };
                    assert_eq!(changed.len() as u64, free.generation() - generation);
                    for n in (0..12).filter(|&n| now[n] != then[n]) {
                        assert!(changed.contains(&NodeId(n as u32)), "node {n} changed since {generation}");
                    }
                }
            }
        }
        assert!(free.changed_since(0).is_none(), "the log wrapped round");
        assert_eq!(free.changed_since(free.generation()), Some(&[][..]));
    }

    /// One step of the gang proptest: take a gang (GPU ids, some past the cluster's, in a
    /// pool), or release a gang taken earlier.
    #[derive(Debug, Clone)]
    enum GangStep {
        Take(Vec<u32>, u32),
        Release(usize),
    }

    fn gang_step() -> impl proptest::strategy::Strategy<Value = GangStep> {
        use proptest::prelude::*;
        prop_oneof![
            3 => (proptest::collection::vec(0..30u32, 1..7), 0..2u32).prop_map(|(gpus, pool)| GangStep::Take(gpus, pool)),
            1 => (0..8usize).prop_map(GangStep::Release),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { failure_persistence: None, ..proptest::prelude::ProptestConfig::default() })]

        /// `take_gang_in` takes a gang exactly when a plain check says every GPU exists, is
        /// free, lies in the pool and is listed once, and then takes just those; otherwise it
        /// changes nothing. `take_gang` agrees on gangs of known GPUs, and names the GPU its
        /// doc promises. Pools of 4x4 and 2x6 GPUs (28 GPUs: ids up to 29 include unknown ones).
        #[test]
        fn take_gang_in_agrees_with_a_plain_check(steps in proptest::collection::vec(gang_step(), 1..40)) {
            let spec = ClusterSpec { pools: vec![PoolSpec::of_type("A", 4, 4), PoolSpec::of_type("B", 2, 6)] };
            let cluster = Cluster::new(&spec).expect("valid");
            let mut free = FreeGpus::all_free(&cluster);
            let mut taken = vec![false; cluster.gpu_count() as usize];
            let mut gangs: Vec<Vec<GpuId>> = Vec::new();
            for step in steps {
                match step {
                    GangStep::Take(ids, pool) => {
                        let gpus: Vec<GpuId> = ids.iter().map(|&g| GpuId(g)).collect();
                        let pool = PoolId(pool);
                        let distinct = gpus.iter().enumerate().all(|(i, g)| !gpus[..i].contains(g));
                        let known = gpus.iter().all(|g| g.0 < cluster.gpu_count());
                        let allowed = known
                            && distinct
                            && gpus.iter().all(|&g| !taken[g.index()] && cluster.pool_of(g) == pool);
                        let before = free.clone();
                        proptest::prop_assert_eq!(free.take_gang_in(&gpus, pool), allowed, "{:?} in {}", gpus, pool);
                        if allowed {
                            gpus.iter().for_each(|g| taken[g.index()] = true);
                            gangs.push(gpus);
                        } else {
                            proptest::prop_assert_eq!(&free.node_mask, &before.node_mask);
                            if known {
                                let first_bad = gpus
                                    .iter()
                                    .enumerate()
                                    .find(|&(i, g)| taken[g.index()] || gpus[..i].contains(g))
                                    .map(|(_, &g)| g);
                                match first_bad {
                                    // `take_gang` ignores pools: the gang would be taken.
                                    None => proptest::prop_assert_eq!(free.take_gang(&gpus), Ok(())),
                                    Some(bad) => {
                                        let refused = free.take_gang(&gpus).expect_err("a GPU is not free");
                                        let listed = gpus.iter().filter(|&&g| g == refused).count();
                                        proptest::prop_assert!(taken[refused.index()] || listed > 1, "{} for {}", refused, bad);
                                        proptest::prop_assert_eq!(&free.node_mask, &before.node_mask);
                                    }
                                }
                                if first_bad.is_none() {
                                    free.release_gang(&gpus);
                                }
                            }
                        }
                    }
                    GangStep::Release(i) if i < gangs.len() => {
                        let gang = gangs.remove(i);
                        free.release_gang(&gang);
                        gang.iter().for_each(|g| taken[g.index()] = false);
                    }
                    GangStep::Release(_) => {}
                }
                free.check_consistent().map_err(proptest::test_runner::TestCaseError::fail)?;
                for g in 0..cluster.gpu_count() {
                    let gpu = GpuId(g);
                    proptest::prop_assert_eq!(free.is_free(cluster.node_of(gpu), gpu), !taken[gpu.index()]);
                }
            }
        }
    }
}
