//! The one policy contract, called by the virtual-time engine and by the live coordinator alike.

#![deny(missing_docs)]

use crate::ids::{JobId, TaskId};
use crate::plan::Plan;
use crate::view::ClusterView;

/// A scheduling policy: at each decision point, given what the cluster and the jobs look like,
/// it decides which waiting tasks start on which GPUs, which running tasks are preempted,
/// which jobs are rejected, and when it wants to be called again.
///
/// # What `decide` sees
/// The Controller calls [`Policy::decide`] once per decision point: after every event with
/// the same timestamp was applied (arrivals, completions, failures, repairs), when something
/// changed or a wake-up it asked for ([`Plan::wake_at`]) came. A hardware event that changes
/// nothing (a failure of a part already down, the repair of one of overlapping failures, a
/// heartbeat from a node known up) is no decision point: one history written in other records
/// gives one schedule. A policy that only asks to be
/// woken, with nothing running, arriving or changed, has its wake-ups dropped (it would spin
/// forever) and its waiting jobs end the run unfinished. The [`ClusterView`] is
/// read-only and shows the state as of the start of the call: the cluster, every job and task
/// (status, work, estimate, attempt, placement), the queues and their quotas, the hardware
/// the scheduler knows to be up, and [`ClusterView::changes`], what happened since the
/// previous call in the order it happened. A policy keeps its own indexes in step with those
/// changes rather than rescanning every job, so a decision costs what changed, not what
/// waits. What is free *now, after this call's own decisions*, is read from the [`Plan`].
///
/// # What the Plan refuses, and why
/// Every decision is checked as it is made and applied tentatively at once, so the next
/// query sees it; a refused decision changes nothing and returns a [`crate::PlanError`]
/// naming the task and the rule: a start must give a startable task exactly its gang size
/// of free GPUs, in one pool of a type it accepts, on one node if it asks for one, within its
/// queue's quota (no double allocation, no split gangs, no GPU of another type); only a
/// running task can be preempted; a job with a running task, or one that ended, cannot be
/// rejected; a wake-up must be in the future; and a task gets one decision per plan (except a
/// task preempted in this plan, which may start again elsewhere: a migration). A
/// [`crate::Savepoint`] lets a policy try a combination, say preemptions that would make
/// room for a gang, and roll it back whole. After `decide` returns the Controller commits
/// every accepted decision; the refused ones are counted in the run's statistics.
///
/// # Determinism
/// A run is a pure function of its inputs and its seed: its digest must not change from one
/// run, machine or thread count to the next. So a policy depends only on the view, on its own
/// state and on [`Plan::rng`], its random stream, named `policy:<name>` (with
/// [`Policy::name`]) under the run seed. It reads no clock, no environment, no file; spawns
/// no thread; and never lets a `HashMap`'s or `HashSet`'s iteration order decide anything
/// (use `BTreeMap`/`BTreeSet`, or a `Vec` indexed by id). Ties break on ids.
///
/// # Hooks
/// [`Policy::name`] and [`Policy::decide`] are required; [`Policy::needs_estimates`] has a
/// default.
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

    /// A hint, for speed alone: `task` of `job` is the next completion the engine applies, an
    /// event or more from now. A policy that reads its own state about them when it learns of
    /// the end may ask the processor to start loading it now ([`crate::prefetch`]), so that the
    /// miss overlaps the engine's work (at 100,000 GPUs a task's entry in a policy's table is
    /// cold when its task ends). It must change nothing: a run is the same with or without it,
    /// and the hint can name a task that does not end then (a preemption may come first).
    fn prefetch_ending(&self, _task: TaskId, _job: JobId) {}
}
