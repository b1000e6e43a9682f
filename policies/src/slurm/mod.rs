//! `slurm`: Slurm 22.05's own scheduler as a policy, so that a replay of a Slurm cluster's
//! history starts jobs when that Slurm did, and other policies' numbers read as what would
//! have changed. Modelled on Slurm's source (`src/slurmctld/job_scheduler.c`,
//! `controller.c`, `src/plugins/sched/backfill/backfill.c`,
//! `src/plugins/priority/multifactor/`); docs/slurm.md says what is and is not modelled.
//!
//! - **When it decides.** slurmctld's clocks count from its start (`started_s`). A
//!   submission or a job's end only asks for a main pass, which its background loop runs at
//!   most every `batch_sched_delay` (the loop's one-second beat is not modelled: at whole-
//!   second trace times its phase is unknowable, and a fixed phase fitted the dumps worse); every `sched_interval` it runs one over the whole
//!   queue. Backfill runs every `bf_interval` while anything changed since its last pass. A
//!   job whose dependency or begin time was met is seen by the next pass of any kind: its
//!   recorded eligibility is the time of that pass, so one runs then.
//! - **Main pass.** Pending jobs by partition tier (the queue's priority), priority, submit
//!   time and id; at most `default_queue_depth` + 1 looked at, all on the periodic pass. A job
//!   that cannot start blocks its partition: no later job of it starts in this pass, and its
//!   nodes are hidden from every other partition.
//! - **Backfill.** In the same order, each job (up to `bf_max_job_test`) is given the earliest
//!   start the plan of the future allows, from running jobs' time limits: it starts now if
//!   that is now, else it reserves whole nodes from then on ([`space::Space`]).
//! - **QOS limits.** A job whose QOS's limits (GPUs or jobs, all together or per user) its
//!   start would pass stays pending and blocks nothing ([`qos`]).
//! - **Nodes.** As select/cons_tres chooses them ([`nodes`]). Each task is one Slurm job
//!   (a heterogeneous job's components start together, one candidate placed whole; the
//!   tasks of a DAG job must not wait for each other).

mod backfill;
mod config;
mod facts;
mod fairshare;
mod later;
mod node_set;
mod nodes;
mod priority;
mod qos;
mod space;

pub use config::PARAMS;

use crate::id_list::IdList;
use crate::params::{Params, SpecError};
use config::SlurmConfig;
use facts::Facts;
use node_set::NodeSet;
use nodes::{Ask, Nodes, Parts, TaskParts};
use priority::{JobFacts, Priorities};
use qos::{Over, QosUsage};
use sim::{Change, ClusterView, JobId, NodeId, Plan, Policy, SimDuration, SimTime, TaskId};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

pub struct Slurm {
    name: String,
    config: SlurmConfig,
    clocks: Option<Clocks>,
    priorities: Option<Priorities>,
    /// Jobs with tasks waiting to start, and when each became eligible.
    pending: BTreeMap<JobId, SimTime>,
    /// What each job is charged and ranked by, while it waits or runs.
    facts: Facts,
    /// The tasks this policy started that still run: every start, end and restart looks one
    /// up, and at 100,000 GPUs a tree of them cost a tenth of a run in its searches.
    running: IdList<Running>,
    /// The running tasks in the order backfill plans with them ([`EndKey`]), with where they
    /// run: kept as they start and stop, where sorting them anew cost every pass (and every
    /// start in one) all of them.
    by_end: BTreeMap<EndKey, Parts>,
    /// Parts of running tasks on each node: each holds one of its CPUs.
    held_cpus: Vec<u32>,
    /// GPUs of running tasks on each node.
    held_gpus: Vec<u32>,
    /// The free GPUs and CPUs of every node, kept from one pass to the next ([`Slurm::take_free`]):
    /// rebuilding them for every pass cost a walk over every node.
    free: Nodes,
    /// The generation of the plan's free GPUs that `free`'s GPUs are those of.
    free_generation: Option<u64>,
    /// Nodes whose running parts changed since `free` was last brought up to date.
    touched: Vec<usize>,
    /// The free nodes once every running task has ended, as the last backfill pass saw them
    /// (backfill brings them up to date with the nodes of `free` changed since).
    all_ended: Nodes,
    /// What the running jobs of each QOS with limits hold.
    qos_usage: QosUsage,
    /// When submissions and ends ask for a main pass (Slurm's `job_sched_cnt`): an end asks
    /// once its nodes are back (`--release-latency-s` later: Slurm's COMPLETING state).
    requests: BTreeSet<SimTime>,
    /// A job became eligible now: Slurm noticed it in a pass, so a pass runs now.
    pass_now: bool,
    /// Something changed since the last backfill pass (Slurm's `_more_work`).
    changed_since_backfill: bool,
    /// The wake-up last asked for.
    woken_at: Option<SimTime>,
    /// Counts the changes to the queue's order: a task joined it, or priorities changed.
    epoch: u64,
    /// The queue in order as of its epoch (taken out while a pass reads it).
    order: Option<Order>,
    /// The nodes each set of pools allows, kept for the run (a cluster's pools never change).
    allowed: Allowed,
    /// Each node's CPUs and pool, as the cluster has them.
    node_cpus: Vec<u32>,
    node_pools: Vec<u32>,
    /// The free GPUs (their generation) and `epoch` a main pass (full or not) that started
    /// nothing saw: the same again would start nothing again.
    idle_pass: [Option<(u64, u64)>; 2],
    /// The main pass's sets of the nodes still visible and of a job's usable ones, kept
    /// between passes (two allocations a pass, before).
    pass_sets: [NodeSet; 2],
    /// What backfill reuses from one job's tries to the next ([`backfill::Scratch`]).
    backfill_scratch: backfill::Scratch,
}

