//! Which node holds a GPU, by arithmetic rather than a table. A cluster numbers its nodes pool
//! by pool and its GPUs node by node, and every node of a pool has the pool's GPU count, so a
//! GPU's node is its pool's first node plus its offset in the pool divided by that count.
//!
//! Why not a table of 4 bytes a GPU: at 100,000 GPUs the cluster, the free index and the health
//! record each kept one (400 KB apiece), and the GPU a start or an end looks up is a random
//! one, so each lookup was a cache miss (perf put half of `Plan::start_part`'s samples on
//! it). The pools' ranges are a few dozen bytes, always in the cache.

use crate::ids::{GpuId, NodeId, PoolId};
use std::ops::Range;

/// The GPU ranges of a cluster's pools, in pool (and so GPU) order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GpuLayout {
    pools: Box<[PoolRange]>,
    gpus: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct PoolRange {
    first_gpu: u32,
    first_node: u32,
    gpus_per_node: u32,
    /// `gpus_per_node`'s base-2 logarithm when it is a power of two (a shift, not a division,
    /// for the common nodes of 1, 2, 4 or 8 GPUs); `None` otherwise.
    shift: Option<u32>,
}

impl GpuLayout {
    /// The layout of pools of `(nodes, gpus_per_node)`, in order; every count at least 1.
    pub(crate) fn new(pools: impl IntoIterator<Item = (u32, u32)>) -> GpuLayout {
        let (mut first_gpu, mut first_node) = (0u32, 0u32);
        let mut ranges = Vec::new();
        for (nodes, gpus_per_node) in pools {
            debug_assert!(nodes > 0 && gpus_per_node > 0, "a pool has nodes, a node GPUs");
            let shift = gpus_per_node.is_power_of_two().then(|| gpus_per_node.trailing_zeros());
            ranges.push(PoolRange { first_gpu, first_node, gpus_per_node, shift });
            first_gpu += nodes * gpus_per_node;
            first_node += nodes;
        }
        GpuLayout { pools: ranges.into(), gpus: first_gpu }
    }

    /// GPUs in the cluster.
    pub fn gpu_count(&self) -> u32 {
        self.gpus
    }

    /// The node that holds `gpu`, or `None` past the cluster's last GPU.
    #[inline]
    pub fn get(&self, gpu: GpuId) -> Option<NodeId> {
        self.locate(gpu).map(|(node, _)| node)
    }

    /// The node that holds `gpu` and that node's GPU ids, or `None` past the cluster's last
    /// GPU: which of a gang's GPUs share a node is then a comparison each.
    #[inline]
    pub fn locate(&self, gpu: GpuId) -> Option<(NodeId, Range<u32>)> {
        let pool = &self.pools[self.pool_index(gpu)?];
        let offset = gpu.0 - pool.first_gpu;
        let node = match pool.shift {
            Some(shift) => offset >> shift,
            None => offset / pool.gpus_per_node,
        };
        let first = pool.first_gpu + node * pool.gpus_per_node;
        Some((NodeId(pool.first_node + node), first..first + pool.gpus_per_node))
    }

    /// The pool that holds `gpu`, which must be one of the cluster's.
    #[inline]
    pub fn pool_of(&self, gpu: GpuId) -> PoolId {
        match self.pool_index(gpu) {
            Some(pool) => PoolId::from_index(pool),
            None => self.past_the_end(gpu),
        }
    }

    /// The index of the pool that holds `gpu`, `None` past the last GPU.
    #[inline]
    fn pool_index(&self, gpu: GpuId) -> Option<usize> {
        if gpu.0 >= self.gpus {
            return None;
        }
        // Most clusters have one pool; a few have dozens: the last range starting at or
        // before the GPU is its pool's.
        Some(match self.pools.len() {
            1 => 0,
            _ => self.pools.partition_point(|p| p.first_gpu <= gpu.0) - 1,
        })
    }

    #[cold]
    fn past_the_end(&self, gpu: GpuId) -> ! {
        panic!("{gpu} is past the cluster's {} GPUs", self.gpus)
    }

    /// The node that holds `gpu`, which must be one of the cluster's (a GPU past the last
    /// panics, as indexing past a list does).
    #[inline]
    pub fn node_of(&self, gpu: GpuId) -> NodeId {
        match self.get(gpu) {
            Some(node) => node,
            None => self.past_the_end(gpu),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The table the layout replaced: each GPU's node and pool, written out node by node.
    fn table(pools: &[(u32, u32)]) -> Vec<(NodeId, PoolId)> {
        let mut nodes = 0;
        let mut table = Vec::new();
        for (pool, &(count, per_node)) in pools.iter().enumerate() {
            for _ in 0..count {
                table.extend(std::iter::repeat_n((NodeId(nodes), PoolId::from_index(pool)), per_node as usize));
                nodes += 1;
            }
        }
        table
    }

    #[test]
    fn every_gpu_is_on_the_node_the_table_said_and_none_is_past_the_end() {
        let shapes: [&[(u32, u32)]; 5] = [
            &[(1, 1)],
            &[(3, 8)],
            &[(2, 6), (1, 1), (4, 8), (3, 3), (1, 64)],
            &[(5, 7), (2, 16)],
            &[(1, 64), (1, 63), (2, 2)],
        ];
        for pools in shapes {
            let layout = GpuLayout::new(pools.iter().copied());
            let table = table(pools);
            assert_eq!(layout.gpu_count() as usize, table.len(), "{pools:?}");
            for (gpu, &(node, pool)) in table.iter().enumerate() {
                assert_eq!(layout.node_of(GpuId::from_index(gpu)), node, "GPU {gpu} of {pools:?}");
                assert_eq!(layout.pool_of(GpuId::from_index(gpu)), pool, "GPU {gpu} of {pools:?}");
                let on_node: Vec<usize> = (0..table.len()).filter(|&g| table[g].0 == node).collect();
                let (_, range) = layout.locate(GpuId::from_index(gpu)).expect("a GPU of the cluster");
                assert_eq!(range.map(|g| g as usize).collect::<Vec<_>>(), on_node, "GPU {gpu} of {pools:?}");
            }
            assert_eq!(layout.get(GpuId::from_index(table.len())), None, "{pools:?}");
            assert_eq!(layout.get(GpuId(u32::MAX)), None, "{pools:?}");
        }
    }

    #[test]
    #[should_panic(expected = "past the cluster's 16 GPUs")]
    fn a_gpu_past_the_end_has_no_node() {
        GpuLayout::new([(2, 8)]).node_of(GpuId(16));
    }
}
