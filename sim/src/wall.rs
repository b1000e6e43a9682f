//! The wall clock: the engine driven by live mode. The driver pushes what it learns as it
//! learns it (submissions, process exits, heartbeats, GPU failures and their repairs, agent
//! restarts, cancels) and runs the engine up to "now"; the engine alone owns what falls due
//! (heartbeat deadlines, repairs, wake-ups, the Controller's timers).
//!
//! What the virtual clock schedules when it happens, the wall clock learns later: a completion
//! (a process exits) and a GPU's repair (it returns to service). Each takes, when the virtual
//! clock would have scheduled it, a place in the order of same-time events
//! ([`EventQueue::reserve_seq`]), and is pushed with that place once known. So a session and
//! the simulation of its export apply the same events in the same order.

use crate::controller::Controller;
use crate::engine::{Clock, Engine};
use crate::event::{Event, EventQueue, Part};
use crate::failure::ClusterEvent;
use crate::ids::{GpuId, JobId, NodeId, TaskId};
use crate::observe::Observer;
use crate::policy::Policy;
use crate::state::TaskStatus;
use crate::time::SimTime;
use crate::workload::JobSpec;
use std::collections::BTreeSet;

/// Where reported completions go in the order, and what runs.
#[derive(Debug, Default)]
pub(crate) struct Reported {
    /// By task: its latest attempt and the place its completion takes.
    started: Vec<Option<(u32, u64)>>,
    /// Tasks started and not yet seen stopped (pruned at each timestamp).
    running: BTreeSet<TaskId>,
    /// Exits applied (not stale) since the driver last took them, with their codes.
    pub(crate) exits: Vec<(TaskId, i32)>,
}

impl Reported {
    /// `task`'s `attempt` started: its completion's place is taken now.
    pub(crate) fn started(&mut self, queue: &mut EventQueue, task: TaskId, attempt: u32) {
        let seq = queue.reserve_seq();
        if self.started.len() <= task.index() {
            self.started.resize(task.index() + 1, None);
        }
        self.started[task.index()] = Some((attempt, seq));
        self.running.insert(task);
    }
}

impl Engine {
    /// The wall clock around `controller` (its jobs added as they are submitted): live mode.
    /// Heartbeats are explicit (each node's from its first pushed beat), GPU repairs and
    /// process exits are reported, and the engine never stops on its own.
    pub fn wall(controller: Controller) -> Engine {
        let (failures, retire) = (controller.config().failures, controller.config().retire);
        let observer = Observer::new(&controller, &[], failures, retire).with_reported_repairs();
        Engine::around(controller, observer, Clock::Wall)
    }

    /// Applies every timestamp that has something due up to `at`, in order; returns them.
    /// What still runs at `at` has run until then (see `Controller::extend_overrun`).
    pub fn run_until(&mut self, at: SimTime, policy: &mut dyn Policy) -> Vec<SimTime> {
        let mut applied = Vec::new();
        while let Some(now) = self.next_due().filter(|&t| t <= at) {
            self.apply_timestamp(now, policy);
            applied.push(now);
        }
        self.extend_overruns(at);
        applied
    }

    /// The earliest time something falls due, if anything is scheduled (the wall clock has no
    /// hardware feed: its hardware is pushed).
    pub fn next_due(&self) -> Option<SimTime> {
        let arrival = self.next_arrival_time();
        [self.queue.peek_key().map(|k| k.time), arrival, self.hardware.peek_fixed_time()].into_iter().flatten().min()
    }

    /// The exits applied since the last call (stale ones, of attempts already ended, are not),
    /// with their codes.
    pub fn take_exits(&mut self) -> Vec<(TaskId, i32)> {
        std::mem::take(&mut self.reported.exits)
    }

    /// A job submitted now (its `submit` no earlier than the last timestamp applied): it
    /// arrives when the engine runs to its submission.
    pub fn add_job(&mut self, spec: JobSpec) -> Result<JobId, String> {
        self.controller.add_job(spec)
    }

    /// A hardware event as it happened (a heartbeat, a GPU failure whose repair will be
    /// reported, a node down for a known time), at or after the last timestamp applied.
    pub fn push_hardware(&mut self, event: ClusterEvent) {
        if let ClusterEvent::Heartbeat { node, time } = event {
            self.observer.beats_from(node, time);
        }
        self.hardware.push(event);
    }

    /// The process of `task`'s `attempt` exited with `code` at `at`. False (nothing pushed)
    /// when that attempt is not the task's latest.
    pub fn push_exit(&mut self, task: TaskId, attempt: u32, code: i32, at: SimTime) -> bool {
        match self.reported.started.get(task.index()).copied().flatten() {
            Some((latest, seq)) if latest == attempt => {
                self.queue.push_reserved(at, seq, Event::TaskExited { task, attempt, code });
                true
            }
            _ => false,
        }
    }

    /// The user cancels `job` at `at`.
    pub fn push_cancel(&mut self, job: JobId, at: SimTime) {
        self.queue.push(at, Event::Cancel(job));
    }

    /// `gpu` works again at `at`: every failure of it still open is repaired then. False when
    /// it has none.
    pub fn push_gpu_repair(&mut self, gpu: GpuId, at: SimTime) -> bool {
        let places = self.observer.take_reported_repairs(gpu);
        for &seq in &places {
            self.queue.push_reserved(at, seq, Event::Repair(Part::Gpu(gpu)));
        }
        !places.is_empty()
    }

    /// The tasks running now (stalled ones included), in task order.
    pub fn running(&self) -> impl Iterator<Item = TaskId> + '_ {
        let c = &self.controller;
        self.reported.running.iter().copied().filter(|&t| c.task(t).status == TaskStatus::Running)
    }

    /// When `node`'s last heartbeat was delivered.
    pub fn last_beat(&self, node: NodeId) -> Option<SimTime> {
        self.observer.last_beat(node)
    }

    /// What ran past its assumed work did more (see `Controller::extend_overrun`).
    pub(crate) fn extend_overruns(&mut self, now: SimTime) {
        let c = &self.controller;
        self.reported.running.retain(|&t| c.task(t).status == TaskStatus::Running);
        for &task in &self.reported.running {
            self.controller.extend_overrun(task, now);
        }
    }
}
