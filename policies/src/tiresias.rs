//! `tiresias`: Tiresias's discretised two-dimensional least-attained-service scheduler
//! (Gu et al., "Tiresias: A GPU Cluster Manager for Distributed Deep Learning", NSDI 2019),
//! with its Gittins-index variant as `tiresias[mode=gittins]`.
//!
//! **Attained service** of a job is the GPU-time its tasks have executed so far, over all
//! attempts (GPUs x time held, less the restart overhead paid: work redone after a lost
//! checkpoint counts, the overhead does not, so a restart does not cost a level before it
//! makes progress), less what it had when last promoted (below). No duration is used:
//! Tiresias needs no prior knowledge.
//!
//! **Queues.** `thresholds=t1;t2;...` (GPU-seconds, strictly increasing) cut attained
//! service into levels: level 0 below `t1`, level k in `[tk, tk+1)`. A job starts in level 0
//! and is demoted as it crosses each threshold while running. Within a level tasks are FIFO
//! (arrival order, i.e. task id).
//!
//! **Order of levels.** `mode=las` (2D-LAS): lower levels first. `mode=gittins`
//! (discretised 2D-Gittins): levels in decreasing order of their Gittins index over the
//! service distribution of the jobs that *succeeded so far* in this run, with the quantum
//! of level k being its own band `[ak, ak+1)`:
//! `G(k) = P(S < ak+1 | S >= ak) / E[min(S, ak+1) - ak | S >= ak]`
//! (for the last level, `1 / E[S - ak | S >= ak]`), where S is a finished job's total
//! attained service. It is computed exactly as a ratio of integers from per-level counts and
//! sums, updated in O(levels) at each job success; a level no finished job has reached has
//! index 0 (no evidence that jobs there end soon). Ties, and the start before any job has
//! finished, fall back to the LAS order. So a job's priority is a function of its level and
//! the table, and changes only when it crosses a threshold or a job succeeds.
//!
//! **Preemption.** In priority order, each waiting task starts if it fits; if not, running
//! tasks of strictly lower-priority levels are preempted, lowest priority first and, within
//! a level, the task that loses the least work since its last checkpoint first
//! (`ClusterView::work_at_risk`; ties: the latest task), until it fits (as a demoted job is overtaken by the
//! new jobs of a higher queue). If even all of them would not make room, nothing is
//! preempted and the preemptive pass stops there: a blocked gang is not bypassed by
//! lower-priority preemptions. Then waiting tasks that fit fill the free GPUs in priority
//! order. A job never preempts one of its own level. A running task is a victim only once it
//! has checkpointed work in its current attempt (`ClusterView::work_saved_this_attempt`):
//! without that rule, two jobs longer than a threshold and a checkpoint interval, promoted
//! in turn by the starvation guard, preempt each other forever, each attempt lost whole. Each
//! preemption is logged with the victim's level, attained service and the work it loses. Victims wait again at once (and may
//! restart elsewhere in the same decision, paying the restart overhead). Demotions take
//! effect when they happen: while any task waits, the policy wakes itself at the next
//! threshold crossing of a running job.
//!
//! **Starvation guard** (`promote_after=K`, 0 = off): a job below level 0 that has waited
//! with no task running for K x its executed time (its attained service divided by the GPUs
//! of all its tasks) is promoted to level 0 and its attained service counts from zero
//! again, as Tiresias's STARVELIMIT / `promote_knob`. In gittins mode level 0 is where a
//! fresh job sits, which is the top only when the table says so.
//!
//! Jobs with several tasks share their job's level; each task is placed (and preempted) on
//! its own, as a gang of its GPUs.
//!
//! Decision cost: O((changes + starts + preemptions + level changes) x log n) for the
//! indexes (the crossings and promotions are heaps deleted lazily, `lazy_heap`: a job whose
//! time changes pushes the new one, amortised O(log n), and leaves the old one to be dropped
//! when it surfaces), O(levels x shapes x log n) per start found; the one task per decision that
//! triggers preemption walks the lower-priority running tasks of its pools (skipped at once
//! when their GPU count could not make room) lazily, lowest level first: tasks that
//! checkpoint continuously risk no work and come in id order straight from the index, so
//! the walk costs the victims it tries; only the interval-checkpointing tasks of a level it
//! reaches are scored (`work_at_risk` changes with time) and sorted. O(levels log levels)
//! per job success in gittins mode. Multi-task jobs add O(tasks of the job) per change of that job.

use crate::id_set::{Descending, IdSet};
use crate::id_table::IdTable;
use crate::lazy_heap::LazyHeap;
use crate::params::{AVOID_FAILED, List, PLACEMENT, ParamInfo, Params, SpecError};
use crate::placement::{Placer, Shape, nothing_fits};
use crate::reason::{push_decimal, push_thousandths};
use crate::tracking::{Aside, Placed, pass_over, place_and_start, put_back};
use crate::wait_queue::WaitQueue;
use sim::{
    Change, ClusterView, JobId, JobOutcome, OptTime, Plan, Policy, PoolId, SimDuration, SimTime, TaskId, TaskStatus,
};

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "mode",
        values: "las|gittins",
        default: "las",
        help: "order of the levels: least attained service first, or by Gittins index of the sizes seen",
    },
    ParamInfo {
        key: "thresholds",
        values: "GPU-seconds t1;t2;... strictly increasing",
        default: "3600;36000",
        help: "attained service at which a job moves down to the next level",
    },
    ParamInfo {
        key: "promote_after",
        values: "whole number >= 0",
        default: "0",
        help: "promote a job to level 0 after waiting this many times its executed time (0: off)",
    },
    PLACEMENT,
    AVOID_FAILED,
];

