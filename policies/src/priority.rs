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
use std::collections::BTreeMap;

pub const PARAMS: &[ParamInfo] = &[PLACEMENT, AVOID_FAILED];

/// Higher priority, smaller key.
fn key(priority: i32) -> Key {
    (i64::from(i32::MAX) - i64::from(priority)) as Key
}

pub struct Priority {
    name: String,
    placer: Placer,
    waiting: WaitQueue,
    /// Running tasks (committed) by pool and priority.
    running: Running,
}

/// Running tasks per pool and priority, in no order within a priority: a preemption sorts
/// its victims itself. Starts and ends cost O(log priorities): `IdList`'s dense lists, the
/// last item taking the place of one removed, with one table of places for all of them (a
/// table per list would multiply with the priorities a trace uses). A set ordered by
/// (priority, task) cost a walk down a tree of every running task at each start and end:
/// 11 % of a run at 100,000 GPUs.
#[derive(Debug, Default)]
struct Running {
    lists: Vec<BTreeMap<i32, Vec<TaskId>>>,
    /// Each running task's pool, priority and place in its list.
    at: IdTable<RunningAt>,
}

#[derive(Debug, Clone, Copy)]
struct RunningAt {
    pool: PoolId,
    priority: i32,
    index: u32,
}

impl Running {
    /// `task` runs in `pool` at `priority` (moved there if it was indexed elsewhere).
    fn insert(&mut self, task: TaskId, pool: PoolId, priority: i32) {
        self.remove(task);
        if self.lists.len() <= pool.index() {
            self.lists.resize_with(pool.index() + 1, BTreeMap::new);
        }
        let list = self.lists[pool.index()].entry(priority).or_default();
        let index = u32::try_from(list.len()).expect("fewer running tasks than u32::MAX");
        list.push(task);
        self.at.insert(task.index(), RunningAt { pool, priority, index });
    }

    /// Forgets `task` if indexed: the last of its list takes its place.
    fn remove(&mut self, task: TaskId) {
        let Some(RunningAt { pool, priority, index }) = self.at.remove(task.index()) else { return };
        let list = self.lists[pool.index()].get_mut(&priority).expect("an indexed task is listed");
        list.swap_remove(index as usize);
        if let Some(&moved) = list.get(index as usize) {
            self.at.insert(moved.index(), RunningAt { pool, priority, index });
        }
    }

    /// The tasks running in `pool` at a priority below `priority`, each with its priority.
    fn below(&self, pool: PoolId, priority: i32) -> impl Iterator<Item = (i32, TaskId)> + '_ {
        let lists = self.lists.get(pool.index()).into_iter().flat_map(move |by| by.range(..priority));
        lists.flat_map(|(&p, list)| list.iter().map(move |&task| (p, task)))
    }
}

impl Priority {
    pub fn new(params: &Params) -> Result<Priority, SpecError> {
        let placer = Placer::from_params(params)?;
        Ok(Priority {
            name: format!("priority[{placer}]"),
            placer,
            waiting: WaitQueue::default(),
            running: Running::default(),
        })
    }

    fn priority(view: &ClusterView<'_>, task: TaskId) -> i32 {
        view.job_spec(view.task(task).job).priority
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
                        self.running.insert(t, view.cluster().pool_of(gpu), Self::priority(view, t));
                    }
                }
                Change::TaskPreempted(t) | Change::TaskFinished(t) | Change::TaskFailed(t) => self.running.remove(t),
                Change::TaskReady(_) => {}
                Change::JobEnded(job) => view.job(job).tasks().for_each(|t| self.running.remove(t)),
            }
        }
    }

    /// Preempts running tasks of lower priority than `task`'s until it fits in one of its
    /// pools, and starts it there. Nothing changes if no pool works.
    fn preempt_for(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>, task: TaskId) -> bool {
        let shape = Shape::of(view.task(task));
        let priority = Self::priority(view, task);
        for pool in shape.pools.iter() {
            let mut victims: Vec<(i32, SimDuration, TaskId)> = self
                .running
                .below(pool, priority)
                .filter(|&(_, v)| !plan.is_decided(v))
                .map(|(p, v)| (p, view.work_at_risk(v), v))
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
                        self.running.remove(v);
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

#[cfg(test)]
mod tests {
    use super::Running;
    use sim::{PoolId, TaskId};

    fn below(running: &Running, pool: u32, priority: i32) -> Vec<(i32, TaskId)> {
        let mut tasks: Vec<_> = running.below(PoolId(pool), priority).collect();
        tasks.sort_unstable();
        tasks
    }

    #[test]
    fn the_index_follows_starts_moves_and_ends() {
        let mut running = Running::default();
        for (task, pool, priority) in [(1, 0, 5), (2, 0, 5), (3, 0, 5), (4, 0, 1), (5, 1, 1), (6, 0, 9)] {
            running.insert(TaskId(task), PoolId(pool), priority);
        }
        let t = TaskId;
        assert_eq!(below(&running, 0, 9), [(1, t(4)), (5, t(1)), (5, t(2)), (5, t(3))]);
        assert_eq!(below(&running, 0, 5), [(1, t(4))]);
        assert_eq!(below(&running, 0, 1), []);
        assert_eq!(below(&running, 1, 2), [(1, t(5))]);
        assert_eq!(below(&running, 2, 99), []);
        // The first of a list goes: the last takes its place, and is still found and removable.
        running.remove(t(1));
        running.remove(t(3));
        assert_eq!(below(&running, 0, 9), [(1, t(4)), (5, t(2))]);
        running.remove(t(2));
        running.remove(t(2));
        // A task indexed again moves (to another pool and priority).
        running.insert(t(4), PoolId(1), 0);
        assert_eq!(below(&running, 0, 10), [(9, t(6))]);
        assert_eq!(below(&running, 1, 2), [(0, t(4)), (1, t(5))]);
        for task in [4, 5, 6] {
            running.remove(t(task));
        }
        assert!(running.at.is_empty());
        assert!(running.lists.iter().flat_map(|by| by.values()).all(Vec::is_empty));
    }
}
