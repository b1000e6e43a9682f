//! The jobs a virtual-clock run has not admitted yet, in arrival order: a feed of batches
//! (a workload's, drained as the run goes; a kept trace's, cloned; a streamed trace's, read on
//! a thread of its own), and the batch being admitted. The engine admits each job straight
//! from its batch: handed over one at a time instead, a job (about 180 bytes) was copied
//! three more times on the engine's thread on its way in (out of the batch, through the
//! iterator, into the engine's next job), about 4 % of a 10^7-job `fifo` run.

use crate::workload::JobSpec;
use std::collections::VecDeque;

/// Where a run's jobs come from: batches of jobs in arrival order (any length, empty ones
/// skipped), an error when the feed could not be read on (a trace changed since it was
/// checked): the run stops there, after the jobs of the batches before it.
pub type JobFeed = Box<dyn Iterator<Item = Result<Vec<JobSpec>, String>> + Send>;

/// Jobs a batch, for a feed that makes its own: enough that a batch's hand-over costs little
/// beside its jobs, few enough that one holds little memory (under a megabyte).
pub const FEED_BATCH: usize = 4096;

/// A feed and the batch its next job comes from: the batch is empty only once the feed has
/// ended (or failed).
pub(crate) struct Arrivals {
    feed: JobFeed,
    batch: std::vec::IntoIter<JobSpec>,
    /// What the feed failed with: no job comes after it.
    error: Option<String>,
}

impl Default for Arrivals {
    fn default() -> Arrivals {
        Arrivals { feed: Box::new(std::iter::empty()), batch: Vec::new().into_iter(), error: None }
    }
}

impl Arrivals {
    pub(crate) fn new(feed: JobFeed) -> Arrivals {
        let mut arrivals = Arrivals { feed, ..Arrivals::default() };
        arrivals.refill();
        arrivals
    }

    /// The next job to arrive, if any.
    pub(crate) fn peek(&self) -> Option<&JobSpec> {
        self.batch.as_slice().first()
    }

    /// Takes the next job if `due` says so. Each job taken asks for the one after the next,
    /// so that its lines travel from the reading thread's core while the engine admits this
    /// one (read cold as it was moved out, a job cost 3-5 % of the engine's thread).
    pub(crate) fn take_if(&mut self, due: impl FnOnce(&JobSpec) -> bool) -> Option<JobSpec> {
        if !due(self.peek()?) {
            return None;
        }
        let job = self.batch.next()?;
        match self.batch.as_slice() {
            [] => self.refill(),
            [_, later, ..] => crate::prefetch::prefetch_bytes(later, usize::MAX),
            [_] => {}
        }
        Some(job)
    }

    /// What the feed failed with, once it has.
    pub(crate) fn error(&self) -> Option<&str> {
        self.error.as_deref()
    }

    /// Records an error of the run's own found at an arrival (a job's queue or dataset): no
    /// job arrives after it.
    pub(crate) fn fail(&mut self, error: String) {
        self.batch = Vec::new().into_iter();
        self.error = Some(error);
    }

    /// Reads batches until one holds a job, the feed ends or it fails.
    fn refill(&mut self) {
        while self.batch.len() == 0 && self.error.is_none() {
            match self.feed.next() {
                Some(Ok(batch)) => self.batch = batch.into_iter(),
                Some(Err(error)) => self.error = Some(error),
                None => return,
            }
        }
    }
}

/// A workload's jobs in batches, the memory of those given handed back as they go (a
/// `Vec`'s own iterator keeps all of it to the end): drained from the front, shrunk each time
/// it falls to a quarter (each shrink moves what is left, so all of them move a third of the
/// jobs once).
pub(crate) struct Draining(pub(crate) VecDeque<JobSpec>);

impl Iterator for Draining {
    type Item = Result<Vec<JobSpec>, String>;
    fn next(&mut self) -> Option<Self::Item> {
        if self.0.is_empty() {
            return None;
        }
        let batch = self.0.drain(..self.0.len().min(FEED_BATCH)).collect();
        if self.0.len() < self.0.capacity() / 4 && self.0.capacity() > FEED_BATCH {
            self.0.shrink_to_fit();
        }
        Some(Ok(batch))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{SimDuration, SimTime};

    fn job(i: u64) -> JobSpec {
        JobSpec::single(i.to_string(), SimTime::from_secs(i), 1, SimDuration::from_secs(1))
    }

    /// Takes every job, with the names of those taken and the error at the end.
    fn drain(mut arrivals: Arrivals) -> (Vec<String>, Option<String>) {
        let mut names = Vec::new();
        while let Some(next) = arrivals.peek().map(|j| j.name.to_string()) {
            assert!(arrivals.take_if(|_| false).is_none(), "a job not due stays");
            let taken = arrivals.take_if(|_| true).expect("a job peeked is taken");
            assert_eq!(taken.name.as_str(), next);
            names.push(next);
        }
        assert!(arrivals.take_if(|_| true).is_none());
        (names, arrivals.error().map(str::to_string))
    }

    #[test]
    fn jobs_arrive_across_batches_empty_ones_skipped_then_the_error() {
        let batches = vec![
            Ok(vec![job(0), job(1)]),
            Ok(vec![]),
            Ok(vec![job(2)]),
            Ok(vec![]),
            Ok(vec![job(3), job(4), job(5)]),
            Err("jobs.csv:9: bad".to_string()),
            Ok(vec![job(6)]),
        ];
        let (names, error) = drain(Arrivals::new(Box::new(batches.into_iter())));
        assert_eq!(names, ["0", "1", "2", "3", "4", "5"]);
        assert_eq!(error.as_deref(), Some("jobs.csv:9: bad"));
    }

    #[test]
    fn a_workload_drains_in_order_in_batches_and_gives_its_memory_back() {
        let n = 3 * FEED_BATCH as u64 + 5;
        let mut draining = Draining((0..n).map(job).collect());
        let first = draining.next().expect("a batch").expect("no error");
        assert_eq!(first.len(), FEED_BATCH);
        let (names, error) = drain(Arrivals::new(Box::new(draining)));
        let expected: Vec<String> = (FEED_BATCH as u64..n).map(|i| i.to_string()).collect();
        assert_eq!((names, error), (expected, None));

        let mut draining = Draining((0..n).map(job).collect());
        draining.by_ref().take(3).for_each(drop);
        assert!(draining.0.capacity() < 2 * FEED_BATCH, "shrunk to what is left: {}", draining.0.capacity());
    }
}
