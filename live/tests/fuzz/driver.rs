//! Job bodies through the driver, as the coordinator takes them: parsed, checked, journaled
//! and applied, with random exits, beats, cancels and hardware trouble after them; then the
//! session exports, replays in the simulator to the live decisions, and its journal
//! rebuilds it.

use super::harness::{all_classes, seen};
use super::json::Body;
use super::mix::Mix;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use schedlab_live::config::LiveConfig;
use schedlab_live::driver::{Batch, Driver, Input};
use schedlab_live::wire::{JobRequest, Refusal};
use sim::{DecisionRecord, SimDuration, SimTime, TaskStatus};

/// A decision as compared: time, kind, job, task, GPUs.
pub type Line = (u64, &'static str, u32, Option<u32>, Vec<u32>);

fn line(d: &DecisionRecord) -> Line {
    (d.time.as_ms(), d.kind.as_str(), d.job.0, d.task.map(|t| t.0), d.gpus.iter().map(|g| g.0).collect())
}

/// The decisions `d` made, and those the replay of its trace in the simulator makes up to
/// `d`'s now; `whose` trace it is (`session`, `journal`) names it in the failures.
pub fn live_and_replayed(d: &Driver, whose: &str) -> Result<(Vec<Line>, Vec<Line>), TestCaseError> {
    let trace = d.trace();
    prop_assert!(trace.is_ok(), "the {whose} does not export: {}", trace.err().unwrap_or_default());
    let replay = d
        .replay_in_simulator(&policies::Registry::builtin())
        .map_err(|e| TestCaseError::fail(format!("the {whose}'s trace does not replay: {e}")))?;
    let live: Vec<Line> = d.decisions().iter().map(line).collect();
    let sim: Vec<Line> = replay.decisions.iter().map(line).filter(|l| l.0 <= d.now().as_ms()).collect();
    Ok((live, sim))
}

const POLICIES: &[&str] = &[
    "fifo",
    "priority",
    "sjf[duration=estimate]",
    "easy-backfill[duration=estimate]",
    "fair-share",
    "tiresias",
    "fifo[placement=local]",
];

/// Two queues: `team` (at most 2 GPUs) and `other`.
pub const QUEUES: &str = "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\n\
                          team,,2,,0,1,false\n\
                          other,,,,0,1,false\n";

/// The session's settings, chosen by `choice`: the policy, queues or none, datasets or none,
/// an hour or 2 s of assumed work (checkpoint intervals with SCHEDLAB_FUZZ_ALL).
fn driver_config(choice: u64) -> LiveConfig {
    let mut mix = Mix(choice);
    let mut config =
        LiveConfig::new("2x2:A100,2x2:V100", mix.pick(POLICIES)).unwrap().with_seed(choice % 7).with_heartbeat_ms(1000);
    if mix.chance(50) {
        config.queues = QUEUES.into();
    }
    if mix.chance(50) {
        config.datasets = "dataset,nodes,transfer_s\nimagenet,1,5\n".into();
    }
    if mix.chance(30) {
        config.default_work_ms = 2000;
    }
    if all_classes() && mix.chance(20) {
        config.run.restart_overhead_s = run::Seconds(sim::SimDuration(200));
    }
    if all_classes() && mix.chance(30) {
        config.run.checkpoint_s = run::Seconds(sim::SimDuration(1500));
    }
    config
}

/// What the coordinator checks before it journals a submission (`Coordinator::submit`): the
/// driver's checks, a queue only where queues exist, a job that fits the cluster.
fn admit(d: &Driver, job: &JobRequest) -> Result<(), Refusal> {
    use schedlab_live::coordinator::admission::{check_queue, never_fits};
    d.check_submission(job)?;
    check_queue(job, !d.config().queues.trim().is_empty())?;
    let spec = job.to_spec(SimTime::ZERO, SimDuration(1))?;
    match never_fits(d.cluster(), &spec) {
        Some(reason) => Err(Refusal::bad(format!("job `{}`: {reason}", job.name))),
        None => Ok(()),
    }
}

/// The job without what the open defects of fuzz_findings.rs need (without
/// SCHEDLAB_FUZZ_ALL): no checkpoint intervals, no restart overheads, no speeds, no datasets
/// where the cluster places them (`datasets`). None when nothing was left out. What is left
/// out is parsed and checked all the same (the refusals of the whole job come first).
fn without_open_defects(job: &JobRequest, datasets: bool) -> Option<JobRequest> {
    let mut job = job.clone();
    let mut changed = false;
    for t in &mut job.tasks {
        changed |= t.checkpoint_s.take().is_some();
        changed |= t.restart_overhead_s.take().is_some();
        changed |= t.speeds.take().is_some();
        if datasets {
            changed |= t.dataset.take().is_some();
        }
    }
    changed.then_some(job)
}

/// A session of the driver fed bodies, each followed by random inputs drawn from `mix`.
struct Session {
    d: Driver,
    journal: Vec<Batch>,
    now: u64,
    mix: Mix,
    /// Nodes that do not beat (declared dead 3 s after their last beat).
    silent: Vec<bool>,
    submitted: u32,
}

impl Session {
    fn new(config: LiveConfig, follow: u64) -> Session {
        let d = Driver::new(config).expect("the fuzz configurations are valid");
        let start = d.start_batch();
        let nodes = d.cluster().nodes().len();
        let mut s =
            Session { d, journal: Vec::new(), now: 0, mix: Mix(follow), silent: vec![false; nodes], submitted: 0 };
        s.apply(start);
        s
    }

    fn apply(&mut self, batch: Batch) {
        let ticks = self.d.apply(batch.clone()).expect("batches in time order");
        self.now = batch.time_ms;
        self.journal.extend(ticks.into_iter().chain([batch]));
    }

    /// The time of the next batch: mostly a second or less later, sometimes minutes (nodes
    /// silent that long are declared dead), now and then days (past windows and deadlines).
    fn next_time(&mut self) -> u64 {
        let gap = match self.mix.below(100) {
            0 => 3_600_000 + self.mix.below(30 * 86_400_000),
            1..=5 => 5_000 + self.mix.below(60_000),
            _ => 1 + self.mix.below(1_500),
        };
        self.now + gap
    }

    /// One body as the API takes it: refused with a reason, or journaled and applied.
    fn submit(&mut self, body: &[u8]) -> Result<(), TestCaseError> {
        let job = match serde_json::from_slice::<JobRequest>(body) {
            Ok(job) => job,
            Err(e) => {
                prop_assert!(!e.to_string().is_empty());
                seen("parse error");
                return Ok(());
            }
        };
        if let Err(r) = admit(&self.d, &job) {
            seen(format!("refused {}", r.status));
            prop_assert!(matches!(r.status, 400 | 409), "refused with {}: {}", r.status, r.reason);
            prop_assert!(!r.reason.trim().is_empty(), "refused without a reason");
            return Ok(());
        }
        let datasets = !self.d.config().datasets.trim().is_empty();
        let job = match (all_classes(), without_open_defects(&job, datasets)) {
            (false, Some(plain)) => {
                // Left out as the open defects are; what remains must be accepted as well.
                if admit(&self.d, &plain).is_err() {
                    return Ok(());
                }
                plain
            }
            _ => job,
        };
        let time_ms = self.next_time();
        self.apply(Batch { time_ms, inputs: vec![Input::submit(job)] });
        self.submitted += 1;
        seen("accepted");
        Ok(())
    }

    /// One batch of what agents and users report: beats, exits, trouble (a tick when there
    /// is none of them).
    fn follow(&mut self) {
        let mut inputs = self.beats();
        self.exits(&mut inputs);
        self.trouble(&mut inputs);
        if inputs.is_empty() {
            inputs.push(Input::Tick);
        }
        let time_ms = self.next_time();
        self.apply(Batch { time_ms, inputs });
    }

    /// Beats from the nodes not silent (a node falls silent or beats again now and then).
    fn beats(&mut self) -> Vec<Input> {
        let nodes = self.silent.len() as u32;
        let mut inputs = Vec::new();
        if self.mix.chance(4) {
            let n = self.mix.below(u64::from(nodes)) as usize;
            self.silent[n] = !self.silent[n];
        }
        for node in 0..nodes {
            if !self.silent[node as usize] && self.mix.chance(90) {
                inputs.push(Input::Beat { node });
            }
        }
        inputs
    }

    /// Exits of running attempts, with any exit code.
    fn exits(&mut self, inputs: &mut Vec<Input>) {
        let running: Vec<_> = self.d.running_tasks().collect();
        for task in running {
            let state = self.d.controller().task(task);
            if state.stalled_since.is_some() || !self.mix.chance(30) {
                continue;
            }
            debug_assert_eq!(state.status, TaskStatus::Running);
            let code = if self.mix.chance(80) {
                0
            } else {
                self.mix.pick(&[1, 3, 137, 255, 256, -1, i32::MIN, i32::MAX, 127])
            };
            inputs.push(Input::Exit { task: task.0, attempt: state.attempt, code });
        }
    }

    /// GPU failures and repairs, agent restarts (on nodes and slots there are, mostly),
    /// cancels, and now and then an exit of no task there is.
    fn trouble(&mut self, inputs: &mut Vec<Input>) {
        let nodes = self.silent.len() as u32;
        let slot = |mix: &mut Mix| mix.pick(&[0, 1, 1, 0, 7, u32::MAX]);
        let node = |mix: &mut Mix| if mix.chance(95) { mix.below(u64::from(nodes)) as u32 } else { 99 };
        if self.mix.chance(3) {
            let (node, slot) = (node(&mut self.mix), slot(&mut self.mix));
            inputs.push(Input::GpuFail { node, slot, what: "xid 79".into() });
        }
        if self.mix.chance(4) {
            let (node, slot) = (node(&mut self.mix), slot(&mut self.mix));
            inputs.push(Input::GpuRepair { node, slot });
        }
        if self.mix.chance(2) {
            inputs.push(Input::NodeRestarted { node: node(&mut self.mix) });
        }
        if self.mix.chance(4) {
            let job =
                if self.mix.chance(90) { self.mix.below(u64::from(self.submitted.max(1))) as u32 } else { u32::MAX };
            inputs.push(Input::Cancel { job });
        }
        if self.mix.chance(2) {
            inputs.push(Input::Exit { task: u32::MAX, attempt: 1, code: 0 });
        }
    }

    /// The session exports, replays to the same decisions, and its journal rebuilds it.
    fn check(&self) -> Result<(), TestCaseError> {
        let d = &self.d;
        let (live, sim) = live_and_replayed(d, "session")?;
        if live != sim {
            let at = live.iter().zip(&sim).position(|(a, b)| a != b).unwrap_or(live.len().min(sim.len()));
            let around = |v: &[Line]| v[at.saturating_sub(2)..(at + 3).min(v.len())].to_vec();
            return Err(TestCaseError::fail(format!(
                "the replay differs at decision {at} (live {}, replay {}): live {:?}, replay {:?}",
                live.len(),
                sim.len(),
                around(&live),
                around(&sim)
            )));
        }
        let rebuilt = Driver::replay(d.config().clone(), self.journal.clone());
        let rebuilt = rebuilt.map_err(|e| TestCaseError::fail(format!("the journal does not replay: {e}")))?;
        prop_assert_eq!(rebuilt.controller().digest_hex(), d.controller().digest_hex(), "the journal rebuilds it");
        Ok(())
    }
}

/// `bodies` through a session of settings `config_choice`, each followed by 0 to 5 batches of
/// random inputs, then 10 more; then the session's checks.
pub fn check_bodies(config_choice: u64, follow: u64, bodies: &[Body]) -> Result<(), TestCaseError> {
    let mut s = Session::new(driver_config(config_choice), follow);
    for body in bodies {
        s.submit(&body.0)?;
        for _ in 0..s.mix.below(6) {
            s.follow();
        }
    }
    for _ in 0..10 {
        s.follow();
    }
    s.check()
}
