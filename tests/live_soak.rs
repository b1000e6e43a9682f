//! A soak of live mode: a seeded random sequence of steps against a real coordinator and three
//! agents (processes of the `schedlab` binary on loopback, simulated GPUs): submissions of
//! short jobs (1 or 2 tasks of 1 or 2 GPUs, some exiting non-zero), cancels, kill -9 of an
//! agent and of the coordinator (some while a burst of submissions is under way), each
//! started again. After every step: every acknowledged job, and no other, is known to the
//! coordinator, and no attempt of a task ran twice. At the end: every job reached a final
//! state, what each task's final attempt did agrees with its reported state, and the exported
//! session replays in the simulator to the same decisions and digest.
//!
//! Each task's command appends `start JOB TASK ATTEMPT RANK` to a file the test owns before it
//! sleeps, and `end JOB TASK ATTEMPT RANK CODE` before it exits (a 2-GPU task may span two
//! nodes: one process per node, each with its rank). The seed is printed with each
//! step (`SCHEDLAB_TEST_SEED=N` repeats a sequence; the timings it meets may differ). Every
//! wait for a state is a poll with a deadline; the sleeps only vary when kills land.

mod common;

use common::live::{Session, wait_for};
use live::client::{CallError, Client};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const AGENTS: [&str; 3] = ["n0", "n1", "n2"];
const ARGS: [&str; 6] = ["--cluster", "3x2:SIM", "--heartbeat-s", "0.2", "--missed-beats", "5"];
const STEPS: usize = 30;

/// splitmix64: a seeded generator for the steps.
struct SplitMix(u64);

impl SplitMix {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }

    fn millis(&mut self, max: u64) -> Duration {
        Duration::from_millis(self.below(max + 1))
    }
}

/// The soak's session: the processes, the agents' indexes in them, and what was acknowledged.
struct Soak {
    s: Session,
    listen: String,
    agents: BTreeMap<&'static str, usize>,
    marks: PathBuf,
    /// Every job the coordinator acknowledged (201, or 409 for a resubmission whose first
    /// answer was lost to a kill), with the exit code its tasks were written to end with.
    acknowledged: BTreeMap<String, i32>,
    next: usize,
}

impl Soak {
    /// A job of 1 or 2 tasks of 1 or 2 GPUs sleeping up to 1.2 s; one in five exits 3.
    fn job(&mut self, rng: &mut SplitMix) -> (String, Value, i32) {
        let name = format!("j{}", self.next);
        self.next += 1;
        let code = if rng.below(5) == 0 { 3 } else { 0 };
        let tasks: Vec<Value> = (0..1 + rng.below(2))
            .map(|t| {
                let ids = "$SCHEDLAB_JOB $SCHEDLAB_TASK $SCHEDLAB_ATTEMPT $SCHEDLAB_RANK";
                let command = format!(
                    "echo \"start {ids}\" >> '{m}'; sleep {s}; echo \"end {ids} {code}\" >> '{m}'; exit {code}",
                    m = self.marks.display(),
                    s = 0.1 + rng.below(12) as f64 / 10.0,
                );
                let deps: Vec<&str> = if t == 1 && rng.below(3) == 0 { vec!["t0"] } else { vec![] };
                json!({ "name": format!("t{t}"), "command": command, "gpus": 1 + rng.below(2), "depends_on": deps })
            })
            .collect();
        (name.clone(), json!({ "name": name, "tasks": tasks }), code)
    }

    fn restart_coordinator(&mut self) {
        let state = self.s.state();
        let mut all = vec!["live", "serve", "--state", state.to_str().unwrap(), "--listen", &self.listen];
        all.extend_from_slice(&ARGS);
        self.s.coordinator = self.s.procs.spawn(&all, &self.s.dir.join("coordinator.log"));
        wait_for(30, "the coordinator to come back", || self.s.client().get::<Value>("/v1/jobs").ok());
    }

    fn registrations(&self, agent: &str) -> usize {
        let log = std::fs::read_to_string(self.s.dir.join(format!("agent-{agent}.log"))).unwrap_or_default();
        log.matches("registered as node").count()
    }

    fn kill_agent(&mut self, agent: &'static str) {
        self.s.procs.kill(self.agents[agent]);
    }

    fn start_agent(&mut self, agent: &'static str) {
        let index = self.s.agent(agent, 2);
        self.agents.insert(agent, index);
    }

