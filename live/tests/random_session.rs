//! Long random live sessions through the driver (submissions with DAGs of every dependency
//! kind the API takes and estimates, exits that succeed and fail before and after the data
//! points waited on, heartbeats that stop, agent restarts, GPU failures and their return,
//! cancels), each exported as a trace and replayed by `sim::simulate`: the replay must make the
//! same decisions, in the same order, at the same times, as the session did, and the journal
//! must rebuild the same session. Seeded: a failure names its seed and policy.

use rand::RngExt;
use schedlab_live::config::LiveConfig;
use schedlab_live::driver::{Batch, Driver, Input};
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

/// What a session's inputs include besides submissions, exits and beats.
#[derive(Debug, Clone, Copy)]
struct Mix {
    /// Checkpoint intervals on some tasks (`checkpoint_s`).
    checkpoints: bool,
    /// `checkpoint=N` items on the tasks with checkpoint intervals.
    checkpoint_deps: bool,
    /// GPU failures and repairs, agent restarts, nodes that fall silent or miss beats.
    hardware: bool,
}

fn line(d: &DecisionRecord) -> Line {
    (d.time.as_ms(), d.kind.as_str(), d.job.0, d.task.map(|t| t.0), d.gpus.iter().map(|g| g.0).collect())
}

/// The session's trace replayed by the simulator: its decisions.
fn replayed(driver: &Driver) -> Vec<Line> {
    driver.replay_in_simulator(&policies::Registry::builtin()).unwrap().decisions.iter().map(line).collect()
}

/// The work the driver assumes for a task without an estimate (`LiveConfig::new`'s hour).
const DEFAULT_WORK_MS: u64 = 3_600_000;

