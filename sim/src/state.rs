//! Run-time state of tasks and jobs: the task state machine and the bookkeeping that
//! metrics are computed from.
//!
//! Task states: `Pending` (its job has not arrived, or it waits on its dependencies or start
//! window) -> `Ready` -> `Running` -> `Succeeded`;
//! `Pending` -> `Skipped` (a dependency can no longer be met: the branch not taken);
//! `Running` -> `Preempted` (waiting to restart, its progress kept) -> `Running`;
//! `Pending` -> `Unschedulable` (can never fit: reported, never offered to a policy);
//! `Running` -> `Retrying` (its hardware failed and it has retries left; waiting to restart
//! from its last checkpoint) -> `Running`;
//! `Running` -> `Failed` (its hardware failed past its retry budget, or its job failed);
//! `Ready`/`Preempted`/`Retrying` -> `Failed` (its job was rejected by the policy, or failed).

use crate::cluster::PoolMask;
use crate::ids::{GpuId, JobId, TaskId};
use crate::job_status::JobOutcome;
use crate::time::{OptDuration, OptTime, SimDuration, SimTime};

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TaskStatus {
    Pending,
    Ready,
    Running,
    Preempted,
    Retrying,
    Succeeded,
    Failed,
    Unschedulable,
    /// Never ran: a dependency can no longer be met (a conditional branch not taken, or an
    /// upstream that failed or was skipped).
    Skipped,
}

impl TaskStatus {
    /// Waiting for GPUs: a policy may start it.
    pub fn is_startable(self) -> bool {
        matches!(self, TaskStatus::Ready | TaskStatus::Preempted | TaskStatus::Retrying)
    }
    pub fn is_final(self) -> bool {
        matches!(self, TaskStatus::Succeeded | TaskStatus::Failed | TaskStatus::Unschedulable | TaskStatus::Skipped)
    }
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Pending => "pending",
            TaskStatus::Ready => "ready",
            TaskStatus::Running => "running",
            TaskStatus::Preempted => "preempted",
            TaskStatus::Retrying => "retrying",
            TaskStatus::Succeeded => "succeeded",
            TaskStatus::Failed => "failed",
            TaskStatus::Unschedulable => "unschedulable",
            TaskStatus::Skipped => "skipped",
        }
    }
}

#[derive(Debug, Clone)]
pub struct TaskState {
    pub job: JobId,
    pub gpus: u32,
    /// Share of each GPU, in milli-GPUs: 1000 for whole GPUs; less for a fractional task (one
    /// GPU shared with other fractional tasks, up to 1000 in all).
    pub milli: u32,
    /// GPUs on each node the gang uses when its shape fixes them (all of them: one node);
    /// `None`: any split over nodes of one pool. See [`TaskState::per_node`]. One byte: a
    /// node holds at most [`crate::MAX_GPUS_PER_NODE`] GPUs, so a larger count (kept as 255)
    /// means a gang no node can hold, which never starts (it is unschedulable).
    pub gpus_per_node: Option<std::num::NonZeroU8>,
    /// Pools of the task's GPU type (all pools when it names none).
    pub pools: PoolMask,
    pub work: SimDuration,
    pub estimate: OptDuration,
    /// Work between checkpoints; zero means progress is never lost (checkpoint at every instant).
    pub checkpoint: SimDuration,
    /// Wall time each checkpoint takes to write, progress paused (`checkpoints.rs`).
    pub checkpoint_cost: SimDuration,
    /// Paid (on the GPUs, without progress) at every restart after a preemption or failure.
    pub restart_overhead: SimDuration,
    pub status: TaskStatus,
    /// True work still to do, as of the start of the current attempt when running.
    pub remaining: SimDuration,
    /// Attempts started so far; a finish event carries the attempt it was scheduled for.
    pub attempt: u32,
    pub run_start: SimTime,
    /// Restart overhead paid at the start of the current attempt (no progress meanwhile).
    pub overhead: SimDuration,
    pub first_start: OptTime,
    /// When the task reached its final state (succeeded, failed or skipped).
    pub finish: OptTime,
    pub preemptions: u32,
    /// Attempts ended by a hardware failure, and of those the ones retried.
    pub failures: u32,
    pub retries: u32,
    /// Set while the hardware under a running task is broken: no progress since then.
    pub stalled_since: OptTime,
    /// Work kept (not lost to a failure or preemption) over ended attempts, in
    /// milli-GPU-milliseconds (so a task holding 0.25 GPU is counted exactly).
    pub productive_mgpu_ms: u64,
    /// What ended attempts held and lost, out of line: most tasks lose nothing, and four
    /// counters inline cost a million-job run 32 MB. `None` until something is lost.
    pub(crate) losses: Option<Box<Losses>>,
    /// GPUs held now; empty unless running. A thin vector (8 bytes, not a boxed slice's 16):
    /// it is allocated only while the task runs.
    pub placed: thin_vec::ThinVec<GpuId>,
    /// Speed of the pool the current (or last) attempt runs in, in thousandths of the
    /// reference type's: work `w` takes `wall_for(w)` there.
    pub speed_milli: u32,
    /// Index of the dataset it reads, when the cluster defines datasets.
    pub dataset: OptIndex,
    /// Its own speeds per pool (`TaskSpec::speeds` resolved, an index into
    /// `ClusterView::speed_profile`); none: it runs at each pool's speed.
    pub speed_profile: OptIndex,
    /// `TaskSpec::exit_code`, kept here so that a completion reads only the task's state (the
    /// hot path of every run; the spec lives elsewhere in memory).
    pub exit_code: i32,
}

