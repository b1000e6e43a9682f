//! The virtual-time engine: pops events in their total order, applies each timestamp's batch
//! to the Controller, calls the policy once per batch and turns the plan's effects into future
//! events. Arrivals come from the workload, already sorted, through a cursor (the ordered fast
//! path): only completions and wake-ups go through the heap.

use crate::cluster::Cluster;
use crate::controller::{Controller, ControllerConfig, Effect};
use crate::event::{Event, EventKey, EventQueue, PHASE_ARRIVAL, PHASE_HARDWARE};
use crate::failure::ClusterEvent;
use crate::hardware::{Hardware, HardwareFeed};
use crate::ids::JobId;
use crate::observe::Observer;
use crate::policy::Policy;
use crate::quota::{QueueSpec, Queues};
use crate::record::RunResult;
use crate::time::SimTime;
use crate::workload::Workload;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The policy reads estimates and this job has a task without one.
    MissingEstimate { policy: String, job: String },
    /// A cluster event names hardware the cluster does not have.
    BadEvent { index: usize, problem: String },
    /// A task dependency this run cannot honour.
    BadDependency { job: String, problem: String },
    /// A queue or dataset definition, or a job's queue or dataset, that does not fit the
    /// cluster.
    BadQueue(String),
    /// A run setting that does not fit the cluster (more spare nodes than a pool has).
    BadConfig(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::MissingEstimate { policy, job } => write!(
                f,
                "policy {policy} uses duration estimates, but job `{job}` has a task without one \
                 (give an estimate column, or use duration=oracle)"
            ),
            SimError::BadEvent { index, problem } => write!(f, "cluster event {index}: {problem}"),
            SimError::BadDependency { job, problem } => write!(f, "job `{job}`: {problem}"),
            SimError::BadQueue(problem) | SimError::BadConfig(problem) => f.write_str(problem),
        }
    }
}

impl std::error::Error for SimError {}

/// What one run simulates: a cluster, the jobs submitted to it, and what happens to its
/// hardware: fixed events (failures, repairs, heartbeats) and a feed of failures drawn as the
/// run goes (both empty for a cluster that never fails).
#[derive(Debug)]
pub struct Scenario {
    pub cluster: Cluster,
    pub workload: Workload,
    events: Vec<ClusterEvent>,
    feed: Option<Box<dyn HardwareFeed>>,
    queues: Queues,
    datasets: crate::data::Datasets,
}

impl Scenario {
    pub fn new(cluster: Cluster, workload: Workload) -> Scenario {
        Scenario {
            cluster,
            workload,
            events: Vec::new(),
            feed: None,
            queues: Queues::default(),
            datasets: crate::data::Datasets::default(),
        }
    }

    /// Adds queues with quotas (checked against the cluster and the jobs' queue names).
    pub fn with_queues(mut self, specs: &[QueueSpec]) -> Result<Scenario, SimError> {
        let queues = Queues::new(specs, &self.cluster).map_err(|e| SimError::BadQueue(e.0))?;
        queues.assign(&self.workload).map_err(SimError::BadQueue)?;
        self.queues = queues;
        Ok(self)
    }

    pub fn queues(&self) -> &Queues {
        &self.queues
    }

    /// Puts datasets on nodes (checked against the cluster and the tasks' dataset names).
    pub fn with_datasets(mut self, specs: &[crate::data::DatasetSpec]) -> Result<Scenario, SimError> {
        let datasets = crate::data::Datasets::new(specs, &self.cluster).map_err(|e| SimError::BadQueue(e.0))?;
        datasets.assign(&self.workload).map_err(SimError::BadQueue)?;
        self.datasets = datasets;
        Ok(self)
    }

    /// Adds ground-truth cluster events, checked against the cluster and sorted by time
    /// (events at one instant keep the given order).
    pub fn with_events(mut self, mut events: Vec<ClusterEvent>) -> Result<Scenario, SimError> {
        for (index, e) in events.iter().enumerate() {
            let bad = |problem: String| SimError::BadEvent { index, problem };
            let nodes = self.cluster.nodes().len();
            if e.node().index() >= nodes {
                return Err(bad(format!("node {} does not exist (the cluster has {nodes})", e.node().0)));
            }
            if let ClusterEvent::GpuFail { node, gpu, .. } = *e {
                let count = self.cluster.node(node).gpu_count;
                if gpu >= count {
                    return Err(bad(format!("node {} has {count} GPUs, no GPU slot {gpu}", node.0)));
                }
            }
        }
        events.sort_by_key(ClusterEvent::time);
        self.events = events;
        Ok(self)
    }

    pub fn events(&self) -> &[ClusterEvent] {
        &self.events
    }

