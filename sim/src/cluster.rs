//! The cluster model: pools of identical nodes, each node with a fixed number of GPUs of the
//! pool's type, nodes grouped into racks. Built once from a [`ClusterSpec`] and then immutable;
//! what changes at run time (which GPU is free) lives in [`crate::alloc::FreeGpus`].

use crate::gpu_layout::GpuLayout;
use crate::ids::{GpuId, NodeId, PoolId};
use std::fmt;

/// The most GPUs one node may carry: a node's free GPUs are kept in one `u64` bit mask.
pub const MAX_GPUS_PER_NODE: u32 = 64;
/// The most pools a cluster may have: a task's eligible pools are kept in one `u64` bit mask.
pub const MAX_POOLS: usize = 64;

/// One pool as the user describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PoolSpec {
    /// A name unique within the cluster (defaults to the GPU type in the shorthand).
    pub name: String,
    /// The GPU type, e.g. `V100`; a task that names a type runs only in pools of that type.
    pub gpu_type: String,
    pub nodes: u32,
    pub gpus_per_node: u32,
    /// Nodes per rack; `0` means the whole pool is one rack.
    pub nodes_per_rack: u32,
    /// How fast its GPUs run a task's work, in thousandths of the reference type's speed
    /// (1000: work takes its stated duration; 2000: half of it). At least 1.
    pub speed_milli: u32,
}

impl PoolSpec {
    /// `nodes` nodes of `gpus_per_node` GPUs of type `gpu_type`, the pool named after it, one
    /// rack, at the reference speed: what the shorthand `NxG:TYPE` describes.
    pub fn of_type(gpu_type: &str, nodes: u32, gpus_per_node: u32) -> PoolSpec {
        let (name, gpu_type) = (gpu_type.to_owned(), gpu_type.to_owned());
        PoolSpec { name, gpu_type, nodes, gpus_per_node, nodes_per_rack: 0, speed_milli: 1000 }
    }
}

/// A whole cluster as the user describes it: pools in a stated order (the order fixes node ids).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ClusterSpec {
    pub pools: Vec<PoolSpec>,
}

/// Why a cluster spec cannot be built.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterError(pub String);

impl fmt::Display for ClusterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ClusterError {}

#[derive(Debug, Clone)]
pub struct Pool {
    pub id: PoolId,
    pub name: String,
    pub gpu_type: String,
    pub gpus_per_node: u32,
    /// Speed relative to the reference GPU type, in thousandths (see `PoolSpec`).
    pub speed_milli: u32,
    /// Nodes of this pool, contiguous ids.
    pub first_node: NodeId,
    pub node_count: u32,
}

impl Pool {
    pub fn nodes(&self) -> impl Iterator<Item = NodeId> + '_ {
        (self.first_node.0..self.first_node.0 + self.node_count).map(NodeId)
    }
    pub fn gpu_count(&self) -> u32 {
        self.gpus_per_node * self.node_count
    }
}

#[derive(Debug, Clone)]
pub struct Node {
    pub id: NodeId,
    pub pool: PoolId,
    pub rack: u32,
    /// GPUs of this node, contiguous ids starting here.
    pub first_gpu: GpuId,
    pub gpu_count: u32,
}

impl Node {
    pub fn gpus(&self) -> impl Iterator<Item = GpuId> + '_ {
        (self.first_gpu.0..self.first_gpu.0 + self.gpu_count).map(GpuId)
    }
    /// The GPU at `slot` (0-based position within the node).
    pub fn gpu_at(&self, slot: u32) -> GpuId {
        debug_assert!(slot < self.gpu_count);
        GpuId(self.first_gpu.0 + slot)
    }
}

/// The built, immutable cluster.
#[derive(Debug, Clone)]
pub struct Cluster {
    pools: Vec<Pool>,
    nodes: Vec<Node>,
    /// Which node holds each GPU.
    layout: GpuLayout,
}

