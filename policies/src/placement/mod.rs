//! Placement: which GPUs a gang gets. Pure functions of the task's shape and the free-GPU index,
//! so policies reuse them on what is free now and (backfill) on projections.
//!
//! A gang always lies inside one pool (one GPU type). A task that fits on one node gets one
//! node; a larger task (or one whose single-node placement is impossible right now, when it
//! allows spanning) takes the emptiest nodes first, which uses the fewest nodes, and its last
//! piece goes to the fullest node that can hold it.

mod pack;
mod spread;

use sim::{Cluster, FreeGpus, GpuId, PoolId, PoolMask, TaskState};
use std::fmt;
use std::str::FromStr;

/// The part of a task that placement looks at. Tasks of one shape fit or not together.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Shape {
    pub gpus: u32,
    pub pools: PoolMask,
    pub single_node: bool,
}

impl Shape {
    pub fn of(task: &TaskState) -> Shape {
        Shape { gpus: task.gpus, pools: task.pools, single_node: task.single_node }
    }

    /// Whether `pool` can host this shape with the GPUs free now.
    pub fn fits_in(self, pool: PoolId, free: &FreeGpus) -> bool {
        if self.single_node { free.max_on_one_node(pool) >= self.gpus } else { free.in_pool(pool) >= self.gpus }
    }

    /// Whether some eligible pool can host this shape now.
    pub fn fits(self, free: &FreeGpus) -> bool {
        self.pools.iter().any(|p| self.fits_in(p, free))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Placement {
    /// Consolidate: the fewest nodes, fullest node first (best fit). The default.
    #[default]
    Pack,
    /// Spread load: a gang that fits on one node goes to the emptiest node, in the pool with
    /// the most free GPUs (worst fit).
    Spread,
}

impl Placement {
    pub const NAMES: &'static [&'static str] = &["pack", "spread"];

    /// GPUs for a task of `shape`, or `None` when it does not fit now. Ties break by pool id,
    /// then node id, then GPU slot, so the answer is a function of the free set alone.
    pub fn place(self, shape: Shape, free: &FreeGpus, cluster: &Cluster) -> Option<Vec<GpuId>> {
        match self {
            Placement::Pack => pack::place(shape, free, cluster),
            Placement::Spread => spread::place(shape, free, cluster),
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Placement::Pack => "pack",
            Placement::Spread => "spread",
        }
    }
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for Placement {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "pack" => Ok(Placement::Pack),
            "spread" => Ok(Placement::Spread),
            _ => Err(format!("expected one of {}", Placement::NAMES.join("|"))),
        }
    }
}

/// Takes `gpus` GPUs from `pool`: one node when one node can hold them (chosen by
/// `pick_single`), else the emptiest nodes first with the last piece on the fullest node that
/// holds it. `None` when the pool cannot host the shape now.
fn take_from_pool(
    shape: Shape,
    pool: PoolId,
    free: &FreeGpus,
    pick_single: impl Fn(PoolId, u32) -> Option<sim::NodeId>,
) -> Option<Vec<GpuId>> {
    if !shape.fits_in(pool, free) {
        return None;
    }
    let mut gpus = Vec::with_capacity(shape.gpus as usize);
    if let Some(node) = pick_single(pool, shape.gpus) {
        free.take_from(node, shape.gpus, &mut gpus);
        return Some(gpus);
    }
    debug_assert!(!shape.single_node, "fits_in promised a single node");
    // Emptiest nodes first: the fewest nodes for the gang.
    // `free` is not changed as we go, so nodes already used are skipped by hand.
    let mut emptiest_first = free.nodes_emptiest_first(pool);
    let mut used = Vec::new();
    let mut left = shape.gpus;
    while left > 0 {
        let last_piece = free.nodes_with_at_least(pool, left).find(|(n, _)| !used.contains(n));
        if let Some((node, _)) = last_piece {
            free.take_from(node, left, &mut gpus);
            break;
        }
        let (node, count) = emptiest_first.next()?;
        free.take_from(node, count, &mut gpus);
        used.push(node);
        left -= count;
    }
    Some(gpus)
}

/// Nodes a multi-node gang of `gpus` would span in `pool` (1 when one node holds it).
fn nodes_needed(pool: PoolId, gpus: u32, free: &FreeGpus) -> u32 {
    let mut left = gpus;
    let mut nodes = 0;
    for (_, count) in free.nodes_emptiest_first(pool) {
        nodes += 1;
        if count >= left {
            break;
        }
        left -= count;
    }
    nodes
}
