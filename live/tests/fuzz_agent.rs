//! Property-based fuzzing of the agent's assignment handling (issue 32): a real agent
//! (`schedlab_live::agent::Agent`, simulated GPUs) against a fake coordinator on loopback that
//! answers its heartbeats and polls with random assignments (hostile job and task names, GPU
//! lists naming GPUs it has, does not have, or twice, odd ranks and world sizes, shares and
//! datasets, the same attempt again with other fields), answers of another generation, and
//! damaged bytes. The agent never panics, keeps heartbeating, stops cleanly, and writes nothing
//! outside its work directory. Commands are harmless (`true`, `exit 3`, `sleep 0.05`): what the
//! coordinator asks to run is trusted; what it names is not.
//!
//! Deterministic under `PROPTEST_RNG_SEED`; `SCHEDLAB_FUZZ_CASES=N` runs N/32 sessions
//! (scripts/fuzz.sh); the campaign prints `fuzz agent_assignments: ...`.

// fuzz_agent uses the harness and `json::quote` only; the rest of the module (generators of
// the API's bodies, the corpus, driver and HTTP sessions) is fuzz_api's.
#[allow(dead_code)]
mod fuzz;

use fuzz::harness::{Campaign, cases};
use fuzz::json::quote;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use schedlab_live::agent::backend::SimBackend;
use schedlab_live::agent::{Agent, AgentOptions};
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A job or task name: plain mostly, hostile sometimes (paths, control characters, too long).
fn name() -> BoxedStrategy<String> {
    prop_oneof![
        6 => "[a-z][a-z0-9._-]{0,6}".prop_map(|s| quote(&s)),
        1 => prop::sample::select(
            &["", ".", "..", "../../escaped", "/tmp/escaped", "a/b", "a\nb", "\u{0}", "%2e%2e", "é"][..]
        )
        .prop_map(quote),
        1 => Just(quote(&"n".repeat(300))),
    ]
    .boxed()
}

fn small() -> BoxedStrategy<String> {
    prop_oneof![8 => (0u32..4).prop_map(|n| n.to_string()), 1 => Just(u32::MAX.to_string())].boxed()
}

/// One assignment's JSON.
fn assignment() -> BoxedStrategy<String> {
    let gpus = prop::collection::vec(
        prop::sample::select(&["GPU-n0-0", "GPU-n0-1", "GPU-n9-9", "", "0", "1", "GPU-n0-0"][..]),
        0..3,
    )
    .prop_map(|g| format!("[{}]", g.iter().map(|u| quote(u)).collect::<Vec<_>>().join(",")));
    let command = prop::sample::select(&["\"true\"", "\"exit 3\"", "\"sleep 0.05\""][..]);
    let options = (
        prop::option::weighted(0.1, prop::sample::select(&["1", "500", "999", "0", "1000", "4294967295"][..])),
        prop::option::weighted(0.1, name()),
    );
    (small(), prop_oneof![4 => Just("1".to_string()), 1 => small()], name(), name(), command, gpus, small(), small(), options)
        .prop_map(|(task, attempt, job, task_name, command, gpus, rank, world, (milli, dataset))| {
            let mut text = format!(
                r#"{{"task":{task},"attempt":{attempt},"job":{job},"task_name":{task_name},"command":{command},"gpus":{gpus},"rank":{rank},"world_size":{world},"master_addr":"127.0.0.1""#
            );
            if let Some(m) = milli {
                text.push_str(&format!(r#","gpu_milli":{m}"#));
            }
            if let Some(d) = dataset {
                text.push_str(&format!(r#","dataset":{d}"#));
            }
            text + "}"
        })
        .boxed()
}

/// One answer to a heartbeat (`heartbeat`) or a poll: generation 1 mostly, damaged now and then.
fn answer(heartbeat: bool) -> BoxedStrategy<Vec<u8>> {
    let generation = prop_oneof![8 => Just(1u64), 1 => Just(0u64), 1 => Just(2u64)];
    let body = (prop::collection::vec(assignment(), 0..4), generation, 5u64..25).prop_map(move |(a, g, ms)| {
        let assignments = a.join(",");
        if heartbeat {
            format!(r#"{{"assignments":[{assignments}],"acked":[],"heartbeat_ms":{ms},"generation":{g}}}"#)
        } else {
            format!(r#"{{"generation":{g},"assignments":[{assignments}]}}"#)
        }
    });
    let damaged = (body.clone(), any::<usize>(), any::<u8>()).prop_map(|(text, at, byte)| {
        let mut bytes = text.into_bytes();
        let at = at % bytes.len();
        bytes[at] = byte;
        bytes
    });
    prop_oneof![8 => body.prop_map(String::into_bytes), 1 => damaged].boxed()
}

/// What the fake coordinator answers, in turn, and what it saw.
#[derive(Default)]
struct Script {
    heartbeats: Mutex<VecDeque<Vec<u8>>>,
    polls: Mutex<VecDeque<Vec<u8>>>,
    beats_seen: AtomicUsize,
    registrations: AtomicUsize,
}

impl Script {
    /// The answer to a request whose first line is `line`: a registration (generation 1), the
    /// next heartbeat or poll answer (then one with nothing to run).
    fn answer(&self, line: &str) -> Vec<u8> {
        if line.contains("/v1/agents/register") {
            self.registrations.fetch_add(1, Ordering::Relaxed);
            br#"{"node":0,"heartbeat_ms":20,"generation":1}"#.to_vec()
        } else if line.contains("/v1/agents/heartbeat") {
            self.beats_seen.fetch_add(1, Ordering::Relaxed);
            let next = self.heartbeats.lock().unwrap().pop_front();
            next.unwrap_or_else(|| br#"{"assignments":[],"acked":[],"heartbeat_ms":20,"generation":1}"#.to_vec())
        } else {
            let next = self.polls.lock().unwrap().pop_front();
            next.unwrap_or_else(|| br#"{"generation":1,"assignments":[]}"#.to_vec())
        }
    }
}

/// A fake coordinator on loopback: registers the agent (generation 1), answers heartbeats and
/// polls from `script` (then with nothing to run), one request per connection.
fn fake_coordinator(script: Arc<Script>, stop: Arc<AtomicBool>) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            let Ok((stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(2));
                continue;
            };
            let _ = stream.set_nonblocking(false);
            let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
            let Some(line) = read_request(&stream) else {
                continue;
            };
            let answer = script.answer(&line);
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                answer.len()
            );
            let _ = stream.write_all(&answer);
        }
    });
    addr
}

/// Reads a request from `stream`, its head and body: its first line, None if there was none.
fn read_request(stream: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return None;
    }
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    Some(line)
}

/// Every file under `dir`, relative to it.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p.clone());
            }
            out.push(p.strip_prefix(dir).unwrap().to_path_buf());
        }
    }
    out
}