/// slurmctld's clocks: when each kind of pass last ran.
#[derive(Debug, Clone, Copy)]
struct Clocks {
    started: SimTime,
    last_sched: SimTime,
    last_backfill: SimTime,
    next_calc: SimTime,
}

/// A task this policy started: its job, where, and when Slurm expects it to end (its start
/// plus its time limit).
#[derive(Debug, Clone)]
struct Running {
    job: JobId,
    parts: Parts,
    start: SimTime,
    expected_end: SimTime,
}

impl Running {
    fn gpus(&self) -> u32 {
        self.parts.iter().map(|&(_, gpus)| gpus).sum()
    }
}

/// A running task's place in backfill's plan: by the end its limit gives, then its first node,
/// then its id (the order of a stable sort of the running tasks by id on end and first node).
type EndKey = (SimTime, Option<NodeId>, TaskId);

impl Running {
    fn end_key(&self, task: TaskId) -> EndKey {
        (self.expected_end, self.parts.first().map(|p| p.0), task)
    }
}

/// The queue in order as of `epoch`: the candidates that waited then (a pass reads them in
/// place, skipping those started since), and how many partitions they are in (counted at the
/// first full main pass that reads them: only it can stop early on them).
struct Order {
    epoch: u64,
    candidates: Vec<Candidate>,
    partitions: Option<usize>,
}

impl Order {
    fn partitions(&mut self) -> usize {
        let candidates = &self.candidates;
        *self
            .partitions
            .get_or_insert_with(|| candidates.iter().map(|c| c.partition.as_str()).collect::<BTreeSet<_>>().len())
    }
}

/// What one placement starts: a waiting task (the list leaves room for a job-level gang),
/// each with its shape.
#[derive(Debug, Clone)]
struct Candidate {
    job: JobId,
    /// Held in place for one task: the queue is made anew after each arrival, and a list on
    /// the heap for each candidate was 2 % of a run's samples in the allocator.
    tasks: smallvec::SmallVec<[(TaskId, Ask); 1]>,
    partition: sim::Name,
    /// How long it asks for (its time limit, the task's estimate), for backfill; `None`: no
    /// limit (Slurm's INFINITE), planned to the end of the backfill window.
    limit: Option<SimDuration>,
}

impl Slurm {
    pub fn new(params: &Params) -> Result<Slurm, SpecError> {
        let config = SlurmConfig::from_params(params)?;
        Ok(Slurm {
            name: config::canonical_name(params),
            config,
            clocks: None,
            priorities: None,
            pending: BTreeMap::new(),
            facts: Facts::default(),
            running: IdList::default(),
            by_end: BTreeMap::new(),
            held_cpus: Vec::new(),
            held_gpus: Vec::new(),
            free: Nodes::default(),
            free_generation: None,
            touched: Vec::new(),
            all_ended: Nodes::default(),
            qos_usage: QosUsage::default(),
            requests: BTreeSet::new(),
            pass_now: false,
            changed_since_backfill: false,
            woken_at: None,
            epoch: 0,
            order: None,
            idle_pass: [None, None],
            pass_sets: Default::default(),
            backfill_scratch: Default::default(),
            allowed: Allowed::default(),
            node_cpus: Vec::new(),
            node_pools: Vec::new(),
        })
    }

    fn start_clocks(&mut self, view: &ClusterView<'_>) -> Clocks {
        let now = view.now();
        let started = self.config.started.map_or(now, SimTime::from_secs);
        // The backfill and priority threads start their clocks about a second after slurmctld
        // (in the fair-share dumps, the first backfill pass falls `bf_interval` + 1 s after
        // BOOT_TIME, and sprio's ages are those of calculations 1 s after each period).
        let threads = started + SimDuration::from_secs(1);
        let clocks = Clocks { started, last_sched: started, last_backfill: threads, next_calc: threads };
        let nodes = view.cluster().nodes();
        self.node_cpus = nodes.iter().map(|n| self.config.node_cpus.unwrap_or(n.gpu_count)).collect();
        self.node_pools = nodes.iter().map(|n| n.pool.0).collect();
        let cpus: u32 = self.node_cpus.iter().sum();
        self.priorities = Some(Priorities::new(&self.config, nodes.len() as u32, cpus));
        *self.clocks.insert(clocks)
    }

