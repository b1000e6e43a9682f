//! The command-line settings of failure detection and survival, shared by every command that
//! simulates: heartbeats, detection delays, checkpoints, restart overhead, retry budgets.

use clap::Args;
use sim::{ControllerConfig, FailureConfig, SimDuration, Workload};
use std::collections::{BTreeMap, BTreeSet};

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
    /// Seconds writing one checkpoint takes, progress paused (synchronous), for tasks that set
    /// none; counted as lost GPU-time of its own. 0: checkpoints are free.
    #[arg(long, default_value = "0")]
    checkpoint_cost_s: String,
    /// Seconds a preempted or failed task pays (on its GPUs, without progress) when it
    /// restarts, for tasks that set none.
    #[arg(long, default_value = "0")]
    restart_overhead_s: String,
    /// Per-queue default checkpoint interval, QUEUE=SECONDS (repeatable); between a task's own
    /// value and --checkpoint-s.
    #[arg(long, value_name = "QUEUE=SECONDS")]
    queue_checkpoint_s: Vec<String>,
    /// Per-queue default restart overhead, QUEUE=SECONDS (repeatable); between a task's own
    /// value and --restart-overhead-s.
    #[arg(long, value_name = "QUEUE=SECONDS")]
    queue_restart_overhead_s: Vec<String>,
    /// Per-queue default checkpoint cost, QUEUE=SECONDS (repeatable); between a task's own
    /// value and --checkpoint-cost-s.
    #[arg(long, value_name = "QUEUE=SECONDS")]
    queue_checkpoint_cost_s: Vec<String>,
    /// Hot spares: healthy nodes each pool keeps in reserve, out of the scheduler's reach,
    /// that replace a node declared dead under a running gang at once; rejoining nodes refill
    /// the reserve first. Reserved GPUs are not capacity (see summary.json's
    /// reserved_gpu_hours). 0: none.
    #[arg(long, default_value_t = 0)]
    spare_nodes: u32,
    /// Retire a node for good once it (or any of its GPUs) has failed this many times within
    /// --retire-window-h, at the repair of the last failure: as operators retire "lemon"
    /// servers. Off without it.
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
    retire_after: Option<u32>,
    /// The window of --retire-after, in hours.
    #[arg(long, default_value = "720", requires = "retire_after")]
    retire_window_h: String,
}

/// `QUEUE=SECONDS` pairs of a repeatable flag.
fn per_queue(flag: &str, pairs: &[String]) -> Result<BTreeMap<String, SimDuration>, String> {
    let mut map = BTreeMap::new();
    for pair in pairs {
        let (queue, secs) = pair.split_once('=').ok_or_else(|| format!("--{flag} `{pair}`: expected QUEUE=SECONDS"))?;
        if map.insert(queue.to_string(), seconds(flag, secs)?).is_some() {
            return Err(format!("--{flag}: queue `{queue}` given twice"));
        }
    }
    Ok(map)
}

fn seconds(flag: &str, text: &str) -> Result<SimDuration, String> {
    traces::parse_seconds_ms(text).map(SimDuration).map_err(|e| format!("--{flag} `{text}`: {}", e.expected()))
}

/// Whether `value` is one `key` of [`GRID_KEYS`] takes (seconds, or a whole number).
pub fn check_grid_value(key: &str, value: &str) -> Result<(), String> {
    match key {
        "checkpoint_s" | "checkpoint_cost_s" | "restart_overhead_s" => seconds(&format!("grid {key}"), value).map(drop),
        "spare_nodes" | "max_retries" => whole(key, value).map(drop),
        _ => Err(format!("--grid {key}: not a run setting a grid can vary ({})", GRID_KEYS.join(", "))),
    }
}

fn whole(key: &str, value: &str) -> Result<u32, String> {
    value.parse::<u32>().map_err(|_| format!("--grid {key}: `{value}` is not a whole number"))
}

/// The run settings a sweep's `--grid` may vary (their flags' names, without dashes).
pub const GRID_KEYS: [&str; 5] =
    ["checkpoint_s", "checkpoint_cost_s", "restart_overhead_s", "spare_nodes", "max_retries"];

