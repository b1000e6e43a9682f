//! A scheduler that decides in periodic passes, not at every event: Slurm's main loop (its
//! `batch_sched_delay` and `sched_interval`), a Kubernetes scheduler's cycle, YARN's node
//! heartbeats. What happens between two passes (a job submitted, a task ending) waits for the
//! next pass, so jobs start later than an instant scheduler would start them: with passes every
//! 3 s, schedlab's fifo matches Slurm's sched/builtin far more closely (docs/slurm.md).
//!
//! Passes fall at whole multiples of the interval in trace time: anchored to the trace's
//! clock, not to its first job, so that cutting a trace or adding a job before it moves no
//! pass. The phase matters when comparing with a real scheduler, whose passes are anchored
//! to nothing a trace records (docs/slurm.md measures the spread). Off (the default,
//! interval zero), the engine decides at every timestamp where something changed, as
//! before. Live mode (`live serve --pass-interval-s`) has the same passes on the wall clock:
//! the pass is an event the engine owns, and falls due like any other.

use crate::time::{SimDuration, SimTime};

/// When the engine may decide, and what it owes the next pass.
#[derive(Debug, Clone)]
pub(crate) struct Passes {
    every: SimDuration,
    /// The pass already queued as an event, if any (one at a time).
    queued: Option<SimTime>,
    /// Something changed since the last pass (the policy is told so at the next one).
    changed_since: bool,
}

/// Whether to decide now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PassDue {
    /// Decide now; `changed`: the state changed since the last pass.
    Now { changed: bool },
    /// Wait for the pass at this time; `Some` when it must be queued (it is not yet).
    Later(Option<SimTime>),
}

impl Passes {
    /// Passes every `every`; `None` when `every` is zero (decide at every event).
    pub(crate) fn new(every: SimDuration) -> Option<Passes> {
        (every > SimDuration::ZERO).then_some(Passes { every, queued: None, changed_since: false })
    }

    /// At `now`, with something to decide on (`changed`: the state changed, else only a
    /// wake-up): decide now if `now` is a pass, else wait for the next one.
    pub(crate) fn due(&mut self, now: SimTime, changed: bool) -> PassDue {
        let every = self.every.as_ms();
        if now.as_ms().is_multiple_of(every) {
            self.queued = self.queued.filter(|&at| at > now);
            let changed = changed || std::mem::take(&mut self.changed_since);
            return PassDue::Now { changed };
        }
        self.changed_since |= changed;
        let next = SimTime(now.as_ms().div_ceil(every) * every);
        if self.queued == Some(next) {
            return PassDue::Later(None);
        }
        self.queued = Some(next);
        PassDue::Later(Some(next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_between_passes_wait_for_the_next_one_queued_once() {
        let mut passes = Passes::new(SimDuration(3_000)).unwrap();
        assert_eq!(passes.due(SimTime(9_000), true), PassDue::Now { changed: true });
        assert_eq!(passes.due(SimTime(10_500), true), PassDue::Later(Some(SimTime(12_000))));
        assert_eq!(passes.due(SimTime(11_999), false), PassDue::Later(None));
        // The pass owes the change seen at 10.5 s even if nothing else changed.
        assert_eq!(passes.due(SimTime(12_000), false), PassDue::Now { changed: true });
        assert_eq!(passes.due(SimTime(12_001), false), PassDue::Later(Some(SimTime(15_000))));
        assert_eq!(passes.due(SimTime(15_000), false), PassDue::Now { changed: false });
        assert!(Passes::new(SimDuration::ZERO).is_none());
    }
}
