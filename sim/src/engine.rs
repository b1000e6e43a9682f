//! The one event loop, for both clocks. It pops events in their total order, applies each
//! timestamp's batch to the Controller, calls the policy once per batch and turns the plan's
//! effects into future events. Arrivals come from the workload, already sorted, through a
//! cursor (the ordered fast path): only what is scheduled goes through the heap.
//!
//! The virtual clock ([`Engine::new`], [`simulate`]) knows every job and hardware event up
//! front and runs to the end. The wall clock ([`Engine::wall`], live mode; see wall.rs) learns
//! them as they happen: its driver pushes what it learns (submissions, exits, heartbeats,
//! failures, repairs, cancels) and runs the engine to "now". Both apply a timestamp with the
//! same code, so a live session and the simulation of its export make the same decisions.

use crate::arrivals::{Arrivals, Draining, JobFeed};
use crate::controller::{Controller, ControllerConfig, Effect};
use crate::event::{Event, EventKey, EventQueue, PHASE_ARRIVAL, PHASE_COMPLETION};
use crate::hardware::Hardware;
use crate::ids::JobId;
use crate::observe::Observer;
use crate::passes::{PassDue, Passes};
use crate::policy::Policy;
use crate::record::RunResult;
use crate::scenario::{Scenario, SimError};
use crate::sink::{Collect, RecordSink};
use crate::time::{SimTime, earliest};
use crate::wall::Reported;
use std::collections::BTreeMap;

/// Which clock drives the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// Simulated time: completions are scheduled at their end, the run stops when every job
    /// has ended or at the horizon.
    Virtual,
    /// Wall time (live mode): completions, GPU repairs and everything else are reported as
    /// they happen; the engine never stops on its own.
    Wall,
}

/// Runs `scenario` under `policy` to the end, in virtual time: until every job has ended.
pub fn simulate(scenario: Scenario, policy: &mut dyn Policy, config: ControllerConfig) -> Result<RunResult, SimError> {
    Ok(Engine::new(scenario, policy, config)?.run(policy))
}

/// The engine: the Controller, what the scheduler observes of the hardware, and the events
/// scheduled.
pub struct Engine {
    pub(crate) controller: Controller,
    pub(crate) observer: Observer,
    pub(crate) hardware: Hardware,
    pub(crate) queue: EventQueue,
    /// The next job to arrive (admitted or still in the feed).
    pub(crate) next_arrival: usize,
    /// Virtual clock: the jobs not yet admitted, in arrival order, and what their feed failed
    /// with (a streamed trace that could not be read on; a job's queue unknown): the run
    /// stops there.
    arrivals: Arrivals,
    effects: Vec<Effect>,
    pub(crate) clock: Clock,
    /// The horizon: the last submission plus `ControllerConfig::horizon` (virtual clock).
    stop_after: Option<SimTime>,
    /// Completions made stale (their task stopped) since the last purge.
    stale: usize,
    /// The latest time of a stale completion purged from the queue (see `purge_stale`).
    purged_until: Option<SimTime>,
    /// Wall clock: where reported completions go in the order, and what runs.
    pub(crate) reported: Reported,
    /// Periodic scheduling passes, when the run has them.
    passes: Option<Passes>,
    /// The wake-ups asked for and not yet applied, by time, with how often each was asked:
    /// one queued event a time. A policy that asks again for its next pass at every decision
    /// (`slurm`) asked for the same time hundreds of times, each a push and a pop of the
    /// heap (about a tenth of its run); each asking still counts as an event applied.
    wakes: BTreeMap<SimTime, u64>,
}

/// How often (in timestamps applied) [`Engine::run_with_progress`] reports: rare enough to
/// cost nothing (a million-job run applies about two million).
pub const PROGRESS_EVERY: u64 = 1 << 16;

/// How far a run has got: jobs arrived of the workload's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunProgress {
    pub arrived: usize,
    pub jobs: usize,
}

/// Queues a wake-up at `at`, unless one is queued for then (`Engine::wakes`).
fn wake_at(wakes: &mut BTreeMap<SimTime, u64>, queue: &mut EventQueue, at: SimTime) {
    let asked = wakes.entry(at).or_insert(0);
    if *asked == 0 {
        queue.push(at, Event::Wake);
    }
    *asked += 1;
}