// The small accessors and conversions below are `#[inline]`: policies (another crate) call
// them for every candidate at every decision point, and without it each is a call.
impl TaskState {
    /// GPUs on each node the gang uses when its shape fixes them, as a plain count.
    #[inline]
    pub fn per_node(&self) -> Option<u32> {
        self.gpus_per_node.map(|n| u32::from(n.get()))
    }
    /// Work done in the current attempt by `now` (none while paying the restart overhead, none
    /// after its hardware broke).
    #[inline]
    pub fn progress_at(&self, now: SimTime) -> SimDuration {
        if self.status != TaskStatus::Running {
            return SimDuration::ZERO;
        }
        let wall = self.progress_wall_at(now);
        if !self.pauses() {
            return self.work_in(wall); // the hot path of every policy's remaining-time estimate
        }
        self.progress_after(wall).done - (self.work - self.remaining)
    }
    /// Wall time the current attempt has spent making progress by `now` (after its restart
    /// overhead, before its hardware broke, at most what its remaining work takes).
    #[inline]
    pub fn progress_wall_at(&self, now: SimTime) -> SimDuration {
        self.progress_until(now).since(self.run_start).saturating_sub(self.overhead).min(self.wall_to(self.work))
    }
    /// Until when the current attempt could progress by `now`: `now`, or when its hardware
    /// broke if that was earlier.
    #[inline]
    pub fn progress_until(&self, now: SimTime) -> SimTime {
        self.stalled_since.get().map_or(now, |s| s.min(now))
    }
    /// Wall time `work` takes at this task's speed (rounded up to whole ms: never early).
    #[inline]
    pub fn wall_for(&self, work: SimDuration) -> SimDuration {
        if self.speed_milli == REFERENCE_SPEED_MILLI {
            return work;
        }
        SimDuration(mul_div(work.as_ms(), 1000, u64::from(self.speed_milli), Round::Up))
    }
    /// Work done in `wall` time at this task's speed (rounded down), at most what is left.
    #[inline]
    pub fn work_in(&self, wall: SimDuration) -> SimDuration {
        self.work_at_speed(wall).min(self.remaining)
    }
    /// Work `wall` time does at this task's speed (rounded down), however much is left.
    #[inline]
    pub fn work_at_speed(&self, wall: SimDuration) -> SimDuration {
        if self.speed_milli == REFERENCE_SPEED_MILLI {
            return wall;
        }
        SimDuration(mul_div(wall.as_ms(), u64::from(self.speed_milli), 1000, Round::Down))
    }
    /// True work left at `now`.
    #[inline]
    pub fn remaining_at(&self, now: SimTime) -> SimDuration {
        self.remaining - self.progress_at(now)
    }
    /// When the current attempt ends if nothing interrupts it.
    pub fn finish_if_undisturbed(&self) -> SimTime {
        self.run_start + self.overhead + self.wall_to(self.work)
    }
    /// What the task holds while running, in milli-GPUs: 1000 per whole GPU, or its share of
    /// one GPU.
    #[inline]
    pub fn mgpus(&self) -> u64 {
        u64::from(self.gpus) * u64::from(self.milli)
    }
    /// Milliseconds held over ended attempts (for the mean attempt time of the retry budget):
    /// what they held over its milli-GPUs, exactly, as those never change.
    pub fn attempts_ms(&self) -> u64 {
        self.closed_mgpu_ms() / self.mgpus()
    }
    /// GPU-time held in attempts that have ended, in milli-GPU-milliseconds: what was kept
    /// and what was lost, as an attempt's held time splits exactly into the two.
    pub fn closed_mgpu_ms(&self) -> u64 {
        self.productive_mgpu_ms + self.losses().total()
    }
    /// What its ended attempts lost (all zero unless something was).
    pub fn losses(&self) -> &Losses {
        self.losses.as_deref().unwrap_or(&NO_LOSSES)
    }
    /// Counts an ended attempt's GPU-time: `kept` productive, the rest lost as `lost` splits it.
    pub(crate) fn close_attempt(&mut self, kept_mgpu_ms: u64, lost: Losses) {
        self.productive_mgpu_ms += kept_mgpu_ms;
        if lost != NO_LOSSES {
            self.losses.get_or_insert_default().add(lost);
        }
    }
    /// The work kept of `done` (its last checkpoint): all of it with continuous checkpoints or
    /// once the task is complete, never less than what the attempt started from.
    pub fn saved(&self, done: SimDuration) -> SimDuration {
        let done_before = self.work - self.remaining;
        if self.checkpoint == SimDuration::ZERO || done == self.work {
            return done;
        }
        SimDuration(done.as_ms() / self.checkpoint.as_ms() * self.checkpoint.as_ms()).max(done_before)
    }
    /// Milli-GPU-milliseconds held by `now`, over all attempts.
    pub fn mgpu_ms_at(&self, now: SimTime) -> u64 {
        let open =
            if self.status == TaskStatus::Running { now.since(self.run_start).as_ms() * self.mgpus() } else { 0 };
        self.closed_mgpu_ms() + open
    }
}

