//! What Slurm reports, read from `squeue --json` and `sinfo --json` (Slurm 22.05's
//! openapi/v0.0.38 documents): the jobs of one partition and the nodes. Every field is
//! hostile until checked: a job's name and a node's reason are the user's and the admin's
//! text, so only typed fields are read and every name that reaches the engine or a command
//! line is checked as a plain name ([`plain`]).

use serde::Deserialize;

/// A job as `squeue --json` reports it (the fields the executor reads).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SlurmJob {
    pub job_id: u64,
    pub job_state: String,
    #[serde(default)]
    pub state_reason: String,
    #[serde(default)]
    pub partition: String,
    /// Requeues so far: each run of a job has its own count, the executor's fencing token.
    #[serde(default)]
    pub restart_cnt: u32,
    /// The nodes it runs (or ran) on, as a Slurm host list (`n[1-2]`); empty while pending.
    #[serde(default)]
    pub nodes: String,
    #[serde(default)]
    pub node_count: u32,
    /// `gres:gpu:4` or `gres:gpu:a100:4` (22.05 writes `gres:`; `gres/` is read too).
    #[serde(default)]
    pub tres_per_node: String,
    /// `--gpus=N` (a count for the whole job).
    #[serde(default)]
    pub tres_per_job: String,
    /// Minutes (None: the partition's limit, unlimited in the JSON as a huge number).
    #[serde(default)]
    pub time_limit: Option<u64>,
    /// Unix seconds.
    #[serde(default)]
    pub submit_time: u64,
    #[serde(default)]
    pub start_time: u64,
    #[serde(default)]
    pub end_time: u64,
    /// The wait status of the batch script: exit code << 8, or the signal.
    #[serde(default)]
    pub exit_code: i64,
    #[serde(default)]
    pub priority: u64,
    #[serde(default)]
    pub account: String,
    #[serde(default)]
    pub user_name: String,
    #[serde(default)]
    pub qos: String,
    /// Unmet dependencies (Slurm drops the met ones): empty when there are none.
    #[serde(default)]
    pub dependency: String,
    #[serde(default)]
    pub array_job_id: u64,
    #[serde(default)]
    pub het_job_id: u64,
}

/// A node as `sinfo --json` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct SlurmNode {
    pub name: String,
    /// `idle`, `mixed`, `allocated`, `down`, `drained`, `draining`, `completing`, ...
    pub state: String,
    #[serde(default)]
    pub state_flags: Vec<String>,
    /// `gpu:8`, `gpu:a100:8`, possibly with `(S:0-1)` and other gres after commas.
    #[serde(default)]
    pub gres: String,
    #[serde(default)]
    pub partitions: Vec<String>,
    /// Why it is out of service, as the admin or Slurm wrote it (for the log only).
    #[serde(default)]
    pub reason: String,
}

#[derive(Deserialize)]
struct Jobs {
    jobs: Vec<SlurmJob>,
}

#[derive(Deserialize)]
struct Nodes {
    nodes: Vec<SlurmNode>,
}

/// The jobs of a `squeue --json` document.
pub fn jobs(json: &str) -> Result<Vec<SlurmJob>, String> {
    serde_json::from_str::<Jobs>(json).map(|d| d.jobs).map_err(|e| format!("squeue --json: {e}"))
}

/// The nodes of a `sinfo --json` document.
pub fn nodes(json: &str) -> Result<Vec<SlurmNode>, String> {
    serde_json::from_str::<Nodes>(json).map(|d| d.nodes).map_err(|e| format!("sinfo --json: {e}"))
}

/// Where a job stands, for the executor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Pending and held: only schedlab will release it.
    Held,
    /// Pending, not held: released (by schedlab, or by someone it must stop).
    Released,
    /// Running (or suspended: it holds its nodes).
    Running,
    /// Ending or being requeued: its nodes are being freed; nothing to do until it settles.
    Completing,
    /// Ended: how, for the engine.
    Ended(End),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum End {
    /// The process exited with this code (0: completed; a timeout or a signal as 128 + it).
    Exited(i32),
    /// Cancelled (by its user or an admin).
    Cancelled,
    /// Its node failed under it (NODE_FAIL): the node's own state says the rest.
    NodeFailed,
}

impl SlurmJob {
    pub fn phase(&self) -> Phase {
        match self.job_state.as_str() {
            "COMPLETING" | "REQUEUED" | "REQUEUE_HOLD" | "REQUEUE_FED" => Phase::Completing,
            "PENDING" => {
                if self.priority == 0 || self.state_reason.starts_with("JobHeld") {
                    Phase::Held
                } else {
                    Phase::Released
                }
            }
            "RUNNING" | "SUSPENDED" | "CONFIGURING" | "RESIZING" | "STAGE_OUT" | "SIGNALING" => Phase::Running,
            "CANCELLED" => Phase::Ended(End::Cancelled),
            "NODE_FAIL" => Phase::Ended(End::NodeFailed),
            "COMPLETED" => Phase::Ended(End::Exited(0)),
            "TIMEOUT" | "DEADLINE" => Phase::Ended(End::Exited(self.exit_status().max(1))),
            // FAILED, OUT_OF_MEMORY, BOOT_FAIL, PREEMPTED and whatever a later Slurm adds.
            _ => Phase::Ended(End::Exited(self.exit_status().max(1))),
        }
    }

