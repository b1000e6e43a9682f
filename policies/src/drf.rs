//! `drf`: Dominant Resource Fairness across queues (Ghodsi, Zaharia, Hindman, Konwinski,
//! Shenker, Stoica, "Dominant Resource Fairness: Fair Allocation of Multiple Resource Types",
//! NSDI 2011), with each pool's GPUs (one GPU type) as a resource.
//!
//! A queue's dominant share is the largest, over pools, of the GPUs it holds in that pool over
//! the pool's GPUs (all of them, healthy or not), divided by its `weight` (the paper's weighted
//! DRF). Each next start goes to the queue with the smallest dominant share (progressive
//! filling), compared exactly as fractions by cross-multiplication; ties go to the higher queue
//! `priority`, then the lower queue id. A queue holding 2 of a 2-GPU pool has share 1 even while it holds
//! nothing of a 64-GPU pool, so a scarce GPU type counts for what it is. Within a queue, and
//! for quotas, parking, reclaiming and the case without queues, as `fair-share` (greedy, no
//! reservation; see `queue_share`).
//!
//! Parameters: `order=fifo|sjf`, `duration=oracle|estimate` (read only with `order=sjf`),
//! `placement`, `avoid_failed_h`.
//!
//! Usage per (queue, pool) is kept incrementally: running tasks enter on `TaskStarted` and on
//! this policy's own starts, and leave when they stop (preempted, finished, failed, or
//! preempted by a reclaim in this very plan); each task is counted at most once.
//!
//! Decision cost (see `queue_share`), for Q queues with waiting tasks and P pools: O(1) per
//! change, then O(shapes x log n) when nothing waiting fits; otherwise O(Q x P + Q log Q) to
//! rank the queues, then O(P + Q + shapes x log n) per start and per queue found with nothing
//! that fits.

use crate::id_table::IdTable;
use crate::params::{AVOID_FAILED, PLACEMENT, ParamInfo, Params, SpecError};
use crate::placement::Placer;
use crate::queue_share::{ORDER, Order, PerQueue, SJF_DURATION, Share, Shares};
use sim::{Change, ClusterView, Decision, Plan, Policy, PoolId, QueueId, TaskId};

pub const PARAMS: &[ParamInfo] = &[ORDER, SJF_DURATION, PLACEMENT, AVOID_FAILED];

pub struct Drf {
    name: String,
    order: Order,
    placer: Placer,
    queues: PerQueue,
    usage: PoolUsage,
}

impl Drf {
    pub fn new(params: &Params) -> Result<Drf, SpecError> {
        let order = Order::from_params(params)?;
        let placer = Placer::from_params(params)?;
        Ok(Drf {
            name: format!("drf[{},{placer}]", order.spec()),
            order,
            placer,
            queues: PerQueue::default(),
            usage: PoolUsage::default(),
        })
    }
}

/// Milli-GPUs each queue holds in each pool.
#[derive(Debug, Default)]
struct PoolUsage {
    /// `[queue][pool]`.
    mgpus: Vec<Vec<u64>>,
    /// What each counted task adds, by task id (the tasks counted now).
    counted: IdTable<(QueueId, PoolId, u64)>,
}

impl PoolUsage {
    fn add(&mut self, view: &ClusterView<'_>, task: TaskId, pool: PoolId) {
        self.remove(task);
        let t = view.task(task);
        let Some(queue) = view.queue_of(t.job) else { return };
        if self.mgpus.len() < view.queues().len() {
            self.mgpus.resize(view.queues().len(), vec![0; view.cluster().pools().len()]);
        }
        self.mgpus[queue.index()][pool.index()] += t.mgpus();
        self.counted.insert(task.index(), (queue, pool, t.mgpus()));
    }

    fn remove(&mut self, task: TaskId) {
        if let Some((queue, pool, mgpus)) = self.counted.remove(task.index()) {
            self.mgpus[queue.index()][pool.index()] -= mgpus;
        }
    }

    fn sync(&mut self, view: &ClusterView<'_>) {
        for change in view.changes() {
            match *change {
                Change::TaskStarted(t) => {
                    if let Some(&gpu) = view.task(t).placed.first() {
                        self.add(view, t, view.cluster().pool_of(gpu));
                    }
                }
                Change::TaskPreempted(t) | Change::TaskFinished(t) | Change::TaskFailed(t) => self.remove(t),
                Change::JobEnded(job) => view.job(job).tasks().for_each(|t| self.remove(t)),
                Change::TaskReady(_) => {}
            }
        }
    }
}

impl Shares for PoolUsage {
    /// max over pools of (held / pool GPUs), over the weight.
    fn share(&self, view: &ClusterView<'_>, plan: &Plan<'_>, queue: QueueId) -> Share {
        let weight = u128::from(view.queues().get(queue).weight);
        let held = self.mgpus.get(queue.index()).map_or(&[][..], Vec::as_slice);
        // Invariant: the per-pool index agrees with the plan's own count of the queue's GPUs.
        debug_assert_eq!(
            held.iter().sum::<u64>(),
            plan.quota().used_mgpus(queue),
            "drf's usage of queue {queue:?} by pool {held:?} disagrees with the plan's quota usage at {}",
            view.now()
        );
        let mut dominant = Share::new(0, 1);
        for (pool, &mgpus) in view.cluster().pools().iter().zip(held) {
            let capacity = u128::from(pool.gpu_count().max(1)) * 1000;
            let share = Share::new(u128::from(mgpus), capacity);
            if share.cmp_exact(dominant).is_gt() {
                dominant = share;
            }
        }
        Share::new(dominant.num, dominant.den * weight)
    }

    fn note(&mut self, view: &ClusterView<'_>, plan: &Plan<'_>, from: usize) {
        for decision in &plan.decisions()[from..] {
            match decision {
                Decision::Start { task, gpus } => self.add(view, *task, view.cluster().pool_of(gpus[0])),
                Decision::Preempt { task, .. } => self.remove(*task),
                Decision::Reject { .. } | Decision::WakeAt(_) => {}
            }
        }
    }
}

impl Policy for Drf {
    fn name(&self) -> &str {
        &self.name
    }

    fn needs_estimates(&self) -> bool {
        self.order.needs_estimates()
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let order = self.order;
        self.usage.sync(view);
        self.queues.sync(view, |t| order.key(view, t));
        self.queues.fill(view, plan, self.placer, &mut self.usage);
    }
}
