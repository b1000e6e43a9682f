//! What one call of live mode costs as its session grows (issue 12): a call must cost what it
//! touches (the running tasks, the one job, the agent's tasks), not the history.
//!
//! `cargo bench --bench live_load` drives the live `Driver` as `live serve` does on each call,
//! without HTTP and SQLite (which cost the same per call whatever the history): a 3-node x
//! 8-GPU cluster under fifo, a 1-GPU job submitted every 10 ms (its name checked for
//! uniqueness, as the coordinator checks it), each running 200 ms, and 3 agents beating each
//! second, each beat reporting its node's exits and taking back the node's assignments.
//! 100,000 submissions in all (`SCHEDLAB_LIVE_JOBS` for another count):
//! - `submit`: one submission (checked, applied), for the first thousand and the last;
//! - `heartbeat`: one agent's beat (its exits, applied) and its assignments, likewise;
//! - `status`: what `GET /metrics` asks of the driver (jobs by state, decisions by kind,
//!   the running tasks), likewise;
//! - `journal_snapshot`: the session as a trace, which the coordinator's thread takes at most
//!   once a second to write STATE/journal/ from: the one cost that grows with the history by
//!   nature (after 1,000 jobs and after all of them).
//!
//! Each bench prints its p99 (divan gives the fastest, median, mean and slowest) on stderr.

use live::config::LiveConfig;
use live::driver::{Batch, Driver, Input};
use live::wire::{JobRequest, TaskRequest};
use std::cell::RefCell;
use std::time::{Duration, Instant};

fn main() {
    divan::main();
}