/// Stale completions are purged once there are this many, and they are half the queue.
const PURGE_AT_LEAST: usize = 1024;

/// Events held from which the engine loads the next completions' state ahead: with fewer, the
/// tasks running (a completion each) keep their state in the cache, and asking would cost
/// instructions for nothing (5 % of the engine bench's, 128 GPUs). At 10,000 GPUs (about
/// 4,000 tasks running, the queue's length about that) the state is already cold: from 4,096
/// to 1,024 took 10-15 % off 10^6-job runs there; 256 did no better.
const LOAD_AHEAD_FROM: usize = 1024;

impl Engine {
    /// The virtual clock: `scenario` under a policy named `policy.name()`, every job and
    /// hardware event known up front. Refuses what the run cannot honour (see
    /// [`SimError`]).
    pub fn new(scenario: Scenario, policy: &dyn Policy, config: ControllerConfig) -> Result<Engine, SimError> {
        scenario.check(policy, &config)?;
        let (failures, horizon, retire) = (config.failures, config.horizon, config.retire);
        let Scenario { cluster, workload, stream, events, feed, queues, datasets } = scenario;
        let (shape, jobs): (_, JobFeed) = match stream {
            Some((shape, jobs)) => (shape, jobs),
            None => (workload.shape().clone(), Box::new(Draining(workload.into_jobs().into()))),
        };
        let controller = Controller::expecting(cluster, &shape, policy.name(), config)
            .with_queues(queues)
            .and_then(|c| c.with_datasets(datasets))
            .map_err(SimError::BadQueue)?;
        let observer = Observer::new(&controller, &events, failures, retire);
        let mut engine = Engine::around(controller, observer, Clock::Virtual);
        engine.hardware = Hardware::new(events, feed);
        engine.stop_after = shape.submit_span().map(|(_, last)| last.saturating_add(horizon));
        engine.arrivals = Arrivals::new(jobs);
        Ok(engine)
    }

    /// An engine around `controller` with nothing scheduled.
    pub(crate) fn around(controller: Controller, observer: Observer, clock: Clock) -> Engine {
        let passes = Passes::new(controller.config().pass_interval);
        Engine {
            controller,
            observer,
            hardware: Hardware::default(),
            queue: EventQueue::default(),
            next_arrival: 0,
            arrivals: Arrivals::default(),
            effects: Vec::new(),
            clock,
            stop_after: None,
            stale: 0,
            purged_until: None,
            reported: Reported::default(),
            passes,
            wakes: BTreeMap::new(),
        }
    }

    /// Runs to the end (virtual clock) and returns the run's records.
    pub fn run(self, policy: &mut dyn Policy) -> RunResult {
        self.run_with_progress(policy, &mut |_| {})
    }

    /// [`Engine::run`], telling `progress` how many jobs have arrived of how many, every
    /// [`PROGRESS_EVERY`] timestamps and once at the end. What it shows, and when, is the
    /// caller's: the engine reads no clock.
    pub fn run_with_progress(self, policy: &mut dyn Policy, progress: &mut dyn FnMut(RunProgress)) -> RunResult {
        let mut records = Collect::with_capacity(self.controller.shape().jobs());
        let end = self.run_into(policy, &mut records, progress).expect("a workload in memory reads without error");
        records.into_result(end)
    }

    /// Runs to the end (virtual clock), handing each record to `sink` as soon as it is final
    /// (see [`RecordSink`] for the order) and letting each job go once recorded: the run holds
    /// the jobs from the oldest in the system to the newest arrived, not the whole workload.
    /// The result's records are left empty. An error: the job feed failed (the run stopped).
    pub fn run_into(
        mut self,
        policy: &mut dyn Policy,
        sink: &mut dyn RecordSink,
        progress: &mut dyn FnMut(RunProgress),
    ) -> Result<RunResult, SimError> {
        let jobs = self.controller.shape().jobs();
        let mut steps = 0u64;
        while self.step(policy) {
            self.controller.hand_over(sink);
            steps += 1;
            if steps.is_multiple_of(PROGRESS_EVERY) {
                progress(RunProgress { arrived: self.next_arrival, jobs });
            }
        }
        if let Some(error) = self.arrivals.error() {
            return Err(SimError::Feed(error.to_string()));
        }
        progress(RunProgress { arrived: jobs, jobs });
        let fed = self.hardware.covered_until();
        Ok(self.controller.finish_with_feed_into(fed, sink))
    }