/// GPU-time an ended attempt held without keeping its work, in milli-GPU-milliseconds:
/// `held = productive + redo + lag + overhead + checkpoint`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Losses {
    /// Work done and then lost (since the last checkpoint): it must be redone.
    pub redo_mgpu_ms: u64,
    /// Time held on broken hardware before the failure was detected.
    pub lag_mgpu_ms: u64,
    /// Restart overhead paid.
    pub overhead_mgpu_ms: u64,
    /// Time spent writing checkpoints (progress paused).
    pub checkpoint_mgpu_ms: u64,
}

static NO_LOSSES: Losses = Losses { redo_mgpu_ms: 0, lag_mgpu_ms: 0, overhead_mgpu_ms: 0, checkpoint_mgpu_ms: 0 };

impl Losses {
    pub fn total(&self) -> u64 {
        self.redo_mgpu_ms + self.lag_mgpu_ms + self.overhead_mgpu_ms + self.checkpoint_mgpu_ms
    }
    pub(crate) fn add(&mut self, other: Losses) {
        self.redo_mgpu_ms += other.redo_mgpu_ms;
        self.lag_mgpu_ms += other.lag_mgpu_ms;
        self.overhead_mgpu_ms += other.overhead_mgpu_ms;
        self.checkpoint_mgpu_ms += other.checkpoint_mgpu_ms;
    }
}

/// The reference type's speed, in thousandths: the speed of every task on a cluster of one
/// GPU type, at which work and wall time convert as they are (what `mul_div` would give,
/// without its multiply and divide: the conversions are on every policy's hot path).
const REFERENCE_SPEED_MILLI: u32 = 1000;

/// An optional index in 4 bytes (`u32::MAX` meaning none), where `Option<u32>` takes 8: a
/// task's dataset and speed profile, on every task of a run; the task holding each GPU. No ordering, as `OptMs` has
/// none: a derived one would put none after every index, where `Option` puts it first;
/// compare `get()`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct OptIndex(u32);

impl OptIndex {
    pub const NONE: OptIndex = OptIndex(u32::MAX);
    pub fn get(self) -> Option<u32> {
        (self != OptIndex::NONE).then_some(self.0)
    }
}

impl From<Option<u32>> for OptIndex {
    /// Panics on `Some(u32::MAX)`, an index no table of datasets or speed profiles reaches.
    fn from(index: Option<u32>) -> OptIndex {
        index.map_or(OptIndex::NONE, |i| {
            assert!(i != u32::MAX, "an index of 4 billion does not fit an OptIndex");
            OptIndex(i)
        })
    }
}

#[derive(Clone, Copy)]
enum Round {
    Down,
    Up,
}

/// `a x b / c`, exact, rounded as asked, cut to 64 bits. In u64 where the product fits (any
/// time short of 584,000 years): a u128 division is a library call, and this is on the hot
/// path of every completion and every policy's remaining-time estimate.
#[inline]
fn mul_div(a: u64, b: u64, c: u64, round: Round) -> u64 {
    match (a.checked_mul(b), round) {
        (Some(product), Round::Down) => product / c,
        (Some(product), Round::Up) => product.div_ceil(c),
        (None, Round::Down) => (u128::from(a) * u128::from(b) / u128::from(c)) as u64,
        (None, Round::Up) => (u128::from(a) * u128::from(b)).div_ceil(u128::from(c)) as u64,
    }
}

