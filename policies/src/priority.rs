//! `priority`: strict priority with preemption, by the job's `priority` (`JobSpec.priority`,
//! the canonical trace's `priority` column: higher is more urgent, default 0), as the
//! priority-preemption schedulers of Slurm (`PreemptType=preempt/qos`) and Kubernetes
//! (`PriorityClass` preemption).
//!
//! Waiting tasks go in decreasing priority, FIFO (arrival order) within a priority. Each
//! starts if it fits; if not, running tasks of *strictly lower* priority in one of its pools
//! are preempted until it fits: the lowest priority first and, within a priority, those that
//! lose the least work since their last checkpoint first (`ClusterView::work_at_risk`), ties
//! on task id. Each preemption says why in the decision log (both priorities, the work lost
//! and among how many eligible victims). If even all of them would not make room, nothing is
//! preempted and the preemptive pass ends there (a blocked urgent gang is not bypassed by
//! less urgent preemptions). Then waiting tasks that fit fill the free GPUs in priority
//! order. Victims wait again at once, and may restart elsewhere in the same decision.
//! Tasks of equal priority never preempt each other.
//!
//! Decision cost: O((starts + 1) x shapes x log n) plus, for the one task per decision that
//! triggers preemption, O(r log r) over the r lower-priority running tasks of its pools.

use crate::id_table::IdTable;
use crate::params::{AVOID_FAILED, PLACEMENT, ParamInfo, Params, SpecError};
use crate::placement::{Placer, Shape};
use crate::tracking::{Aside, Placed, pass_over, place_and_start, put_back, sync_waiting};
use crate::wait_queue::{Key, WaitQueue};
use sim::{Change, ClusterView, Plan, Policy, PoolId, SimDuration, TaskId, TaskStatus};
use std::collections::BTreeSet;

pub const PARAMS: &[ParamInfo] = &[PLACEMENT, AVOID_FAILED];

/// Higher priority, smaller key.
fn key(priority: i32) -> Key {
    (i64::from(i32::MAX) - i64::from(priority)) as Key
}

pub struct Priority {
    name: String,
    placer: Placer,
    waiting: WaitQueue,
    /// Running tasks (committed) per pool by (priority, task).
    running: Vec<BTreeSet<(i32, TaskId)>>,
    /// Each running task's pool and priority.
    running_at: IdTable<(PoolId, i32)>,
}

impl Priority {
    pub fn new(params: &Params) -> Result<Priority, SpecError> {
        let placer = Placer::from_params(params)?;
        Ok(Priority {
            name: format!("priority[{placer}]"),
            placer,
            waiting: WaitQueue::default(),
            running: Vec::new(),
            running_at: IdTable::default(),
        })
    }

    fn priority(view: &ClusterView<'_>, task: TaskId) -> i32 {
        view.job_spec(view.task(task).job).priority
    }

    fn insert_running(&mut self, task: TaskId, pool: PoolId, priority: i32) {
        self.remove_running(task);
        if self.running.len() <= pool.index() {
            self.running.resize_with(pool.index() + 1, BTreeSet::new);
        }
        self.running[pool.index()].insert((priority, task));
        self.running_at.insert(task.index(), (pool, priority));
    }

    fn remove_running(&mut self, task: TaskId) {
        if let Some((pool, priority)) = self.running_at.remove(task.index()) {
            self.running[pool.index()].remove(&(priority, task));
        }
    }

    fn sync(&mut self, view: &ClusterView<'_>) {
        sync_waiting(view, &mut self.waiting, |t| key(Self::priority(view, t)));
        for change in view.changes() {
            match *change {
                Change::TaskStarted(t) => {
                    let task = view.task(t);
                    if task.status == TaskStatus::Running
                        && let Some(&gpu) = task.placed.first()
                    {
                        self.insert_running(t, view.cluster().pool_of(gpu), Self::priority(view, t));
                    }
                }
                Change::TaskPreempted(t) | Change::TaskFinished(t) | Change::TaskFailed(t) => self.remove_running(t),
                Change::TaskReady(_) => {}
                Change::JobEnded(job) => view.job(job).tasks().for_each(|t| self.remove_running(t)),
            }
        }
    }

    /// Preempts running tasks of lower priority than `task`'s until it fits in one of its
    /// pools, and starts it there. Nothing changes if no pool works.
    fn preempt_for(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId) -> bool {
        let shape = Shape::of(view.task(task));
        let priority = Self::priority(view, task);
        for pool in shape.pools.iter() {
            let Some(set) = self.running.get(pool.index()) else { continue };
            let mut victims: Vec<(i32, SimDuration, TaskId)> = set
                .range(..(priority, TaskId(0)))
                .filter(|&&(_, v)| !plan.is_decided(v))
                .map(|&(p, v)| (p, view.work_at_risk(v), v))
                .collect();
            if !shape.is_share() {
                let could_free: u64 = victims.iter().map(|&(_, _, v)| u64::from(view.task(v).gpus)).sum();
                if u64::from(plan.free().in_pool(pool)) + could_free < u64::from(shape.gpus) {
                    continue;
                }
            }
            victims.sort_unstable();
            let savepoint = plan.savepoint();
            let mut preempted = Vec::new();
            for &(victim_priority, at_risk, victim) in &victims {
                let eligible = victims.partition_point(|v| v.0 <= victim_priority)
                    - victims.partition_point(|v| v.0 < victim_priority);
                let reason = format!(
                    "priority: {task} (priority {priority}) preempts priority {victim_priority}; loses {:.3} s of \
                     work since its last checkpoint, the least of {eligible} eligible at that priority",
                    at_risk.as_secs_f64()
                );
                if plan.preempt_for(victim, reason).is_err() {
                    continue;
                }
                preempted.push(victim);
                if shape.fits_in(pool, plan.free())
                    && place_and_start(view, plan, self.placer, &mut self.waiting, task).started().is_some()
                {
                    for v in preempted {
                        self.remove_running(v);
                        self.waiting.insert(v, key(Self::priority(view, v)), Shape::of(view.task(v)));
                    }
                    return true;
                }
            }
            plan.rollback(savepoint);
        }
        false
    }
}

impl Policy for Priority {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        self.sync(view);
        while let Some((_, task)) = self.waiting.head() {
            let placed = place_and_start(view, plan, self.placer, &mut self.waiting, task);
            if placed == Placed::NoRoom && !self.preempt_for(view, plan, task) {
                break;
            }
        }
        let mut aside = Aside::new();
        while let Some((_, task)) = self.waiting.first_fitting(plan.free()) {
            if place_and_start(view, plan, self.placer, &mut self.waiting, task) == Placed::NoRoom
                && !pass_over(plan, &mut self.waiting, task, &mut aside)
            {
                break; // unreachable: a shape that fits has a placement
            }
        }
        put_back(&mut self.waiting, aside);
    }
}
