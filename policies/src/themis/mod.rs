//! `themis`: finish-time fairness in rounds, after Themis (Mahajan et al., "Themis: Fair and
//! Efficient GPU Cluster Scheduling", NSDI 2020), without its auction: the allocator gives
//! GPUs to the tasks with the largest finish-time fairness rho first.
//!
//! **rho** of a task at time t is `T_sh / T_id`, computed exactly with integers:
//! - `T_sh` = the finish time its job would reach if the task (re)started now and ran without
//!   interruption, less the job's submit: `now + restart overhead + expected remaining -
//!   submit`. For a waiting task that is its finish if it gets GPUs now; for a running task
//!   (a possible victim) its finish if it were preempted now and restarted at once, so its
//!   remaining work includes what it would lose since its last checkpoint
//!   (`ClusterView::work_at_risk`) and its restart overhead: preempting costs the victim, and
//!   a lease shorter than the checkpoint interval cannot make two jobs thrash. T_sh contains
//!   all the waiting and lost work so far.
//! - `T_id` with `t_id=alone` (the default) is the task's expected duration on its own GPUs,
//!   alone in the cluster: rho is then the job's slowdown so far, and a waiting task's rho
//!   grows by 1/T_id per unit of time (Themis's rho with a dedicated share, which for a
//!   waiting job is the highest-response-ratio-next rule). With `t_id=share` it is the
//!   duration on a 1/N share of the cluster as in the paper: `duration x max(1, G x N / C)`,
//!   where G is the task's GPUs, N the jobs in the system (waiting or running) at the round
//!   and C the GPUs of the cluster: a job asking for more than its 1/N share is expected to
//!   run proportionally slower on it, so its rho is lower.
//!
//! `duration=oracle|estimate` chooses the durations used (as sjf).
//!
//! **Rounds** (`lease_s`, the Themis lease): a round happens at the first decision point at
//! or after each multiple of the lease (the policy wakes itself at the next boundary while
//! tasks wait). In a round every waiting and running task's rho is computed; in decreasing
//! rho (ties: task id), each waiting task starts if it fits, else running tasks of strictly
//! smaller rho in one of its pools are preempted, smallest rho first (ties: the latest task
//! first), until it fits. A running task is a victim only once it holds a whole lease past
//! its restart overhead (its lease has expired), so every start makes at least one lease of
//! progress and two jobs cannot livelock by preempting each other during their overheads,
//! and only once it has checkpointed work in this attempt, so no attempt is thrown away whole.
//! If even all of them would not make room, nothing is preempted and
//! the preemptive pass ends there. Each preemption is logged with both rhos and the work the
//! victim loses (already inside its rho: a victim that would lose more ranks higher).
//! **Preemption happens in rounds only.** Between rounds
//! (arrivals, completions), free GPUs are filled without preemption: waiting tasks in the
//! last round's rho order, then tasks that arrived since and the round's victims, in arrival
//! (task id) order.
//!
//! Decision cost: a round is O(waiting + running) plus O(log n) for each task it reads in
//! order (the ones it starts and the one it stops at) and each victim a preemption walks,
//! once per lease; between rounds O((starts + 1) x shapes x log n) and O(changes x log n).
//! Every waiting task's rho changes at every round (it grows with the wait), so a round cannot
//! touch fewer; it reads each one's rho from what was noted at its first round (kept in a list
//! its rank indexes, so that only waiting tasks hold it), skips running tasks still in their lease on what
//! was noted at their start, and computes the victims' rhos only once a task does not fit. The
//! order is not sorted in full: each shape's tasks are heapified and sorted as far as read
//! (`RankedQueue`), and so are each pool's victims (`LazySorted`), allocating nothing in
//! steady state. With queues, a round sorts in full and re-keys the wait queue with integer
//! ranks (O((waiting + running) log n)), reading what each waiting task's rho needs from its
//! state: a task its quota parks keeps its rank as its key, compared with later rounds' ranks.

mod rho;