    /// Applies what happened since the last call: arrivals and eligibility, ends, requeues.
    fn observe(&mut self, view: &ClusterView<'_>) {
        let now = view.now();
        self.changed_since_backfill |= !view.changes().is_empty();
        // The jobs that ended, in place for a few (a set on the heap was an allocation and a
        // free per job); sorted before they are looked up.
        let mut ended = smallvec::SmallVec::<[JobId; 4]>::new();
        for change in view.changes() {
            match *change {
                Change::TaskReady(task) => {
                    let job = view.task(task).job;
                    if view.job_spec(job).submit == now {
                        self.requests.insert(now);
                    } else {
                        self.pass_now = true;
                    }
                    self.wait(view, job, now);
                }
                Change::TaskPreempted(task) => {
                    self.stopped(task, now);
                    self.wait(view, view.task(task).job, now);
                    self.requests.insert(now);
                }
                Change::TaskFailed(task) | Change::TaskFinished(task) => {
                    self.stopped(task, now);
                    if view.task(task).status.is_startable() {
                        self.wait(view, view.task(task).job, now);
                    }
                    self.requests.insert(now + view.release_latency());
                }
                Change::TaskStarted(task) => self.started_elsewhere(view, task),
                Change::JobEnded(job) => {
                    // Its tasks' ids are consecutive: a look-up each, not a walk over every
                    // running task.
                    let stopped: Vec<TaskId> = view.job(job).tasks().filter(|&t| self.running.contains(t)).collect();
                    if !stopped.is_empty() {
                        self.requests.insert(now + view.release_latency());
                    }
                    stopped.into_iter().for_each(|t| self.stopped(t, now));
                    self.pending.remove(&job);
                    self.facts.remove(job);
                    if let Some(p) = self.priorities.as_mut() {
                        p.forget(job);
                    }
                    ended.push(job);
                }
            }
        }
        // The queue order kept between passes drops ended jobs now: a streamed run lets a job
        // go once the policy has been told it ended, and nothing may read it after.
        if let Some(order) = self.order.as_mut().filter(|_| !ended.is_empty()) {
            ended.sort_unstable();
            order.candidates.retain(|c| ended.binary_search(&c.job).is_err());
        }
    }

    /// `job` has a task waiting: it is pending, eligible from now if it was not already.
    fn wait(&mut self, view: &ClusterView<'_>, job: JobId, now: SimTime) {
        self.epoch += 1;
        if self.pending.contains_key(&job) {
            return;
        }
        self.pending.insert(job, now);
        if let Some(facts) = self.facts.add_if_missing(job, || JobFacts::of(view, job, now))
            && let Some(p) = self.priorities.as_mut()
        {
            p.submitted(&self.config, job, facts);
        }
    }

    /// A task another planner started (a forecast pins the jobs Slurm runs before the policy's
    /// first decision): it runs where it was put, and backfill plans with its time limit as
    /// for the tasks this policy starts. A task this policy started is already known.
    fn started_elsewhere(&mut self, view: &ClusterView<'_>, task: TaskId) {
        if self.running.contains(task) {
            return;
        }
        let t = view.task(task);
        let mut on_node: BTreeMap<NodeId, u32> = BTreeMap::new();
        for &gpu in &t.placed {
            *on_node.entry(view.cluster().node_of(gpu)).or_default() += 1;
        }
        let parts: Parts = on_node.into_iter().collect();
        let expected_end = t.estimate.get().map_or(SimTime(u64::MAX / 2), |l| t.run_start + l);
        // Its job may never have been seen waiting (started at its arrival): its QOS and
        // owner count it all the same.
        self.facts.add_if_missing(t.job, || JobFacts::of(view, t.job, t.run_start));
        self.ran(task, Running { job: t.job, parts, start: t.run_start, expected_end });
    }

    /// `task` runs as `run`: backfill plans with its end, and its QOS counts it.
    fn ran(&mut self, task: TaskId, run: Running) {
        if let Some(facts) = self.facts.get(run.job) {
            self.qos_usage.count(&self.config.qos_limits, facts, run.gpus(), true);
        }
        self.hold(&run.parts, true);
        let (key, parts) = (run.end_key(task), run.parts.clone());
        if let Some(old) = self.running.insert(task, run) {
            self.hold(&old.parts, false);
            self.by_end.remove(&old.end_key(task));
        }
        self.by_end.insert(key, parts);
    }

