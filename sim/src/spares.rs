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

use crate::controller::Controller;
use crate::ids::{NodeId, PoolId};
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
}

impl Controller {
    /// Puts the last `per_pool` nodes of every pool in reserve (all GPUs are free now).
    pub(crate) fn reserve_spares(&mut self, per_pool: u32) {
        self.spares = Spares { target: per_pool, reserve: vec![BTreeSet::new(); self.cluster.pools().len()] };
        for pool in 0..self.cluster.pools().len() {
            let nodes: Vec<NodeId> = self.cluster.pool(PoolId(pool as u32)).nodes().collect();
            for &node in nodes.iter().rev().take(per_pool as usize) {
                self.put_in_reserve(node);
            }
        }
    }

    /// A node was declared dead under `tasks_hit` running tasks: a healthy spare of its pool
    /// enters service in its place (once per dead node), or the restarts must wait.
    pub(crate) fn swap_in_spare(&mut self, dead: NodeId, tasks_hit: u64) {
        if self.spares.target == 0 || tasks_hit == 0 {
            return;
        }
        let pool = self.cluster.node(dead).pool.index();
        let spare = self.spares.reserve[pool].iter().copied().find(|&n| !self.health.node_dead(n));
        let Some(spare) = spare else {
            self.stats.restarts_without_spare += tasks_hit;
            return;
        };
        self.spares.reserve[pool].remove(&spare);
        let back = self.health.set_node_reserved(spare, false);
        self.return_to_service(&back);
        self.stats.spare_swaps += 1;
    }

    /// Whether `node`, rejoining, goes to the reserve (its pool is short of spares); if so it
    /// is there now.
    pub(crate) fn refill_reserve(&mut self, node: NodeId) -> bool {
        let pool = self.cluster.node(node).pool.index();
        if (self.spares.reserve.get(pool).map_or(0, BTreeSet::len) as u32) >= self.spares.target {
            return false;
        }
        self.put_in_reserve(node);
        true
    }

    fn put_in_reserve(&mut self, node: NodeId) {
        let pool = self.cluster.node(node).pool.index();
        self.spares.reserve[pool].insert(node);
        let out = self.health.set_node_reserved(node, true);
        self.take_out_of_service(&out);
    }
}
