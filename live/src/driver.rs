//! The live driver: the second driver of `sim::Controller`, beside the virtual-time engine.
//!
//! Its state is a pure function of the journal: a list of [`Batch`]es, each a time (SimTime
//! milliseconds since the coordinator's epoch, strictly increasing) and the inputs that arrived
//! then (submissions, process exits, heartbeats, GPU failures and repairs, agent restarts,
//! cancels, ticks). The coordinator writes a batch to SQLite before applying it, and rebuilds
//! this state after a crash by applying the journal again: the Controller and the policy are
//! deterministic, so the same journal gives the same decisions, the same attempts, the same
//! everything.
//!
//! Architecture Invariant: this module reads no clock. Batch times come from the coordinator.
//!
//! The driver translates: each input of a batch becomes an event pushed into the one engine
//! (`sim::Engine::wall`), which then runs to the batch's time, exactly as `simulate` runs a
//! trace: hardware first (the inputs in arrival order, as a trace's rows), completions and
//! timers, arrivals, cancels, wake-ups; the policy decides once if anything happened. The
//! engine alone owns what falls due (heartbeat deadlines, repairs, wake-ups, the Controller's
//! timers). Heartbeats are explicit: a node is declared dead `missed_beats x
//! heartbeat_interval` after its last delivered beat; every configured node beats once at
//! time 0. So the journal, written as a canonical trace (explicit `heartbeat` rows, `gpu_fail`
//! and `node_fail` rows with their repairs, each task's real run time as its duration),
//! replays in `schedlab simulate` with the same decisions by construction.
//!
//! A batch that brings new jobs adds each to the running Controller (`Controller::add_job`:
//! the decisions of a Controller built with every job from the start, at the cost of one
//! job); a restart applies the whole journal once ([`Driver::replay`]).

use crate::config::LiveConfig;
use crate::tally::{Tally, live_states};
use crate::wire::{Assignment, JobRequest, Refusal};
use run::Setup;
use serde::{Deserialize, Serialize};
use sim::{
    Cluster, ClusterEvent, ClusterSpec, Controller, ControllerConfig, DecisionRecord, DepKind, Engine, GpuId, JobId,
    JobOutcome, JobSpec, JobStatus, NodeId, Policy, SimDuration, SimTime, TaskId, TaskStatus, Workload,
};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// One input of a batch, as journaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Input {
    /// A job submitted through the API (already validated). Boxed: the other inputs, a
    /// heartbeat above all, are a few words, and a long session journals millions of them.
    Submit { job: Box<JobRequest> },
    /// An attempt's process ended with `code`.
    Exit { task: u32, attempt: u32, code: i32 },
    /// The node's agent reported in.
    Beat { node: u32 },
    /// A GPU failed (XID, uncorrected ECC, lost); `what` for the logs.
    GpuFail { node: u32, slot: u32, what: String },
    /// The node's agent started afresh: whatever ran there is gone (the node went down and
    /// came back at once, as a trace's `node_fail` with a 1 ms repair).
    NodeRestarted { node: u32 },
    /// The GPU works again (its agent registered again with it).
    GpuRepair { node: u32, slot: u32 },
    /// The user cancelled the job (by submission index).
    Cancel { job: u32 },
    /// Nothing arrived: a heartbeat deadline, a wake-up or a Controller timer fell due.
    Tick,
}

impl Input {
    pub fn submit(job: JobRequest) -> Input {
        Input::Submit { job: Box::new(job) }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Batch {
    pub time_ms: u64,
    pub inputs: Vec<Input>,
}

/// A Controller job: one submitted job (its dependencies the job's task DAG).
#[derive(Debug, Clone)]
struct Unit {
    submission: usize,
    spec: JobSpec,
}

/// A submitted job and where its tasks are.
#[derive(Debug, Clone)]
pub struct Submission {
    pub request: JobRequest,
    pub submit: SimTime,
    /// The Controller task of each request task, once its unit exists.
    pub task_ids: Vec<Option<TaskId>>,
    pub exit_codes: Vec<Option<i32>>,
    /// When the user cancelled it, if they did (the trace's `cancel_s`).
    pub cancelled_at: Option<SimTime>,
}

/// A running attempt and its GPUs (see [`Driver::placements`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Placement {
    pub task: TaskId,
    pub attempt: u32,
    pub submission: usize,
    /// (node, slot) of each of its GPUs, sorted.
    pub gpus: Vec<(u32, u32)>,
}

impl Placement {
    /// Its nodes, in order, each once.
    pub fn nodes(&self) -> Vec<u32> {
        let mut nodes: Vec<u32> = self.gpus.iter().map(|&(n, _)| n).collect();
        nodes.dedup();
        nodes
    }
}

pub struct Driver {
    config: LiveConfig,
    /// `config` read: the cluster, its queues and datasets, the Controller's settings.
    setup: Setup,
    /// The one engine, on the wall clock, around the session's Controller.
    engine: Engine,
    policy: Box<dyn Policy + Send>,
    /// Batches applied (the journal itself is the store's: kept here too, it would double
    /// what a long session holds in memory).
    batches: u64,
    submissions: Vec<Submission>,
    units: Vec<Unit>,
    /// The Controller task -> (submission, task index).
    task_origin: Vec<(usize, usize)>,
    /// GPUs taken out, with their failures' rows in `trace_events` (their repair is written
    /// there when the GPU returns).
    gpu_out: BTreeMap<GpuId, Vec<usize>>,
    /// Hardware events for the trace: explicit beats and GPU failures as applied.
    trace_events: Vec<ClusterEvent>,
    now: SimTime,
    /// Each submission by its (unique) name: finding a job costs one lookup, not the history.
    names: HashMap<String, usize>,
    /// Jobs by final state, completion times, decisions by kind: kept as they change.
    tally: Tally,
    /// Submissions not yet ended with a task whose start window can close: a closing window
    /// fails its task (and a plain job with it) with no decision to name the job, so these
    /// are settled after every batch until they end.
    windowed: BTreeSet<usize>,
}

/// The Controller's settings in a live session: the run's, with the decision log kept (the
/// API serves it) and invariants checked in debug builds (and tests), as the simulator does.
fn controller_config(setup: &Setup) -> ControllerConfig {
    let mut config = setup.config();
    config.check_invariants |= cfg!(debug_assertions);
    config.record_decisions = true;
    config
}

impl Driver {
    /// A fresh driver under a built-in policy; nothing applied yet (see
    /// [`Driver::start_batch`]).
    pub fn new(config: LiveConfig) -> Result<Driver, String> {
        Driver::with_registry(config, &policies::Registry::builtin())
    }

    /// A fresh driver whose policy is built from `registry` (a program's own policies).
    pub fn with_registry(config: LiveConfig, registry: &policies::Registry) -> Result<Driver, String> {
        let setup = config.setup()?;
        let policy = setup.spec().build_policy(registry).map_err(|e| e.to_string())?;
        let controller = setup.controller(policy.name(), controller_config(&setup)).map_err(|e| e.to_string())?;
        Ok(Driver {
            setup,
            engine: Engine::wall(controller),
            policy,
            batches: 0,
            submissions: Vec::new(),
            units: Vec::new(),
            task_origin: Vec::new(),
            gpu_out: BTreeMap::new(),
            trace_events: Vec::new(),
            now: SimTime::ZERO,
            names: HashMap::new(),
            tally: Tally::default(),
            windowed: BTreeSet::new(),
            config,
        })
    }

