//! What `fair-share` and `drf` have in common: one waiting queue per (quota) queue, kept in
//! step with the view's changes, and a fill pass that gives every next start to the queue with
//! the smallest share (ties: the higher queue priority, then the lower queue id), each queue
//! serving its own tasks in its order (`order=fifo|sjf`). Only how a share is measured
//! differs (`Shares`).
//!
//! Each queue's waiting tasks are a [`WaitQueue`], indexed by shape and with quota parking, so
//! "this queue's first task that fits now" costs O(shapes x log n). During one fill pass free
//! GPUs only shrink, so a queue found with nothing that fits is not asked again in that pass.
//! Without queues every task is in one waiting queue and the pass is plain greedy
//! `fifo[skip=true]` (or `sjf` with `order=sjf`).
//!
//! After the pass, the neediest queue whose head is within its GPU cap gives that head its
//! chance to reclaim GPUs borrowed by other queues (`crate::quota::reclaim`); one per decision
//! point, as the other greedy policies do.
//!
//! Decision cost, for Q queues with waiting tasks and c the cost of one share (O(1) for
//! fair-share, O(pools) for drf): O(shapes x log n) when nothing waiting fits (one query of an
//! index of all waiting tasks, the common case on a busy cluster); otherwise O(Q x c + Q log Q)
//! to rank the queues once, then per start O(c + Q + shapes x log n) (only the starting queue's
//! share changes: nothing is preempted in the pass), and O(shapes x log n) per queue found with
//! nothing that fits (each at most once). The reclaim step ranks the queues again only while
//! some queue is borrowing.

use crate::params::{ParamInfo, Params, Source, SpecError};
use crate::placement::{Placer, Shape};
use crate::tracking::{Placed, place_and_start};
use crate::wait_queue::{Key, WaitQueue};
use sim::{Change, ClusterView, DurationSource, JobId, Plan, QueueId, TaskId};
use std::cmp::Ordering;

/// `order`: the order of the tasks within one queue (read with [`Order::from_params`]).
pub const ORDER: ParamInfo = ParamInfo {
    key: "order",
    values: "fifo|sjf",
    default: "fifo",
    help: "order of the tasks within one queue: arrival, or shortest (expected) duration first",
};

/// `duration` for fair-share and drf: read only with `order=sjf`.
pub const SJF_DURATION: ParamInfo = ParamInfo {
    key: "duration",
    values: "oracle|estimate",
    default: "oracle",
    help: "with order=sjf, the durations it sorts by: the true one (an upper bound) or the trace's estimate",
};

/// `order` and `duration`: the order of tasks inside one queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Order {
    /// Shortest expected duration first (else arrival order).
    pub sjf: bool,
    /// The durations `sjf` sorts by.
    pub source: DurationSource,
}

impl Order {
    /// From the `order` and `duration` parameters.
    pub fn from_params(params: &Params) -> Result<Order, SpecError> {
        let order: String = params.get("order")?;
        let sjf = match order.as_str() {
            "fifo" => false,
            "sjf" => true,
            _ => {
                let (policy, values) = (&params.policy, ORDER.values);
                return Err(SpecError(format!("policy `{policy}`: `order={order}`: expected {values}")));
            }
        };
        let Source(source) = params.get(SJF_DURATION.key)?;
        Ok(Order { sjf, source })
    }

    /// The task's key in its queue: 0 (arrival order) or its expected duration.
    pub fn key(self, view: &ClusterView<'_>, task: TaskId) -> Key {
        if self.sjf { view.expected_duration(task, self.source).as_ms() } else { 0 }
    }

    /// Whether the policy reads estimates (sjf order with `duration=estimate`).
    pub fn needs_estimates(self) -> bool {
        self.sjf && self.source == DurationSource::Estimate
    }

    /// As it appears in the policy's name: `order=..,duration=..`.
    pub fn spec(self) -> String {
        format!("order={},duration={}", if self.sjf { "sjf" } else { "fifo" }, self.source.as_str())
    }
}

/// A share `num / den`, compared exactly by cross-multiplication (no floats).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Share {
    /// The numerator (what the queue holds, in the policy's unit).
    pub num: u128,
    /// The denominator (the queue's weight), positive.
    pub den: u128,
}

