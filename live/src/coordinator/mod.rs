//! The coordinator (`schedlab live serve`): one thread, one loop, for all the scheduling state.
//! It takes each HTTP request from the front ([`crate::net::http`]: no async runtime; one intake
//! thread reads every new connection's first head by readiness, and only a connection with a
//! token gets a thread of its own, so a slow or unauthenticated client holds only its own
//! connection), turns what it reports into a batch stamped with
//! the wall clock, writes the batch to SQLite, then applies it to the [`Driver`]. Between
//! requests it applies what falls due (heartbeat deadlines, wake-ups) as `Tick` batches. The
//! Driver, the store and the agents never leave this thread: batches are journaled and
//! applied in the one order it takes the requests in.
//!
//! The wall clock lives here only: SimTime is milliseconds since the coordinator's epoch,
//! read from a monotonic clock. After a restart the clock resumes 1 ms after the journal's
//! last batch: time while the coordinator was down does not count (agents' missed heartbeats
//! included, so a restart never declares every node dead).
//!
//! One coordinator per state directory ([`crate::lock`]); each start is a new generation,
//! which every agent report must carry (`Coordinator::check_generation`); each endpoint has
//! one role ([`crate::net::auth`]).

pub mod admission;
pub mod metrics;
pub mod settings;
pub mod store;

use crate::coordinator::settings::Given;
use crate::coordinator::store::{AgentRecord, Store};
use crate::driver::{Batch, Driver, Input};
use crate::lock::StateLock;
use crate::net::auth::{Keys, Principal, Role, endpoint_role};
use crate::net::http::{Call, Front, Inbound, Limits, Method};
use crate::net::tls::{Identities, TlsFront};
use crate::wire::HealthEvent;
use crate::wire::{
    AssignmentsReply, GpuReturned, HeartbeatReply, HeartbeatRequest, JobRequest, Refusal, RegisterReply,
    RegisterRequest, STALE_GENERATION,
};
use serde_json::{Value, json};
use sim::{SimTime, TaskId, TaskStatus};
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The XIDs NVIDIA's Kubernetes device plugin treats as the application's fault, not the
/// GPU's (13 graphics engine exception, 31 GPU memory page fault, 43 GPU stopped processing,
/// 45 preemptive cleanup, 68 video processor exception): the default of `--app-xids`.
pub const DEFAULT_APP_XIDS: [u64; 5] = [13, 31, 43, 45, 68];

/// Parses `--app-xids`: comma-separated XID numbers, or `none`. Sorted and without repeats,
/// so that the same set written in another order is the same setting.
pub fn parse_app_xids(text: &str) -> Result<Vec<u64>, String> {
    if text.trim() == "none" {
        return Ok(Vec::new());
    }
    let mut xids = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        let xid = item.parse::<u64>().map_err(|_| {
            let what = if item.is_empty() { "an empty item".to_string() } else { format!("`{item}`") };
            format!(
                "--app-xids {text}: {what} is not an XID number (give numbers separated by commas, e.g. 13,31, or none)"
            )
        })?;
        xids.push(xid);
    }
    xids.sort_unstable();
    xids.dedup();
    Ok(xids)
}

/// `13,31` or `none`: the list as `--app-xids` takes it.
pub fn app_xids_text(xids: &[u64]) -> String {
    if xids.is_empty() {
        return "none".to_string();
    }
    xids.iter().map(u64::to_string).collect::<Vec<_>>().join(",")
}

#[derive(Debug, Clone)]
pub struct ServeOptions {
    pub state_dir: PathBuf,
    /// `127.0.0.1:7450` by default; port 0 picks a free one (written to `STATE/addr`).
    pub listen: String,
    /// The settings given: a new state directory is made with them (a cluster is needed), an
    /// existing one keeps its own, and a setting given here with another value is refused.
    pub settings: Given,
    /// Write the journal as a canonical trace (`STATE/journal/`) at most this often (and at
    /// most every ten times as long as the last writing took).
    pub journal_every: Duration,
    pub quiet: bool,
    /// XIDs that are the application's fault: the GPU stays in service. Like `config`, kept
    /// by the state directory: None takes the stored list ([`DEFAULT_APP_XIDS`] for a new
    /// directory), and a different list than the stored one is an error. Sorted, no repeats
    /// (as [`parse_app_xids`] gives it).
    pub app_xids: Option<Vec<u64>>,
    /// Serve `https` on `listen` (see [`crate::net::tls`]); None: plain `http`.
    pub tls: Option<TlsOptions>,
    /// Connections, timeouts: see [`Limits`].
    pub http: Limits,
    /// The policies the session's policy is built from (a program's own among them).
    pub registry: policies::Registry,
}

/// `live serve --tls`: the coordinator's certificate, and whom it asks for one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    pub certificate: TlsSetup,
    /// Ask every client for a certificate signed by a CA in this PEM file (mutual TLS).
    pub client_ca: Option<PathBuf>,
}

/// Where `live serve --tls` gets its certificate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TlsSetup {
    /// The operator's certificate chain and private key (PEM).
    Files { cert: PathBuf, key: PathBuf },
    /// `STATE/tls-cert.pem` and `STATE/tls-key.pem`, made self-signed for these names (host
    /// names and IP addresses clients use) on the first start that finds none, then kept.
    SelfSigned { names: Vec<String> },
}

impl TlsSetup {
    /// The self-signed certificate and key of a state directory (the certificate is what
    /// clients trust with `--ca-file`).
    pub fn self_signed_files(state_dir: &Path) -> (PathBuf, PathBuf) {
        (state_dir.join("tls-cert.pem"), state_dir.join("tls-key.pem"))
    }
}

pub struct Coordinator {
    /// The state directory's lock, held for the coordinator's life (see [`crate::lock`]).
    _lock: StateLock,
    /// The front's accept thread takes its connections while `run` runs (nothing else of the
    /// coordinator is shared). With TLS it listens on a loopback port of its own, behind `tls`.
    listener: TcpListener,
    limits: Limits,
    /// With TLS: its relay, the certificates its clients showed, and whether every client
    /// must show one (mutual TLS: an agent's certificate must then be for its name).
    tls: Option<(TlsFront, Identities, bool)>,
    store: Store,
    driver: Driver,
    /// The user token and the agents' key (see [`crate::net::auth`]).
    keys: Keys,
    /// This start's generation (see [`Store::next_generation`]): reports carrying another are
    /// refused, so an agent never reports to, nor acts for, a coordinator that is not the
    /// latest.
    generation: u64,
    /// Sorted: see [`ServeOptions::app_xids`].
    app_xids: Vec<u64>,
    agents: BTreeMap<String, AgentRecord>,
    /// The compute processes each agent last saw on its GPUs (not journaled: for display).
    processes: BTreeMap<String, Vec<crate::wire::GpuProcess>>,
    epoch: Instant,
    base_ms: u64,
    state_dir: PathBuf,
    journal_every: Duration,
    journal_dirty: bool,
    /// When the next journal writing may start (see [`Coordinator::collect_journal_writer`]).
    journal_next: Instant,
    /// The journal writing under way: how it ended, and how long it took.
    journal_writer: Option<JoinHandle<(Result<(), String>, Duration)>>,
    quiet: bool,
    /// Wall time spent per batch applied (for the numbers in docs/live-mode.md).
    pub apply_time: Duration,
    pub batches_applied: u64,
}

