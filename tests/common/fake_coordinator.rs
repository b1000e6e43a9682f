//! A fake coordinator played by a test, on loopback: what an agent does with answers no real
//! coordinator would give (another generation's, names that are no plain names).

use super::live::Procs;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// What the fake coordinator saw.
#[derive(Default)]
pub struct Seen {
    pub registrations: AtomicUsize,
    pub heartbeats: AtomicUsize,
    /// The generation of each heartbeat the agent sent.
    pub generations: Mutex<Vec<u64>>,
    /// The exits the agent reported, as JSON.
    pub exits: Mutex<Vec<Value>>,
}

/// Attempt 1 of task 0, job `job` task `task`, on GPU-n0-0: its command touches `marker`.
pub fn touching(job: &str, task: &str, marker: &Path) -> Value {
    json!({
        "task": 0, "attempt": 1, "job": job, "task_name": task, "command": format!("touch {}", marker.display()),
        "gpus": ["GPU-n0-0"], "rank": 0, "world_size": 1, "master_addr": "127.0.0.1",
    })
}

/// A fake coordinator on loopback that registers agents with generation `registers` and
/// answers every heartbeat and poll as generation `answers`, assigning `assignment`. One
/// request per connection.
pub fn fake_coordinator(registers: u64, answers: u64, assignment: Value) -> (String, Arc<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let seen = Arc::new(Seen::default());
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
                theirs.exits.lock().unwrap().extend(sent["exits"].as_array().cloned().unwrap_or_default());
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

/// Agent n0 of the `schedlab` binary, its work directory `dir/work`, against the fake
/// coordinator at `addr`; its log is `dir/agent.log`.
pub fn fake_agent(procs: &mut Procs, dir: &Path, addr: &str) {
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
