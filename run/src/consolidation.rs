//! Strict consolidation as run options (`--single-node-up-to N`, `--whole-nodes N`): most
//! deep-learning schedulers place a job that fits on one node on one node, and a multiple of a
//! node on whole nodes (Tiresias' consolidation, Helios' placer), while `pack` spans nodes
//! when no single node has room; public traces say neither `single_node` nor
//! `gpus_per_node`, so replaying them with those semantics is a setting, not an edited CSV.

use crate::RunSpec;
use sim::JobSpec;

/// Whether `spec` consolidates at all (without either setting, jobs stay as submitted).
pub fn applies(spec: &RunSpec) -> bool {
    spec.single_node_up_to.is_some() || spec.whole_nodes.is_some()
}

/// `job` with every task of at most `spec.single_node_up_to` GPUs made single-node, and every
/// task of a multiple of `spec.whole_nodes` GPUs given that many per node, as if its row said
/// so; a task whose row already fixes its split over nodes keeps it (so applying it twice is
/// applying it once).
pub fn apply_to_job(spec: &RunSpec, job: &mut JobSpec) {
    for task in &mut job.tasks {
        if task.gpu_milli.is_some() || task.fixed_gpus_per_node().is_some() {
            continue;
        }
        if spec.single_node_up_to.is_some_and(|limit| task.gpus <= limit) {
            task.single_node = true;
        } else if let Some(node) = spec.whole_nodes.filter(|&node| task.gpus.is_multiple_of(node)) {
            task.gpus_per_node = std::num::NonZeroU32::new(node);
        }
    }
}
