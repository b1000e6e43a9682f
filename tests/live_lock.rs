//! One coordinator per state directory: a second `live serve` on a directory in use is refused
//! at once, naming the holder, and writes nothing there; a coordinator that cannot listen
//! creates no state. One agent per work directory: a second `live agent` on one in use is
//! refused before it touches the first one's processes. Processes of the `schedlab` binary on
//! loopback (tests/common/live.rs).

mod common;

use common::live::{Session, fresh_dir, run_bounded, wait_for};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::SystemTime;

/// Every file under `dir`: its bytes and modification time.
fn snapshot(dir: &Path) -> BTreeMap<String, (Vec<u8>, SystemTime)> {
    let mut files = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for entry in std::fs::read_dir(&d).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::metadata(&path).unwrap();
            if meta.is_dir() {
                todo.push(path.clone());
            }
            let bytes = if meta.is_file() { std::fs::read(&path).unwrap() } else { Vec::new() };
            files.insert(path.display().to_string(), (bytes, meta.modified().unwrap()));
        }
    }
    files
}

#[test]
fn a_second_coordinator_on_a_state_in_use_is_refused_naming_the_holder_and_writes_nothing() {
    // An hour between heartbeats: the first coordinator, with no agent and no job, writes
    // nothing after it starts listening, so any change is the second one's.
    let args = ["--cluster", "1x1:SIM", "--heartbeat-s", "3600"];
    let s = Session::start("lock", &args);
    wait_for(30, "the coordinator to listen", || s.log().contains("listening on").then_some(()));
    let state = s.state();
    let before = snapshot(&state);
    let pid = s.procs.pid(s.coordinator);
    // On another free port, and on the holder's own address: refused by the lock either way.
    for listen in ["127.0.0.1:0", s.addr.as_str()] {
        let mut second = vec!["live", "serve", "--state", state.to_str().unwrap(), "--listen", listen];
        second.extend_from_slice(&args);
        let (code, _, err) = run_bounded(&second, 30);
        assert_eq!(code, Some(2), "{err}");
        let holder = format!("is in use by a coordinator (pid {pid} addr {})", s.addr);
        assert!(err.contains(&holder), "{err}");
        assert!(!err.contains("cannot listen"), "the lock is checked before the address: {err}");
        assert_eq!(snapshot(&state), before, "the refused coordinator changed the state directory");
    }
    // The first one still serves, with its own address on record.
    assert_eq!(std::fs::read_to_string(state.join("addr")).unwrap().trim(), s.addr);
    let _: serde_json::Value = s.client().get("/v1/cluster").unwrap();
}

#[test]
fn a_coordinator_that_cannot_listen_creates_no_state() {
    let dir = fresh_dir("lock-bind");
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let state = dir.join("state");
    for tls in [false, true] {
        let mut args = vec!["live", "serve", "--state", state.to_str().unwrap(), "--listen", &addr];
        args.extend_from_slice(&["--cluster", "1x1:SIM"]);
        if tls {
            args.push("--tls");
        }
        let (code, _, err) = run_bounded(&args, 30);
        assert_eq!(code, Some(2), "{err}");
        assert!(err.contains(&format!("cannot listen on {addr}")), "{err}");
        assert!(!state.exists(), "the state directory (and its token) made before the address was known free");
    }
}

#[test]
fn a_second_agent_on_a_work_dir_in_use_is_refused_and_leaves_the_first_ones_task_running() {
    // Found while writing tests/live_soak.rs's duplicate-agent step: the second agent took the
    // first one's running task for a leftover of a previous run and stopped it (SIGTERM); the
    // first agent reported the exit, 143, and the job failed for good though its program never
    // failed.
    let mut s = Session::start("lock-agent", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "50"]);
    let first = s.agent("n0", 1);
    s.wait_agents(1);
    let marks = s.dir.join("marks.txt");
    let command = format!(
        "echo \"start $SCHEDLAB_ATTEMPT\" >> '{0}'; sleep 1; echo \"end $SCHEDLAB_ATTEMPT\" >> '{0}'",
        marks.display()
    );
    s.submit(json!({ "name": "long", "tasks": [{ "name": "0", "command": command }] })).unwrap();
    wait_for(30, "attempt 1 to start", || std::fs::read_to_string(&marks).ok().filter(|t| t.contains("start 1")));
    let second = s.agent("n0", 1);
    let status = s.procs.wait(second, 30).expect("the second agent is refused at once");
    assert_eq!(status.code(), Some(2), "{status:?}");
    let log = std::fs::read_to_string(s.dir.join("agent-n0.log")).unwrap();
    let holder = format!("is in use by an agent (pid {}): one agent per work directory", s.procs.pid(first));
    assert!(log.contains(&holder), "{log}");
    assert!(!log.contains("stopped leftover process group"), "the second agent stopped the first one's task: {log}");
    let jobs = s.wait_jobs_ended(60);
    assert_eq!(jobs["jobs"][0]["state"], "succeeded", "{jobs:#}");
    assert_eq!(std::fs::read_to_string(&marks).unwrap(), "start 1\nend 1\n");
    assert!(s.procs.wait(first, 0).is_none(), "the first agent runs on");
    let _: Value = s.client().get("/v1/cluster").unwrap();
}
