//! Running tasks per pool, ordered by when they are expected to end. Used by srtf (who has the
//! most work left, to preempt) and by easy-backfill (when GPUs come back, for the reservation).
//! Expected ends are fixed at start time: tasks all progress at the same rate, so the order by
//! end time is the order by remaining work and needs no updating as time passes.

use crate::id_table::IdTable;
use sim::{Change, ClusterView, DurationSource, PoolId, SimTime, TaskId};
use std::collections::BTreeSet;

/// Running tasks per pool by expected end: follow the view with [`RunningIndex::sync`],
/// and add the tasks a decision starts with [`RunningIndex::insert_started`].
#[derive(Debug, Default)]
pub struct RunningIndex {
    by_pool: Vec<BTreeSet<(SimTime, TaskId)>>,
    /// Each indexed task's key, for the tasks running (not a slot for every task of the run).
    entry: IdTable<(SimTime, PoolId)>,
}

impl RunningIndex {
    /// Applies the view's changes: started tasks enter, preempted, finished and failed ones leave.
    pub fn sync(&mut self, view: &ClusterView<'_>, source: DurationSource) {
        for change in view.changes() {
            match *change {
                Change::TaskStarted(t) => self.insert(view, t, source),
                Change::TaskPreempted(t) | Change::TaskFinished(t) | Change::TaskFailed(t) => self.remove(t),
                Change::TaskReady(_) | Change::JobEnded(_) => {}
            }
        }
    }

    /// Indexes a task that is running (or was just started by this plan on `gpus`).
    pub fn insert(&mut self, view: &ClusterView<'_>, task: TaskId, source: DurationSource) {
        let t = view.task(task);
        let Some(&first_gpu) = t.placed.first() else { return };
        let end = view.expected_end(task, source);
        self.insert_at(task, view.cluster().pool_of(first_gpu), end);
    }

    /// Indexes a task this plan just started on `gpus` (the view still shows it waiting).
    pub fn insert_started(
        &mut self,
        view: &ClusterView<'_>,
        task: TaskId,
        gpus: &[sim::GpuId],
        source: DurationSource,
    ) {
        let pool = view.cluster().pool_of(gpus[0]);
        self.insert_at(task, pool, view.expected_end_if_started(task, source));
    }

    /// Indexes `task` in `pool`, expected to end at `end` (a task already indexed moves).
    pub fn insert_at(&mut self, task: TaskId, pool: PoolId, end: SimTime) {
        // Indexed so already: easy-backfill indexes its starts at once, and the next decision's
        // changes name them again.
        if self.entry.get(task.index()) == Some((end, pool)) {
            return;
        }
        self.remove(task);
        if self.by_pool.len() <= pool.index() {
            self.by_pool.resize_with(pool.index() + 1, BTreeSet::new);
        }
        self.by_pool[pool.index()].insert((end, task));
        self.entry.insert(task.index(), (end, pool));
    }

    /// Forgets `task` if indexed.
    pub fn remove(&mut self, task: TaskId) {
        if let Some((end, pool)) = self.entry.remove(task.index()) {
            self.by_pool[pool.index()].remove(&(end, task));
        }
    }

    /// Running tasks of `pool`, soonest expected end first.
    pub fn in_pool(&self, pool: PoolId) -> impl DoubleEndedIterator<Item = (SimTime, TaskId)> + '_ {
        self.by_pool.get(pool.index()).into_iter().flat_map(|set| set.iter().copied())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tasks(index: &RunningIndex, pool: u32) -> Vec<(SimTime, TaskId)> {
        index.in_pool(PoolId(pool)).collect()
    }

    #[test]
    fn a_task_indexed_again_is_listed_once_at_its_latest_end() {
        let mut index = RunningIndex::default();
        index.insert_at(TaskId(3), PoolId(0), SimTime(50));
        index.insert_at(TaskId(1), PoolId(0), SimTime(70));
        // Again with the same key (a start indexed at once, then named by the changes): once.
        index.insert_at(TaskId(3), PoolId(0), SimTime(50));
        assert_eq!(tasks(&index, 0), [(SimTime(50), TaskId(3)), (SimTime(70), TaskId(1))]);
        // A new expected end, then a new pool: it moves.
        index.insert_at(TaskId(3), PoolId(0), SimTime(90));
        assert_eq!(tasks(&index, 0), [(SimTime(70), TaskId(1)), (SimTime(90), TaskId(3))]);
        index.insert_at(TaskId(3), PoolId(1), SimTime(90));
        assert_eq!(tasks(&index, 0), [(SimTime(70), TaskId(1))]);
        assert_eq!(tasks(&index, 1), [(SimTime(90), TaskId(3))]);
        index.remove(TaskId(3));
        index.remove(TaskId(3));
        assert_eq!(tasks(&index, 1), []);
    }
}
