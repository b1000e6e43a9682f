//! What goes over the wire: the JSON bodies of the HTTP API, and their validation. Bad input
//! is a [`Refusal`] with the reason, never a panic.

use crate::backend::{GpuInfo, GpuProcess, HealthEvent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// `POST /v1/jobs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobRequest {
    /// Unique among the coordinator's jobs; letters, digits, `-`, `_`, `.`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Higher is more urgent (the trace's `priority`: what `priority` and `weighted-score` read).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    pub tasks: Vec<TaskRequest>,
}

fn is_zero(n: &i32) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskRequest {
    /// Unique within the job.
    pub name: String,
    /// Run with `sh -c` on each node the task is placed on.
    pub command: String,
    #[serde(default = "one")]
    pub gpus: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_type: Option<String>,
    #[serde(default)]
    pub single_node: bool,
    /// What the user expects it to take, seconds (what `duration=estimate` policies see).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_s: Option<serde_json::Number>,
    /// Tasks of the same job that must succeed (exit 0) before this one is submitted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
}

fn one() -> u32 {
    1
}

/// A request refused: the HTTP status and the reason, shown to the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    pub status: u16,
    pub reason: String,
}

impl Refusal {
    pub fn new(status: u16, reason: impl Into<String>) -> Refusal {
        Refusal { status, reason: reason.into() }
    }
    pub fn bad(reason: impl Into<String>) -> Refusal {
        Refusal::new(400, reason)
    }
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.status, self.reason)
    }
}

pub(crate) fn check_name(what: &str, name: &str) -> Result<(), Refusal> {
    let ok = !name.is_empty()
        && name.len() <= 128
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'));
    if ok {
        Ok(())
    } else {
        Err(Refusal::bad(format!(
            "{what} `{name}`: use 1 to 128 letters, digits, `-`, `_` or `.` (it names files and trace rows)"
        )))
    }
}

impl JobRequest {
    /// Checks everything that does not depend on the coordinator's state; returns the tasks'
    /// estimates in milliseconds.
    pub fn validate(&self) -> Result<Vec<Option<u64>>, Refusal> {
        check_name("job name", &self.name)?;
        if let Some(q) = &self.queue {
            check_name("queue", q)?;
        }
        if self.tasks.is_empty() {
            return Err(Refusal::bad(format!("job `{}` has no tasks", self.name)));
        }
        if self.tasks.len() > 10_000 {
            return Err(Refusal::bad(format!("job `{}` has {} tasks; at most 10,000", self.name, self.tasks.len())));
        }
        let mut names = BTreeSet::new();
        let mut estimates = Vec::new();
        for t in &self.tasks {
            check_name("task name", &t.name)?;
            if !names.insert(t.name.as_str()) {
                return Err(Refusal::bad(format!("job `{}`: two tasks are named `{}`", self.name, t.name)));
            }
            if t.command.trim().is_empty() {
                return Err(Refusal::bad(format!("task `{}`: the command is empty", t.name)));
            }
            if t.gpus == 0 || t.gpus > 4096 {
                return Err(Refusal::bad(format!("task `{}`: gpus must be 1 to 4096, not {}", t.name, t.gpus)));
            }
            if let Some(ty) = &t.gpu_type {
                check_name("gpu_type", ty)?;
            }
            let estimate = match &t.estimate_s {
                None => None,
                Some(n) => {
                    let ms = traces::parse_seconds_ms(&n.to_string()).map_err(|e| {
                        Refusal::bad(format!("task `{}`: estimate_s {n}: {e:?} (seconds, e.g. 600 or 0.25)", t.name))
                    })?;
                    if ms == 0 {
                        return Err(Refusal::bad(format!("task `{}`: estimate_s must be at least 1 ms", t.name)));
                    }
                    Some(ms)
                }
            };
            estimates.push(estimate);
        }
        for t in &self.tasks {
            for d in &t.depends_on {
                if !names.contains(d.as_str()) {
                    return Err(Refusal::bad(format!(
                        "task `{}` depends on `{d}`, which is not a task of this job",
                        t.name
                    )));
                }
            }
        }
        // The simulator's own check: references, and a cycle printed as its path.
        let index = |name: &str| self.tasks.iter().position(|t| t.name == name);
        let tasks = self
            .tasks
            .iter()
            .map(|t| {
                let mut spec = sim::TaskSpec::new(t.name.clone(), t.gpus, sim::SimDuration(1));
                spec.deps = t
                    .depends_on
                    .iter()
                    .filter_map(|d| index(d))
                    .map(|upstream| sim::Dependency { upstream, kind: sim::DepKind::Success })
                    .collect();
                spec
            })
            .collect();
        let spec = sim::JobSpec {
            name: self.name.clone(),
            submit: sim::SimTime::ZERO,
            queue: None,
            deadline: None,
            cancel: None,
            priority: 0,
            tasks,
        };
        sim::dag::check_job(&spec).map_err(|e| Refusal::bad(e.to_string()))?;
        Ok(estimates)
    }
}