/// Submissions in the whole session.
fn jobs() -> usize {
    std::env::var("SCHEDLAB_LIVE_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000)
}

/// Where each bench measures: after no submission, and after all but the last thousand.
const AT: &[&str] = &["first_1000", "last_1000"];

fn history(at: &str) -> usize {
    if at == "first_1000" { 0 } else { jobs().saturating_sub(1000) }
}

const NODES: u32 = 3;
/// A submission every 10 ms; a job's process runs 200 ms; each agent beats every second.
const SUBMIT_EVERY_MS: u64 = 10;
const RUN_MS: u64 = 200;
const SUBMITS_PER_BEAT: usize = 100;

/// A live session as the coordinator's thread sees it.
struct Session {
    driver: Driver,
    now: u64,
    submitted: usize,
    /// Attempts running: (node, ends at, task, attempt).
    running: Vec<(u32, u64, u32, u32)>,
    beats: u64,
}

impl Session {
    fn new() -> Session {
        let config = LiveConfig::new("3x8", "fifo").unwrap().with_heartbeat_ms(1000);
        let mut driver = Driver::new(config).expect("a valid configuration");
        let start = driver.start_batch();
        driver.apply(start).expect("the first batch");
        Session { driver, now: 0, submitted: 0, running: Vec::new(), beats: 0 }
    }

    /// A session with `n` submissions behind it (and the agents' beats between them).
    fn after(n: usize) -> Session {
        let mut s = Session::new();
        while s.submitted < n {
            s.step();
        }
        s
    }

    fn apply(&mut self, inputs: Vec<Input>) {
        self.now += 1;
        let decided = self.driver.decisions().len();
        self.driver.apply(Batch { time_ms: self.now, inputs }).expect("time moves forward");
        let d = &self.driver;
        for r in &d.decisions()[decided..] {
            if let (sim::DecisionKind::Start, Some(task)) = (r.kind, r.task) {
                let state = d.controller().task(task);
                let node = d.cluster().node_of(state.placed[0]).0;
                self.running.push((node, r.time.as_ms() + RUN_MS, task.0, state.attempt));
            }
        }
    }

    /// One submission, as `POST /v1/jobs` makes it.
    fn submit(&mut self) {
        self.now = self.now.max(self.submitted as u64 * SUBMIT_EVERY_MS);
        let job = JobRequest::new(format!("job-{}", self.submitted), vec![TaskRequest::new("0", "true")]);
        self.driver.check_submission(&job).expect("a unique name");
        self.submitted += 1;
        self.apply(vec![Input::submit(job)]);
    }

    /// One agent's heartbeat: its exits, and what it must run.
    fn heartbeat(&mut self, node: u32) -> usize {
        let now = self.now + 1;
        let mut inputs = vec![Input::Beat { node }];
        self.running.retain(|&(n, end, task, attempt)| {
            let ended = n == node && end <= now;
            if ended {
                inputs.push(Input::Exit { task, attempt, code: 0 });
            }
            !ended
        });
        self.apply(inputs);
        self.driver.assignments(node, |_| String::new()).len()
    }

    /// The next call of the session: a submission, or, once per hundred, the next agent's beat.
    fn step(&mut self) {
        if self.submitted.is_multiple_of(SUBMITS_PER_BEAT / NODES as usize) && self.submitted > 0 {
            self.beats += 1;
            self.heartbeat((self.beats % u64::from(NODES)) as u32);
        }
        self.submit();
    }

    /// What `GET /metrics` asks of the driver.
    fn status(&self) -> u64 {
        let jobs: u64 = self.driver.job_counts().values().sum();
        let decisions: u64 = self.driver.tally().decisions().values().sum();
        jobs + decisions + self.driver.running_tasks().count() as u64
    }
}

/// Prints the p99 of what was timed.
fn report(what: &str, at: &str, mut times: Vec<Duration>) {
    times.sort_unstable();
    if let Some(&p99) = times.get(times.len() * 99 / 100) {
        eprintln!("{what} {at} (after {} jobs): p99 {p99:?} of {} calls", history(at), times.len());
    }
}

#[divan::bench(args = AT, sample_count = 1000, sample_size = 1)]
fn submit(bencher: divan::Bencher, at: &str) {
    let session = RefCell::new(Session::after(history(at)));
    let times = RefCell::new(Vec::new());
    bencher
        .with_inputs(|| {
            let mut s = session.borrow_mut();
            // The agents' beats between submissions, untimed.
            if s.submitted.is_multiple_of(SUBMITS_PER_BEAT / NODES as usize) {
                s.beats += 1;
                let node = (s.beats % u64::from(NODES)) as u32;
                s.heartbeat(node);
            }
        })
        .bench_local_values(|()| {
            let started = Instant::now();
            session.borrow_mut().submit();
            times.borrow_mut().push(started.elapsed());
        });
    report("submit", at, times.into_inner());
}

#[divan::bench(args = AT, sample_count = 1000, sample_size = 1)]
fn heartbeat(bencher: divan::Bencher, at: &str) {
    let session = RefCell::new(Session::after(history(at)));
    let times = RefCell::new(Vec::new());
    bencher
        .with_inputs(|| {
            // The submissions between beats, untimed.
            let mut s = session.borrow_mut();
            for _ in 0..SUBMITS_PER_BEAT / NODES as usize {
                s.submit();
            }
            s.beats += 1;
            (s.beats % u64::from(NODES)) as u32
        })
        .bench_local_values(|node| {
            let started = Instant::now();
            let assigned = session.borrow_mut().heartbeat(node);
            times.borrow_mut().push(started.elapsed());
            assigned
        });
    report("heartbeat", at, times.into_inner());
}

#[divan::bench(args = AT, sample_count = 1000, sample_size = 1)]
fn status(bencher: divan::Bencher, at: &str) {
    let session = RefCell::new(Session::after(history(at)));
    let times = RefCell::new(Vec::new());
    bencher.with_inputs(|| session.borrow_mut().step()).bench_local_values(|()| {
        let started = Instant::now();
        let counted = session.borrow().status();
        times.borrow_mut().push(started.elapsed());
        counted
    });
    report("status", at, times.into_inner());
}

/// What the coordinator's thread does at most once a second (and at most a tenth of its time,
/// by `--journal-every-s`'s rule): the session as a trace, to write STATE/journal/ from. It
/// grows with the session by nature (the trace is the whole session); measured to say how
/// long the pause it makes is.
#[divan::bench(args = AT, sample_count = 20, sample_size = 1)]
fn journal_snapshot(bencher: divan::Bencher, at: &str) {
    let session = Session::after(history(at) + 1000);
    bencher.bench_local(|| session.driver.trace().map(|t| t.workload.len()));
}

/// The body of the largest job the API takes (issue 32): 10,000 tasks, each but the first
/// few depending on the 8 before it (79,964 `depends_on` entries, about 1 MiB).
fn big_dag_body() -> String {
    let tasks: Vec<String> = (0..10_000)
        .map(|t: usize| {
            let deps: Vec<String> = (1..=8.min(t)).map(|k| format!("\"t{}\"", t - k)).collect();
            format!(r#"{{"name":"t{t}","command":"true","depends_on":[{}]}}"#, deps.join(","))
        })
        .collect();
    format!(r#"{{"name":"big","tasks":[{}]}}"#, tasks.join(","))
}

/// What the coordinator's thread spends on the largest job before its answer: the body parsed
/// and the job checked (`accept`); resent under a name already taken (`taken_name`).
#[divan::bench(args = ["accept", "taken_name"], sample_count = 5, sample_size = 1)]
fn submit_big_dag(bencher: divan::Bencher, case: &str) {
    let body = big_dag_body();
    let mut session = Session::new();
    if case == "taken_name" {
        let job: JobRequest = serde_json::from_str(&body).expect("a valid job");
        session.apply(vec![Input::submit(job)]);
    }
    bencher.bench_local(|| {
        let job: JobRequest = serde_json::from_str(&body).expect("a valid job");
        session.driver.check_submission(&job).map(|spec| spec.tasks.len()).map_err(|r| r.status)
    });
}