    /// The first batch of a fresh journal: every node beats once at time 0.
    pub fn start_batch(&self) -> Batch {
        let inputs = (0..self.cluster().nodes().len() as u32).map(|node| Input::Beat { node }).collect();
        Batch { time_ms: 0, inputs }
    }

    pub fn config(&self) -> &LiveConfig {
        &self.config
    }
    /// The settings the Controller runs with (those a replay in `simulate` must repeat).
    pub fn controller_config(&self) -> ControllerConfig {
        controller_config(&self.setup)
    }
    pub fn cluster(&self) -> &Cluster {
        self.setup.cluster()
    }
    pub fn cluster_spec(&self) -> &ClusterSpec {
        self.setup.cluster_spec()
    }
    pub fn controller(&self) -> &Controller {
        self.engine.controller()
    }
    pub fn submissions(&self) -> &[Submission] {
        &self.submissions
    }
    /// How many batches were applied (the length of the journal, its ticks included).
    pub fn batches_applied(&self) -> u64 {
        self.batches
    }
    pub fn decisions(&self) -> &[DecisionRecord] {
        self.controller().decision_log()
    }
    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn node_dead(&self, node: u32) -> bool {
        (node as usize) < self.cluster().nodes().len() && self.controller().health().node_dead(NodeId(node))
    }
    pub fn last_beat(&self, node: u32) -> Option<SimTime> {
        self.engine.last_beat(NodeId(node))
    }
    pub fn gpu_out(&self, gpu: GpuId) -> bool {
        self.gpu_out.contains_key(&gpu)
    }
    pub fn policy_name(&self) -> &str {
        self.policy.name()
    }

    /// The earliest time something is due without any input (a heartbeat deadline, a
    /// wake-up, a Controller timer), if any.
    pub fn next_due(&self) -> Option<SimTime> {
        self.engine.next_due()
    }

    /// Checks what a submission needs from the driver's state: a unique name, estimates when
    /// the policy reads them.
    /// The name first: a job resent under a taken name is refused before it costs anything.
    /// The job as the Controller would run it if submitted at time 0 (what the admission
    /// checks read).
    pub fn check_submission(&self, job: &JobRequest) -> Result<JobSpec, Refusal> {
        if self.names.contains_key(&job.name) {
            return Err(Refusal::new(409, format!("a job named `{}` was already submitted", job.name)));
        }
        let mut spec = job.to_spec(SimTime::ZERO, self.config.default_work())?;
        self.setup.shape_job(&mut spec);
        sim::check_job_checkpoints(&spec, self.checkpoint_interval()).map_err(|e| Refusal::bad(e.to_string()))?;
        let queues = self.setup.queues();
        if let Some(queue) = job.queue.as_deref().filter(|q| !queues.is_empty() && queues.find(q).is_none()) {
            let names: Vec<&str> = queues.iter().map(|(_, q)| q.name.as_str()).collect();
            return Err(Refusal::bad(format!(
                "queue `{queue}` is not one of this cluster's queues ({})",
                names.join(", ")
            )));
        }
        if self.policy.needs_estimates()
            && let Some(t) = spec.tasks.iter().find(|t| t.estimate.is_none())
        {
            return Err(Refusal::bad(format!(
                "policy {} uses duration estimates: task `{}` needs estimate_s",
                self.policy.name(),
                t.name
            )));
        }
        if let Some((t, dataset)) = spec
            .tasks
            .iter()
            .filter_map(|t| Some((t, t.options().dataset.as_deref()?)))
            .find(|(_, d)| !self.setup.datasets().is_empty() && self.setup.datasets().find(d).is_none())
        {
            let names: Vec<&str> = self.setup.dataset_specs().iter().map(|d| d.name.as_str()).collect();
            return Err(Refusal::bad(format!(
                "task `{}`: dataset `{dataset}` is not one of this cluster's datasets ({})",
                t.name,
                names.join(", ")
            )));
        }
        Ok(spec)
    }

    /// Applies `batch`, first applying on their own the deadlines, wake-ups and releases due
    /// before it (as [`Input::Tick`] batches, returned so the caller journals them too).
    /// Batches must come in strictly increasing time; an earlier one is refused.
    pub fn apply(&mut self, batch: Batch) -> Result<Vec<Batch>, String> {
        let at = SimTime(batch.time_ms);
        if self.batches > 0 && at <= self.now {
            return Err(format!("batch at {} ms is not after the last one ({} ms)", at.as_ms(), self.now.as_ms()));
        }
        let due = match at.as_ms().checked_sub(1) {
            Some(before) => self.engine.run_until(SimTime(before), self.policy.as_mut()),
            None => Vec::new(),
        };
        let ticks = due.into_iter().map(|t| Batch { time_ms: t.as_ms(), inputs: vec![Input::Tick] }).collect();
        self.apply_one(batch);
        Ok(ticks)
    }

    fn apply_one(&mut self, batch: Batch) {
        let at = SimTime(batch.time_ms);
        self.batches += 1;
        self.now = at;
        // New submissions join the run as they are (`Controller::add_job`: the cost of one
        // job, not of a rebuild from the journal), arriving at `at`.
        for input in &batch.inputs {
            if let Input::Submit { job } = input {
                self.add_submission(job.as_ref().clone(), at);
            }
        }
        for (i, input) in batch.inputs.iter().enumerate() {
            self.push(input, &batch.inputs[i + 1..], at);
        }
        self.push_cancels(&batch, at);
        self.engine.run_until(at, self.policy.as_mut());
        for (task, code) in self.engine.take_exits() {
            let (s, t) = self.task_origin[task.index()];
            self.submissions[s].exit_codes[t] = Some(code);
        }
        self.settle(&batch);
    }

    /// One input as the engine's event (submissions and cancels aside); `later` are the
    /// batch's inputs after it.
    fn push(&mut self, input: &Input, later: &[Input], at: SimTime) {
        match *input {
            Input::Beat { node } if (node as usize) < self.cluster().nodes().len() => {
                self.push_hardware(ClusterEvent::Heartbeat { time: at, node: NodeId(node) });
            }
            Input::GpuFail { node, slot, .. } if self.gpu_at(node, slot).is_some() => {
                // Returned in the same batch: repaired 1 ms later (the shortest repair a trace
                // writes), known now, as a replay knows it. Otherwise its repair is reported.
                let returned = later.contains(&Input::GpuRepair { node, slot });
                let repair = returned.then_some(SimDuration(1));
                if !returned {
                    let gpu = self.gpu_at(node, slot).expect("checked");
                    self.gpu_out.entry(gpu).or_default().push(self.trace_events.len());
                }
                self.push_hardware(ClusterEvent::GpuFail { time: at, node: NodeId(node), gpu: slot, repair });
            }
            // The agent started afresh: whatever ran there is gone, as a `node_fail` repaired
            // 1 ms later.
            Input::NodeRestarted { node } if (node as usize) < self.cluster().nodes().len() => {
                let repair = Some(SimDuration(1));
                self.push_hardware(ClusterEvent::NodeFail { time: at, node: NodeId(node), repair });
            }
            Input::GpuRepair { node, slot } => {
                let Some(gpu) = self.gpu_at(node, slot) else { return };
                // The failures of earlier batches (those of this one are repaired 1 ms later).
                let Some(rows) = self.gpu_out.remove(&gpu) else { return };
                for row in rows {
                    if let ClusterEvent::GpuFail { time, repair, .. } = &mut self.trace_events[row] {
                        *repair = Some(at.since(*time));
                    }
                }
                self.engine.push_gpu_repair(gpu, at);
            }
            Input::Exit { task, attempt, code } if (task as usize) < self.task_origin.len() => {
                self.engine.push_exit(TaskId(task), attempt, code, at);
            }
            _ => {}
        }
    }

