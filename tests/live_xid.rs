//! `live serve --app-xids` end to end: a coordinator and a node agent as real processes of the
//! `schedlab` binary on loopback, the simulated GPU backend fed through an injection file.
//! Every wait is a poll loop with a generous deadline; nothing asserts on a fixed sleep.
//! (The coordinator's own unit tests cover `none` and a restart keeping the list.)

mod common;

use common::{schedlab, scratch, stderr};
use live::client::Client;
use serde_json::{Value, json};
use std::io::Write;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_schedlab");

/// Children killed when the test ends, passing or not.
#[derive(Default)]
struct Procs(Vec<Child>);

impl Procs {
    fn spawn(&mut self, args: &[&str], log: &Path) {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
        let child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.0.push(child);
    }
}

impl Drop for Procs {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Polls `f` every 50 ms until it returns Some, or panics after `secs` with `what`.
fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn append(path: &Path, line: &str) {
    writeln!(std::fs::OpenOptions::new().append(true).open(path).unwrap(), "{line}").unwrap();
}

#[test]
fn bad_app_xids_are_refused_naming_the_flag_and_the_item() {
    let dir = scratch("live_xid", "bad");
    let state = dir.join("state");
    for (list, item) in [("13,x", "`x`"), ("13,,31", "an empty item"), ("13;31", "`13;31`")] {
        let serve = ["live", "serve", "--state", state.to_str().unwrap(), "--cluster", "1x1:SIM"];
        let out = schedlab(&[&serve[..], &["--app-xids", list]].concat());
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let expected = format!("error: --app-xids {list}: {item} is not an XID number");
        assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    }
    assert!(!state.join("live.db").exists(), "a refused flag creates no state");
}

#[test]
fn an_application_xid_keeps_the_gpu_and_is_acknowledged_while_xid_79_takes_it_out() {
    let dir = scratch("live_xid", "session");
    let state = dir.join("state");
    let mut procs = Procs::default();
    // The default list (13 is in it): no --app-xids.
    let serve = ["live", "serve", "--state", state.to_str().unwrap(), "--listen", "127.0.0.1:0"];
    let settings = ["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"];
    procs.spawn(&[&serve[..], &settings[..]].concat(), &dir.join("coordinator.log"));
    let addr = wait_for(30, "the coordinator's address", || {
        std::fs::read_to_string(state.join("addr")).ok().map(|a| a.trim().to_string())
    });
    let token = state.join("token");
    let client = Client::new(&addr, std::fs::read_to_string(&token).unwrap().trim(), Duration::from_secs(20));
    let inject = dir.join("inject.txt");
    std::fs::write(&inject, "").unwrap();
    let backend = format!("sim:gpus=1,prefix=n0,inject={}", inject.display());
    let work = dir.join("agent");
    let agent = ["live", "agent", "--coordinator", &addr, "--token-file", token.to_str().unwrap(), "--name", "n0"];
    let more = ["--backend", &backend, "--work-dir", work.to_str().unwrap(), "--grace-s", "1"];
    procs.spawn(&[&agent[..], &more[..]].concat(), &dir.join("agent.log"));
    let gpu_state = || -> Option<String> {
        let v: Value = client.get("/v1/cluster").ok()?;
        (v["nodes"][0]["state"] == "alive").then(|| v["nodes"][0]["gpus"][0]["state"].as_str().unwrap().to_string())
    };
    wait_for(30, "the agent to register", gpu_state);
    let _: Value = client
        .post("/v1/jobs", &json!({ "name": "long", "tasks": [{ "name": "0", "command": "sleep 120" }] }))
        .unwrap();
    wait_for(30, "`long` to run", || (gpu_state()? == "busy").then_some(()));

    let log = || std::fs::read_to_string(dir.join("coordinator.log")).unwrap();
    let app_line = "node 0: XID 13 on GPU-n0-0: an application error, the GPU stays in service";
    append(&inject, "xid 0 13");
    wait_for(30, "the coordinator to log XID 13", || log().contains(app_line).then_some(()));
    assert_eq!(gpu_state().as_deref(), Some("busy"), "the GPU stays in service, its task on it");

    append(&inject, "xid 0 79");
    wait_for(30, "XID 79 to take the GPU out", || (gpu_state()? == "out").then_some(()));
    let log = log();
    assert!(log.contains("node 0: XID 79 on GPU-n0-0"), "{log}");
    // Had XID 13 not been acknowledged, the agent would have sent it again with every beat,
    // XID 79's included, and the coordinator would have logged it again.
    assert_eq!(log.matches(app_line).count(), 1, "{log}");
    let decisions: Value = client.get("/v1/decisions").unwrap();
    let fails: Vec<&Value> =
        decisions["decisions"].as_array().unwrap().iter().filter(|d| d["kind"] == "fail").collect();
    assert_eq!(fails.len(), 1, "only XID 79 failed the task: {decisions:#}");
}
