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
//! one role (its row in [`crate::net::routes`]).
//!
//! Here: start-up ([`Coordinator::open`]) and the loop ([`Coordinator::run`]). Beside it:
//! `journal` (each batch into SQLite, the trace journal), `replay` (`live.json`), `views` (the
//! JSON views), [`metrics`] (`/metrics`), `agents` (the agent protocol), `jobs` (submit,
//! cancel, return a GPU), `app_xids`, [`admission`], [`settings`] and [`store`].

pub mod admission;
mod agents;
mod app_xids;
mod jobs;
mod journal;
pub mod metrics;
mod replay;
pub mod settings;
mod slurm_step;
pub mod store;
mod views;

pub use app_xids::{DEFAULT_APP_XIDS, app_xids_text, parse_app_xids};
pub use replay::write_journal;

use crate::driver::Driver;
use crate::lock::StateLock;
use crate::net::auth::Keys;
use crate::net::http::{Call, Front, Inbound, Limits};
use crate::net::routes::{Denied, Routed};
use crate::net::tls::{Identities, TlsFront};
use crate::wire::Refusal;
use settings::Given;
use std::collections::BTreeMap;
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use store::{AgentRecord, Store};

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
    /// Slurm launches the jobs of this partition (`--executor slurm`); None: agents do.
    pub slurm: Option<crate::slurm::SlurmOptions>,
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
    /// When [`Coordinator::commit_due`] may try again after the journal could not be written.
    retry_journal_at: Instant,
    /// The journal writing under way: how it ended, and how long it took.
    journal_writer: Option<JoinHandle<(Result<(), String>, Duration)>>,
    quiet: bool,
    /// Wall time spent per batch applied (for the live-mode rows of docs/performance.md).
    pub apply_time: Duration,
    pub batches_applied: u64,
    /// The Slurm executor, when Slurm launches the jobs (`--executor slurm`).
    executor: Option<crate::slurm::SlurmExecutor>,
    /// When Slurm is read next.
    next_poll: Option<Instant>,
    /// The policies the session's policy is built from (forecasts build it again).
    registry: policies::Registry,
    /// Forecasts, computed off this thread (`--executor slurm`).
    forecaster: crate::slurm::forecaster::Forecaster,
}

impl Coordinator {
    /// Binds the socket, locks (or creates) the state directory, replays its journal. In this
    /// order, so that a second coordinator on a directory in use, or one whose address is
    /// taken, is refused before it writes anything (the directory, the token included).
    pub fn open(mut options: ServeOptions) -> Result<Coordinator, String> {
        let existing = StateLock::try_existing(&options.state_dir)?;
        let slurm = match options.slurm.clone() {
            Some(o) => Some(slurm_step::open_executor(o, &mut options.settings, &options.state_dir)?),
            None => None,
        };
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
        let mut store = Store::open(&options.state_dir)?;
        let keys = Keys::load_or_create(&options.state_dir)?;
        let config = match (store.config()?, options.settings.new_config()?) {
            (Some(stored), _) => {
                options.settings.check_unchanged(&options.state_dir, &stored, &options.registry)?;
                stored
            }
            (None, Some(given)) => {
                store.set_config(&given)?;
                given
            }
            (None, None) => return Err("a new state directory needs --cluster".into()),
        };
        // Resolved after the config, so a directory refused above is left without it.
        let app_xids = app_xids::resolve(&store, &options.state_dir, options.app_xids.clone())?;
        let generation = store.next_generation()?;
        let (driver, base_ms) = journal::replay(&mut store, config, &options.registry)?;
        let agents = store.agents()?.into_iter().map(|a| (a.name.clone(), a)).collect();
        let runs = store.slurm_runs()?;
        let tls = start_tls(&options, &listener, public)?;
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
            retry_journal_at: Instant::now(),
            quiet: options.quiet,
            apply_time: Duration::ZERO,
            batches_applied: 0,
            executor: None,
            next_poll: None,
            registry: options.registry.clone(),
            forecaster: Default::default(),
        };
        let mut coordinator = coordinator;
        if let Some((mut executor, names)) = slurm {
            coordinator.adopt_slurm_nodes(&names)?;
            executor.load_runs(runs);
            coordinator.executor = Some(executor);
        }
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
            self.commit_due();
            self.slurm_step();
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

    /// One call from the front (its token checked, its body read): routed, the refusals
    /// logged, and the answer handed back to its worker, which writes it.
    fn handle(&mut self, call: Call) {
        let routed = Routed::new(&call);
        let mutual_tls = self.tls.as_ref().is_some_and(|(_, _, mutual)| *mutual);
        let answered = match routed.check_access(mutual_tls) {
            Ok(()) => routed.answer(self, mutual_tls),
            Err(denied) => Err(self.denied(denied)),
        };
        let answer = answered.unwrap_or_else(|r| {
            self.log(format!("{} {}: refused: {}", call.method, call.url, r.reason));
            routed.refused(&r)
        });
        call.send(answer);
    }

    /// A call denied for who made it: refused (recorded) with 403.
    pub(crate) fn denied(&self, Denied { who, reason }: Denied) -> Refusal {
        Refusal { status: 403, ..self.refuse(&who, reason) }
    }

    /// A request whose batch could not be journaled (a full disk, a failing one): nothing of
    /// it was applied, and the client may retry (503).
    fn internal(e: String) -> Refusal {
        Refusal::new(503, format!("the coordinator could not journal this request, so nothing of it was done: {e}"))
    }

    /// Journals and applies the deadlines and wake-ups due. When the journal cannot be
    /// written (a full disk) they are not applied, and are tried again on a later turn of the
    /// loop: the coordinator stays up (answering what it can, refusing changes with 503) and
    /// catches up when there is room, rather than exiting and taking the API down with it.
    fn commit_due(&mut self) {
        let due = self.driver.next_due().is_some_and(|d| d <= self.clock());
        if !due || Instant::now() < self.retry_journal_at {
            return;
        }
        if let Err(e) = self.commit(Vec::new()) {
            self.log(format!("cannot write the journal: {e}; deadlines wait, retrying in 1 s"));
            self.retry_journal_at = Instant::now() + Duration::from_secs(1);
        }
    }

    /// Logs and records (the store's `refusals`, for the operator) a request refused
    /// for what it claimed or who made it: 409 unless the caller makes it another status.
    fn refuse(&self, who: &str, reason: String) -> Refusal {
        self.log(format!("REFUSED {who}: {reason}"));
        let _ = self.store.refuse(self.driver.now().as_ms(), who, &reason);
        Refusal::new(409, reason)
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

/// With TLS, the relay on the public socket (its certificate made first if it is to be
/// self-signed), the certificates its clients show, and whether each must show one.
fn start_tls(
    options: &ServeOptions,
    listener: &TcpListener,
    public: Option<TcpListener>,
) -> Result<Option<(TlsFront, Identities, bool)>, String> {
    let (Some(TlsOptions { certificate, client_ca }), Some(public)) = (&options.tls, public) else {
        return Ok(None);
    };
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
    Ok(Some((front, identities, client_ca.is_some())))
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
mod tests;
