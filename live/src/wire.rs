//! What goes over the wire: the JSON bodies of the HTTP API (an agent's GPUs, health events and
//! processes among them), and their validation. Bad input is a [`Refusal`] with the reason,
//! never a panic.

use serde::{Deserialize, Serialize};

/// `POST /v1/jobs`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct JobRequest {
    /// Unique among the coordinator's jobs; letters, digits, `-`, `_`, `.`.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue: Option<String>,
    /// Higher is more urgent (the trace's `priority`: what `priority` and `weighted-score` read).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub priority: i32,
    /// Seconds after submission by which the job should end (the trace's `deadline_s`): it
    /// shrinks the retry budget after failures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_s: Option<serde_json::Number>,
    pub tasks: Vec<TaskRequest>,
    /// Who the job is charged to (the trace's `account`, `user`, `qos`: what fair-share
    /// policies such as `slurm` read). The API's own submissions leave them empty; the Slurm
    /// executor fills them from Slurm's job.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub account: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub user: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub qos: String,
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
    /// Exactly this many of its GPUs on each node it uses (whole nodes of a multi-node gang,
    /// as `torchrun --nproc-per-node` expects); it divides `gpus`. None: any split.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpus_per_node: Option<u32>,
    /// What the user expects it to take, seconds (what `duration=estimate` policies see).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub estimate_s: Option<serde_json::Number>,
    /// What the task waits for inside its job, as a trace's `depends_on` items: `prep` (prep
    /// succeeded, i.e. exited 0), `prep:any` (ended), `prep:failure`, `prep:data=SECONDS`
    /// (has done that much work), `prep:checkpoint=N`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub depends_on: Vec<String>,
    /// A share of one GPU in milli-GPUs, 1 to 999, for a task that shares its GPU with other
    /// shared tasks (`gpus` must then be 1): the agent gives it the GPU and
    /// `SCHEDLAB_GPU_MILLI`; keeping to the share is the program's part.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_milli: Option<u32>,
    /// Work between the program's checkpoints, seconds (0: continuous): what the Controller
    /// counts a failure or preemption as losing. None: the coordinator's `--checkpoint-s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checkpoint_s: Option<serde_json::Number>,
    /// What each restart costs before progress, seconds. None: `--restart-overhead-s`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restart_overhead_s: Option<serde_json::Number>,
    /// The task starts no earlier than this many seconds after the job's submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_before_s: Option<serde_json::Number>,
    /// The task fails if it has not started this many seconds after the job's submission.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_after_s: Option<serde_json::Number>,
    /// The dataset it reads: one of the coordinator's `--datasets` (a label without them).
    /// The agent passes it as `SCHEDLAB_DATASET`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
    /// Its speed on GPU types, as the trace's `speeds` column spells it (`A100=3;V100=1.2`),
    /// in place of the pools' speeds: what `placement=fastest` and the Controller's model of
    /// progress read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speeds: Option<String>,
}

fn one() -> u32 {
    1
}

impl JobRequest {
    /// A job of `tasks`, with every job option at its default.
    pub fn new(name: impl Into<String>, tasks: Vec<TaskRequest>) -> JobRequest {
        JobRequest { name: name.into(), queue: None, priority: 0, deadline_s: None, tasks, ..Default::default() }
    }
}

