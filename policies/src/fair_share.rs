//! `fair-share`: weighted fair share across queues, as the fair-share schedulers of Hadoop
//! (YARN's Fair Scheduler) and Slurm (its fair-share factor, Jackson et al., "Core Algorithms of
//! the Maui Scheduler", JSSPP 2001) share a cluster among teams.
//!
//! Each next start goes to the queue with the smallest *allocated GPUs / weight* (milli-GPUs
//! held now, including this decision's starts, over the queue's `weight`), compared exactly by
//! cross-multiplication; ties go to the higher queue `priority`, then the lower queue id. Within
//! a queue, tasks go in arrival order (`order=fifo`) or shortest expected duration first
//! (`order=sjf`, with `duration=oracle|estimate` as sjf). The pass is greedy: a queue's first
//! task that fits starts (BestEffortFIFO, in Kueue's words), so a queue whose head does not fit
//! neither blocks itself nor the others; nothing is reserved for big tasks. Queue caps hold
//! (quota-blocked tasks are parked until their queue has room), and the neediest queue whose
//! head is within its GPU cap may reclaim GPUs other queues borrowed. Without queues it is
//! greedy `fifo[skip=true]` (or `sjf` with `order=sjf`).
//!
//! Parameters: `order=fifo|sjf`, `duration=oracle|estimate` (read only with `order=sjf`),
//! `placement`, `avoid_failed_h`.
//!
//! Decision cost (see `queue_share`): O(shapes x log n) when nothing waiting fits; otherwise
//! O(Q log Q) to rank the Q queues with waiting tasks, then O(Q + shapes x log n) per start and
//! per queue found with nothing that fits. A share is one read of the plan's quota usage.

use crate::params::{AVOID_FAILED, PLACEMENT, ParamInfo, Params, SpecError};
use crate::placement::Placer;
use crate::queue_share::{ORDER, Order, PerQueue, SJF_DURATION, Share, Shares};
use sim::{ClusterView, Plan, Policy, QueueId};

pub const PARAMS: &[ParamInfo] = &[ORDER, SJF_DURATION, PLACEMENT, AVOID_FAILED];

pub struct FairShare {
    name: String,
    order: Order,
    placer: Placer,
    queues: PerQueue,
}

impl FairShare {
    pub fn new(params: &Params) -> Result<FairShare, SpecError> {
        let order = Order::from_params(params)?;
        let placer = Placer::from_params(params)?;
        Ok(FairShare {
            name: format!("fair-share[{},{placer}]", order.spec()),
            order,
            placer,
            queues: PerQueue::default(),
        })
    }
}

/// Allocated milli-GPUs over the queue's weight.
struct Allocated;

impl Shares for Allocated {
    fn share(&self, view: &ClusterView<'_>, plan: &Plan<'_>, queue: QueueId) -> Share {
        let weight = view.queues().get(queue).weight;
        Share::new(u128::from(plan.quota().used_mgpus(queue)), u128::from(weight))
    }
}

impl Policy for FairShare {
    fn name(&self) -> &str {
        &self.name
    }

    fn needs_estimates(&self) -> bool {
        self.order.needs_estimates()
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let order = self.order;
        self.queues.sync(view, |t| order.key(view, t));
        self.queues.fill(view, plan, self.placer, &mut Allocated);
    }
}