impl Coordinator {
    /// Binds the socket, locks (or creates) the state directory, replays its journal. In this
    /// order, so that a second coordinator on a directory in use, or one whose address is
    /// taken, is refused before it writes anything (the directory, the token included).
    pub fn open(options: ServeOptions) -> Result<Coordinator, String> {
        let existing = StateLock::try_existing(&options.state_dir)?;
        if options.settings.cluster.is_none() && !Store::exists(&options.state_dir) {
            return Err(format!(
                "{}: no coordinator state here; a new state directory needs --cluster",
                options.state_dir.display()
            ));
        }
        let (listener, public) = bind(&options)?;
        let mut lock = match existing {
            Some(lock) => lock,
            None => StateLock::acquire(&options.state_dir)?,
        };
        let public_addr =
            public.as_ref().unwrap_or(&listener).local_addr().map_err(|e| format!("the listener: {e}"))?;
        lock.record_holder(&public_addr.to_string())?;
        let store = Store::open(&options.state_dir)?;
        let keys = Keys::load_or_create(&options.state_dir)?;
        let config = match (store.config()?, options.settings.new_config()) {
            (Some(stored), _) => {
                options.settings.check_unchanged(&options.state_dir, &stored)?;
                stored
            }
            (None, Some(given)) => {
                store.set_config(&given)?;
                given
            }
            (None, None) => return Err("a new state directory needs --cluster".into()),
        };
        // Resolved after the config, so a directory refused above is left without it. The
        // list never reaches the journal (an application XID journals nothing), so a replay
        // does not depend on it.
        let app_xids = match (store.app_xids()?, options.app_xids) {
            (Some(stored), Some(given)) if stored != given => {
                return Err(format!(
                    "{} was created with --app-xids {}; start it with the same list (or without --app-xids), or use a new --state",
                    options.state_dir.display(),
                    app_xids_text(&stored)
                ));
            }
            (Some(stored), _) => stored,
            // A new directory, or one made before the setting existed: store what it runs with.
            (None, given) => {
                let xids = given.unwrap_or_else(|| DEFAULT_APP_XIDS.to_vec());
                store.set_app_xids(&xids)?;
                xids
            }
        };
        let journal = store.batches()?;
        let mut store = store;
        let generation = store.next_generation()?;
        let (driver, base_ms) = if journal.is_empty() {
            let mut driver = Driver::with_registry(config, &options.registry)?;
            let start = driver.start_batch();
            store.append(std::slice::from_ref(&start))?;
            driver.apply(start)?;
            (driver, 1)
        } else {
            let last = journal.last().map_or(0, |b| b.time_ms);
            (Driver::replay_with(config, &options.registry, journal)?, last + 1)
        };
        let agents = store.agents()?.into_iter().map(|a| (a.name.clone(), a)).collect();
        let tls = match (&options.tls, public) {
            (Some(TlsOptions { certificate, client_ca }), Some(public)) => {
                let (cert, key) = match certificate {
                    TlsSetup::Files { cert, key } => (cert.clone(), key.clone()),
                    TlsSetup::SelfSigned { names } => {
                        let (cert, key) = TlsSetup::self_signed_files(&options.state_dir);
                        crate::net::tls::ensure_self_signed(&cert, &key, names)?;
                        (cert, key)
                    }
                };
                let config = crate::net::tls::server_config(&cert, &key, client_ca.as_deref())?;
                let plain = listener.local_addr().map_err(|e| format!("the loopback listener: {e}"))?;
                let identities = Identities::default();
                let front = TlsFront::start_on(public, plain, config, identities.clone())?;
                Some((front, identities, client_ca.is_some()))
            }
            _ => None,
        };
        let coordinator = Coordinator {
            _lock: lock,
            listener,
            limits: options.http,
            tls,
            store,
            driver,
            keys,
            generation,
            app_xids,
            agents,
            processes: BTreeMap::new(),
            epoch: Instant::now(),
            base_ms,
            state_dir: options.state_dir,
            journal_every: options.journal_every,
            journal_dirty: true,
            journal_next: Instant::now(),
            journal_writer: None,
            quiet: options.quiet,
            apply_time: Duration::ZERO,
            batches_applied: 0,
        };
        let addr = coordinator.addr();
        std::fs::write(coordinator.state_dir.join("addr"), format!("{addr}\n"))
            .map_err(|e| format!("{}: {e}", coordinator.state_dir.display()))?;
        Ok(coordinator)
    }

    /// Where clients connect: `HOST:PORT` (with TLS, the TLS listener's).
    pub fn addr(&self) -> String {
        match &self.tls {
            Some((front, _, _)) => front.addr().to_string(),
            None => self.listener.local_addr().map_or_else(|_| "unknown".to_string(), |a| a.to_string()),
        }
    }

    /// The URL clients use: `http://HOST:PORT`, or `https://` with TLS.
    pub fn url(&self) -> String {
        let scheme = if self.tls.is_some() { "https" } else { "http" };
        format!("{scheme}://{}", self.addr())
    }

    pub fn driver(&self) -> &Driver {
        &self.driver
    }

    fn log(&self, message: impl std::fmt::Display) {
        if !self.quiet {
            let line = crate::wire::log_line(&message.to_string());
            eprintln!("[{:>10.3}s] {line}", self.driver.now().as_ms() as f64 / 1000.0);
        }
    }

    /// SimTime now by the wall clock.
    fn clock(&self) -> SimTime {
        SimTime(self.base_ms + self.epoch.elapsed().as_millis() as u64)
    }

    /// Journals and applies what fell due up to now, then `inputs` (if any) at now.
    fn commit(&mut self, inputs: Vec<Input>) -> Result<(), String> {
        let now = self.clock().max(self.driver.now() + sim::SimDuration(1));
        while let Some(due) = self.driver.next_due().filter(|&d| d < now || (inputs.is_empty() && d <= now)) {
            self.write_and_apply(Batch { time_ms: due.as_ms(), inputs: vec![Input::Tick] })?;
        }
        if !inputs.is_empty() {
            self.write_and_apply(Batch { time_ms: now.as_ms(), inputs })?;
        }
        Ok(())
    }

    fn write_and_apply(&mut self, batch: Batch) -> Result<(), String> {
        self.store.append(std::slice::from_ref(&batch))?;
        let decisions = self.driver.decisions().len();
        let started = Instant::now();
        let ticks = self.driver.apply(batch)?;
        self.apply_time += started.elapsed();
        self.batches_applied += 1;
        debug_assert!(ticks.is_empty(), "due ticks are applied first");
        self.journal_dirty = true;
        for d in &self.driver.decisions()[decisions..] {
            let task = d.task.map(|t| format!(" task {}", t.0)).unwrap_or_default();
            let gpus: Vec<String> = d.gpus.iter().map(|g| g.0.to_string()).collect();
            let detail = if d.detail.is_empty() { String::new() } else { format!(" ({})", d.detail) };
            self.log(format!("{} job {}{task} gpus [{}]{detail}", d.kind.as_str(), d.job.0, gpus.join(",")));
        }
        Ok(())
    }

    /// Serves until `stop` is set. The front's threads (see [`crate::net::http`]) do the sockets;
    /// this thread takes their calls one at a time and does everything else. When it returns,
    /// however it returns, the receiver thread is stopped and joined, and the calls it had not
    /// taken are answered 503 by their workers.
    pub fn run(&mut self, stop: &AtomicBool) -> Result<(), String> {
        let (inbound, calls) = mpsc::channel();
        let identities = self.tls.as_ref().map(|(_, identities, _)| identities.clone());
        let front = Front::start(&self.listener, self.keys.clone(), self.limits, inbound, identities)?;
        self.log(format!(
            "listening on {} (generation {}, policy {}, {} nodes, application XIDs {})",
            self.url(),
            self.generation,
            self.driver.policy_name(),
            self.driver.cluster().nodes().len(),
            app_xids_text(&self.app_xids)
        ));
        while !stop.load(Ordering::Relaxed) {
            let wait = match self.driver.next_due() {
                Some(due) => Duration::from_millis(due.as_ms().saturating_sub(self.clock().as_ms())),
                None => Duration::from_millis(100),
            }
            .min(Duration::from_millis(100));
            match calls.recv_timeout(wait) {
                Ok(Inbound::Call(call)) => self.handle(call),
                Ok(Inbound::Log(line)) => self.log(line),
                Ok(Inbound::Failed(e)) => return Err(e),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return Err("HTTP server: its receiver thread ended".into()),
            }
            if self.driver.next_due().is_some_and(|d| d <= self.clock()) {
                self.commit(Vec::new())?;
            }
            self.journal_step();
        }
        let why = crate::signals::received().unwrap_or("asked to");
        self.log(format!("stopping ({why}): taking no new calls, writing the journal"));
        // No new calls, and those not taken answered 503, before the last journal write.
        drop(front);
        drop(calls);
        if let Err(e) = self.write_journal() {
            self.log(format!("cannot write the journal: {e}"));
        }
        Ok(())
    }

    /// Starts writing `STATE/journal/` when something changed, no writing is under way, and
    /// the last one ended long enough ago (see [`Coordinator::journal_next`]); collects the
    /// one under way when it ended. A snapshot of the session is taken here (the trace in
    /// memory: 2.7 ms for a 16-node hour of heartbeats) and written on a thread of its own
    /// (14 to 27 ms for that hour), so the writing, which grows with the session, never holds
    /// up this thread.
    fn journal_step(&mut self) {
        if self.journal_writer.as_ref().is_some_and(JoinHandle::is_finished) {
            self.collect_journal_writer();
        }
        if !self.journal_dirty || self.journal_writer.is_some() || Instant::now() < self.journal_next {
            return;
        }
        let dir = self.state_dir.join("journal");
        self.journal_dirty = false;
        match journal_snapshot(&self.driver, &dir) {
            Ok(None) => {}
            Ok(Some(snapshot)) => {
                let writer = std::thread::Builder::new().name("journal".into()).spawn(move || {
                    let started = Instant::now();
                    (snapshot.write(), started.elapsed())
                });
                match writer {
                    Ok(writer) => self.journal_writer = Some(writer),
                    Err(e) => self.journal_failed(format!("cannot start its thread: {e}")),
                }
            }
            Err(e) => self.journal_failed(e),
        }
    }