impl Share {
    /// `num / den`.
    ///
    /// # Panics
    /// When `den` is zero.
    pub fn new(num: u128, den: u128) -> Share {
        assert!(den > 0, "a share's denominator is positive");
        Share { num, den }
    }
    /// Compares two shares exactly.
    pub fn cmp_exact(self, other: Share) -> Ordering {
        (self.num * other.den).cmp(&(other.num * self.den))
    }
}

/// How a policy measures each queue's share of the cluster.
pub trait Shares {
    /// `queue`'s share now, including this plan's decisions so far.
    fn share(&self, view: &ClusterView<'_>, plan: &Plan<'_>, queue: QueueId) -> Share;
    /// Sees the plan's decisions from index `from` on (starts, and preemptions made by a
    /// reclaim), to keep its own usage index current.
    fn note(&mut self, _view: &ClusterView<'_>, _plan: &Plan<'_>, _from: usize) {}
}

/// The waiting tasks, one queue per quota queue (one in all without queues), and all of them
/// in one more, to tell at once when nothing waiting fits.
#[derive(Debug, Default)]
pub struct PerQueue {
    waits: Vec<WaitQueue>,
    all: WaitQueue,
    /// The fill pass's ranking, kept from one pass to the next so that a pass allocates
    /// nothing (made afresh, it was about four allocations a job: 3 % of a drf run).
    ranking: Ranking,
}

/// The queues' shares and their order in a fill pass.
#[derive(Debug, Default)]
struct Ranking {
    /// Each queue's share; `None` for a queue with nothing waiting, or not measured.
    measured: Vec<Option<Share>>,
    /// The queues with a share, the one served first first.
    order: Vec<usize>,
}

impl PerQueue {
    fn index(view: &ClusterView<'_>, job: JobId) -> usize {
        view.queue_of(job).map_or(0, QueueId::index)
    }

    /// Applies the view's changes, as `tracking::sync_waiting` does for one queue: startable
    /// tasks are queued in their job's queue under `key`; started, ended and failed-for-good
    /// tasks leave it; a task that stops unparks its queue's parked tasks.
    pub fn sync(&mut self, view: &ClusterView<'_>, mut key: impl FnMut(TaskId) -> Key) {
        let n = view.queues().len().max(1);
        if self.waits.len() < n {
            self.waits.resize_with(n, WaitQueue::default);
        }
        for change in view.changes() {
            let stopped = match *change {
                Change::TaskFinished(t) | Change::TaskPreempted(t) | Change::TaskFailed(t) => Some(view.task(t).job),
                Change::JobEnded(job) => Some(job),
                Change::TaskReady(_) | Change::TaskStarted(_) => None,
            };
            if let Some(q) = stopped.and_then(|job| view.queue_of(job)) {
                self.waits[q.index()].unpark(q);
                self.all.unpark(q);
            }
            match *change {
                Change::TaskReady(t) | Change::TaskPreempted(t) => self.insert(view, t, key(t)),
                Change::TaskFailed(t) if view.task(t).status.is_startable() => self.insert(view, t, key(t)),
                Change::TaskStarted(t) | Change::TaskFinished(t) | Change::TaskFailed(t) => {
                    self.waits[Self::index(view, view.task(t).job)].remove(t);
                    self.all.remove(t);
                }
                Change::JobEnded(job) => {
                    let waits = &mut self.waits[Self::index(view, job)];
                    for t in view.job(job).tasks() {
                        waits.remove(t);
                        self.all.remove(t);
                    }
                }
            }
        }
    }

    fn insert(&mut self, view: &ClusterView<'_>, task: TaskId, key: Key) {
        let shape = Shape::of(view.task(task));
        self.waits[Self::index(view, view.task(task).job)].insert(task, key, shape);
        self.all.insert(task, key, shape);
    }

    /// Tries `task` of queue `i` (`place_and_start`) and mirrors the outcome in `all`.
    fn start(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, placer: Placer, i: usize, task: TaskId) -> Placed {
        let placed = place_and_start(view, plan, placer, &mut self.waits[i], task);
        match placed {
            Placed::Started(_) => self.all.remove(task),
            Placed::Parked => self.all.park(task, QueueId(i as u32)),
            Placed::NoRoom => {}
        }
        placed
    }