    /// Counts (or stops counting) what `parts` hold of their nodes.
    fn hold(&mut self, parts: &Parts, add: bool) {
        for &(node, gpus) in parts {
            let n = node.index();
            if n >= self.held_cpus.len() {
                self.held_cpus.resize(n + 1, 0);
                self.held_gpus.resize(n + 1, 0);
            }
            self.touched.push(n);
            if add {
                self.held_cpus[n] += 1;
                self.held_gpus[n] += gpus;
            } else {
                self.held_cpus[n] -= 1;
                self.held_gpus[n] -= gpus;
            }
        }
    }

    /// Which QOS limit `candidate` would pass if it started now.
    fn qos_over(&self, candidate: &Candidate) -> Over {
        let Some(facts) = self.facts.get(candidate.job) else { return Over::Nothing };
        let gpus = candidate.tasks.iter().map(|&(_, ask)| ask.gpus()).sum();
        self.qos_usage.check(&self.config.qos_limits, facts, candidate.tasks.len() as u32, gpus)
    }

    /// A task stopped at `now`: its job is charged for the time it ran.
    fn stopped(&mut self, task: TaskId, now: SimTime) {
        let Some(run) = self.running.remove(task) else { return };
        self.hold(&run.parts, false);
        self.by_end.remove(&run.end_key(task));
        if let Some(facts) = self.facts.get(run.job) {
            self.qos_usage.count(&self.config.qos_limits, facts, run.gpus(), false);
        }
        if let (Some(p), Some(facts)) = (self.priorities.as_mut(), self.facts.get(run.job)) {
            p.charge(&self.config, facts, run.start, now);
        }
    }

    /// Priority calculations due by `now` (`PriorityCalcPeriod`).
    fn recalculate(&mut self, now: SimTime, clocks: &mut Clocks) {
        let Some(p) = self.priorities.as_mut() else { return };
        while clocks.next_calc <= now {
            let at = clocks.next_calc;
            let running = self.running.by_task().filter_map(|(_, r)| Some((self.facts.get(r.job)?, r.start)));
            let pending = self.pending.keys().filter_map(|&j| Some((j, self.facts.get(j)?)));
            p.recalculate(&self.config, at, running, pending);
            self.epoch += 1;
            clocks.next_calc = at + self.config.calc_period;
        }
    }

    /// The pending jobs that can start, in Slurm's queue order: partition tier, priority,
    /// submit time, id. The order is kept from one pass to the next until a task joins the
    /// queue or priorities change (`epoch`): a pass takes it, skips the candidates that are
    /// no longer [`waiting`] as it reads them, and gives it back ([`Slurm::keep`]).
    fn queue(&mut self, view: &ClusterView<'_>, plan: &Plan<'_>) -> Order {
        let mut out = match self.order.take() {
            Some(order) if order.epoch == self.epoch => return order,
            // A stale order's list is filled anew: a new list at each arrival was an
            // allocation and a free per job.
            Some(order) => {
                let mut list = order.candidates;
                list.clear();
                list
            }
            None => Vec::new(),
        };
        let mut gone = Vec::new();
        for &job in self.pending.keys() {
            let spec = view.job_spec(job);
            let partition = spec.queue.clone().unwrap_or_default();
            let before = out.len();
            for task in view.job(job).tasks().filter(|&t| view.task(t).status.is_startable() && !plan.is_decided(t)) {
                let s = view.task(task);
                let tasks = smallvec::smallvec![(task, Ask::of(s.gpus.max(1), s.per_node()))];
                out.push(Candidate { job, tasks, partition: partition.clone(), limit: s.estimate.get() });
            }
            if spec.co_start && out.len() > before + 1 {
                together(&mut out, before);
            }
            if out.len() == before {
                gone.push(job);
            }
        }
        gone.into_iter().for_each(|j| {
            self.pending.remove(&j);
        });
        let tier = |c: &Candidate| view.queue_of(c.job).map_or(0, |q| view.queues().get(q).priority);
        let priority = |c: &Candidate| self.priorities.as_ref().map_or(1, |p| p.of(c.job));
        out.sort_by_cached_key(|c| {
            (
                std::cmp::Reverse(tier(c)),
                std::cmp::Reverse(priority(c)),
                view.job_spec(c.job).submit,
                c.job,
                c.tasks[0].0,
            )
        });
        Order { epoch: self.epoch, candidates: out, partitions: None }
    }

    /// Keeps the queue a pass read for the next.
    fn keep(&mut self, order: Order) {
        self.order = Some(order);
    }

    /// Free GPUs and CPUs of every node now, for a pass to start jobs on: the view kept since
    /// the last pass, brought up to date. [`Slurm::put_free`] keeps it for the next pass.
    fn take_free(&mut self, plan: &Plan<'_>) -> Nodes {
        let free = plan.free();
        let changed = self.free_generation.and_then(|g| free.changed_since(g));
        self.take_free_from(free.generation(), free.by_node(), changed)
    }