use crate::id_list::IdList;
use crate::lazy_sorted::LazySorted;
use crate::params::{AVOID_FAILED, DURATION, PLACEMENT, ParamInfo, Params, Source, SpecError};
use crate::placement::{Placer, Shape, nothing_fits};
use crate::ranked_queue::RankedQueue;
use crate::reason::{push_decimal, push_thousandths};
use crate::tracking::{Placed, place_and_start, sync_waiting};
use crate::wait_queue::{Key, WaitQueue};
use rho::Rho;
use sim::{
    Change, ClusterView, DurationSource, FreeGpus, JobId, Plan, Policy, PoolId, SimDuration, SimTime, TaskId,
    TaskStatus,
};
use std::cmp::{Ordering, Reverse};

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "lease_s",
        values: "seconds >= 1",
        default: "600",
        help: "round length: rho is recomputed and preemption may happen once per lease",
    },
    ParamInfo {
        key: "t_id",
        values: "alone|share",
        default: "alone",
        help: "T_id: duration alone on its own GPUs, or on a 1/N share of the cluster",
    },
    DURATION,
    PLACEMENT,
    AVOID_FAILED,
];

/// Keys of tasks that waited at no round yet, and of a round's victims: after every ranked
/// task, in arrival order. A round's victims are queued under it when its loop ends (the
/// loop reads ranked tasks only): while the round's decision lasts the only other tasks in
/// `waiting` are ranked ones (the round took in every fresh task), so they then come after
/// those as keys of their own would, and the next decision's changes, which name them again,
/// find them queued so already.
const FRESH: Key = 1 << 62;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TId {
    Alone,
    Share,
}

/// A victim's place in its pool's list: smallest rho first (ties: the latest task first).
type VictimKey = (Rho, Reverse<TaskId>);

pub struct Themis {
    name: String,
    lease: SimDuration,
    t_id: TId,
    source: DurationSource,
    placer: Placer,
    /// Waiting tasks. Without queues, only those that waited at no round yet and the last
    /// round's victims (`FRESH`): the ranked ones are in `ranked`. With queues, all
    /// of them, the ranked ones keyed by their rank (a task its quota parks keeps its rank
    /// as its key, and an integer rank compares with the next round's ranks).
    waiting: WaitQueue,
    /// Without queues: the last round's waiting tasks in its rho order, sorted only as far as
    /// read (all of them come before `waiting`'s, as their ranks would).
    ranked: RankedQueue<Ranked>,
    /// What each ranked task's rho needs, at its key's `at`: rebuilt at each round.
    ranked_waiting: Vec<Waiting>,
    /// Tasks running in committed state (started by an earlier decision), with when their
    /// lease expires and their pool, noted at the start: a round skips the tasks still in
    /// their lease without reading their state. In no order: a round heaps its victims by
    /// (rho, task), a key no two share, and `t_id=share` sorts the jobs it counts.
    running: IdList<Lease>,
    next_round: SimTime,
    /// A round's working lists, kept between rounds so that a round allocates nothing.
    scratch: Scratch,
}

/// A running task's lease: it is no victim before `until`. With its job's submit time, which
/// its rho as a victim needs at every round: read here, in the dense list a round walks, it
/// costs no cache miss on the job's spec (a million-job run's specs far exceed the cache).
#[derive(Debug, Clone, Copy)]
struct Lease {
    until: SimTime,
    pool: Option<PoolId>,
    submit: SimTime,
}

/// The parts of a waiting task's rho that do not change while it waits (its remaining work
/// and restart overhead change only while it holds GPUs): a round reads these 32 bytes, kept
/// in `Themis::ranked_waiting` at the index its rank holds, instead of the task's and its
/// job's state.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    /// Restart overhead and expected remaining work: T_sh is `now + work - submit`.
    work: SimDuration,
    submit: SimTime,
    duration: u64,
    gpus: u32,
}

impl Waiting {
    fn of(view: &ClusterView<'_>, task: TaskId, source: DurationSource) -> Waiting {
        let t = view.task(task);
        Waiting {
            work: view.start_overhead(task) + view.expected_remaining(task, source),
            submit: view.job_spec(t.job).submit,
            duration: view.expected_duration(task, source).as_ms(),
            gpus: t.gpus,
        }
    }
}

