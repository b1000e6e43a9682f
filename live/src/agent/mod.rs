//! The node agent (`schedlab live agent`): registers its GPUs, heartbeats, and makes the node
//! run what the coordinator says it must. Level-triggered: each heartbeat answer lists every
//! attempt the node must run; the agent starts each attempt it has never started (an attempt
//! is started at most once, whatever the coordinator or the network do), and stops, SIGTERM
//! then SIGKILL after a grace period, every process whose attempt is no longer listed
//! (preempted, failed, cancelled). Exits and GPU health events are reported until the
//! coordinator acknowledges them. If the coordinator is unreachable it keeps its processes and
//! retries; if the coordinator no longer knows it, it registers again. When an attempt's top
//! process exits on its own, the agent SIGKILLs what is left in its process group before it
//! reports the exit (a job step's end ends all of it, as with Slurm's proctrack). Each
//! attempt's process group is recorded in the work directory before its command runs, so an
//! agent that starts again first stops what its previous incarnation left running
//! (`leftovers`). It calls with a token of its own (`live issue-token`), and sends the
//! coordinator generation it registered with in every report: told that generation is stale,
//! it registers again; an answer of another generation (a coordinator that is not the one it
//! registered with) is never acted on.
//!
//! What a task may not reach: the agent's credentials (removed from every task's
//! environment, and the agent's own memory and environment closed to its tasks, see
//! [`processes`]); more of the node's disk than its log limit ([`tasklog`]). A work directory
//! that cannot be written fails the node, not the task ([`faults`]).

pub mod backend;
mod faults;
mod leftovers;
mod processes;
mod tasklog;

use crate::net::client::{CallError, Client};
use crate::wire::{
    Assignment, AssignmentsReply, ExitReport, HealthEvent, HeartbeatReply, HeartbeatRequest, RegisterReply,
    RegisterRequest, STALE_GENERATION,
};
use backend::GpuBackend;
use faults::{FaultFlag, is_node_fault};
use leftovers::Record;
use processes::{Running, exited_unreaped, signal_group};
use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
pub use tasklog::DEFAULT_LOG_LIMIT;

pub struct AgentOptions {
    pub coordinator: String,
    pub token: String,
    /// For an `https://` coordinator: whom to trust, and the client certificate to show.
    pub tls: crate::net::client::ClientTls,
    pub name: String,
    /// How other nodes reach this one.
    pub addr: String,
    /// Ask for this node of the cluster.
    pub node: Option<u32>,
    /// Between heartbeats, ask for new assignments this often (a start reaches the node
    /// within this, not within a heartbeat interval).
    pub poll: Duration,
    /// SIGTERM, then SIGKILL after this long.
    pub grace: Duration,
    /// Task logs (`logs/`), checkpoints (`checkpoints/JOB/TASK`, kept across attempts) and the
    /// record of the process groups it started (`process-groups.json`).
    pub work_dir: PathBuf,
    pub quiet: bool,
}

pub struct Agent {
    options: AgentOptions,
    backend: Box<dyn GpuBackend>,
    client: Client,
    registered: Option<RegisterReply>,
    /// This process registered once already (so a registration again is not a restart).
    ever_registered: bool,
    /// The newest coordinator generation it registered with: a coordinator of an older one is
    /// not the current coordinator, and nothing it says is acted on.
    newest_generation: u64,
    /// Why the coordinator refused to register it (401 or 403): the agent stops.
    refused: Option<String>,
    /// Every (task, attempt) ever started here: never started again.
    started: BTreeSet<(u32, u32)>,
    /// Attempts not yet reaped. A stopped one whose top process exited stays until its group
    /// is empty or SIGKILLed at the end of the grace period, holding its GPUs until then.
    running: BTreeMap<(u32, u32), Running>,
    exits: Vec<ExitReport>,
    health: Vec<HealthEvent>,
    /// What the last heartbeat answer said this node must run.
    assignments: Vec<Assignment>,
    /// The process groups that may still have processes: those running, and those whose top
    /// process ended while something it started did not yet (killed or being stopped;
    /// forgotten once they are gone).
    record: Record,
    /// A task's log is cut at this many bytes.
    log_limit: u64,
    /// A node fault a task log's thread saw (its disk cannot be written).
    fault: FaultFlag,
    /// The GPUs it reported out of service for a node fault, until they get work again.
    reported_out: BTreeSet<String>,
}

/// The record of process groups, in the work directory.
const RECORD: &str = "process-groups.json";

impl Agent {
    pub fn new(options: AgentOptions, backend: Box<dyn GpuBackend>) -> Result<Agent, String> {
        let timeout = Duration::from_secs(10);
        let client = Client::with_tls(&options.coordinator, &options.token, timeout, &options.tls)?;
        Ok(Agent {
            backend,
            client,
            registered: None,
            ever_registered: false,
            newest_generation: 0,
            refused: None,
            started: BTreeSet::new(),
            running: BTreeMap::new(),
            exits: Vec::new(),
            health: Vec::new(),
            assignments: Vec::new(),
            record: Record::new(&options.work_dir.join(RECORD)),
            log_limit: DEFAULT_LOG_LIMIT,
            fault: FaultFlag::default(),
            reported_out: BTreeSet::new(),
            options,
        })
    }

