//! What the live driver counts as it goes, so that a call costs what it touches and not the
//! session's history: jobs by final state, the completion times of those that succeeded, the
//! Controller's decisions by kind. `GET /metrics` reads these instead of walking every job and
//! every decision ever made (with 16,000 finished jobs that walk took up to a second).
//!
//! The driver settles a job here after each batch in which something happened to it (it was
//! submitted or cancelled, or a decision names it); only final states are counted, and a final
//! state can still change once (a rejected job the user then cancels), so each job's counted
//! state is kept and moved, never counted twice.

use sim::JobStatus;
use std::collections::BTreeMap;

/// Every state a live job can be in, in the order `GET /metrics` lists them: all but
/// `unfinished`, a run's word for what its end left (a session has no end).
pub fn live_states() -> impl Iterator<Item = JobStatus> {
    JobStatus::ALL.into_iter().filter(|&s| s != JobStatus::Unfinished)
}

#[derive(Debug, Default, Clone)]
pub struct Tally {
    /// The final state each submission is counted in (None: not ended).
    counted: Vec<Option<JobStatus>>,
    ended: BTreeMap<JobStatus, u64>,
    /// Whether each submission's completion time is in `completion_ms`.
    completed: Vec<bool>,
    completion_ms: u128,
    completions: u64,
    decisions: BTreeMap<&'static str, u64>,
    /// Decisions of the log already counted.
    decisions_seen: usize,
}

impl Tally {
    /// A new submission: not ended.
    pub fn submitted(&mut self) {
        self.counted.push(None);
        self.completed.push(false);
    }

    /// Submission `s` is in `state` now (`waiting` and `running` are not final: not counted).
    pub fn settle(&mut self, s: usize, state: JobStatus) {
        let now = state.is_final().then_some(state);
        let before = std::mem::replace(&mut self.counted[s], now);
        if before == now {
            return;
        }
        if let Some(b) = before {
            *self.ended.entry(b).or_default() -= 1;
        }
        if let Some(n) = now {
            *self.ended.entry(n).or_default() += 1;
        }
    }

    /// Submission `s` succeeded, `ms` after it was submitted (counted once, whatever it
    /// becomes later).
    pub fn succeeded(&mut self, s: usize, ms: u64) {
        if !std::mem::replace(&mut self.completed[s], true) {
            self.completion_ms += u128::from(ms);
            self.completions += 1;
        }
    }

    /// Counts the decisions of `log` not counted yet; the jobs they name, by index.
    pub fn count_decisions<'a>(&mut self, log: &'a [sim::DecisionRecord]) -> impl Iterator<Item = usize> + 'a {
        let new = &log[self.decisions_seen.min(log.len())..];
        self.decisions_seen = log.len();
        for d in new {
            *self.decisions.entry(d.kind.as_str()).or_default() += 1;
        }
        new.iter().map(|d| d.job.index())
    }

    /// Whether submission `s` has ended (as last settled).
    pub fn has_ended(&self, s: usize) -> bool {
        self.counted.get(s).is_some_and(Option::is_some)
    }

    /// Jobs in each final state.
    pub fn ended(&self) -> &BTreeMap<JobStatus, u64> {
        &self.ended
    }

    /// How many jobs have ended.
    pub fn ended_total(&self) -> u64 {
        self.ended.values().sum()
    }

    /// The Controller's decisions by kind.
    pub fn decisions(&self) -> &BTreeMap<&'static str, u64> {
        &self.decisions
    }

    /// The jobs that succeeded: the sum of their completion times (seconds) and their count.
    pub fn completions(&self) -> (f64, u64) {
        (self.completion_ms as f64 / 1000.0, self.completions)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_final_state_that_changes_moves_its_count_and_a_completion_counts_once() {
        use JobStatus::{Cancelled, Rejected, Running, Succeeded, Waiting};
        let mut t = Tally::default();
        t.submitted();
        t.submitted();
        t.settle(0, Waiting);
        t.settle(0, Running);
        assert_eq!(t.ended_total(), 0);
        t.settle(0, Rejected);
        t.settle(1, Succeeded);
        t.succeeded(1, 1500);
        t.succeeded(1, 1500);
        t.settle(0, Rejected);
        assert_eq!((t.ended()[&Rejected], t.ended()[&Succeeded]), (1, 1));
        t.settle(0, Cancelled);
        assert_eq!((t.ended()[&Rejected], t.ended()[&Cancelled], t.ended_total()), (0, 1, 2));
        assert_eq!(t.completions(), (1.5, 1));
        assert!(t.has_ended(0) && !t.has_ended(2));
    }
}