    /// The Controller the engine drives.
    pub fn controller(&self) -> &Controller {
        &self.controller
    }

    pub(crate) fn next_arrival_time(&self) -> Option<SimTime> {
        if self.next_arrival < self.controller.jobs_admitted() {
            return Some(self.controller.job_spec(JobId::from_index(self.next_arrival)).submit);
        }
        self.arrivals.peek().map(|j| j.submit)
    }

    /// Admits the feed's jobs submitted at `now`, before anything of `now` applies (their
    /// cancels are then queued like every other event of `now`).
    fn admit_due(&mut self, now: SimTime) {
        while let Some(job) = self.arrivals.take_if(|j| j.submit == now) {
            let resolved = self.controller.queue_of(&job).and_then(|q| Ok((q, self.controller.datasets_of(&job)?)));
            let (queue, datasets) = match resolved {
                Ok(resolved) => resolved,
                Err(error) => {
                    self.arrivals.fail(error);
                    return;
                }
            };
            let cancel = job.cancel.get();
            let id = self.controller.admit(job, queue, datasets);
            if let Some(at) = cancel {
                self.queue.push(at, Event::Cancel(id));
            }
        }
    }

    /// Applies the next timestamp's events and decides (virtual clock). Returns false when the
    /// run is over: every job has arrived and ended (hardware events after that change
    /// nothing measured), nothing is left to happen, or the next event is past the horizon
    /// (what has not ended is reported unfinished).
    fn step(&mut self, policy: &mut dyn Policy) -> bool {
        if self.arrivals.error().is_some()
            || (self.next_arrival_time().is_none() && !self.controller.has_jobs_in_system())
        {
            return false;
        }
        let Some(now) = self.next_time() else {
            self.end_after_purged();
            return false;
        };
        if self.stop_after.is_some_and(|end| now > end) {
            self.controller.stop_at_horizon(self.stop_after.unwrap_or(now));
            return false;
        }
        self.apply_timestamp(now, policy);
        true
    }

    /// Everything that happens at `now`, in phase order: hardware truth, then what the
    /// scheduler observes of it, completions and timers, arrivals, cancels, wake-ups; the
    /// policy decides once if anything happened.
    pub(crate) fn apply_timestamp(&mut self, now: SimTime, policy: &mut dyn Policy) {
        self.admit_due(now);
        self.controller.advance_to(now);
        if self.clock == Clock::Wall {
            self.extend_overruns(now);
        }
        let mut changed = false;
        let mut woken = false;
        // A hardware event that changes nothing (a failure of a part already down, the repair
        // of one of overlapping failures, a beat from a healthy node) is no decision point.
        while let Some(event) = self.hardware.pop_at(now) {
            changed |= self.observer.apply_truth(&event, &mut self.controller, &mut self.queue);
            self.controller.count_event();
        }
        changed |= self.apply_scheduled(now, &mut woken, policy);
        if changed || woken {
            match self.passes.as_mut().map_or(PassDue::Now { changed }, |p| p.due(now, changed)) {
                PassDue::Now { changed } => self.decide(policy, changed),
                PassDue::Later(Some(at)) => self.queue.push(at, Event::Pass),
                PassDue::Later(None) => {}
            }
        }
        for (at, timer) in self.controller.take_timers() {
            self.queue.push(at, Event::Timer(timer));
        }
    }