    /// The invariants that hold after every step: the coordinator knows exactly the
    /// acknowledged jobs, and no attempt of a task (at a rank) has started twice.
    fn check(&self, seed: u64, step: usize) {
        let jobs: Value = self.s.client().get("/v1/jobs").unwrap();
        let known: BTreeSet<&str> =
            jobs["jobs"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
        let acknowledged: BTreeSet<&str> = self.acknowledged.keys().map(String::as_str).collect();
        assert_eq!(known, acknowledged, "seed {seed} step {step}: the coordinator's jobs are not those acknowledged");
        let mut seen = BTreeSet::new();
        for line in marks(&self.marks).iter().filter(|l| l[0] == "start") {
            assert!(seen.insert(line.clone()), "seed {seed} step {step}: {line:?} ran twice");
        }
    }
}

/// The marker file's lines, split into words.
fn marks(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| l.split(' ').map(str::to_string).collect()).collect()
}

/// Submits `job` until the coordinator answers: 201, or 409 when an earlier try whose answer
/// was lost had been committed. Anything else is the test's own mistake.
fn submit(client: &Client, job: &Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match client.post::<_, Value>("/v1/jobs", job) {
            Ok(_) => return,
            Err(CallError::Status(409, reason)) if reason.contains("already submitted") => return,
            Err(CallError::Status(code, reason)) if code != 503 => panic!("{job}: refused {code} {reason}"),
            Err(e) => {
                assert!(Instant::now() < deadline, "submitting {}: {e}", job["name"]);
                std::thread::sleep(Duration::from_millis(50));
            }
        }
    }
}