    /// A hardware event, for the engine and for the session's trace.
    fn push_hardware(&mut self, event: ClusterEvent) {
        self.trace_events.push(event);
        self.engine.push_hardware(event);
    }

    /// The batch's cancels, each job once, in job order (as a replay schedules them).
    fn push_cancels(&mut self, batch: &Batch, at: SimTime) {
        let mut jobs: Vec<u32> = batch
            .inputs
            .iter()
            .filter_map(|i| match *i {
                Input::Cancel { job } => Some(job),
                _ => None,
            })
            .collect();
        jobs.sort_unstable();
        jobs.dedup();
        for job in jobs {
            let Some(s) = self.submissions.get_mut(job as usize).filter(|s| s.cancelled_at.is_none()) else {
                continue;
            };
            s.cancelled_at = Some(at);
            self.engine.push_cancel(JobId::from_index(self.unit_of(job as usize)), at);
        }
    }

    /// After a batch: the running set pruned, and the jobs something happened to (submitted,
    /// cancelled, named by a decision) tallied. In debug builds (and tests), checked against a
    /// recount of everything, as the Controller checks its invariants.
    fn settle(&mut self, batch: &Batch) {
        let c = self.engine.controller();
        let mut touched: BTreeSet<usize> = self.tally.count_decisions(c.decision_log()).collect();
        let first_new =
            self.submissions.len() - batch.inputs.iter().filter(|i| matches!(i, Input::Submit { .. })).count();
        touched.extend(first_new..self.submissions.len());
        touched.extend(batch.inputs.iter().filter_map(|i| match *i {
            Input::Cancel { job } if (job as usize) < self.submissions.len() => Some(job as usize),
            _ => None,
        }));
        touched.extend(self.windowed.iter().copied());
        for s in touched {
            self.tally.settle(s, self.job_state(s));
            let job = self.controller().job(JobId::from_index(s));
            if let (Some(JobOutcome::Succeeded), Some(end)) = (&job.outcome, job.end.get()) {
                let submit = self.controller().job_spec(JobId::from_index(s)).submit;
                self.tally.succeeded(s, end.since(submit).as_ms());
            }
        }
        let ended: Vec<usize> = self.windowed.iter().copied().filter(|&s| self.tally.has_ended(s)).collect();
        for s in ended {
            self.windowed.remove(&s);
        }
        if cfg!(debug_assertions) {
            self.check_tally();
        }
    }

    /// The tally and the running set against a recount of every job and task.
    fn check_tally(&self) {
        let mut ended: BTreeMap<JobStatus, u64> = BTreeMap::new();
        for s in 0..self.submissions.len() {
            let state = self.job_state(s);
            if state.is_final() {
                *ended.entry(state).or_default() += 1;
            }
        }
        let mut tallied = self.tally.ended().clone();
        tallied.retain(|_, n| *n > 0);
        assert_eq!(tallied, ended, "jobs by final state, kept vs recounted");
        let running = (0..self.task_origin.len()).map(TaskId::from_index);
        let running: BTreeSet<TaskId> = running.filter(|&t| self.task_status(t) == TaskStatus::Running).collect();
        assert_eq!(self.running_tasks().collect::<BTreeSet<_>>(), running, "the running tasks, kept vs recounted");
    }

    fn add_submission(&mut self, request: JobRequest, at: SimTime) {
        let index = self.submissions.len();
        let n = request.tasks.len();
        self.names.insert(request.name.clone(), index);
        if request.tasks.iter().any(|t| t.not_after_s.is_some()) {
            self.windowed.insert(index);
        }
        self.tally.submitted();
        self.submissions.push(Submission {
            request,
            submit: at,
            task_ids: vec![None; n],
            exit_codes: vec![None; n],
            cancelled_at: None,
        });
        self.add_unit(index, at);
    }

    /// The checkpoint interval of a task without its own (`--checkpoint-s`; 0: continuous).
    fn checkpoint_interval(&self) -> SimDuration {
        self.config.run.checkpoint_s.duration()
    }

    /// The submission as one Controller job, its `depends_on` as the job's task DAG
    /// (`success` edges: a task runs once its upstream tasks succeeded).
    fn add_unit(&mut self, submission: usize, at: SimTime) {
        let mut spec = self.submissions[submission]
            .request
            .to_spec(at, self.config.default_work())
            .expect("a journaled submission was checked when it arrived");
        self.setup.shape_job(&mut spec);
        let first_task = self.task_origin.len();
        for t in 0..spec.tasks.len() {
            self.task_origin.push((submission, t));
            self.submissions[submission].task_ids[t] = Some(TaskId::from_index(first_task + t));
        }
        self.engine.add_job(spec.clone()).expect("a checked submission joins the run");
        self.units.push(Unit { submission, spec });
    }

    /// A driver with `journal` applied: what [`Driver::apply`] of each batch in turn gives
    /// (the journal holds the ticks that were due between its batches, so none is added).
    pub fn replay(config: LiveConfig, journal: Vec<Batch>) -> Result<Driver, String> {
        Driver::replay_with(config, &policies::Registry::builtin(), journal)
    }

    /// [`Driver::replay`] with the policy built from `registry`.
    pub fn replay_with(
        config: LiveConfig,
        registry: &policies::Registry,
        journal: Vec<Batch>,
    ) -> Result<Driver, String> {
        let mut d = Driver::with_registry(config, registry)?;
        for batch in journal {
            let ticks = d.apply(batch)?;
            debug_assert!(ticks.is_empty(), "a journal holds its ticks");
        }
        Ok(d)
    }

    fn gpu_at(&self, node: u32, slot: u32) -> Option<GpuId> {
        let n = self.cluster().nodes().get(node as usize)?;
        (slot < n.gpu_count).then(|| n.gpu_at(slot))
    }

    /// The Controller's unit of submission `s`: each submission is one unit, numbered alike.
    fn unit_of(&self, s: usize) -> usize {
        debug_assert_eq!(self.units[s].submission, s);
        s
    }

    /// Tasks the Controller knows: every submission's (each joins the Controller in the batch
    /// that brings it), counted without walking the workload.
    pub fn task_count(&self) -> usize {
        self.task_origin.len()
    }

    /// The submission and its task's index of a Controller task.
    pub fn task_origin(&self, task: TaskId) -> Option<(usize, usize)> {
        self.task_origin.get(task.index()).copied()
    }

    /// The submission named `name`.
    pub fn find(&self, name: &str) -> Option<usize> {
        self.names.get(name).copied()
    }

    /// The tasks running now (stalled ones included), in task order.
    pub fn running_tasks(&self) -> impl Iterator<Item = TaskId> + '_ {
        self.engine.running()
    }

    /// How many jobs are in each state (every state named, 0 included): at the cost of the
    /// running tasks, the rest being kept as it changes.
    pub fn job_counts(&self) -> BTreeMap<JobStatus, u64> {
        let mut counts: BTreeMap<JobStatus, u64> = live_states().map(|s| (s, 0)).collect();
        counts.extend(self.tally.ended().iter().map(|(&s, &n)| (s, n)));
        let running: BTreeSet<usize> = self
            .running_tasks()
            .filter_map(|t| self.task_origin(t).map(|(s, _)| s))
            .filter(|&s| !self.tally.has_ended(s))
            .collect();
        let open = self.submissions.len() as u64 - self.tally.ended_total();
        counts.insert(JobStatus::Running, running.len() as u64);
        counts.insert(JobStatus::Waiting, open - running.len() as u64);
        counts
    }