    /// Cuts each task's log at `bytes` (default [`DEFAULT_LOG_LIMIT`]); the task runs on.
    pub fn with_log_limit(mut self, bytes: u64) -> Agent {
        self.log_limit = bytes;
        self
    }

    fn log(&self, message: impl std::fmt::Display) {
        if !self.options.quiet {
            eprintln!("agent {}: {}", self.options.name, crate::wire::log_line(&message.to_string()));
        }
    }

    /// Runs until `stop` is set; then stops its processes (SIGTERM, grace, SIGKILL).
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), String> {
        // Before any task runs: tasks run as the agent's user, who may otherwise read its
        // memory and environment (its token) through /proc.
        if let Err(e) = processes::close_to_tasks() {
            self.log(format!("cannot make the agent undumpable ({e}): its tasks may read its memory"));
        }
        // Before anything in the work directory: another agent on it would be running what the
        // record lists, not leftovers of a previous run.
        let _lock = crate::lock::WorkDirLock::acquire(&self.options.work_dir)?;
        // Before registering: the coordinator retries what ran here, maybe on these GPUs.
        self.record = Record::load(&self.options.work_dir.join(RECORD))?;
        let stopped = leftovers::stop_leftovers(&mut self.record, self.options.grace)
            .map_err(|e| format!("{}: {e}", self.options.work_dir.join(RECORD).display()))?;
        for g in stopped {
            self.log(format!(
                "stopped leftover process group {} of task {} attempt {} from a previous run",
                g.pgid, g.task, g.attempt
            ));
        }
        let gpus = self.backend.gpus().map_err(|e| e.to_string())?;
        self.log(format!("{} backend, {} GPUs", self.backend.kind(), gpus.len()));
        for g in &gpus {
            self.log(format!("  GPU {} {} {} {} MiB", g.index, g.uuid, g.name, g.memory_total_mib));
        }
        let mut backoff = Duration::from_millis(100);
        while !stop.load(Ordering::Relaxed) {
            let interval = match self.step() {
                Ok(h) => {
                    backoff = Duration::from_millis(100);
                    h
                }
                Err(e) if self.refused.is_some() => {
                    self.stop_all();
                    return Err(e);
                }
                Err(e) => {
                    self.log(format!("{e}; retrying in {:?}", backoff));
                    let wait = backoff;
                    backoff = (backoff * 2).min(Duration::from_secs(2));
                    wait
                }
            };
            // Wait for the next beat, but report an exit at once.
            let until = Instant::now() + interval;
            let mut polled = Instant::now();
            while Instant::now() < until && !stop.load(Ordering::Relaxed) {
                self.collect_health(20);
                if self.reap() || !self.health.is_empty() {
                    break;
                }
                if let Some(generation) = self.generation()
                    && polled.elapsed() >= self.options.poll
                {
                    polled = Instant::now();
                    let path = format!("/v1/agents/{}/assignments?generation={generation}", self.options.name);
                    match self.client.get::<AssignmentsReply>(&path) {
                        Ok(r) if r.generation == generation => self.assignments = r.assignments,
                        Ok(r) => self.log(format!(
                            "ignored the assignments of coordinator generation {} (registered with {generation})",
                            r.generation
                        )),
                        Err(_) => {} // the next heartbeat says what is wrong
                    }
                }
                // Escalate stops past their grace; start what waited for a stopped process.
                let assignments = std::mem::take(&mut self.assignments);
                self.reconcile(&assignments);
                self.assignments = assignments;
            }
        }
        let why = crate::signals::received().unwrap_or("asked to");
        self.log(format!("stopping ({why}): its tasks get SIGTERM, SIGKILL after --grace-s; then it exits"));
        self.stop_all();
        Ok(())
    }

    /// One heartbeat (registering first if needed); the interval until the next.
    fn step(&mut self) -> Result<Duration, String> {
        if self.registered.is_none() {
            let gpus = self.backend.gpus().map_err(|e| e.to_string())?;
            let request = RegisterRequest {
                name: self.options.name.clone(),
                addr: self.options.addr.clone(),
                gpus,
                node: self.options.node,
                fresh: !self.ever_registered,
            };
            let reply: RegisterReply = match self.client.post("/v1/agents/register", &request) {
                Ok(reply) => reply,
                // A wrong token, a user's token, another agent's: retrying cannot help.
                Err(e @ CallError::Status(401 | 403, _)) => {
                    let e = format!("registration refused: {e}");
                    self.refused = Some(e.clone());
                    return Err(e);
                }
                Err(e) => return Err(e.to_string()),
            };
            if reply.generation < self.newest_generation {
                return Err(format!(
                    "the coordinator answered as generation {}, older than generation {} this agent registered with: \
                     it is not the current coordinator; nothing it says is acted on",
                    reply.generation, self.newest_generation
                ));
            }
            self.log(format!(
                "registered as node {} (heartbeat {} ms, coordinator generation {})",
                reply.node, reply.heartbeat_ms, reply.generation
            ));
            self.newest_generation = reply.generation;
            self.registered = Some(reply);
            self.ever_registered = true;
        }
        self.collect_health(0);
        self.reap();
        self.forget_ended_groups();
        let request = HeartbeatRequest {
            name: self.options.name.clone(),
            exits: self.exits.clone(),
            health: self.health.clone(),
            gpus: self.backend.gpus().unwrap_or_default(),
            processes: self.backend.processes().unwrap_or_default(),
            generation: self.generation().unwrap_or(0),
        };
        let reply: HeartbeatReply = match self.client.post("/v1/agents/heartbeat", &request) {
            Ok(r) => r,
            Err(CallError::Status(404, _)) => {
                self.registered = None;
                return Err("the coordinator does not know this agent; registering again".into());
            }
            Err(CallError::Status(409, reason)) if reason.starts_with(STALE_GENERATION) => {
                self.registered = None;
                return Err(format!("{reason}; registering again"));
            }
            Err(e) => return Err(e.to_string()),
        };
        if reply.generation != request.generation {
            // Not the coordinator it registered with: its assignments and acknowledgements are
            // not acted on (what was reported is sent again), and it registers again.
            self.registered = None;
            return Err(format!(
                "ignored a heartbeat answer of coordinator generation {} (registered with {}); registering again",
                reply.generation, request.generation
            ));
        }
        self.health.drain(..request.health.len());
        self.exits.retain(|x| !reply.acked.contains(x));
        self.reconcile(&reply.assignments);
        self.assignments = reply.assignments;
        Ok(Duration::from_millis(reply.heartbeat_ms.max(10)))
    }

    /// The coordinator generation it registered with, if it is registered.
    fn generation(&self) -> Option<u64> {
        self.registered.as_ref().map(|r| r.generation)
    }

    fn collect_health(&mut self, timeout_ms: u32) {
        match self.backend.health(timeout_ms) {
            Ok(events) => {
                for e in &events {
                    self.log(format!("health: {e}"));
                }
                self.health.extend(events);
            }
            Err(e) => {
                self.log(format!("health: {e}"));
                std::thread::sleep(Duration::from_millis(u64::from(timeout_ms)));
            }
        }
    }

    /// Starts what is new, stops what is gone.
    fn reconcile(&mut self, assignments: &[Assignment]) {
        self.note_returned(assignments);
        self.drain_on_fault();
        let wanted: BTreeSet<(u32, u32)> = assignments.iter().map(|a| (a.task, a.attempt)).collect();
        for a in assignments {
            let key = (a.task, a.attempt);
            // A process being stopped still holds its GPUs: start what replaces it once it is gone.
            let busy =
                self.running.iter().any(|(k, r)| !wanted.contains(k) && r.gpus.iter().any(|g| a.gpus.contains(g)));
            if busy && !self.started.contains(&key) {
                continue;
            }
            if self.started.insert(key) {
                match self.spawn(a) {
                    Ok((child, log)) => {
                        self.log(format!(
                            "started {}/{} attempt {} (pid {}) on {}",
                            a.job,
                            a.task_name,
                            a.attempt,
                            child.id(),
                            a.gpus.join(",")
                        ));
                        self.running.insert(key, Running { child, gpus: a.gpus.clone(), stopping: None, log });
                    }
                    Err(e) => {
                        let (job, task) = (crate::wire::shown(&a.job), crate::wire::shown(&a.task_name));
                        let what = format!("cannot start {job}/{task} attempt {}", a.attempt);
                        if is_node_fault(&e) {
                            // Not reported as an exit: the coordinator retries the attempt elsewhere.
                            self.drain(Some(a), &format!("{what}: its work directory cannot be written ({e})"));
                        } else {
                            self.log(format!("{what}: {e}"));
                            self.exits.push(ExitReport { task: a.task, attempt: a.attempt, code: 127 });
                        }
                    }
                }
            }
        }
        let now = Instant::now();
        for (key, r) in self.running.iter_mut() {
            if wanted.contains(key) {
                continue;
            }
            match r.stopping {
                None => {
                    r.stopping = Some(now);
                    signal_group(&r.child, libc::SIGTERM);
                    if !self.options.quiet {
                        eprintln!("agent {}: stopping task {} attempt {} (SIGTERM)", self.options.name, key.0, key.1);
                    }
                }
                Some(since) if now.duration_since(since) >= self.options.grace => {
                    // Once the top process has exited, `reap` SIGKILLs what is left (it counts
                    // and logs them); killing here first would hide them from its count.
                    let exited = i32::try_from(r.child.id()).is_ok_and(|pid| matches!(exited_unreaped(pid), Ok(true)));
                    if !exited {
                        signal_group(&r.child, libc::SIGKILL);
                    }
                }
                Some(_) => {}
            }
        }
    }
}
