//! Long random live sessions through the driver (submissions with DAGs and estimates,
//! exits that succeed and fail, heartbeats that stop, agent restarts, GPU failures and their
//! return, cancels), each exported as a trace and replayed by `sim::simulate`: the replay must
//! make the same decisions, in the same order, at the same times, as the session did, and the
//! journal must rebuild the same session. Seeded: a failure names its seed and policy.

use rand::RngExt;
use schedlab_live::driver::{Batch, Driver, DriverConfig, Input};
use schedlab_live::wire::{JobRequest, TaskRequest};
use sim::{DecisionRecord, TaskStatus};

/// The session's random choices: a named stream of the seed, as the simulator's own.
struct Rng(sim::rng::StreamRng);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0.random_range(0..n)
    }
    fn chance(&mut self, percent: u64) -> bool {
        self.below(100) < percent
    }
}

type Line = (u64, &'static str, u32, Option<u32>, Vec<u32>);

fn line(d: &DecisionRecord) -> Line {
    (d.time.as_ms(), d.kind.as_str(), d.job.0, d.task.map(|t| t.0), d.gpus.iter().map(|g| g.0).collect())
}

/// The session's trace replayed by the simulator: its decisions.
fn replayed(driver: &Driver) -> Vec<Line> {
    driver.replay_in_simulator(&policies::Registry::builtin()).unwrap().decisions.iter().map(line).collect()
}

/// A job of 1 to 3 tasks, later ones sometimes depending on earlier ones.
fn random_job(rng: &mut Rng, index: usize) -> JobRequest {
    let tasks = (0..1 + rng.below(3))
        .map(|t| {
            let depends_on = if t > 0 && rng.chance(40) { vec![(rng.below(t)).to_string()] } else { Vec::new() };
            let estimate_s = Some(serde_json::Number::from(1 + rng.below(20)));
            TaskRequest {
                gpus: 1 + rng.below(3) as u32,
                depends_on,
                estimate_s,
                ..TaskRequest::new(t.to_string(), "true")
            }
        })
        .collect();
    JobRequest { priority: rng.below(3) as i32, ..JobRequest::new(format!("j{index}"), tasks) }
}

/// One batch's inputs at `now` (the nodes `silent` do not beat).
fn random_inputs(rng: &mut Rng, d: &Driver, nodes: u32, silent: &[bool], submitted: &mut usize) -> Vec<Input> {
    let mut inputs = Vec::new();
    for node in 0..nodes {
        if !silent[node as usize] && rng.chance(60) {
            inputs.push(Input::Beat { node });
        }
    }
    if rng.chance(35) {
        inputs.push(Input::submit(random_job(rng, *submitted)));
        *submitted += 1;
    }
    let running: Vec<_> = d.running_tasks().filter(|&t| d.controller().task(t).stalled_since.is_none()).collect();
    for task in running {
        if rng.chance(20) {
            let state = d.controller().task(task);
            assert_eq!(state.status, TaskStatus::Running);
            let code = if rng.chance(10) { 3 } else { 0 };
            inputs.push(Input::Exit { task: task.0, attempt: state.attempt, code });
        }
    }
    if rng.chance(3) {
        inputs.push(Input::GpuFail {
            node: rng.below(nodes as u64) as u32,
            slot: rng.below(2) as u32,
            what: "xid 79".into(),
        });
    }
    if rng.chance(4) {
        inputs.push(Input::GpuRepair { node: rng.below(nodes as u64) as u32, slot: rng.below(2) as u32 });
    }
    if rng.chance(2) {
        inputs.push(Input::NodeRestarted { node: rng.below(nodes as u64) as u32 });
    }
    if *submitted > 0 && rng.chance(4) {
        inputs.push(Input::Cancel { job: rng.below(*submitted as u64) as u32 });
    }
    if inputs.is_empty() {
        inputs.push(Input::Tick);
    }
    inputs
}

/// Runs a seeded session of `batches` batches under `policy`; returns the driver and its journal.
fn session(seed: u64, policy: &str, batches: usize) -> (Driver, Vec<Batch>) {
    let mut rng = Rng(sim::rng::stream(seed, "random-session"));
    let nodes = 4;
    let config = DriverConfig { seed, heartbeat_ms: 1000, ..DriverConfig::new("4x2", policy) };
    let mut d = Driver::new(config).unwrap();
    let mut journal = vec![d.start_batch()];
    d.apply(journal[0].clone()).unwrap();
    let (mut now, mut submitted) = (0, 0);
    let mut silent = vec![false; nodes as usize];
    for _ in 0..batches {
        now += 1 + rng.below(900);
        // A node falls silent now and then (declared dead after 3 s), and beats again later.
        let n = rng.below(nodes as u64) as usize;
        if rng.chance(3) {
            silent[n] = !silent[n];
        }
        let batch = Batch { time_ms: now, inputs: random_inputs(&mut rng, &d, nodes, &silent, &mut submitted) };
        let ticks = d.apply(batch.clone()).unwrap();
        journal.extend(ticks.into_iter().chain([batch]));
    }
    (d, journal)
}

#[test]
fn long_random_sessions_replay_in_the_simulator_with_the_same_decisions() {
    // Policies that read no true duration: live mode knows a task's work only when its process
    // exits, the replay knows it from the start, so a policy reading it decides differently.
    for policy in [
        "fifo",
        "priority",
        "easy-backfill[duration=estimate]",
        "sjf[duration=estimate]",
        "srtf[duration=estimate]",
        "tiresias",
        "fair-share",
        "themis[duration=estimate]",
    ] {
        for seed in 1..=6 {
            let (d, journal) = session(seed, policy, 400);
            let live: Vec<Line> = d.decisions().iter().map(line).collect();
            assert!(
                live.iter().filter(|l| l.1 == "start").count() > 20,
                "seed {seed} {policy}: too quiet to test much"
            );
            // The replay goes on past the session's end (what still runs ends at its assumed
            // work): only what happened by then is compared.
            let sim: Vec<Line> = replayed(&d).into_iter().filter(|l| l.0 <= d.now().as_ms()).collect();
            let first_difference = live.iter().zip(&sim).position(|(a, b)| a != b);
            assert!(
                live == sim,
                "seed {seed} {policy}: the replay differs from the session at decision {:?} (live {} decisions, replay {})\nlive: {:?}\nsim:  {:?}",
                first_difference,
                live.len(),
                sim.len(),
                first_difference.map(|i| &live[i.saturating_sub(2)..(i + 3).min(live.len())]),
                first_difference.map(|i| &sim[i.saturating_sub(2)..(i + 3).min(sim.len())]),
            );
            let rebuilt = Driver::replay(d.config().clone(), journal).unwrap();
            assert_eq!(rebuilt.controller().digest_hex(), d.controller().digest_hex(), "seed {seed} {policy}: journal");
        }
    }
}
