//! The built-in default: what `schedlab simulate` runs when given no trace, so that the first
//! command of the README does something real. A 128-GPU cluster (16 nodes x 8 V100) and a
//! synthetic Philly-like workload (Poisson arrivals, lognormal durations capped at 2 days, GPU
//! counts skewed to 1; see traces/src/synth.rs) offered at 90 % of the cluster's capacity.

use sim::Workload;

pub const CLUSTER: &str = "16x8:V100";
pub const JOBS: usize = 5000;
pub const LOAD: f64 = 0.9;

/// The built-in synthetic workload, its arrival rate set for `load` on `gpus` GPUs.
pub fn workload(gpus: u32, jobs: usize, load: f64, seed: u64) -> Result<Workload, traces::TraceError> {
    traces::SynthConfig::for_load(jobs, gpus, load, seed).generate()
}