/// Milli-GPU-milliseconds in a GPU-second.
const MGPU_MS_PER_GPU_S: u64 = 1_000_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Las,
    Gittins,
}

#[derive(Debug, Clone, Copy, Default)]
struct JobInfo {
    /// As a u32, and the times below as `OptTime`s: 32 bytes a job, not 48.
    level: u32,
    /// Attained service at the last promotion (milli-GPU-ms), subtracted from what it holds.
    base: u64,
    /// When the job, running at its current rate, reaches the next threshold.
    crossing: OptTime,
    /// When the job, waiting with nothing running, is promoted.
    promote_at: OptTime,
}

/// Running tasks (committed ones: started in an earlier decision) per pool and level. Each
/// task's [`Entry`] is kept by the policy, in its one table by task (`TaskPlace::Running`).
///
/// Tasks that checkpoint continuously never have work at risk, so their victim order is
/// their id order alone and they are kept apart from the others: walking victims then costs
/// the victims tried, not the whole level (the level's interval-checkpointing tasks are
/// still scored and sorted, as their risk changes with time).
#[derive(Debug, Default)]
struct RunningLevels {
    continuous: Vec<Vec<IdSet>>,
    interval: Vec<Vec<IdSet>>,
    /// GPUs held per pool and level: a quick bound on what preempting a level frees.
    gpus: Vec<Vec<u64>>,
}

/// Where a task stands with this policy: its one entry in the policy's table by task (three
/// tables, queued, holding and indexed, were three cache misses for a task's one change). No
/// entry: neither queued nor holding GPUs.
#[derive(Debug, Clone, Copy)]
enum TaskPlace {
    /// Waiting in the queue of this level.
    Queued(u32),
    /// Holding GPUs: started by this policy, its start not yet seen committed.
    Holds,
    /// Holding GPUs, its committed start indexed in the running levels there.
    Running(Entry),
}

#[derive(Debug, Clone, Copy)]
struct Entry {
    pool: PoolId,
    level: u32,
    gpus: u32,
    continuous: bool,
}

impl RunningLevels {
    /// Indexes a task that is not (a started task; `relevel` moves one that is) at `e`'s place.
    fn insert(&mut self, task: TaskId, e: Entry, levels: usize) {
        let (pool, level) = (e.pool, e.level as usize);
        if self.gpus.len() <= pool.index() {
            self.continuous.resize_with(pool.index() + 1, || vec![IdSet::default(); levels]);
            self.interval.resize_with(pool.index() + 1, || vec![IdSet::default(); levels]);
            self.gpus.resize_with(pool.index() + 1, || vec![0; levels]);
        }
        self.set_of(pool, level, e.continuous).insert(task.index());
        self.gpus[pool.index()][level] += u64::from(e.gpus);
    }

    fn set_of(&mut self, pool: PoolId, level: usize, continuous: bool) -> &mut IdSet {
        let sets = if continuous { &mut self.continuous } else { &mut self.interval };
        &mut sets[pool.index()][level]
    }

    /// Takes `task`, indexed at `e`, out of the index.
    fn remove(&mut self, task: TaskId, e: Entry) {
        self.set_of(e.pool, e.level as usize, e.continuous).remove(task.index());
        self.gpus[e.pool.index()][e.level as usize] -= u64::from(e.gpus);
    }

    /// Moves `task`, indexed at `e`, to `level`; gives its new entry.
    fn relevel(&mut self, task: TaskId, e: Entry, level: usize, levels: usize) -> Entry {
        self.remove(task, e);
        let moved = Entry { level: narrow(level), ..e };
        self.insert(task, moved, levels);
        moved
    }

    /// The running tasks of `level` in `pool` in victim order: least work at risk first,
    /// ties the latest task first. Lazy over the continuously checkpointing tasks.
    fn victims<'s>(&'s self, view: &ClusterView<'_>, pool: PoolId, level: usize) -> Victims<'s> {
        let mut interval: Vec<(SimDuration, TaskId)> = self.interval[pool.index()][level]
            .descending()
            .map(|t| (view.work_at_risk(TaskId::from_index(t)), TaskId::from_index(t)))
            .collect();
        interval.sort_unstable_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
        Victims {
            continuous: self.continuous[pool.index()][level].descending().peekable(),
            interval: interval.into_iter().peekable(),
        }
    }
}

/// One level's victims: the continuous tasks (no work at risk, latest first) merged with the
/// interval tasks sorted by (work at risk, latest first).
struct Victims<'s> {
    /// Task indexes.
    continuous: std::iter::Peekable<Descending<'s>>,
    interval: std::iter::Peekable<std::vec::IntoIter<(SimDuration, TaskId)>>,
}