    /// The Controller's decisions by kind, and the jobs that succeeded (the sum of their
    /// completion times in seconds, their count).
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// Every running attempt (stalled ones aside: see [`Driver::assignments`]) and where it
    /// runs: what an executor that launches whole jobs (Slurm) carries out.
    pub fn placements(&self) -> Vec<Placement> {
        let mut out = Vec::new();
        for task in self.running_tasks() {
            let state = self.controller().task(task);
            if state.status != TaskStatus::Running || state.stalled_since.is_some() {
                continue;
            }
            let mut gpus: Vec<(u32, u32)> = state
                .placed
                .iter()
                .map(|&g| {
                    let n = self.cluster().node_of(g);
                    (n.0, g.0 - self.cluster().node(n).first_gpu.0)
                })
                .collect();
            gpus.sort_unstable();
            let (submission, _) = self.task_origin[task.index()];
            out.push(Placement { task, attempt: state.attempt, submission, gpus });
        }
        out
    }

    /// What `node` must run now: every running attempt with GPUs on it.
    pub fn assignments(&self, node: u32, addr_of: impl Fn(u32) -> String) -> Vec<Assignment> {
        let mut out = Vec::new();
        for task in self.running_tasks() {
            let (s, t) = self.task_origin[task.index()];
            let state = self.controller().task(task);
            // Stalled: its node went down under it (an agent restart); it fails at the node's
            // next beat and runs again as a new attempt.
            if state.status != TaskStatus::Running || state.stalled_since.is_some() {
                continue;
            }
            let mut nodes: BTreeMap<u32, Vec<u32>> = BTreeMap::new();
            for &g in &state.placed {
                let n = self.cluster().node_of(g);
                let slot = g.0 - self.cluster().node(n).first_gpu.0;
                nodes.entry(n.0).or_default().push(slot);
            }
            let Some(rank) = nodes.keys().position(|&n| n == node) else { continue };
            let sub = &self.submissions[s];
            let request = &sub.request.tasks[t];
            let first = *nodes.keys().next().unwrap_or(&node);
            out.push(Assignment {
                task: task.0,
                attempt: state.attempt,
                job: sub.request.name.clone(),
                task_name: request.name.clone(),
                command: request.command.clone(),
                gpus: nodes[&node].iter().map(|s| s.to_string()).collect(),
                rank: rank as u32,
                world_size: nodes.len() as u32,
                master_addr: addr_of(first),
                gpu_milli: request.gpu_milli,
                dataset: request.dataset.clone(),
            });
        }
        out
    }

    /// The state of submission `s` as users see it: `waiting`, `running`, `succeeded`,
    /// `failed` (a task failed past its retries or exited non-zero), `cancelled`,
    /// `rejected` (by the policy) or `unschedulable`.
    pub fn job_state(&self, s: usize) -> JobStatus {
        let outcome = Some(self.unit_of(s))
            .filter(|&u| u < self.controller().jobs_admitted())
            .and_then(|u| self.controller().job(JobId::from_index(u)).outcome.as_ref());
        if let Some(outcome) = outcome {
            return outcome.status();
        }
        let running =
            self.submissions[s].task_ids.iter().flatten().any(|&t| self.task_status(t) == TaskStatus::Running);
        if running { JobStatus::Running } else { JobStatus::Waiting }
    }

    /// A task's status (`Pending` until its unit reached the Controller).
    pub fn task_status(&self, task: TaskId) -> TaskStatus {
        if task.index() < self.task_count() { self.controller().task(task).status } else { TaskStatus::Pending }
    }

    /// The session's trace replayed by the simulator under the session's policy (built from
    /// `registry`) and settings: its decisions are the session's (a check anyone can run on a
    /// journal).
    pub fn replay_in_simulator(&self, registry: &policies::Registry) -> Result<sim::RunResult, String> {
        let runner = run::Runner::new(registry.clone());
        let outcome = runner.run_trace(&self.config.replay_spec(), self.trace()?, run::Keep::ALL);
        outcome.map(|o| o.result).map_err(|e| e.to_string())
    }

    /// The session as a canonical trace: the units as jobs, the cluster, and the hardware
    /// events (explicit heartbeats and GPU failures). A task's duration is its real run time
    /// once its process exited (with its `exit_code` when that was not 0), else the assumed
    /// work; a cancelled job has its `cancel_s`, and its tasks that never ended get a duration
    /// longer than all they ran (their real one is unknown; it was at least that), so that the
    /// replay cancels them too instead of finishing them first.
    pub fn trace(&self) -> Result<traces::Trace, String> {
        let fastest = self.cluster().pools().iter().map(|p| u64::from(p.speed_milli)).max().unwrap_or(1000);
        let jobs: Vec<JobSpec> = self
            .units
            .iter()
            .enumerate()
            .map(|(u, unit)| {
                let mut spec = unit.spec.clone();
                spec.cancel = self.submissions[unit.submission].cancelled_at.into();
                if u < self.controller().jobs_admitted() {
                    let first = self.controller().job(JobId::from_index(u)).first_task;
                    for (k, t) in spec.tasks.iter_mut().enumerate() {
                        let id = TaskId(first.0 + k as u32);
                        let state = self.controller().task(id);
                        let (s, r) = self.task_origin[id.index()];
                        let exit_code = self.submissions[s].exit_codes[r];
                        if state.status == TaskStatus::Succeeded || exit_code.is_some_and(|c| c != 0) {
                            t.work = state.work.max(SimDuration(1));
                            t.exit_code = exit_code.unwrap_or(0);
                        } else if spec.cancel.is_some() {
                            let ran = SimDuration(state.attempts_ms() * fastest / 1000 + 1);
                            t.work = t.work.max(ran);
                        } else if state.work >= t.work {
                            // It has not ended: its work is more than the Controller assumes
                            // now (its estimate, or what it has done past it,
                            // `Controller::extend_overrun`), by at least a millisecond, or a
                            // task exactly at its estimate at the session's last moment would
                            // end there in the replay.
                            t.work = state.work + SimDuration(1);
                        }
                    }
                    as_live_met_them(&unit.spec, &mut spec, self.checkpoint_interval());
                }
                spec
            })
            .collect();
        Ok(traces::Trace {
            workload: Workload::new(jobs).map_err(|e| format!("the session as a trace: {e}"))?,
            cluster: Some(self.cluster_spec().clone()),
            events: self.trace_events.clone(),
            queues: self.setup.queue_specs().to_vec(),
            datasets: self.setup.dataset_specs().to_vec(),
            notes: Vec::new(),
            recorded_starts: Default::default(),
        })
    }
}

