//! [`LiveConfig`]: what a live state directory keeps for its life. The run settings are a
//! [`RunSpec`], the type `simulate`, sweeps, regress and Python take, so a setting means one
//! thing in every mode; beside it, the one setting only live mode has (the work assumed for a
//! task without an estimate) and the texts of the files it was given (the directory keeps its
//! own copy: a file edited later changes nothing). The settings a wall clock cannot honour
//! are refused by name ([`LiveConfig::check`]).

use run::{RunSpec, Setup};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sim::SimDuration;

/// A live session's settings, fixed for the life of its state directory.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LiveConfig {
    /// The run settings, as `simulate` takes them. Its trace, cluster, queues and datasets are
    /// unset: jobs come through the API, and the files' texts are kept below.
    pub run: RunSpec,
    /// The work the Controller assumes for a task without an estimate until its process ends.
    pub default_work_ms: u64,
    /// The cluster, as a `--cluster` shorthand or the text of a cluster.csv.
    pub cluster: String,
    /// The queues with quotas, the text of a queues.csv (empty: none): a job's `queue` names
    /// one (none: the first), and every start is checked against its queue's quota.
    #[serde(default)]
    pub queues: String,
    /// Which nodes hold which datasets, the text of a datasets.csv (empty: none, and a task's
    /// `dataset` is a label).
    #[serde(default)]
    pub datasets: String,
}

/// The work assumed for a task without an estimate, by default: an hour.
pub const DEFAULT_WORK_MS: u64 = 3_600_000;

/// The RunSpec settings live mode cannot honour on a wall clock, and why: each is refused by
/// name when it differs from its default.
pub const REFUSED: [(&str, &str); 13] = [
    ("trace", "a live session's jobs are submitted through its API (`live submit`)"),
    ("format", "a live session reads no trace"),
    ("jobs", "a live session runs no built-in workload"),
    ("load", "a live session runs no built-in workload"),
    ("failures", "a live session's hardware fails for real, as its agents report"),
    ("gpu_detect_s", "a live session learns of a GPU failure when its agent reports it (that is the detection)"),
    ("series_bucket_s", "a live session writes no time series"),
    ("horizon_days", "a live session runs until it is stopped"),
    ("set_aside_after", "a live session keeps every job, ended or not: its API answers for each"),
    (
        "retire_after",
        "a live session's nodes are retired by their operators (drain the node, or stop its agent): on the wall \
         clock the rule does not yet retire a node when its replay does",
    ),
    ("retire_window_h", "it is the window of --retire-after, which live mode refuses"),
    (
        "checkpoint_cost_s",
        "a live task's checkpoints take the time its program takes to write them, already in the wall time it runs",
    ),
    ("queue_checkpoint_cost_s", "a live task's checkpoints take the time its program takes to write them"),
];

impl LiveConfig {
    /// `cluster` under `policy` with the defaults of every other setting (`simulate`'s, and an
    /// hour of assumed work).
    pub fn new(cluster: &str, policy: &str) -> Result<LiveConfig, String> {
        let policy = policy.parse().map_err(|e| format!("--policy {policy}: {e}"))?;
        Ok(LiveConfig {
            run: RunSpec { policy, ..RunSpec::default() },
            default_work_ms: DEFAULT_WORK_MS,
            cluster: cluster.to_string(),
            queues: String::new(),
            datasets: String::new(),
        })
    }

    /// This configuration with the run seed `seed`.
    pub fn with_seed(mut self, seed: u64) -> LiveConfig {
        self.run.seed = seed;
        self
    }

    /// This configuration with heartbeats every `ms` milliseconds.
    pub fn with_heartbeat_ms(mut self, ms: u64) -> LiveConfig {
        self.run.heartbeat_s = run::Seconds(SimDuration(ms));
        self
    }

    /// Refuses the settings live mode cannot honour, naming each and saying why.
    pub fn check(&self) -> Result<(), String> {
        let refused = (self.run.differing_fields(&RunSpec::default()).into_iter())
            .filter_map(|field| REFUSED.iter().find(|(name, _)| *name == field))
            .map(|(name, why)| format!("--{}: {why}", name.replace('_', "-")))
            .collect::<Vec<_>>();
        if !refused.is_empty() {
            return Err(format!("live serve cannot honour {}", refused.join("; ")));
        }
        if self.run.cluster.is_some() || self.run.queues.is_some() || self.run.datasets.is_some() {
            return Err("a live configuration keeps its cluster, queues and datasets as texts, not paths".into());
        }
        Ok(())
    }