impl Iterator for Victims<'_> {
    type Item = (SimDuration, TaskId);

    fn next(&mut self) -> Option<Self::Item> {
        let interval_first = match (self.continuous.peek(), self.interval.peek()) {
            (None, _) => true,
            (Some(_), None) => false,
            // Continuous tasks risk nothing: an interval task goes first only at zero risk
            // and a later id.
            (Some(&c), Some(&(risk, i))) => risk == SimDuration::ZERO && i.index() > c,
        };
        if interval_first {
            self.interval.next()
        } else {
            self.continuous.next().map(|t| (SimDuration::ZERO, TaskId::from_index(t)))
        }
    }
}

/// A level as stored per task: levels are one per threshold, never near 2^32.
fn narrow(level: usize) -> u32 {
    u32::try_from(level).expect("fewer than 2^32 levels")
}

pub struct Tiresias {
    name: String,
    mode: Mode,
    /// Thresholds in milli-GPU-ms, strictly increasing.
    thresholds: Vec<u64>,
    promote_after: u64,
    placer: Placer,
    /// Waiting tasks, one FIFO queue per level.
    queues: Vec<WaitQueue>,
    /// Each task queued or holding GPUs, as this policy knows it (its own starts and
    /// preemptions included).
    tasks: IdTable<TaskPlace>,
    running: RunningLevels,
    /// By job, for the jobs in the system (read on every refresh, the hottest path of the
    /// policy; paged, so that it holds the jobs in the system, not every job of the run).
    jobs: IdTable<JobInfo>,
    /// Each job's `crossing` and `promote_at` (those in `jobs` are the live entries).
    crossings: LazyHeap<(SimTime, JobId)>,
    promotions: LazyHeap<(SimTime, JobId)>,
    /// Levels from highest priority to lowest, and each level's place in that order.
    order: Vec<usize>,
    rank: Vec<usize>,
    /// Jobs that succeeded, per level of their total attained service: (count, sum mgpu-ms).
    finished: Vec<(u64, u128)>,
    touched: Vec<JobId>,
    /// `refresh`'s list of when each task of a job adds to its rate (kept: no allocation).
    growth: Vec<(SimTime, u64)>,
    /// The job of the next crossing whose state was asked for ([`Tiresias::load_next_crossing`]).
    crossing_loaded: Option<JobId>,
}

impl Tiresias {
    pub fn new(params: &Params) -> Result<Tiresias, SpecError> {
        let mode = match params.get::<String>("mode")?.as_str() {
            "las" => Mode::Las,
            "gittins" => Mode::Gittins,
            other => {
                return Err(SpecError(format!("policy `tiresias`: `mode={other}`: expected las|gittins")));
            }
        };
        let List(thresholds_s): List<u64> = params.get("thresholds")?;
        if thresholds_s.is_empty() || thresholds_s.len() > 15 {
            return Err(SpecError("policy `tiresias`: thresholds: give 1 to 15 thresholds".into()));
        }
        if thresholds_s[0] == 0 || thresholds_s.windows(2).any(|w| w[0] >= w[1]) {
            return Err(SpecError(format!(
                "policy `tiresias`: thresholds={}: must be > 0 and strictly increasing",
                join(&thresholds_s)
            )));
        }
        if thresholds_s.iter().any(|&t| t > u64::MAX / MGPU_MS_PER_GPU_S / 4) {
            return Err(SpecError("policy `tiresias`: thresholds: a threshold is too large".into()));
        }
        let promote_after: u64 = params.get("promote_after")?;
        if promote_after > 1_000_000 {
            return Err(SpecError("policy `tiresias`: promote_after must be 0..=1000000".into()));
        }
        let placer = Placer::from_params(params)?;
        let mode_name = if mode == Mode::Las { "las" } else { "gittins" };
        let levels = thresholds_s.len() + 1;
        Ok(Tiresias {
            name: format!(
                "tiresias[mode={mode_name},thresholds={},promote_after={promote_after},{placer}]",
                join(&thresholds_s)
            ),
            mode,
            thresholds: thresholds_s.iter().map(|&t| t * MGPU_MS_PER_GPU_S).collect(),
            promote_after,
            placer,
            queues: (0..levels).map(|_| WaitQueue::default()).collect(),
            tasks: IdTable::default(),
            running: RunningLevels::default(),
            jobs: IdTable::default(),
            crossings: LazyHeap::default(),
            promotions: LazyHeap::default(),
            order: (0..levels).collect(),
            rank: (0..levels).collect(),
            finished: vec![(0, 0); levels],
            touched: Vec::new(),
            growth: Vec::new(),
            crossing_loaded: None,
        })
    }

    fn levels(&self) -> usize {
        self.queues.len()
    }

    /// The level of `attained` milli-GPU-ms: how many thresholds it has reached.
    fn level_of(&self, attained: u64) -> usize {
        self.thresholds.partition_point(|&t| t <= attained)
    }