/// The progress dependencies of `spec` (the job with its tasks' real work) as the live
/// Controller met them, where the work it assumed at submission (`submitted`) set them:
/// - a `checkpoint=N` edge waited for the point `min(N x interval, assumed work)`
///   ([`DepKind::point`]): in the trace it is a `data=` edge at that point, which the
///   upstream's real work would otherwise move;
/// - a point past the upstream's real work (its process ended before it got there, or
///   failed) was met at the upstream's success, or never: in the trace it is a `success`
///   edge, not a point no workload accepts (nor one a failed attempt's end would meet).
fn as_live_met_them(submitted: &JobSpec, spec: &mut JobSpec, default_checkpoint: SimDuration) {
    let works: Vec<SimDuration> = spec.tasks.iter().map(|t| t.work).collect();
    for (t, task) in spec.tasks.iter_mut().enumerate() {
        for (d, dep) in task.deps.iter_mut().enumerate() {
            let upstream = &submitted.tasks[dep.upstream];
            let interval = upstream.options().checkpoint.unwrap_or(default_checkpoint);
            let Some(point) = submitted.tasks[t].deps[d].kind.point(interval, upstream.work) else { continue };
            dep.kind = if point > works[dep.upstream] { DepKind::Success } else { DepKind::Data(point) };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TaskRequest;

    type Line = (u64, &'static str, u32, Option<u32>, Vec<u32>);

    fn config(cluster: &str, policy: &str) -> LiveConfig {
        LiveConfig::new(cluster, policy).unwrap().with_seed(1).with_heartbeat_ms(1000)
    }

    fn job(name: &str, tasks: &[(&str, u32, &[&str])]) -> JobRequest {
        let tasks = tasks
            .iter()
            .map(|&(n, gpus, deps)| TaskRequest {
                gpus,
                depends_on: deps.iter().map(|d| d.to_string()).collect(),
                ..TaskRequest::new(n, "true")
            })
            .collect();
        JobRequest::new(name, tasks)
    }

    /// A driver and its journal, as the coordinator keeps it (each batch, and the ticks its
    /// `apply` returned before it).
    struct Journaled {
        driver: Driver,
        journal: Vec<Batch>,
    }

    impl Journaled {
        fn new(config: LiveConfig) -> Journaled {
            Journaled { driver: Driver::new(config).unwrap(), journal: Vec::new() }
        }
        fn apply(&mut self, batch: Batch) -> Result<Vec<Batch>, String> {
            let ticks = self.driver.apply(batch.clone())?;
            self.journal.extend(ticks.iter().cloned().chain([batch]));
            Ok(ticks)
        }
    }

    impl std::ops::Deref for Journaled {
        type Target = Driver;
        fn deref(&self) -> &Driver {
            &self.driver
        }
    }

    fn batch(t: u64, inputs: Vec<Input>) -> Batch {
        Batch { time_ms: t, inputs }
    }

    /// Replays `driver`'s trace in the simulator; its decisions as (time, kind, job, task, gpus).
    fn simulated(driver: &Driver) -> Vec<Line> {
        driver.replay_in_simulator(&policies::Registry::builtin()).unwrap().decisions.iter().map(key).collect()
    }

    fn key(d: &DecisionRecord) -> Line {
        (d.time.as_ms(), d.kind.as_str(), d.job.0, d.task.map(|t| t.0), d.gpus.iter().map(|g| g.0).collect())
    }

    fn live(driver: &Driver) -> Vec<Line> {
        driver.decisions().iter().map(key).collect()
    }

    #[test]
    fn queues_cap_what_starts_and_the_session_replays_with_them() {
        let mut cfg = config("1x3", "fifo");
        cfg.queues = "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\n\
                      team,,1,,0,1,false\n\
                      other,,,,0,1,false\n"
            .into();
        let mut d = Driver::new(cfg).unwrap();
        d.apply(d.start_batch()).unwrap();
        let in_queue =
            |name: &str, queue: &str| JobRequest { queue: Some(queue.into()), ..job(name, &[("0", 1, &[])]) };
        let submits = ["a", "b"].map(|n| Input::submit(in_queue(n, "team")));
        d.apply(batch(10, [submits.to_vec(), vec![Input::submit(in_queue("c", "other"))]].concat())).unwrap();
        // team may hold one GPU: a runs and b waits, though a GPU is free; c, of other, runs.
        let states: Vec<&str> = (0..3).map(|s| d.job_state(s).as_str()).collect();
        assert_eq!(states, ["running", "waiting", "running"]);
        d.apply(batch(500, vec![Input::Exit { task: 0, attempt: 1, code: 0 }])).unwrap();
        assert_eq!(d.job_state(1).as_str(), "running");
        // A queue the session does not define is refused at submission, naming those it has.
        let refused = d.check_submission(&in_queue("x", "nope")).unwrap_err();
        assert_eq!(
            (refused.status, refused.reason.as_str()),
            (400, "queue `nope` is not one of this cluster's queues (team, other)")
        );
        let exits = (1..3).map(|t| Input::Exit { task: t, attempt: 1, code: 0 }).collect();
        d.apply(batch(900, exits)).unwrap();
        // The trace carries the queues, and the replay keeps within them too.
        assert_eq!(d.trace().unwrap().queues.iter().map(|q| q.name.as_str()).collect::<Vec<_>>(), ["team", "other"]);
        assert_eq!(live(&d), simulated(&d));
    }

    #[test]
    fn shares_datasets_and_windows_run_as_the_trace_says_and_replay() {
        // Nodes 0 (GPUs 0, 1) and 1 (GPUs 2, 3); imagenet is on node 1. At 10: `shared` (a, b:
        // half a GPU each) shares GPU 0; `data` reads imagenet and starts on node 1 (GPU 2),
        // though packing alone would take GPU 1; `later` may start from 1 s after its
        // submission, at 1010, on GPU 1: b still holds half of GPU 0, and a whole-GPU task
        // takes no GPU that is shared.
        let mut cfg = config("2x2", "fifo[placement=local]");
        cfg.datasets = "dataset,nodes,transfer_s\nimagenet,1,5\n".into();
        let mut d = Driver::new(cfg).unwrap();
        d.apply(d.start_batch()).unwrap();
        let half = |name: &str| TaskRequest { gpu_milli: Some(500), ..TaskRequest::new(name, "true") };
        let shared = JobRequest {
            deadline_s: Some(60.into()),
            ..JobRequest::new("shared", vec![half("a"), TaskRequest { speeds: Some("SIM=2".into()), ..half("b") }])
        };
        let data = JobRequest::new(
            "data",
            vec![TaskRequest { dataset: Some("imagenet".into()), ..TaskRequest::new("0", "true") }],
        );
        let later = JobRequest::new(
            "later",
            vec![TaskRequest { not_before_s: Some(1.into()), ..TaskRequest::new("0", "true") }],
        );
        let unknown =
            JobRequest::new("x", vec![TaskRequest { dataset: Some("c4".into()), ..TaskRequest::new("0", "true") }]);
        assert_eq!(
            d.check_submission(&unknown).unwrap_err().reason,
            "task `0`: dataset `c4` is not one of this cluster's datasets (imagenet)"
        );
        let jobs = [shared, data, later].map(Input::submit);
        d.apply(batch(10, jobs.to_vec())).unwrap();
        let on0 = d.assignments(0, |_| String::new());
        let shares: Vec<(&str, &[String], Option<u32>)> =
            on0.iter().map(|a| (a.task_name.as_str(), a.gpus.as_slice(), a.gpu_milli)).collect();
        assert_eq!(shares, [("a", &["0".to_string()][..], Some(500)), ("b", &["0".to_string()][..], Some(500))]);
        let on1 = d.assignments(1, |_| String::new());
        assert_eq!(
            (on1[0].job.as_str(), on1[0].gpus.as_slice(), on1[0].dataset.as_deref()),
            ("data", &["0".to_string()][..], Some("imagenet"))
        );
        assert_eq!(d.job_state(2).as_str(), "waiting");
        d.apply(batch(500, vec![Input::Exit { task: 0, attempt: 1, code: 0 }])).unwrap();
        d.apply(batch(700, vec![Input::Exit { task: 2, attempt: 1, code: 0 }])).unwrap();
        d.apply(batch(
            1500,
            vec![Input::Exit { task: 1, attempt: 1, code: 0 }, Input::Exit { task: 3, attempt: 1, code: 0 }],
        ))
        .unwrap();
        let starts: Vec<(u64, u32, Vec<u32>)> =
            live(&d).into_iter().filter(|l| l.1 == "start").map(|l| (l.0, l.2, l.4)).collect();
        assert_eq!(starts, [(10, 0, vec![0]), (10, 0, vec![0]), (10, 1, vec![2]), (1010, 2, vec![1])]);
        // The trace says all of it, and the simulator makes the same decisions from it.
        let trace = d.trace().unwrap();
        let jobs = trace.workload.jobs();
        assert_eq!(jobs[0].deadline.get(), Some(SimDuration(60_000)));
        assert_eq!(jobs[0].tasks[1].options().speeds.get("SIM"), Some(&2000));
        assert_eq!(jobs[2].tasks[0].options().window.not_before, Some(SimTime(1010)));
        assert_eq!(trace.datasets.len(), 1);
        assert_eq!(live(&d), simulated(&d));
    }

    #[test]
    fn a_job_priority_orders_the_queue_and_the_trace_keeps_it() {
        // 1 GPU, strict priority with preemption: `first` (0) runs from 10; at 20 `low` (0) and
        // `high` (5) come, and `high` preempts `first`. When `high` ends, `first` (older than
        // `low`, same priority) runs again, then `low`.
        let mut d = Driver::new(config("1x1", "priority")).unwrap();
        d.apply(d.start_batch()).unwrap();
        let with = |name: &str, priority| JobRequest { priority, ..job(name, &[("0", 1, &[])]) };
        d.apply(batch(10, vec![Input::submit(with("first", 0))])).unwrap();
        d.apply(batch(20, vec![Input::submit(with("low", 0)), Input::submit(with("high", 5))])).unwrap();
        let states: Vec<&str> = (0..3).map(|s| d.job_state(s).as_str()).collect();
        assert_eq!(states, ["waiting", "waiting", "running"]);
        d.apply(batch(600, vec![Input::Exit { task: 2, attempt: 1, code: 0 }])).unwrap();
        assert_eq!((d.job_state(0).as_str(), d.job_state(1).as_str()), ("running", "waiting"));
        d.apply(batch(900, vec![Input::Exit { task: 0, attempt: 2, code: 0 }])).unwrap();
        d.apply(batch(1200, vec![Input::Exit { task: 1, attempt: 1, code: 0 }])).unwrap();
        let priorities: Vec<i32> = d.trace().unwrap().workload.jobs().iter().map(|j| j.priority).collect();
        assert_eq!(priorities, [0, 0, 5]);
        assert_eq!(live(&d), simulated(&d));
    }

    #[test]
    fn the_checkpoint_interval_and_restart_overhead_count_lost_work_and_replay() {
        // 1 GPU, priority, checkpoints every 100 ms of work, 50 ms per restart. `first` runs
        // from 10 and has done 150 ms (100 saved) when `high` preempts it at 160: 50 ms of
        // work lost. It restarts at 400 and pays 50 ms before progress.
        let mut cfg = config("1x1", "priority");
        (cfg.run.checkpoint_s, cfg.run.restart_overhead_s) =
            (run::Seconds(SimDuration(100)), run::Seconds(SimDuration(50)));
        let mut d = Driver::new(cfg).unwrap();
        d.apply(d.start_batch()).unwrap();
        let with = |name: &str, priority| JobRequest { priority, ..job(name, &[("0", 1, &[])]) };
        d.apply(batch(10, vec![Input::submit(with("first", 0))])).unwrap();
        d.apply(batch(160, vec![Input::submit(with("high", 5))])).unwrap();
        d.apply(batch(400, vec![Input::Exit { task: 1, attempt: 1, code: 0 }])).unwrap();
        d.apply(batch(900, vec![Input::Exit { task: 0, attempt: 2, code: 0 }])).unwrap();
        let first = d.controller().task(TaskId(0));
        assert_eq!((first.losses().redo_mgpu_ms, first.losses().overhead_mgpu_ms), (50_000, 50_000));
        let replay = d.controller_config();
        assert_eq!((replay.checkpoint, replay.restart_overhead), (SimDuration(100), SimDuration(50)));
        assert_eq!(live(&d), simulated(&d));
    }

    #[test]
    fn a_session_replays_to_the_same_decisions() {
        let mut d = Driver::new(config("2x1", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(100, vec![Input::submit(job("a", &[("0", 1, &[])]))])).unwrap();
        d.apply(batch(150, vec![Input::submit(job("b", &[("x", 1, &[]), ("y", 1, &[])]))])).unwrap();
        assert_eq!(d.assignments(0, |_| String::new()).len(), 1);
        d.apply(batch(900, vec![Input::Beat { node: 0 }, Input::Beat { node: 1 }])).unwrap();
        d.apply(batch(1200, vec![Input::Exit { task: 0, attempt: 1, code: 0 }])).unwrap();
        d.apply(batch(1900, vec![Input::Beat { node: 0 }, Input::Beat { node: 1 }])).unwrap();
        d.apply(batch(
            2500,
            vec![Input::Exit { task: 1, attempt: 1, code: 0 }, Input::Exit { task: 2, attempt: 1, code: 0 }],
        ))
        .unwrap();
        assert_eq!(d.job_state(0).as_str(), "succeeded");
        assert_eq!(d.job_state(1).as_str(), "succeeded");
        let decisions = live(&d);
        assert_eq!(decisions.iter().filter(|x| x.1 == "start").count(), 3);
        assert_eq!(decisions, simulated(&d));
    }

    #[test]
    fn a_silent_node_is_declared_dead_and_its_task_retried_elsewhere() {
        let mut d = Driver::new(config("2x1", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(10, vec![Input::submit(job("a", &[("0", 1, &[])]))])).unwrap();
        // Task 0 runs on node 0 (pack). Only node 1 keeps beating.
        assert_eq!(d.assignments(0, |_| String::new()).len(), 1);
        for t in [1000, 2000, 3000, 4000] {
            d.apply(batch(t, vec![Input::Beat { node: 1 }])).unwrap();
        }
        // Node 0's last beat was at 0: declared dead at 3 s, the task restarted on node 1.
        assert!(d.node_dead(0));
        let on1 = d.assignments(1, |_| String::new());
        assert_eq!((on1.len(), on1[0].attempt), (1, 2));
        d.apply(batch(4500, vec![Input::Exit { task: 0, attempt: 2, code: 0 }])).unwrap();
        // Node 0 comes back.
        d.apply(batch(5000, vec![Input::Beat { node: 0 }, Input::Beat { node: 1 }])).unwrap();
        assert!(!d.node_dead(0));
        let decisions = live(&d);
        assert!(decisions.iter().any(|x| x.1 == "fail" && x.0 == 3000), "{decisions:?}");
        assert_eq!(decisions, simulated(&d));
    }

    #[test]
    fn dependencies_run_in_the_controller_and_a_rebuild_keeps_the_decisions() {
        let mut d = Journaled::new(config("1x2", "fifo"));
        d.apply(d.start_batch()).unwrap();
        let dag = job("dag", &[("prep", 1, &[]), ("train", 2, &["prep"]), ("eval", 1, &["train"])]);
        d.apply(batch(10, vec![Input::submit(dag)])).unwrap();
        assert_eq!(d.assignments(0, |_| String::new()).len(), 1);
        assert_eq!(d.task_status(TaskId(1)), TaskStatus::Pending);
        // `train` starts as soon as `prep` succeeded, in the same batch.
        let ticks = d.apply(batch(500, vec![Input::Exit { task: 0, attempt: 1, code: 0 }])).unwrap();
        assert_eq!(ticks, vec![]);
        let a = d.assignments(0, |_| String::new());
        assert_eq!((a.len(), a[0].task_name.as_str(), a[0].gpus.len()), (1, "train", 2));
        // `train` exits non-zero: it fails for good (no retry) and `eval` is skipped.
        d.apply(batch(900, vec![Input::Exit { task: 1, attempt: 1, code: 3 }])).unwrap();
        assert_eq!(d.job_state(0).as_str(), "failed");
        assert_eq!(d.task_status(TaskId(2)), TaskStatus::Skipped);
        assert!(d.decisions().iter().any(|r| r.detail == "its process exited with code 3"));
        // A second job joins the running Controller.
        d.apply(batch(1000, vec![Input::submit(job("b", &[("0", 1, &[])]))])).unwrap();
        d.apply(batch(1200, vec![Input::Exit { task: 3, attempt: 1, code: 0 }])).unwrap();
        assert_eq!(d.job_state(1).as_str(), "succeeded");
        // The trace carries the non-zero exit (train ran 400 ms), and the replay fails it too.
        let trace = d.trace().unwrap();
        let train = &trace.workload.jobs()[0].tasks[1];
        assert_eq!((train.exit_code, train.work), (3, SimDuration(400)));
        assert_eq!(live(&d), simulated(&d));
        // A driver built from the journal alone is the same driver.
        let mut again = Driver::new(config("1x2", "fifo")).unwrap();
        for b in d.journal.clone() {
            again.apply(b).unwrap();
        }
        assert_eq!(live(&again), live(&d));
    }

    /// A `data=` dependency whose upstream ended before its data point (it did less work
    /// than its estimate, or failed): the live Controller met the edge at the upstream's
    /// success (or never, on failure), and the session's trace must say the same, not a data
    /// point past the upstream's whole work (which no workload accepts).
    #[test]
    fn a_data_dependency_whose_upstream_ended_early_exports_and_replays() {
        for code in [0, 1] {
            let mut d = Driver::new(config("1x2", "fifo")).unwrap();
            d.apply(d.start_batch()).unwrap();
            let mut p = job("p", &[("prep", 1, &[]), ("train", 1, &["prep:data=30"])]);
            p.tasks[0].estimate_s = Some(60.into());
            d.apply(batch(10, vec![Input::submit(p)])).unwrap();
            d.apply(batch(1010, vec![Input::Exit { task: 0, attempt: 1, code }])).unwrap();
            let train = d.task_status(TaskId(1));
            assert_eq!(train, if code == 0 { TaskStatus::Running } else { TaskStatus::Skipped });
            if code == 0 {
                d.apply(batch(1500, vec![Input::Exit { task: 1, attempt: 1, code: 0 }])).unwrap();
            }
            let trace = d.trace().unwrap();
            let edge = &trace.workload.jobs()[0].tasks[1].deps[0];
            assert_eq!((edge.upstream, edge.kind), (0, sim::DepKind::Success), "exit {code}");
            assert_eq!(live(&d), simulated(&d), "exit {code}");
        }
    }

    /// A name already taken is the first thing checked (409): a resent job costs nothing
    /// before its refusal, whatever it holds.
    #[test]
    fn a_taken_name_is_refused_before_the_rest_of_the_job_is_checked() {
        let mut d = Driver::new(config("1x2", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(10, vec![Input::submit(job("a", &[("0", 1, &[])]))])).unwrap();
        let invalid = job("a", &[("0", 0, &["nowhere"])]);
        assert_eq!(d.check_submission(&invalid).unwrap_err().status, 409);
    }

    /// A start window is seconds after submission, and the trace holds it as a time: a window
    /// the trace cannot hold (past 10^12 s) is refused at the API, not accepted and then
    /// failing every journal write.
    #[test]
    fn a_window_the_trace_cannot_hold_is_refused_at_submission() {
        let mut d = Driver::new(config("1x2", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        for field in ["not_before_s", "not_after_s"] {
            let text = format!(r#"{{"name":"w","tasks":[{{"name":"0","command":"true","{field}":1000000000000}}]}}"#);
            let far: JobRequest = serde_json::from_str(&text).unwrap();
            let refused = d.check_submission(&far).unwrap_err();
            assert_eq!(refused.status, 400, "{field}");
            assert!(refused.reason.contains(field), "{field}: {}", refused.reason);
        }
        // The longest window taken is held by the trace of a session at any time it can reach.
        let text = r#"{"name":"w","tasks":[{"name":"0","command":"true","not_after_s":1000000000}]}"#;
        let far: JobRequest = serde_json::from_str(text).unwrap();
        d.check_submission(&far).unwrap();
        d.apply(batch(20, vec![Input::submit(far)])).unwrap();
        let trace = d.trace().unwrap();
        let dir = std::env::temp_dir().join(format!("schedlab-far-window-{}", std::process::id()));
        traces::write_trace_dir(&trace, &dir).unwrap();
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_dag_session_replays_to_the_same_decisions() {
        let mut d = Driver::new(config("1x2", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        let dag = job("dag", &[("prep", 1, &[]), ("a", 1, &["prep"]), ("b", 1, &["prep"]), ("join", 2, &["a", "b"])]);
        d.apply(batch(10, vec![Input::submit(dag)])).unwrap();
        d.apply(batch(300, vec![Input::Exit { task: 0, attempt: 1, code: 0 }])).unwrap();
        d.apply(batch(700, vec![Input::Exit { task: 2, attempt: 1, code: 0 }])).unwrap();
        d.apply(batch(800, vec![Input::Exit { task: 1, attempt: 1, code: 0 }])).unwrap();
        d.apply(batch(1300, vec![Input::Exit { task: 3, attempt: 1, code: 0 }])).unwrap();
        assert_eq!(d.job_state(0).as_str(), "succeeded");
        let trace = d.trace().unwrap();
        assert_eq!(trace.workload.jobs()[0].tasks[3].deps.len(), 2);
        assert_eq!(live(&d), simulated(&d));
    }

    #[test]
    fn a_bulk_replay_is_the_incremental_one() {
        let mut d = Journaled::new(config("2x1", "fifo"));
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(10, vec![Input::submit(job("a", &[("0", 1, &[])]))])).unwrap();
        d.apply(batch(20, vec![Input::submit(job("b", &[("0", 2, &[])]))])).unwrap();
        d.apply(batch(500, vec![Input::Exit { task: 0, attempt: 1, code: 0 }, Input::Beat { node: 1 }])).unwrap();
        d.apply(batch(3500, vec![Input::submit(job("c", &[("0", 1, &[])]))])).unwrap();
        d.apply(batch(4000, vec![Input::Beat { node: 0 }])).unwrap();
        let bulk = Driver::replay(config("2x1", "fifo"), d.journal.clone()).unwrap();
        assert_eq!(live(&bulk), live(&d));
        assert_eq!(bulk.controller().digest_hex(), d.controller().digest_hex());
        assert_eq!(bulk.batches_applied(), d.journal.len() as u64);
        assert_eq!(bulk.assignments(1, |_| String::new()), d.assignments(1, |_| String::new()));
        assert_eq!((bulk.node_dead(0), bulk.node_dead(1)), (d.node_dead(0), d.node_dead(1)));
        assert_eq!(bulk.next_due(), d.next_due());
    }

    #[test]
    fn a_failed_gpu_is_out_until_repaired_and_the_session_replays() {
        let mut d = Driver::new(config("1x2", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(10, vec![Input::submit(job("a", &[("0", 2, &[])]))])).unwrap();
        d.apply(batch(200, vec![Input::GpuFail { node: 0, slot: 1, what: "xid 79".into() }])).unwrap();
        // The task failed; it needs both GPUs and one is out: it waits.
        assert_eq!(d.assignments(0, |_| String::new()).len(), 0);
        assert!(d.gpu_out(GpuId(1)));
        d.apply(batch(900, vec![Input::Beat { node: 0 }, Input::GpuRepair { node: 0, slot: 1 }])).unwrap();
        assert!(!d.gpu_out(GpuId(1)));
        let a = d.assignments(0, |_| String::new());
        assert_eq!((a.len(), a[0].attempt), (1, 2));
        d.apply(batch(1500, vec![Input::Exit { task: 0, attempt: 2, code: 0 }, Input::Beat { node: 0 }])).unwrap();
        assert_eq!(d.job_state(0).as_str(), "succeeded");
        let trace = d.trace().unwrap();
        assert!(
            trace.events.iter().any(|e| matches!(e, ClusterEvent::GpuFail { repair: Some(r), .. } if r.as_ms() == 700))
        );
        assert_eq!(live(&d), simulated(&d));
    }

    #[test]
    fn an_agent_restart_fails_what_ran_there_at_its_next_beat_and_the_session_replays() {
        let mut d = Driver::new(config("1x1", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(10, vec![Input::submit(job("a", &[("0", 1, &[])]))])).unwrap();
        d.apply(batch(500, vec![Input::Beat { node: 0 }])).unwrap();
        // The agent comes back afresh: its registration's beat is not delivered (the node is
        // down until 1 ms later), and the attempt is no longer assigned.
        d.apply(batch(700, vec![Input::NodeRestarted { node: 0 }, Input::Beat { node: 0 }])).unwrap();
        assert_eq!(d.assignments(0, |_| String::new()), vec![]);
        assert_eq!(d.task_status(TaskId(0)), TaskStatus::Running);
        // Its next beat reports the lost task: it fails and runs again as attempt 2.
        d.apply(batch(1200, vec![Input::Beat { node: 0 }])).unwrap();
        let a = d.assignments(0, |_| String::new());
        assert_eq!((a.len(), a[0].attempt), (1, 2));
        d.apply(batch(1600, vec![Input::Exit { task: 0, attempt: 2, code: 0 }, Input::Beat { node: 0 }])).unwrap();
        assert_eq!(d.job_state(0).as_str(), "succeeded");
        assert!(d.decisions().iter().any(|r| r.detail.contains("its node restarted")), "{:?}", d.decisions());
        assert_eq!(live(&d), simulated(&d));
    }

    #[test]
    fn cancel_stops_a_running_job_and_its_gpus_return() {
        let mut d = Driver::new(config("1x1", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(10, vec![Input::submit(job("a", &[("0", 1, &[])]))])).unwrap();
        d.apply(batch(20, vec![Input::submit(job("b", &[("0", 1, &[])]))])).unwrap();
        assert_eq!(d.assignments(0, |_| String::new())[0].job, "a");
        d.apply(batch(30, vec![Input::Cancel { job: 0 }])).unwrap();
        assert_eq!(d.job_state(0).as_str(), "cancelled");
        assert_eq!(d.assignments(0, |_| String::new())[0].job, "b");
        assert!(d.apply(batch(30, vec![Input::Tick])).is_err(), "time must move forward");
        // b, waiting, is cancelled too; c is cancelled in the batch that submits it.
        d.apply(batch(40, vec![Input::submit(job("c", &[("0", 1, &[])])), Input::Cancel { job: 2 }])).unwrap();
        assert_eq!(d.job_state(2).as_str(), "cancelled");
        d.apply(batch(50, vec![Input::Exit { task: 1, attempt: 1, code: 0 }])).unwrap();
        // The trace says when each was cancelled; a ran 20 ms of its assumed hour, so its
        // duration stays the hour, and the replay cancels it at 30 as live mode did.
        let trace = d.trace().unwrap();
        let cancels: Vec<Option<u64>> =
            trace.workload.jobs().iter().map(|j| j.cancel.get().map(SimTime::as_ms)).collect();
        assert_eq!(cancels, [Some(30), None, Some(40)]);
        let decisions = live(&d);
        assert!(decisions.iter().any(|x| x == &(30, "cancel", 0, None, vec![])), "{decisions:?}");
        assert_eq!(decisions, simulated(&d));
        // One word on both sides: the session's states are its replay's outcomes.
        let replay = d.replay_in_simulator(&policies::Registry::builtin()).unwrap();
        let replayed: Vec<JobStatus> = replay.jobs.iter().map(|j| JobStatus::at_end(j.outcome.as_ref())).collect();
        assert_eq!(replayed, (0..3).map(|s| d.job_state(s)).collect::<Vec<_>>());
        assert_eq!(replayed, [JobStatus::Cancelled, JobStatus::Succeeded, JobStatus::Cancelled]);
    }

    /// A cancel of a job that has ended changes nothing, in the session as in its replay: the
    /// job keeps the state it ended in (the coordinator answers 409).
    #[test]
    fn a_cancel_after_the_end_changes_nothing() {
        let mut d = Driver::new(config("1x1", "fifo")).unwrap();
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(10, vec![Input::submit(job("huge", &[("0", 2, &[])]))])).unwrap();
        assert_eq!(d.job_state(0), JobStatus::Unschedulable);
        d.apply(batch(20, vec![Input::Cancel { job: 0 }])).unwrap();
        assert_eq!(d.job_state(0), JobStatus::Unschedulable);
        let replay = d.replay_in_simulator(&policies::Registry::builtin()).unwrap();
        assert_eq!(JobStatus::at_end(replay.jobs[0].outcome.as_ref()), JobStatus::Unschedulable);
    }

    #[test]
    fn a_cancelled_task_that_outran_its_assumed_work_is_not_finished_early_by_the_replay() {
        // The assumed work is 100 ms; the task ran 500 ms when it was cancelled. The trace
        // gives it a duration past the 500 ms it held its GPU, so the replay cancels it too.
        let mut cfg = config("1x1", "fifo");
        cfg.default_work_ms = 100;
        let mut d = Driver::new(cfg).unwrap();
        d.apply(d.start_batch()).unwrap();
        d.apply(batch(10, vec![Input::submit(job("a", &[("0", 1, &[])]))])).unwrap();
        d.apply(batch(510, vec![Input::Cancel { job: 0 }])).unwrap();
        let work = d.trace().unwrap().workload.jobs()[0].tasks[0].work;
        assert!(work > SimDuration(500), "{work}");
        assert_eq!(live(&d), simulated(&d));
    }
}
