//! The command-line settings of failure detection and survival, shared by every command that
//! simulates: heartbeats, detection delays, checkpoints, restart overhead, retry budgets.

use clap::Args;
use sim::{ControllerConfig, FailureConfig, SimDuration};

#[derive(Args, Debug, Clone)]
pub struct ResilienceArgs {
    /// Seconds between node heartbeats.
    #[arg(long, default_value = "10")]
    heartbeat_s: String,
    /// Consecutive missed heartbeats after which a node is declared dead.
    #[arg(long, default_value_t = 3)]
    missed_beats: u32,
    /// Seconds from a GPU failure until the scheduler sees it (an XID event).
    #[arg(long, default_value = "0")]
    gpu_detect_s: String,
    /// Retries a task gets after hardware failures (R_max; a job deadline can lower it).
    #[arg(long, default_value_t = 3)]
    max_retries: u32,
    /// Seconds of work between checkpoints for tasks that set none; 0: progress is never lost.
    #[arg(long, default_value = "0")]
    checkpoint_s: String,
    /// Seconds a preempted or failed task pays (on its GPUs, without progress) when it
    /// restarts, for tasks that set none.
    #[arg(long, default_value = "0")]
    restart_overhead_s: String,
}

fn seconds(flag: &str, text: &str) -> Result<SimDuration, String> {
    traces::parse_seconds_ms(text).map(SimDuration).map_err(|e| format!("--{flag} `{text}`: {}", e.expected()))
}

impl ResilienceArgs {
    /// The controller settings these flags describe, on top of `base`.
    pub fn apply(&self, base: ControllerConfig) -> Result<ControllerConfig, String> {
        let heartbeat_interval = seconds("heartbeat-s", &self.heartbeat_s)?;
        if heartbeat_interval == SimDuration::ZERO || self.missed_beats == 0 {
            return Err("--heartbeat-s and --missed-beats must be positive".into());
        }
        Ok(ControllerConfig {
            restart_overhead: seconds("restart-overhead-s", &self.restart_overhead_s)?,
            checkpoint: seconds("checkpoint-s", &self.checkpoint_s)?,
            failures: FailureConfig {
                heartbeat_interval,
                missed_beats: self.missed_beats,
                gpu_detect_delay: seconds("gpu-detect-s", &self.gpu_detect_s)?,
                max_retries: self.max_retries,
            },
            ..base
        })
    }
}