    fn job(&mut self, job: JobId) -> &mut JobInfo {
        self.jobs.get_or_default(job.index())
    }

    fn holds(&self, task: TaskId) -> bool {
        matches!(self.tasks.get(task.index()), Some(TaskPlace::Holds | TaskPlace::Running(_)))
    }

    /// Notes that `task` holds GPUs (a task queued no longer is).
    fn note_holds(&mut self, task: TaskId) {
        self.tasks.insert(task.index(), TaskPlace::Holds);
    }

    /// Notes that `task` holds no GPUs, taking it out of the running index if it is there.
    fn let_go(&mut self, task: TaskId) {
        match self.tasks.get(task.index()) {
            Some(TaskPlace::Holds) => {
                self.tasks.remove(task.index());
            }
            Some(TaskPlace::Running(e)) => {
                self.tasks.remove(task.index());
                self.running.remove(task, e);
            }
            Some(TaskPlace::Queued(_)) | None => {}
        }
    }

    /// Whether no task of `job` holds GPUs. Then nothing of the job has changed since the
    /// decision that last refreshed it let its last task go, except what other changes name
    /// (its attained service grows only while a task holds GPUs, its crossing and promotion
    /// were set then), so refreshing it again for its own victim's preemption is skipped.
    fn holds_none(&self, view: &ClusterView<'_>, job: JobId) -> bool {
        view.job(job).tasks().all(|t| !self.holds(t))
    }

    fn enqueue(&mut self, view: &ClusterView<'_>, task: TaskId) {
        let level = self.job(view.task(task).job).level as usize;
        // A victim is queued at once, and the next decision's changes name it again at the
        // same level: `WaitQueue::insert` then leaves it where it is (or puts it back in
        // order if it was parked), with no removal and insertion.
        debug_assert!(!self.holds(task), "t{} holds GPUs: it waits in no queue", task.0);
        if self.queued_at(task) != Some(narrow(level)) {
            self.dequeue(task);
            self.tasks.insert(task.index(), TaskPlace::Queued(narrow(level)));
        }
        self.queues[level].insert(task, 0, Shape::of(view.task(task)));
    }

    fn dequeue(&mut self, task: TaskId) {
        if let Some(level) = self.queued_at(task) {
            self.tasks.remove(task.index());
            self.queues[level as usize].remove(task);
        }
    }

    /// The level of the queue `task` waits in, if it waits.
    fn queued_at(&self, task: TaskId) -> Option<u32> {
        match self.tasks.get(task.index()) {
            Some(TaskPlace::Queued(level)) => Some(level),
            _ => None,
        }
    }

    fn is_queued(&self, task: TaskId) -> bool {
        self.queued_at(task).is_some()
    }

    /// Service the job has attained since its last promotion, in milli-GPU-ms.
    fn attained(&self, view: &ClusterView<'_>, job: JobId) -> u64 {
        executed(view, job).saturating_sub(self.jobs.get(job.index()).map_or(0, |j| j.base))
    }

    /// Brings the job's level, its tasks' places, its next crossing and its promotion up to
    /// date with `now`.
    fn refresh(&mut self, view: &ClusterView<'_>, job: JobId) {
        if view.job(job).outcome.is_some() {
            return;
        }
        let now = view.now();
        let attained = self.attained(view, job);
        let level = self.level_of(attained);
        let levels = self.levels();
        if level != self.job(job).level as usize {
            self.job(job).level = narrow(level);
            for t in view.job(job).tasks() {
                match self.tasks.get(t.index()) {
                    Some(TaskPlace::Queued(_)) => self.enqueue(view, t),
                    Some(TaskPlace::Running(e)) => {
                        let e = self.running.relevel(t, e, level, levels);
                        self.tasks.insert(t.index(), TaskPlace::Running(e));
                    }
                    Some(TaskPlace::Holds) | None => {}
                }
            }
        }
        // Each task holding GPUs adds its milli-GPUs to the rate once its restart overhead is
        // paid (now + overhead for a task this plan starts).
        let mut growth = std::mem::take(&mut self.growth);
        growth.clear();
        growth.extend(view.job(job).tasks().filter(|&t| self.holds(t)).map(|t| {
            let task = view.task(t);
            let from = if task.status == TaskStatus::Running {
                task.run_start + task.overhead
            } else {
                now + view.start_overhead(t)
            };
            (from.max(now), task.mgpus())
        }));
        let rate: u64 = growth.iter().map(|&(_, r)| r).sum();
        let info = *self.job(job);
        // The heaps hold the times as stored (an `OptTime` keeps a saturated one a
        // millisecond short), so that an entry is live exactly while its job holds its time.
        let crossing = OptTime::from((rate > 0 && level < self.thresholds.len()).then(|| {
            growth.sort_unstable();
            crossing_time(now, self.thresholds[level] - attained, &growth)
        }));
        self.growth = growth;
        // Most refreshes find the crossing where it was (a job touched by a decision whose
        // rate did not change): the heap is left alone then.
        if crossing != info.crossing {
            self.set_crossing(job, crossing);
        }
        let waiting = rate == 0 && view.job(job).tasks().any(|t| self.is_queued(t));
        let promote_at = OptTime::from(if self.promote_after > 0 && level > 0 && waiting {
            info.promote_at.get().or_else(|| {
                let gang: u64 = view.job(job).tasks().map(|t| view.task(t).mgpus()).sum();
                let executed_ms = attained / gang.max(1);
                Some(now + SimDuration(executed_ms.saturating_mul(self.promote_after)))
            })
        } else {
            None
        });
        if info.promote_at != promote_at {
            self.set_promote_at(job, promote_at);
        }
    }

