//! `pack`: consolidate. Among the pools that can host the gang, the one where it spans the
//! fewest nodes, then where its node is fullest (best fit), then the lowest pool id. Keeps
//! whole nodes free for the big gangs that need them. A gang that fixes its GPUs per node
//! takes the fullest nodes with that many free, in the pool where those are fullest.

use super::{Candidates, Fit, GpuList, Shape, fits_in, least_by_key, nodes_needed, take_from_pool};

#[inline]
pub(super) fn place(shape: Shape, free: &Candidates<'_>, gpus: &mut GpuList) -> Option<()> {
    let fitting = shape.pools.iter().filter(|&p| fits_in(shape, p, free));
    let pool = least_by_key(fitting, |p| match (shape.split_over_nodes(), free.best_fit(p, shape.gpus)) {
        (Some((per_node, nodes)), _) => (nodes, free_on_fullest(p, per_node, nodes, free), p),
        (None, Some(node)) => (1, free.on_node(node), p),
        (None, None) => (nodes_needed(p, shape.gpus, free), 0, p),
    })?;
    take_from_pool(shape, pool, free, Fit::Best, gpus)
}

/// Free GPUs on the `nodes` fullest nodes of `pool` with `per_node` free: what a gang split
/// that way would leave around it (fewer is a tighter fit).
fn free_on_fullest(pool: sim::PoolId, per_node: u32, nodes: u32, free: &Candidates<'_>) -> u32 {
    free.nodes_with_at_least(pool, per_node).take(nodes as usize).map(|(_, count)| count).sum()
}