#[test]
fn a_seeded_soak_of_submissions_cancels_and_kills_loses_no_job_runs_no_attempt_twice_and_replays() {
    let seed: u64 = std::env::var("SCHEDLAB_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(12);
    println!("soak seed {seed} (SCHEDLAB_TEST_SEED={seed} repeats it)");
    let mut rng = SplitMix(seed);
    let s = Session::start("soak", &ARGS);
    let marks_path = s.dir.join("marks.txt");
    let mut soak = Soak {
        listen: s.addr.clone(),
        s,
        agents: BTreeMap::new(),
        marks: marks_path,
        acknowledged: BTreeMap::new(),
        next: 0,
    };
    for agent in AGENTS {
        soak.start_agent(agent);
    }
    soak.s.wait_agents(3);
    for step in 0..STEPS {
        match rng.below(20) {
            0..=8 => {
                let client = soak.s.client();
                for _ in 0..1 + rng.below(3) {
                    let (name, job, code) = soak.job(&mut rng);
                    println!("seed {seed} step {step}: submit {name}");
                    submit(&client, &job);
                    soak.acknowledged.insert(name, code);
                }
                std::thread::sleep(rng.millis(400));
            }
            9..=10 => {
                let name = format!("j{}", rng.below(soak.next.max(1) as u64));
                println!("seed {seed} step {step}: cancel {name}");
                match soak.s.client().post::<_, Value>(&format!("/v1/jobs/{name}/cancel"), &json!({})) {
                    Ok(_) | Err(CallError::Status(404 | 409, _)) => {}
                    Err(e) => panic!("seed {seed} step {step}: cancel {name}: {e}"),
                }
            }
            11..=14 => {
                let agent = AGENTS[rng.below(3) as usize];
                let down = rng.millis(1500);
                println!("seed {seed} step {step}: kill -9 agent {agent}, down {down:?}");
                let before = soak.registrations(agent);
                soak.kill_agent(agent);
                std::thread::sleep(down);
                soak.start_agent(agent);
                wait_for(30, "the agent to register again", || (soak.registrations(agent) > before).then_some(()));
            }
            _ => {
                // A kill -9 of the coordinator, while a burst of submissions is under way
                // (their answers may be lost: each is sent again until one comes), and
                // sometimes of an agent while the coordinator is down.
                let burst: Vec<(String, Value, i32)> = (0..rng.below(4)).map(|_| soak.job(&mut rng)).collect();
                let after = rng.millis(300);
                let agent = (rng.below(3) == 0).then(|| AGENTS[rng.below(3) as usize]);
                println!(
                    "seed {seed} step {step}: kill -9 the coordinator {after:?} into a burst of {:?}, agent {agent:?} restarted meanwhile",
                    burst.iter().map(|b| &b.0).collect::<Vec<_>>()
                );
                let submitter = {
                    let client = soak.s.client();
                    let jobs: Vec<Value> = burst.iter().map(|b| b.1.clone()).collect();
                    std::thread::spawn(move || jobs.iter().for_each(|job| submit(&client, job)))
                };
                std::thread::sleep(after);
                soak.s.procs.kill(soak.s.coordinator);
                if let Some(agent) = agent {
                    soak.kill_agent(agent);
                    soak.start_agent(agent);
                }
                soak.restart_coordinator();
                submitter.join().expect("the burst's submitter");
                for (name, _, code) in burst {
                    soak.acknowledged.insert(name, code);
                }
            }
        }
        soak.check(seed, step);
    }
    let jobs = soak.s.wait_jobs_ended(90);
    soak.check(seed, STEPS);
    let lines = marks(&soak.marks);
    let mut succeeded = 0;
    for j in jobs["jobs"].as_array().unwrap() {
        let name = j["name"].as_str().unwrap();
        let job = soak.s.job(name);
        let code = soak.acknowledged[name];
        for t in job["tasks"].as_array().unwrap() {
            check_task(seed, name, t, code, j["state"] == "cancelled", &lines);
        }
        succeeded += usize::from(j["state"] == "succeeded");
    }
    assert!(succeeded > 0, "seed {seed}: no job succeeded: {jobs:#}");
    let (live, digest) = soak.s.decisions();
    let (replayed, sim_digest, _) = soak.s.replay();
    assert_eq!((replayed, sim_digest), (live, digest), "seed {seed}: the replay made other decisions");
    for log in
        std::fs::read_dir(&soak.s.dir).unwrap().flatten().filter(|e| e.path().extension() == Some("log".as_ref()))
    {
        let text = std::fs::read_to_string(log.path()).unwrap();
        assert!(!text.contains("panicked"), "seed {seed}: {}:\n{text}", log.path().display());
    }
}

/// What the final attempt of task `t` of job `job` (whose tasks exit with `code`) did agrees
/// with its state: no attempt after it started; a succeeded task's attempt ran at rank 0 (whose
/// exit ends a task, on one node or many) to an exit 0, and one that failed with an exit code
/// ran there to that exit.
fn check_task(seed: u64, job: &str, t: &Value, code: i32, cancelled: bool, lines: &[Vec<String>]) {
    let task = t["name"].as_str().unwrap();
    let status = t["status"].as_str().unwrap();
    let ended = matches!(status, "succeeded" | "failed" | "unschedulable" | "skipped" | "blocked");
    assert!(cancelled || ended, "seed {seed}: {job}/{task} is {status} in a job that ended: {t}");
    let of_task = |l: &&Vec<String>| l[1] == job && l[2] == task;
    let attempt = t["attempt"].as_u64();
    for l in lines.iter().filter(of_task) {
        let a: u64 = l[3].parse().unwrap();
        assert!(attempt.is_some_and(|n| a <= n), "seed {seed}: {job}/{task} ran attempt {a}, beyond {t}");
    }
    let Some(attempt) = attempt else { return };
    let of_attempt = |kind: &'static str| {
        let attempt = attempt.to_string();
        move |l: &&Vec<String>| l[0] == kind && l[1] == job && l[2] == task && l[3] == attempt
    };
    let starts: Vec<&Vec<String>> = lines.iter().filter(of_attempt("start")).collect();
    let ends: Vec<&Vec<String>> = lines.iter().filter(of_attempt("end")).collect();
    if status == "succeeded" {
        assert_eq!(code, 0, "seed {seed}: {job}/{task} succeeded, but exits {code}");
        assert!(
            starts.iter().any(|l| l[4] == "0"),
            "seed {seed}: {job}/{task} succeeded without running attempt {attempt}"
        );
        let ended = ends.iter().any(|e| e[4] == "0" && e[5] == "0");
        assert!(ended, "seed {seed}: {job}/{task} succeeded, but attempt {attempt} rank 0 never exited 0");
    }
    if let Some(exit) = t["exit_code"].as_i64().filter(|&c| c != 0) {
        assert_eq!(exit, i64::from(code), "seed {seed}: {job}/{task} failed with {exit}: {t}");
        let ran = ends.iter().any(|e| e[4] == "0" && e[5] == exit.to_string());
        assert!(ran, "seed {seed}: {job}/{task} failed with exit {exit} that attempt {attempt} never reached");
    }
}