/// A ranked task's key: its rho at the last round, largest first, and where what its rho at
/// the next round needs is kept (`Themis::ranked_waiting`; only waiting tasks hold one: no
/// table over every task of the run). Ordered by rho alone; the queue breaks ties by task id.
/// Small, as the queue's heaps move their entries at every step: the 32 bytes of `Waiting`
/// inline made an entry 96 bytes, and the heaps' reads and moves a tenth of a million-job run.
#[derive(Debug, Clone, Copy)]
struct Ranked {
    rho: Reverse<Rho>,
    at: u32,
}

impl Ord for Ranked {
    fn cmp(&self, other: &Ranked) -> Ordering {
        self.rho.cmp(&other.rho)
    }
}

impl PartialOrd for Ranked {
    fn partial_cmp(&self, other: &Ranked) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ranked {
    fn eq(&self, other: &Ranked) -> bool {
        self.rho == other.rho
    }
}

impl Eq for Ranked {}

#[derive(Default)]
struct Scratch {
    /// Every waiting task at the round, with its shape index (without queues) and what its
    /// rho needs.
    tasks: Vec<(TaskId, usize, Waiting)>,
    /// Tasks that waited at no round yet, and victims, with their shape indexes.
    fresh: Vec<(TaskId, usize)>,
    /// Their rhos, in the order of `tasks`; with queues, then sorted (rho desc, task).
    ranked: Vec<(Rho, TaskId, usize)>,
    order: Vec<TaskId>,
    jobs: Vec<JobId>,
    /// Per pool, its victims (filled at the round's first task that does not fit).
    victims: Vec<LazySorted<VictimKey>>,
    victims_ready: bool,
    /// Per pool, the victims being collected (kept to allocate nothing in steady state).
    victim_items: Vec<Vec<VictimKey>>,
    /// N and C of `t_id=share` at this round ((1, 1) for `alone`).
    rho_inputs: (u128, u128),
    /// Per pool, how many of its victims a preemption walked (they are not walked again).
    used: Vec<usize>,
    /// The victims one pool's walk preempted so far (kept to allocate nothing).
    preempted: Vec<TaskId>,
    /// The round's victims, queued in `waiting` once its loop ends.
    stopped: Vec<TaskId>,
}

impl Themis {
    pub fn new(params: &Params) -> Result<Themis, SpecError> {
        let lease_s: u64 = params.get("lease_s")?;
        if !(1..=365 * 86_400).contains(&lease_s) {
            return Err(SpecError("policy `themis`: lease_s must be 1..=31536000 seconds".into()));
        }
        let t_id = match params.get::<String>("t_id")?.as_str() {
            "alone" => TId::Alone,
            "share" => TId::Share,
            other => return Err(SpecError(format!("policy `themis`: `t_id={other}`: expected alone|share"))),
        };
        let Source(source) = params.get("duration")?;
        let placer = Placer::from_params(params)?;
        let t_id_name = if t_id == TId::Alone { "alone" } else { "share" };
        Ok(Themis {
            name: format!("themis[lease_s={lease_s},t_id={t_id_name},duration={},{placer}]", source.as_str()),
            lease: SimDuration::from_secs(lease_s),
            t_id,
            source,
            placer,
            waiting: WaitQueue::default(),
            ranked: RankedQueue::default(),
            ranked_waiting: Vec::new(),
            running: IdList::default(),
            next_round: SimTime(0),
            scratch: Scratch::default(),
        })
    }