impl Cluster {
    pub fn new(spec: &ClusterSpec) -> Result<Cluster, ClusterError> {
        if spec.pools.is_empty() {
            return Err(ClusterError("a cluster needs at least one pool".into()));
        }
        if spec.pools.len() > MAX_POOLS {
            return Err(ClusterError(format!(
                "a cluster may have at most {MAX_POOLS} pools, got {}",
                spec.pools.len()
            )));
        }
        let mut pools = Vec::with_capacity(spec.pools.len());
        let mut nodes = Vec::new();
        let mut gpus = 0u32;
        let mut rack_base = 0u32;
        for (index, p) in spec.pools.iter().enumerate() {
            if p.name.is_empty() || p.gpu_type.is_empty() {
                return Err(ClusterError(format!("pool {index}: name and GPU type must not be empty")));
            }
            if spec.pools[..index].iter().any(|q| q.name == p.name) {
                return Err(ClusterError(format!("pool name `{}` appears twice; give each pool its own name", p.name)));
            }
            if p.nodes == 0 {
                return Err(ClusterError(format!("pool `{}`: nodes must be at least 1", p.name)));
            }
            if p.gpus_per_node == 0 || p.gpus_per_node > MAX_GPUS_PER_NODE {
                return Err(ClusterError(format!(
                    "pool `{}`: GPUs per node must be 1..={MAX_GPUS_PER_NODE}, got {}",
                    p.name, p.gpus_per_node
                )));
            }
            if p.speed_milli == 0 {
                return Err(ClusterError(format!("pool `{}`: speed must be above 0", p.name)));
            }
            let id = PoolId::from_index(index);
            let first_node = NodeId::from_index(nodes.len());
            let per_rack = if p.nodes_per_rack == 0 { p.nodes } else { p.nodes_per_rack };
            // GPU ids are 32 bits: checked before a node is made, so too large a cluster is
            // refused at once, not after gigabytes of nodes.
            let pool_first_gpu = gpus;
            gpus = p.nodes.checked_mul(p.gpus_per_node).and_then(|g| gpus.checked_add(g)).ok_or_else(|| {
                ClusterError(format!("pool `{}`: the cluster would have more than {} GPUs", p.name, u32::MAX))
            })?;
            for n in 0..p.nodes {
                nodes.push(Node {
                    id: NodeId::from_index(nodes.len()),
                    pool: id,
                    rack: rack_base + n / per_rack,
                    first_gpu: GpuId(pool_first_gpu + n * p.gpus_per_node),
                    gpu_count: p.gpus_per_node,
                });
            }
            rack_base += p.nodes.div_ceil(per_rack);
            pools.push(Pool {
                id,
                name: p.name.clone(),
                gpu_type: p.gpu_type.clone(),
                speed_milli: p.speed_milli,
                gpus_per_node: p.gpus_per_node,
                first_node,
                node_count: p.nodes,
            });
        }
        let layout = GpuLayout::new(pools.iter().map(|p: &Pool| (p.node_count, p.gpus_per_node)));
        Ok(Cluster { pools, nodes, layout })
    }

    pub fn pools(&self) -> &[Pool] {
        &self.pools
    }
    pub fn pool(&self, id: PoolId) -> &Pool {
        &self.pools[id.index()]
    }
    pub fn nodes(&self) -> &[Node] {
        &self.nodes
    }
    pub fn node(&self, id: NodeId) -> &Node {
        &self.nodes[id.index()]
    }
    pub fn gpu_count(&self) -> u32 {
        self.layout.gpu_count()
    }
    pub fn node_of(&self, gpu: GpuId) -> NodeId {
        self.layout.node_of(gpu)
    }
    /// Which node holds each GPU (what the free index and the health record look GPUs up by).
    pub fn layout(&self) -> &GpuLayout {
        &self.layout
    }
    /// Whether every node `gpus` use holds exactly `per_node` of them (all on one node when
    /// `per_node` is their number). Allocates only for a gang over several nodes.
    pub fn splits_as(&self, gpus: &[GpuId], per_node: u32) -> bool {
        let Some(&first) = gpus.first() else { return true };
        if per_node as usize >= gpus.len() {
            let node = self.node_of(first);
            return per_node as usize == gpus.len() && gpus.iter().all(|&g| self.node_of(g) == node);
        }
        let mut on_node: std::collections::BTreeMap<NodeId, u32> = std::collections::BTreeMap::new();
        for &gpu in gpus {
            *on_node.entry(self.node_of(gpu)).or_default() += 1;
        }
        on_node.values().all(|&n| n == per_node)
    }
    pub fn pool_of(&self, gpu: GpuId) -> PoolId {
        self.layout.pool_of(gpu)
    }
    /// Why `task` can never run in `pools` (its eligible pools), with `spare_nodes` of each
    /// pool kept in reserve, if it cannot: a GPU type none of them has, or more GPUs than the
    /// largest has in service (on one node, for a single-node task; as many nodes as it needs
    /// with its GPUs per node on each, for a task that fixes them). The reason in words.
    pub fn never_fits(&self, task: &crate::TaskSpec, pools: PoolMask, spare_nodes: u32) -> Option<String> {
        if pools.is_empty() {
            let types: Vec<&str> = self.pools.iter().map(|p| p.gpu_type.as_str()).collect();
            return Some(format!(
                "task `{}` asks for GPU type `{}`, which the cluster does not have (it has {})",
                task.name,
                task.gpu_type.as_deref().unwrap_or(""),
                types.join(", ")
            ));
        }
        let per_node = task.gpus_per_node.map(std::num::NonZeroU32::get).filter(|_| !task.single_node);
        let (limit, limit_pool, node_gpus) = pools
            .iter()
            .map(|p| {
                let pool = self.pool(p);
                // Hot spares never run work of their own: they only stand in for dead nodes.
                let in_service = pool.gpu_count() - spare_nodes * pool.gpus_per_node;
                let cap = match per_node {
                    _ if task.single_node => pool.gpus_per_node,
                    Some(n) if n > pool.gpus_per_node => 0,
                    Some(n) => in_service / pool.gpus_per_node * n,
                    None => in_service,
                };
                (cap, pool.name.as_str(), pool.gpus_per_node)
            })
            .max_by_key(|&(cap, _, _)| cap)?;
        if task.gpus <= limit {
            return None;
        }
        let scope = match (task.single_node, per_node, spare_nodes) {
            (true, _, _) => " on one node; the largest node of".to_owned(),
            (false, Some(n), 0) => format!(", {n} on each node it uses; taken so, the most"),
            (false, Some(n), _) => {
                format!(", {n} on each node it uses; taken so, with its spare nodes aside, the most")
            }
            (false, None, 0) => "; the largest".to_owned(),
            (false, None, _) => "; with its spare nodes aside, the largest".to_owned(),
        };
        // A split no node can hold says how large the nodes are.
        let nodes = match per_node {
            Some(n) if n > node_gpus => format!(" (its nodes have {node_gpus} GPUs)"),
            _ => String::new(),
        };
        Some(format!(
            "task `{}` asks for {} GPUs{scope} an eligible pool (`{limit_pool}`) has {limit}{nodes}",
            task.name, task.gpus
        ))
    }