impl TaskRequest {
    /// A one-GPU task running `command`, with every other option at its default.
    pub fn new(name: impl Into<String>, command: impl Into<String>) -> TaskRequest {
        TaskRequest {
            name: name.into(),
            command: command.into(),
            gpus: 1,
            gpu_type: None,
            single_node: false,
            gpus_per_node: None,
            estimate_s: None,
            depends_on: Vec::new(),
            gpu_milli: None,
            checkpoint_s: None,
            restart_overhead_s: None,
            not_before_s: None,
            not_after_s: None,
            dataset: None,
            speeds: None,
        }
    }
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

/// Whether `name` is a plain name: 1 to 128 letters, digits, `-`, `_` and `.`, and not `.`
/// or `..`. What becomes a path component (jobs, tasks and agents name files and directories)
/// must be one, so that no name leaves the directory it is joined to.
pub fn is_plain_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && name != "."
        && name != ".."
        && name.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// `name` for a message: as is when it is printable ASCII, else escaped (`\n`, `\u{0}`), so
/// that a name refused for a newline cannot write a line of its own into a log.
pub fn shown(name: &str) -> String {
    let short: String = name.chars().take(160).collect();
    let more = if short.len() < name.len() { "..." } else { "" };
    format!("{}{more}", short.escape_debug())
}

/// `text` as one line of a log: control characters (a newline, a carriage return, an escape)
/// escaped, so that nothing a client sent can begin a line of its own or move the cursor.
pub fn log_line(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars().map(|c| if c.is_control() { c.escape_default().to_string() } else { c.to_string() }).collect()
}

pub fn check_name(what: &str, name: &str) -> Result<(), Refusal> {
    if is_plain_name(name) {
        Ok(())
    } else {
        Err(Refusal::bad(format!(
            "{what} `{}`: use 1 to 128 letters, digits, `-`, `_` or `.`, and not `.` or `..` alone (it names files and trace rows)",
            shown(name)
        )))
    }
}

/// The longest start window, in seconds after submission. A window is a time in the session's
/// trace, which holds times up to 10^12 s (the job builder's bound, [`traces::timeparse::MAX_SECONDS`]):
/// this bound on the offset leaves room for any session's clock, so that a window accepted
/// when a job is checked (before its submit time is known) is one the journal can always
/// write.
pub const MAX_WINDOW_S: u64 = 1_000_000_000;

/// The longest command: the agent runs it as one argument of `sh -c`, and Linux refuses an
/// argument of 128 KiB or more (MAX_ARG_STRLEN) with E2BIG, which the node saw as exit 127.
pub const MAX_COMMAND_BYTES: usize = 128 * 1024 - 1;

/// The most tasks one job may have: a bound on what one request makes the coordinator check.
pub const MAX_JOB_TASKS: usize = 10_000;

/// `n` seconds in milliseconds (the JSON number's syntax; which values the field may hold,
/// the job builder says); refused naming `owner` (the job or task), the field and what was
/// expected.
fn seconds_ms(owner: &str, field: &str, n: Option<&serde_json::Number>) -> Result<Option<u64>, Refusal> {
    let Some(n) = n else { return Ok(None) };
    traces::parse_seconds_ms(&n.to_string())
        .map(Some)
        .map_err(|e| Refusal::bad(format!("{owner}: {field} {n}: expected {}", e.expected())))
}

/// A field the job builder refused, as the API says it: the job or task, the field, what the
/// caller sent (`sent`, or the part of it at fault) and what was expected.
fn refused(owner: &str, e: traces::FieldError, sent: String) -> Refusal {
    let sent = match e.found {
        Some(part) => format!("`{}`", shown(&part)),
        None => sent,
    };
    Refusal::bad(format!("{owner}: {} {sent}: expected {}", e.field, e.expected))
}

/// A string field as a refusal shows it.
fn quoted(text: Option<&str>) -> String {
    text.map_or_else(String::new, |t| format!("`{}`", shown(t)))
}

/// A number field as a refusal shows it.
fn number(n: Option<&serde_json::Number>) -> String {
    n.map(ToString::to_string).unwrap_or_default()
}

impl JobRequest {
    /// The job as the Controller runs it, submitted at `submit`: a task without an estimate
    /// is assumed to take `default_work` until its process ends; start windows, given in
    /// seconds after submission, become trace time. Checked by the job builder that checks a
    /// trace's job ([`traces::job_builder`]: one rule per field), then by the simulator (the
    /// DAG, a cycle printed as its path), every refusal naming the task and field. Names are
    /// plain names besides ([`check_name`]): live mode makes files and directories of them.
    pub fn to_spec(&self, submit: sim::SimTime, default_work: sim::SimDuration) -> Result<sim::JobSpec, Refusal> {
        check_name("job name", &self.name)?;
        if let Some(q) = &self.queue {
            check_name("queue", q)?;
        }
        for (what, name) in [("account", &self.account), ("user", &self.user), ("qos", &self.qos)] {
            if !name.is_empty() {
                check_name(what, name)?;
            }
        }
        if self.tasks.is_empty() {
            return Err(Refusal::bad(format!("job `{}` has no tasks", self.name)));
        }
        if self.tasks.len() > MAX_JOB_TASKS {
            return Err(Refusal::bad(format!("job `{}` has {} tasks; at most 10,000", self.name, self.tasks.len())));
        }
        // Each task's name checked once, duplicates found in O(log n) each.
        let mut names = std::collections::BTreeSet::new();
        for t in &self.tasks {
            check_name("task name", &t.name)?;
            if !names.insert(t.name.as_str()) {
                let e = traces::job_builder::duplicate_task(&self.name);
                return Err(Refusal::bad(format!(
                    "job `{}`: task name `{}`: expected {}",
                    self.name, t.name, e.expected
                )));
            }
        }
        let mut tasks = self.tasks.iter().map(|t| t.to_spec(submit, default_work)).collect::<Result<Vec<_>, _>>()?;
        let resolver = traces::DepResolver::new(&tasks);
        let mut deps = Vec::with_capacity(tasks.len());
        for t in &self.tasks {
            let owner = format!("task `{}`", t.name);
            deps.push(
                resolver
                    .resolve(t.depends_on.iter().map(String::as_str))
                    .map_err(|e| refused(&owner, e, quoted(t.depends_on.first().map(String::as_str))))?,
            );
        }
        for (task, deps) in tasks.iter_mut().zip(deps) {
            task.deps = deps;
        }
        let owner = format!("job `{}`", self.name);
        let job = traces::JobFields {
            name: &self.name,
            submit_ms: submit.as_ms(),
            queue: self.queue.as_deref(),
            deadline_ms: seconds_ms(&owner, "deadline_s", self.deadline_s.as_ref())?,
            priority: self.priority,
            cancel_ms: None,
            account: &self.account,
            user: &self.user,
            qos: &self.qos,
        };
        let spec = job.build(tasks.into()).map_err(|e| {
            let sent = match e.field {
                "deadline_s" => number(self.deadline_s.as_ref()),
                "queue" => quoted(self.queue.as_deref()),
                _ => quoted(Some(&self.name)),
            };
            refused(&owner, e, sent)
        })?;
        // The simulator's own checks of a job: the DAG (a cycle as its path).
        sim::Workload::new(vec![spec.clone()]).map_err(|e| Refusal::bad(e.to_string()))?;
        Ok(spec)
    }
}

impl TaskRequest {
    /// The task, without its dependencies (the job resolves them), checked by the job
    /// builder.
    fn to_spec(&self, submit: sim::SimTime, default_work: sim::SimDuration) -> Result<sim::TaskSpec, Refusal> {
        let name = self.name.as_str();
        if self.command.trim().is_empty() {
            return Err(Refusal::bad(format!("task `{name}`: the command is empty")));
        }
        if self.command.len() > MAX_COMMAND_BYTES {
            return Err(Refusal::bad(format!(
                "task `{name}`: the command is {} bytes; at most {MAX_COMMAND_BYTES} (the kernel takes no longer \
                 argument): put a longer one in a script",
                self.command.len()
            )));
        }
        if let Some(ty) = &self.gpu_type {
            check_name("gpu_type", ty)?;
        }
        if let Some(dataset) = &self.dataset {
            check_name("dataset", dataset)?;
        }
        let owner = format!("task `{name}`");
        let seconds = |field: &str, n: &Option<serde_json::Number>| seconds_ms(&owner, field, n.as_ref());
        let estimate_ms = seconds("estimate_s", &self.estimate_s)?;
        // Start windows are seconds after submission, at most MAX_WINDOW_S: trace time from
        // the submit on.
        let window_s = |field: &str, n: &Option<serde_json::Number>| match seconds(field, n)? {
            Some(ms) if ms > MAX_WINDOW_S * 1000 => Err(Refusal::bad(format!(
                "task `{name}`: {field} {}: expected at most {MAX_WINDOW_S} s (about 31 years) after submission",
                number(n.as_ref())
            ))),
            ms => Ok(ms.map(|ms| submit.as_ms().saturating_add(ms))),
        };
        let most_ms = traces::timeparse::MAX_SECONDS * 1000;
        let fields = traces::TaskFields {
            name: name.into(),
            gpus: self.gpus,
            gpu_milli: self.gpu_milli,
            gpu_type: self.gpu_type.as_deref(),
            single_node: self.single_node,
            gpus_per_node: self.gpus_per_node,
            // Without an estimate, the assumed work until the process ends.
            work_ms: estimate_ms.unwrap_or(default_work.as_ms().clamp(1, most_ms)),
            estimate_ms,
            checkpoint_ms: seconds("checkpoint_s", &self.checkpoint_s)?,
            restart_overhead_ms: seconds("restart_overhead_s", &self.restart_overhead_s)?,
            checkpoint_cost_ms: None,
            not_before_ms: window_s("not_before_s", &self.not_before_s)?,
            not_after_ms: window_s("not_after_s", &self.not_after_s)?,
            dataset: self.dataset.as_deref(),
            speeds: self.speeds.as_deref(),
            exit_code: 0,
        };
        fields.build(submit).map_err(|e| {
            let sent = match e.field {
                "gpus" => self.gpus.to_string(),
                "gpu_milli" => self.gpu_milli.map(|m| m.to_string()).unwrap_or_default(),
                "gpus_per_node" => self.gpus_per_node.map(|n| n.to_string()).unwrap_or_default(),
                "gpu_type" => quoted(self.gpu_type.as_deref()),
                "estimate_s" | "duration_s" => number(self.estimate_s.as_ref()),
                "checkpoint_s" => number(self.checkpoint_s.as_ref()),
                "restart_overhead_s" => number(self.restart_overhead_s.as_ref()),
                "not_before_s" => number(self.not_before_s.as_ref()),
                "not_after_s" => number(self.not_after_s.as_ref()),
                "dataset" => quoted(self.dataset.as_deref()),
                "speeds" => quoted(self.speeds.as_deref()),
                _ => String::new(),
            };
            refused(&owner, e, sent)
        })
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
    /// The coordinator's generation (one more at each of its starts): the agent sends it with
    /// every report and acts only on answers that carry it.
    #[serde(default)]
    pub generation: u64,
}

/// The start of the reason of a `409` answer to a report (or a request for assignments) whose
/// generation is not the coordinator's: the agent registers again to learn the new one.
pub const STALE_GENERATION: &str = "stale coordinator generation";

/// One attempt's process ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
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
    /// The coordinator generation the agent registered with (0: none, always refused).
    #[serde(default)]
    pub generation: u64,
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
    /// The task's share of its one GPU (`SCHEDLAB_GPU_MILLI`), if it shares it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_milli: Option<u32>,
    /// The dataset it reads (`SCHEDLAB_DATASET`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeartbeatReply {
    pub assignments: Vec<Assignment>,
    /// Exit reports the coordinator has recorded: the agent may forget them.
    pub acked: Vec<ExitReport>,
    pub heartbeat_ms: u64,
    /// The generation of the coordinator that answers.
    #[serde(default)]
    pub generation: u64,
}

/// `GET /v1/agents/NAME/assignments?generation=G`: what the node must run, by the coordinator
/// of this generation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AssignmentsReply {
    pub generation: u64,
    pub assignments: Vec<Assignment>,
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

/// One GPU as its agent's backend sees it now (registered, and reported in heartbeats).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuInfo {
    /// The driver's index (the order `nvidia-smi` lists).
    pub index: u32,
    /// Globally unique, e.g. `GPU-8f6c...`: what CUDA_VISIBLE_DEVICES is set to.
    pub uuid: String,
    pub name: String,
    pub memory_total_mib: u64,
    pub memory_used_mib: u64,
    /// GPU utilisation over the driver's last sample period, percent.
    pub utilisation_pct: u32,
    pub temperature_c: u32,
}

