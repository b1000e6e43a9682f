//! What a run's seed feeds, so a seed that can change nothing is said rather than run many
//! times over: a sweep over five seeds of a trace without failures is five identical runs.

use crate::RunSpec;

impl RunSpec {
    /// Why this run's seed changes nothing a built-in policy sees, or `None` when it feeds the
    /// built-in synthetic workload or a failure model or replayed failure history (`events:`
    /// files are used as they are). A policy's own random draws (`plan.rng()`) always take
    /// the seed; no built-in policy makes any.
    pub fn idle_seed_reason(&self) -> Option<String> {
        let seeded_failures = self
            .failures
            .as_deref()
            .is_some_and(|text| !matches!(text.parse(), Ok(traces::FailureSpec::Events { .. })));
        if self.trace.is_none() || seeded_failures {
            return None;
        }
        let failures = match self.failures {
            Some(_) => "none: --failures events: is a fixed list",
            None => "none: no --failures",
        };
        Some(format!(
            "the seed feeds the built-in synthetic workload (replaced by --trace), a failure model or replayed \
             failure history ({failures}) and a policy's own random draws (no built-in policy makes any)"
        ))
    }
}