    /// The task's rho now; `jobs` (N) and `gpus` (C) for `t_id=share`.
    fn rho(&self, view: &ClusterView<'_>, task: TaskId, jobs: u128, gpus: u128) -> Rho {
        let t = view.task(task);
        let submit = view.job_spec(t.job).submit;
        let end = if t.status == TaskStatus::Running {
            // As a victim: its end if preempted now and restarted at once, so the work it
            // would lose since its last checkpoint and the restart it would pay count against
            // preempting it (a lease shorter than the checkpoint interval cannot thrash).
            view.now() + t.restart_overhead + view.expected_remaining(task, self.source) + view.work_at_risk(task)
        } else {
            view.expected_end_if_started(task, self.source)
        };
        let duration = view.expected_duration(task, self.source).as_ms();
        self.rho_from(end.since(submit), duration, t.gpus, jobs, gpus)
    }

    /// A running task's rho as a victim (see `rho`) from where its work stands now (`at`,
    /// `ClusterView::progress_now`) and its job's `submit`: its work done and at risk read
    /// once, not three times.
    fn victim_rho(
        &self,
        view: &ClusterView<'_>,
        task: TaskId,
        at: sim::Progress,
        submit: SimTime,
        rho_inputs: (u128, u128),
    ) -> Rho {
        let t = view.task(task);
        let expected = view.expected_duration(task, self.source);
        let end = view.now() + t.restart_overhead + (expected - at.done) + (at.done - at.saved);
        let (jobs, gpus) = rho_inputs;
        self.rho_from(end.since(submit), expected.as_ms(), t.gpus, jobs, gpus)
    }

    /// A waiting task's rho now from what `Waiting::of` read (at its first round): the same
    /// arithmetic as `rho` (now + overhead + remaining, less submit; the additions saturate,
    /// so adding overhead and remaining first gives the same sum).
    fn waiting_rho(&self, now: SimTime, w: &Waiting, jobs: u128, gpus: u128) -> Rho {
        let end = now + w.work;
        self.rho_from(end.since(w.submit), w.duration, w.gpus, jobs, gpus)
    }

    fn rho_from(&self, shared: SimDuration, duration: u64, task_gpus: u32, jobs: u128, gpus: u128) -> Rho {
        let shared = u128::from(shared.as_ms());
        let duration = u128::from(duration.max(1));
        match self.t_id {
            TId::Alone => Rho::new(shared, duration),
            // T_id = duration x max(C, G x N) / C, so rho = T_sh x C / (duration x max(C, G x N)).
            TId::Share => {
                let demand = u128::from(task_gpus) * jobs;
                Rho::new(shared * gpus, duration * demand.max(gpus))
            }
        }
    }

    /// Keeps the ranked order, the running tasks' leases and the tasks' submit times in step
    /// with one change. What leaves `waiting` leaves the ranked order too (a task that starts,
    /// ends, or whose job ends; the others were running, so are in neither).
    fn note(&mut self, view: &ClusterView<'_>, change: Change) {
        match change {
            Change::TaskReady(_) => {}
            Change::TaskStarted(t) => {
                self.ranked.remove(t);
                let task = view.task(t);
                if task.status != TaskStatus::Running {
                    self.running.remove(t); // ended at the instant it started
                    return;
                }
                // The lease runs from the end of the attempt's restart overhead.
                let until = task.run_start + task.overhead + self.lease;
                let pool = task.placed.first().map(|&gpu| view.cluster().pool_of(gpu));
                let submit = view.job_spec(task.job).submit;
                self.running.insert(t, Lease { until, pool, submit });
            }
            Change::TaskPreempted(t) | Change::TaskFinished(t) | Change::TaskFailed(t) => {
                self.ranked.remove(t);
                self.running.remove(t);
            }
            Change::JobEnded(job) => view.job(job).tasks().for_each(|t| {
                self.ranked.remove(t);
                self.running.remove(t);
            }),
        }
    }

