//! A soak of live mode: a seeded random sequence of steps against a real coordinator and three
//! agents (processes of the `schedlab` binary on loopback, simulated GPUs): submissions of
//! short jobs (1 or 2 tasks of 1 or 2 GPUs, some exiting non-zero), cancels, kill -9 of an
//! agent and of the coordinator (into a burst of submissions, into its own restart), each
//! started again, and a second agent or coordinator started on a directory in use (refused).
//! After every step: every acknowledged job, and no other, is known to the coordinator, and no
//! attempt of a task ran twice. At the end: every job reached a final state, what each task's
//! final attempt did agrees with its reported state, and the exported session replays in the
//! simulator to the same decisions and digest.
//!
//! Each task's command appends `start JOB TASK ATTEMPT RANK` to a file the test owns before it
//! sleeps, and `end JOB TASK ATTEMPT RANK CODE` before it exits (a 2-GPU task may span two
//! nodes: one process per node, each with its rank). Each step is printed with the seed
//! (`SCHEDLAB_TEST_SEED=N` repeats the sequence; the timings it meets may differ). Every wait
//! for a state is a poll with a deadline; the sleeps only vary where kills land.

mod common;

use common::live::{Session, SplitMix, run_bounded, wait_for};
use live::net::client::{CallError, Client};
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

const AGENTS: [&str; 3] = ["n0", "n1", "n2"];
const ARGS: [&str; 6] = ["--cluster", "3x2:SIM", "--heartbeat-s", "0.2", "--missed-beats", "5"];
const STEPS: usize = 60;

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
                // Every kind of dependency the DAG spec has: a data point (reached before
                // t0 exits, at 0.05 s) and the kinds met at t0's end, whatever its exit.
                let kinds = ["t0", "t0:any", "t0:failure", "t0:data=0.05", "t0:success"];
                let deps: Vec<&str> =
                    if t == 1 && rng.below(2) == 0 { vec![kinds[rng.below(5) as usize]] } else { vec![] };
                json!({ "name": format!("t{t}"), "command": command, "gpus": 1 + rng.below(2), "depends_on": deps })
            })
            .collect();
        (name.clone(), json!({ "name": name, "tasks": tasks }), code)
    }

    /// Starts the coordinator again on its state directory and address; waits for nothing.
    fn spawn_coordinator(&mut self) {
        self.s.spawn_coordinator(&self.listen, &ARGS);
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
    fn check(&self, at: &str) {
        let jobs = self.s.client().all_jobs().unwrap();
        let known: BTreeSet<&str> = jobs.iter().map(|j| j["name"].as_str().unwrap()).collect();
        let acknowledged: BTreeSet<&str> = self.acknowledged.keys().map(String::as_str).collect();
        assert_eq!(known, acknowledged, "{at}: the coordinator's jobs are not those acknowledged");
        let mut seen = BTreeSet::new();
        for line in marks(&self.marks).iter().filter(|l| l[0] == "start") {
            assert!(seen.insert(line.clone()), "{at}: {line:?} ran twice");
        }
    }
}

/// The marker file's lines, split into words.
fn marks(path: &Path) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines().map(|l| l.split(' ').map(str::to_string).collect()).collect()
}

