//! What one call of live mode costs through its API as the session grows (issue 12): the
//! coordinator, a real `schedlab live serve` process on loopback (HTTP, SQLite with
//! synchronous FULL, the journal rewritten as it grows), must answer the last thousand
//! submissions and heartbeats of a long session as fast as the first thousand.
//!
//! `cargo bench --bench live_api` starts `live serve --cluster 3x8 --heartbeat-s 1` on
//! 127.0.0.1 with a fresh state directory, and 3 fake agents in this process: each registers
//! with a token of its own (`live issue-token --agent NAME`), as `live agent` does, then
//! beats every second, asks for its assignments every half second between beats (`live
//! agent`'s `--poll-s`), and reports each attempt it is given as exited 0, at once (as the
//! real agent does when a task's process ends: here every task "ends" as soon as it is
//! given). No process runs, so 100,000 jobs do not make 100,000 processes; what the
//! coordinator sees is what real agents with instant tasks would send.
//!
//! This thread submits 100,000 1-GPU jobs (`SCHEDLAB_LIVE_API_JOBS` for another count) with
//! the user token, one after another, at most [`WINDOW`] of them not yet ended (so the queue
//! stays short and what grows is the history, not the backlog). It prints the p50 and p99 of
//! the submissions, of the agents' beats and of their polls for assignments, during the first
//! thousand submissions and during the last thousand of each tenth of the session (with the
//! machine's load average then: on a shared machine the first and last thousand may not see
//! the same load), and the time of `GET /metrics` before the first and after the last; then
//! checks that every job succeeded. The whole session is one divan sample: the printed
//! percentiles are the measurement.

use live::net::client::Client;
use live::wire::{
    AssignmentsReply, ExitReport, HeartbeatReply, HeartbeatRequest, JobRequest, RegisterReply, RegisterRequest,
    TaskRequest,
};
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

fn main() {
    divan::main();
}

const BIN: &str = env!("CARGO_BIN_EXE_schedlab");

/// Submissions in the whole session.
fn jobs() -> usize {
    std::env::var("SCHEDLAB_LIVE_API_JOBS").ok().and_then(|n| n.parse().ok()).unwrap_or(100_000)
}

/// Clients listing every job (`GET /v1/jobs`, page after page) in a loop while the session
/// runs (`SCHEDLAB_LIVE_API_LISTERS`, none by default): what the agents' beats cost then.
fn listers() -> usize {
    std::env::var("SCHEDLAB_LIVE_API_LISTERS").ok().and_then(|n| n.parse().ok()).unwrap_or(0)
}

const AGENTS: [&str; 3] = ["n0", "n1", "n2"];
const GPUS_PER_NODE: u32 = 8;
/// At most this many jobs submitted and not yet ended (the cluster runs 24 at a time).
const WINDOW: usize = 100;
/// `live agent`'s default `--poll-s`; the beat interval is the coordinator's `--heartbeat-s`.
const POLL: Duration = Duration::from_millis(500);
/// The share of the session each percentile is taken over: its first and last this many
/// submissions (and the beats and polls made while they were being submitted).
const SPAN: usize = 1000;

/// `live serve` on a free loopback port, killed when dropped.
struct Coordinator {
    child: Child,
    dir: PathBuf,
    addr: String,
}

impl Coordinator {
    fn start(dir: &Path) -> Coordinator {
        let _ = std::fs::remove_dir_all(dir);
        std::fs::create_dir_all(dir).expect("the bench's folder");
        let state = dir.join("state");
        let log = std::fs::File::create(dir.join("coordinator.log")).expect("the coordinator's log");
        let child = Command::new(BIN)
            .args(["live", "serve", "--state", state.to_str().expect("a UTF-8 path"), "--listen", "127.0.0.1:0"])
            .args(["--cluster", "3x8", "--heartbeat-s", "1"])
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log"))
            .stderr(log)
            .spawn()
            .expect("schedlab runs");
        let mut coordinator = Coordinator { child, dir: dir.to_path_buf(), addr: String::new() };
        let deadline = Instant::now() + Duration::from_secs(30);
        while coordinator.addr.is_empty() {
            assert!(Instant::now() < deadline, "the coordinator wrote no address in 30 s");
            std::thread::sleep(Duration::from_millis(50));
            coordinator.addr = std::fs::read_to_string(state.join("addr")).unwrap_or_default().trim().to_string();
        }
        coordinator
    }

    fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// A client with the user token.
    fn user(&self) -> Client {
        let token = std::fs::read_to_string(self.state().join("token")).expect("the user token");
        Client::new(&self.addr, token.trim(), Duration::from_secs(30))
    }

