//! The tasks this policy started that still run, by task id: every end, start and change of
//! a running task looks its task up, and at 100,000 GPUs a tree of them (a `BTreeMap`) cost
//! a tenth of a `slurm` run in its searches. Here an id finds its task's place in a paged
//! table ([`IdTable`]) and the tasks lie side by side in one list, so that a table costs 8
//! bytes an id of the span of ids running, not a task's whole record.

use super::Running;
use crate::id_table::IdTable;
use sim::TaskId;

#[derive(Default)]
pub(super) struct RunningTasks {
    /// Each running task's place in `runs`.
    place: IdTable<u32>,
    /// The running tasks in no order (an end moves the last into the hole it leaves).
    runs: Vec<(TaskId, Running)>,
}

impl RunningTasks {
    pub fn get(&self, task: TaskId) -> Option<&Running> {
        let place = self.place.get(task.index())?;
        Some(&self.runs[place as usize].1)
    }

    pub fn contains(&self, task: TaskId) -> bool {
        self.place.contains(task.index())
    }

    pub fn is_empty(&self) -> bool {
        self.runs.is_empty()
    }

    /// Sets `task`'s run, returning the one it replaces.
    pub fn insert(&mut self, task: TaskId, run: Running) -> Option<Running> {
        if let Some(place) = self.place.get(task.index()) {
            return Some(std::mem::replace(&mut self.runs[place as usize].1, run));
        }
        let place = u32::try_from(self.runs.len()).expect("fewer than 2^32 tasks run at once");
        self.place.insert(task.index(), place);
        self.runs.push((task, run));
        None
    }

    /// Takes `task`'s run out.
    pub fn remove(&mut self, task: TaskId) -> Option<Running> {
        let place = self.place.remove(task.index())? as usize;
        let (_, run) = self.runs.swap_remove(place);
        if let Some(&(moved, _)) = self.runs.get(place) {
            self.place.insert(moved.index(), place as u32);
        }
        Some(run)
    }

    /// The running tasks in task id order (the order of the tree they were kept in: sums
    /// over them add in the same order, so the same bits).
    pub fn iter(&self) -> impl Iterator<Item = (TaskId, &Running)> {
        self.place.iter().map(|(_, place)| {
            let (task, run) = &self.runs[place as usize];
            (*task, run)
        })
    }

    pub fn values(&self) -> impl Iterator<Item = &Running> {
        self.iter().map(|(_, run)| run)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{JobId, SimTime};
    use std::collections::BTreeMap;

    fn run(job: u32) -> Running {
        Running { job: JobId(job), parts: Default::default(), start: SimTime(u64::from(job)), expected_end: SimTime(0) }
    }

    /// Starts, restarts and ends in any order leave what a tree by task id holds, and it walks
    /// them in the tree's order.
    #[test]
    fn holds_and_walks_what_a_tree_by_task_id_does() {
        let mut next = super::super::test_draws(0x5851_f42d_4c95_7f2d_u64);
        for _ in 0..200 {
            let (mut table, mut tree) = (RunningTasks::default(), BTreeMap::new());
            for step in 0..300 {
                let task = TaskId(next(2_000) as u32);
                if next(3) == 0 {
                    assert_eq!(table.remove(task).map(|r| r.job), tree.remove(&task).map(|r: Running| r.job));
                } else {
                    let old = (table.insert(task, run(step)), tree.insert(task, run(step)));
                    assert_eq!(old.0.map(|r| r.job), old.1.map(|r| r.job));
                }
                assert_eq!(table.contains(task), tree.contains_key(&task));
                assert_eq!(table.get(task).map(|r| r.job), tree.get(&task).map(|r| r.job));
            }
            let walked: Vec<(TaskId, JobId)> = table.iter().map(|(t, r)| (t, r.job)).collect();
            let expected: Vec<(TaskId, JobId)> = tree.iter().map(|(&t, r)| (t, r.job)).collect();
            assert_eq!(walked, expected);
            assert_eq!(table.is_empty(), tree.is_empty());
        }
    }
}