    /// [`Slurm::take_free`] with `by_node` the free GPUs of each node at `generation`, and
    /// `changed` the nodes whose GPUs changed since the view was kept (`None`: unknown, so
    /// every node is compared). Only what changed is looked at: those nodes' GPUs, and the
    /// CPUs of nodes where tasks started or stopped (each part of a running task holds one).
    fn take_free_from(&mut self, generation: u64, by_node: &[u32], changed: Option<&[NodeId]>) -> Nodes {
        let count = self.node_cpus.len();
        let mut nodes = std::mem::take(&mut self.free);
        if nodes.len() != count {
            nodes = Nodes::new(vec![0; count], self.node_cpus.clone(), self.node_pools.clone());
            self.free_generation = None;
            self.touched = (0..count).collect();
        }
        match changed.filter(|_| self.free_generation.is_some()) {
            // Most passes follow a change to a few nodes: reading every node cost a pass on a
            // big cluster more than the pass itself.
            Some(changed) => changed.iter().for_each(|n| nodes.set_gpus_if_changed(n.index(), by_node)),
            None if self.free_generation != Some(generation) => {
                (0..count).for_each(|n| nodes.set_gpus_if_changed(n, by_node));
            }
            None => {}
        }
        for &n in self.touched.iter().filter(|&&n| n < count) {
            let held = self.held_cpus.get(n).copied().unwrap_or(0);
            nodes.set_cpus(n, self.node_cpus[n].saturating_sub(held));
        }
        self.touched.clear();
        nodes
    }

    /// Keeps the view a pass started jobs on (it took what they hold, as the plan did).
    fn put_free(&mut self, nodes: Nodes, plan: &Plan<'_>) {
        self.put_free_at(nodes, plan.free().generation());
    }

    /// [`Slurm::put_free`]: `nodes`' GPUs are those of the plan's free GPUs at `generation`.
    fn put_free_at(&mut self, nodes: Nodes, generation: u64) {
        self.free = nodes;
        self.free_generation = Some(generation);
    }

    /// Starts every waiting task of `candidate` on the nodes chosen for it, or none.
    fn start(
        &mut self,
        view: &ClusterView<'_>,
        plan: &mut Plan<'_>,
        nodes: &mut Nodes,
        candidate: &Candidate,
        parts: TaskParts,
    ) -> bool {
        if !candidate.tasks.iter().all(|&(t, _)| plan.quota_allows(t)) {
            return false;
        }
        let savepoint = plan.savepoint();
        let now = view.now();
        // Held in place for one task, as the candidate's tasks are.
        let mut started = smallvec::SmallVec::<[TaskId; 1]>::new();
        // A co-start job's candidate, even of one task (the one left to retry after a failure).
        let together = plan.co_starts(candidate.tasks[0].0);
        if together && !start_together(plan, candidate, &parts) {
            return false;
        }
        started.extend(candidate.tasks.iter().map(|&(t, _)| t).filter(|_| together));
        for (&(task, _), task_parts) in candidate.tasks.iter().zip(&parts).filter(|_| !together) {
            let mut gpus = crate::placement::GpuList::new();
            for &(node, count) in task_parts {
                plan.free().take_from(node, count, &mut gpus);
            }
            if plan.start(task, &gpus).is_err() {
                plan.rollback(savepoint);
                return false;
            }
            started.push(task);
        }
        for (task, task_parts) in started.into_iter().zip(parts) {
            nodes.take(&task_parts);
            let limit = view.task(task).estimate.get();
            let expected_end = limit.map_or(SimTime(u64::MAX / 2), |l| now + l);
            self.ran(task, Running { job: candidate.job, parts: task_parts, start: now, expected_end });
        }
        true
    }