    /// Waits for the journal writing under way, if any, and logs how it ended. The next one
    /// starts `--journal-every-s` after it, or ten times as long as it took if that is longer:
    /// writing a long session's journal takes at most a tenth of a core.
    fn collect_journal_writer(&mut self) {
        let Some(writer) = self.journal_writer.take() else { return };
        match writer.join() {
            Ok((Ok(()), took)) => self.journal_next = Instant::now() + self.journal_every.max(took * 10),
            Ok((Err(e), _)) => self.journal_failed(e),
            Err(_) => self.journal_failed("its thread panicked".into()),
        }
    }

    /// The trace journal is a copy of what SQLite holds: failing to write it is logged, and
    /// retried at the next interval, never fatal.
    fn journal_failed(&mut self, why: String) {
        self.log(format!("cannot write the journal: {why}"));
        self.journal_dirty = true;
        self.journal_next = Instant::now() + self.journal_every;
    }

    /// Writes the session as a canonical trace directory, `STATE/journal/`, replaced whole,
    /// after the writing under way (if any) ended: what `run` does last.
    pub fn write_journal(&mut self) -> Result<(), String> {
        self.collect_journal_writer();
        write_journal(&self.driver, &self.state_dir.join("journal"))?;
        self.journal_dirty = false;
        Ok(())
    }

    /// One call from the front (its token checked, its body read): routed, the refusals
    /// logged, and the answer handed back to its worker, which writes it.
    fn handle(&mut self, call: Call) {
        let metrics = call.method == Method::Get && path_parts(&call.url).1 == ["metrics"];
        let routed = match self.check_identity(&call).and_then(|()| self.check_role(&call)) {
            Ok(()) if metrics => {
                return call.answer_text(crate::coordinator::metrics::CONTENT_TYPE, self.metrics_text());
            }
            Ok(()) => self.route(&call.method, &call.url, &call.body),
            Err(r) => Err(r),
        };
        let (status, body) = match routed {
            Ok(answer) => answer,
            Err(r) => {
                self.log(format!("{} {}: refused: {}", call.method, call.url, r.reason));
                (r.status, json!({ "error": r.reason }))
            }
        };
        call.answer(status, body);
    }