    /// A lease round: every waiting task ranked by its rho now; in that order each starts,
    /// or preempts, until the first that can do neither.
    fn round(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let mut scratch = std::mem::take(&mut self.scratch);
        // Without queues nothing is ever parked, and ranks need not be integers: the order
        // is kept lazily sorted (`RankedQueue`) instead of sorted and re-keyed in full.
        let lazy = view.queues().is_empty();
        let source = self.source;
        let tasks = &mut scratch.tasks;
        tasks.clear();
        if lazy {
            let ranked_waiting = &self.ranked_waiting;
            self.ranked.drain(|task, shape, key| tasks.push((task, shape, ranked_waiting[key.at as usize])));
            scratch.fresh.clear();
            self.waiting.drain_queued(&mut scratch.fresh);
            tasks.extend(scratch.fresh.iter().map(|&(t, shape)| (t, shape, Waiting::of(view, t, source))));
        } else {
            tasks.extend(self.waiting.iter().map(|(_, t)| (t, 0, Waiting::of(view, t, source))));
        }
        self.rank(view, &mut scratch);
        if lazy {
            // `ranked` is in the order of `tasks` here (sorted only with queues).
            self.ranked_waiting.clear();
            self.ranked_waiting.extend(scratch.tasks.iter().map(|&(_, _, waiting)| waiting));
            self.ranked.rebuild(scratch.ranked.iter().enumerate().map(|(at, &(rho, task, shape))| {
                let at = u32::try_from(at).expect("fewer than 2^32 waiting tasks");
                (shape, Ranked { rho: Reverse(rho), at }, task)
            }));
        } else {
            // Ties break by task id: a total order, so an unstable sort gives the one answer.
            scratch.ranked.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
            scratch.order.clear();
            scratch.order.extend(scratch.ranked.iter().map(|&(_, t, _)| t));
            self.waiting.rekey_in_order(&scratch.order);
        }
        scratch.victims_ready = false;
        let mut next = 0;
        loop {
            let first = if lazy {
                self.ranked.first().map(|(key, task)| (key.rho.0, task))
            } else {
                scratch.ranked.get(next).map(|&(rho, task, _)| (rho, task))
            };
            let Some((rho, task)) = first else { break };
            next += 1;
            if place_and_start(view, plan, self.placer, &mut self.waiting, task) != Placed::NoRoom {
                self.ranked.remove(task);
                continue; // started, or parked by its queue's quota
            }
            if !scratch.victims_ready {
                self.collect_victims(view, &mut scratch);
            }
            if !self.preempt_for(view, plan, task, rho, &mut scratch) {
                break;
            }
            self.ranked.remove(task);
        }
        self.queue_victims(view, &mut scratch.stopped);
        self.scratch = scratch;
    }

    /// Queues the round's victims under `FRESH`, in task order: each then comes after the
    /// others of its shape, which keeps a shape's tasks a ring buffer (`ShapeTasks`); queued
    /// in the order they were preempted (by rho), most landed amid the others, and a shape
    /// with more than a few turned into a tree for the rest of the lease.
    fn queue_victims(&mut self, view: &ClusterView<'_>, stopped: &mut Vec<TaskId>) {
        stopped.sort_unstable();
        for &victim in stopped.iter() {
            self.waiting.insert(victim, FRESH, Shape::of(view.task(victim)));
        }
        stopped.clear();
    }

    /// Fills `scratch.ranked` with the rho now of each task of `scratch.tasks`.
    fn rank(&self, view: &ClusterView<'_>, scratch: &mut Scratch) {
        let (jobs, gpus) = match self.t_id {
            TId::Alone => (1, 1),
            TId::Share => {
                let jobs = &mut scratch.jobs;
                jobs.clear();
                jobs.extend(scratch.tasks.iter().map(|&(t, _, _)| view.task(t).job));
                jobs.extend(self.running.iter().map(|(t, _)| view.task(t).job));
                jobs.sort_unstable();
                jobs.dedup();
                (jobs.len() as u128, u128::from(view.cluster().gpu_count()))
            }
        };
        scratch.rho_inputs = (jobs, gpus);
        let now = view.now();
        scratch.ranked.clear();
        scratch.ranked.extend(scratch.tasks.iter().map(|&(t, shape, w)| {
            let rho = self.waiting_rho(now, &w, jobs, gpus);
            debug_assert!(rho == self.rho(view, t, jobs, gpus), "rho of {t} from what it needs at its first round");
            (rho, t, shape)
        }));
    }