impl ResilienceArgs {
    /// Sets one of [`GRID_KEYS`] to `value`, checked as its flag is.
    pub fn set(&mut self, key: &str, value: &str) -> Result<(), String> {
        check_grid_value(key, value)?;
        match key {
            "checkpoint_s" => self.checkpoint_s = value.to_string(),
            "checkpoint_cost_s" => self.checkpoint_cost_s = value.to_string(),
            "restart_overhead_s" => self.restart_overhead_s = value.to_string(),
            "spare_nodes" => self.spare_nodes = whole(key, value)?,
            _ => self.max_retries = whole(key, value)?,
        }
        Ok(())
    }

    /// Fills the checkpoint interval and restart overhead of tasks that set none from their
    /// queue's defaults. A queue named in a flag that no job uses is an error (a typo would
    /// otherwise change nothing, silently).
    pub fn apply_queue_defaults(&self, workload: Workload) -> Result<Workload, String> {
        let checkpoints = per_queue("queue-checkpoint-s", &self.queue_checkpoint_s)?;
        let overheads = per_queue("queue-restart-overhead-s", &self.queue_restart_overhead_s)?;
        let costs = per_queue("queue-checkpoint-cost-s", &self.queue_checkpoint_cost_s)?;
        if checkpoints.is_empty() && overheads.is_empty() && costs.is_empty() {
            return Ok(workload);
        }
        let queues: BTreeSet<&str> = workload.jobs().iter().filter_map(|j| j.queue.as_deref()).collect();
        let named = checkpoints.keys().chain(overheads.keys()).chain(costs.keys());
        if let Some(unknown) = named.into_iter().find(|q| !queues.contains(q.as_str())) {
            return Err(format!(
                "no job is in queue `{unknown}` (queues: {})",
                queues.into_iter().collect::<Vec<_>>().join(", ")
            ));
        }
        let mut jobs = workload.into_jobs();
        for job in &mut jobs {
            let Some(queue) = job.queue.as_deref() else { continue };
            let (checkpoint, overhead) = (checkpoints.get(queue).copied(), overheads.get(queue).copied());
            let cost = costs.get(queue).copied();
            for task in &mut job.tasks {
                task.checkpoint = task.checkpoint.or(checkpoint);
                task.restart_overhead = task.restart_overhead.or(overhead);
                task.checkpoint_cost = task.checkpoint_cost.or(cost);
            }
        }
        Workload::new(jobs).map_err(|e| e.to_string())
    }

    fn retire_rule(&self) -> Result<Option<sim::RetireRule>, String> {
        let Some(failures) = self.retire_after else { return Ok(None) };
        let hours = &self.retire_window_h;
        let window = traces::parse_seconds_ms(hours)
            .ok()
            .and_then(|ms| ms.checked_mul(3_600))
            .filter(|&ms| ms > 0)
            .ok_or_else(|| format!("--retire-window-h `{hours}`: expected a positive number of hours"))?;
        Ok(Some(sim::RetireRule { failures, window: SimDuration(window) }))
    }

    /// The controller settings these flags describe, on top of `base`.
    pub fn apply(&self, base: ControllerConfig) -> Result<ControllerConfig, String> {
        let heartbeat_interval = seconds("heartbeat-s", &self.heartbeat_s)?;
        if heartbeat_interval == SimDuration::ZERO || self.missed_beats == 0 {
            return Err("--heartbeat-s and --missed-beats must be positive".into());
        }
        Ok(ControllerConfig {
            restart_overhead: seconds("restart-overhead-s", &self.restart_overhead_s)?,
            checkpoint: seconds("checkpoint-s", &self.checkpoint_s)?,
            checkpoint_cost: seconds("checkpoint-cost-s", &self.checkpoint_cost_s)?,
            failures: FailureConfig {
                heartbeat_interval,
                missed_beats: self.missed_beats,
                gpu_detect_delay: seconds("gpu-detect-s", &self.gpu_detect_s)?,
                max_retries: self.max_retries,
            },
            retire: self.retire_rule()?,
            spare_nodes: self.spare_nodes,
            ..base
        })
    }
}