    fn route(&mut self, method: &Method, url: &str, body: &[u8]) -> Result<(u16, Value), Refusal> {
        let (path, parts) = path_parts(url);
        match (method, parts.as_slice()) {
            (Method::Post, ["v1", "jobs"]) => self.submit(parse(body)?),
            (Method::Get, ["v1", "jobs"]) => Ok((200, self.jobs_json())),
            (Method::Get, ["v1", "jobs", job]) => Ok((200, self.job_json(self.find_job(job)?))),
            (Method::Post, ["v1", "jobs", job, "cancel"]) => self.cancel(job),
            (Method::Get, ["v1", "cluster"]) => Ok((200, self.cluster_json())),
            (Method::Post, ["v1", "gpus", uuid, "return"]) => self.return_gpu(uuid),
            (Method::Get, ["v1", "decisions"]) => Ok((200, self.decisions_json())),
            (Method::Post, ["v1", "agents", "register"]) => self.register(parse(body)?),
            (Method::Post, ["v1", "agents", "heartbeat"]) => self.heartbeat(parse(body)?),
            (Method::Get, ["v1", "agents", name, "assignments"]) => {
                let agent = self
                    .agents
                    .get(*name)
                    .cloned()
                    .ok_or_else(|| Refusal::new(404, format!("no agent `{name}`: register first")))?;
                self.check_generation(query_u64(url, "generation").unwrap_or(0))?;
                let reply = AssignmentsReply { generation: self.generation, assignments: self.assignments_of(&agent) };
                Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)))
            }
            (
                _,
                ["v1", "jobs"]
                | ["v1", "jobs", _]
                | ["v1", "jobs", _, "cancel"]
                | ["v1", "cluster"]
                | ["v1", "gpus", _, "return"]
                | ["v1", "decisions"],
            )
            | (_, ["v1", "agents", "register" | "heartbeat"]) => {
                Err(Refusal::new(405, format!("{method} is not allowed on {path}")))
            }
            _ => Err(Refusal::new(404, format!("no such endpoint: {path}"))),
        }
    }

    fn internal(e: String) -> Refusal {
        Refusal::new(500, e)
    }

    fn submit(&mut self, job: JobRequest) -> Result<(u16, Value), Refusal> {
        self.driver.check_submission(&job)?;
        crate::coordinator::admission::check_queue(&job, !self.driver.config().queues.trim().is_empty())?;
        let spec = job.to_spec(SimTime::ZERO, sim::SimDuration(1))?;
        if let Some(reason) = crate::coordinator::admission::never_fits(self.driver.cluster(), &spec) {
            return Err(Refusal::bad(format!("job `{}`: {reason}", job.name)));
        }
        let name = job.name.clone();
        self.commit(vec![Input::submit(job)]).map_err(Self::internal)?;
        let id = self.driver.submissions().len() - 1;
        self.log(format!("submitted job {id} `{name}`"));
        Ok((201, json!({ "id": id, "name": name })))
    }

    fn find_job(&self, key: &str) -> Result<usize, Refusal> {
        let subs = self.driver.submissions();
        let found = match key.parse::<usize>() {
            Ok(i) if i < subs.len() => Some(i),
            _ => self.driver.find(key),
        };
        found.ok_or_else(|| Refusal::new(404, format!("no job `{key}`")))
    }

    fn cancel(&mut self, key: &str) -> Result<(u16, Value), Refusal> {
        let job = self.find_job(key)?;
        let state = self.driver.job_state(job);
        if matches!(state, "succeeded" | "failed" | "cancelled") {
            return Err(Refusal::new(409, format!("job `{key}` has already ended ({state})")));
        }
        self.commit(vec![Input::Cancel { job: job as u32 }]).map_err(Self::internal)?;
        Ok((200, self.job_json(job)))
    }

    fn jobs_json(&self) -> Value {
        let list: Vec<Value> = (0..self.driver.submissions().len())
            .map(|i| {
                let s = &self.driver.submissions()[i];
                json!({
                    "id": i,
                    "name": s.request.name,
                    "state": self.driver.job_state(i),
                    "submit_s": seconds(s.submit),
                    "tasks": s.request.tasks.len(),
                })
            })
            .collect();
        json!({ "jobs": list })
    }

    fn job_json(&self, i: usize) -> Value {
        let s = &self.driver.submissions()[i];
        let c = self.driver.controller();
        let tasks: Vec<Value> = s
            .request
            .tasks
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let id = s.task_ids[k];
                let state = id.map(|id| c.task(id));
                let status = match id {
                    None if s.cancelled_at.is_some() => "cancelled",
                    None => "blocked",
                    Some(id) => self.driver.task_status(id).as_str(),
                };
                json!({
                    "name": t.name,
                    "task_id": id.map(|t| t.0),
                    "status": status,
                    "gpus": t.gpus,
                    "depends_on": t.depends_on,
                    "attempt": state.filter(|_| id.is_some_and(|id| self.driver.task_status(id) != TaskStatus::Pending)).map(|s| s.attempt),
                    "exit_code": s.exit_codes[k],
                    "placed": self.placement(id),
                })
            })
            .collect();
        json!({
            "id": i,
            "name": s.request.name,
            "state": self.driver.job_state(i),
            "submit_s": seconds(s.submit),
            "tasks": tasks,
        })
    }

    /// Where a running task is: `node:slot` with each GPU's UUID.
    fn placement(&self, task: Option<TaskId>) -> Vec<Value> {
        let Some(task) = task else { return Vec::new() };
        if self.driver.task_status(task) != TaskStatus::Running {
            return Vec::new();
        }
        let cluster = self.driver.cluster();
        self.driver
            .controller()
            .task(task)
            .placed
            .iter()
            .map(|&g| {
                let node = cluster.node_of(g);
                let slot = g.0 - cluster.node(node).first_gpu.0;
                json!({ "node": node.0, "slot": slot, "uuid": self.uuid_of(node.0, slot) })
            })
            .collect()
    }

    fn agent_of(&self, node: u32) -> Option<&AgentRecord> {
        self.agents.values().find(|a| a.node == node)
    }

    fn uuid_of(&self, node: u32, slot: u32) -> Option<String> {
        self.agent_of(node).and_then(|a| a.gpus.get(slot as usize)).map(|g| g.uuid.clone())
    }

    fn cluster_json(&self) -> Value {
        let cluster = self.driver.cluster();
        let c = self.driver.controller();
        // Several tasks hold a GPU they share (`gpu_milli`): each is named, in task order.
        let mut holder: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for id in self.driver.running_tasks() {
            let Some((i, k)) = self.driver.task_origin(id) else { continue };
            let s = &self.driver.submissions()[i];
            for g in &c.task(id).placed {
                let name = format!("{}/{} (job {i})", s.request.name, s.request.tasks[k].name);
                holder.entry(g.0).or_default().push(name);
            }
        }
        let nodes: Vec<Value> = cluster
            .nodes()
            .iter()
            .map(|n| {
                let agent = self.agent_of(n.id.0);
                let state = if self.driver.node_dead(n.id.0) {
                    "dead"
                } else if agent.is_none() {
                    "no agent"
                } else {
                    "alive"
                };
                let gpus: Vec<Value> = n
                    .gpus()
                    .enumerate()
                    .map(|(slot, g)| {
                        let info = agent.and_then(|a| a.gpus.get(slot));
                        let processes: Vec<Value> = agent
                            .and_then(|a| self.processes.get(&a.name))
                            .into_iter()
                            .flatten()
                            .filter(|p| info.is_some_and(|i| i.uuid == p.uuid))
                            .map(|p| json!({ "pid": p.pid, "used_memory_mib": p.used_memory_mib }))
                            .collect();
                        let state = if self.driver.gpu_out(g) {
                            "out"
                        } else if holder.contains_key(&g.0) {
                            "busy"
                        } else {
                            "free"
                        };
                        json!({
                            "slot": slot,
                            "uuid": info.map(|i| i.uuid.clone()),
                            "name": info.map(|i| i.name.clone()),
                            "memory_total_mib": info.map(|i| i.memory_total_mib),
                            "memory_used_mib": info.map(|i| i.memory_used_mib),
                            "utilisation_pct": info.map(|i| i.utilisation_pct),
                            "temperature_c": info.map(|i| i.temperature_c),
                            "state": state,
                            "task": holder.get(&g.0).map(|names| names.join(", ")),
                            "processes": processes,
                        })
                    })
                    .collect();
                json!({
                    "node": n.id.0,
                    "pool": cluster.pool(n.pool).name,
                    "agent": agent.map(|a| a.name.clone()),
                    "addr": agent.map(|a| a.addr.clone()),
                    "state": state,
                    "last_beat_s": self.driver.last_beat(n.id.0).map(seconds),
                    "gpus": gpus,
                })
            })
            .collect();
        json!({
            "now_s": seconds(self.driver.now()),
            "policy": self.driver.policy_name(),
            "heartbeat_s": self.driver.config().heartbeat_ms as f64 / 1000.0,
            "missed_beats": self.driver.config().missed_beats,
            "nodes": nodes,
        })
    }

    /// `GET /metrics`: jobs, nodes and GPUs by state, each GPU's utilisation, temperature
    /// and memory as its agent last reported them, decisions by kind, the completion time of
    /// the jobs that succeeded, and the coordinator's own work.
    fn metrics_text(&self) -> String {
        let mut e = crate::coordinator::metrics::Exposition::default();
        // Counted as they change (crate::tally): a scrape costs the running tasks, not the history.
        let jobs = self.driver.job_counts().into_iter().map(|(s, n)| (vec![("state", s.to_string())], n as f64));
        e.family("schedlab_jobs", "gauge", "Submitted jobs by state.", jobs);
        let cluster = self.cluster_json();
        let nodes = cluster["nodes"].as_array().cloned().unwrap_or_default();
        let text = |v: &Value| v.as_str().map(String::from);
        e.counts(
            "schedlab_nodes",
            "Nodes by state.",
            "state",
            &["alive", "dead", "no agent"],
            nodes.iter().filter_map(|n| text(&n["state"])),
        );
        let gpus: Vec<(String, &Value)> = nodes
            .iter()
            .flat_map(|n| n["gpus"].as_array().into_iter().flatten().map(move |g| (n["node"].to_string(), g)))
            .collect();
        e.counts(
            "schedlab_gpus",
            "GPUs by state (out: failed, until returned).",
            "state",
            &["free", "busy", "out"],
            gpus.iter().filter_map(|(_, g)| text(&g["state"])),
        );
        let reported = |field: &str, scale: f64| {
            gpus.iter()
                .filter_map(|(node, g)| {
                    let labels =
                        vec![("node", node.clone()), ("slot", g["slot"].to_string()), ("uuid", text(&g["uuid"])?)];
                    Some((labels, g[field].as_f64()? * scale))
                })
                .collect::<Vec<_>>()
        };
        e.family(
            "schedlab_gpu_utilisation_ratio",
            "gauge",
            "GPU utilisation as its agent last reported it (NVML).",
            reported("utilisation_pct", 0.01),
        );
        e.family(
            "schedlab_gpu_temperature_celsius",
            "gauge",
            "GPU temperature as its agent last reported it.",
            reported("temperature_c", 1.0),
        );
        e.family(
            "schedlab_gpu_memory_used_bytes",
            "gauge",
            "GPU memory in use as its agent last reported it.",
            reported("memory_used_mib", 1_048_576.0),
        );
        let tally = self.driver.tally();
        e.family(
            "schedlab_decisions_total",
            "counter",
            "The Controller's decisions by kind.",
            tally.decisions().iter().map(|(k, &n)| (vec![("kind", k.to_string())], n as f64)),
        );
        let (jct_sum, jct_count) = tally.completions();
        let summary = "Completion time (end - submission) of the jobs that succeeded.";
        e.summary("schedlab_job_completion_seconds", summary, jct_sum, jct_count);
        e.family(
            "schedlab_journal_batches",
            "gauge",
            "Batches in the journal (what a restart applies again).",
            [(vec![], self.driver.batches_applied() as f64)],
        );
        e.family(
            "schedlab_batch_apply_seconds_total",
            "counter",
            "Time this process spent applying batches (the policy's decisions included).",
            [(vec![], self.apply_time.as_secs_f64())],
        );
        e.family(
            "schedlab_session_seconds",
            "gauge",
            "The session's clock: time the coordinator has run, over its restarts.",
            [(vec![], self.driver.now().as_ms() as f64 / 1000.0)],
        );
        e.into_text()
    }

    fn decisions_json(&self) -> Value {
        let list: Vec<Value> = self
            .driver
            .decisions()
            .iter()
            .map(|d| {
                json!({
                    "time_ms": d.time.as_ms(),
                    "kind": d.kind.as_str(),
                    "job": d.job.0,
                    "task": d.task.map(|t| t.0),
                    "gpus": d.gpus.iter().map(|g| g.0).collect::<Vec<_>>(),
                    "detail": d.detail,
                })
            })
            .collect();
        let policy = &self.driver.config().policy;
        json!({ "policy": policy, "digest": self.driver.controller().digest_hex(), "decisions": list })
    }

    /// Under mutual TLS, every call must have come through the TLS relay with a certificate
    /// (not straight to the plain front's loopback port), and a call on an agent's behalf
    /// (registering, beating, asking for its assignments) with a certificate for that agent's
    /// name (`live issue-cert --name NAME`): a user's certificate, or another agent's, cannot
    /// act as an agent and be given its tasks. Refused with 403, and recorded as every
    /// refusal is.
    fn check_identity(&self, call: &Call) -> Result<(), Refusal> {
        if !self.tls.as_ref().is_some_and(|(_, _, mutual)| *mutual) {
            return Ok(());
        }
        let (path, parts) = path_parts(&call.url);
        if call.client_cert.is_none() {
            let reason =
                format!("{path}: no client certificate (under mutual TLS every call comes over https with one)");
            return Err(Refusal { status: 403, ..self.refuse("a client", reason) });
        }
        // A call for no agent, or with a body without a name (refused by the route itself,
        // with the reason), has nothing more to check.
        let Some(agent) = claimed_agent(call, &parts) else { return Ok(()) };
        if call.client_cert.as_ref().is_some_and(|cert| crate::net::tls::certificate_is_for(cert, &agent)) {
            return Ok(());
        }
        let reason = format!(
            "{path}: the client certificate is not for agent `{agent}` (under mutual TLS an agent shows one issued for its name: live issue-cert --name {agent})"
        );
        Err(Refusal { status: 403, ..self.refuse(&agent, reason) })
    }

    /// Every endpoint has one role (see [`crate::net::auth`]): a user's token cannot act as an
    /// agent, nor an agent's as a user or as another agent. Refused with 403, recorded.
    fn check_role(&self, call: &Call) -> Result<(), Refusal> {
        let (path, parts) = path_parts(&call.url);
        let Some(role) = endpoint_role(&parts) else { return Ok(()) };
        let reason = match (&call.principal, role) {
            (Principal::User, Role::User) => return Ok(()),
            (Principal::User, Role::Agent) => format!(
                "{path}: a user token cannot act as an agent (an agent has a token of its own: schedlab live issue-token --agent NAME)"
            ),
            (Principal::Agent(name), Role::User) => {
                format!(
                    "{path}: agent `{name}`'s token is for its agent's calls only (register, heartbeat, assignments)"
                )
            }
            (Principal::Agent(name), Role::Agent) => match claimed_agent(call, &parts) {
                Some(claimed) if claimed != *name => {
                    format!("{path}: agent `{name}`'s token cannot act for agent `{claimed}`")
                }
                _ => return Ok(()),
            },
        };
        let who = match &call.principal {
            Principal::User => "a user".to_string(),
            Principal::Agent(name) => name.clone(),
        };
        Err(Refusal { status: 403, ..self.refuse(&who, reason) })
    }

    fn refuse(&self, who: &str, reason: String) -> Refusal {
        self.log(format!("REFUSED {who}: {reason}"));
        let _ = self.store.refuse(self.driver.now().as_ms(), who, &reason);
        Refusal::new(409, reason)
    }

    fn register(&mut self, r: RegisterRequest) -> Result<(u16, Value), Refusal> {
        crate::wire::check_name("agent name", &r.name)?;
        check_readings(&r.gpus)?;
        if r.gpus.is_empty() {
            return Err(Refusal::bad("an agent must bring at least one GPU"));
        }
        let mut uuids: Vec<&str> = r.gpus.iter().map(|g| g.uuid.as_str()).collect();
        uuids.sort_unstable();
        if uuids.windows(2).any(|w| w[0] == w[1]) || uuids.iter().any(|u| u.is_empty()) {
            return Err(Refusal::bad("the GPU list repeats a UUID or has an empty one"));
        }
        for g in &r.gpus {
            if let Some(other) =
                self.agents.values().find(|a| a.name != r.name && a.gpus.iter().any(|h| h.uuid == g.uuid))
            {
                return Err(self.refuse(
                    &r.name,
                    format!("GPU {} is held by agent `{}` (node {}); refused", g.uuid, other.name, other.node),
                ));
            }
        }
        // An agent registering again under its name keeps its node and its GPU slots; it may
        // bring fewer GPUs (a lost one stays out), never others.
        if let Some(known) = self.agents.get(&r.name).cloned()
            && r.node.is_none_or(|n| n == known.node)
        {
            if let Some(g) = r.gpus.iter().find(|g| !known.gpus.iter().any(|k| k.uuid == g.uuid)) {
                return Err(self.refuse(
                    &r.name,
                    format!(
                        "registers again with GPU {}, which it did not have (it holds node {})",
                        g.uuid, known.node
                    ),
                ));
            }
            let node = known.node;
            let mut record = known;
            record.addr = r.addr;
            // A fresh agent process runs nothing of what its node ran: the node went down and
            // is back (its tasks fail at its next beat, as the simulator has it).
            let mut inputs = if r.fresh {
                self.log(format!("node {node}: agent `{}` restarted; what ran there is lost", r.name));
                vec![Input::NodeRestarted { node }, Input::Beat { node }]
            } else {
                vec![Input::Beat { node }]
            };
            for (slot, g) in record.gpus.iter_mut().enumerate() {
                if let Some(now) = r.gpus.iter().find(|n| n.uuid == g.uuid) {
                    *g = now.clone();
                    // Only an agent started afresh may have had its GPUs reset: one registering
                    // again (after a coordinator restart, to learn its generation) brings back
                    // nothing taken out.
                    if r.fresh
                        && let Some(repair) = self.gpu_repair(node, slot as u32)
                    {
                        self.log(format!("node {node}: GPU {} is back (its agent registered again with it)", g.uuid));
                        inputs.push(repair);
                    }
                }
            }
            self.store.put_agent(&record).map_err(Self::internal)?;
            self.agents.insert(r.name.clone(), record);
            self.commit(inputs).map_err(Self::internal)?;
            self.log(format!("agent `{}` registered again as node {node}", r.name));
            let reply =
                RegisterReply { node, heartbeat_ms: self.driver.config().heartbeat_ms, generation: self.generation };
            return Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)));
        }
        let cluster = self.driver.cluster();
        let fits = |node: u32| cluster.nodes().get(node as usize).is_some_and(|n| n.gpu_count as usize == r.gpus.len());
        let taken = |node: u32| self.agents.values().any(|a| a.node == node && a.name != r.name);
        let node = match r.node {
            Some(n) if !fits(n) => {
                return Err(
                    self.refuse(&r.name, format!("node {n} does not exist or does not have {} GPUs", r.gpus.len()))
                );
            }
            Some(n) if taken(n) => return Err(self.refuse(&r.name, format!("node {n} is held by another agent"))),
            Some(n) => n,
            None => match (0..cluster.nodes().len() as u32).find(|&n| fits(n) && !taken(n)) {
                Some(n) => n,
                None => {
                    return Err(self.refuse(&r.name, format!("no free node of the cluster has {} GPUs", r.gpus.len())));
                }
            },
        };
        let record = AgentRecord { name: r.name.clone(), node, addr: r.addr, gpus: r.gpus };
        self.store.put_agent(&record).map_err(Self::internal)?;
        self.agents.insert(r.name.clone(), record);
        self.commit(vec![Input::Beat { node }]).map_err(Self::internal)?;
        self.log(format!("agent `{}` registered as node {node}", r.name));
        let reply =
            RegisterReply { node, heartbeat_ms: self.driver.config().heartbeat_ms, generation: self.generation };
        Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)))
    }

    /// The input that returns the GPU at `node`'s `slot` to service, if it is out (None if it
    /// is in service). Both ways a GPU comes back, its agent registering again with it and an
    /// operator's `POST /v1/gpus/{uuid}/return`, journal this one input, which ends every
    /// failure the GPU has open and sets their `repair_s` in the trace: a replay sees the same
    /// repair whichever way it came.
    fn gpu_repair(&self, node: u32, slot: u32) -> Option<Input> {
        let gpu = self.driver.cluster().nodes().get(node as usize)?.gpu_at(slot);
        self.driver.gpu_out(gpu).then_some(Input::GpuRepair { node, slot })
    }

    /// `POST /v1/gpus/{uuid}/return`: an operator who has reset or checked a GPU taken out (XID,
    /// uncorrected ECC error, lost) puts it back without restarting its agent, which would stop
    /// every task on the node. The coordinator takes the operator's word; the agent is not asked.
    fn return_gpu(&mut self, uuid: &str) -> Result<(u16, Value), Refusal> {
        let found = self
            .agents
            .values()
            .find_map(|a| a.gpus.iter().position(|g| g.uuid == uuid).map(|slot| (a.name.clone(), a.node, slot as u32)));
        let Some((agent, node, slot)) = found else {
            return Err(Refusal::new(404, format!("no GPU `{uuid}`: no agent has registered a GPU with that UUID")));
        };
        let Some(repair) = self.gpu_repair(node, slot) else {
            return Err(Refusal::new(409, format!("GPU {uuid} is in service; nothing to return")));
        };
        // A dead node's tasks have failed and nothing can start there until it beats again; a
        // GPU returned now could not be used, and whatever killed the node may be what broke
        // the GPU. The node rejoins at its agent's next heartbeat (its GPUs taken out stay out);
        // return the GPU then.
        if self.driver.node_dead(node) {
            return Err(Refusal::new(
                409,
                format!(
                    "GPU {uuid} is on node {node}, whose agent `{agent}` is declared dead: the node must come back first (at its agent's next heartbeat), then return the GPU"
                ),
            ));
        }
        self.commit(vec![repair]).map_err(Self::internal)?;
        // After the commit: the policy has run, so the answer says who holds the GPU now.
        let gpu = &self.cluster_json()["nodes"][node as usize]["gpus"][slot as usize];
        let reply = GpuReturned {
            uuid: uuid.to_string(),
            node,
            slot,
            agent,
            state: gpu["state"].as_str().unwrap_or("").to_string(),
            task: gpu["task"].as_str().map(str::to_string),
        };
        let holder = reply.task.as_ref().map(|t| format!("; {t} runs on it")).unwrap_or_default();
        self.log(format!("node {node}: GPU {uuid} returned to service by the operator{holder}"));
        Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)))
    }

    /// Refuses (409) a report or request made for another coordinator generation than this
    /// one: the agent registers again and learns it. What it carried (exits, health events)
    /// is sent again after that, to this coordinator, which checks it against its own state.
    fn check_generation(&self, theirs: u64) -> Result<(), Refusal> {
        let mine = self.generation;
        if theirs == mine {
            return Ok(());
        }
        let why = if theirs > mine {
            format!(
                "the agent registered with generation {theirs}, newer than this coordinator's {mine}: this coordinator is not the current one"
            )
        } else {
            format!("it is for generation {theirs}, this coordinator is generation {mine}; register again")
        };
        Err(Refusal::new(409, format!("{STALE_GENERATION}: {why}")))
    }

    fn heartbeat(&mut self, h: HeartbeatRequest) -> Result<(u16, Value), Refusal> {
        let Some(agent) = self.agents.get(&h.name).cloned() else {
            return Err(Refusal::new(404, format!("no agent `{}`: register first", h.name)));
        };
        self.check_generation(h.generation)?;
        check_readings(&h.gpus)?;
        let node = agent.node;
        let slot_of = |uuid: &str| agent.gpus.iter().position(|g| g.uuid == uuid);
        for e in &h.health {
            if slot_of(e.uuid()).is_none() {
                return Err(
                    self.refuse(&h.name, format!("health event for unknown GPU {} (not this agent's)", e.uuid()))
                );
            }
        }
        if let Some(g) = h.gpus.iter().find(|g| slot_of(&g.uuid).is_none()) {
            return Err(self.refuse(&h.name, format!("reports unknown GPU {}", g.uuid)));
        }
        if let Some(p) = h.processes.iter().find(|p| slot_of(&p.uuid).is_none()) {
            return Err(self.refuse(&h.name, format!("reports a process on unknown GPU {}", p.uuid)));
        }
        self.processes.insert(h.name.clone(), h.processes.clone());
        let mut inputs = vec![Input::Beat { node }];
        for e in &h.health {
            let slot = slot_of(e.uuid()).unwrap_or(0) as u32;
            if let HealthEvent::Xid { code, uuid } = e
                && self.app_xids.binary_search(code).is_ok()
            {
                // The user's program broke, not the GPU: taking the GPU out would drain the
                // cluster one buggy job at a time. The program's process exits non-zero by
                // itself, which fails its task. No GpuFail is journaled; the event is still
                // acknowledged: the agent forgets the health events of a heartbeat answered 200.
                self.log(format!("node {node}: XID {code} on {uuid}: an application error, the GPU stays in service"));
                continue;
            }
            self.log(format!("node {node}: {e}"));
            let what = match e {
                HealthEvent::Xid { code, .. } => format!("xid {code}"),
                HealthEvent::Ecc { count, .. } => format!("ecc {count}"),
                HealthEvent::Lost { .. } => "lost".to_string(),
            };
            inputs.push(Input::GpuFail { node, slot, what });
        }
        let c = self.driver.controller();
        for x in &h.exits {
            let task = TaskId(x.task);
            let current = (x.task as usize) < self.driver.task_count()
                && self.driver.task_status(task) == TaskStatus::Running
                && c.task(task).attempt == x.attempt;
            // A gang spanning nodes ends when its rank 0 (its first node) exits.
            let rank0 =
                current && c.task(task).placed.iter().map(|&g| self.driver.cluster().node_of(g).0).min() == Some(node);
            if rank0 {
                inputs.push(Input::Exit { task: x.task, attempt: x.attempt, code: x.code });
                self.log(format!("node {node}: task {} attempt {} exited {}", x.task, x.attempt, x.code));
            }
        }
        // Refresh what the agent says of its GPUs (utilisation, temperature) for the cluster view.
        if !h.gpus.is_empty()
            && let Some(a) = self.agents.get_mut(&h.name)
        {
            for g in &h.gpus {
                if let Some(mine) = a.gpus.iter_mut().find(|m| m.uuid == g.uuid) {
                    *mine = g.clone();
                }
            }
        }
        self.commit(inputs).map_err(Self::internal)?;
        let assignments = self.assignments_of(&agent);
        let heartbeat_ms = self.driver.config().heartbeat_ms;
        let reply = HeartbeatReply { assignments, acked: h.exits, heartbeat_ms, generation: self.generation };
        Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)))
    }
}