/// `POST /v1/agents/register`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RegisterRequest {
    pub name: String,
    /// How other nodes reach this one (SCHEDLAB_MASTER_ADDR of tasks whose rank 0 runs here).
    pub addr: String,
    pub gpus: Vec<GpuInfo>,
    /// Ask for this node of the cluster (otherwise the first free node with as many GPUs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node: Option<u32>,
    /// The agent process has just started: nothing it ran before (if it held this node
    /// already) runs any more.
    #[serde(default)]
    pub fresh: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterReply {
    pub node: u32,
    pub heartbeat_ms: u64,
}

/// One attempt's process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitReport {
    pub task: u32,
    pub attempt: u32,
    /// The exit code; a signal `s` is `128 + s`.
    pub code: i32,
}

/// `POST /v1/agents/heartbeat`: the agent is alive, what ended, what broke.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeartbeatRequest {
    pub name: String,
    #[serde(default)]
    pub exits: Vec<ExitReport>,
    #[serde(default)]
    pub health: Vec<HealthEvent>,
    /// The GPUs as the backend sees them now (for `GET /v1/cluster`).
    #[serde(default)]
    pub gpus: Vec<GpuInfo>,
    /// Compute processes on them (for `GET /v1/cluster`).
    #[serde(default)]
    pub processes: Vec<GpuProcess>,
}

/// What one node must run: the agent starts each assignment it has not started before and
/// stops every process whose assignment is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assignment {
    pub task: u32,
    pub attempt: u32,
    pub job: String,
    pub task_name: String,
    pub command: String,
    /// UUIDs of this node's GPUs for the task: CUDA_VISIBLE_DEVICES.
    pub gpus: Vec<String>,
    pub rank: u32,
    pub world_size: u32,
    pub master_addr: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatReply {
    pub assignments: Vec<Assignment>,
    /// Exit reports the coordinator has recorded: the agent may forget them.
    pub acked: Vec<ExitReport>,
    pub heartbeat_ms: u64,
}

/// The answer to `POST /v1/gpus/{uuid}/return`: where the GPU is and what it does now, after
/// the policy has had its turn (a waiting task may already hold it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GpuReturned {
    pub uuid: String,
    pub node: u32,
    pub slot: u32,
    pub agent: String,
    /// `free` or `busy`, as in `GET /v1/cluster`.
    pub state: String,
    /// `job/task (job N)` of the task that holds it, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(name: &str, deps: &[&str]) -> TaskRequest {
        TaskRequest {
            name: name.into(),
            command: "true".into(),
            gpus: 1,
            gpu_type: None,
            single_node: false,
            estimate_s: None,
            depends_on: deps.iter().map(|d| d.to_string()).collect(),
        }
    }

    #[test]
    fn cycles_are_refused_with_their_path() {
        let job = |tasks| JobRequest { name: "j".into(), queue: None, priority: 0, tasks };
        assert!(job(vec![task("a", &[]), task("b", &["a"])]).validate().is_ok());
        let e = job(vec![task("a", &["c"]), task("b", &["a"]), task("c", &["b"])]).validate().unwrap_err();
        assert_eq!(e.reason, "job `j`: its tasks' dependencies form a cycle: a -> b -> c -> a");
        assert!(job(vec![task("a", &["a"])]).validate().is_err());
        let e = job(vec![task("x", &["y"]), task("y", &["x"])]).validate().unwrap_err();
        assert_eq!((e.status, e.reason.as_str()), (400, "job `j`: its tasks' dependencies form a cycle: x -> y -> x"));
    }

    #[test]
    fn bad_jobs_are_refused_with_the_reason() {
        let job = |tasks| JobRequest { name: "j".into(), queue: None, priority: 0, tasks };
        assert!(job(vec![]).validate().unwrap_err().reason.contains("no tasks"));
        assert!(job(vec![task("a", &[]), task("a", &[])]).validate().unwrap_err().reason.contains("two tasks"));
        assert!(job(vec![task("a", &["zz"])]).validate().unwrap_err().reason.contains("not a task of this job"));
        let mut t = task("a", &[]);
        t.gpus = 0;
        assert!(job(vec![t]).validate().unwrap_err().reason.contains("gpus must be"));
        let mut t = task("a", &[]);
        t.estimate_s = Some(serde_json::Number::from_f64(-1.0).unwrap());
        assert!(job(vec![t]).validate().is_err());
        let mut t = task("a", &[]);
        t.estimate_s = Some(serde_json::Number::from_f64(0.25).unwrap());
        assert_eq!(job(vec![t]).validate().unwrap(), vec![Some(250)]);
        let bad = JobRequest { name: "a/b".into(), queue: None, priority: 0, tasks: vec![task("a", &[])] };
        assert_eq!(bad.validate().unwrap_err().status, 400);
    }
}