    /// The settings with the files' texts read and checked: what the driver runs.
    pub fn setup(&self) -> Result<Setup, String> {
        self.check()?;
        let cluster = run::parse_cluster_text(&self.cluster).map_err(|e| e.to_string())?;
        let queues = match self.queues.trim() {
            "" => Vec::new(),
            _ => traces::read_queues_csv(self.queues.as_bytes(), "queues.csv").map_err(|e| e.to_string())?,
        };
        let datasets = match self.datasets.trim() {
            "" => Vec::new(),
            _ => traces::read_datasets_csv(self.datasets.as_bytes(), "datasets.csv").map_err(|e| e.to_string())?,
        };
        Setup::new(self.run.clone(), cluster, queues, datasets).map_err(|e| e.to_string())
    }

    /// The work assumed for a task without an estimate (at least a millisecond).
    pub fn default_work(&self) -> SimDuration {
        SimDuration(self.default_work_ms.max(1))
    }

    /// The RunSpec that replays the session's trace (its cluster, queues and datasets are the
    /// trace's; each job in it already carries what the per-queue and consolidation settings
    /// made of it, so those are left out, as a replay of a shaped job would shape it again).
    pub fn replay_spec(&self) -> RunSpec {
        RunSpec {
            single_node_up_to: None,
            whole_nodes: None,
            queue_checkpoint_s: Vec::new(),
            queue_restart_overhead_s: Vec::new(),
            queue_checkpoint_cost_s: Vec::new(),
            ..self.run.clone()
        }
    }

    /// Reads a stored configuration: this form, or the one state directories kept before
    /// live took a RunSpec ([`Legacy`]).
    pub fn from_stored(text: &str) -> Result<LiveConfig, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("state database: bad config: {e}"))?;
        let bad = |e: serde_json::Error| format!("state database: bad config: {e}");
        if value.get("run").is_some() {
            serde_json::from_value(value).map_err(bad)
        } else {
            serde_json::from_value::<Legacy>(value).map_err(bad)?.into_config()
        }
    }
}

/// The configuration state directories kept before live mode took a RunSpec: the settings
/// `live serve` had then, in milliseconds. Read, never written.
#[derive(Deserialize)]
struct Legacy {
    cluster: String,
    policy: String,
    seed: u64,
    heartbeat_ms: u64,
    missed_beats: u32,
    max_retries: u32,
    default_work_ms: u64,
    #[serde(default)]
    queues: String,
    #[serde(default)]
    checkpoint_ms: u64,
    #[serde(default)]
    restart_overhead_ms: u64,
    #[serde(default)]
    datasets: String,
}

impl Legacy {
    fn into_config(self) -> Result<LiveConfig, String> {
        let ms = |ms: u64| run::Seconds(SimDuration(ms));
        let policy = self.policy.parse().map_err(|e| format!("state database: the policy `{}`: {e}", self.policy))?;
        Ok(LiveConfig {
            run: RunSpec {
                policy,
                seed: self.seed,
                heartbeat_s: ms(self.heartbeat_ms),
                missed_beats: self.missed_beats,
                max_retries: self.max_retries,
                checkpoint_s: ms(self.checkpoint_ms),
                restart_overhead_s: ms(self.restart_overhead_ms),
                ..RunSpec::default()
            },
            default_work_ms: self.default_work_ms,
            cluster: self.cluster,
            queues: self.queues,
            datasets: self.datasets,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A state directory made before live mode took a RunSpec opens with the same settings.
    #[test]
    fn a_configuration_stored_before_runspecs_reads_as_the_same_settings() {
        let old = r#"{"cluster":"2x1:SIM","policy":"srtf[duration=estimate]","seed":4,"heartbeat_ms":200,
            "missed_beats":5,"max_retries":1,"default_work_ms":2500,"queues":"","checkpoint_ms":1500,
            "restart_overhead_ms":250,"datasets":""}"#;
        let read = LiveConfig::from_stored(old).unwrap();
        let flags = [
            "--policy",
            "srtf[duration=estimate]",
            "--seed",
            "4",
            "--heartbeat-s",
            "0.2",
            "--missed-beats",
            "5",
            "--max-retries",
            "1",
            "--checkpoint-s",
            "1.5",
            "--restart-overhead-s",
            "0.25",
        ];
        let expected = LiveConfig {
            run: RunSpec::from_flags(flags).unwrap(),
            default_work_ms: 2500,
            ..LiveConfig::new("2x1:SIM", "fifo").unwrap()
        };
        assert_eq!(read, expected);
        let stored = serde_json::to_string(&read).unwrap();
        assert_eq!(LiveConfig::from_stored(&stored), Ok(read), "this form reads back as written");
        let e = LiveConfig::from_stored(&old.replace("srtf[duration=estimate]", "srtf[")).unwrap_err();
        assert!(e.starts_with("state database: the policy `srtf[`: "), "{e}");
    }
}