    /// Which of queues `a` and `b` is served first: the smaller share, then the higher queue
    /// priority, then the lower id.
    fn before(view: &ClusterView<'_>, shares: &[Option<Share>], a: usize, b: usize) -> Ordering {
        let (sa, sb) = (shares[a].expect("measured"), shares[b].expect("measured"));
        let priority = |i: usize| {
            let queues = view.queues();
            if queues.is_empty() { 0 } else { queues.get(QueueId(i as u32)).priority }
        };
        sa.cmp_exact(sb).then_with(|| priority(b).cmp(&priority(a))).then(a.cmp(&b))
    }

    /// Queue `i`'s share if it has a waiting task.
    fn measure(&self, view: &ClusterView<'_>, plan: &Plan<'_>, shares: &impl Shares, i: usize) -> Option<Share> {
        let queued = !view.queues().is_empty();
        self.waits[i]
            .head()
            .map(|_| if queued { shares.share(view, plan, QueueId(i as u32)) } else { Share::new(0, 1) })
    }

    /// The fill pass, then one reclaim (see the module comment).
    ///
    /// Queues with waiting tasks are sorted by share once; a start changes only its own queue's
    /// share (nothing is preempted here: only tasks that fit are tried), so that queue alone is
    /// measured again and moved to its new place.
    pub fn fill(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, placer: Placer, shares: &mut impl Shares) {
        let mut ranking = std::mem::take(&mut self.ranking);
        let n = self.waits.len();
        ranking.measured.clear();
        ranking.measured.resize(n, None);
        ranking.order.clear();
        let mut something_fits = self.all.first_fitting(plan.free()).is_some();
        if something_fits {
            self.rank(view, plan, shares, &mut ranking);
        }
        let Ranking { measured, order } = &mut ranking;
        let mut aside = crate::tracking::Aside::new();
        while something_fits && let Some(&i) = order.first() {
            order.remove(0);
            let Some((_, task)) = self.waits[i].first_fitting(plan.free()) else {
                continue; // nothing of this queue fits, and GPUs only get fewer in this pass
            };
            let from = plan.decisions().len();
            let placed = self.start(view, plan, placer, i, task);
            if placed == Placed::NoRoom {
                // A co-start task fits alone, not with its job: passed over for this pass.
                assert!(plan.co_starts(task), "a task whose shape fits has a placement");
                aside.extend(self.waits[i].take(task));
                self.all.remove(task);
                order.insert(0, i);
                something_fits = self.all.first_fitting(plan.free()).is_some();
                continue;
            }
            shares.note(view, plan, from);
            measured[i] = self.measure(view, plan, shares, i);
            if measured[i].is_some() {
                let at = order.partition_point(|&j| Self::before(view, measured, j, i).is_lt());
                order.insert(at, i);
            }
            something_fits = self.all.first_fitting(plan.free()).is_some();
        }
        for (task, key, _) in aside {
            self.insert(view, task, key);
        }
        // The neediest queue whose head is entitled to reclaim borrowed GPUs gets its chance.
        if view.queues().iter().any(|(q, _)| plan.borrowing(q)) {
            self.rank(view, plan, shares, &mut ranking);
            self.reclaim(view, plan, placer, shares, &ranking.order);
        }
        self.ranking = ranking;
    }

    /// Measures every queue and orders those with a share, the one served first first.
    fn rank(&self, view: &ClusterView<'_>, plan: &Plan<'_>, shares: &impl Shares, ranking: &mut Ranking) {
        let Ranking { measured, order } = ranking;
        for (i, share) in measured.iter_mut().enumerate() {
            *share = self.measure(view, plan, shares, i);
        }
        order.clear();
        order.extend((0..measured.len()).filter(|&i| measured[i].is_some()));
        order.sort_by(|&a, &b| Self::before(view, measured, a, b));
    }

    /// Starts the head of the first queue in `order` that is within its GPU cap, if any.
    fn reclaim(
        &mut self,
        view: &ClusterView<'_>,
        plan: &mut Plan<'_>,
        placer: Placer,
        shares: &mut impl Shares,
        order: &[usize],
    ) {
        for &i in order {
            let Some((_, head)) = self.waits[i].head() else { continue };
            if plan.within_cap(head) {
                let from = plan.decisions().len();
                self.start(view, plan, placer, i, head);
                shares.note(view, plan, from);
                return;
            }
        }
    }
}
