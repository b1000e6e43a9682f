//! Hardware health, twice: the ground truth (what is broken) and what the scheduler knows
//! (what it may not use). They differ between a failure and its detection, which is the whole
//! point: tasks sit on broken hardware, making no progress, until the scheduler finds out.

use crate::cluster::Cluster;
use crate::gpu_layout::GpuLayout;
use crate::ids::{GpuId, NodeId};

#[derive(Debug, Clone)]
pub struct Health {
    layout: GpuLayout,
    /// Truth: this GPU is broken on its own (an XID/ECC-type failure).
    gpu_broken: Vec<bool>,
    /// Truth: the node is down (all its GPUs, and its heartbeats).
    node_down: Vec<bool>,
    /// Known: the node was declared dead and has not rejoined.
    node_dead: Vec<bool>,
    /// Known: the GPU's failure was observed and it has not been repaired.
    gpu_out: Vec<bool>,
    /// Known: the node is a spare held in reserve (see `spares.rs`).
    node_reserved: Vec<bool>,
    broken_gpus: u32,
    unusable_gpus: u32,
    /// Each node's first GPU and GPU count.
    node_gpus: Vec<(GpuId, u32)>,
}

impl Health {
    pub fn new(cluster: &Cluster) -> Health {
        let gpus = cluster.gpu_count() as usize;
        let nodes = cluster.nodes().len();
        Health {
            layout: cluster.layout().clone(),
            gpu_broken: vec![false; gpus],
            node_down: vec![false; nodes],
            node_dead: vec![false; nodes],
            gpu_out: vec![false; gpus],
            node_reserved: vec![false; nodes],
            broken_gpus: 0,
            unusable_gpus: 0,
            node_gpus: cluster.nodes().iter().map(|n| (n.first_gpu, n.gpu_count)).collect(),
        }
    }

    /// Truth: the GPU cannot compute now.
    #[inline]
    pub fn broken(&self, gpu: GpuId) -> bool {
        self.gpu_broken[gpu.index()] || self.node_down[self.layout.node_of(gpu).index()]
    }
    /// Known: the scheduler may place work on this GPU (not failed, not on a dead node, not on
    /// a spare in reserve).
    #[inline]
    pub fn usable(&self, gpu: GpuId) -> bool {
        let node = self.layout.node_of(gpu).index();
        !self.gpu_out[gpu.index()] && !self.node_dead[node] && !self.node_reserved[node]
    }
    pub fn node_down(&self, node: NodeId) -> bool {
        self.node_down[node.index()]
    }
    pub fn node_dead(&self, node: NodeId) -> bool {
        self.node_dead[node.index()]
    }
    pub fn gpu_out(&self, gpu: GpuId) -> bool {
        self.gpu_out[gpu.index()]
    }
    /// GPUs broken now (truth).
    pub fn broken_gpus(&self) -> u32 {
        self.broken_gpus
    }
    /// GPUs the scheduler may not use now (spares in reserve included).
    pub fn unusable_gpus(&self) -> u32 {
        self.unusable_gpus
    }

    /// Sets the truth of one GPU or one node and keeps the broken count. Returns whether the
    /// flag changed.
    pub(crate) fn set_gpu_broken(&mut self, gpu: GpuId, broken: bool) -> bool {
        let before = self.broken(gpu);
        let changed = std::mem::replace(&mut self.gpu_broken[gpu.index()], broken) != broken;
        self.broken_gpus = self.broken_gpus + u32::from(self.broken(gpu)) - u32::from(before);
        changed
    }
    pub(crate) fn set_node_down(&mut self, node: NodeId, down: bool) -> bool {
        let before: Vec<bool> = self.gpus_of(node).map(|g| self.broken(g)).collect();
        let changed = std::mem::replace(&mut self.node_down[node.index()], down) != down;
        for (gpu, was) in self.gpus_of(node).zip(before) {
            self.broken_gpus = self.broken_gpus + u32::from(self.broken(gpu)) - u32::from(was);
        }
        changed
    }
    /// Sets what the scheduler knows; returns the GPUs whose usability changed.
    pub(crate) fn set_gpu_out(&mut self, gpu: GpuId, out: bool) -> Vec<GpuId> {
        self.change_usability(std::iter::once(gpu), |h| h.gpu_out[gpu.index()] = out)
    }
    pub(crate) fn set_node_dead(&mut self, node: NodeId, dead: bool) -> Vec<GpuId> {
        self.change_usability(self.gpus_of(node), |h| h.node_dead[node.index()] = dead)
    }
    pub(crate) fn set_node_reserved(&mut self, node: NodeId, reserved: bool) -> Vec<GpuId> {
        self.change_usability(self.gpus_of(node), |h| h.node_reserved[node.index()] = reserved)
    }

    fn change_usability(
        &mut self,
        gpus: impl Iterator<Item = GpuId> + Clone,
        change: impl FnOnce(&mut Self),
    ) -> Vec<GpuId> {
        let before: Vec<(GpuId, bool)> = gpus.map(|g| (g, self.usable(g))).collect();
        change(self);
        let flipped: Vec<GpuId> =
            before.into_iter().filter(|&(g, was)| self.usable(g) != was).map(|(g, _)| g).collect();
        for &g in &flipped {
            if self.usable(g) {
                self.unusable_gpus -= 1;
            } else {
                self.unusable_gpus += 1;
            }
        }
        flipped
    }

    fn gpus_of(&self, node: NodeId) -> impl Iterator<Item = GpuId> + Clone + use<> {
        let (first, count) = self.node_gpus[node.index()];
        (first.0..first.0 + count).map(GpuId)
    }
}