/// `ms` as the seconds a `depends_on` item or a JSON number spells (`1.250`).
fn seconds(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// A `depends_on` item on task `upstream`, of every kind the API accepts (as
/// `traces::parse_dep_kind` reads what follows `:`): the bare name (success), `:success`,
/// `:any`, `:failure`, `:data=SECONDS` (a point anywhere in the upstream's assumed work, so that
/// its process ends before the point as often as after it, or fails first), and
/// `:checkpoint=N` on an upstream that checkpoints at intervals (`checkpoints`).
fn random_dep(rng: &mut Rng, upstream: usize, work_ms: u64, checkpoints: bool) -> String {
    let kind = match rng.below(if checkpoints { 7 } else { 6 }) {
        0 => String::new(),
        1 => ":success".into(),
        2 => ":any".into(),
        3 => ":failure".into(),
        // Most points early (the first seconds, where the exits fall), some anywhere.
        4 => format!(":data={}", seconds(1 + rng.below(work_ms.min(4_000)))),
        5 => format!(":data={}", seconds(1 + rng.below(work_ms))),
        _ => format!(":checkpoint={}", 1 + rng.below(4)),
    };
    format!("{upstream}{kind}")
}

/// A job of 1 to 4 tasks, later ones sometimes depending on earlier ones (one or two items,
/// of every dependency kind); estimates on most tasks (all of them when `estimates`: the policy
/// reads them), checkpoint intervals on some when the mix has them.
fn random_job(rng: &mut Rng, index: usize, estimates: bool, mix: Mix) -> JobRequest {
    let mut works: Vec<u64> = Vec::new();
    let mut checkpoints: Vec<bool> = Vec::new();
    let tasks = (0..1 + rng.below(4) as usize)
        .map(|t| {
            let estimate_ms = (estimates || rng.chance(80)).then(|| 200 * (1 + rng.below(60)));
            // A checkpoint every 0.5 to 2 s of work: `checkpoint=N` items wait for one of them.
            let checkpoint_ms = (mix.checkpoints && rng.chance(40)).then(|| 500 * (1 + rng.below(4)));
            let mut depends_on = Vec::new();
            if t > 0 && rng.chance(60) {
                for _ in 0..1 + rng.below(2) {
                    let up = rng.below(t as u64) as usize;
                    depends_on.push(random_dep(rng, up, works[up], mix.checkpoint_deps && checkpoints[up]));
                }
            }
            works.push(estimate_ms.unwrap_or(DEFAULT_WORK_MS));
            checkpoints.push(checkpoint_ms.is_some());
            let number = |ms: u64| seconds(ms).parse::<serde_json::Number>().expect("a JSON number");
            TaskRequest {
                gpus: 1 + rng.below(3) as u32,
                depends_on,
                estimate_s: estimate_ms.map(number),
                checkpoint_s: checkpoint_ms.map(number),
                ..TaskRequest::new(t.to_string(), "true")
            }
        })
        .collect();
    JobRequest { priority: rng.below(3) as i32, ..JobRequest::new(format!("j{index}"), tasks) }
}

/// One batch's inputs at `now` (the nodes `silent` do not beat).
fn random_inputs(
    rng: &mut Rng,
    d: &Driver,
    (nodes, mix): (u32, Mix),
    silent: &[bool],
    submitted: &mut usize,
) -> Vec<Input> {
    // A policy that reads estimates refuses a task without one (`duration=estimate`).
    let estimates = d.config().run.policy.to_string().contains("=estimate");
    let mut inputs = Vec::new();
    for node in 0..nodes {
        // Without hardware trouble every node beats in every batch (a node that misses beats
        // for 3 s is declared dead).
        if !silent[node as usize] && (!mix.hardware || rng.chance(60)) {
            inputs.push(Input::Beat { node });
        }
    }
    if rng.chance(35) {
        let job = random_job(rng, *submitted, estimates, mix);
        // Every job made here is one the API accepts, as the coordinator checks it.
        if let Err(refusal) = d.check_submission(&job) {
            panic!("{} refused: {refusal}\n{}", job.name, serde_json::to_string(&job).unwrap());
        }
        inputs.push(Input::submit(job));
        *submitted += 1;
    }
    let running: Vec<_> = d.running_tasks().filter(|&t| d.controller().task(t).stalled_since.is_none()).collect();
    for task in running {
        if rng.chance(20) {
            let state = d.controller().task(task);
            assert_eq!(state.status, TaskStatus::Running);
            // Failures end `failure` branches, skip `success` ones, and end an upstream before
            // its data point as often as an early success does.
            let code = if rng.chance(12) { [1, 3, 137][rng.below(3) as usize] } else { 0 };
            inputs.push(Input::Exit { task: task.0, attempt: state.attempt, code });
        }
    }
    if mix.hardware && rng.chance(3) {
        inputs.push(Input::GpuFail {
            node: rng.below(nodes as u64) as u32,
            slot: rng.below(2) as u32,
            what: "xid 79".into(),
        });
    }
    if mix.hardware && rng.chance(4) {
        inputs.push(Input::GpuRepair { node: rng.below(nodes as u64) as u32, slot: rng.below(2) as u32 });
    }
    if mix.hardware && rng.chance(2) {
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

/// The session's settings: `policy`, `seed`, a beat a second, and `flags` (as `simulate` and
/// `live serve` take them).
fn config(seed: u64, policy: &str, flags: &[&str]) -> LiveConfig {
    let seed = seed.to_string();
    let words = [&["--policy", policy, "--seed", &seed, "--heartbeat-s", "1"][..], flags].concat();
    LiveConfig { run: run::RunSpec::from_flags(words).unwrap(), ..LiveConfig::new("4x2", policy).unwrap() }
}

/// Runs a seeded session of `batches` batches under `policy` and the run settings `flags`;
/// returns the driver and its journal.
fn session(seed: u64, policy: &str, batches: usize, (mix, flags): (Mix, &[&str])) -> (Driver, Vec<Batch>) {
    let mut rng = Rng(sim::rng::stream(seed, "random-session"));
    let nodes = 4;
    let mut d = Driver::new(config(seed, policy, flags)).unwrap();
    let mut journal = vec![d.start_batch()];
    d.apply(journal[0].clone()).unwrap();
    let (mut now, mut submitted) = (0, 0);
    let mut silent = vec![false; nodes as usize];
    for _ in 0..batches {
        now += 1 + rng.below(900);
        // A node falls silent now and then (declared dead after 3 s), and beats again later.
        let n = rng.below(nodes as u64) as usize;
        if mix.hardware && rng.chance(3) {
            silent[n] = !silent[n];
        }
        let inputs = random_inputs(&mut rng, &d, (nodes, mix), &silent, &mut submitted);
        let batch = Batch { time_ms: now, inputs };
        let ticks = d.apply(batch.clone()).unwrap();
        journal.extend(ticks.into_iter().chain([batch]));
    }
    (d, journal)
}

/// Runs `seeds` sessions of 400 batches of `mix` under each of `policies`: each must replay in
/// the simulator to the same decisions, and its journal rebuild the same session.
fn check_sessions(policies: &[&str], seeds: std::ops::RangeInclusive<u64>, mix: Mix) {
    check_sessions_with(policies, seeds, mix, &[]);
}

/// [`check_sessions`] under the run settings `flags`.
fn check_sessions_with(policies: &[&str], seeds: std::ops::RangeInclusive<u64>, mix: Mix, flags: &[&str]) {
    for &policy in policies {
        for seed in seeds.clone() {
            let (d, journal) = session(seed, policy, 400, (mix, flags));
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
                "seed {seed} {policy} {mix:?} {flags:?}: the replay differs from the session at decision {:?} (live {} decisions, replay {})\nlive: {:?}\nsim:  {:?}",
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

/// Policies that read no true duration: live mode knows a task's work only when its process
/// exits, the replay knows it from the start, so a policy reading it decides differently.
const POLICIES: [&str; 8] = [
    "fifo",
    "priority",
    "easy-backfill[duration=estimate]",
    "sjf[duration=estimate]",
    "srtf[duration=estimate]",
    "tiresias",
    "fair-share",
    "themis[duration=estimate]",
];

#[test]
fn long_random_sessions_replay_in_the_simulator_with_the_same_decisions() {
    // Every dependency kind but `checkpoint=N` (it needs checkpoint intervals: below), and every
    // kind of hardware trouble.
    check_sessions(&POLICIES, 1..=6, Mix { checkpoints: false, checkpoint_deps: false, hardware: true });
}

/// The run settings live mode takes from `simulate` (consolidation, spares, passes, release
/// latency, retry budgets): each changes what the
/// session decides, and the replay of its trace under the same settings decides alike.
#[test]
fn sessions_under_the_run_settings_of_simulate_replay() {
    let hardware = Mix { checkpoints: false, checkpoint_deps: false, hardware: true };
    let settings: [&[&str]; 6] = [
        &["--whole-nodes", "2"],
        &["--single-node-up-to", "2"],
        &["--spare-nodes", "1"],
        &["--pass-interval-s", "0.5"],
        &["--release-latency-s", "0.3"],
        &["--max-retries", "1", "--missed-beats", "2"],
    ];
    let policies = ["fifo", "easy-backfill[duration=estimate]", "tiresias"];
    for flags in settings {
        let plain = session(1, "fifo", 400, (hardware, &[])).0;
        let set = session(1, "fifo", 400, (hardware, flags)).0;
        assert_ne!(set.controller().digest_hex(), plain.controller().digest_hex(), "{flags:?} changed nothing");
        check_sessions_with(&policies, 1..=2, hardware, flags);
    }
}

#[test]
fn sessions_with_checkpoint_intervals_replay() {
    // `checkpoint_s` on some tasks, every dependency kind but `checkpoint=N`; no hardware
    // trouble and policies that never preempt, so that no attempt fails after passing a
    // checkpoint (see the last test).
    let policies = ["fifo", "easy-backfill[duration=estimate]", "sjf[duration=estimate]", "fair-share"];
    check_sessions(&policies, 1..=4, Mix { checkpoints: true, checkpoint_deps: false, hardware: false });
}

/// `checkpoint=N` items among every other kind (on upstreams that checkpoint at intervals), no
/// hardware trouble.
#[test]
fn sessions_with_checkpoint_dependencies_replay() {
    let policies = ["fifo", "easy-backfill[duration=estimate]", "sjf[duration=estimate]", "fair-share"];
    check_sessions(&policies, 1..=4, Mix { checkpoints: true, checkpoint_deps: true, hardware: false });
}

/// Checkpoint intervals with hardware trouble and preemption. Ignored until the driver's trace
/// gives an attempt that failed after passing a checkpoint its real run: today a task that
/// fails past its last checkpoint and then ends quickly is written with its saved work plus the
/// last attempt's, less than its first attempt had already run, and the replay finishes that
/// first attempt early (fuzz_findings.rs: `a_task_that_fails_past_its_last_checkpoint_replays`).
#[test]
#[ignore = "defect: checkpointed work lost to a failure is missing from the trace (see fuzz_findings.rs)"]
fn sessions_with_checkpoint_intervals_and_hardware_trouble_replay() {
    check_sessions(&POLICIES, 1..=6, Mix { checkpoints: true, checkpoint_deps: true, hardware: true });
}
