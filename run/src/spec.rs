//! [`RunSpec`]: everything one run needs, as one type. The `simulate` flags are its clap
//! derive; sweep.json, regress.toml, live.json and the Python package are its serde form; the
//! field names are the flags' names with `_` for `-`. Each default is declared once, on the
//! flag, and [`RunSpec::default`] is read from there.

use crate::per_queue::{self, QueueSeconds};
use crate::{Hours, Seconds, numbers, text};
use clap::{Args, Parser};
use policies::PolicySpec;
use serde::{Deserialize, Serialize};
use sim::{ControllerConfig, FailureConfig, SimDuration};
use std::path::PathBuf;

/// Jobs in the built-in synthetic workload.
pub const BUILTIN_JOBS: usize = 5000;
/// Offered load of the built-in synthetic workload.
pub const BUILTIN_LOAD: f64 = 0.9;
/// The built-in cluster: 16 nodes of 8 V100.
pub const BUILTIN_CLUSTER: &str = "16x8:V100";

fn failure_defaults() -> FailureConfig {
    FailureConfig::default()
}

/// One run: trace and format, cluster, policy, failures, resilience settings, seed, outputs.
#[derive(Args, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(default, deny_unknown_fields)]
pub struct RunSpec {
    /// Trace to replay: a canonical jobs.csv or trace directory, or a file in --format. Without
    /// it, a built-in synthetic workload runs on a built-in cluster.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Format of --trace: canonical, itp (Microsoft ITP clusterNN.csv), philly (philly.csv),
    /// openb (Alibaba openb_pod_list_default.csv) or sacct (Slurm `sacct --parsable2` output).
    #[arg(long, default_value_t = traces::Format::Canonical)]
    #[serde(with = "text")]
    pub format: traces::Format,
    /// Cluster: a file (cluster.csv) or shorthand NODESxGPUS:TYPE[,...], e.g. 8x8:A100,32x8:V100.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Hardware failures: a model (weibull:node_mtbf_h=H[,shape=K][,gpu_mtbf_h=..]
    /// [,repair_median_h=M][,repair_sigma=S]), drawn for as long as the run lasts; a real
    /// failure trace mapped onto the cluster (infinitehbd:PATH, titan:PATH, alibaba2017:PATH,
    /// each [,scale=X][,past_end=repeat|stop]); or events:PATH. Added to any events.csv of
    /// the trace.
    #[arg(long)]
    pub failures: Option<String>,
    /// Queues with quotas: a queues.csv (traces/FORMAT.md), in place of any queues.csv of the
    /// trace directory. Without either, queue names are only labels.
    #[arg(long)]
    pub queues: Option<PathBuf>,
    /// Datasets on nodes: a datasets.csv (traces/FORMAT.md), in place of any of the trace
    /// directory. Without either, tasks' dataset names are only labels.
    #[arg(long)]
    pub datasets: Option<PathBuf>,
    /// Policy spec name[key=value,...]; see `schedlab policies`.
    #[arg(long, default_value = "fifo")]
    pub policy: PolicySpec,
    /// Strict consolidation: a task asking for at most this many GPUs runs within one node
    /// (as if its row said single_node=true), as Tiresias and Helios place jobs; set it to the
    /// GPUs per node. Without it, placement may span nodes when no single node has room.
    #[arg(long, value_name = "GPUS", value_parser = numbers::gpus)]
    pub single_node_up_to: Option<u32>,
    /// Whole nodes for gangs of several nodes: a task asking for a multiple of this many GPUs
    /// runs with exactly this many on each of its nodes (as if its row said gpus_per_node),
    /// as Tiresias and Helios place them; set it to the GPUs per node. Pools whose nodes have
    /// fewer GPUs cannot host such a task.
    #[arg(long, value_name = "GPUS", value_parser = numbers::gpus)]
    pub whole_nodes: Option<u32>,
    /// Run seed: feeds the synthetic workload, the failure model or replayed history, and the
    /// policy's random stream (a warning says when it feeds none of them).
    #[arg(long, default_value_t = 0, value_parser = numbers::seed)]
    pub seed: u64,
    /// Jobs in the built-in synthetic workload (refused with --trace). Its arrival rate is set
    /// for --load on whichever cluster runs it.
    #[arg(long, default_value_t = BUILTIN_JOBS, value_parser = numbers::jobs)]
    pub jobs: usize,
    /// Offered load of the built-in synthetic workload: arriving GPU-time over cluster capacity
    /// (refused with --trace).
    #[arg(long, default_value_t = BUILTIN_LOAD, value_parser = numbers::load)]
    pub load: f64,
    /// Seconds between node heartbeats.
    #[arg(long, default_value_t = Seconds(failure_defaults().heartbeat_interval))]
    pub heartbeat_s: Seconds,
    /// Consecutive missed heartbeats after which a node is declared dead.
    #[arg(long, default_value_t = failure_defaults().missed_beats, value_parser = numbers::count)]
    pub missed_beats: u32,
    /// Seconds from a GPU failure until the scheduler sees it (an XID event).
    #[arg(long, default_value_t = Seconds(failure_defaults().gpu_detect_delay))]
    pub gpu_detect_s: Seconds,
    /// Retries a task gets after hardware failures (R_max; a job deadline can lower it).
    #[arg(long, default_value_t = failure_defaults().max_retries, value_parser = numbers::count)]
    pub max_retries: u32,
    /// Seconds of work between checkpoints for tasks that set none; 0: progress is never lost.
    #[arg(long, default_value_t = Seconds::default())]
    pub checkpoint_s: Seconds,
    /// Seconds writing one checkpoint takes, progress paused (synchronous), for tasks that set
    /// none; counted as lost GPU-time of its own. 0: checkpoints are free.
    #[arg(long, default_value_t = Seconds::default())]
    pub checkpoint_cost_s: Seconds,
    /// Seconds a preempted or failed task pays (on its GPUs, without progress) when it
    /// restarts, for tasks that set none.
    #[arg(long, default_value_t = Seconds::default())]
    pub restart_overhead_s: Seconds,
    /// Seconds between scheduling passes: the policy decides only at whole multiples of this
    /// in trace time, and what happens between two passes waits for the next, as in Slurm's
    /// main loop or a Kubernetes scheduling cycle. 0: at every event (an instant scheduler).
    #[arg(long, default_value_t = Seconds::default())]
    pub pass_interval_s: Seconds,
    /// Seconds a task's GPUs stay unusable after it ends (succeeds, fails, is cancelled, or its
    /// hardware fails) before they return to the free pool, as Slurm's `COMPLETING` or a pod's
    /// termination; a preemption's GPUs go to the preempting task at once. 0: at once.
    #[arg(long, default_value_t = Seconds::default())]
    pub release_latency_s: Seconds,
    /// Per-queue default checkpoint interval, QUEUE=SECONDS (repeatable); between a task's own
    /// value and --checkpoint-s.
    #[arg(long, value_name = "QUEUE=SECONDS")]
    #[serde(with = "per_queue")]
    pub queue_checkpoint_s: Vec<QueueSeconds>,
    /// Per-queue default restart overhead, QUEUE=SECONDS (repeatable); between a task's own
    /// value and --restart-overhead-s.
    #[arg(long, value_name = "QUEUE=SECONDS")]
    #[serde(with = "per_queue")]
    pub queue_restart_overhead_s: Vec<QueueSeconds>,
    /// Per-queue default checkpoint cost, QUEUE=SECONDS (repeatable); between a task's own
    /// value and --checkpoint-cost-s.
    #[arg(long, value_name = "QUEUE=SECONDS")]
    #[serde(with = "per_queue")]
    pub queue_checkpoint_cost_s: Vec<QueueSeconds>,
    /// Hot spares: healthy nodes each pool keeps in reserve, out of the scheduler's reach,
    /// that replace a node declared dead under a running gang at once; rejoining nodes refill
    /// the reserve first. Reserved GPUs are not capacity (see summary.json's
    /// reserved_gpu_hours). 0: none.
    #[arg(long, default_value_t = 0, value_parser = numbers::count)]
    pub spare_nodes: u32,
    /// Retire a node for good once it (or any of its GPUs) has failed this many times within
    /// --retire-window-h, at the repair of the last failure: as operators retire "lemon"
    /// servers. Off without it.
    #[arg(long, value_parser = numbers::failures)]
    pub retire_after: Option<u32>,
    /// The window of --retire-after, in hours.
    #[arg(long, default_value_t = Hours::whole(720))]
    pub retire_window_h: Hours,
    /// Check every invariant after every step (slow: a full recount per step).
    #[arg(long)]
    pub check_invariants: bool,
    /// Width in seconds of the time series' buckets (timeseries.csv, queue_timeseries.csv);
    /// without it, the smallest of 1 min, 2 min, 5 min, ... 2 weeks giving at most 500 buckets
    /// over the submissions. A width giving more than 100,000 buckets over the submissions is
    /// refused before the run (simulate --force writes them).
    #[arg(long, value_parser = numbers::bucket_s)]
    pub series_bucket_s: Option<u64>,
    /// Stop the run this many days of simulated time after the last submission, reporting the
    /// jobs that have not ended as unfinished with the reason. Failures are drawn for as long
    /// as a run lasts, so a job that can never start would otherwise never let it end.
    #[arg(long, default_value_t = 3650, value_parser = numbers::horizon_days)]
    pub horizon_days: u64,
    /// Jobs leave a run in job order once ended, and so do their rows in jobs.csv and
    /// tasks.csv. A job still in the system while more than this many jobs after it have
    /// ended is set aside so that they can leave: its rows come when it ends, after theirs
    /// (`simulate` says how many were). The jobs a run holds are then at most those in the
    /// system plus this many (300 to 450 bytes each); a larger value keeps job order longer.
    #[arg(long, value_name = "JOBS", default_value_t = sim::SET_ASIDE_AFTER, value_parser = numbers::jobs)]
    pub set_aside_after: usize,
    /// The folder the run's files go to (summary.json, jobs.csv, ...); none: only the summary.
    /// A flag of `simulate` (a sweep names its runs' folders itself).
    #[arg(skip)]
    pub out: Option<PathBuf>,
    /// Also write the decision log, decisions.csv, into `out`.
    #[arg(skip)]
    pub decisions: bool,
}