/// Something wrong with a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum HealthEvent {
    /// A critical XID error (NVML event set); `code` is the XID (e.g. 79: fell off the bus).
    Xid { uuid: String, code: u64 },
    /// The GPU's uncorrected (volatile) ECC error count went up to `count`.
    Ecc { uuid: String, count: u64 },
    /// The GPU no longer answers (NVML_ERROR_GPU_IS_LOST).
    Lost { uuid: String },
    /// The node's work directory cannot be written (a full disk, over quota, read-only,
    /// failing): the agent takes the GPU out of service, a fault of the node and not of any
    /// task (`error` as the system said it).
    WorkDir { uuid: String, error: String },
}

impl HealthEvent {
    pub fn uuid(&self) -> &str {
        match self {
            HealthEvent::Xid { uuid, .. }
            | HealthEvent::Ecc { uuid, .. }
            | HealthEvent::Lost { uuid }
            | HealthEvent::WorkDir { uuid, .. } => uuid,
        }
    }
}

impl std::fmt::Display for HealthEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HealthEvent::Xid { uuid, code } => write!(f, "XID {code} on {uuid}"),
            HealthEvent::Ecc { uuid, count } => write!(f, "{count} uncorrected ECC errors on {uuid}"),
            HealthEvent::Lost { uuid } => write!(f, "{uuid} lost (fell off the bus)"),
            HealthEvent::WorkDir { uuid, error } => {
                write!(f, "work directory unwritable ({error}); {uuid} out of service")
            }
        }
    }
}

