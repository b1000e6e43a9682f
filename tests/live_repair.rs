//! Returning a GPU to service without restarting its agent (`POST /v1/gpus/{uuid}/return`,
//! `schedlab live return-gpu`), end to end: a coordinator and an agent as processes of the
//! `schedlab` binary on loopback, simulated GPUs whose injection file takes `xid DEV CODE`.
//! Every wait is a poll loop with a generous deadline; nothing asserts on a fixed sleep. The
//! session helpers are a trimmed copy of tests/live.rs's.

use live::client::{CallError, Client};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_schedlab");

/// Children killed when the test ends, passing or not.
#[derive(Default)]
struct Procs(Vec<Child>);

impl Procs {
    fn spawn(&mut self, args: &[&str], log: &Path) -> usize {
        let log = std::fs::OpenOptions::new().create(true).append(true).open(log).unwrap();
        let child = Command::new(BIN)
            .args(args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap();
        self.0.push(child);
        self.0.len() - 1
    }
    /// SIGKILL, and wait for it.
    fn kill(&mut self, index: usize) {
        let _ = self.0[index].kill();
        let _ = self.0[index].wait();
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
    use std::io::Write;
    writeln!(std::fs::OpenOptions::new().append(true).open(path).unwrap(), "{line}").unwrap();
}

struct Session {
    dir: PathBuf,
    procs: Procs,
    addr: String,
}

impl Session {
    /// A coordinator on a free loopback port, with `args` (cluster, heartbeats, ...).
    fn start(name: &str, args: &[&str]) -> Session {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("live-repair-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let state = dir.join("state");
        let mut procs = Procs::default();
        let mut all = vec!["live", "serve", "--state", state.to_str().unwrap(), "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        procs.spawn(&all, &dir.join("coordinator.log"));
        let addr = wait_for(30, "the coordinator's address", || {
            std::fs::read_to_string(state.join("addr")).ok().map(|a| a.trim().to_string())
        });
        Session { dir, procs, addr }
    }

    fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    fn client(&self) -> Client {
        let token = std::fs::read_to_string(self.state().join("token")).unwrap();
        Client::new(&self.addr, token.trim(), Duration::from_secs(20))
    }

    /// An agent with `gpus` simulated GPUs (`GPU-NAME-SLOT`) reading health events from its
    /// injection file, `inject-NAME.txt` (returned).
    fn agent(&mut self, name: &str, gpus: u32) -> (usize, PathBuf) {
        let inject = self.dir.join(format!("inject-{name}.txt"));
        std::fs::write(&inject, "").unwrap();
        let token = self.state().join("token");
        let backend = format!("sim:gpus={gpus},prefix={name},inject={}", inject.display());
        let work = self.dir.join(format!("agent-{name}"));
        let args = ["live", "agent", "--coordinator", &self.addr, "--token-file", token.to_str().unwrap()];
        let more = ["--name", name, "--backend", &backend, "--work-dir", work.to_str().unwrap(), "--grace-s", "1"];
        let log = self.dir.join(format!("agent-{name}.log"));
        (self.procs.spawn(&[&args[..], &more[..]].concat(), &log), inject)
    }

    fn wait_agents(&self, n: usize) {
        let client = self.client();
        wait_for(30, "agents to register", || {
            let v: Value = client.get("/v1/cluster").ok()?;
            let alive = v["nodes"].as_array()?.iter().filter(|n| n["state"] == "alive").count();
            (alive >= n).then_some(())
        });
    }

    /// GET /v1/cluster's entry for the GPU at `node`, `slot`.
    fn gpu(&self, node: usize, slot: usize) -> Value {
        let v: Value = self.client().get("/v1/cluster").unwrap();
        v["nodes"][node]["gpus"][slot].clone()
    }

    fn submit(&self, job: Value) -> Value {
        self.client().post("/v1/jobs", &job).unwrap()
    }

    fn task(&self, job: &str) -> Value {
        let v: Value = self.client().get(&format!("/v1/jobs/{job}")).unwrap();
        v["tasks"][0].clone()
    }

    fn wait_jobs_ended(&self, secs: u64) -> Value {
        let client = self.client();
        wait_for(secs, "every job to end", || {
            let v: Value = client.get("/v1/jobs").ok()?;
            let jobs = v["jobs"].as_array()?;
            jobs.iter().all(|j| matches!(j["state"].as_str(), Some("succeeded" | "failed" | "cancelled"))).then_some(v)
        })
    }

    /// `schedlab live return-gpu UUID` against this coordinator: (exit code, stdout, stderr).
    fn return_gpu(&self, uuid: &str) -> (Option<i32>, String, String) {
        let token = self.state().join("token");
        let out = Command::new(BIN)
            .args(["live", "return-gpu", "--coordinator", &self.addr, "--token-file", token.to_str().unwrap(), uuid])
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("coordinator.log")).unwrap()
    }

    /// The live decision log as (time_ms, kind, job, task, gpus) lines, and its digest.
    fn decisions(&self) -> (Vec<String>, String) {
        let v: Value = self.client().get("/v1/decisions").unwrap();
        let lines = v["decisions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| {
                let gpus: Vec<String> = d["gpus"].as_array().unwrap().iter().map(|g| g.to_string()).collect();
                let task = d["task"].as_u64().map(|t| t.to_string()).unwrap_or_default();
                format!("{},{},{},{},{}", d["time_ms"], d["kind"].as_str().unwrap(), d["job"], task, gpus.join(" "))
            })
            .collect();
        (lines, v["digest"].as_str().unwrap().to_string())
    }

    /// Exports the journal and replays it in the simulator by running, through `sh`, exactly
    /// the command the export stored in its live.json (with this build's `schedlab` first on
    /// PATH): its decisions in the same form as [`Session::decisions`], its digest, and the
    /// exported events.csv.
    fn replay(&self) -> (Vec<String>, String, String) {
        let trace = self.dir.join("trace");
        let export = Command::new(BIN)
            .args(["live", "export", "--state", self.state().to_str().unwrap(), "--out", trace.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
        let settings: Value = serde_json::from_str(&std::fs::read_to_string(trace.join("live.json")).unwrap()).unwrap();
        let command = settings["replay"].as_str().expect("live.json has the replay command");
        let out = PathBuf::from(settings["replay_out"].as_str().expect("live.json names the replay's folder"));
        let _ = std::fs::remove_dir_all(&out);
        let bin_dir = Path::new(BIN).parent().unwrap();
        let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
        let sim = Command::new("sh").args(["-c", command]).env("PATH", path).current_dir("/").output().unwrap();
        assert!(sim.status.success(), "`{command}` failed: {}", String::from_utf8_lossy(&sim.stderr));
        let csv = std::fs::read_to_string(out.join("decisions.csv")).unwrap();
        let lines = csv
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                let ms = (f[0].parse::<f64>().unwrap() * 1000.0).round() as u64;
                format!("{ms},{},{},{},{}", f[1], f[2], f[3], f[4])
            })
            .collect();
        let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        let events = std::fs::read_to_string(trace.join("events.csv")).unwrap();
        (lines, summary["digest"].as_str().unwrap().to_string(), events)
    }
}

fn one_gpu(name: &str, command: &str) -> Value {
    json!({ "name": name, "tasks": [{ "name": "0", "command": command, "gpus": 1 }] })
}

#[test]
fn a_gpu_taken_out_by_an_xid_returned_with_the_cli_runs_a_waiting_task_and_the_session_replays() {
    let mut s = Session::start("return", &["--cluster", "1x2:SIM", "--heartbeat-s", "0.2"]);
    let (_, inject) = s.agent("n0", 2);
    s.wait_agents(1);
    // `long` outlasts the test (it is cancelled at the end), so the only way `waiting` can run
    // is on the GPU returned to service.
    s.submit(one_gpu("long", "sleep 120"));
    let slot = wait_for(30, "`long` to run", || {
        let t = s.task("long");
        (t["status"] == "running").then(|| t["placed"][0]["slot"].as_u64().unwrap() as usize)
    });
    let uuid = format!("GPU-n0-{slot}");
    append(&inject, &format!("xid {slot} 79"));
    wait_for(30, "the GPU to be out and `long` to run again on the other", || {
        let t = s.task("long");
        let moved = t["status"] == "running" && t["attempt"] == 2 && t["placed"][0]["slot"] == 1 - slot as u64;
        (s.gpu(0, slot)["state"] == "out" && moved).then_some(())
    });
    // It writes the GPUs it was given, so the test sees the real process got the returned one.
    s.submit(one_gpu("waiting", "echo \"$CUDA_VISIBLE_DEVICES\""));
    wait_for(30, "`waiting` to be queued", || (s.task("waiting")["status"] == "ready").then_some(()));
    assert_eq!(s.gpu(0, slot)["state"], "out", "nothing brings the GPU back by itself");

    let (code, out, err) = s.return_gpu(&uuid);
    assert_eq!(code, Some(0), "{err}");
    // The policy runs in the batch that returns the GPU: the answer already names its new task.
    assert_eq!(
        out,
        format!("GPU {uuid} (node 0 slot {slot}, agent n0) is back in service: busy, running waiting/0 (job 1)\n")
    );
    assert!(s.log().contains(&format!("GPU {uuid} returned to service by the operator")), "{}", s.log());
    wait_for(30, "`waiting` to succeed", || (s.task("waiting")["status"] == "succeeded").then_some(()));
    let output = std::fs::read_to_string(s.dir.join("agent-n0/logs/waiting.0.1.log")).unwrap();
    assert_eq!(output.trim(), uuid);
    // The agent was never restarted: `long` kept its second attempt throughout.
    assert_eq!(s.task("long")["attempt"], 2);
    assert_eq!(s.gpu(0, slot)["state"], "free");

    let _: Value = s.client().post("/v1/jobs/long/cancel", &Value::Null).unwrap();
    s.wait_jobs_ended(60);
    let (live, digest) = s.decisions();
    assert!(live.iter().any(|l| l.contains(",fail,")), "{live:?}");
    let (replayed, sim_digest, events) = s.replay();
    assert_eq!((replayed, sim_digest), (live, digest), "the replay made other decisions");
    // The return is the failure's repair in the trace, as an agent's re-registration is.
    let row = events.lines().find(|l| l.contains(",gpu_fail,")).unwrap_or_else(|| panic!("{events}"));
    assert!(row.starts_with(char::is_numeric) && !row.ends_with(','), "no repair_s: {row}");
}

#[test]
fn returning_an_unknown_gpu_one_in_service_or_one_on_a_dead_node_is_refused_with_the_reason() {
    let mut s = Session::start("refusals", &["--cluster", "2x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "3"]);
    // One at a time, so that n0 holds node 0 (agents take the first free node).
    let (n0, inject) = s.agent("n0", 1);
    s.wait_agents(1);
    s.agent("n1", 1);
    s.wait_agents(2);

    let (code, _, err) = s.return_gpu("GPU-nope");
    assert_eq!(code, Some(2));
    assert!(err.contains("404: no GPU `GPU-nope`"), "{err}");
    let (code, _, err) = s.return_gpu("GPU-n1-0");
    assert_eq!(code, Some(2));
    assert!(err.contains("409: GPU GPU-n1-0 is in service; nothing to return"), "{err}");
    let (code, _, err) = s.return_gpu("a/b");
    assert_eq!(code, Some(2));
    assert!(err.contains("`a/b` is not a GPU UUID"), "{err}");

    // The same token rule as every request, and only POST.
    let stranger = Client::new(&s.addr, "not-the-token", Duration::from_secs(20));
    let r = stranger.post::<_, Value>("/v1/gpus/GPU-n1-0/return", &Value::Null);
    assert!(matches!(r, Err(CallError::Status(401, _))), "{r:?}");
    let r = s.client().get::<Value>("/v1/gpus/GPU-n1-0/return");
    assert!(matches!(r, Err(CallError::Status(405, _))), "{r:?}");

    // Out, then its agent dies: the node must come back before the GPU can.
    append(&inject, "xid 0 79");
    wait_for(30, "GPU-n0-0 to be out", || (s.gpu(0, 0)["state"] == "out").then_some(()));
    s.procs.kill(n0);
    wait_for(30, "node 0 to be declared dead", || {
        let v: Value = s.client().get("/v1/cluster").ok()?;
        (v["nodes"][0]["state"] == "dead").then_some(())
    });
    let (code, _, err) = s.return_gpu("GPU-n0-0");
    assert_eq!(code, Some(2));
    assert!(
        err.contains(
            "409: GPU GPU-n0-0 is on node 0, whose agent `n0` is declared dead: the node must come back first"
        ),
        "{err}"
    );
    assert_eq!(s.gpu(0, 0)["state"], "out");
    let log = s.log();
    assert!(log.contains("/v1/gpus/GPU-n0-0/return: refused: GPU GPU-n0-0 is on node 0"), "{log}");
    assert!(!log.contains("returned to service"), "{log}");
}
