//! `easy-backfill`: FIFO with EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001).
//!
//! Tasks start in arrival order while they fit. When the head does not fit it gets a
//! reservation: in the eligible pool where enough GPUs come back soonest (by the expected ends
//! of the tasks running there), the *shadow time* at which it can start, and the *extra* GPUs
//! that pool will have then beyond the head's need. A later task may start now only if it does
//! not delay the head: it runs in another pool, or it is expected to end by the shadow time, or
//! it uses no more than the extra GPUs (which it then uses up).
//!
//! The reservation counts GPUs per pool; it does not model node fragmentation, so a
//! single-node head can still be delayed by a backfilled task on the node it would have used.
//! A share of a GPU counts as one GPU: a blocked fractional head waits for a whole free GPU,
//! and a running share is taken to free its GPU when it ends, which is optimistic while other
//! shares remain there.
//! With `duration=estimate`, tasks that overrun their estimate delay the head, as in real EASY
//! schedulers (which would kill them at their limit; schedlab lets them finish).
//!
//! Decision cost: O(starts x log n) for the in-order part, then the reservation walk
//! O(running tasks in the head's pools) and at most `depth` backfill candidates examined.

use crate::id_table::IdTable;
use crate::params::{AVOID_FAILED, DURATION, PLACEMENT, ParamInfo, Params, Source, SpecError};
use crate::placement::{Placer, Shape};
use crate::running::RunningIndex;
use crate::tracking::{Placed, place_and_start, sync_waiting, tasks_of_ended_jobs};
use crate::wait_queue::WaitQueue;
use sim::{ClusterView, DurationSource, Plan, Policy, PoolId, SimDuration, SimTime, TaskId};

pub const PARAMS: &[ParamInfo] = &[
    DURATION,
    ParamInfo {
        key: "depth",
        values: "1..",
        default: "100",
        help: "most waiting tasks examined for backfill per decision point (as Slurm's bf_max_job_test)",
    },
    PLACEMENT,
    AVOID_FAILED,
];

pub struct EasyBackfill {
    name: String,
    source: DurationSource,
    depth: usize,
    placer: Placer,
    waiting: WaitQueue,
    running: RunningIndex,
    /// A decision's backfill candidates with their shape indices in `waiting` (kept: no
    /// allocation per decision).
    candidates: Vec<(TaskId, usize)>,
    /// By shape index: whether the shape was found not to fit in this decision's backfill.
    no_room: Vec<bool>,
    /// By task, set as it begins to wait: its restart overhead and expected remaining work,
    /// which do not change while it waits (its expected end if started is now plus these);
    /// let go of when its job ends, so that it holds the tasks in the system.
    work_if_started: IdTable<SimDuration>,
}

/// Where and when the blocked head will start.
#[derive(Debug, Clone, Copy)]
struct Reservation {
    pool: PoolId,
    shadow: SimTime,
    extra: u32,
}

impl EasyBackfill {
    /// What waiting `task` would do if started now (every waiting task has it noted).
    fn work_if_started_of(&self, task: TaskId) -> SimDuration {
        self.work_if_started.get(task.index()).unwrap_or(SimDuration::ZERO)
    }

    pub fn new(params: &Params) -> Result<EasyBackfill, SpecError> {
        let Source(source) = params.get("duration")?;
        let depth: usize = params.get("depth")?;
        let placer = Placer::from_params(params)?;
        if depth == 0 {
            return Err(SpecError("policy `easy-backfill`: depth must be at least 1".into()));
        }
        Ok(EasyBackfill {
            name: format!("easy-backfill[duration={},depth={depth},{placer}]", source.as_str()),
            source,
            depth,
            placer,
            waiting: WaitQueue::keeping_order(),
            running: RunningIndex::default(),
            candidates: Vec::new(),
            no_room: Vec::new(),
            work_if_started: IdTable::default(),
        })
    }

    /// Starts `task` on `gpus` and indexes it at once, so a reservation made later in this
    /// same decision counts the GPUs it will give back.
    fn start(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId, gpus: &[sim::GpuId]) {
        plan.start(task, gpus).expect("placement chose free GPUs of an eligible pool");
        self.waiting.remove(task);
        self.running.insert_started(view, task, gpus, self.source);
    }

