//! Where a share of one GPU goes (Alibaba-style GPU sharing: fractional tasks share a GPU up to
//! 1000 milli-GPUs; whole-GPU tasks never share).
//!
//! `pack` fills shared GPUs first: the one with the least room that still holds the share
//! (best fit, which leaves whole GPUs whole), and only then opens a free GPU, on the fullest
//! node. `spread` opens a free GPU on the emptiest node first (one share per GPU while it can),
//! then the shared GPU with the most room. Ties by pool id, then GPU id.

use super::{Candidates, GpuList, Placement, Shape};
use sim::GpuId;

pub(super) fn place(kind: Placement, shape: Shape, free: &Candidates<'_>, gpus: &mut GpuList) -> Option<()> {
    let shared_best_fit = || {
        shape
            .pools
            .iter()
            .filter_map(|p| free.shared_with_room(p, shape.milli).next().map(|(g, room)| (room, p, g)))
            .min()
    };
    let shared_most_room = || {
        shape
            .pools
            .iter()
            .filter_map(|p| {
                let (_, most) = free.shared_with_room(p, shape.milli).next_back()?;
                // The lowest GPU id among those with the most room.
                free.shared_with_room(p, most)
                    .next()
                    .map(|(g, room)| (room, std::cmp::Reverse(p), std::cmp::Reverse(g)))
            })
            .max()
            .map(|(room, p, g)| (room, p, g.0))
    };
    let whole = |pick: fn(&Candidates<'_>, sim::PoolId) -> Option<(sim::NodeId, u32)>| {
        shape.pools.iter().filter_map(|p| pick(free, p).map(|(node, count)| (count, p, node))).collect::<Vec<_>>()
    };
    let gpu = match kind {
        Placement::Pack | Placement::Fastest | Placement::Local => shared_best_fit().map(|(_, _, g)| g).or_else(|| {
            let (_, _, node) = whole(|c, p| c.nodes_with_at_least(p, 1).next()).into_iter().min()?;
            first_free(free, node)
        }),
        Placement::Spread => {
            let emptiest = whole(|c, p| c.nodes_emptiest_first(p).next())
                .into_iter()
                .max_by_key(|&(count, p, node)| (count, std::cmp::Reverse(p), std::cmp::Reverse(node)));
            match emptiest {
                Some((_, _, node)) => first_free(free, node),
                None => shared_most_room().map(|(_, _, g)| g),
            }
        }
    }?;
    gpus.push(gpu);
    Some(())
}

fn first_free(free: &Candidates<'_>, node: sim::NodeId) -> Option<GpuId> {
    let mut out = GpuList::new();
    free.take_from(node, 1, &mut out);
    out.pop()
}