    /// The exit code of a wait status: the code, or 128 + the signal that ended it.
    fn exit_status(&self) -> i32 {
        let status = self.exit_code.clamp(0, i64::from(u16::MAX)) as i32;
        if status & 0x7f != 0 { 128 + (status & 0x7f) } else { status >> 8 }
    }

    /// GPUs per node and their type, from `tres_per_node`; None without GPUs.
    pub fn gpus_per_node(&self) -> Option<(u32, Option<String>)> {
        gres_gpus(&self.tres_per_node, &["gres:gpu", "gres/gpu"])
    }
}

impl SlurmNode {
    /// GPUs (and their type) the node's `gres` declares.
    pub fn gpus(&self) -> Option<(u32, Option<String>)> {
        gres_gpus(&self.gres, &["gpu"])
    }

    /// Whether the node is out of service: down, failing, not responding or drained (and
    /// nothing of the partition runs there: a draining node's jobs run to their end).
    pub fn out_of_service(&self) -> bool {
        let base = self.state.to_ascii_lowercase();
        let flags = self.state_flags.iter().map(|f| f.to_ascii_uppercase()).collect::<Vec<_>>();
        let has = |f: &str| flags.iter().any(|x| x == f);
        base.starts_with("down")
            || base.starts_with("fail")
            || base.starts_with("drained")
            || has("NOT_RESPONDING")
            || has("FAIL")
            || (has("DRAIN") && (base.starts_with("idle") || base.starts_with("drained")))
    }
}

/// The GPU count (and type) of the first gres entry named `gpu` in a Slurm gres list
/// (`gpu:a100:8(S:0-1),shard:4`, `gres:gpu:4`).
fn gres_gpus(list: &str, prefixes: &[&str]) -> Option<(u32, Option<String>)> {
    for item in list.split(',') {
        let item = item.split('(').next().unwrap_or("").trim();
        let Some(rest) = prefixes.iter().find_map(|p| item.strip_prefix(p)) else { continue };
        let parts: Vec<&str> = rest.strip_prefix(':').unwrap_or(rest).split(':').filter(|p| !p.is_empty()).collect();
        let (kind, count) = match parts.as_slice() {
            [count] => (None, *count),
            [kind, count] => (Some(kind.to_string()), *count),
            _ => continue,
        };
        if let Ok(n) = count.parse::<u32>() {
            return Some((n, kind));
        }
    }
    None
}

/// A name from Slurm that goes into the engine or onto a command line: a node, an account,
/// a user, a QOS. Plain names only ([`crate::wire::check_name`]'s rule).
pub fn plain(what: &str, name: &str) -> Result<(), String> {
    crate::wire::check_name(what, name).map_err(|r| r.reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(state: &str, reason: &str, priority: u64) -> SlurmJob {
        let json = format!(
            r#"{{"jobs":[{{"job_id":7,"job_state":"{state}","state_reason":"{reason}","priority":{priority},
            "tres_per_node":"gres:gpu:a100:4","exit_code":256,"extra":"ignored"}}]}}"#
        );
        jobs(&json).unwrap().remove(0)
    }

    #[test]
    fn phases_follow_state_and_hold() {
        assert_eq!(job("PENDING", "JobHeldUser", 0).phase(), Phase::Held);
        assert_eq!(job("PENDING", "JobHeldAdmin", 0).phase(), Phase::Held);
        assert_eq!(job("PENDING", "None", 4294901759).phase(), Phase::Released);
        assert_eq!(job("RUNNING", "None", 1).phase(), Phase::Running);
        assert_eq!(job("FAILED", "NonZeroExitCode", 1).phase(), Phase::Ended(End::Exited(1)));
        assert_eq!(job("COMPLETED", "None", 1).phase(), Phase::Ended(End::Exited(0)));
        assert_eq!(job("NODE_FAIL", "None", 1).phase(), Phase::Ended(End::NodeFailed));
        assert_eq!(job("CANCELLED", "None", 1).phase(), Phase::Ended(End::Cancelled));
    }

    #[test]
    fn gres_lists_give_gpus_and_type() {
        assert_eq!(job("PENDING", "", 0).gpus_per_node(), Some((4, Some("a100".into()))));
        assert_eq!(gres_gpus("gpu:8(S:0-1)", &["gpu"]), Some((8, None)));
        assert_eq!(gres_gpus("shard:4,gpu:v100:2", &["gpu"]), Some((2, Some("v100".into()))));
        assert_eq!(gres_gpus("gres/gpu=2", &["gres/gpu"]), None);
        assert_eq!(gres_gpus("", &["gpu"]), None);
    }

    #[test]
    fn node_states_out_of_service() {
        let node = |state: &str, flags: &[&str]| SlurmNode {
            name: "n1".into(),
            state: state.into(),
            state_flags: flags.iter().map(|f| f.to_string()).collect(),
            gres: "gpu:8".into(),
            partitions: vec![],
            reason: String::new(),
        };
        assert!(!node("idle", &[]).out_of_service());
        assert!(!node("mixed", &[]).out_of_service());
        assert!(node("down", &[]).out_of_service());
        assert!(node("idle", &["NOT_RESPONDING"]).out_of_service());
        assert!(node("idle", &["DRAIN"]).out_of_service());
        // Draining with jobs: they run on; the node leaves service once they end.
        assert!(!node("mixed", &["DRAIN"]).out_of_service());
    }

    #[test]
    fn a_document_that_is_not_squeue_is_an_error() {
        assert!(jobs("{\"jobs\": 3}").unwrap_err().starts_with("squeue --json"));
        assert!(nodes("not json").is_err());
    }
}
