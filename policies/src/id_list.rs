//! Values by task id for the tasks that have one, listed in no particular order.
//!
//! A policy that keeps a value per running task and reads them all at once (themis' victims
//! at a round) needs neither an order nor a lookup by range: an ordered map paid a tree
//! descent, and its node upkeep, on every start and stop. Here a task's value sits in a dense
//! list, found through an [`IdTable`] of positions: insertion and removal are O(1) (the last
//! item takes the place of one removed), and reading all of them is a walk of one `Vec`.
//!
//! The listing order depends only on the sequence of insertions and removals, so it is
//! deterministic, but it is not the task order: a reader must not let it decide anything
//! (sort, or use keys that are unique, as a heap of (rho, task) is). A reader that needs the
//! task order (sums that must add in the same order) walks [`IdList::by_task`].

use crate::id_table::IdTable;
use sim::TaskId;

#[derive(Debug)]
pub struct IdList<T> {
    items: Vec<(TaskId, T)>,
    /// Each listed task's position in `items`.
    position: IdTable<u32>,
}

impl<T> Default for IdList<T> {
    fn default() -> Self {
        IdList { items: Vec::new(), position: IdTable::default() }
    }
}

impl<T> IdList<T> {
    /// Sets `task`'s value, returning the one it replaces.
    pub fn insert(&mut self, task: TaskId, value: T) -> Option<T> {
        match self.position.get(task.index()) {
            Some(at) => Some(std::mem::replace(&mut self.items[at as usize].1, value)),
            None => {
                let at = u32::try_from(self.items.len()).expect("fewer than 2^32 tasks listed");
                self.position.insert(task.index(), at);
                self.items.push((task, value));
                None
            }
        }
    }

    pub fn get(&self, task: TaskId) -> Option<&T> {
        let at = self.position.get(task.index())?;
        Some(&self.items[at as usize].1)
    }

    /// Asks the processor to start loading `task`'s value (a hint: it reads where the value
    /// lies, and changes nothing).
    #[inline]
    pub fn prefetch(&self, task: TaskId) {
        if let Some(at) = self.position.get(task.index()) {
            sim::prefetch::prefetch(&self.items[at as usize]);
        }
    }

    pub fn contains(&self, task: TaskId) -> bool {
        self.position.contains(task.index())
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Every listed task with its value, in task order: a walk over the pages of positions.
    pub fn by_task(&self) -> impl Iterator<Item = (TaskId, &T)> + '_ {
        self.position.iter().map(|(_, at)| {
            let (task, value) = &self.items[at as usize];
            (*task, value)
        })
    }

    /// Takes `task`'s value out, if it has one.
    pub fn remove(&mut self, task: TaskId) -> Option<T> {
        let at = self.position.remove(task.index())? as usize;
        let (_, value) = self.items.swap_remove(at);
        if let Some(&(moved, _)) = self.items.get(at) {
            self.position.insert(moved.index(), at as u32);
        }
        Some(value)
    }
}

impl<T: Copy> IdList<T> {
    /// Every listed task with its value, in no particular order (see the module's note).
    pub fn iter(&self) -> impl Iterator<Item = (TaskId, T)> + '_ {
        self.items.iter().copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn agrees_with_an_ordered_map_under_random_inserts_and_removes() {
        let mut next = crate::test_numbers(0x51_7cc1_b727_220a);
        let mut list = IdList::default();
        let mut model = BTreeMap::new();
        for step in 0..5_000u64 {
            let task = TaskId((next() % 700) as u32);
            if next().is_multiple_of(3) {
                assert_eq!(list.remove(task), model.remove(&task), "step {step}");
            } else {
                assert_eq!(list.insert(task, step), model.insert(task, step), "step {step}");
            }
            assert_eq!(list.get(task), model.get(&task), "step {step}");
            assert_eq!(list.contains(task), model.contains_key(&task), "step {step}");
            let mut listed: Vec<(TaskId, u64)> = list.iter().collect();
            listed.sort();
            assert!(listed.iter().copied().eq(model.iter().map(|(&t, &v)| (t, v))), "step {step}");
            assert!(list.by_task().eq(model.iter().map(|(&t, v)| (t, v))), "step {step}: in task order");
            assert_eq!(list.is_empty(), model.is_empty(), "step {step}");
        }
    }
}