    /// Gives `job` its next crossing, pushing it on the heap and retiring the old one.
    fn set_crossing(&mut self, job: JobId, crossing: OptTime) {
        set_time(&mut self.jobs, &mut self.crossings, CROSSING, job, crossing);
    }

    /// As `set_crossing`, for the job's promotion.
    fn set_promote_at(&mut self, job: JobId, promote_at: OptTime) {
        set_time(&mut self.jobs, &mut self.promotions, PROMOTION, job, promote_at);
    }

    /// The earliest crossing of a running job, if any.
    fn next_crossing(&mut self) -> Option<(SimTime, JobId)> {
        let jobs = &self.jobs;
        self.crossings.first(|&(at, job)| CROSSING.holds(jobs, at, job))
    }

    /// Asks for the engine's state of the job whose crossing comes next (its refresh reads the
    /// job and its tasks when it comes, and at 100,000 GPUs a job running that long is cold):
    /// the job the first time it is next, its tasks from the next decision on, when the job's
    /// state is in the cache to say where they are.
    fn load_next_crossing(&mut self, view: &ClusterView<'_>) {
        let Some(&(_, job)) = self.crossings.peek_any() else { return };
        if self.crossing_loaded == Some(job) {
            view.prefetch_tasks(job);
        } else {
            view.prefetch_job(job);
            self.crossing_loaded = Some(job);
        }
    }

    /// The earliest promotion of a waiting job, if any.
    fn next_promotion(&mut self) -> Option<(SimTime, JobId)> {
        let jobs = &self.jobs;
        self.promotions.first(|&(at, job)| PROMOTION.holds(jobs, at, job))
    }

    fn forget(&mut self, view: &ClusterView<'_>, job: JobId) {
        for t in view.job(job).tasks() {
            self.dequeue(t);
            self.let_go(t);
        }
        self.set_crossing(job, OptTime::NONE);
        self.set_promote_at(job, OptTime::NONE);
        self.jobs.remove(job.index());
        if self.mode == Mode::Gittins && view.job(job).outcome == Some(JobOutcome::Succeeded) {
            let size = executed(view, job);
            let level = self.level_of(size);
            self.finished[level].0 += 1;
            self.finished[level].1 += u128::from(size);
            self.reorder();
        }
    }

    /// Recomputes the Gittins order of the levels from the finished jobs' sizes.
    fn reorder(&mut self) {
        let levels = self.levels();
        // Gittins index of each level as an exact ratio (numerator, denominator).
        let mut index = vec![(0u128, 1u128); levels];
        let mut beyond = 0u128; // finished jobs at levels above k
        for k in (0..levels).rev() {
            let (count, sum) = self.finished[k];
            let count = u128::from(count);
            let low = if k == 0 { 0 } else { u128::from(self.thresholds[k - 1]) };
            // E[min(S, ak+1) - ak | S >= ak] x N(S >= ak): the band's own jobs contribute
            // S - ak, jobs beyond it the whole band.
            let mut expected = sum - low * count;
            if k + 1 < levels {
                expected += beyond * (u128::from(self.thresholds[k]) - low);
            }
            if count > 0 {
                index[k] = (count, expected);
            }
            beyond += count;
        }
        let mut order: Vec<usize> = (0..levels).collect();
        // Higher index first (a/b > c/d iff a*d > c*b, exact in u128); ties by level.
        order.sort_by(|&x, &y| {
            let ((a, b), (c, d)) = (index[x], index[y]);
            (c * b).cmp(&(a * d)).then(x.cmp(&y))
        });
        for (place, &level) in order.iter().enumerate() {
            self.rank[level] = place;
        }
        self.order = order;
    }