/// A process holding a compute context on a GPU.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuProcess {
    pub uuid: String,
    pub pid: u32,
    pub used_memory_mib: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The work assumed for a task without an estimate.
    const HOUR: sim::SimDuration = sim::SimDuration(3_600_000);

    fn task(name: &str, deps: &[&str]) -> TaskRequest {
        TaskRequest { depends_on: deps.iter().map(|d| d.to_string()).collect(), ..TaskRequest::new(name, "true") }
    }

    #[test]
    fn cycles_are_refused_with_their_path() {
        let job = |tasks| JobRequest::new("j", tasks);
        assert!(job(vec![task("a", &[]), task("b", &["a"])]).to_spec(sim::SimTime::ZERO, HOUR).is_ok());
        let e = job(vec![task("a", &["c"]), task("b", &["a"]), task("c", &["b"])])
            .to_spec(sim::SimTime::ZERO, HOUR)
            .unwrap_err();
        assert_eq!(e.reason, "job `j`: its tasks' dependencies form a cycle: a -> b -> c -> a");
        assert!(job(vec![task("a", &["a"])]).to_spec(sim::SimTime::ZERO, HOUR).is_err());
        let e = job(vec![task("x", &["y"]), task("y", &["x"])]).to_spec(sim::SimTime::ZERO, HOUR).unwrap_err();
        assert_eq!((e.status, e.reason.as_str()), (400, "job `j`: its tasks' dependencies form a cycle: x -> y -> x"));
    }

    #[test]
    fn bad_jobs_are_refused_with_the_reason() {
        let job = |tasks| JobRequest::new("j", tasks);
        assert!(job(vec![]).to_spec(sim::SimTime::ZERO, HOUR).unwrap_err().reason.contains("no tasks"));
        assert!(
            job(vec![task("a", &[]), task("a", &[])])
                .to_spec(sim::SimTime::ZERO, HOUR)
                .unwrap_err()
                .reason
                .contains("task name `a`: expected a name not used before by a task of job `j`")
        );
        assert!(
            job(vec![task("a", &["zz"])])
                .to_spec(sim::SimTime::ZERO, HOUR)
                .unwrap_err()
                .reason
                .contains("depends_on `zz`: expected task names of this job (a), each with an optional :kind")
        );
        let mut t = task("a", &[]);
        t.gpus = 0;
        assert_eq!(
            job(vec![t]).to_spec(sim::SimTime::ZERO, HOUR).unwrap_err().reason,
            "task `a`: gpus 0: expected a whole number of GPUs from 1 to 1000000 (the most a cluster may have)"
        );
        let mut t = task("a", &[]);
        t.estimate_s = Some(serde_json::Number::from_f64(-1.0).unwrap());
        assert!(job(vec![t]).to_spec(sim::SimTime::ZERO, HOUR).is_err());
        let mut t = task("a", &[]);
        t.estimate_s = Some(serde_json::Number::from_f64(0.25).unwrap());
        let spec = job(vec![t]).to_spec(sim::SimTime::ZERO, sim::SimDuration(9)).unwrap();
        assert_eq!(spec.tasks[0].estimate.get(), Some(sim::SimDuration(250)));
        let bad = JobRequest::new("a/b", vec![task("a", &[])]);
        assert_eq!(bad.to_spec(sim::SimTime::ZERO, HOUR).unwrap_err().status, 400);
    }

    /// The canonical `jobs.csv` reader and this reader share one job builder: a value of a
    /// field is accepted by both or refused by both, with the same words for what was
    /// expected (before, a task of 4,097 to 4,294,967,295 GPUs read from a trace was refused
    /// here, and shares and splits were refused in other words).
    #[test]
    fn the_csv_and_json_readers_accept_and_refuse_the_same_values_alike() {
        let csv = |gpus: u32, milli: Option<u32>, per_node: Option<u32>| -> Result<(), String> {
            let cell = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
            let text = format!(
                "job_id,submit_s,duration_s,gpus,gpu_milli,gpus_per_node\nj,0,1,{gpus},{},{}\n",
                cell(milli),
                cell(per_node)
            );
            match traces::read_jobs_csv(text.as_bytes(), "jobs.csv") {
                Ok(_) => Ok(()),
                Err(traces::TraceError::Field { expected, .. }) => Err(expected),
                Err(e) => Err(format!("not a field error: {e}")),
            }
        };
        let json = |gpus: u32, milli: Option<u32>, per_node: Option<u32>| -> Result<(), String> {
            let t = TaskRequest { gpus, gpu_milli: milli, gpus_per_node: per_node, ..TaskRequest::new("a", "true") };
            JobRequest::new("j", vec![t])
                .to_spec(sim::SimTime::ZERO, HOUR)
                .map(|_| ())
                .map_err(|r| r.reason.split_once(": expected ").map_or(r.reason.clone(), |(_, e)| e.to_owned()))
        };
        let mut cases = Vec::new();
        for gpus in [0, 1, 8, 4_096, 4_097, 16_384, 1_000_000, 1_000_001, u32::MAX] {
            cases.push((gpus, None, None));
        }
        for milli in [0, 1, 500, 999, 1000, 1001, 65_536] {
            cases.push((1, Some(milli), None));
            cases.push((2, Some(milli), None));
        }
        for (gpus, per_node) in [(16, 8), (12, 8), (4, 0), (8, 16), (16_384, 8), (1, 1)] {
            cases.push((gpus, None, Some(per_node)));
        }
        cases.push((1, Some(250), Some(1)));
        let mut refused = 0;
        for (gpus, milli, per_node) in cases {
            let (from_csv, from_json) = (csv(gpus, milli, per_node), json(gpus, milli, per_node));
            assert_eq!(from_csv, from_json, "gpus {gpus}, gpu_milli {milli:?}, gpus_per_node {per_node:?}");
            refused += usize::from(from_csv.is_err());
        }
        assert_eq!(refused, 18, "the cases refused");
        // A 16,384-GPU gang (LLM pre-training) is a job either way; one more GPU than any
        // cluster may have, by neither.
        assert!(json(16_384, None, None).is_ok());
        assert_eq!(
            json(1_000_001, None, None),
            Err("a whole number of GPUs from 1 to 1000000 (the most a cluster may have)".into())
        );
    }

    fn number(text: &str) -> Option<serde_json::Number> {
        Some(text.parse().unwrap())
    }

    #[test]
    fn every_trace_field_reaches_the_spec_with_windows_after_submission() {
        let job: JobRequest = serde_json::from_str(
            r#"{"name": "j", "deadline_s": 7200, "tasks": [
                {"name": "a", "command": "x", "gpu_milli": 250, "checkpoint_s": 0, "restart_overhead_s": 1.5,
                 "not_before_s": 10, "not_after_s": 60.25, "dataset": "imagenet", "speeds": "A100=2.5;V100=1"},
                {"name": "b", "command": "y", "gpus": 2, "depends_on": ["a"]},
                {"name": "c", "command": "z", "depends_on": ["a:any", "b:failure", "a:data=30", "b:checkpoint=2"]}
            ]}"#,
        )
        .unwrap();
        let spec = job.to_spec(sim::SimTime(5_000), HOUR).unwrap();
        assert_eq!((spec.submit, spec.deadline.get()), (sim::SimTime(5_000), Some(sim::SimDuration(7_200_000))));
        let a = &spec.tasks[0];
        assert_eq!((a.gpus, a.gpu_milli.map(|m| m.get())), (1, Some(250)));
        assert_eq!(
            (a.options().checkpoint, a.options().restart_overhead),
            (Some(sim::SimDuration(0)), Some(sim::SimDuration(1_500)))
        );
        assert_eq!(
            a.options().window,
            sim::Window { not_before: Some(sim::SimTime(15_000)), not_after: Some(sim::SimTime(65_250)) }
        );
        assert_eq!(a.options().dataset.as_deref(), Some("imagenet"));
        assert_eq!(
            a.options().speeds.iter().map(|(t, &m)| (t.as_str(), m)).collect::<Vec<_>>(),
            [("A100", 2500), ("V100", 1000)]
        );
        // Without an estimate, the assumed work; unset options stay the run's defaults.
        let b = &spec.tasks[1];
        assert_eq!(
            (b.work, b.estimate.get(), b.options().checkpoint, b.gpu_milli),
            (sim::SimDuration(3_600_000), None, None, None)
        );
        assert_eq!(b.deps[..], [sim::Dependency { upstream: 0, kind: sim::DepKind::Success }]);
        let kinds: Vec<(usize, sim::DepKind)> = spec.tasks[2].deps.iter().map(|d| (d.upstream, d.kind)).collect();
        use sim::DepKind::*;
        assert_eq!(kinds, [(0, Any), (1, Failure), (0, Data(sim::SimDuration(30_000))), (1, Checkpoint(2))]);
    }

    #[test]
    fn bad_trace_fields_are_refused_naming_the_task_and_field() {
        let refused =
            |t: TaskRequest| JobRequest::new("j", vec![t]).to_spec(sim::SimTime::ZERO, HOUR).unwrap_err().reason;
        let base = || TaskRequest::new("a", "true");
        assert!(
            refused(TaskRequest { gpu_milli: Some(500), gpus: 2, ..base() })
                .starts_with("task `a`: gpu_milli 500: expected no gpu_milli for a task of 2 GPUs")
        );
        assert!(refused(TaskRequest { gpu_milli: Some(1000), ..base() }).contains("1000 is a whole GPU"));
        let share = "expected a share of one GPU in milli-GPUs, a whole number from 1 to 999 (none: whole GPUs)";
        assert!(refused(TaskRequest { gpu_milli: Some(0), ..base() }).ends_with(share));
        // Past what a task holds (two bytes): refused, never truncated to a share that fits.
        for milli in [65_535, 65_536, 66_036] {
            assert!(refused(TaskRequest { gpu_milli: Some(milli), ..base() }).ends_with(share));
        }
        assert_eq!(
            refused(TaskRequest { gpus_per_node: Some(0), gpus: 2, ..base() }),
            "task `a`: gpus_per_node 0: expected a whole number that divides the task's 2 GPUs (none: any split \
             over nodes)"
        );
        assert!(
            refused(TaskRequest { gpus_per_node: Some(3), gpus: 4, ..base() }).contains("divides the task's 4 GPUs")
        );
        assert_eq!(
            refused(TaskRequest { checkpoint_s: number("-1"), ..base() }),
            "task `a`: checkpoint_s -1: expected a non-negative number of seconds"
        );
        assert_eq!(
            refused(TaskRequest { estimate_s: number("0.0004"), ..base() }),
            "task `a`: estimate_s 0.0004: expected a positive number of seconds (at least 0.001 after rounding to \
             the millisecond)"
        );
        assert_eq!(
            refused(TaskRequest { not_before_s: number("20"), not_after_s: number("10"), ..base() }),
            "task `a`: not_after_s 10: expected the end of the start window at or after its start (not_before_s)"
        );
        assert!(
            refused(TaskRequest { speeds: Some("A100=fast".into()), ..base() })
                .starts_with("task `a`: speeds `A100=fast`")
        );
        assert!(refused(TaskRequest { speeds: Some("A100=2;A100=3".into()), ..base() }).contains("each type once"));
        assert!(refused(TaskRequest { dataset: Some("a/b".into()), ..base() }).contains("dataset `a/b`"));
        let dep = |d: &str| TaskRequest { depends_on: vec![d.into()], ..TaskRequest::new("b", "true") };
        let refused_dep = |d: &str| JobRequest::new("j", vec![base(), dep(d)]).to_spec(sim::SimTime::ZERO, HOUR);
        assert!(
            refused_dep("a:sometimes")
                .unwrap_err()
                .reason
                .starts_with("task `b`: depends_on `a:sometimes`: expected a dependency kind")
        );
        assert!(refused_dep("a:checkpoint=0").is_err());
        // A data point beyond the upstream's assumed work can never be reached.
        assert!(refused_dep("a:data=7200").is_err());
        assert!(refused_dep("a:data=60").is_ok());
        let late = JobRequest { deadline_s: number("0"), ..JobRequest::new("j", vec![base()]) };
        assert!(
            late.to_spec(sim::SimTime::ZERO, HOUR)
                .unwrap_err()
                .reason
                .starts_with("job `j`: deadline_s 0: expected a positive number of seconds")
        );
        // An unknown field is refused by name, not ignored.
        let e = serde_json::from_str::<TaskRequest>(r#"{"name": "a", "command": "x", "gpu_mili": 5}"#).unwrap_err();
        assert!(e.to_string().contains("unknown field `gpu_mili`"), "{e}");
    }
}
