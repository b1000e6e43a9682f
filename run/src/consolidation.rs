//! Strict consolidation as a run option (`--single-node-up-to N`): most deep-learning
//! schedulers place a job that fits on one node on one node (Tiresias' consolidation, Helios'
//! placer), while `pack` spans nodes when no single node has room; public traces do not say
//! `single_node`, so replaying them with those semantics is this one setting, not an edited CSV.

use crate::RunSpec;
use sim::Workload;

/// `workload` with every task of at most `spec.single_node_up_to` GPUs made single-node, as
/// if its row said `single_node=true`; unchanged without the setting.
pub fn apply(spec: &RunSpec, workload: Workload) -> Result<Workload, String> {
    let Some(limit) = spec.single_node_up_to else { return Ok(workload) };
    let mut jobs = workload.into_jobs();
    for task in jobs.iter_mut().flat_map(|job| job.tasks.iter_mut()) {
        task.single_node |= task.gpus <= limit;
    }
    Workload::new(jobs).map_err(|e| e.to_string())
}
