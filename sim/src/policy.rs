//! The one policy contract, called by the virtual-time engine and by the live coordinator alike.

use crate::plan::Plan;
use crate::view::ClusterView;

pub trait Policy {
    /// The policy with all its parameters, e.g. `sjf[duration=oracle,placement=pack]`; it names
    /// the policy's random stream and is printed in every summary.
    fn name(&self) -> &str;

    /// Called once per decision point, after all events with the same timestamp were applied.
    /// May depend only on `view`, on `self`, and on `plan.rng()`: never on a clock, the
    /// environment, a file or a thread.
    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>);

    /// True when the policy reads duration estimates; the engine then refuses a workload in
    /// which some task has none, rather than let the policy fall back to the truth silently.
    fn needs_estimates(&self) -> bool {
        false
    }
}
