//! The session helpers of the live-mode end-to-end tests (tests/live*.rs): a coordinator and
//! agents as real processes of the `schedlab` binary on loopback, simulated GPUs (or any
//! backend a test names). Every wait is a poll loop with a generous deadline; nothing asserts
//! on a fixed sleep.

use live::net::client::{CallError, Client, ClientTls};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_schedlab");

/// A seeded generator for test timings and random steps (splitmix64: enough for tests).
pub struct SplitMix(pub u64);

impl SplitMix {
    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        (z ^ (z >> 31)) % n
    }

    /// Up to `max` ms, inclusive.
    pub fn millis(&mut self, max: u64) -> Duration {
        Duration::from_millis(self.below(max + 1))
    }
}

/// Children killed when the test ends, passing or not.
#[derive(Default)]
pub struct Procs(Vec<Child>);

impl Procs {
    /// Starts `schedlab ARGS`, its stdout and stderr appended to `log`; returns its index.
    pub fn spawn(&mut self, args: &[&str], log: &Path) -> usize {
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

    /// The process id of the child at `index`.
    pub fn pid(&self, index: usize) -> u32 {
        self.0[index].id()
    }

    /// Sends `signal` (`TERM`, `INT`) to the child at `index`.
    pub fn signal(&self, index: usize, signal: &str) {
        let sent = Command::new("kill").arg(format!("-{signal}")).arg(self.pid(index).to_string()).status().unwrap();
        assert!(sent.success(), "kill -{signal}");
    }

    /// Waits up to `secs` for the child at `index` to exit: its status, None if it did not.
    pub fn wait(&mut self, index: usize, secs: u64) -> Option<std::process::ExitStatus> {
        let deadline = Instant::now() + Duration::from_secs(secs);
        loop {
            if let Some(status) = self.0[index].try_wait().unwrap() {
                return Some(status);
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGKILL, and wait for it.
    pub fn kill(&mut self, index: usize) {
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

/// A fresh, empty directory `live-NAME-PID` under the target dir for one test's files.
pub fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(format!("live-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Polls `f` every 50 ms until it returns Some, or panics after `secs` with `what`.
pub fn wait_for<T>(secs: u64, what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(Instant::now() < deadline, "timed out after {secs} s waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Runs `schedlab ARGS` to its end, killed if it runs past `secs`: (exit code, stdout,
/// stderr); the code is None when it was killed.
pub fn run_bounded(args: &[&str], secs: u64) -> (Option<i32>, String, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(secs);
    while child.try_wait().unwrap().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code(), text(&out.stdout), text(&out.stderr))
}

/// Appends `line` to an injection (or control) file a backend reads.
pub fn append(path: &Path, line: &str) {
    use std::io::Write;
    writeln!(std::fs::OpenOptions::new().append(true).open(path).unwrap(), "{line}").unwrap();
}

/// A coordinator and its agents, all killed when the session is dropped. Its files are under
/// `dir`: `state/`, `coordinator.log`, and per agent NAME `agent-NAME/` (its work dir) and
/// `agent-NAME.log`.
pub struct Session {
    pub dir: PathBuf,
    pub procs: Procs,
    /// `HOST:PORT`, or `https://HOST:PORT` for a coordinator started with `--tls`.
    pub addr: String,
    /// The certificate clients trust for `https` (the coordinator's self-signed one).
    pub ca: Option<PathBuf>,
    /// The client certificate and key the test's clients and agents show (mutual TLS).
    pub identity: Option<(PathBuf, PathBuf)>,
    /// The coordinator's index in `procs`.
    pub coordinator: usize,
}

impl Session {
    /// A coordinator on a free loopback port, with `args` (cluster, heartbeats, ...), in a
    /// [`fresh_dir`] named `name`.
    pub fn start(name: &str, args: &[&str]) -> Session {
        let dir = fresh_dir(name);
        let state = dir.join("state");
        let mut procs = Procs::default();
        let mut all = vec!["live", "serve", "--state", state.to_str().unwrap(), "--listen", "127.0.0.1:0"];
        all.extend_from_slice(args);
        let coordinator = procs.spawn(&all, &dir.join("coordinator.log"));
        let addr = wait_for(30, "the coordinator's address", || {
            std::fs::read_to_string(state.join("addr")).ok().map(|a| a.trim().to_string())
        });
        let tls = args.contains(&"--tls");
        let (addr, ca) = if tls { (format!("https://{addr}"), Some(state.join("tls-cert.pem"))) } else { (addr, None) };
        Session { dir, procs, addr, ca, identity: None, coordinator }
    }

    pub fn state(&self) -> PathBuf {
        self.dir.join("state")
    }

    /// Starts the coordinator again on its state directory and on `listen` (its address), with
    /// `args`; waits for nothing.
    pub fn spawn_coordinator(&mut self, listen: &str, args: &[&str]) {
        let state = self.state();
        let mut all = vec!["live", "serve", "--state", state.to_str().unwrap(), "--listen", listen];
        all.extend_from_slice(args);
        self.coordinator = self.procs.spawn(&all, &self.dir.join("coordinator.log"));
    }

    pub fn token(&self) -> String {
        std::fs::read_to_string(self.state().join("token")).unwrap().trim().to_string()
    }

    /// A client with the user token.
    pub fn client(&self) -> Client {
        self.client_with(&self.token())
    }

    /// A client acting as agent `name`, with its token.
    pub fn agent_client(&self, name: &str) -> Client {
        let token = std::fs::read_to_string(self.agent_token(name)).unwrap();
        self.client_with(token.trim())
    }

    /// Agent `name`'s token file, `agent-NAME.token`, issued by `live issue-token` the first
    /// time it is asked for.
    pub fn agent_token(&self, name: &str) -> PathBuf {
        let path = self.dir.join(format!("agent-{name}.token"));
        if !path.exists() {
            let state = self.state();
            let args = ["live", "issue-token", "--state", state.to_str().unwrap(), "--agent", name, "--out"];
            let out = Command::new(BIN).args(args).arg(&path).output().unwrap();
            assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        }
        path
    }

    pub fn client_with(&self, token: &str) -> Client {
        let timeout = Duration::from_secs(20);
        match &self.ca {
            Some(ca) => {
                let tls = ClientTls { ca_file: Some(ca.clone()), identity: self.identity.clone() };
                Client::with_tls(&self.addr, token, timeout, &tls).unwrap()
            }
            None => Client::new(&self.addr, token, timeout),
        }
    }

    /// The coordinator's log so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("coordinator.log")).unwrap()
    }

    /// An agent with `gpus` simulated GPUs (`GPU-NAME-SLOT`). Started again with the same name
    /// after a kill, it is the same agent restarting: same work dir, same log.
    pub fn agent(&mut self, name: &str, gpus: u32) -> usize {
        self.agent_with(name, &format!("sim:gpus={gpus},prefix={name}"), &[])
    }

    /// An agent with `gpus` simulated GPUs (`GPU-NAME-SLOT`) reading health events from its
    /// injection file, `inject-NAME.txt` (created empty, and returned).
    pub fn agent_with_inject(&mut self, name: &str, gpus: u32) -> (usize, PathBuf) {
        let inject = self.dir.join(format!("inject-{name}.txt"));
        std::fs::write(&inject, "").unwrap();
        let backend = format!("sim:gpus={gpus},prefix={name},inject={}", inject.display());
        (self.agent_with(name, &backend, &[]), inject)
    }

    /// An agent on `backend`, with `extra` arguments (`--node N`, ...) after the usual ones.
    pub fn agent_with(&mut self, name: &str, backend: &str, extra: &[&str]) -> usize {
        let token = self.agent_token(name);
        let work = self.dir.join(format!("agent-{name}"));
        let args = ["live", "agent", "--coordinator", &self.addr, "--token-file", token.to_str().unwrap()];
        let more = ["--name", name, "--backend", backend, "--work-dir", work.to_str().unwrap(), "--grace-s", "1"];
        let mut ca: Vec<&str> = self.ca.iter().flat_map(|ca| ["--ca-file", ca.to_str().unwrap()]).collect();
        if let Some((cert, key)) = &self.identity {
            ca.extend(["--client-cert", cert.to_str().unwrap(), "--client-key", key.to_str().unwrap()]);
        }
        let log = self.dir.join(format!("agent-{name}.log"));
        self.procs.spawn(&[&args[..], &more[..], &ca[..], extra].concat(), &log)
    }

    pub fn wait_agents(&self, n: usize) {
        let client = self.client();
        wait_for(30, "agents to register", || {
            let v: Value = client.get("/v1/cluster").ok()?;
            let alive = v["nodes"].as_array()?.iter().filter(|n| n["state"] == "alive").count();
            (alive >= n).then_some(())
        });
    }

    /// GET /v1/cluster's entry for the GPU at `node`, `slot`.
    pub fn gpu(&self, node: usize, slot: usize) -> Value {
        let v: Value = self.client().get("/v1/cluster").unwrap();
        v["nodes"][node]["gpus"][slot].clone()
    }

    pub fn submit(&self, job: Value) -> Result<Value, CallError> {
        self.client().post("/v1/jobs", &job)
    }

    pub fn job(&self, name: &str) -> Value {
        self.client().get(&format!("/v1/jobs/{name}")).unwrap()
    }

    /// The first task of job `job`.
    pub fn task(&self, job: &str) -> Value {
        self.job(job)["tasks"][0].clone()
    }

    pub fn wait_jobs_ended(&self, secs: u64) -> Value {
        let client = self.client();
        wait_for(secs, "every job to end", || {
            let jobs = client.all_jobs().ok()?;
            let ended = jobs.iter().all(|j| matches!(j["state"].as_str(), Some("succeeded" | "failed" | "cancelled")));
            ended.then(|| serde_json::json!({ "jobs": jobs }))
        })
    }

    /// `schedlab live return-gpu UUID` against this coordinator: (exit code, stdout, stderr).
    pub fn return_gpu(&self, uuid: &str) -> (Option<i32>, String, String) {
        let token = self.state().join("token");
        let out = Command::new(BIN)
            .args(["live", "return-gpu", "--coordinator", &self.addr, "--token-file", token.to_str().unwrap(), uuid])
            .output()
            .unwrap();
        let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
        (out.status.code(), text(&out.stdout), text(&out.stderr))
    }

    /// The live decision log as (time_ms, kind, job, task, gpus) lines, and its digest.
    pub fn decisions(&self) -> (Vec<String>, String) {
        let v: Value = self.client().all_pages("/v1/decisions", "decisions").unwrap();
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

    /// The folder [`Session::replay`] exports the journal to (events.csv, live.json, ...).
    pub fn trace(&self) -> PathBuf {
        // A space and a quote in the path: the stored command must quote it.
        self.dir.join("the session's trace")
    }

    /// Exports the journal and replays it in the simulator by running, through `sh`, exactly
    /// the command the export stored in its live.json (with this build's `schedlab` first on
    /// PATH): its decisions in the same form as [`Session::decisions`], its digest, and the
    /// live.json it ran.
    pub fn replay(&self) -> (Vec<String>, String, Value) {
        let trace = self.trace();
        let export = Command::new(BIN)
            .args(["live", "export", "--state", self.state().to_str().unwrap(), "--out", trace.to_str().unwrap()])
            .output()
            .unwrap();
        assert!(export.status.success(), "{}", String::from_utf8_lossy(&export.stderr));
        let settings: Value = serde_json::from_str(&std::fs::read_to_string(trace.join("live.json")).unwrap()).unwrap();
        let command = settings["replay"].as_str().expect("live.json has the replay command");
        assert!(command.starts_with("schedlab simulate "), "{command}");
        let out = PathBuf::from(settings["replay_out"].as_str().expect("live.json names the replay's folder"));
        let _ = std::fs::remove_dir_all(&out);
        let bin_dir = Path::new(BIN).parent().unwrap();
        let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
        // From another directory: the stored paths must not depend on the coordinator's.
        let sim = Command::new("sh").args(["-c", command]).env("PATH", path).current_dir("/").output().unwrap();
        assert!(sim.status.success(), "`{command}` failed: {}", String::from_utf8_lossy(&sim.stderr));
        let csv = std::fs::read_to_string(out.join("decisions.csv")).unwrap();
        let lines = csv
            .lines()
            .skip(1)
            .map(|l| {
                let f: Vec<&str> = l.split(',').collect();
                let ms = (f[0].parse::<f64>().unwrap() * 1000.0).round() as u64;
                // time_s,kind,job_id,task_id,job_index,task_index,gpu_indexes,...: live's
                // lines name jobs and tasks by their numbers.
                format!("{ms},{},{},{},{}", f[1], f[4], f[5], f[6])
            })
            .collect();
        let summary: Value = serde_json::from_str(&std::fs::read_to_string(out.join("summary.json")).unwrap()).unwrap();
        (lines, summary["digest"].as_str().unwrap().to_string(), settings)
    }
}
