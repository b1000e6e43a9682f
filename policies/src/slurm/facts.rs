//! Each waiting or running job's facts (what it is charged and ranked by), found by job id.
//!
//! Every start and stop looks its job's facts up; in a tree of every job in the system each
//! level of that search missed the cache at scale. A paged table by job id finds them in one
//! step, but its pages span the ids from the oldest job still running to the newest waiting
//! (about 1.24M ids at 100,000 GPUs): pages of the facts themselves (over 100 bytes each,
//! strings included) took 92 MB more than the tree at 10^6 jobs there. So the table holds a
//! 4-byte slot per id, and the facts sit in a list of the jobs present, slots reused as jobs
//! come and go.

use super::priority::JobFacts;
use crate::id_table::IdTable;
use sim::JobId;

#[derive(Debug, Default)]
pub struct Facts {
    slot_of: IdTable<u32>,
    slots: Vec<Option<JobFacts>>,
    /// Slots let go, to be used again first.
    free: Vec<u32>,
}

impl Facts {
    pub fn get(&self, job: JobId) -> Option<&JobFacts> {
        self.slots[self.slot_of.get(job.index())? as usize].as_ref()
    }

    /// Asks the processor to start loading `job`'s facts (a hint: it reads where they lie,
    /// and changes nothing).
    pub fn prefetch(&self, job: JobId) {
        if let Some(slot) = self.slot_of.get(job.index()) {
            sim::prefetch::prefetch(&self.slots[slot as usize]);
        }
    }

    /// Makes `job`'s facts with `make` if it has none, and returns them; `None` if it had
    /// some (they are kept).
    pub fn add_if_missing(&mut self, job: JobId, make: impl FnOnce() -> JobFacts) -> Option<&JobFacts> {
        if self.slot_of.contains(job.index()) {
            return None;
        }
        let slot = self.place(make());
        self.slot_of.insert(job.index(), slot as u32);
        self.slots[slot].as_ref()
    }

    pub fn remove(&mut self, job: JobId) {
        if let Some(slot) = self.slot_of.remove(job.index()) {
            self.slots[slot as usize] = None;
            self.free.push(slot);
        }
    }

    /// A slot for `facts`: a free one, or a new one.
    fn place(&mut self, facts: JobFacts) -> usize {
        match self.free.pop() {
            Some(slot) => {
                self.slots[slot as usize] = Some(facts);
                slot as usize
            }
            None => {
                self.slots.push(Some(facts));
                self.slots.len() - 1
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::slurm::fairshare::Assoc;

    fn facts(n: u32) -> JobFacts {
        let assoc: Assoc = (format!("account{n}"), String::new());
        JobFacts {
            assoc,
            partition: String::new(),
            qos: String::new(),
            nodes: n,
            gpus: n,
            eligible: sim::SimTime::ZERO,
        }
    }

    /// Jobs come and go in any order: each finds its own facts, slots are reused, and the
    /// list holds no more slots than jobs were present at once.
    #[test]
    fn each_job_finds_its_own_facts_as_jobs_come_and_go() {
        let mut next = crate::test_numbers(0x51_7cc1_b727_220a);
        let mut table = Facts::default();
        let mut plain: std::collections::BTreeMap<u32, u32> = std::collections::BTreeMap::new();
        let mut most = 0;
        for step in 0..20_000u32 {
            let job = (next() % 2_000) as u32;
            match next() % 3 {
                0 => {
                    let added = table.add_if_missing(JobId(job), || facts(step)).map(|f| f.nodes);
                    let missing = !plain.contains_key(&job);
                    assert_eq!(added, missing.then_some(step));
                    plain.entry(job).or_insert(step);
                }
                1 => {
                    table.remove(JobId(job));
                    plain.remove(&job);
                }
                _ => assert_eq!(table.get(JobId(job)).map(|f| f.nodes), plain.get(&job).copied()),
            }
            most = most.max(plain.len());
        }
        assert!(table.slots.len() <= most, "{} slots for at most {most} jobs", table.slots.len());
    }
}