impl Coordinator {
    /// What `agent`'s node must run, with its GPUs' UUIDs.
    fn assignments_of(&self, agent: &AgentRecord) -> Vec<crate::wire::Assignment> {
        let addr_of = |n: u32| self.agent_of(n).map(|a| a.addr.clone()).unwrap_or_default();
        let mut assignments = self.driver.assignments(agent.node, addr_of);
        for a in &mut assignments {
            a.gpus = a
                .gpus
                .iter()
                .map(|slot| {
                    slot.parse::<usize>()
                        .ok()
                        .and_then(|s| agent.gpus.get(s))
                        .map(|g| g.uuid.clone())
                        .unwrap_or_default()
                })
                .collect();
        }
        assignments
    }
}

/// The sockets, bound before anything is written: the one the HTTP front serves and, with
/// TLS, the public one (`listen`) whose connections the relay ends and passes to it on loopback.
fn bind(options: &ServeOptions) -> Result<(TcpListener, Option<TcpListener>), String> {
    let listen = || TcpListener::bind(&options.listen).map_err(|e| format!("cannot listen on {}: {e}", options.listen));
    if options.tls.is_none() {
        return Ok((listen()?, None));
    }
    let public = listen()?;
    let plain = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("cannot listen on loopback: {e}"))?;
    Ok((plain, Some(public)))
}

