//! Hot spare nodes: each pool may keep `ControllerConfig::spare_nodes` healthy nodes in
//! reserve, out of the scheduler's reach, as pre-training clusters do. When a node is declared
//! dead under a running task (a gang lost a node), a spare of its pool enters service at once,
//! so the gang's retry finds room without waiting for the repair; a node that rejoins goes to
//! the reserve first while the pool is short of spares.
//!
//! Counting: GPUs in reserve are neither capacity nor unusable-by-failure: utilisation and
//! goodput are over the capacity in service (reserve, broken and retired GPU-time excluded),
//! and the reserve's GPU-time is reported on its own. The time series' "unusable" level
//! includes the reserve (the scheduler may not use it). Only node failures draw on spares: a
//! single GPU's failure leaves its node in service.
//!
//! [`Spares`] keeps the reserve; the Controller (`controller/spares.rs`) moves nodes in and
//! out of service as they enter and leave it.

use crate::ids::NodeId;
use std::collections::BTreeSet;

/// The nodes each pool holds in reserve now, and how many it should.
#[derive(Debug, Clone, Default)]
pub(crate) struct Spares {
    target: u32,
    reserve: Vec<BTreeSet<NodeId>>,
}

impl Spares {
    /// Whether some pool that keeps spares has no spare it could swap in now.
    pub(crate) fn exhausted(&self, usable: impl Fn(NodeId) -> bool) -> bool {
        self.target > 0 && self.reserve.iter().any(|r| !r.iter().any(|&n| usable(n)))
    }

    /// A retired node leaves the reserve for good (the pool may refill it).
    pub(crate) fn forget(&mut self, node: NodeId) {
        for reserve in &mut self.reserve {
            reserve.remove(&node);
        }
    }

    /// GPUs held in reserve now.
    pub(crate) fn gpus(&self, gpus_of: impl Fn(NodeId) -> u32) -> u64 {
        self.reserve.iter().flatten().map(|&n| u64::from(gpus_of(n))).sum()
    }

    /// A reserve of `per_pool` nodes for each of `pools` pools, empty for now.
    pub(crate) fn new(per_pool: u32, pools: usize) -> Spares {
        Spares { target: per_pool, reserve: vec![BTreeSet::new(); pools] }
    }

    /// Whether the run keeps spares at all.
    pub(crate) fn kept(&self) -> bool {
        self.target > 0
    }

    /// Takes out of `pool`'s reserve its first spare that `usable` accepts, if any.
    pub(crate) fn take(&mut self, pool: usize, usable: impl Fn(NodeId) -> bool) -> Option<NodeId> {
        let spare = self.reserve[pool].iter().copied().find(|&n| usable(n))?;
        self.reserve[pool].remove(&spare);
        Some(spare)
    }

    /// Whether `pool` holds fewer spares than it should.
    pub(crate) fn short(&self, pool: usize) -> bool {
        (self.reserve.get(pool).map_or(0, BTreeSet::len) as u32) < self.target
    }

    /// Puts `node` of `pool` in reserve.
    pub(crate) fn put(&mut self, pool: usize, node: NodeId) {
        self.reserve[pool].insert(node);
    }
}
