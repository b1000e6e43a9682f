//! Smallest gang first, with an age limit: a policy written outside schedlab's workspace with
//! its policy kit (`policies::tracking`, `wait_queue`, `placement`, `params`).
//!
//! Waiting tasks start smallest gang first (GPUs x share of each GPU; ties in arrival order),
//! greedily: whenever GPUs are free, the smallest waiting task that fits starts. Small jobs
//! get through quickly, but a big gang could wait forever behind a stream of small ones, so a
//! task whose job was submitted more than `starve_after_s` ago goes first, in arrival order,
//! and blocks every other start until it fits (as strict FIFO's head does).
//!
//! Parameters: `starve_after_s` (seconds, default 3600), `placement` and `avoid_failed_h` (as
//! every built-in). Decision cost: O((starts + 1) x shapes x log n).

use policies::tracking::{Placed, place_and_start, sync_waiting};
use policies::wait_queue::WaitQueue;
use policies::{Params, Placer, SpecError};
use sim::{ClusterView, Plan, Policy, SimDuration, TaskId};

/// Builds the policy from its spec's parameters (what `Registry::with` registers).
pub fn build(params: &Params) -> Result<Box<dyn Policy + Send>, SpecError> {
    let starve_after_s: u64 = params.get_or("starve_after_s", 3600)?;
    let placer = Placer::from_params(params)?;
    Ok(Box::new(SmallestGangFirst {
        name: format!("{}[starve_after_s={starve_after_s},{placer}]", params.policy),
        starve_after: SimDuration::from_secs(starve_after_s),
        placer,
        by_size: WaitQueue::default(),
        by_arrival: WaitQueue::default(),
    }))
}

/// The policy's state: the same waiting tasks in two orders.
pub struct SmallestGangFirst {
    name: String,
    starve_after: SimDuration,
    placer: Placer,
    by_size: WaitQueue,
    by_arrival: WaitQueue,
}

impl SmallestGangFirst {
    /// Starts `task` if it fits, taking it off both queues. `NoRoom` when it does not fit.
    fn start(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId, overdue: bool) -> Placed {
        let (queue, other) =
            if overdue { (&mut self.by_arrival, &mut self.by_size) } else { (&mut self.by_size, &mut self.by_arrival) };
        let placed = place_and_start(view, plan, self.placer, queue, task);
        if placed.started().is_some() {
            other.remove(task);
        }
        placed
    }
}

impl Policy for SmallestGangFirst {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        sync_waiting(view, &mut self.by_size, |t| u64::from(view.task(t).gpus) * u64::from(view.task(t).milli));
        sync_waiting(view, &mut self.by_arrival, |_| 0);
        // Overdue tasks first, oldest first; one that does not fit holds every start back.
        while let Some((_, oldest)) = self.by_arrival.head() {
            let submitted = view.job_spec(view.task(oldest).job).submit;
            if view.now() < submitted + self.starve_after {
                break;
            }
            if self.start(view, plan, oldest, true) == Placed::NoRoom {
                return;
            }
        }
        while let Some((_, task)) = self.by_size.first_fitting(plan.free()) {
            if self.start(view, plan, task, false) == Placed::NoRoom {
                return; // unreachable: a task whose shape fits has a placement
            }
        }
    }
}

#[cfg(test)]
mod tests;
