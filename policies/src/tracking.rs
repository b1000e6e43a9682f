//! The moves every queue-based policy here makes the same way: keeping its waiting queue in
//! step with the view's changes (only the key differs), and starting a waiting task where its
//! placement puts it, within its queue's quota, reclaiming borrowed GPUs when it is entitled.

use crate::placement::{GpuList, Placer, Shape};
use crate::wait_queue::{Key, WaitQueue};
use sim::{Change, ClusterView, GpuId, Plan, TaskId};

/// What became of a task `place_and_start` tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placed {
    /// Started on these GPUs, and taken off the waiting queue.
    Started(GpuList),
    /// Not enough free GPUs of its shape now: it keeps its place in the order.
    NoRoom,
    /// Its queue's quota holds it back: parked until a task of its queue stops.
    Parked,
}

impl Placed {
    /// The GPUs it started on, if it started.
    pub fn started(&self) -> Option<&[GpuId]> {
        match self {
            Placed::Started(gpus) => Some(gpus),
            _ => None,
        }
    }
}

/// Applies the view's changes to `queue`: startable tasks (new, preempted, retrying after a
/// failure) are queued under `key(task)`; tasks that started, finished or failed for good, and
/// those of ended jobs, are dropped.
pub fn sync_waiting(view: &ClusterView<'_>, queue: &mut WaitQueue, mut key: impl FnMut(TaskId) -> Key) {
    for change in view.changes() {
        // A task that stopped, or a job that ended, may leave room in its queue's quota.
        let stopped = match *change {
            Change::TaskFinished(t) | Change::TaskPreempted(t) | Change::TaskFailed(t) => Some(view.task(t).job),
            Change::JobEnded(job) => Some(job),
            Change::TaskReady(_) | Change::TaskStarted(_) => None,
        };
        if let Some(q) = stopped.and_then(|job| view.queue_of(job)) {
            queue.unpark(q);
        }
        match *change {
            Change::TaskReady(t) | Change::TaskPreempted(t) => {
                queue.insert(t, key(t), Shape::of(view.task(t)));
            }
            Change::TaskFailed(t) if view.task(t).status.is_startable() => {
                queue.insert(t, key(t), Shape::of(view.task(t)));
            }
            Change::TaskStarted(t) | Change::TaskFinished(t) | Change::TaskFailed(t) => queue.remove(t),
            Change::JobEnded(job) => view.job(job).tasks().for_each(|t| queue.remove(t)),
        }
    }
}

/// The tasks of the jobs that ended since the last decision: what a policy's tables by task
/// let go of, so that they hold the tasks in the system, not every task of the run.
pub fn tasks_of_ended_jobs<'v>(view: &'v ClusterView<'_>) -> impl Iterator<Item = TaskId> + 'v {
    view.changes()
        .iter()
        .filter_map(|change| match *change {
            Change::JobEnded(job) => Some(view.job(job).tasks()),
            _ => None,
        })
        .flatten()
}

/// Places `task` with `placer` on the GPUs free now and starts it, taking it off `waiting`.
/// A task its queue's quota holds back is parked. A task within its queue's GPU cap that does
/// not fit may reclaim GPUs other queues borrowed (`crate::quota::reclaim`). A task of a
/// co-start job starts with its job's other waiting tasks or not at all ([`start_together`]).
pub fn place_and_start(
    view: &ClusterView<'_>,
    plan: &mut Plan<'_>,
    placer: Placer,
    waiting: &mut WaitQueue,
    task: TaskId,
) -> Placed {
    if plan.co_starts(task) {
        return start_together(view, plan, placer, waiting, task);
    }
    start_where(plan, waiting, task, |plan, gpus| {
        let shape = Shape::of(view.task(task));
        // A placement exists exactly when the shape fits (`Placer::place`), and a gang that
        // waits is tried often while nothing fits (a blocked head, every decision): the fit
        // test is a few bit scans where a failing placement walks its algorithm.
        if shape.fits(plan.free()) && placer.place_into(shape, view, plan.free(), gpus) {
            return true;
        }
        crate::quota::reclaim(view, plan, placer, task).map(|reclaimed| *gpus = reclaimed).is_some()
    })
}

/// As `place_and_start`, on `gpus` the policy already chose among those free now (a data-local
/// placement it scored the task by), reclaiming nothing. Not for a task of a co-start job
/// (the plan refuses its lone start): those go through `place_and_start`.
pub fn start_on(plan: &mut Plan<'_>, waiting: &mut WaitQueue, task: TaskId, gpus: GpuList) -> Placed {
    start_where(plan, waiting, task, |_, chosen| {
        *chosen = gpus;
        true
    })
}

