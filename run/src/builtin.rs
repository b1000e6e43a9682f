//! The built-in default: what a run without a trace simulates, so that the first command of
//! the README does something real. A synthetic Philly-like workload (Poisson arrivals,
//! lognormal durations capped at 2 days, GPU counts skewed to 1; see traces/src/synth.rs)
//! offered at `load` of the cluster's capacity, on the built-in cluster unless one is given.

use crate::RunSpec;
use sim::Workload;

/// The built-in synthetic workload of `spec` (its jobs, load and seed) on `gpus` GPUs.
pub fn workload(gpus: u32, spec: &RunSpec) -> Result<Workload, traces::TraceError> {
    traces::SynthConfig::for_load(spec.jobs, gpus, spec.load, spec.seed).generate()
}

/// [`workload`]'s jobs drawn one at a time (a streamed run's).
pub fn jobs(gpus: u32, spec: &RunSpec) -> Result<traces::synth::SynthJobs, traces::TraceError> {
    traces::SynthConfig::for_load(spec.jobs, gpus, spec.load, spec.seed).jobs()
}