    /// Applies the events scheduled at `now`, in key order, and the workload's arrivals at
    /// `now` at their phase: after every completion, before the heap's own arrivals (wall
    /// clock), cancels and wake-ups. One pass over the heap, each event popped once and no
    /// look past it but the one that ends the pass: the events applied, and so the order, are
    /// those of one loop per phase group. Returns whether anything changed.
    fn apply_scheduled(&mut self, now: SimTime, woken: &mut bool, policy: &dyn Policy) -> bool {
        let mut changed = false;
        let mut arrivals_due = true;
        let end_of_now = EventKey { time: now, phase: u8::MAX, seq: 0 };
        while let Some((key, event)) = self.queue.pop_before(end_of_now) {
            if self.queue.len() >= LOAD_AHEAD_FROM {
                self.load_ahead(policy);
            }
            if key.phase < PHASE_COMPLETION {
                changed |= self.observer.apply(event, &mut self.controller, &mut self.queue);
                self.controller.count_event();
                continue;
            }
            if arrivals_due && key.phase >= PHASE_ARRIVAL {
                arrivals_due = false;
                changed |= self.arrive_at(now);
            }
            changed |= self.apply(key.time, event, woken);
        }
        if arrivals_due {
            changed |= self.arrive_at(now);
        }
        changed
    }

    /// Asks for what the next two completions will read (`prefetch.rs`): the next one's GPU
    /// list (its state was asked for an event ago, and says where the list lies) and the
    /// policy's state about it ([`Policy::prefetch_ending`]: the policy reads it once the
    /// completion is applied, in the decision after it), and the state of the one after it.
    fn load_ahead(&self, policy: &dyn Policy) {
        if let Some(&Event::TaskFinished { task, job, .. }) = self.queue.peek_event() {
            self.controller.prefetch_gpus(task);
            policy.prefetch_ending(task, job);
        }
        if let Some(&Event::TaskFinished { task, job, .. }) = self.queue.peek_second_event() {
            self.controller.prefetch_task(task, job);
        }
    }

    /// Queues the workload's jobs submitted at `now`; returns whether there were any.
    fn arrive_at(&mut self, now: SimTime) -> bool {
        let first = self.next_arrival;
        while self.next_arrival_time() == Some(now) {
            self.controller.job_arrived(JobId::from_index(self.next_arrival));
            self.next_arrival += 1;
        }
        self.next_arrival > first
    }

    /// The earliest of the heap's next event, the next arrival and the next hardware event.
    pub(crate) fn next_time(&mut self) -> Option<SimTime> {
        self.drop_what_is_about_retired_nodes();
        let scheduled = self.queue.peek_key().map(|k| k.time);
        earliest(earliest(scheduled, self.next_arrival_time()), self.hardware.peek_time())
    }

    /// Drops what is next about retired nodes (hardware records, and the repairs and heartbeat
    /// observations pending on the heap) before it makes a timestamp of its own. Out of the
    /// fleet, a retired node's hardware no longer matters: none of these changes anything (see
    /// `Observer::voided_by_retirement`), so none is an event of the run. Left in, they would
    /// move the end of a run that runs out of events (and so the waiting time of a job that
    /// never runs again), which would then depend on how many records a failure was written
    /// as. (They are still counted as events read.) Records are dropped up to the horizon only:
    /// a failure model goes on for ever, and once every node it fails is retired it would
    /// otherwise be read for ever; the first record past the horizon stops the run there.
    fn drop_what_is_about_retired_nodes(&mut self) {
        if self.controller.stats().retired_nodes == 0 {
            return; // the common case, at every timestamp: nothing to look at
        }
        let observer = &self.observer;
        let horizon = self.stop_after.unwrap_or(SimTime::MAX);
        let mut dropped =
            self.hardware.drop_while(|event| event.time() <= horizon && observer.is_about_a_retired_node(event));
        while self.queue.peek_event().is_some_and(|e| observer.voided_by_retirement(e, &self.controller)) {
            self.queue.pop();
            dropped += 1;
        }
        self.controller.count_events(dropped);
    }