    /// Victims per pool, smallest rho first (ties: the latest task first), as of the round's
    /// start (nothing this round did before its first preemption changes them).
    fn collect_victims(&self, view: &ClusterView<'_>, scratch: &mut Scratch) {
        let (jobs, gpus) = scratch.rho_inputs;
        let now = view.now();
        let pools = view.cluster().pools().len();
        let per_pool = &mut scratch.victim_items;
        per_pool.resize_with(pools, Vec::new);
        per_pool.iter_mut().for_each(Vec::clear);
        // A task's lease runs from the end of its restart overhead: until it expires the task
        // is no victim, so every start makes at least one lease of progress; and it must have
        // saved some of it (a checkpoint in this attempt), or the attempt would be lost whole.
        for (t, lease) in self.running.iter() {
            let Some(pool) = lease.pool.filter(|_| lease.until <= now) else { continue };
            let Some(at) = view.progress_now(t) else { continue };
            if view.task(t).saved_this_attempt(at) == SimDuration::ZERO {
                continue; // nothing checkpointed in this attempt
            }
            let rho = self.victim_rho(view, t, at, lease.submit, (jobs, gpus));
            debug_assert!(rho == self.rho(view, t, jobs, gpus), "rho of victim {t} from its progress now");
            per_pool[pool.index()].push((rho, Reverse(t)));
        }
        scratch.victims.resize_with(pools, LazySorted::default);
        for (list, items) in scratch.victims.iter_mut().zip(per_pool) {
            list.refill(items.drain(..));
        }
        scratch.used.clear();
        scratch.used.resize(pools, 0);
        scratch.victims_ready = true;
    }

    /// The first waiting task whose shape fits `free`: the ranked ones first (their ranks
    /// come before the keys of `waiting`'s victims and fresh tasks).
    fn first_fitting(&mut self, free: &FreeGpus) -> Option<TaskId> {
        let waiting = &self.waiting;
        let ranked = self.ranked.first_fitting(|shape| waiting.shape(shape).fits(free)).map(|(_, task)| task);
        ranked.or_else(|| waiting.first_fitting(free).map(|(_, task)| task))
    }

    /// Preempts running tasks of smaller rho than `rho` in one of `task`'s pools until it
    /// fits there, and starts it. Nothing changes if no pool works.
    fn preempt_for(
        &mut self,
        view: &ClusterView<'_>,
        plan: &mut Plan<'_>,
        task: TaskId,
        rho: Rho,
        scratch: &mut Scratch,
    ) -> bool {
        let Scratch { victims, used, preempted, stopped, .. } = scratch;
        let shape = Shape::of(view.task(task));
        for pool in shape.pools.iter() {
            let list = &mut victims[pool.index()];
            let waiting_rho = rho;
            let savepoint = plan.savepoint();
            preempted.clear();
            let mut next = used[pool.index()];
            while let Some((victim_rho, Reverse(victim))) = list.get(next).filter(|&(r, _)| r < rho) {
                next += 1;
                if plan.is_decided(victim) {
                    continue;
                }
                let reason = preemption_reason(victim_rho, waiting_rho, task, view.work_at_risk(victim));
                if plan.preempt_for(victim, reason).is_err() {
                    continue;
                }
                preempted.push(victim);
                if shape.fits_in(pool, plan.free())
                    && place_and_start(view, plan, self.placer, &mut self.waiting, task).started().is_some()
                {
                    used[pool.index()] = next;
                    for &v in preempted.iter() {
                        self.running.remove(v);
                    }
                    stopped.extend_from_slice(preempted);
                    return true;
                }
            }
            plan.rollback(savepoint);
        }
        false
    }
}

/// The decision log's reason for preempting a task of rho `victim` for `task` of rho
/// `waiting`, the victim losing `loses`: "themis: finish-time fairness rho 1.250 below 3.000
/// of t7; loses 12.500 s of work since its last checkpoint". Written by hand: at a million
/// jobs it runs millions of times, and `format!` (a u128 and a float) was a tenth of the
/// policy's time. rho is cut (not rounded) to three decimals; never used to decide.
fn preemption_reason(victim: Rho, waiting: Rho, task: TaskId, loses: SimDuration) -> String {
    let mut text = String::with_capacity(112);
    text.push_str("themis: finish-time fairness rho ");
    push_thousandths(&mut text, victim.thousandths());
    text.push_str(" below ");
    push_thousandths(&mut text, waiting.thousandths());
    text.push_str(" of t");
    push_decimal(&mut text, u128::from(task.0));
    text.push_str("; loses ");
    push_thousandths(&mut text, u128::from(loses.as_ms()));
    text.push_str(" s of work since its last checkpoint");
    text
}

impl Policy for Themis {
    fn name(&self) -> &str {
        &self.name
    }