    /// A client with agent `name`'s own token, issued by `live issue-token`.
    fn agent(&self, name: &str) -> Client {
        let path = self.dir.join(format!("agent-{name}.token"));
        let state = self.state();
        let args = ["live", "issue-token", "--state", state.to_str().expect("a UTF-8 path"), "--agent", name, "--out"];
        let out = Command::new(BIN).args(args).arg(&path).output().expect("schedlab runs");
        assert!(out.status.success(), "issue-token: {}", String::from_utf8_lossy(&out.stderr));
        let token = std::fs::read_to_string(&path).expect("the agent token");
        Client::new(&self.addr, token.trim(), Duration::from_secs(30))
    }
}

impl Drop for Coordinator {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the session shares between the submitting thread and the agents.
#[derive(Default)]
struct Shared {
    /// Submissions answered so far: what a beat or poll is tagged with.
    submitted: AtomicUsize,
    /// Exits the coordinator acknowledged.
    ended: AtomicUsize,
    stop: AtomicBool,
    /// (submissions answered when it began, how long it took) of every beat, and every poll.
    beats: Mutex<Vec<(usize, Duration)>>,
    polls: Mutex<Vec<(usize, Duration)>>,
}

impl Shared {
    fn timed<T>(&self, log: &Mutex<Vec<(usize, Duration)>>, call: impl FnOnce() -> T) -> T {
        let at = self.submitted.load(Ordering::Relaxed);
        let started = Instant::now();
        let answer = call();
        log.lock().expect("not poisoned").push((at, started.elapsed()));
        answer
    }
}

/// Sets its flag when dropped.
struct StopOnDrop<'a>(&'a AtomicBool);

impl Drop for StopOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}

/// A fake `live agent`: registers, then beats and polls until told to stop, reporting every
/// attempt it is given as exited 0 at its next beat, which it sends at once when it has one.
fn fake_agent(client: &Client, name: &str, shared: &Shared) {
    let gpus = live::agent::backend::from_spec(&format!("sim:gpus={GPUS_PER_NODE},prefix={name}"))
        .and_then(|mut b| b.gpus())
        .expect("simulated GPUs");
    let request =
        RegisterRequest { name: name.into(), addr: "127.0.0.1".into(), gpus: gpus.clone(), node: None, fresh: true };
    let registered: RegisterReply = client.post("/v1/agents/register", &request).expect("registered");
    let generation = registered.generation;
    let mut given: HashSet<(u32, u32)> = HashSet::new();
    let mut exits: Vec<ExitReport> = Vec::new();
    let mut take = |assignments: &[live::wire::Assignment], exits: &mut Vec<ExitReport>| {
        for a in assignments {
            if given.insert((a.task, a.attempt)) {
                exits.push(ExitReport { task: a.task, attempt: a.attempt, code: 0 });
            }
        }
    };
    while !shared.stop.load(Ordering::Relaxed) {
        let beat = HeartbeatRequest {
            name: name.into(),
            exits: exits.clone(),
            health: Vec::new(),
            gpus: gpus.clone(),
            processes: Vec::new(),
            generation,
        };
        let reply: HeartbeatReply =
            shared.timed(&shared.beats, || client.post("/v1/agents/heartbeat", &beat)).expect("a beat answered");
        assert_eq!(reply.generation, generation, "one coordinator in this bench");
        exits.retain(|x| !reply.acked.contains(x));
        shared.ended.fetch_add(reply.acked.len(), Ordering::Relaxed);
        take(&reply.assignments, &mut exits);
        // Until the next beat: poll, unless an exit is there to report.
        let next_beat = Instant::now() + Duration::from_millis(reply.heartbeat_ms);
        while exits.is_empty() && !shared.stop.load(Ordering::Relaxed) && Instant::now() < next_beat {
            std::thread::sleep(POLL.min(next_beat.saturating_duration_since(Instant::now())));
            let path = format!("/v1/agents/{name}/assignments?generation={generation}");
            let polled: AssignmentsReply = shared.timed(&shared.polls, || client.get(&path)).expect("a poll answered");
            take(&polled.assignments, &mut exits);
        }
    }
}