/// What an agent reports of its GPUs goes to `/metrics` and `GET /v1/cluster` as is: a
/// utilisation that is no percentage is refused (400), not shown.
fn check_readings(gpus: &[crate::wire::GpuInfo]) -> Result<(), Refusal> {
    match gpus.iter().find(|g| g.utilisation_pct > 100) {
        Some(g) => Err(Refusal::bad(format!(
            "GPU {}: utilisation_pct {} is not a percentage (0 to 100)",
            crate::wire::shown(&g.uuid),
            g.utilisation_pct
        ))),
        None => Ok(()),
    }
}

/// The agent a call to an agent endpoint is made for: the name in its path or its body.
fn claimed_agent(call: &Call, parts: &[&str]) -> Option<String> {
    match parts {
        ["v1", "agents", "register" | "heartbeat"] => serde_json::from_slice::<Value>(&call.body)
            .ok()
            .and_then(|v| v.get("name").and_then(Value::as_str).map(str::to_string)),
        ["v1", "agents", name, "assignments"] => Some(name.to_string()),
        _ => None,
    }
}

/// The number `name=N` of a request's query, if it has one.
fn query_u64(url: &str, name: &str) -> Option<u64> {
    let query = url.split_once('?')?.1;
    query.split('&').find_map(|kv| kv.strip_prefix(name)?.strip_prefix('=')?.parse().ok())
}

/// A request's path (without its query) and its segments: what the routes match on.
fn path_parts(url: &str) -> (&str, Vec<&str>) {
    let path = url.split('?').next().unwrap_or("");
    (path, path.trim_matches('/').split('/').collect())
}

fn parse<T: serde::de::DeserializeOwned>(body: &[u8]) -> Result<T, Refusal> {
    serde_json::from_slice(body).map_err(|e| Refusal::bad(format!("malformed request body: {e}")))
}

fn seconds(t: SimTime) -> f64 {
    t.as_ms() as f64 / 1000.0
}

/// Writes `driver`'s session as a canonical trace directory at `dir` (replaced whole), with
/// `live.json` beside it: the settings `schedlab simulate` needs to replay it, and the replay
/// command itself (writing into `DIR-replay`, `replay_out`).
pub fn write_journal(driver: &Driver, dir: &Path) -> Result<(), String> {
    match journal_snapshot(driver, dir)? {
        Some(snapshot) => snapshot.write(),
        None => Ok(()), // the format needs at least one job
    }
}

/// What [`write_journal`] writes, taken from the driver (None before the first job): taken on
/// the coordinator's thread, written on another.
pub struct JournalSnapshot {
    trace: traces::Trace,
    settings: Value,
    dir: PathBuf,
}

pub fn journal_snapshot(driver: &Driver, dir: &Path) -> Result<Option<JournalSnapshot>, String> {
    let trace = driver.trace();
    if trace.workload.is_empty() {
        return Ok(None);
    }
    Ok(Some(JournalSnapshot { trace, settings: replay_settings(driver, dir)?, dir: dir.to_path_buf() }))
}

impl JournalSnapshot {
    /// Writes it beside its directory, then puts it in the directory's place.
    pub fn write(&self) -> Result<(), String> {
        let tmp = self.dir.with_extension("tmp");
        let _ = std::fs::remove_dir_all(&tmp);
        traces::write_trace_dir(&self.trace, &tmp).map_err(|e| e.to_string())?;
        std::fs::write(tmp.join("live.json"), format!("{:#}\n", self.settings)).map_err(|e| e.to_string())?;
        let _ = std::fs::remove_dir_all(&self.dir);
        std::fs::rename(&tmp, &self.dir).map_err(|e| format!("{}: {e}", self.dir.display()))
    }
}

