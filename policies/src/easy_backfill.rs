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

use crate::params::{AVOID_FAILED, DURATION, PLACEMENT, ParamInfo, Params, Source, SpecError};
use crate::placement::{Placer, Shape};
use crate::running::RunningIndex;
use crate::tracking::{Placed, place_and_start, sync_waiting};
use crate::wait_queue::WaitQueue;
use sim::{ClusterView, DurationSource, Plan, Policy, PoolId, SimTime, TaskId};

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
    /// A decision's backfill candidates (kept: no allocation per decision).
    candidates: Vec<TaskId>,
}

/// Where and when the blocked head will start.
#[derive(Debug, Clone, Copy)]
struct Reservation {
    pool: PoolId,
    shadow: SimTime,
    extra: u32,
}

impl EasyBackfill {
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
            waiting: WaitQueue::default(),
            running: RunningIndex::default(),
            candidates: Vec::new(),
        })
    }

    /// Starts `task` on `gpus` and indexes it at once, so a reservation made later in this
    /// same decision counts the GPUs it will give back.
    fn start(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId, gpus: &[sim::GpuId]) {
        plan.start(task, gpus).expect("placement chose free GPUs of an eligible pool");
        self.waiting.remove(task);
        self.running.insert_started(view, task, gpus, self.source);
    }

    /// The soonest reservation for `head` over its eligible pools, by GPU count.
    fn reserve(&self, view: &ClusterView<'_>, plan: &Plan<'_>, head: TaskId) -> Option<Reservation> {
        let need = view.task(head).gpus;
        Shape::of(view.task(head))
            .pools
            .iter()
            .filter_map(|pool| {
                let mut free = plan.free().in_pool(pool);
                for (end, task) in self.running.in_pool(pool) {
                    if free >= need {
                        break;
                    }
                    free += view.task(task).gpus;
                    if free >= need {
                        let shadow = end.max(view.now());
                        // Tasks ending at the same instant also return their GPUs then.
                        let same_time: u32 = self
                            .running
                            .in_pool(pool)
                            .skip_while(|&(e, t)| (e, t) <= (end, task))
                            .take_while(|&(e, _)| e == end)
                            .map(|(_, t)| view.task(t).gpus)
                            .sum();
                        return Some(Reservation { pool, shadow, extra: free + same_time - need });
                    }
                }
                None
            })
            .min_by_key(|r| (r.shadow, r.pool))
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
        sync_waiting(view, &mut self.waiting, |_| 0);
        self.running.sync(view, source);
        let head = loop {
            let Some((_, head)) = self.waiting.head() else { return };
            match place_and_start(view, plan, self.placer, &mut self.waiting, head) {
                Placed::Started(gpus) => self.running.insert_started(view, head, &gpus, source),
                Placed::Parked => {}
                Placed::NoRoom => break head,
            }
        };
        let Some(mut reservation) = self.reserve(view, plan, head) else { return };
        // The candidates as they stand now (starts below take them off the queue), in a list
        // kept between decisions.
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.clear();
        candidates.extend(self.waiting.iter().skip(1).take(self.depth).map(|(_, t)| t));
        for &task in &candidates {
            if plan.free().total() == 0 {
                break;
            }
            if !plan.quota_allows(task) {
                continue;
            }
            let shape = Shape::of(view.task(task));
            let ends_in_time = view.expected_end_if_started(task, source) <= reservation.shadow;
            let within_extra = shape.gpus <= reservation.extra;
            let harmless_anywhere = ends_in_time || within_extra;
            // Cheap checks before placement: most candidates fail them under load.
            let elsewhere = shape.pools.iter().any(|p| p != reservation.pool && shape.fits_in(p, plan.free()));
            if !(elsewhere || harmless_anywhere && shape.fits(plan.free())) {
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