#[derive(Debug, Clone)]
pub struct JobState {
    pub first_task: TaskId,
    pub task_count: u32,
    pub arrived: bool,
    /// Its tasks start together or not at all (`JobSpec::co_start`): the plan refuses a
    /// lone start of one.
    pub co_start: bool,
    /// Tasks not yet in a final state.
    pub open_tasks: u32,
    /// The first task failure no task of the job handles (with an `on failure` dependency):
    /// the job fails with it when its last task ends.
    pub failure: Option<Box<str>>,
    pub outcome: Option<JobOutcome>,
    pub end: OptTime,
    /// Its tasks a policy may start now (ready, preempted, retrying)...
    pub waiting_tasks: u32,
    /// ...and the job's wait for GPUs (the time at least one of them could have been started
    /// and was not, preempted and retrying time included) in one number, ms: the wait so far
    /// while none waits; the wait before the current stretch minus its start while one does
    /// (so that it costs one word per job, not two: see [`JobState::waited_until`]).
    pub wait_mark: i64,
    /// The policy has been told it ended (a decision's changes held `JobEnded`): a streamed
    /// run may let it go once every job before it has gone.
    pub(crate) told_ended: bool,
}

impl JobState {
    /// The job's wait for GPUs up to `now`.
    pub fn waited_until(&self, now: SimTime) -> SimDuration {
        let open = if self.waiting_tasks > 0 { now.as_ms() as i64 } else { 0 };
        SimDuration((self.wait_mark + open) as u64)
    }
    pub fn tasks(&self) -> impl Iterator<Item = TaskId> + Clone + use<> {
        let first = self.first_task.0;
        (first..first + self.task_count).map(TaskId)
    }
    /// Arrived and not ended: counted in the jobs-in-system integral (Little's law).
    pub fn in_system(&self) -> bool {
        self.arrived && self.outcome.is_none()
    }
}

#[cfg(test)]
mod mul_div_tests {
    use super::*;

    #[test]
    fn matches_the_wide_arithmetic_on_both_sides_of_the_u64_product() {
        let wide = |a: u64, b: u64, c: u64, up: bool| {
            let p = u128::from(a) * u128::from(b);
            (if up { p.div_ceil(u128::from(c)) } else { p / u128::from(c) }) as u64
        };
        let cases = [
            (0, 1000, 333),
            (1, 1000, 333),
            (86_400_000, 1000, 1_500),
            (86_400_000, 777, 1000),
            (u64::MAX / 1000, 1000, 999),
            (u64::MAX / 1000 + 1, 1000, 999),
            (u64::MAX, 1000, 1000),
            (u64::MAX, 999, 1000),
        ];
        for (a, b, c) in cases {
            assert_eq!(mul_div(a, b, c, Round::Down), wide(a, b, c, false), "{a} x {b} / {c}");
            assert_eq!(mul_div(a, b, c, Round::Up), wide(a, b, c, true), "{a} x {b} / {c} up");
        }
    }
}

#[cfg(test)]
mod size_tests {
    use super::*;

    #[test]
    fn an_opt_index_keeps_none_and_every_index_below_the_sentinel() {
        for index in [None, Some(0), Some(7), Some(u32::MAX - 1)] {
            assert_eq!(OptIndex::from(index).get(), index);
        }
    }

    #[test]
    fn losses_are_allocated_only_when_something_is_lost() {
        // Any task will do: the checkpoint tests' 8-GPU task.
        let mut t = crate::checkpoints::tests::task(0);
        t.close_attempt(5_000, Losses::default());
        assert!(t.losses.is_none());
        let lost = Losses { redo_mgpu_ms: 1, lag_mgpu_ms: 2, overhead_mgpu_ms: 3, checkpoint_mgpu_ms: 4 };
        t.close_attempt(1_000, lost);
        t.close_attempt(0, lost);
        assert_eq!((t.productive_mgpu_ms, t.losses().total(), t.closed_mgpu_ms()), (6_000, 20, 6_020));
    }

    /// A million-job run holds one of each per task and job for its whole length: growing
    /// either is paid a million times over (docs/performance.md, "Memory").
    #[test]
    fn run_time_state_stays_compact() {
        // 264 and 96 bytes before the held GPUs became a boxed slice, the mean attempt a
        // quotient and a job's failure reason a boxed str; 248 and 88 before their optional
        // times became `OptTime`s; 216 before a task's losses went out of line, its closed
        // GPU-time became a sum, its held GPUs a thin vector and its indexes `OptIndex`es.
        assert!(std::mem::size_of::<TaskState>() <= 168, "{}", std::mem::size_of::<TaskState>());
        // JobState: 80 before its outcome's reason became a boxed str and its submit time was
        // read from its spec; 64 before it kept its wait for GPUs (a count and one mark, 16
        // bytes: 16 MB a million jobs, for the wait preempted time included).
        assert!(std::mem::size_of::<JobState>() <= 80, "{}", std::mem::size_of::<JobState>());
    }
}
