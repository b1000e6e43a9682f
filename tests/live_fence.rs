//! Fencing: every coordinator start is a new generation, which agents learn when they register
//! and send with every report. A report for another generation is refused (409), and the agent
//! registers again; an agent acts on no answer of a coordinator that is not the one it
//! registered with. Processes of the `schedlab` binary on loopback (tests/common/live.rs), and
//! a fake coordinator played by the test.

mod common;

use common::live::{Procs, Session, fresh_dir, wait_for};
use live::client::CallError;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

#[test]
fn after_a_coordinator_restart_a_report_of_the_old_generation_is_refused_and_the_agent_registers_again() {
    let args = ["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "50"];
    let mut s = Session::start("fence-restart", &args);
    let listen = s.addr.clone();
    s.agent("n0", 1);
    s.wait_agents(1);
    assert!(s.log().contains("(generation 1,"), "{}", s.log());
    s.procs.kill(s.coordinator);
    let state = s.state();
    let mut all = vec!["live", "serve", "--state", state.to_str().unwrap(), "--listen", &listen];
    all.extend_from_slice(&args);
    s.coordinator = s.procs.spawn(&all, &s.dir.join("coordinator.log"));
    wait_for(30, "the coordinator to come back", || s.client().get::<Value>("/v1/jobs").ok());
    assert!(s.log().contains("(generation 2,"), "{}", s.log());
    let agent_log = || std::fs::read_to_string(s.dir.join("agent-n0.log")).unwrap();
    wait_for(30, "the agent to register with generation 2", || {
        agent_log().contains("coordinator generation 2)").then_some(())
    });
    assert!(agent_log().contains("stale coordinator generation"), "{}", agent_log());
    // A report made for generation 1 (an exit of a task that is not running) is refused.
    let beat = json!({ "name": "n0", "generation": 1, "exits": [{ "task": 0, "attempt": 1, "code": 0 }] });
    let agent = s.agent_client("n0");
    match agent.post::<_, Value>("/v1/agents/heartbeat", &beat) {
        Err(CallError::Status(409, reason)) => assert!(
            reason
                .starts_with("stale coordinator generation: it is for generation 1, this coordinator is generation 2"),
            "{reason}"
        ),
        other => panic!("a report of generation 1 was not refused: {other:?}"),
    }
    // As is one for a generation to come, and a request for assignments without the current one.
    let ahead = json!({ "name": "n0", "generation": 3 });
    let e = agent.post::<_, Value>("/v1/agents/heartbeat", &ahead).unwrap_err();
    assert!(matches!(&e, CallError::Status(409, r) if r.contains("this coordinator is not the current one")), "{e}");
    let e = agent.get::<Value>("/v1/agents/n0/assignments?generation=1").unwrap_err();
    assert!(matches!(&e, CallError::Status(409, _)), "{e}");
    let now: Value = agent.get("/v1/agents/n0/assignments?generation=2").unwrap();
    assert_eq!(now["generation"], 2);
    // And the agent, registered again, runs what it is given.
    s.submit(json!({ "name": "after", "tasks": [{ "name": "0", "command": "true" }] })).unwrap();
    s.wait_jobs_ended(60);
    assert_eq!(s.job("after")["state"], "succeeded");
}

/// What the fake coordinator saw.
#[derive(Default)]
struct Seen {
    registrations: AtomicUsize,
    heartbeats: AtomicUsize,
    /// The generation of each heartbeat the agent sent.
    generations: Mutex<Vec<u64>>,
}

/// A fake coordinator on loopback that registers agents with generation `registers` and
/// answers every heartbeat and poll as generation `answers`, assigning a task that touches
/// `marker`. One request per connection.
fn fake_coordinator(registers: u64, answers: u64, marker: &Path) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Seen::default());
    let assignment = json!({
        "task": 0, "attempt": 1, "job": "j", "task_name": "t", "command": format!("touch {}", marker.display()),
        "gpus": ["GPU-n0-0"], "rank": 0, "world_size": 1, "master_addr": "127.0.0.1",
    });
    let theirs = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let mut length = 0;
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).unwrap_or(0) == 0 || header.trim().is_empty() {
                    break;
                }
                if let Some((name, value)) = header.split_once(':')
                    && name.eq_ignore_ascii_case("content-length")
                {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0; length];
            let _ = reader.read_exact(&mut body);
            let answer = if line.contains("/v1/agents/register") {
                theirs.registrations.fetch_add(1, Ordering::SeqCst);
                json!({ "node": 0, "heartbeat_ms": 100, "generation": registers })
            } else if line.contains("/v1/agents/heartbeat") {
                let sent: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
                theirs.generations.lock().unwrap().push(sent["generation"].as_u64().unwrap_or(0));
                theirs.heartbeats.fetch_add(1, Ordering::SeqCst);
                json!({ "assignments": [assignment], "acked": [], "heartbeat_ms": 100, "generation": answers })
            } else {
                json!({ "assignments": [assignment], "generation": answers })
            };
            let body = answer.to_string();
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (addr, seen)
}

/// An agent of the `schedlab` binary against the fake coordinator at `addr`.
fn agent(procs: &mut Procs, dir: &Path, addr: &str) {
    let token = dir.join("token");
    std::fs::write(&token, "agent.n0.00\n").unwrap();
    let work = dir.join("work");
    let args = [
        "live",
        "agent",
        "--coordinator",
        addr,
        "--token-file",
        token.to_str().unwrap(),
        "--name",
        "n0",
        "--backend",
        "sim:gpus=1,prefix=n0",
        "--work-dir",
        work.to_str().unwrap(),
        "--poll-s",
        "0.05",
        "--grace-s",
        "1",
    ];
    procs.spawn(&args, &dir.join("agent.log"));
}

#[test]
fn an_agent_acts_on_no_answer_of_a_coordinator_of_another_generation() {
    // Registered with generation 2, answered by generation 1 (a coordinator that is not the
    // current one): the task it assigns never runs, and the agent keeps registering again.
    let dir = fresh_dir("fence-stale");
    let marker = dir.join("ran");
    let (addr, seen) = fake_coordinator(2, 1, &marker);
    let mut procs = Procs::default();
    agent(&mut procs, &dir, &addr);
    wait_for(60, "five heartbeats", || (seen.heartbeats.load(Ordering::SeqCst) >= 5).then_some(()));
    assert!(!marker.exists(), "the agent ran an assignment of a coordinator of another generation");
    assert!(seen.registrations.load(Ordering::SeqCst) >= 2, "it registers again after a stale answer");
    assert!(seen.generations.lock().unwrap().iter().all(|&g| g == 2), "every report carries its generation");
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    assert!(log.contains("ignored a heartbeat answer of coordinator generation 1 (registered with 2)"), "{log}");
    drop(procs);

    // The same coordinator answering as the generation it registered with: the task runs
    // (what makes the test above able to fail).
    let dir = fresh_dir("fence-current");
    let marker = dir.join("ran");
    let (addr, _) = fake_coordinator(2, 2, &marker);
    let mut procs = Procs::default();
    agent(&mut procs, &dir, &addr);
    wait_for(60, "the assignment to run", || marker.exists().then_some(()));
}