    /// Backfills `task` with the other waiting tasks of its co-start job, all or none, when
    /// every one of them ends (its GPUs back) by `shadow`: so none can delay the head, wherever
    /// they go. Started tasks' GPUs lent from the reservation's extra are not needed then.
    fn backfill_together(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId, shadow: SimTime) {
        let latency = view.release_latency();
        let job = view.task(task).job;
        if !plan.waiting_tasks(job).all(|t| view.expected_end_if_started(t, self.source) + latency <= shadow) {
            return;
        }
        if let Placed::Started(gpus) = place_and_start(view, plan, self.placer, &mut self.waiting, task) {
            self.index_started(view, plan, task, &gpus);
        }
    }

    /// Indexes `task`, just started on `gpus`, and the other tasks of its job this plan
    /// started with it (a co-start job's), so a reservation made later in this decision
    /// counts the GPUs they give back.
    fn index_started(&mut self, view: &ClusterView<'_>, plan: &Plan<'_>, task: TaskId, gpus: &[sim::GpuId]) {
        self.running.insert_started(view, task, gpus, self.source);
        if !plan.co_starts(task) {
            return;
        }
        let job = view.task(task).job;
        for decision in plan.decisions() {
            if let sim::Decision::Start { task: other, gpus } = decision
                && view.task(*other).job == job
            {
                self.running.insert_started(view, *other, gpus, self.source);
            }
        }
    }

    /// The soonest reservation for `head` over its eligible pools, by GPU count (its job's,
    /// for a co-start head). A head whose
    /// shape fixes its GPUs per node (single-node, whole nodes) gets no extra GPUs to lend:
    /// counts per pool do not say which nodes it will need, and a backfill on the "extra"
    /// GPUs could take the very node it waits for.
    fn reserve(&self, view: &ClusterView<'_>, plan: &Plan<'_>, head: TaskId) -> Option<Reservation> {
        // A co-start head starts with its job's other waiting tasks: it needs all their GPUs
        // (counted in its pools, as though its job were one gang there).
        let need = if plan.co_starts(head) {
            plan.waiting_tasks(view.task(head).job).map(|t| view.task(t).gpus).sum()
        } else {
            view.task(head).gpus
        };
        let node_shaped = view.task(head).gpus_per_node.is_some();
        Shape::of(view.task(head))
            .pools
            .iter()
            .filter_map(|pool| {
                let free = plan.free().in_pool(pool);
                let (shadow, extra) = if view.release_latency() == SimDuration::ZERO {
                    // GPUs return at the tasks' ends: the index alone, without the merge.
                    let ends = self.running.in_pool(pool).map(|(end, t)| (end, view.task(t).gpus));
                    first_room(free, need, ends.peekable())?
                } else {
                    first_room(free, need, self.returns(view, pool))?
                };
                let extra = if node_shaped { 0 } else { extra };
                Some(Reservation { pool, shadow: shadow.max(view.now()), extra })
            })
            .min_by_key(|r| (r.shadow, r.pool))
    }
}

/// When `need` GPUs are first free, starting from `free` and adding what `returns` gives
/// back (soonest first), and how many more than `need` are free then (GPUs back at that same
/// instant included); `None` if never.
fn first_room(
    mut free: u32,
    need: u32,
    mut returns: std::iter::Peekable<impl Iterator<Item = (SimTime, u32)>>,
) -> Option<(SimTime, u32)> {
    while free < need {
        let (back, gpus) = returns.next()?;
        free += gpus;
        if free >= need {
            let same_time: u32 = std::iter::from_fn(|| returns.next_if(|&(b, _)| b == back)).map(|(_, g)| g).sum();
            return Some((back, free + same_time - need));
        }
    }
    None
}

impl EasyBackfill {
    /// When GPUs come back in `pool`, soonest first, as (when, GPUs): each running task's at
    /// its expected end plus the release latency, merged with those being released now (a
    /// share counted as its GPU, as running shares are).
    fn returns<'s>(
        &'s self,
        view: &'s ClusterView<'_>,
        pool: PoolId,
    ) -> std::iter::Peekable<impl Iterator<Item = (SimTime, u32)> + 's> {
        let latency = view.release_latency();
        let mut ends = self.running.in_pool(pool).map(move |(end, t)| (end + latency, view.task(t).gpus)).peekable();
        let (cluster, health) = (view.cluster(), view.health());
        // Only GPUs the scheduler may use: one let go of on a dead node does not come back.
        let mut releasing = view
            .releasing()
            .filter(move |&(_, gpu, _)| cluster.pool_of(gpu) == pool && health.usable(gpu))
            .map(|(at, _, _)| (at, 1))
            .peekable();
        // Ties: running tasks first; both count at the same instant, so the order is moot.
        std::iter::from_fn(move || match (ends.peek(), releasing.peek()) {
            (Some(&(end, _)), Some(&(at, _))) if at < end => releasing.next(),
            (Some(_), _) => ends.next(),
            (None, _) => releasing.next(),
        })
        .peekable()
    }
}

