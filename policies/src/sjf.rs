//! `sjf`: shortest job first, non-preemptive. Whenever GPUs are free, the shortest waiting task
//! that fits starts (later, longer tasks may pass a blocked short one; nothing is reserved).
//! `duration=oracle` uses the true duration (an upper bound on what SJF can do);
//! `duration=estimate` uses the trace's estimate, which is what a real scheduler would have.
//!
//! Decision cost: O((starts + 1) x shapes x log n).

use crate::params::{AVOID_FAILED, DURATION, PLACEMENT, ParamInfo, Params, Source, SpecError};
use crate::placement::Placer;
use crate::tracking::{Aside, Placed, pass_over, place_and_start, put_back, reclaim_for_head, sync_waiting};
use crate::wait_queue::WaitQueue;
use sim::{ClusterView, DurationSource, Plan, Policy};

pub const PARAMS: &[ParamInfo] = &[DURATION, PLACEMENT, AVOID_FAILED];

pub struct Sjf {
    name: String,
    source: DurationSource,
    placer: Placer,
    waiting: WaitQueue,
}

impl Sjf {
    pub fn new(params: &Params) -> Result<Sjf, SpecError> {
        let Source(source) = params.get("duration")?;
        let placer = Placer::from_params(params)?;
        Ok(Sjf {
            name: format!("sjf[duration={},{placer}]", source.as_str()),
            source,
            placer,
            waiting: WaitQueue::default(),
        })
    }
}

impl Policy for Sjf {
    fn name(&self) -> &str {
        &self.name
    }

    fn needs_estimates(&self) -> bool {
        self.source == DurationSource::Estimate
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let source = self.source;
        sync_waiting(view, &mut self.waiting, |t| view.expected_duration(t, source).as_ms());
        let mut aside = Aside::new();
        while let Some((_, task)) = self.waiting.first_fitting(plan.free()) {
            let placed = place_and_start(view, plan, self.placer, &mut self.waiting, task);
            if placed == Placed::NoRoom && !pass_over(plan, &mut self.waiting, task, &mut aside) {
                unreachable!("a task whose shape fits has a placement");
            }
        }
        put_back(&mut self.waiting, aside);
        reclaim_for_head(view, plan, self.placer, &mut self.waiting);
    }
}
