//! `srtf`: shortest remaining time first, preemptive.
//!
//! In order of remaining work, each waiting task starts if it fits; if it does not, running
//! tasks of an eligible pool with *more* remaining work than it are preempted, longest first,
//! until it fits (if preempting all of them would not make it fit, nothing is preempted and
//! the preemptive pass stops). Then the shortest waiting tasks that fit fill the free GPUs.
//! A preempted task keeps its progress and pays `--restart-overhead-s` when it restarts.
//!
//! Victims are picked by remaining work alone, so a single-node gang may preempt a long task on
//! a node it does not then use; victims rejoin the queue at once, and the fill pass restarts
//! them on whatever is free (a migration, paying the restart overhead).
//!
//! Decision cost: O((starts + 1) x shapes x log n) plus, for the one task that triggers
//! preemption, O(running tasks in its pools).

use crate::params::{AVOID_FAILED, DURATION, PLACEMENT, ParamInfo, Params, Source, SpecError};
use crate::placement::{Placer, Shape, nothing_fits};
use crate::running::RunningIndex;
use crate::tracking::{Aside, Placed, pass_over, place_and_start, put_back, sync_waiting};
use crate::wait_queue::{Key, WaitQueue};
use sim::{ClusterView, DurationSource, Plan, Policy, SimDuration, TaskId};

pub const PARAMS: &[ParamInfo] = &[DURATION, PLACEMENT, AVOID_FAILED];

pub struct Srtf {
    name: String,
    source: DurationSource,
    placer: Placer,
    waiting: WaitQueue,
    running: RunningIndex,
}

impl Srtf {
    pub fn new(params: &Params) -> Result<Srtf, SpecError> {
        let Source(source) = params.get("duration")?;
        let placer = Placer::from_params(params)?;
        Ok(Srtf {
            name: format!("srtf[duration={},{placer}]", source.as_str()),
            source,
            placer,
            waiting: WaitQueue::default(),
            running: RunningIndex::default(),
        })
    }

    /// Places and starts `task` if its shape fits now and its quota allows.
    fn try_start(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId) -> Placed {
        place_and_start(view, plan, self.placer, &mut self.waiting, task)
    }

    /// Preempts longer-running tasks until `task` (with `remaining` work) fits, and starts it.
    fn preempt_for(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId, remaining: Key) -> bool {
        let shape = Shape::of(view.task(task));
        let deadline = view.now() + SimDuration(remaining);
        for pool in shape.pools.iter() {
            // Longest remaining first, only while the victim has more left than `task`: one
            // walk down the pool's index (it changes only once the task has started).
            let longer = || self.running.in_pool(pool).rev().take_while(|&(end, _)| end > deadline);
            if !self.could_free_enough(view, plan, shape, pool, longer()) {
                continue;
            }
            let savepoint = plan.savepoint();
            let mut preempted = Vec::new();
            let longer = longer();
            let mut started = false;
            for (_, victim) in longer {
                // A victim already reclaimed by its queue's quota in this plan is not one again.
                if !plan.is_decided(victim) && plan.preempt(victim).is_ok() {
                    preempted.push(victim);
                }
                if shape.fits_in(pool, plan.free())
                    && place_and_start(view, plan, self.placer, &mut self.waiting, task).started().is_some()
                {
                    started = true;
                    break;
                }
            }
            if started {
                // Victims wait again at once, so the fill pass can restart them on GPUs
                // that are free now instead of leaving those idle until the next event.
                for &v in &preempted {
                    self.running.remove(v);
                    let remaining = view.expected_remaining(v, self.source).as_ms();
                    self.waiting.insert(v, remaining, Shape::of(view.task(v)));
                }
                return true;
            }
            plan.rollback(savepoint);
        }
        false
    }
}

impl Srtf {
    /// Whether preempting `victims` could free as many whole GPUs in `pool` as `shape` needs
    /// (a share, or a gang that counts fit but not the nodes, is left to the walk). Read
    /// until enough, so it costs what the walk would when the walk succeeds, and spares a
    /// pool that cannot work its preemptions and their rollback.
    fn could_free_enough(
        &self,
        view: &ClusterView<'_>,
        plan: &Plan<'_>,
        shape: Shape,
        pool: sim::PoolId,
        victims: impl Iterator<Item = (sim::SimTime, TaskId)>,
    ) -> bool {
        let needed = shape.gpus.saturating_sub(plan.free().in_pool(pool));
        if shape.is_share() || needed == 0 {
            return true;
        }
        let mut freed = 0u32;
        victims.filter(|&(_, v)| !plan.is_decided(v)).any(|(_, v)| {
            freed = freed.saturating_add(view.task(v).gpus);
            freed >= needed
        })
    }
}

impl Policy for Srtf {
    fn name(&self) -> &str {
        &self.name
    }

    fn needs_estimates(&self) -> bool {
        self.source == DurationSource::Estimate
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let source = self.source;
        sync_waiting(view, &mut self.waiting, |t| view.expected_remaining(t, source).as_ms());
        self.running.sync(view, source);
        while let Some((remaining, task)) = self.waiting.head() {
            let placed = self.try_start(view, plan, task);
            if placed == Placed::NoRoom && !self.preempt_for(view, plan, task, remaining) {
                break;
            }
        }
        let mut aside = Aside::new();
        while !nothing_fits(view.cluster(), plan.free())
            && let Some((_, task)) = self.waiting.first_fitting(plan.free())
        {
            if self.try_start(view, plan, task) == Placed::NoRoom
                && !pass_over(plan, &mut self.waiting, task, &mut aside)
            {
                break; // unreachable: a shape that fits has a placement
            }
        }
        put_back(&mut self.waiting, aside);
    }
}
