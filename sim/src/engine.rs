//! The virtual-time engine: pops events in their total order, applies each timestamp's batch
//! to the Controller, calls the policy once per batch and turns the plan's effects into future
//! events. Arrivals come from the workload, already sorted, through a cursor (the ordered fast
//! path): only completions and wake-ups go through the heap.

use crate::cluster::Cluster;
use crate::controller::{Controller, ControllerConfig, Effect};
use crate::event::{Event, EventKey, EventQueue, PHASE_ARRIVAL};
use crate::ids::JobId;
use crate::policy::Policy;
use crate::record::RunResult;
use crate::time::SimTime;
use crate::workload::Workload;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The policy reads estimates and this job has a task without one.
    MissingEstimate { policy: String, job: String },
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::MissingEstimate { policy, job } => write!(
                f,
                "policy {policy} uses duration estimates, but job `{job}` has a task without one \
                 (give an estimate column, or use duration=oracle)"
            ),
        }
    }
}

impl std::error::Error for SimError {}

/// Runs `workload` on `cluster` under `policy` to the end, in virtual time.
pub fn simulate(
    cluster: Cluster,
    workload: Workload,
    policy: &mut dyn Policy,
    config: ControllerConfig,
) -> Result<RunResult, SimError> {
    if policy.needs_estimates() {
        let missing = workload.jobs().iter().find(|j| j.tasks.iter().any(|t| t.estimate.is_none()));
        if let Some(job) = missing {
            return Err(SimError::MissingEstimate { policy: policy.name().to_string(), job: job.name.clone() });
        }
    }
    let mut engine = Engine {
        controller: Controller::new(cluster, workload, policy.name(), config),
        queue: EventQueue::default(),
        next_arrival: 0,
        effects: Vec::new(),
    };
    while engine.step(policy) {}
    Ok(engine.controller.finish())
}

struct Engine {
    controller: Controller,
    queue: EventQueue,
    next_arrival: usize,
    effects: Vec<Effect>,
}

impl Engine {
    fn next_arrival_time(&self) -> Option<SimTime> {
        self.controller.workload().jobs().get(self.next_arrival).map(|j| j.submit)
    }

    /// Applies the next timestamp's events and decides. Returns false when nothing is left.
    fn step(&mut self, policy: &mut dyn Policy) -> bool {
        let next_event = self.queue.peek_key().map(|k| k.time);
        let now = match (next_event, self.next_arrival_time()) {
            (None, None) => return false,
            (Some(e), Some(a)) => e.min(a),
            (Some(t), None) | (None, Some(t)) => t,
        };
        self.controller.advance_to(now);
        let mut changed = false;
        let mut woken = false;
        let arrivals = EventKey { time: now, phase: PHASE_ARRIVAL, seq: 0 };
        while let Some((_, event)) = self.queue.pop_before(arrivals) {
            changed |= self.apply(event, &mut woken);
        }
        while self.next_arrival_time() == Some(now) {
            self.controller.job_arrived(JobId::from_index(self.next_arrival));
            self.next_arrival += 1;
            changed = true;
        }
        let rest_of_now = EventKey { time: now, phase: u8::MAX, seq: 0 };
        while let Some((_, event)) = self.queue.pop_before(rest_of_now) {
            changed |= self.apply(event, &mut woken);
        }
        if changed || woken {
            self.decide(policy, changed);
        }
        true
    }

    fn apply(&mut self, event: Event, woken: &mut bool) -> bool {
        match event {
            Event::TaskFinished { task, attempt } => self.controller.task_finished(task, attempt),
            Event::JobArrival(job) => {
                self.controller.job_arrived(job);
                true
            }
            Event::Wake => {
                self.controller.wake();
                *woken = true;
                false
            }
        }
    }

    fn decide(&mut self, policy: &mut dyn Policy, changed: bool) {
        let committed = self.controller.decide(policy, &mut self.effects);
        // A policy that only asks to be woken again, with nothing running, nothing arriving and
        // nothing changed, would spin forever: its wake-ups are dropped and the run ends with
        // its waiting jobs reported unfinished.
        let spinning =
            committed == 0 && !changed && self.controller.running_tasks() == 0 && self.next_arrival_time().is_none();
        for effect in self.effects.drain(..) {
            match effect {
                Effect::Started { task, attempt, finish_at } => {
                    self.queue.push(finish_at, Event::TaskFinished { task, attempt });
                }
                Effect::Stopped { .. } => {}
                Effect::WakeAt(at) if !spinning => self.queue.push(at, Event::Wake),
                Effect::WakeAt(_) => {}
            }
        }
    }
}