    /// Pools a task may run in: those of its GPU type (compared case-insensitively), or all
    /// pools when it names none.
    pub fn eligible_pools(&self, gpu_type: Option<&str>) -> PoolMask {
        let mut mask = PoolMask::EMPTY;
        for p in &self.pools {
            if gpu_type.is_none_or(|t| p.gpu_type.eq_ignore_ascii_case(t)) {
                mask = mask.with(p.id);
            }
        }
        mask
    }
}

/// A set of pools as a bit mask (at most [`MAX_POOLS`]); iteration is in pool id order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct PoolMask(pub u64);

impl PoolMask {
    pub const EMPTY: PoolMask = PoolMask(0);

    pub fn with(self, pool: PoolId) -> PoolMask {
        PoolMask(self.0 | (1u64 << pool.0))
    }
    /// The pools in both masks (a task's eligible pools within its queue's).
    pub fn and(self, other: PoolMask) -> PoolMask {
        PoolMask(self.0 & other.0)
    }
    pub fn contains(self, pool: PoolId) -> bool {
        pool.0 < 64 && self.0 & (1u64 << pool.0) != 0
    }
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }
    pub fn iter(self) -> impl Iterator<Item = PoolId> {
        let mut rest = self.0;
        std::iter::from_fn(move || {
            if rest == 0 {
                return None;
            }
            let pool = rest.trailing_zeros();
            rest &= rest - 1;
            Some(PoolId(pool))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cluster_past_32_bit_gpu_ids_is_refused_before_its_nodes_are_made() {
        let spec = |pools: &[(u32, u32)]| ClusterSpec {
            pools: pools.iter().enumerate().map(|(i, &(n, g))| PoolSpec::of_type(&format!("T{i}"), n, g)).collect(),
        };
        // 2^26 nodes of 64 GPUs: 2^32 GPUs, one past the last id.
        let error = Cluster::new(&spec(&[(1 << 26, 64)])).expect_err("2^32 GPUs");
        assert!(error.0.contains("pool `T0`") && error.0.contains("more than 4294967295 GPUs"), "{}", error.0);
        let error = Cluster::new(&spec(&[(2, 8), (1 << 26, 64)])).expect_err("2^32 + 16 GPUs");
        assert!(error.0.contains("pool `T1`"), "{}", error.0);
        let cluster = Cluster::new(&spec(&[(3, 8), (2, 6)])).expect("a small cluster");
        let firsts: Vec<u32> = cluster.nodes().iter().map(|n| n.first_gpu.0).collect();
        assert_eq!(firsts, [0, 8, 16, 24, 30]);
        assert_eq!(cluster.gpu_count(), 36);
    }
}