    fn sync(&mut self, view: &ClusterView<'_>) {
        let levels = self.levels();
        for change in view.changes() {
            // A task that stopped, or a job that ended, may leave room in its queue's quota.
            let stopped = match *change {
                Change::TaskFinished(t) | Change::TaskPreempted(t) | Change::TaskFailed(t) => Some(view.task(t).job),
                Change::JobEnded(job) => Some(job),
                Change::TaskReady(_) | Change::TaskStarted(_) => None,
            };
            if let Some(q) = stopped.and_then(|job| view.queue_of(job)) {
                self.queues.iter_mut().for_each(|queue| queue.unpark(q));
            }
            match *change {
                Change::TaskReady(t) => {
                    self.let_go(t);
                    self.enqueue(view, t);
                    let job = view.task(t).job;
                    // A job none of whose tasks ever started (most ready tasks: new jobs) has
                    // attained nothing, so its refresh would find it as it is: level 0, no
                    // crossing, no promotion.
                    if !view.job(job).tasks().all(|t| view.task(t).first_start.is_none()) {
                        self.touched.push(job);
                    }
                }
                Change::TaskPreempted(t) => {
                    // This policy's own victim was let go of (and its job refreshed) by the
                    // decision that preempted it; a task quota reclaim took is still held.
                    let own_victim = !self.holds(t);
                    self.let_go(t);
                    self.enqueue(view, t);
                    let job = view.task(t).job;
                    if !(own_victim && self.holds_none(view, job)) {
                        self.touched.push(job);
                    }
                }
                Change::TaskFailed(t) => {
                    self.let_go(t);
                    if view.task(t).status.is_startable() {
                        self.enqueue(view, t);
                    } else {
                        self.dequeue(t);
                    }
                    self.touched.push(view.task(t).job);
                }
                Change::TaskStarted(t) => {
                    self.dequeue(t);
                    let task = view.task(t);
                    // A task started and then stopped since the last call is not running now.
                    if task.status == TaskStatus::Running
                        && let Some(&gpu) = task.placed.first()
                    {
                        let level = narrow(self.job(task.job).level as usize);
                        let continuous = task.checkpoint == SimDuration::ZERO;
                        let e = Entry { pool: view.cluster().pool_of(gpu), level, gpus: task.gpus, continuous };
                        debug_assert!(
                            !matches!(self.tasks.get(t.index()), Some(TaskPlace::Running(_))),
                            "t{} indexed once",
                            t.0
                        );
                        self.running.insert(t, e, levels);
                        self.tasks.insert(t.index(), TaskPlace::Running(e));
                    }
                    // The decision that started it refreshed its job, counting it from then plus
                    // its restart overhead, as the start did unless a dataset transfer added to
                    // the overhead: only then did the job's crossing move. (A threshold crossed
                    // since is the crossings' to find, a stop since is a change of its own, and a
                    // victim restarted in that decision is named by its preemption too.)
                    if task.dataset.get().is_some() {
                        self.touched.push(task.job);
                    }
                }
                Change::TaskFinished(t) => {
                    self.let_go(t);
                    self.dequeue(t);
                    // The last task of a job (most: one task a job) ends it, and `refresh`
                    // leaves an ended job alone: it is not touched.
                    let job = view.task(t).job;
                    if view.job(job).outcome.is_none() {
                        self.touched.push(job);
                    }
                }
                Change::JobEnded(job) => self.forget(view, job),
            }
        }
    }

    fn refresh_touched(&mut self, view: &ClusterView<'_>) {
        let mut touched = std::mem::take(&mut self.touched);
        touched.sort_unstable();
        touched.dedup();
        for &job in &touched {
            self.refresh(view, job);
        }
        touched.clear();
        self.touched = touched;
    }

    /// The first waiting task in priority order (by `pick` within a level), and its level.
    fn first(&self, pick: impl Fn(&WaitQueue) -> Option<TaskId>) -> Option<(usize, TaskId)> {
        self.order.iter().find_map(|&level| pick(&self.queues[level]).map(|t| (level, t)))
    }

    /// Starts the queued `task` where its placement puts it, within its queue's quota (a
    /// task the quota holds back is parked in its level until its queue has room again).
    fn try_start(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId) -> Placed {
        let level = self.queued_at(task).expect("only queued tasks are started") as usize;
        let placed = place_and_start(view, plan, self.placer, &mut self.queues[level], task);
        if placed.started().is_some() {
            self.note_started(view, task);
        }
        placed
    }

    /// Notes that the queued `task` started: no longer queued, holding GPUs, its job to refresh.
    fn note_started(&mut self, view: &ClusterView<'_>, task: TaskId) {
        self.note_holds(task);
        self.touched.push(view.task(task).job);
    }

    /// Preempts running tasks of lower-priority levels than `level`, lowest first, until
    /// `task` fits in one of its pools, and starts it there. Nothing changes if none works.
    fn preempt_for(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId, level: usize) -> bool {
        let shape = Shape::of(view.task(task));
        let Some(preempted) = self.preempt_in_pools(view, plan, task, level, shape) else { return false };
        self.note_started(view, task);
        for v in preempted {
            self.let_go(v);
            self.enqueue(view, v);
            self.touched.push(view.task(v).job);
        }
        true
    }