/// A connection that sends a job's head with the user token, announcing `len` bytes of body,
/// and only 10 of them.
fn slow_body(addr: &str, token: &str, len: usize) -> TcpStream {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST /v1/jobs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Length: {len}\r\n\r\n{{\"name\":"
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream
}

/// Submits `job` until the coordinator answers: 201, or 409 when an earlier try whose answer
/// was lost had been committed. Anything else is the test's own mistake.
fn submit(client: &Client, job: &Value) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match client.post::<_, Value>("/v1/jobs", job) {
            Ok(_) => return,
            Err(CallError::Status(409, reason)) if reason.contains("already submitted") => return,
            Err(CallError::Status(code, reason)) if code != 503 => panic!("{}: refused {code} {reason}", job["name"]),
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
    let marks = s.dir.join("marks.txt");
    let mut soak =
        Soak { listen: s.addr.clone(), s, agents: BTreeMap::new(), marks, acknowledged: BTreeMap::new(), next: 0 };
    for agent in AGENTS {
        soak.start_agent(agent);
    }
    soak.s.wait_agents(3);
    for step in 0..STEPS {
        let at = format!("seed {seed} step {step}");
        match rng.below(22) {
            0..=8 => soak.submit_some(&mut rng, &at),
            9..=10 => soak.cancel(&mut rng, &at),
            11..=13 => soak.kill_agent_and_restart(&mut rng, &at),
            14..=17 => soak.kill_coordinator_and_restart(&mut rng, &at),
            18 => soak.duplicate_agent(&mut rng, &at),
            19 => soak.duplicate_coordinator(&at),
            20 => soak.hostile_user(&mut rng, &at),
            _ => soak.wal_removed(&at),
        }
        soak.check(&at);
    }
    soak.final_checks(seed);
}

impl Soak {
    fn submit_some(&mut self, rng: &mut SplitMix, at: &str) {
        let client = self.s.client();
        for _ in 0..1 + rng.below(3) {
            let (name, job, code) = self.job(rng);
            println!("{at}: submit {name}");
            submit(&client, &job);
            self.acknowledged.insert(name, code);
        }
        std::thread::sleep(rng.millis(400));
    }

    /// Cancels a job submitted or not, running or ended: 404 and 409 are answers too.
    fn cancel(&mut self, rng: &mut SplitMix, at: &str) {
        let name = format!("j{}", rng.below(self.next.max(1) as u64));
        println!("{at}: cancel {name}");
        match self.s.client().post::<_, Value>(&format!("/v1/jobs/{name}/cancel"), &json!({})) {
            Ok(_) | Err(CallError::Status(404 | 409, _)) => {}
            Err(e) => panic!("{at}: cancel {name}: {e}"),
        }
    }

    /// Down up to 1.5 s: past `--missed-beats` x `--heartbeat-s` (1 s) its node is declared dead.
    fn kill_agent_and_restart(&mut self, rng: &mut SplitMix, at: &str) {
        let agent = AGENTS[rng.below(3) as usize];
        let down = rng.millis(1500);
        println!("{at}: kill -9 agent {agent}, down {down:?}");
        let before = self.registrations(agent);
        self.kill_agent(agent);
        std::thread::sleep(down);
        self.start_agent(agent);
        wait_for(30, "the agent to register again", || (self.registrations(agent) > before).then_some(()));
    }

    /// A kill -9 of the coordinator while a burst of submissions is under way (their answers
    /// may be lost: each is sent again until one comes); sometimes also of an agent while the
    /// coordinator is down, and of the coordinator again while it starts (replaying).
    fn kill_coordinator_and_restart(&mut self, rng: &mut SplitMix, at: &str) {
        let burst: Vec<(String, Value, i32)> = (0..rng.below(4)).map(|_| self.job(rng)).collect();
        let after = rng.millis(300);
        let agent = (rng.below(3) == 0).then(|| AGENTS[rng.below(3) as usize]);
        let again = (rng.below(4) == 0).then(|| rng.millis(150));
        let names: Vec<&String> = burst.iter().map(|b| &b.0).collect();
        println!(
            "{at}: kill -9 the coordinator {after:?} into a burst of {names:?}, agent {agent:?} restarted meanwhile, killed again {again:?} into its start"
        );
        let submitter = {
            let client = self.s.client();
            let jobs: Vec<Value> = burst.iter().map(|b| b.1.clone()).collect();
            std::thread::spawn(move || jobs.iter().for_each(|job| submit(&client, job)))
        };
        std::thread::sleep(after);
        self.s.procs.kill(self.s.coordinator);
        if let Some(agent) = agent {
            self.kill_agent(agent);
            self.start_agent(agent);
        }
        if let Some(again) = again {
            self.spawn_coordinator();
            std::thread::sleep(again);
            self.s.procs.kill(self.s.coordinator);
        }
        self.spawn_coordinator();
        wait_for(30, "the coordinator to come back", || self.s.client().get::<Value>("/v1/jobs").ok());
        submitter.join().expect("the burst's submitter");
        for (name, _, code) in burst {
            self.acknowledged.insert(name, code);
        }
    }

    /// A second agent under a running one's name, on its work directory: refused at once,
    /// before it touches the first one's processes.
    fn duplicate_agent(&mut self, rng: &mut SplitMix, at: &str) {
        let agent = AGENTS[rng.below(3) as usize];
        println!("{at}: a second agent {agent} on its work directory");
        let second = self.s.agent(agent, 2);
        let status = self.s.procs.wait(second, 30).unwrap_or_else(|| panic!("{at}: the second agent {agent} runs"));
        assert_eq!(status.code(), Some(2), "{at}: the second agent {agent}: {status:?}");
        assert!(self.s.procs.wait(self.agents[agent], 0).is_none(), "{at}: the first agent {agent} exited");
    }

    /// A holder of the user token holds connections open with slow bodies, sends bodies
    /// over 1 MiB and a valid 1 MiB job of 10,000 tasks: the agents keep their heartbeats
    /// (the check after the step finds no attempt run twice, and the job lists), and the big
    /// job is acknowledged like any other (then cancelled).
    fn hostile_user(&mut self, rng: &mut SplitMix, at: &str) {
        let held = 1 + rng.below(8) as usize;
        println!("{at}: a token holder keeps {held} slow bodies open, sends an oversized one and a 10,000-task job");
        let token = self.s.token();
        let addr = self.listen.clone();
        let slow: Vec<TcpStream> = (0..held).map(|_| slow_body(&addr, &token, 10_000)).collect();
        let mut huge = slow_body(&addr, &token, 2 << 20);
        let mut answer = String::new();
        let _ = huge.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 413"), "{at}: a 2 MiB body: {answer}");
        let name = format!("j{}", self.next);
        self.next += 1;
        let tasks: Vec<Value> = (0..10_000)
            .map(|t| json!({ "name": format!("t{t}"), "command": "true", "depends_on": if t == 0 { vec![] } else { vec!["t0"] } }))
            .collect();
        let job = json!({ "name": name, "tasks": tasks });
        assert!(job.to_string().len() < 1 << 20, "the job fits the API's 1 MiB");
        submit(&self.s.client(), &job);
        self.acknowledged.insert(name.clone(), 0);
        // Its 10,000 tasks would keep the soak's six GPUs busy for minutes: it is cancelled.
        match self.s.client().post::<_, Value>(&format!("/v1/jobs/{name}/cancel"), &json!({})) {
            Ok(_) | Err(CallError::Status(409, _)) => {}
            Err(e) => panic!("{at}: cancel {name}: {e}"),
        }
        std::thread::sleep(rng.millis(1000));
        drop(slow);
    }

    /// A kill -9 of the coordinator, then its write-ahead log removed (as a backup of
    /// live.db alone would restore it): the state is refused, by the same Store::open the
    /// coordinator runs, while the log held acknowledged batches; with the log put back the
    /// coordinator starts and every acknowledged job is there (the check after the step).
    fn wal_removed(&mut self, at: &str) {
        println!("{at}: kill -9 the coordinator, remove live.db-wal, try the state, put it back");
        self.s.procs.kill(self.s.coordinator);
        let state = self.s.state();
        let (wal, aside) = (state.join("live.db-wal"), self.s.dir.join("wal-aside"));
        let moved = std::fs::rename(&wal, &aside).is_ok();
        let out = self.s.dir.join("export-without-wal");
        let (code, _, err) =
            run_bounded(&["live", "export", "--state", state.to_str().unwrap(), "--out", out.to_str().unwrap()], 30);
        if code != Some(0) {
            assert!(err.contains("write-ahead log") && err.contains("is missing or cut short"), "{at}: {err}");
        }
        println!(
            "{at}: without its WAL the state was {}",
            if code == Some(0) { "whole (checkpointed)" } else { "refused" }
        );
        if moved {
            let _ = std::fs::remove_file(&wal);
            std::fs::rename(&aside, &wal).unwrap();
        }
        self.spawn_coordinator();
        wait_for(30, "the coordinator to come back", || self.s.client().get::<Value>("/v1/jobs").ok());
    }

    /// A second coordinator on the state directory: refused at once.
    fn duplicate_coordinator(&mut self, at: &str) {
        println!("{at}: a second coordinator on the state directory");
        let state = self.s.state();
        let mut all = vec!["live", "serve", "--state", state.to_str().unwrap(), "--listen", "127.0.0.1:0"];
        all.extend_from_slice(&ARGS);
        let (code, _, err) = run_bounded(&all, 30);
        assert_eq!(code, Some(2), "{at}: the second coordinator: {err}");
        assert!(err.contains("is in use by a coordinator"), "{at}: {err}");
    }

    /// Every job ended as its tasks' runs say; the session replays to the same decisions; no
    /// process panicked.
    fn final_checks(&self, seed: u64) {
        let jobs = self.s.wait_jobs_ended(90);
        self.check(&format!("seed {seed} at the end"));
        let lines = marks(&self.marks);
        let mut succeeded = 0;
        for j in jobs["jobs"].as_array().unwrap() {
            let name = j["name"].as_str().unwrap();
            let code = self.acknowledged[name];
            for t in self.s.job(name)["tasks"].as_array().unwrap() {
                check_task(seed, name, t, code, j["state"] == "cancelled", &lines);
            }
            succeeded += usize::from(j["state"] == "succeeded");
        }
        assert!(succeeded > 0, "seed {seed}: no job succeeded: {jobs:#}");
        let (live, digest) = self.s.decisions();
        let mut kinds = BTreeMap::new();
        for line in &live {
            *kinds.entry(line.split(',').nth(1).unwrap().to_string()).or_insert(0) += 1;
        }
        println!("seed {seed}: {} jobs, {succeeded} succeeded; decisions {kinds:?}", self.acknowledged.len());
        let (replayed, sim_digest, _) = self.s.replay();
        assert_eq!((replayed, sim_digest), (live, digest), "seed {seed}: the replay made other decisions");
        for entry in std::fs::read_dir(&self.s.dir).unwrap().flatten() {
            if entry.path().extension() == Some("log".as_ref()) {
                let text = std::fs::read_to_string(entry.path()).unwrap();
                assert!(!text.contains("panicked"), "seed {seed}: {}:\n{text}", entry.path().display());
            }
        }
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
