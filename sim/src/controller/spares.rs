//! The Controller's side of hot spares (the reserve is `spares.rs`'s): nodes put in reserve
//! leave service, a spare swapped in for a dead node returns to it.

use super::Controller;
use crate::ids::{NodeId, PoolId};
use crate::spares::Spares;

impl Controller {
    /// Puts the last `per_pool` nodes of every pool in reserve (all GPUs are free now).
    pub(crate) fn reserve_spares(&mut self, per_pool: u32) {
        self.spares = Spares::new(per_pool, self.cluster.pools().len());
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
        if !self.spares.kept() || tasks_hit == 0 {
            return;
        }
        let pool = self.cluster.node(dead).pool.index();
        let health = &self.health;
        let Some(spare) = self.spares.take(pool, |n| !health.node_dead(n)) else {
            self.stats.restarts_without_spare += tasks_hit;
            return;
        };
        let back = self.health.set_node_reserved(spare, false);
        self.return_to_service(&back);
        self.stats.spare_swaps += 1;
    }

    /// Whether `node`, rejoining, goes to the reserve (its pool is short of spares); if so it
    /// is there now.
    pub(crate) fn refill_reserve(&mut self, node: NodeId) -> bool {
        let pool = self.cluster.node(node).pool.index();
        if !self.spares.short(pool) {
            return false;
        }
        self.put_in_reserve(node);
        true
    }

    fn put_in_reserve(&mut self, node: NodeId) {
        let pool = self.cluster.node(node).pool.index();
        self.spares.put(pool, node);
        let out = self.health.set_node_reserved(node, true);
        self.take_out_of_service(&out);
    }
}