/// The longest horizon, in days.
pub const MAX_HORIZON_DAYS: u64 = 100_000;

/// The run flags alone, to read [`RunSpec`]'s defaults off its flags.
#[derive(Parser)]
#[command(name = "run", no_binary_name = true)]
struct FlagsOnly {
    #[command(flatten)]
    spec: RunSpec,
}

impl Default for RunSpec {
    /// The defaults of the flags (the built-in workload under fifo, seed 0).
    fn default() -> RunSpec {
        FlagsOnly::try_parse_from(std::iter::empty::<String>()).expect("every flag has a valid default").spec
    }
}

impl RunSpec {
    /// Reads a RunSpec from command-line flags (without a program name), as `simulate` does.
    pub fn from_flags<I: IntoIterator<Item = S>, S: Into<std::ffi::OsString> + Clone>(
        flags: I,
    ) -> Result<RunSpec, String> {
        FlagsOnly::try_parse_from(flags).map(|f| f.spec).map_err(|e| crate::clap_message(&e))
    }

    /// The controller settings of this run; what it records is the runner's choice
    /// ([`crate::Keep`]).
    pub fn controller_config(&self) -> Result<ControllerConfig, String> {
        if self.heartbeat_s.0 == SimDuration::ZERO || self.missed_beats == 0 {
            return Err("heartbeat_s and missed_beats must be positive".into());
        }
        if !(1..=MAX_HORIZON_DAYS).contains(&self.horizon_days) {
            return Err(format!("horizon_days = {}: expected 1 to {MAX_HORIZON_DAYS}", self.horizon_days));
        }
        if self.series_bucket_s == Some(0) || self.retire_after == Some(0) {
            return Err("series_bucket_s and retire_after must be at least 1 when given".into());
        }
        Ok(ControllerConfig {
            seed: self.seed,
            restart_overhead: self.restart_overhead_s.0,
            checkpoint: self.checkpoint_s.0,
            checkpoint_cost: self.checkpoint_cost_s.0,
            failures: FailureConfig {
                heartbeat_interval: self.heartbeat_s.0,
                missed_beats: self.missed_beats,
                gpu_detect_delay: self.gpu_detect_s.0,
                max_retries: self.max_retries,
            },
            retire: self.retire_rule()?,
            spare_nodes: self.spare_nodes,
            check_invariants: self.check_invariants,
            series_bucket: self.series_bucket_s.map(SimDuration::from_secs),
            horizon: SimDuration::from_secs(self.horizon_days * 86_400),
            pass_interval: self.pass_interval_s.0,
            release_latency: self.release_latency_s.0,
            set_aside_after: self.set_aside_after,
            ..ControllerConfig::default()
        })
    }

    fn retire_rule(&self) -> Result<Option<sim::RetireRule>, String> {
        let Some(failures) = self.retire_after else { return Ok(None) };
        let window = self.retire_window_h.duration().filter(|w| *w > SimDuration::ZERO);
        let window = window.ok_or_else(|| {
            format!("retire_window_h `{}`: expected a positive number of hours", self.retire_window_h)
        })?;
        Ok(Some(sim::RetireRule { failures, window }))
    }
}