    /// One main pass: jobs in order, each partition stopping at its first job that cannot
    /// start; `full`: the whole queue, else `default_queue_depth` + 1 jobs.
    fn main_pass(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, full: bool) {
        let seen = Some((plan.free().generation(), self.epoch));
        if self.idle_pass[usize::from(full)] == seen {
            return; // nothing was freed and nothing joined the queue since it started nothing
        }
        let mut queue = self.queue(view, plan);
        // Only a full pass reads far enough for every partition to block.
        let partitions = if full { queue.partitions() } else { usize::MAX };
        let mut nodes = self.take_free(plan);
        // `masked` is read only once copied from a job's own nodes, which sizes it.
        let [mut visible, mut masked] = std::mem::take(&mut self.pass_sets);
        visible.fill(nodes.len());
        let mut blocked: Vec<&str> = Vec::new();
        let mut started_any = false;
        let mut depth = 0;
        for candidate in queue.candidates.iter() {
            if !waiting(view, plan, candidate) {
                continue;
            }
            depth += 1;
            if !full && depth > self.config.default_queue_depth + 1 {
                break;
            }
            if blocked.len() == partitions {
                break; // every later job would wait behind its partition's block
            }
            if blocked.contains(&candidate.partition.as_str()) {
                continue;
            }
            if !candidate.tasks.iter().all(|&(t, _)| plan.quota_allows(t)) || self.qos_over(candidate) != Over::Nothing
            {
                continue; // a QOS or quota limit holds it back without blocking its partition
            }
            let own = self.allowed.of(view, candidate);
            // Until a partition blocks, every node is visible and the job's own are usable
            // (two passes over every node's word per job saved, at 12,500 nodes).
            let usable: &NodeSet = if blocked.is_empty() {
                &own
            } else {
                masked.copy_from(&own);
                masked.intersect(&visible);
                &masked
            };
            let started = select_all(&mut nodes, &candidate.tasks, usable)
                .is_some_and(|parts| self.start(view, plan, &mut nodes, candidate, parts));
            started_any |= started;
            if !started {
                blocked.push(candidate.partition.as_str());
                visible.subtract(&own);
            }
        }
        self.idle_pass[usize::from(full)] = if started_any { None } else { seen };
        self.pass_sets = [visible, masked];
        self.put_free(nodes, plan);
        self.keep(queue);
    }

    /// A main pass at `now` answered every request made by then.
    fn answered(&mut self, now: SimTime) {
        // Dropped in place: a new set for the requests left cost an allocation a pass.
        while self.requests.first().is_some_and(|&asked| asked <= now) {
            self.requests.pop_first();
        }
    }

    /// When to be called next: the next pass of any kind that is due with jobs waiting.
    fn next_wake(&self, now: SimTime, clocks: &Clocks, running: bool) -> Option<SimTime> {
        let waiting = !self.pending.is_empty();
        let asked = self.requests.first().map(|&asked| {
            let gate = clocks.last_sched + self.config.batch_sched_delay;
            gate.max(asked).max(now).max(clocks.started)
        });
        // Periodic passes only while something runs: with nothing running, nothing changes
        // that a pass asked for by the next change would not see (a decision point that starts
        // nothing while nothing runs ends the run's wake-ups). A priority calculation is
        // caught up at the next pass.
        let full = (waiting && running).then(|| next_full_pass(clocks.started, self.config.sched_interval, now));
        let backfill = (self.config.backfill && running).then(|| clocks.last_backfill + self.config.bf_interval);
        [asked, full, backfill].into_iter().flatten().filter(|&t| t > now).min()
    }
}

/// The nodes a job may use, those of its tasks' pools (its partition and GPU type), worked
/// out once per set of pools in a run.
#[derive(Default)]
struct Allowed(BTreeMap<u64, Arc<NodeSet>>);

impl Allowed {
    fn of(&mut self, view: &ClusterView<'_>, candidate: &Candidate) -> Arc<NodeSet> {
        let key = candidate.tasks.iter().fold(0, |k, &(t, _)| k | view.task(t).pools.0);
        let cluster = view.cluster();
        self.0
            .entry(key)
            .or_insert_with(|| {
                let mut allowed = NodeSet::empty(cluster.nodes().len());
                for pool in sim::PoolMask(key).iter() {
                    cluster.pool(pool).nodes().for_each(|n| allowed.insert(n.index()));
                }
                Arc::new(allowed)
            })
            .clone()
    }
}

/// Whether `candidate` still waits: a kept queue holds candidates started since it was made.
fn waiting(view: &ClusterView<'_>, plan: &Plan<'_>, candidate: &Candidate) -> bool {
    let task = candidate.tasks[0].0;
    view.task(task).status.is_startable() && !plan.is_decided(task)
}

/// Merges a co-start (heterogeneous) job's candidates, `out[from..]`, into one: its
/// components start together, and it asks for the longest of their time limits.
fn together(out: &mut Vec<Candidate>, from: usize) {
    let parts = out.split_off(from);
    let limit = parts.iter().try_fold(SimDuration::ZERO, |longest, c| Some(longest.max(c.limit?)));
    let tasks = parts.iter().flat_map(|c| c.tasks.iter().copied()).collect();
    let first = parts.into_iter().next().expect("two candidates or more");
    out.push(Candidate { tasks, limit, ..first });
}

/// Starts every task of a co-start `candidate` on its `parts` at once, or none.
fn start_together(plan: &mut Plan<'_>, candidate: &Candidate, parts: &[Parts]) -> bool {
    let started = plan.start_together_with(candidate.job, |task, free, gpus| {
        let Some(i) = candidate.tasks.iter().position(|&(t, _)| t == task) else { return false };
        parts[i].iter().for_each(|&(node, count)| free.take_from(node, count, gpus));
        true
    });
    started == Ok(true)
}