/// p50 and p99 of `times`, as text.
fn percentiles(mut times: Vec<Duration>) -> String {
    times.sort_unstable();
    let at = |q: usize| times.get((times.len() * q / 100).min(times.len().saturating_sub(1))).copied();
    match (at(50), at(99)) {
        (Some(p50), Some(p99)) => format!("{:>6.2} / {:>6.2} ms ({:>4})", ms(p50), ms(p99), times.len()),
        _ => format!("{:>24}", "no calls"),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The first [`SPAN`] submissions, and the last [`SPAN`] of each tenth of the session.
fn spans(n: usize) -> Vec<(usize, usize)> {
    let mut spans = vec![(0, SPAN.min(n))];
    for tenth in 1..=10 {
        let to = n * tenth / 10;
        if to > SPAN && spans.last().is_some_and(|&(_, end)| end < to) {
            spans.push((to - SPAN, to));
        }
    }
    spans
}

/// The calls of `log` made while the submissions in `from..to` were being made.
fn during(log: &Mutex<Vec<(usize, Duration)>>, from: usize, to: usize) -> Vec<Duration> {
    log.lock().expect("not poisoned").iter().filter(|(at, _)| (from..to).contains(at)).map(|&(_, d)| d).collect()
}

/// `GET /metrics` ten times: their median and slowest, and the last answer.
fn metrics(user: &Client) -> (String, String) {
    let mut times = Vec::new();
    let mut text = String::new();
    for _ in 0..10 {
        let started = Instant::now();
        text = user.get_text("/metrics").expect("metrics").0;
        times.push(started.elapsed());
    }
    times.sort_unstable();
    (format!("median {:.3?}, slowest {:.3?} of 10", times[5], times[9]), text)
}

/// One whole session: `n` submissions through the API with 3 agents beating.
fn session(coordinator: &Coordinator, n: usize) {
    let user = coordinator.user();
    let shared = Shared::default();
    let loads: Mutex<std::collections::BTreeMap<usize, String>> = Mutex::default();
    let agents: Vec<Client> = AGENTS.iter().map(|name| coordinator.agent(name)).collect();
    let listings = AtomicUsize::new(0);
    std::thread::scope(|scope| {
        for (client, name) in agents.iter().zip(AGENTS) {
            let shared = &shared;
            scope.spawn(move || fake_agent(client, name, shared));
        }
        for _ in 0..listers() {
            let (shared, listings, lister) = (&shared, &listings, coordinator.user());
            scope.spawn(move || {
                while !shared.stop.load(Ordering::Relaxed) {
                    lister.all_jobs().expect("the job list");
                    listings.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
        // The agents stop however this thread ends (a failed submission too), or the scope
        // would wait for them for ever.
        let _stop = StopOnDrop(&shared.stop);
        // The agents registered (every node alive) before the first submission.
        let deadline = Instant::now() + Duration::from_secs(30);
        while shared.beats.lock().expect("not poisoned").len() < AGENTS.len() {
            assert!(Instant::now() < deadline, "the agents did not beat in 30 s");
            std::thread::sleep(Duration::from_millis(20));
        }
        let (metrics_first, _) = metrics(&user);
        let started = Instant::now();
        let mut submits = Vec::with_capacity(n);
        let ends: Vec<usize> = spans(n).iter().map(|&(_, to)| to).collect();
        for i in 0..n {
            let deadline = Instant::now() + Duration::from_secs(60);
            while i >= shared.ended.load(Ordering::Relaxed) + WINDOW {
                assert!(Instant::now() < deadline, "no job ended in 60 s (after {i} submissions)");
                std::thread::sleep(Duration::from_millis(1));
            }
            let job = JobRequest::new(format!("job-{i}"), vec![TaskRequest::new("0", "true")]);
            let t = Instant::now();
            let _: serde_json::Value = user.post("/v1/jobs", &job).expect("a submission accepted");
            submits.push(t.elapsed());
            shared.submitted.store(i + 1, Ordering::Relaxed);
            if ends.contains(&(i + 1)) {
                let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
                loads.lock().expect("not poisoned").insert(i + 1, load.split(' ').next().unwrap_or("?").to_string());
            }
        }
        let submitting = started.elapsed();
        let deadline = Instant::now() + Duration::from_secs(120);
        while shared.ended.load(Ordering::Relaxed) < n {
            assert!(Instant::now() < deadline, "not every job ended in 120 s after the last submission");
            std::thread::sleep(Duration::from_millis(20));
        }
        let (metrics_last, text) = metrics(&user);
        shared.stop.store(true, Ordering::Relaxed);
        let succeeded = format!("schedlab_jobs{{state=\"succeeded\"}} {n}");
        assert!(text.lines().any(|l| l == succeeded), "not all {n} jobs succeeded:\n{text}");

        eprintln!(
            "live_api: {n} jobs submitted in {submitting:.1?} ({:.0}/s), all succeeded",
            n as f64 / submitting.as_secs_f64()
        );
        eprintln!("p50 / p99 of the calls made while these submissions were made (load: 1-minute load average then):");
        for (from, to) in spans(n) {
            eprintln!(
                "jobs {from:>6}-{to:<6}  submit {}  heartbeat {}  poll {}  load {}",
                percentiles(submits[from..to].to_vec()),
                percentiles(during(&shared.beats, from, to)),
                percentiles(during(&shared.polls, from, to)),
                loads.lock().expect("not poisoned").get(&to).map_or("?", String::as_str),
            );
        }
        eprintln!("GET /metrics before the first: {metrics_first}; after the last: {metrics_last}");
        if listers() > 0 {
            eprintln!("{} clients listed every job {} times in all", listers(), listings.load(Ordering::Relaxed));
        }
    });
}

// One sample is one whole session (minutes at 100,000 jobs).
#[divan::bench(sample_count = 1, sample_size = 1)]
fn api_session(bencher: divan::Bencher) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("bench-live-api");
    bencher.with_inputs(|| Coordinator::start(&dir)).bench_local_values(|coordinator| session(&coordinator, jobs()));
}