    fn needs_estimates(&self) -> bool {
        self.source == DurationSource::Estimate
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        sync_waiting(view, &mut self.waiting, |_| FRESH);
        for &change in view.changes() {
            self.note(view, change);
        }
        let now = view.now();
        if now >= self.next_round {
            self.round(view, plan);
            self.next_round = SimTime((now.as_ms() / self.lease.as_ms() + 1) * self.lease.as_ms());
        }
        // At high load the cluster is often full when a decision gets here: then no shape
        // fits, and testing each shape's first task (tens of shapes) is skipped.
        while !nothing_fits(view.cluster(), plan.free())
            && let Some(task) = self.first_fitting(plan.free())
        {
            if place_and_start(view, plan, self.placer, &mut self.waiting, task) == Placed::NoRoom {
                break; // unreachable: a shape that fits has a placement
            }
            self.ranked.remove(task);
        }
        if !self.ranked.is_empty() || self.waiting.head().is_some() {
            plan.wake_at(self.next_round).expect("the next round is in the future");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heap_entries_are_small() {
        // The ranked order's and the victims' heaps move these at every step.
        assert_eq!(std::mem::size_of::<(Ranked, TaskId)>(), 48);
        assert_eq!(std::mem::size_of::<VictimKey>(), 44);
    }

    #[test]
    fn preemption_reason_gives_rhos_and_lost_work_to_three_decimals() {
        let reason = preemption_reason(Rho::new(5, 4), Rho::new(6, 2), TaskId(7), SimDuration(12_500));
        assert_eq!(
            reason,
            "themis: finish-time fairness rho 1.250 below 3.000 of t7; loses 12.500 s of work since its last checkpoint"
        );
        // Cut, not rounded: 2/3 is 0.666; a zero loss and zero den read as zeros.
        let reason = preemption_reason(Rho::new(2, 3), Rho::new(0, 0), TaskId(0), SimDuration(7));
        assert_eq!(
            reason,
            "themis: finish-time fairness rho 0.666 below 0.000 of t0; loses 0.007 s of work since its last checkpoint"
        );
    }

    #[test]
    fn preemption_reason_reads_as_format_did() {
        // The text `format!` gave before (a float for the loss): the digests hash it.
        let cases = [
            (1_234_567_891u128, 1_000u128, 99_999u128, 7u128, 0u32, 0u64),
            (u128::from(u64::MAX) * 3, 2, 1, 1, u32::MAX, 999),
            (86_400_000 * 365, 1, 3_600_000, 3_599_999, 123_456, 31_536_000_000),
            (1, 1_000_000, 5, 5, 42, 1_001),
        ];
        for (vn, vd, wn, wd, task, ms) in cases {
            let rho_str = |num: u128, den: u128| {
                let milli = num * 1000 / den.max(1);
                format!("{}.{:03}", milli / 1000, milli % 1000)
            };
            let before = format!(
                "themis: finish-time fairness rho {} below {} of {}; loses {:.3} s of work since its last checkpoint",
                rho_str(vn, vd),
                rho_str(wn, wd),
                TaskId(task),
                SimDuration(ms).as_secs_f64()
            );
            let now = preemption_reason(Rho::new(vn, vd), Rho::new(wn, wd), TaskId(task), SimDuration(ms));
            assert_eq!(now, before);
        }
    }
}