    /// Adds failures produced as the run goes (a failure model, a replayed history), merged
    /// after the fixed events of the same instant. The feed must name hardware the cluster has.
    pub fn with_feed(mut self, feed: Box<dyn HardwareFeed>) -> Scenario {
        self.feed = Some(feed);
        self
    }
}

/// Runs `scenario` under `policy` to the end, in virtual time: until every job has ended.
pub fn simulate(scenario: Scenario, policy: &mut dyn Policy, config: ControllerConfig) -> Result<RunResult, SimError> {
    if policy.needs_estimates() {
        let missing = scenario.workload.jobs().iter().find(|j| j.tasks.iter().any(|t| t.estimate.is_none()));
        if let Some(job) = missing {
            return Err(SimError::MissingEstimate { policy: policy.name().to_string(), job: job.name.to_string() });
        }
    }
    check_checkpoint_dependencies(&scenario.workload, config.checkpoint)?;
    if let Some(pool) = scenario.cluster.pools().iter().find(|p| p.node_count <= config.spare_nodes) {
        return Err(SimError::BadConfig(format!(
            "{} spare nodes per pool leave none in service in pool `{}` of {} nodes",
            config.spare_nodes, pool.name, pool.node_count
        )));
    }
    let failures = config.failures;
    let horizon = config.horizon;
    let retire = config.retire;
    let Scenario { cluster, workload, events, feed, queues, datasets } = scenario;
    let controller = Controller::new(cluster, workload, policy.name(), config)
        .with_queues(queues)
        .and_then(|c| c.with_datasets(datasets))
        .map_err(SimError::BadQueue)?;
    let mut queue = EventQueue::default();
    for (index, job) in controller.workload().jobs().iter().enumerate() {
        if let Some(at) = job.cancel {
            queue.push(at, Event::Cancel(JobId::from_index(index)));
        }
    }
    let stop_after = controller.workload().jobs().last().map(|j| j.submit.saturating_add(horizon));
    let mut engine = Engine {
        observer: Observer::new(&controller, &events, failures, retire),
        hardware: Hardware::new(events, feed),
        controller,
        queue,
        next_arrival: 0,
        effects: Vec::new(),
        stop_after,
        stale: 0,
        purged_until: None,
    };
    while engine.step(policy) {}
    let fed = engine.hardware.covered_until();
    Ok(engine.controller.finish_with_feed(fed))
}

/// A `checkpoint=N` dependency needs an upstream that checkpoints at intervals: with the
/// task's own interval or the run's default, it must not be continuous (zero).
fn check_checkpoint_dependencies(workload: &Workload, default: crate::time::SimDuration) -> Result<(), SimError> {
    for job in workload.jobs() {
        for task in &job.tasks {
            for dep in &task.deps {
                let upstream = &job.tasks[dep.upstream];
                if let crate::workload::DepKind::Checkpoint(n) = dep.kind
                    && upstream.checkpoint.unwrap_or(default) == crate::time::SimDuration::ZERO
                {
                    return Err(SimError::BadDependency {
                        job: job.name.to_string(),
                        problem: format!(
                            "task `{}` waits for checkpoint {n} of `{}`, which checkpoints continuously (interval \
                             0); give it a checkpoint_s, or the run a --checkpoint-s",
                            task.name, upstream.name
                        ),
                    });
                }
            }
        }
    }
    Ok(())
}

struct Engine {
    controller: Controller,
    observer: Observer,
    hardware: Hardware,
    queue: EventQueue,
    next_arrival: usize,
    effects: Vec<Effect>,
    /// The horizon: the last submission plus `ControllerConfig::horizon`.
    stop_after: Option<SimTime>,
    /// Completions made stale (their task stopped) since the last purge.
    stale: usize,
    /// The latest time of a stale completion purged from the queue (see `purge_stale`).
    purged_until: Option<SimTime>,
}

/// Stale completions are purged once there are this many, and they are half the queue.
const PURGE_AT_LEAST: usize = 1024;

impl Engine {
    fn next_arrival_time(&self) -> Option<SimTime> {
        self.controller.workload().jobs().get(self.next_arrival).map(|j| j.submit)
    }