    /// `preempt_for`'s walk over the pools of `shape`: the victims preempted for `task` when
    /// it started, `None` (and the plan unchanged) when no pool works.
    fn preempt_in_pools(
        &mut self,
        view: &ClusterView<'_>,
        plan: &mut Plan<'_>,
        task: TaskId,
        level: usize,
        shape: Shape,
    ) -> Option<Vec<TaskId>> {
        // Victims are produced lazily from the running index while `task` is tried in its
        // queue: the two are fields borrowed apart, so the index is neither moved nor copied.
        let running = &self.running;
        // The lower-priority levels, lowest first (a copy: at most 16 levels, no allocation).
        let mut lower_levels = [0usize; 16];
        let lower_count = self.order.len() - self.rank[level] - 1;
        for (slot, &l) in lower_levels.iter_mut().zip(self.order.iter().rev()) {
            *slot = l;
        }
        let lower_levels = &lower_levels[..lower_count];
        for pool in shape.pools.iter() {
            if running.gpus.get(pool.index()).is_none() {
                continue;
            }
            let lower = lower_levels.iter();
            if !shape.is_share() {
                let could_free: u64 = lower.clone().map(|&l| running.gpus[pool.index()][l]).sum();
                if u64::from(plan.free().in_pool(pool)) + could_free < u64::from(shape.gpus) {
                    continue;
                }
            }
            // Lowest-priority level first; within a level, the task that loses the least work
            // since its last checkpoint first (ties: the latest task), as quota reclaim does.
            let victims = lower.flat_map(|&l| running.victims(view, pool, l).map(move |(risk, t)| (l, risk, t)));
            let savepoint = plan.savepoint();
            let mut preempted = Vec::new();
            for (victim_level, at_risk, victim) in victims {
                // A victim must have saved work in this attempt, so that no attempt is thrown
                // away whole and promotions cannot make jobs preempt each other forever.
                if plan.is_decided(victim) || view.work_saved_this_attempt(victim) == SimDuration::ZERO {
                    continue;
                }
                let attained_s = self.attained(view, view.task(victim).job) / MGPU_MS_PER_GPU_S;
                let reason = preemption_reason(victim_level, attained_s, level, task, at_risk);
                if plan.preempt_for(victim, reason).is_err() {
                    continue;
                }
                preempted.push(victim);
                // As `try_start` in `level`'s queue (where `first` found it); the caller notes
                // the start.
                if shape.fits_in(pool, plan.free())
                    && place_and_start(view, plan, self.placer, &mut self.queues[level], task).started().is_some()
                {
                    return Some(preempted);
                }
            }
            plan.rollback(savepoint);
        }
        None
    }
}

/// The decision log's reason for preempting a task of `victim_level`, its job having attained
/// `attained_s` GPU-s, for `task` of `level`, the victim losing `loses`: "tiresias: level 2
/// (attained service 3600 GPU-s) ranks below level 0 of t7; loses 12.500 s of work since its
/// last checkpoint, the least in its level". Written by hand (`reason.rs`): one is written per
/// preemption (145,000 at 100k jobs). The same text as `format!` (a unit test holds them to
/// each other).
fn preemption_reason(victim_level: usize, attained_s: u64, level: usize, task: TaskId, loses: SimDuration) -> String {
    let mut text = String::with_capacity(160);
    text.push_str("tiresias: level ");
    push_decimal(&mut text, victim_level as u128);
    text.push_str(" (attained service ");
    push_decimal(&mut text, u128::from(attained_s));
    text.push_str(" GPU-s) ranks below level ");
    push_decimal(&mut text, level as u128);
    text.push_str(" of t");
    push_decimal(&mut text, u128::from(task.0));
    text.push_str("; loses ");
    push_thousandths(&mut text, u128::from(loses.as_ms()));
    text.push_str(" s of work since its last checkpoint, the least in its level");
    text
}

/// One of a job's times kept in a lazily deleted heap: its field in `JobInfo`.
#[derive(Clone, Copy)]
struct TimeField {
    get: fn(&JobInfo) -> OptTime,
    set: fn(&mut JobInfo, OptTime),
}

const CROSSING: TimeField = TimeField { get: |info| info.crossing, set: |info, at| info.crossing = at };
const PROMOTION: TimeField = TimeField { get: |info| info.promote_at, set: |info, at| info.promote_at = at };

impl TimeField {
    /// Whether the heap's entry (`at`, `job`) is live: the job's time is still `at`.
    fn holds(self, jobs: &IdTable<JobInfo>, at: SimTime, job: JobId) -> bool {
        jobs.get(job.index()).is_some_and(|info| (self.get)(&info).get() == Some(at))
    }
}

/// Gives `job` the time `at` in `field`, pushing it on `heap` (whose live entries are the
/// jobs' `field`s) and retiring the old one; a job that had no time and gets none changes
/// nothing.
fn set_time(
    jobs: &mut IdTable<JobInfo>,
    heap: &mut LazyHeap<(SimTime, JobId)>,
    field: TimeField,
    job: JobId,
    at: OptTime,
) {
    if at.is_none() && !jobs.contains(job.index()) {
        return; // No entry made for nothing: an entry lasts until its job ends.
    }
    let entry = jobs.get_or_default(job.index());
    let old = (field.get)(entry);
    (field.set)(entry, at);
    if let Some(time) = at.get() {
        heap.push((time, job));
    }
    if old.is_some() {
        let jobs = &*jobs;
        heap.retire(|&(time, job)| field.holds(jobs, time, job));
    }
}

