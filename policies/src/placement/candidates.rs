//! The free GPUs a placement may choose from: all of them, or all but those on nodes to avoid
//! (nodes with a recent failure). Placement algorithms read the free set only through this, so
//! avoiding nodes is one filter, not a second copy of each algorithm. The avoided set is small
//! (recent failures), so filtering costs O(avoided) per query.

use sim::{FreeGpus, GpuId, NodeId, PoolId};
use std::collections::BTreeSet;

pub(crate) struct Candidates<'a> {
    pub(crate) free: &'a FreeGpus,
    pub(crate) avoid: &'a BTreeSet<NodeId>,
}

impl Candidates<'_> {
    fn allowed(&self, node: NodeId) -> bool {
        !self.avoid.contains(&node)
    }
    pub(crate) fn in_pool(&self, pool: PoolId) -> u32 {
        if self.avoid.is_empty() {
            return self.free.in_pool(pool);
        }
        let avoided: u32 =
            self.avoid.iter().filter(|&&n| self.free.pool_of_node(n) == pool).map(|&n| self.free.on_node(n)).sum();
        self.free.in_pool(pool) - avoided
    }
    pub(crate) fn on_node(&self, node: NodeId) -> u32 {
        self.free.on_node(node)
    }
    /// Nodes with at least `at_least` free GPUs, fullest first, ties by node id.
    pub(crate) fn nodes_with_at_least(&self, pool: PoolId, at_least: u32) -> impl Iterator<Item = (NodeId, u32)> + '_ {
        self.free.nodes_with_at_least(pool, at_least).filter(|&(n, _)| self.allowed(n))
    }
    /// The fullest allowed node with `at_least` free GPUs that a walk of
    /// [`Self::nodes_emptiest_first`] has not reached: it has yielded every node up to
    /// `reached` (its free count and id), and those come first in its order (more free GPUs, or
    /// as many and a lower id). Nothing avoided: the free set's direct lookup; else two range
    /// lookups, whatever the walk's length.
    #[inline]
    pub(crate) fn best_fit_not_reached(&self, pool: PoolId, at_least: u32, reached: (u32, NodeId)) -> Option<NodeId> {
        if self.avoid.is_empty() {
            return self.free.best_fit_not_reached(pool, at_least, reached);
        }
        let (count, node) = reached;
        if at_least > count {
            return None; // every node with that many free GPUs was reached
        }
        let fewer = self.free.nodes_in(pool, (at_least, NodeId(0))..(count, NodeId(0)));
        let later = self.free.nodes_in(pool, (count, NodeId(node.0 + 1))..(count + 1, NodeId(0)));
        fewer.chain(later).find(|&(n, _)| self.allowed(n)).map(|(n, _)| n)
    }
    /// Nodes with free GPUs, emptiest first, ties by node id.
    pub(crate) fn nodes_emptiest_first(&self, pool: PoolId) -> impl Iterator<Item = (NodeId, u32)> + '_ {
        self.free.nodes_emptiest_first(pool).filter(|&(n, _)| self.allowed(n))
    }
    /// The fullest node that still has `at_least` free GPUs (best fit). Nothing avoided (the
    /// common case): the free set's direct lookup, not a walk.
    #[inline]
    pub(crate) fn best_fit(&self, pool: PoolId, at_least: u32) -> Option<NodeId> {
        if self.avoid.is_empty() {
            return self.free.best_fit(pool, at_least);
        }
        self.nodes_with_at_least(pool, at_least).next().map(|(n, _)| n)
    }
    /// The node with the most free GPUs (worst fit).
    pub(crate) fn emptiest(&self, pool: PoolId) -> Option<NodeId> {
        if self.avoid.is_empty() {
            return self.free.emptiest(pool);
        }
        self.nodes_emptiest_first(pool).next().map(|(n, _)| n)
    }
    pub(crate) fn max_on_one_node(&self, pool: PoolId) -> u32 {
        if self.avoid.is_empty() {
            return self.free.max_on_one_node(pool);
        }
        self.nodes_emptiest_first(pool).next().map_or(0, |(_, free)| free)
    }
    /// Shared GPUs of `pool` with at least `milli` room, least room first, ties by GPU id.
    pub(crate) fn shared_with_room(
        &self,
        pool: PoolId,
        milli: u32,
    ) -> impl DoubleEndedIterator<Item = (GpuId, u32)> + '_ {
        self.free.shared_with_room(pool, milli).filter(|&(g, _)| self.allowed(self.free.node_of(g)))
    }
    #[inline]
    pub(crate) fn take_from(&self, node: NodeId, count: u32, out: &mut super::GpuList) {
        self.free.take_from(node, count, out);
    }
}