/// Files written under `root` outside its work directory `a/b/work`.
fn written_outside(root: &Path) -> Vec<PathBuf> {
    files_under(root)
        .into_iter()
        .filter(|p| !p.starts_with("a/b/work") && !["a", "a/b"].contains(&p.to_str().unwrap_or("")))
        .collect()
}

/// A directory of this case's own, empty.
fn scratch_dir(case: u64) -> PathBuf {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let root = std::env::temp_dir().join(format!(
        "schedlab-fuzz-agent-{}-{}-{case:x}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&root);
    root
}

/// An agent n0 with two simulated GPUs, working in `work` for the coordinator at `addr`
/// until `stop`.
fn start_agent(addr: &str, work: PathBuf, stop: Arc<AtomicBool>) -> JoinHandle<Result<(), String>> {
    let options = AgentOptions {
        coordinator: format!("http://{addr}"),
        token: "agent.n0.00".into(),
        tls: Default::default(),
        name: "n0".into(),
        addr: "127.0.0.1".into(),
        node: None,
        poll: Duration::from_millis(15),
        grace: Duration::from_millis(200),
        work_dir: work,
        quiet: true,
    };
    std::thread::spawn(move || {
        let mut agent = Agent::new(options, Box::new(SimBackend::new(2, "SIM", "n0")))?;
        agent.run(&stop)
    })
}

/// One session: the agent serves `heartbeats` and `polls`, then runs a little on nothing.
fn check_agent(case: u64, heartbeats: Vec<Vec<u8>>, polls: Vec<Vec<u8>>) -> Result<(), TestCaseError> {
    let root = scratch_dir(case);
    // The work directory three levels down: a name that climbs out of it lands in one of these.
    let work = root.join("a/b/work");
    std::fs::create_dir_all(&work).unwrap();
    let answers = heartbeats.len();
    let script = Arc::new(Script {
        heartbeats: Mutex::new(heartbeats.into()),
        polls: Mutex::new(polls.into()),
        ..Default::default()
    });
    let stop_server = Arc::new(AtomicBool::new(false));
    let addr = fake_coordinator(script.clone(), stop_server.clone());
    let stop = Arc::new(AtomicBool::new(false));
    let agent = start_agent(&addr, work, stop.clone());
    // Until every scripted answer was given and a few more beats after them.
    let deadline = Instant::now() + Duration::from_secs(60);
    while script.beats_seen.load(Ordering::Relaxed) < answers + 3 && Instant::now() < deadline && !agent.is_finished() {
        std::thread::sleep(Duration::from_millis(10));
    }
    let beats = script.beats_seen.load(Ordering::Relaxed);
    let finished_early = agent.is_finished();
    stop.store(true, Ordering::Relaxed);
    let ended = agent.join();
    stop_server.store(true, Ordering::Relaxed);
    let outside = written_outside(&root);
    let _ = std::fs::remove_dir_all(&root);
    let ended = ended.map_err(|_| TestCaseError::fail("the agent panicked"))?;
    prop_assert!(!finished_early, "the agent stopped on its own: {:?}", ended);
    prop_assert!(ended.is_ok(), "the agent ended with {:?}", ended);
    prop_assert!(beats >= answers + 3, "the agent stopped heartbeating: {beats} heartbeats for {answers} answers");
    prop_assert!(outside.is_empty(), "the agent wrote outside its work directory: {:?}", outside);
    Ok(())
}

#[test]
fn random_assignments_never_stop_the_agent_nor_leave_its_work_directory() {
    // Each case runs a real agent for a while: fewer steps to shrink a failure, no outcomes
    // tallied, panics printed as they happen.
    let campaign =
        Campaign { max_shrink_iters: 64, tallied: false, ..Campaign::new("agent_assignments", cases(12, 32)) };
    let strategy =
        (any::<u64>(), prop::collection::vec(answer(true), 1..8), prop::collection::vec(answer(false), 0..6));
    campaign.run(strategy, |(case, heartbeats, polls)| check_agent(case, heartbeats, polls));
}