/// Places every task of a job on a copy of `nodes`; `None` if one does not fit.
fn select_all(nodes: &mut Nodes, tasks: &[(TaskId, Ask)], allowed: &NodeSet) -> Option<TaskParts> {
    if let [(_, ask)] = tasks {
        return nodes.select(ask, allowed).map(|parts| smallvec::smallvec![parts]);
    }
    let mut left = nodes.clone();
    let mut all = TaskParts::with_capacity(tasks.len());
    for (_, ask) in tasks {
        let parts = left.select(ask, allowed)?;
        left.take(&parts);
        all.push(parts);
    }
    Some(all)
}

/// The last periodic full pass at or before `now` (`None`: none yet or they are off).
fn last_full_pass(started: SimTime, interval: SimDuration, now: SimTime) -> Option<SimTime> {
    let every = interval.as_ms();
    (every > 0 && now > started).then(|| SimTime(started.as_ms() + (now.as_ms() - started.as_ms()) / every * every))
}

fn next_full_pass(started: SimTime, interval: SimDuration, now: SimTime) -> SimTime {
    let every = interval.as_ms();
    if every == 0 {
        return SimTime(u64::MAX / 2);
    }
    let since = now.as_ms().saturating_sub(started.as_ms());
    SimTime(started.as_ms() + (since / every + 1) * every)
}

impl Policy for Slurm {
    fn name(&self) -> &str {
        &self.name
    }

    /// The task's running entry and its job's facts: `stopped` reads both when the end is
    /// learnt, and at 100,000 GPUs both are cold by then.
    fn prefetch_ending(&self, task: TaskId, job: JobId) {
        self.running.prefetch(task);
        self.facts.prefetch(job);
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let now = view.now();
        let mut clocks = match self.clocks {
            Some(c) => c,
            None => self.start_clocks(view),
        };
        // Called with nothing to observe and not at a wake-up of its own: the hardware changed
        // (a node came back), which asks for a pass as a node's registration does in Slurm.
        if view.changes().is_empty() && self.woken_at != Some(now) {
            self.requests.insert(now);
        }
        self.observe(view);
        self.recalculate(now, &mut clocks);
        if now >= clocks.started {
            let full = last_full_pass(clocks.started, self.config.sched_interval, now);
            let asked = self.requests.first().is_some_and(|&at| at <= now);
            if full == Some(now) {
                self.main_pass(view, plan, true);
                clocks.last_sched = now;
                self.answered(now);
            } else {
                clocks.last_sched = clocks.last_sched.max(full.unwrap_or(SimTime::ZERO));
                if asked && now >= clocks.last_sched + self.config.batch_sched_delay {
                    self.main_pass(view, plan, false);
                    clocks.last_sched = now;
                    self.answered(now);
                } else if self.pass_now {
                    self.main_pass(view, plan, false);
                }
            }
            self.pass_now = false;
        }
        let backfill_due = now >= clocks.last_backfill + self.config.bf_interval;
        if self.config.backfill && backfill_due && self.changed_since_backfill {
            self.backfill_pass(view, plan);
            clocks.last_backfill = now;
            self.changed_since_backfill = false;
        }
        self.clocks = Some(clocks);
        self.woken_at = self.next_wake(now, &clocks, !self.running.is_empty());
        if let Some(at) = self.woken_at {
            plan.wake_at(at).expect("a wake-up after now");
        }
    }
}