/// `live.json`: the session as the RunSpec that replays it (`run`: every setting of the
/// session that `simulate` takes, from the Controller's own configuration, each given even
/// where it equals the default, so the replay never depends on defaults staying what they
/// are), and the command line of that RunSpec (`replay`, writing into `replay_out`). Paths
/// are absolute (the command works from any directory) and shell-quoted.
fn replay_settings(driver: &Driver, dir: &Path) -> Result<Value, String> {
    let c = driver.controller_config();
    let trace = std::path::absolute(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let trace = PathBuf::from(trace.to_string_lossy().trim_end_matches('/'));
    let out = PathBuf::from(format!("{}-replay", trace.display()));
    let spec = run::RunSpec {
        trace: Some(trace),
        policy: driver.config().policy.parse().map_err(|e| format!("the session's policy: {e}"))?,
        seed: c.seed,
        heartbeat_s: run::Seconds(c.failures.heartbeat_interval),
        missed_beats: c.failures.missed_beats,
        gpu_detect_s: run::Seconds(c.failures.gpu_detect_delay),
        max_retries: c.failures.max_retries,
        checkpoint_s: run::Seconds(c.checkpoint),
        checkpoint_cost_s: run::Seconds(c.checkpoint_cost),
        restart_overhead_s: run::Seconds(c.restart_overhead),
        spare_nodes: c.spare_nodes,
        out: Some(out.clone()),
        decisions: true,
        ..run::RunSpec::default()
    };
    let words: Vec<String> = spec.simulate_words().iter().map(|w| shell_quote(w)).collect();
    Ok(json!({
        "run": spec,
        "replay": format!("schedlab {}", words.join(" ")),
        "replay_out": out,
    }))
}

/// `text` as one shell word: as is when it is plainly safe, else single-quoted.
fn shell_quote(text: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:=,+@%".contains(c);
    if !text.is_empty() && text.chars().all(plain) {
        text.to_string()
    } else {
        format!("'{}'", text.replace('\'', "'\\''"))
    }
}

/// Runs the coordinator until `stop` is set.
pub fn serve(options: ServeOptions, stop: Arc<AtomicBool>) -> Result<(), String> {
    let mut c = Coordinator::open(options)?;
    c.run(&stop)
}

/// `live serve`: runs the coordinator until SIGTERM or SIGINT, then stops cleanly (see
/// [`Coordinator::run`]: no new calls, the journal written, the lock released).
pub fn serve_until_signalled(options: ServeOptions) -> Result<(), String> {
    let stop = crate::signals::stop_on_term_and_int()?;
    let mut c = Coordinator::open(options)?;
    c.run(stop)?;
    c.log("stopped");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::{
        Coordinator, DEFAULT_APP_XIDS, Method, ServeOptions, TlsOptions, TlsSetup, parse_app_xids, shell_quote,
    };
    use crate::agent::backend::{GpuBackend, SimBackend, SimInjector};
    use crate::driver::{DriverConfig, Input};
    use crate::wire::{HeartbeatRequest, JobRequest, RegisterRequest, TaskRequest};
    use serde_json::json;
    use std::path::{Path, PathBuf};
    use std::thread::JoinHandle;
    use std::time::{Duration, Instant};

    fn state_dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("schedlab-coordinator-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    fn open(dir: &Path, app_xids: Option<Vec<u64>>) -> Result<Coordinator, String> {
        Coordinator::open(options(dir, app_xids))
    }

    /// What the tests open a coordinator with (TLS off).
    fn options(dir: &Path, app_xids: Option<Vec<u64>>) -> ServeOptions {
        ServeOptions {
            state_dir: dir.to_path_buf(),
            listen: "127.0.0.1:0".into(),
            // An hour between heartbeats: however slow the test machine, no heartbeat
            // deadline falls due while a test runs, so only what the tests report changes the
            // cluster.
            settings: crate::coordinator::settings::Given::all(&DriverConfig {
                heartbeat_ms: 3_600_000,
                ..DriverConfig::new("1x2:SIM", "fifo")
            }),
            journal_every: Duration::from_secs(3600),
            quiet: true,
            app_xids,
            tls: None,
            http: crate::net::http::Limits::default(),
            registry: policies::Registry::builtin(),
        }
    }

    /// A coordinator driven in-process, its one node's agent played by the test: the
    /// simulated backend's GPUs and injected health events, reported by calling the handlers.
    struct Node {
        c: Coordinator,
        backend: SimBackend,
        inject: SimInjector,
    }

    impl Node {
        /// Registers node 0 (two GPUs) and runs a one-GPU task `long` there.
        fn start(dir: &Path, app_xids: Option<Vec<u64>>) -> Node {
            let mut c = open(dir, app_xids).unwrap();
            let mut backend = SimBackend::new(2, "SIM", "n0");
            let gpus = backend.gpus().unwrap();
            let register =
                RegisterRequest { name: "n0".into(), addr: "127.0.0.1".into(), gpus, node: None, fresh: true };
            c.register(register).unwrap();
            c.submit(JobRequest::new("long", vec![TaskRequest::new("0", "sleep 1000")])).unwrap();
            let inject = backend.injector();
            Node { c, backend, inject }
        }

        /// One heartbeat carrying what the backend reports; the coordinator must answer 200,
        /// which is what makes the agent forget the events it sent (acknowledgement).
        fn beat(&mut self) {
            let health = self.backend.health(0).unwrap();
            assert!(!health.is_empty(), "the test injected an event before beating");
            let request = HeartbeatRequest {
                name: "n0".into(),
                exits: Vec::new(),
                health,
                gpus: Vec::new(),
                processes: Vec::new(),
                generation: self.c.generation,
            };
            let (status, _) = self.c.heartbeat(request).map_err(|r| r.reason).unwrap();
            assert_eq!(status, 200);
        }

        /// The task's (status, attempt, slot) from GET /v1/jobs/long.
        fn task(&self) -> (String, u64, Option<u64>) {
            let t = self.c.job_json(0)["tasks"][0].clone();
            (t["status"].as_str().unwrap().to_string(), t["attempt"].as_u64().unwrap(), t["placed"][0]["slot"].as_u64())
        }

        /// Each GPU's state in GET /v1/cluster.
        fn gpu_states(&self) -> Vec<String> {
            let cluster = self.c.cluster_json();
            let gpus = cluster["nodes"][0]["gpus"].as_array().unwrap();
            gpus.iter().map(|g| g["state"].as_str().unwrap().to_string()).collect()
        }

        /// What the journal's GpuFail inputs say, in order.
        fn journaled_gpu_fails(&self) -> Vec<String> {
            let batches = self.c.store.batches().unwrap();
            let inputs = batches.into_iter().flat_map(|b| b.inputs);
            inputs.filter_map(|i| if let Input::GpuFail { what, .. } = i { Some(what) } else { None }).collect()
        }
    }

    #[test]
    fn an_application_xid_leaves_the_gpu_in_service_and_others_take_it_out() {
        let dir = state_dir("app-xid");
        let mut n = Node::start(&dir, None);
        let (status, attempt, slot) = n.task();
        assert_eq!((status.as_str(), attempt), ("running", 1));
        let slot = slot.unwrap();
        let mut busy = vec!["free"; 2];
        busy[slot as usize] = "busy";
        assert_eq!(n.gpu_states(), busy);

        // XID 13 (graphics engine exception) is in the default list: the task keeps its GPU.
        n.inject.xid(slot as u32, 13);
        n.beat();
        assert_eq!(n.task(), ("running".to_string(), 1, Some(slot)));
        assert_eq!(n.gpu_states(), busy);
        assert_eq!(n.journaled_gpu_fails(), Vec::<String>::new());

        // XID 79 (fell off the bus) is the GPU's: it goes out and the task runs again on the other.
        n.inject.xid(slot as u32, 79);
        n.beat();
        assert_eq!(n.journaled_gpu_fails(), vec!["xid 79"]);
        let mut out = vec!["busy"; 2];
        out[slot as usize] = "out";
        assert_eq!(n.gpu_states(), out);
        assert_eq!(n.task(), ("running".to_string(), 2, Some(1 - slot)));
        drop(n);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_returned_gpu_is_journaled_as_a_repair_and_the_journal_replays() {
        let dir = state_dir("return-gpu");
        let mut n = Node::start(&dir, None);
        let slot = n.task().2.unwrap();
        let uuid = format!("GPU-n0-{slot}");
        let refused = |n: &mut Node, uuid: &str| n.c.return_gpu(uuid).map(|_| ()).unwrap_err();
        let r = refused(&mut n, &uuid);
        assert_eq!(
            (r.status, r.reason.as_str()),
            (409, format!("GPU {uuid} is in service; nothing to return").as_str())
        );
        let r = refused(&mut n, "GPU-nope");
        assert_eq!(r.status, 404, "{}", r.reason);
        n.inject.xid(slot as u32, 79);
        n.beat();
        assert_eq!(n.gpu_states()[slot as usize], "out");
        let (status, reply) = n.c.return_gpu(&uuid).map_err(|r| r.reason).unwrap();
        assert_eq!(status, 200);
        assert_eq!(
            (reply["node"].as_u64(), reply["slot"].as_u64(), &reply["state"]),
            (Some(0), Some(slot), &json!("free"))
        );
        assert_eq!(n.gpu_states()[slot as usize], "free");
        // The same input the re-registration path journals, once.
        let batches = n.c.store.batches().unwrap();
        let repairs: Vec<&Input> =
            batches.iter().flat_map(|b| &b.inputs).filter(|i| matches!(i, Input::GpuRepair { .. })).collect();
        assert_eq!(repairs, vec![&Input::GpuRepair { node: 0, slot: slot as u32 }]);
        let r = refused(&mut n, &uuid);
        assert_eq!(r.status, 409, "returned once, it is in service: {}", r.reason);
        let replayed = crate::driver::Driver::replay(n.c.driver.config().clone(), batches).unwrap();
        assert_eq!(replayed.controller().digest_hex(), n.c.driver.controller().digest_hex());
        assert!(!replayed.gpu_out(sim::GpuId(slot as u32)));
        drop(n);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_journal_is_written_off_the_coordinators_thread_and_not_again_before_its_interval() {
        let dir = state_dir("journal-writer");
        let mut n = Node::start(&dir, None);
        // Something changed and nothing was written yet: a snapshot goes to the writer.
        n.c.journal_step();
        assert!(n.c.journal_writer.is_some() && !n.c.journal_dirty);
        let deadline = Instant::now() + Duration::from_secs(30);
        while !n.c.journal_writer.as_ref().is_some_and(JoinHandle::is_finished) {
            assert!(Instant::now() < deadline, "the journal writer ends");
            std::thread::sleep(Duration::from_millis(5));
        }
        n.c.journal_step();
        assert!(n.c.journal_writer.is_none());
        let jobs = std::fs::read_to_string(dir.join("journal").join("jobs.csv")).unwrap();
        assert!(jobs.lines().any(|l| l.starts_with("long,")), "{jobs}");
        // Another submission: the journal is behind, but its interval (an hour here) has not
        // passed since the writing ended, so nothing is written yet.
        n.c.submit(JobRequest::new("second", vec![TaskRequest::new("0", "true")])).unwrap();
        n.c.journal_step();
        assert!(n.c.journal_writer.is_none() && n.c.journal_dirty);
        // What `run` does last: written at once.
        n.c.write_journal().unwrap();
        let jobs = std::fs::read_to_string(dir.join("journal").join("jobs.csv")).unwrap();
        assert!(jobs.lines().any(|l| l.starts_with("second,")), "{jobs}");
        assert!(!n.c.journal_dirty);
    }

    #[test]
    fn metrics_count_jobs_nodes_gpus_and_decisions_by_state_as_the_api_shows_them() {
        let dir = state_dir("metrics");
        let n = Node::start(&dir, None);
        let text = n.c.metrics_text();
        let value = |series: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
                .unwrap_or_else(|| panic!("no {series} in\n{text}"))
                .to_string()
        };
        // `long` runs on one of n0's two GPUs; the cluster has one node.
        assert_eq!(value(r#"schedlab_jobs{state="running"}"#), "1");
        assert_eq!(value(r#"schedlab_jobs{state="succeeded"}"#), "0");
        assert_eq!(value(r#"schedlab_nodes{state="alive"}"#), "1");
        assert_eq!(
            (value(r#"schedlab_gpus{state="busy"}"#), value(r#"schedlab_gpus{state="free"}"#)),
            ("1".into(), "1".into())
        );
        assert_eq!(value(r#"schedlab_decisions_total{kind="start"}"#), "1");
        assert_eq!(value("schedlab_job_completion_seconds_count"), "0");
        assert!(text.contains("# TYPE schedlab_decisions_total counter\n"), "{text}");
        // Each GPU as its agent reported it (the simulated backend's made-up readings).
        assert!(
            text.lines()
                .any(|l| l.starts_with(r#"schedlab_gpu_temperature_celsius{node="0",slot="0",uuid="GPU-n0-0"} "#)),
            "{text}"
        );
    }

    #[test]
    fn under_mutual_tls_a_call_without_a_certificate_is_refused_whatever_it_asks() {
        // As a call straight to the plain front's loopback port would come: no certificate.
        let dir = state_dir("mtls-bypass");
        let (ca, _) = crate::net::tls::ensure_client_ca(&dir.join("pki")).unwrap();
        let mut c = Coordinator::open(ServeOptions {
            tls: Some(TlsOptions {
                certificate: TlsSetup::SelfSigned { names: vec!["127.0.0.1".into()] },
                client_ca: Some(ca),
            }),
            ..options(&dir, None)
        })
        .unwrap();
        for (method, url) in
            [(Method::Get, "/v1/jobs"), (Method::Get, "/metrics"), (Method::Post, "/v1/agents/heartbeat")]
        {
            let (call, answer) = crate::net::http::Call::for_test(method, url, br#"{"name":"n0"}"#, None);
            c.handle(call);
            let answer = answer.recv().unwrap();
            assert_eq!(answer.status, 403, "{url}");
            assert!(String::from_utf8_lossy(&answer.body).contains("no client certificate"), "{url}");
        }
    }

    #[test]
    fn with_no_application_xids_every_xid_takes_the_gpu_out() {
        let dir = state_dir("no-app-xids");
        let mut n = Node::start(&dir, Some(parse_app_xids("none").unwrap()));
        let slot = n.task().2.unwrap();
        n.inject.xid(slot as u32, 13);
        n.beat();
        assert_eq!(n.journaled_gpu_fails(), vec!["xid 13"]);
        assert_eq!(n.gpu_states()[slot as usize], "out");
        assert_eq!(n.task().1, 2, "the task runs again");
        drop(n);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_restarted_coordinator_keeps_its_application_xids() {
        let dir = state_dir("keeps-app-xids");
        let c = open(&dir, None).unwrap();
        assert_eq!(c.app_xids, DEFAULT_APP_XIDS, "a new directory without the flag gets the default");
        drop(c);
        assert_eq!(open(&dir, None).unwrap().app_xids, DEFAULT_APP_XIDS);
        let _ = std::fs::remove_dir_all(&dir);

        let n = Node::start(&dir, Some(vec![94]));
        let slot = n.task().2.unwrap() as u32;
        // Stopped, and started again without the flag; the agent (the backend) carries on.
        let Node { c, backend, inject } = n;
        drop(c);
        let mut n = Node { c: open(&dir, None).unwrap(), backend, inject };
        assert_eq!(n.c.app_xids, vec![94], "the stored list, not the default");
        n.inject.xid(slot, 94);
        n.beat();
        assert_eq!(n.journaled_gpu_fails(), Vec::<String>::new());
        // 13 is in the default list but not in this directory's.
        n.inject.xid(slot, 13);
        n.beat();
        assert_eq!(n.journaled_gpu_fails(), vec!["xid 13"]);
        drop(n);
        // The same list given again is fine; another is refused, naming the stored one.
        assert!(open(&dir, Some(vec![94])).is_ok());
        let e = open(&dir, Some(vec![13])).err().unwrap();
        assert!(e.contains("was created with --app-xids 94;"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn app_xids_parse_as_a_set_and_bad_items_are_named() {
        assert_eq!(parse_app_xids("13,31,43,45,68").unwrap(), DEFAULT_APP_XIDS);
        assert_eq!(parse_app_xids(" 31, 13 ,13").unwrap(), vec![13, 31]);
        assert_eq!(parse_app_xids("none").unwrap(), Vec::<u64>::new());
        let e = parse_app_xids("13,x").unwrap_err();
        assert!(e.starts_with("--app-xids 13,x: `x` is not an XID number"), "{e}");
        let e = parse_app_xids("13,,31").unwrap_err();
        assert!(e.contains("an empty item"), "{e}");
        assert!(parse_app_xids("").unwrap_err().contains("an empty item"));
        assert!(parse_app_xids("-1").unwrap_err().contains("`-1`"));
        assert!(parse_app_xids("13;31").unwrap_err().contains("`13;31`"));
    }

    #[test]
    fn replay_flags_are_exact_seconds_and_single_shell_words() {
        let cases = [(0, "0"), (200, "0.2"), (1050, "1.05"), (1234, "1.234"), (10_000, "10")];
        for (ms, text) in cases {
            assert_eq!(traces::format_thousandths(ms), text);
            assert_eq!(traces::parse_seconds_ms(text).ok(), Some(ms), "{text} must parse back to {ms} ms");
        }
        assert_eq!(shell_quote("fifo"), "fifo");
        assert_eq!(shell_quote("srtf[duration=estimate]"), "'srtf[duration=estimate]'");
        assert_eq!(shell_quote("/tmp/a b/it's"), "'/tmp/a b/it'\\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