    /// Applies the next timestamp's events and decides. Returns false when the run is over:
    /// every job has arrived and ended (hardware events after that change nothing measured),
    /// nothing is left to happen, or the next event is past the horizon (what has not ended
    /// is reported unfinished).
    fn step(&mut self, policy: &mut dyn Policy) -> bool {
        if self.next_arrival_time().is_none() && !self.controller.has_jobs_in_system() {
            return false;
        }
        let Some(now) = self.next_time() else {
            self.end_after_purged();
            return false;
        };
        if self.stop_after.is_some_and(|end| now > end) {
            self.controller.stop_at_horizon(self.stop_after.unwrap_or(now));
            return false;
        }
        self.controller.advance_to(now);
        let mut changed = false;
        let mut woken = false;
        while let Some(event) = self.hardware.pop_at(now) {
            self.observer.apply_truth(&event, &mut self.controller, &mut self.queue);
            self.controller.stats.events += 1;
            changed = true;
        }
        let after_hardware = EventKey { time: now, phase: PHASE_HARDWARE + 1, seq: 0 };
        while let Some((_, event)) = self.queue.pop_before(after_hardware) {
            self.observer.apply(event, &mut self.controller, &mut self.queue);
            self.controller.stats.events += 1;
            changed = true;
        }
        let arrivals = EventKey { time: now, phase: PHASE_ARRIVAL, seq: 0 };
        while let Some((_, event)) = self.queue.pop_before(arrivals) {
            changed |= self.apply(event, &mut woken);
        }
        while self.next_arrival_time() == Some(now) {
            self.controller.job_arrived(JobId::from_index(self.next_arrival));
            self.next_arrival += 1;
            changed = true;
        }
        let rest_of_now = EventKey { time: now, phase: u8::MAX, seq: 0 };
        while let Some((_, event)) = self.queue.pop_before(rest_of_now) {
            changed |= self.apply(event, &mut woken);
        }
        if changed || woken {
            self.decide(policy, changed);
        }
        for (at, timer) in self.controller.take_timers() {
            self.queue.push(at, Event::Timer(timer));
        }
        true
    }

    /// The earliest of the heap's next event, the next arrival and the next hardware event.
    fn next_time(&mut self) -> Option<SimTime> {
        let times = [self.queue.peek_key().map(|k| k.time), self.next_arrival_time(), self.hardware.peek_time()];
        times.into_iter().flatten().min()
    }

    fn apply(&mut self, event: Event, woken: &mut bool) -> bool {
        match event {
            Event::TaskFinished { task, attempt } => self.controller.task_finished(task, attempt),
            Event::JobArrival(job) => {
                self.controller.job_arrived(job);
                true
            }
            Event::Timer(timer) => self.controller.timer_fired(timer),
            Event::Cancel(job) => self.controller.cancel_job(job, crate::workload::CANCELLED_BY_THE_USER),
            Event::Wake => {
                self.controller.wake();
                *woken = true;
                false
            }
            hardware => unreachable!("hardware events are applied first: {hardware:?}"),
        }
    }

    fn decide(&mut self, policy: &mut dyn Policy, changed: bool) {
        let committed = self.controller.decide(policy, &mut self.effects);
        // A policy that only asks to be woken again, with nothing running, nothing arriving and
        // nothing changed, would spin forever: its wake-ups are dropped and the run ends with
        // its waiting jobs reported unfinished.
        let spinning =
            committed == 0 && !changed && self.controller.running_tasks() == 0 && self.next_arrival_time().is_none();
        for effect in self.effects.drain(..) {
            match effect {
                Effect::Started { task, attempt, finish_at } => {
                    self.queue.push(finish_at, Event::TaskFinished { task, attempt });
                }
                Effect::Stopped { .. } => self.stale += 1,
                Effect::WakeAt(at) if !spinning => self.queue.push(at, Event::Wake),
                Effect::WakeAt(_) => {}
            }
        }
        if self.stale >= PURGE_AT_LEAST && self.stale * 2 >= self.queue.len() {
            self.purge_stale();
        }
    }

    /// Drops the completions of attempts that have ended (a preempted task's), which would
    /// otherwise stay queued until their time, each a heap entry and a pop: a preemptive policy
    /// under overload leaves millions. A stale completion changes nothing when it pops but the
    /// time the run has reached, and only the latest one matters for that (see
    /// `end_after_purged`), so decisions, integrals and the digest are what they would be.
    fn purge_stale(&mut self) {
        let controller = &self.controller;
        let mut latest = self.purged_until;
        self.queue.retain(|key, event| {
            let Event::TaskFinished { task, attempt } = *event else { return true };
            let t = controller.task(task);
            // An ended attempt never runs again: a restart is a new attempt.
            let live = t.attempt == attempt && t.status == crate::state::TaskStatus::Running;
            if !live {
                latest = latest.max(Some(key.time));
            }
            live
        });
        self.purged_until = latest;
        self.stale = 0;
    }

    /// Out of events: had the purged stale completions stayed queued, the run would have popped
    /// them in time order (changing nothing) and ended at the last of them, or at the horizon
    /// if one lay past it. Ends the run there, as it would have.
    fn end_after_purged(&mut self) {
        let Some(last) = self.purged_until.filter(|&t| t > self.controller.now()) else { return };
        match self.stop_after {
            Some(end) if last > end => self.controller.stop_at_horizon(end),
            _ => self.controller.advance_to(last),
        }
    }
}