impl Policy for EasyBackfill {
    fn name(&self) -> &str {
        &self.name
    }

    fn needs_estimates(&self) -> bool {
        self.source == DurationSource::Estimate
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let source = self.source;
        let work_if_started = &mut self.work_if_started;
        sync_waiting(view, &mut self.waiting, |task| {
            work_if_started.insert(task.index(), view.start_overhead(task) + view.expected_remaining(task, source));
            0
        });
        tasks_of_ended_jobs(view).for_each(|t| _ = self.work_if_started.remove(t.index()));
        self.running.sync(view, source);
        let head = loop {
            let Some((_, head)) = self.waiting.head() else { return };
            match place_and_start(view, plan, self.placer, &mut self.waiting, head) {
                Placed::Started(gpus) => self.index_started(view, plan, head, &gpus),
                Placed::Parked => {}
                Placed::NoRoom => break head,
            }
        };
        if plan.free().total() == 0 {
            return; // no room for any backfill
        }
        let Some(mut reservation) = self.reserve(view, plan, head) else { return };
        // The candidates as they stand now (starts below take them off the queue), in a list
        // kept between decisions.
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        candidates.extend(self.waiting.iter_shaped().skip(1).take(self.depth));
        // Backfilling only takes GPUs, so a shape that does not fit stays so for the rest of
        // the decision: each shape is tested for room at most once.
        self.no_room.clear();
        for &(task, shape_index) in &candidates {
            if plan.free().total() == 0 {
                break;
            }
            if self.no_room.len() <= shape_index {
                self.no_room.resize(shape_index + 1, false);
            }
            if plan.co_starts(task) {
                self.backfill_together(view, plan, task, reservation.shadow);
                continue;
            }
            let shape = self.waiting.shape(shape_index);
            // Cheap checks before placement, the cheapest first: most candidates fail them
            // under load (a candidate that would delay the head and may only run in the
            // head's pool, or whose shape has no room).
            // Its GPUs must be back (after the release latency) by the shadow time.
            let ends_in_time =
                view.now() + self.work_if_started_of(task) + view.release_latency() <= reservation.shadow;
            debug_assert_eq!(
                view.now() + self.work_if_started_of(task),
                view.expected_end_if_started(task, source),
                "{task}'s restart overhead and remaining work changed while it waited"
            );
            let within_extra = shape.gpus <= reservation.extra;
            let harmless_anywhere = ends_in_time || within_extra;
            let head_pool_only = shape.pools.iter().all(|p| p == reservation.pool);
            if !harmless_anywhere && head_pool_only || self.no_room[shape_index] {
                continue;
            }
            if !shape.fits(plan.free()) {
                self.no_room[shape_index] = true;
                continue;
            }
            if !plan.quota_allows(task) {
                continue;
            }
            let elsewhere = shape.pools.iter().any(|p| p != reservation.pool && shape.fits_in(p, plan.free()));
            if !(elsewhere || harmless_anywhere) {
                continue;
            }
            let Some(gpus) = self.placer.place(shape, view, plan.free()) else {
                continue;
            };
            let pool = view.cluster().pool_of(gpus[0]);
            if pool != reservation.pool || harmless_anywhere {
                self.start(view, plan, task, &gpus);
                if pool == reservation.pool && !ends_in_time {
                    reservation.extra -= shape.gpus;
                }
            }
        }
        self.candidates = candidates;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a waiting task would do is held for the tasks in the system: none is left once
    /// every job has ended.
    #[test]
    fn ended_jobs_leave_no_expected_work() {
        let policy = crate::run_to_the_end(EasyBackfill::new(&crate::params_of("easy-backfill")).expect("builds"));
        assert!(policy.work_if_started.is_empty(), "expected work left for ended jobs' tasks");
    }
}