/// Parks `task` if its queue's quota holds it back, else starts it on the GPUs `place` puts in
/// the list it is given (empty; `false`: no room). The list is filled where it lies, not
/// returned: a placement's GPUs are written a few bytes at a time, and copying the list out
/// at once right after stalls on those stores (a store-forwarding stall, seen in wall time).
fn start_where(
    plan: &mut Plan<'_>,
    waiting: &mut WaitQueue,
    task: TaskId,
    place: impl FnOnce(&mut Plan<'_>, &mut GpuList) -> bool,
) -> Placed {
    if !plan.quota_allows(task) {
        let queue = plan.queue_of_task(task).expect("only a task with a queue has a quota");
        waiting.park(task, queue);
        return Placed::Parked;
    }
    let mut gpus = GpuList::new();
    if !place(plan, &mut gpus) {
        return Placed::NoRoom;
    }
    plan.start(task, &gpus).expect("placement chose free GPUs of an eligible pool, within quota");
    waiting.remove(task);
    Placed::Started(gpus)
}

/// Starts `task` and every other waiting task of its co-start job in one decision, each placed
/// with `placer` on the GPUs the ones before it left free (`Plan::start_together_with`), and
/// takes them all off `waiting`; if one does not fit, none starts and it is no room for
/// `task`. A quota that holds back `task` (or the job as a whole) parks `task`. Reclaims no
/// borrowed GPUs: a reclaim sized for one task does not make room for a whole job.
pub fn start_together(
    view: &ClusterView<'_>,
    plan: &mut Plan<'_>,
    placer: Placer,
    waiting: &mut WaitQueue,
    task: TaskId,
) -> Placed {
    let job = view.task(task).job;
    if plan.is_decided(task) {
        // Started already, with its job, from another of the policy's queues.
        waiting.remove(task);
        return Placed::NoRoom;
    }
    let park = |waiting: &mut WaitQueue, plan: &Plan<'_>| match plan.queue_of_task(task) {
        Some(queue) => {
            waiting.park(task, queue);
            Placed::Parked
        }
        None => Placed::NoRoom,
    };
    if !plan.quota_allows(task) {
        return park(waiting, plan);
    }
    let mut own = GpuList::new();
    let started = plan.start_together_with(job, |t, free, gpus| {
        let shape = Shape::of(view.task(t));
        let placed = shape.fits(free) && placer.place_into(shape, view, free, gpus);
        if placed && t == task {
            own.clone_from(gpus);
        }
        placed
    });
    match started {
        Ok(true) => {
            view.job(job).tasks().for_each(|t| waiting.remove(t));
            Placed::Started(own)
        }
        Err(sim::PlanError::Quota { .. }) => park(waiting, plan),
        // A placement chose free GPUs of the task's pools, so only a quota refuses one.
        Ok(false) | Err(_) => Placed::NoRoom,
    }
}

/// Tasks a fill pass set aside for the rest of one decision (see [`pass_over`]).
pub type Aside = Vec<(TaskId, Key, Shape)>;

/// For a pass over the waiting tasks that fit (`first_fitting`), when `task` found no room:
/// a task of a co-start job fits alone but not with its job, so it is taken off `waiting`
/// into `aside` (put back with [`put_back`] after the pass) and the pass goes on (`true`).
/// For any other task the pass ends (`false`): a shape that fits has a placement.
pub fn pass_over(plan: &Plan<'_>, waiting: &mut WaitQueue, task: TaskId, aside: &mut Aside) -> bool {
    if !plan.co_starts(task) {
        return false;
    }
    aside.extend(waiting.take(task));
    true
}

/// Puts the tasks a pass set aside back in `waiting`, in their places.
pub fn put_back(waiting: &mut WaitQueue, aside: Aside) {
    for (task, key, shape) in aside {
        waiting.insert(task, key, shape);
    }
}

/// For policies whose passes only try tasks that fit: the first waiting task in their order,
/// if it finds no room, gets its chance to reclaim GPUs its queue is entitled to. Free without
/// queues.
pub fn reclaim_for_head(view: &ClusterView<'_>, plan: &mut Plan<'_>, placer: Placer, waiting: &mut WaitQueue) {
    if view.queues().is_empty() {
        return;
    }
    if let Some((_, head)) = waiting.head() {
        place_and_start(view, plan, placer, waiting, head);
    }
}