/// Service a job has executed, in milli-GPU-ms: the GPU-time its tasks held over all attempts
/// less the restart overhead they paid (so a job restarting is not demoted for its overhead,
/// and every restart makes real progress before it can drop a level).
fn executed(view: &ClusterView<'_>, job: JobId) -> u64 {
    let now = view.now();
    view.job(job)
        .tasks()
        .map(|t| {
            let task = view.task(t);
            let open_overhead = if task.status == TaskStatus::Running {
                task.overhead.min(now.since(task.run_start)).as_ms() * task.mgpus()
            } else {
                0
            };
            task.mgpu_ms_at(now) - task.losses().overhead_mgpu_ms - open_overhead
        })
        .sum()
}

/// When `need` more milli-GPU-ms are executed, given when each running task starts to add
/// its rate (sorted by time, none before `now`).
fn crossing_time(now: SimTime, mut need: u64, growth: &[(SimTime, u64)]) -> SimTime {
    let (mut at, mut rate) = (now, 0u64);
    for &(from, r) in growth {
        if rate > 0 {
            let gain = from.since(at).as_ms() * rate;
            if gain >= need {
                break;
            }
            need -= gain;
        }
        (at, rate) = (from, rate + r);
    }
    at + SimDuration(need.div_ceil(rate))
}

fn join(values: &[u64]) -> String {
    values.iter().map(u64::to_string).collect::<Vec<_>>().join(";")
}

impl Policy for Tiresias {
    fn name(&self) -> &str {
        &self.name
    }

    /// The task's place and its job's entry: the decision after its end reads both (`let_go`,
    /// then the job's crossing and refresh), and at 100,000 GPUs both are cold by then.
    fn prefetch_ending(&self, task: TaskId, job: JobId) {
        self.tasks.prefetch(task.index());
        self.jobs.prefetch(job.index());
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let now = view.now();
        self.sync(view);
        self.refresh_touched(view);
        while let Some((_, job)) = self.next_crossing().filter(|&(at, _)| at <= now) {
            self.job(job).crossing = OptTime::NONE;
            let jobs = &self.jobs;
            self.crossings.pop_first(|&(at, job)| CROSSING.holds(jobs, at, job));
            self.refresh(view, job);
        }
        self.load_next_crossing(view);
        while let Some((_, job)) = self.next_promotion().filter(|&(at, _)| at <= now) {
            let held = executed(view, job);
            let info = self.job(job);
            info.promote_at = OptTime::NONE;
            info.base = held;
            let jobs = &self.jobs;
            self.promotions.pop_first(|&(at, job)| PROMOTION.holds(jobs, at, job));
            self.refresh(view, job);
        }
        while let Some((level, task)) = self.first(|q| q.head().map(|(_, t)| t)) {
            if self.try_start(view, plan, task) == Placed::NoRoom && !self.preempt_for(view, plan, task, level) {
                break;
            }
        }
        let mut aside = Vec::new();
        while !nothing_fits(view.cluster(), plan.free())
            && let Some((level, task)) = self.first(|q| q.first_fitting(plan.free()).map(|(_, t)| t))
        {
            if self.try_start(view, plan, task) == Placed::NoRoom {
                // A co-start task fits alone, not with its job: passed over for this pass.
                let mut passed = Aside::new();
                if !pass_over(plan, &mut self.queues[level], task, &mut passed) {
                    break; // unreachable: a shape that fits has a placement
                }
                aside.push((level, passed));
            }
        }
        for (level, passed) in aside {
            put_back(&mut self.queues[level], passed);
        }
        self.refresh_touched(view);
        if self.queues.iter().any(|q| q.head().is_some()) {
            let next = [self.next_crossing(), self.next_promotion()].into_iter().flatten().map(|(at, _)| at).min();
            if let Some(at) = next.filter(|&at| at > now) {
                plan.wake_at(at).expect("in the future");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The job table holds the jobs in the system: empty once every job has ended.
    #[test]
    fn ended_jobs_leave_the_job_table() {
        for mode in ["las", "gittins"] {
            let spec = format!("tiresias[mode={mode},thresholds=600;6000]");
            let policy = crate::run_to_the_end(Tiresias::new(&crate::params_of(&spec)).expect(&spec));
            assert!(policy.jobs.is_empty(), "{spec}: jobs left in the table");
            assert!(policy.tasks.is_empty(), "{spec}: tasks of ended jobs noted as queued or holding GPUs");
        }
    }

    /// The reason is hashed into every run's digest: it must stay what `format!` writes, for
    /// small and large numbers and every millisecond digit.
    #[test]
    fn the_preemption_reason_is_what_format_writes() {
        let samples = [0u64, 1, 9, 10, 999, 1000, 1001, 12_345, 99_999_999, u64::MAX / 3, u64::MAX];
        for (i, &n) in samples.iter().enumerate() {
            let (victim_level, level) = (i % 16, (i * 7) % 16);
            let task = TaskId(u32::try_from(n % (1 << 32)).unwrap());
            let loses = SimDuration(n);
            let expected = format!(
                "tiresias: level {victim_level} (attained service {n} GPU-s) ranks below level {level} of t{}; \
                 loses {}.{:03} s of work since its last checkpoint, the least in its level",
                task.0,
                n / 1000,
                n % 1000
            );
            assert_eq!(preemption_reason(victim_level, n, level, task, loses), expected);
        }
    }
}
