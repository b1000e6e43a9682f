//! The built-in default: what `schedlab simulate` runs when given no trace, so that the first
//! command of the README does something real. A 128-GPU cluster (16 nodes x 8 V100) and a
//! synthetic Philly-like workload (Poisson arrivals, heavy-tailed durations, GPU counts skewed
//! to 1) offered at 90 % load. Durations are capped at 2 days (Philly's tail runs to weeks) so
//! that the run's window is set by the arrivals, not by one straggler, and utilisation and
//! queueing mean something.

use sim::Workload;

pub const CLUSTER: &str = "16x8:V100";
pub const JOBS: usize = 5000;
pub const LOAD: f64 = 0.9;
const DURATION_CAP_S: f64 = 2.0 * 86_400.0;

/// The built-in synthetic workload for a cluster of `gpus` GPUs.
pub fn workload(gpus: u32, jobs: usize, load: f64, seed: u64) -> Result<Workload, traces::TraceError> {
    let mut config = traces::SynthConfig::for_cluster(gpus, load);
    config.jobs = jobs;
    config.seed = seed;
    config.duration_cap_s = DURATION_CAP_S;
    // The cap lowers the mean job size: re-aim the arrival rate at the asked-for load.
    config.arrival_rate_per_hour = load * f64::from(gpus) * 3600.0 / config.mean_gpu_seconds_per_job();
    config.generate()
}