    /// Applies `event`, scheduled at `at` (on the wall clock, maybe before now).
    fn apply(&mut self, at: SimTime, event: Event, woken: &mut bool) -> bool {
        match event {
            Event::TaskFinished { task, attempt, .. } => self.controller.task_finished(task, attempt),
            Event::TaskExited { task, attempt, code } => {
                let failure = (code != 0).then(|| crate::controller::exited_with(code));
                let applied = self.controller.task_exited(task, attempt, failure.as_deref());
                if applied {
                    self.reported.exits.push((task, code));
                }
                applied
            }
            Event::JobArrival(job) => {
                self.controller.job_arrived(job);
                true
            }
            Event::Timer(timer) => self.controller.timer_fired(timer),
            Event::Cancel(job) => self.controller.cancel_job(job),
            Event::Wake => {
                self.controller.wake(self.wakes.remove(&at).unwrap_or(1));
                *woken = true;
                false
            }
            Event::Pass => {
                self.controller.count_event();
                *woken = true;
                false
            }
            hardware => unreachable!("hardware events are applied first: {hardware:?}"),
        }
    }

    fn decide(&mut self, policy: &mut dyn Policy, changed: bool) {
        let committed = self.controller.decide(policy, &mut self.effects);
        // A policy that only asks to be woken again, with nothing running, nothing arriving and
        // nothing changed, would spin forever in simulated time: its wake-ups are dropped and
        // the run ends with its waiting jobs reported unfinished. (On the wall clock, a job
        // may arrive at any time: they are kept.)
        let spinning = self.clock == Clock::Virtual
            && committed == 0
            && !changed
            && self.controller.running_tasks() == 0
            && self.next_arrival_time().is_none();
        for effect in self.effects.drain(..) {
            match effect {
                Effect::Started { task, job, attempt, finish_at } => match self.clock {
                    Clock::Virtual => self.queue.push(finish_at, Event::TaskFinished { task, job, attempt }),
                    Clock::Wall => self.reported.started(&mut self.queue, task, attempt),
                },
                Effect::Stopped { .. } => self.stale += 1,
                Effect::WakeAt(at) if !spinning => wake_at(&mut self.wakes, &mut self.queue, at),
                Effect::WakeAt(_) => {}
            }
        }
        if self.clock == Clock::Virtual && self.stale >= PURGE_AT_LEAST && self.stale * 2 >= self.queue.len() {
            self.purge_stale();
        }
    }

    /// Drops the completions of attempts that have ended (a preempted task's), which would
    /// otherwise stay queued until their time, each a heap entry and a pop: a preemptive policy
    /// under overload leaves millions. A stale completion changes nothing when it pops but the
    /// time the run has reached, and only the latest one matters for that (see
    /// `end_after_purged`), so decisions, integrals and the digest are what they would be.
    fn purge_stale(&mut self) {
        let controller = &self.controller;
        let mut latest = self.purged_until;
        self.queue.retain(|key, event| {
            let Event::TaskFinished { task, attempt, .. } = *event else { return true };
            // An ended attempt never runs again: a restart is a new attempt. (A task let go
            // with its job runs no more.)
            let live = controller
                .resident_task(task)
                .is_some_and(|t| t.attempt == attempt && t.status == crate::state::TaskStatus::Running);
            if !live {
                latest = latest.max(Some(key.time));
            }
            live
        });
        self.purged_until = latest;
        self.stale = 0;
    }

    /// Out of events: had the purged stale completions stayed queued, the run would have popped
    /// them in time order (changing nothing) and ended at the last of them, or at the horizon
    /// if one lay past it. Ends the run there, as it would have.
    fn end_after_purged(&mut self) {
        let Some(last) = self.purged_until.filter(|&t| t > self.controller.now()) else { return };
        match self.stop_after {
            Some(end) if last > end => self.controller.stop_at_horizon(end),
            _ => self.controller.advance_to(last),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Three askings for one time and one for another queue two wake-ups, and remember how
    /// often each time was asked for.
    #[test]
    fn wake_ups_asked_for_one_time_are_queued_once() {
        let (mut wakes, mut queue) = (BTreeMap::new(), EventQueue::default());
        for at in [5, 9, 5, 5] {
            wake_at(&mut wakes, &mut queue, SimTime(at));
        }
        assert_eq!(queue.len(), 2);
        assert_eq!(wakes, BTreeMap::from([(SimTime(5), 3), (SimTime(9), 1)]));
    }
}