/// Draws below a bound from a fixed xorshift stream, for the randomised tests of this module's
/// kept structures against their from-scratch twins.
#[cfg(test)]
fn test_draws(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |below| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % below
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slurm() -> Slurm {
        Slurm::new(&Params::new("slurm", BTreeMap::new(), Some(PARAMS)).unwrap()).unwrap()
    }

    /// What the kept running index must equal: every running task sorted by end and first
    /// node, stably over task ids, and each node's parts and GPUs counted.
    fn from_scratch(slurm: &Slurm, nodes: usize) -> (Vec<(EndKey, Parts)>, Vec<u32>, Vec<u32>) {
        let mut by_end: Vec<(EndKey, Parts)> =
            slurm.running.by_task().map(|(t, r)| (r.end_key(t), r.parts.clone())).collect();
        by_end.sort_by_key(|((end, first, _), _)| (*end, *first));
        let (mut cpus, mut gpus) = (vec![0; nodes], vec![0; nodes]);
        for &(node, count) in slurm.running.by_task().flat_map(|(_, r)| &r.parts) {
            cpus[node.index()] += 1;
            gpus[node.index()] += count;
        }
        (by_end, cpus, gpus)
    }

    #[test]
    fn the_running_index_kept_as_tasks_start_and_stop_is_the_one_sorted_anew() {
        let mut next = test_draws(0x2545_f491_4f6c_dd1d_u64);
        let nodes = 12;
        let mut slurm = slurm();
        for step in 0..3_000 {
            let task = TaskId(next(60) as u32);
            if slurm.running.contains(task) && next(3) > 0 {
                slurm.stopped(task, SimTime(step));
            } else {
                // Ends and first nodes collide often, so ties fall to the task ids.
                let parts: Parts =
                    (0..1 + next(3)).map(|_| (NodeId(next(nodes as u64) as u32), 1 + next(8) as u32)).collect();
                let run = Running { job: JobId(0), parts, start: SimTime(step), expected_end: SimTime(next(5) * 1000) };
                slurm.ran(task, run);
            }
            let (by_end, cpus, gpus) = from_scratch(&slurm, nodes);
            let kept: Vec<(EndKey, Parts)> = slurm.by_end.iter().map(|(&k, p)| (k, p.clone())).collect();
            assert_eq!(kept, by_end, "step {step}");
            let held = |counts: &[u32]| (0..nodes).map(|n| counts.get(n).copied().unwrap_or(0)).collect::<Vec<_>>();
            assert_eq!((held(&slurm.held_cpus), held(&slurm.held_gpus)), (cpus, gpus), "step {step}");
        }
    }

    /// What the kept free-node view must equal: each node's free GPUs as the plan has them,
    /// and its CPUs less one for each part of a running task on it.
    fn free_from_scratch(slurm: &Slurm, on_node: &[u32]) -> Nodes {
        let held = |n: usize| slurm.held_cpus.get(n).copied().unwrap_or(0);
        let cpus = slurm.node_cpus.iter().enumerate().map(|(n, &c)| c.saturating_sub(held(n))).collect();
        Nodes::new(on_node.to_vec(), cpus, slurm.node_pools.clone())
    }

    /// Between passes tasks start and stop (some on nodes with few CPUs, so that they run
    /// out) and the engine frees or takes GPUs; in passes tasks start on the view as the plan
    /// takes their GPUs. Every pass's view, and backfill's view once every task has ended, is
    /// the one built anew.
    #[test]
    fn the_free_view_kept_between_passes_is_the_one_built_anew() {
        let mut next = test_draws(0x3c6e_f372_fe94_f82b_u64);
        let nodes = 40;
        let mut slurm = slurm();
        slurm.node_cpus = (0..nodes).map(|_| 1 + next(4) as u32).collect();
        slurm.node_pools = (0..nodes).map(|n| u32::from(n >= 30)).collect();
        let (mut on_node, mut generation) = (vec![8u32; nodes], 0);
        // The nodes changed since the view was kept, as the plan's free GPUs log them.
        let mut changed: Vec<NodeId> = Vec::new();
        let part = |next: &mut dyn FnMut(u64) -> u64| (NodeId(next(nodes as u64) as u32), 1 + next(3) as u32);
        for step in 0..4_000 {
            let task = TaskId(next(80) as u32);
            match next(4) {
                0 => slurm.stopped(task, SimTime(step)),
                1 => {
                    let parts: Parts = (0..1 + next(2)).map(|_| part(&mut next)).collect();
                    let run = Running { job: JobId(0), parts, start: SimTime(step), expected_end: SimTime(step) };
                    slurm.ran(task, run);
                }
                2 => {
                    let node = next(nodes as u64) as usize;
                    on_node[node] = next(9) as u32;
                    generation += 1;
                    changed.push(NodeId(node as u32));
                }
                _ => {
                    // Brought up to date from the log or, now and then, by comparing every node.
                    let log = (next(3) != 0).then_some(&changed[..]);
                    let mut view = slurm.take_free_from(generation, &on_node, log);
                    let built = free_from_scratch(&slurm, &on_node);
                    assert_eq!(view, built, "step {step}");
                    if next(2) == 0 {
                        let all_ended = slurm.all_ended(&mut view);
                        let held = |counts: &[u32], n: usize| counts.get(n).copied().unwrap_or(0);
                        let gpus = (0..nodes).map(|n| on_node[n] + held(&slurm.held_gpus, n)).collect();
                        let cpus = (0..nodes).map(|n| built.cpus(n) + held(&slurm.held_cpus, n)).collect();
                        assert_eq!(all_ended, Nodes::new(gpus, cpus, slurm.node_pools.clone()), "step {step}");
                        slurm.put_all_ended(all_ended);
                    }
                    let (node, gpus) = part(&mut next);
                    if on_node[node.index()] >= gpus && !slurm.running.contains(task) {
                        view.take(&[(node, gpus)]);
                        on_node[node.index()] -= gpus;
                        generation += 1;
                        let run = Running {
                            job: JobId(0),
                            parts: smallvec::smallvec![(node, gpus)],
                            start: SimTime(step),
                            expected_end: SimTime(step),
                        };
                        slurm.ran(task, run);
                    }
                    slurm.put_free_at(view, generation);
                    changed.clear();
                }
            }
        }
    }
}
