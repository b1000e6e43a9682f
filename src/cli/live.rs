//! `schedlab live serve|agent|submit|status|cancel|return-gpu|gpus|export`: live mode (the `live` crate).

use super::{CliResult, emit};
use clap::{Args, Subcommand};
use live::coordinator::settings::Given;
use live::coordinator::{ServeOptions, TlsOptions, TlsSetup, serve_until_signalled, write_journal};
use live::driver::Driver;
use live::net::client::{Client, ClientTls, read_token};
use live::wire::{JobRequest, TaskRequest};
use run::{RunSpec, Seconds};
use serde_json::Value;
use std::path::PathBuf;
use std::time::Duration;

#[derive(Subcommand)]
pub enum LiveCommand {
    /// Run the coordinator: job state in SQLite, the HTTP API, the policy on each batch of events.
    Serve(Box<ServeArgs>),
    /// Run a node agent: register this node's GPUs, heartbeat, run the tasks placed here.
    Agent(AgentArgs),
    /// Submit a job: a JSON file (--file) or one task given on the command line.
    Submit(SubmitArgs),
    /// Show the jobs, one job, the cluster (--cluster) or the decisions (--decisions).
    Status(StatusArgs),
    /// Cancel a job (by id or name): its running tasks are stopped, the rest never run.
    Cancel(CancelArgs),
    /// Return a GPU taken out (XID, uncorrected ECC error, lost) to service, by its UUID, once
    /// it has been reset or checked: without restarting its agent and stopping the node's tasks.
    ReturnGpu(ReturnGpuArgs),
    /// List the GPUs a backend finds, and watch their health for a while (--watch-s).
    Gpus(GpusArgs),
    /// Issue a client certificate (signed by the state directory's client CA, made on first
    /// use) for an agent or a user of a coordinator started with --tls-client-ca.
    IssueCert(IssueCertArgs),
    /// Issue agent NAME's token: what it calls the coordinator with (--token-file). An agent's
    /// token can register, heartbeat and read assignments as NAME only; the user token (STATE/token)
    /// can do none of these. Run on the coordinator's host, beside its state directory.
    IssueToken(IssueTokenArgs),
    /// Write a state directory's journal as a canonical trace (for `schedlab simulate --trace`);
    /// works on a stopped coordinator's state, after a crash too.
    Export(ExportArgs),
}

#[derive(Args)]
#[command(
    mut_arg("trace", |a| a.hide(true)),
    mut_arg("format", |a| a.hide(true)),
    mut_arg("jobs", |a| a.hide(true)),
    mut_arg("load", |a| a.hide(true)),
    mut_arg("failures", |a| a.hide(true)),
    mut_arg("gpu_detect_s", |a| a.hide(true)),
    mut_arg("series_bucket_s", |a| a.hide(true)),
    mut_arg("horizon_days", |a| a.hide(true)),
    mut_arg("set_aside_after", |a| a.hide(true))
)]
pub struct ServeArgs {
    /// State directory: live.db (SQLite), token, addr, journal/.
    #[arg(long, default_value = "schedlab-live")]
    state: PathBuf,
    /// Address to listen on (port 0: any free port, written to STATE/addr).
    #[arg(long, default_value = "127.0.0.1:7450")]
    listen: String,
    /// The run settings, as `simulate` takes them: the cluster (required for a new state
    /// directory), the policy, seed, heartbeats, retries, checkpoints, consolidation, spares,
    /// passes, ... An existing state directory keeps every setting it was made with: leave
    /// them out, or give the same values (another is refused, naming it). What a wall clock
    /// cannot honour (a trace, a failure model, a detection delay, a horizon) is refused by name.
    #[command(flatten)]
    run: RunSpec,
    /// The work assumed for a task without estimate_s until it ends, seconds [default: 3600].
    #[arg(long)]
    default_work_s: Option<Seconds>,
    /// Rewrite STATE/journal/ (a canonical trace of the session) at most this often, seconds
    /// (and, as the session grows, at most every ten times as long as the last rewrite took).
    #[arg(long, default_value = "1")]
    journal_every_s: Seconds,
    /// Seconds a client has to send a whole request (head and body) once it has begun: a
    /// client stalled longer is answered 408 and its connection closed.
    #[arg(long, default_value = "30")]
    request_timeout_s: Seconds,
    /// XIDs that are the application's fault, not the GPU's: logged, and the GPU stays in
    /// service (the task's process fails by itself). Every other XID, an uncorrected ECC error
    /// or a lost GPU takes the GPU out. Comma-separated numbers, or `none` (every XID takes
    /// the GPU out). Default for a new state directory: 13,31,43,45,68, as NVIDIA's Kubernetes
    /// device plugin; an existing one keeps the list it was created with (another is refused).
    #[arg(long, value_name = "LIST")]
    app_xids: Option<String>,
    /// Serve https: with the operator's --tls-cert and --tls-key, else with a self-signed
    /// certificate made on first start into STATE/tls-cert.pem (give it to clients and agents
    /// as --ca-file) and kept.
    #[arg(long)]
    tls: bool,
    /// Certificate chain (PEM) for https; implies --tls.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// Private key (PEM) of --tls-cert.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Names (host names, IP addresses) clients reach the coordinator by, for the
    /// self-signed certificate, comma-separated: default localhost, 127.0.0.1, this host's
    /// name and --listen's host. Used only when the certificate is made.
    #[arg(long, value_name = "NAMES", value_delimiter = ',', conflicts_with = "tls_cert")]
    tls_name: Vec<String>,
    /// Mutual TLS: every client and agent must show a certificate (--client-cert) signed by a
    /// CA in this PEM file, or its connection ends in the handshake; implies --tls.
    #[arg(long, value_name = "FILE")]
    tls_client_ca: Option<PathBuf>,
    /// Who launches the jobs: `agents` (schedlab's own, `live agent` on each node) or `slurm`
    /// (Slurm does, on the nodes of --partition; jobs are sbatch'ed there and enter held:
    /// docs/slurm-executor.md). With slurm the cluster is Slurm's: give no --cluster.
    #[arg(long, value_enum, default_value = "agents")]
    executor: Executor,
    /// The Slurm partition schedlab schedules (--executor slurm).
    #[arg(long, default_value = "gpu")]
    partition: String,
    /// Seconds between readings of Slurm (squeue, sinfo) (--executor slurm).
    #[arg(long, default_value = "1")]
    slurm_poll_s: Seconds,
    /// Seconds a released job may stay pending in Slurm before it is held again and placed
    /// anew (--executor slurm).
    #[arg(long, default_value = "30")]
    start_deadline_s: Seconds,
    /// Shadow mode (--executor slurm): change nothing in Slurm, which schedules the partition
    /// itself; mirror it, and forecast and compare under --policy (`live status --forecast`).
    #[arg(long)]
    shadow: bool,
    #[arg(long)]
    quiet: bool,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Executor {
    Agents,
    Slurm,
}

#[derive(Args)]
pub struct ClientArgs {
    /// The coordinator's URL.
    #[arg(long, default_value = "http://127.0.0.1:7450")]
    coordinator: String,
    /// File holding the token: a user's is the coordinator's STATE/token, an agent's its own
    /// (`live issue-token --agent NAME`); default: $SCHEDLAB_TOKEN, else schedlab-live/token.
    #[arg(long)]
    token_file: Option<PathBuf>,
    /// For an https:// coordinator: trust the certificates in this PEM file (the
    /// coordinator's STATE/tls-cert.pem when it made its own, or a private CA's) instead of
    /// Mozilla's roots; default: $SCHEDLAB_CA_FILE.
    #[arg(long, value_name = "FILE")]
    ca_file: Option<PathBuf>,
    /// The client certificate (PEM) to show a coordinator started with --tls-client-ca;
    /// default: $SCHEDLAB_CLIENT_CERT.
    #[arg(long, value_name = "FILE", requires = "client_key")]
    client_cert: Option<PathBuf>,
    /// Its private key (PEM); default: $SCHEDLAB_CLIENT_KEY.
    #[arg(long, value_name = "FILE", requires = "client_cert")]
    client_key: Option<PathBuf>,
}

impl ClientArgs {
    fn token(&self) -> Result<String, String> {
        match (&self.token_file, std::env::var("SCHEDLAB_TOKEN")) {
            (Some(path), _) => read_token(path),
            (None, Ok(token)) if !token.is_empty() => Ok(token),
            _ => read_token(&PathBuf::from("schedlab-live/token")),
        }
    }
    /// The https settings: the flags, else their environment variables.
    fn tls(&self) -> ClientTls {
        let env = |name: &str| std::env::var_os(name).filter(|v| !v.is_empty()).map(PathBuf::from);
        let identity = match (&self.client_cert, &self.client_key) {
            (Some(cert), Some(key)) => Some((cert.clone(), key.clone())),
            _ => env("SCHEDLAB_CLIENT_CERT").zip(env("SCHEDLAB_CLIENT_KEY")),
        };
        ClientTls { ca_file: self.ca_file.clone().or_else(|| env("SCHEDLAB_CA_FILE")), identity }
    }
    fn client(&self) -> Result<Client, String> {
        Client::with_tls(&self.coordinator, &self.token()?, Duration::from_secs(30), &self.tls())
    }
}

#[derive(Args)]
pub struct AgentArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// This agent's name (unique in the cluster); default: the host name.
    #[arg(long)]
    name: Option<String>,
    /// How other nodes reach this one (SCHEDLAB_MASTER_ADDR of tasks whose rank 0 runs here).
    #[arg(long, default_value = "127.0.0.1")]
    addr: String,
    /// Ask for this node of the cluster (default: the first free node with as many GPUs).
    #[arg(long)]
    node: Option<u32>,
    /// GPU backend: nvml (the driver's libnvidia-ml.so.1), nvml:PATH, or
    /// sim[:gpus=N,name=NAME,prefix=P,inject=FILE] (made-up GPUs, for tests).
    #[arg(long, default_value = "nvml")]
    backend: String,
    /// Seconds between asking for new tasks (between heartbeats, which report).
    #[arg(long, default_value = "0.5")]
    poll_s: Seconds,
    /// Seconds between SIGTERM and SIGKILL when a task is stopped.
    #[arg(long, default_value = "10")]
    grace_s: Seconds,
    /// Task logs and checkpoint directories go here.
    #[arg(long, default_value = "schedlab-agent")]
    work_dir: PathBuf,
    /// The most of a task attempt's output kept in its log, in MiB; the rest is dropped after
    /// a line saying where the log was cut (the task runs on).
    #[arg(long, default_value_t = 64)]
    log_limit_mib: u64,
    #[arg(long)]
    quiet: bool,
}

#[derive(Args)]
pub struct SubmitArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// A job as JSON: {"name", "queue"?, "priority"?, "deadline_s"?, "tasks": [{"name", "command",
    /// "gpus"?, "gpu_milli"?, "gpu_type"?, "single_node"?, "gpus_per_node"?, "estimate_s"?,
    /// "depends_on"?: [task names], "checkpoint_s"?, "restart_overhead_s"?, "not_before_s"?, "not_after_s"?,
    /// "dataset"?, "speeds"?}]}; times in seconds after submission (docs/live-mode.md: "Jobs").
    #[arg(long, conflicts_with_all = ["name", "command"])]
    file: Option<PathBuf>,
    /// The job's name (one task, named 0, running COMMAND).
    #[arg(long, required_unless_present = "file")]
    name: Option<String>,
    #[arg(long, default_value_t = 1)]
    gpus: u32,
    #[arg(long)]
    estimate_s: Option<String>,
    #[arg(long)]
    gpu_type: Option<String>,
    #[arg(long)]
    queue: Option<String>,
    /// Higher is more urgent (what the priority and weighted-score policies read).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true)]
    priority: i32,
    /// The command, run with `sh -c` (quote it, or give it after --).
    #[arg(last = true)]
    command: Vec<String>,
}

#[derive(Args)]
pub struct StatusArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// A job id or name (default: every job).
    job: Option<String>,
    /// Show the nodes and GPUs instead.
    #[arg(long)]
    cluster: bool,
    /// Show the decision log instead.
    #[arg(long)]
    decisions: bool,
    /// Show the forecast instead (--executor slurm): each pending job's start under the
    /// policy and, in shadow mode, Slurm against the policy since the shadow started.
    #[arg(long)]
    forecast: bool,
    /// Print the API's JSON as is.
    #[arg(long)]
    json: bool,
}

#[derive(Args)]
pub struct CancelArgs {
    #[command(flatten)]
    client: ClientArgs,
    job: String,
}

#[derive(Args)]
pub struct ReturnGpuArgs {
    #[command(flatten)]
    client: ClientArgs,
    /// The GPU's UUID, as `live status --cluster` shows it.
    uuid: String,
}

#[derive(Args)]
pub struct GpusArgs {
    /// nvml, nvml:PATH or sim[:...], as for `live agent`.
    #[arg(long, default_value = "nvml")]
    backend: String,
    /// Watch for health events (XID, ECC, lost GPUs) this many seconds.
    #[arg(long, default_value = "0")]
    watch_s: Seconds,
}

#[derive(Args)]
pub struct IssueCertArgs {
    #[arg(long, default_value = "schedlab-live")]
    state: PathBuf,
    /// Whom it is for (an agent's name, a user): the certificate's name and its files' names.
    #[arg(long)]
    name: String,
    /// Where NAME-cert.pem and NAME-key.pem (0600) go.
    #[arg(long, default_value = ".")]
    out: PathBuf,
}

#[derive(Args)]
pub struct IssueTokenArgs {
    #[arg(long, default_value = "schedlab-live")]
    state: PathBuf,
    /// The agent's name (its `live agent --name`).
    #[arg(long)]
    agent: String,
    /// Write the token to this new file (0600) instead of printing it.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Args)]
pub struct ExportArgs {
    #[arg(long, default_value = "schedlab-live")]
    state: PathBuf,
    /// A new trace directory: jobs.csv, cluster.csv, queues.csv (when the session has queues),
    /// events.csv (heartbeats, GPU failures, agent restarts as node_fail rows) and live.json.
    #[arg(short = 'o', long)]
    out: PathBuf,
}

/// A duration flag as the wall clock's.
fn wall(seconds: Seconds) -> Duration {
    Duration::from_millis(seconds.duration().as_ms())
}

pub fn run(command: LiveCommand, typed: &dyn Fn(&str) -> bool) -> CliResult {
    match command {
        LiveCommand::Serve(a) => run_serve(*a, typed),
        LiveCommand::Agent(a) => run_agent(a),
        LiveCommand::Submit(a) => run_submit(a),
        LiveCommand::Status(a) => run_status(a),
        LiveCommand::Cancel(a) => {
            let v: Value = a.client.client()?.post(&format!("/v1/jobs/{}/cancel", a.job), &Value::Null)?;
            emit(format!(
                "job {} `{}`: {}\n",
                v["id"],
                v["name"].as_str().unwrap_or(""),
                v["state"].as_str().unwrap_or("")
            ))
        }
        LiveCommand::ReturnGpu(a) => {
            // The UUID goes into the URL as is: anything that would need escaping is no UUID.
            if !live::wire::is_plain_name(&a.uuid) {
                let uuid = live::wire::shown(&a.uuid);
                return Err(
                    format!("`{uuid}` is not a GPU UUID (letters, digits, -, _ and ., not . or .. alone)").into()
                );
            }
            let path = format!("/v1/gpus/{}/return", a.uuid);
            let r: live::wire::GpuReturned = a.client.client()?.post(&path, &Value::Null)?;
            let holder = r.task.map(|t| format!(", running {t}")).unwrap_or_default();
            emit(format!(
                "GPU {} (node {} slot {}, agent {}) is back in service: {}{holder}\n",
                r.uuid, r.node, r.slot, r.agent, r.state
            ))
        }
        LiveCommand::Gpus(a) => {
            let mut backend = live::agent::backend::from_spec(&a.backend)?;
            let mut out = String::new();
            for g in backend.gpus()? {
                out += &format!(
                    "{} {} {} {} MiB ({} MiB used) {} % {} C\n",
                    g.index, g.uuid, g.name, g.memory_total_mib, g.memory_used_mib, g.utilisation_pct, g.temperature_c
                );
            }
            for p in backend.processes()? {
                out += &format!("process {} on {} using {} MiB\n", p.pid, p.uuid, p.used_memory_mib);
            }
            emit(out)?;
            let until = std::time::Instant::now() + wall(a.watch_s);
            while std::time::Instant::now() < until {
                for e in backend.health(200)? {
                    emit(format!("health: {e}\n"))?;
                }
            }
            Ok(())
        }
        LiveCommand::IssueCert(a) => {
            live::wire::check_name("name", &a.name).map_err(|r| r.reason)?;
            let (cert, key) = live::net::tls::issue_client_certificate(&a.state, &a.name, &a.out)?;
            let (ca, _) = live::net::tls::ensure_client_ca(&a.state)?;
            emit(format!(
                "wrote {} and {} (signed by {}): give them to `{}` as --client-cert and --client-key; \
                 the coordinator trusts them with --tls-client-ca {}\n",
                cert.display(),
                key.display(),
                ca.display(),
                a.name,
                ca.display()
            ))
        }
        LiveCommand::IssueToken(a) => {
            let token = live::net::auth::agent_token(&a.state, &a.agent)?;
            match &a.out {
                None => emit(format!("{token}\n")),
                Some(out) => {
                    live::coordinator::store::write_private(out, format!("{token}\n").as_bytes())?;
                    emit(format!("wrote {}: give it to agent `{}` as --token-file\n", out.display(), a.agent))
                }
            }
        }
        LiveCommand::Export(a) => {
            let store = live::coordinator::store::Store::open(&a.state)?;
            let config = store.config()?.ok_or_else(|| format!("{}: no coordinator state here", a.state.display()))?;
            let driver = Driver::replay_with(config, super::registry(), store.batches()?)?;
            write_journal(&driver, &a.out)?;
            emit(format!("wrote {} ({} jobs)\n", a.out.display(), driver.trace()?.workload.len()))
        }
    }
}

/// The text of a settings file given to `live serve` (a state directory keeps its own copy).
fn read_text(flag: &str, path: &std::path::Path) -> Result<String, String> {
    std::fs::read_to_string(path).map_err(|e| format!("{flag} {}: {e}", path.display()))
}

/// The settings `live serve` was given (see [`Given`]): the RunSpec its flags make, which of
/// them were typed, and the files' texts.
fn given_settings(a: &ServeArgs, typed: &dyn Fn(&str) -> bool) -> Result<Given, String> {
    let cluster = match &a.run.cluster {
        Some(cluster) if std::path::Path::new(cluster).is_file() => {
            Some(read_text("--cluster", std::path::Path::new(cluster))?)
        }
        other => other.clone(),
    };
    let file = |flag: &str, path: &Option<PathBuf>| path.as_deref().map(|p| read_text(flag, p)).transpose();
    let fields = serde_json::to_value(&a.run).map_err(|e| e.to_string())?;
    let typed = fields.as_object().into_iter().flat_map(|f| f.keys()).filter(|k| typed(k)).cloned().collect();
    Ok(Given {
        run: RunSpec { cluster: None, queues: None, datasets: None, ..a.run.clone() },
        typed,
        cluster,
        queues: file("--queues", &a.run.queues)?,
        datasets: file("--datasets", &a.run.datasets)?,
        default_work_ms: a.default_work_s.map(|s| s.duration().as_ms()),
    })
}

fn run_serve(a: ServeArgs, typed: &dyn Fn(&str) -> bool) -> CliResult {
    let settings = given_settings(&a, typed)?;
    let certificate = match (&a.tls_cert, &a.tls_key) {
        (Some(cert), Some(key)) => Some(TlsSetup::Files { cert: cert.clone(), key: key.clone() }),
        _ if a.tls || !a.tls_name.is_empty() || a.tls_client_ca.is_some() => {
            Some(TlsSetup::SelfSigned { names: tls_names(&a) })
        }
        _ => None,
    };
    let tls = certificate.map(|certificate| TlsOptions { certificate, client_ca: a.tls_client_ca.clone() });
    let options = ServeOptions {
        tls,
        state_dir: a.state.clone(),
        listen: a.listen,
        settings,
        journal_every: wall(a.journal_every_s),
        quiet: a.quiet,
        app_xids: a.app_xids.as_deref().map(live::coordinator::parse_app_xids).transpose()?,
        http: live::net::http::Limits {
            request_timeout: wall(a.request_timeout_s).max(Duration::from_millis(1)),
            ..live::net::http::Limits::default()
        },
        registry: super::registry().clone(),
        slurm: (a.executor == Executor::Slurm).then(|| live::slurm::SlurmOptions {
            partition: a.partition.clone(),
            poll: wall(a.slurm_poll_s).max(Duration::from_millis(100)),
            start_deadline: wall(a.start_deadline_s),
            shadow: a.shadow,
        }),
    };
    eprintln!("schedlab live: state in {}, API token in {}", a.state.display(), a.state.join("token").display());
    if let Some(TlsOptions { certificate: TlsSetup::SelfSigned { names }, .. }) = &options.tls {
        let (cert, _) = TlsSetup::self_signed_files(&a.state);
        eprintln!(
            "schedlab live: https with the self-signed certificate {} (for {}; made on the first start): clients and agents trust it with --ca-file",
            cert.display(),
            names.join(", ")
        );
    }
    let loopback = options.listen.starts_with("127.")
        || options.listen.starts_with("localhost:")
        || options.listen.starts_with("[::1]");
    if !loopback && options.tls.is_none() {
        eprintln!(
            "warning: listening on {} beyond this machine without TLS: the token travels in the clear; \
             give --tls",
            options.listen
        );
    }
    serve_until_signalled(options)?;
    Ok(())
}

/// The self-signed certificate's names: --tls-name, else localhost, 127.0.0.1, the host name
/// and --listen's host (unless it listens on every address).
fn tls_names(a: &ServeArgs) -> Vec<String> {
    if !a.tls_name.is_empty() {
        return a.tls_name.iter().map(|n| n.trim().to_string()).filter(|n| !n.is_empty()).collect();
    }
    let mut names = vec!["localhost".to_string(), "127.0.0.1".to_string()];
    let host = std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_default();
    let listen_host = a.listen.rsplit_once(':').map_or("", |(h, _)| h).trim_matches(['[', ']']).to_string();
    for name in [host, listen_host] {
        if !name.is_empty() && !["0.0.0.0", "::"].contains(&name.as_str()) && !names.contains(&name) {
            names.push(name);
        }
    }
    names
}

fn run_agent(a: AgentArgs) -> CliResult {
    let backend = live::agent::backend::from_spec(&a.backend)?;
    let name = match a.name {
        Some(n) => n,
        None => {
            std::fs::read_to_string("/etc/hostname").map(|h| h.trim().to_string()).unwrap_or_else(|_| "node".into())
        }
    };
    // It names the agent's URL path and its token: a plain name, checked before anything runs.
    live::wire::check_name("--name", &name).map_err(|r| r.reason)?;
    let options = live::agent::AgentOptions {
        coordinator: a.client.coordinator.clone(),
        token: a.client.token()?,
        tls: a.client.tls(),
        name,
        addr: a.addr,
        node: a.node,
        poll: wall(a.poll_s).max(Duration::from_millis(10)),
        grace: wall(a.grace_s),
        work_dir: a.work_dir,
        quiet: a.quiet,
    };
    let log_limit = a.log_limit_mib.checked_mul(1 << 20).ok_or("--log-limit-mib: too large")?;
    live::agent::Agent::new(options, backend)?.with_log_limit(log_limit).run(live::signals::stop_on_term_and_int()?)?;
    Ok(())
}

fn run_submit(a: SubmitArgs) -> CliResult {
    let job: JobRequest = match &a.file {
        Some(path) => {
            let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
            serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?
        }
        None => {
            if a.command.is_empty() {
                return Err(
                    "give the command after --, e.g. schedlab live submit --name probe -- python train.py".into()
                );
            }
            let estimate_s = match &a.estimate_s {
                None => None,
                Some(s) => {
                    Some(s.parse::<serde_json::Number>().map_err(|_| format!("--estimate-s {s}: not a number"))?)
                }
            };
            let task = TaskRequest {
                gpus: a.gpus,
                gpu_type: a.gpu_type.clone(),
                estimate_s,
                ..TaskRequest::new("0", a.command.join(" "))
            };
            JobRequest {
                queue: a.queue.clone(),
                priority: a.priority,
                ..JobRequest::new(a.name.clone().unwrap_or_default(), vec![task])
            }
        }
    };
    let v: Value = a.client.client()?.post("/v1/jobs", &job)?;
    emit(format!("submitted job {} `{}`\n", v["id"], v["name"].as_str().unwrap_or("")))
}

fn run_status(a: StatusArgs) -> CliResult {
    let client = a.client.client()?;
    let path = if a.cluster {
        "/v1/cluster".to_string()
    } else if a.decisions {
        "/v1/decisions".to_string()
    } else if a.forecast {
        "/v1/forecast".to_string()
    } else if let Some(job) = &a.job {
        format!("/v1/jobs/{job}")
    } else {
        "/v1/jobs".to_string()
    };
    let v: Value = match path.as_str() {
        "/v1/jobs" => client.all_pages(&path, "jobs")?,
        "/v1/decisions" => client.all_pages(&path, "decisions")?,
        _ => client.get(&path)?,
    };
    if a.json {
        return emit(format!("{v:#}\n"));
    }
    let s = |v: &Value| match v {
        Value::String(s) => s.clone(),
        Value::Null => "-".into(),
        other => other.to_string(),
    };
    let mut out = String::new();
    if a.forecast {
        return emit(forecast_text(&v));
    }
    if a.cluster {
        out += &format!("policy {}, now {} s\n", s(&v["policy"]), s(&v["now_s"]));
        for n in v["nodes"].as_array().into_iter().flatten() {
            out += &format!(
                "node {} ({}) {} agent {} last beat {} s\n",
                s(&n["node"]),
                s(&n["pool"]),
                s(&n["state"]),
                s(&n["agent"]),
                s(&n["last_beat_s"])
            );
            for g in n["gpus"].as_array().into_iter().flatten() {
                out += &format!(
                    "  gpu {} {} {} {} {}\n",
                    s(&g["slot"]),
                    s(&g["uuid"]),
                    s(&g["name"]),
                    s(&g["state"]),
                    s(&g["task"])
                );
            }
        }
    } else if a.decisions {
        for d in v["decisions"].as_array().into_iter().flatten() {
            out += &format!(
                "{:>10.3} s  {:<13} job {} task {} gpus {} {}\n",
                d["time_ms"].as_u64().unwrap_or(0) as f64 / 1000.0,
                s(&d["kind"]),
                s(&d["job"]),
                s(&d["task"]),
                s(&d["gpus"]),
                s(&d["detail"])
            );
        }
        out += &format!("digest {}\n", s(&v["digest"]));
    } else if a.job.is_some() {
        out += &format!(
            "job {} `{}` {} (submitted at {} s)\n",
            s(&v["id"]),
            s(&v["name"]),
            s(&v["state"]),
            s(&v["submit_s"])
        );
        for t in v["tasks"].as_array().into_iter().flatten() {
            out += &format!(
                "  task {} {} attempt {} exit {} gpus {}\n",
                s(&t["name"]),
                s(&t["status"]),
                s(&t["attempt"]),
                s(&t["exit_code"]),
                s(&t["placed"])
            );
        }
    } else {
        for j in v["jobs"].as_array().into_iter().flatten() {
            out += &format!(
                "{:>5}  {:<30} {:<10} {} task(s)\n",
                s(&j["id"]),
                s(&j["name"]),
                s(&j["state"]),
                s(&j["tasks"])
            );
        }
    }
    emit(out)
}

/// `live status --forecast`: the forecast as a table (Unix times as seconds from now), then
/// the shadow's comparison when there is one.
fn forecast_text(v: &Value) -> String {
    let f = &v["forecast"];
    let now = f["now_unix"].as_u64().unwrap_or(0);
    let mut out = format!(
        "forecast under {} ({} pending jobs)\n",
        f["policy"].as_str().unwrap_or("?"),
        f["jobs"].as_array().map_or(0, Vec::len)
    );
    out += &format!("{:>10}  {:>10}  {:>12}\n", "job", "waited s", "starts in s");
    for j in f["jobs"].as_array().into_iter().flatten() {
        let waited = now.saturating_sub(j["submit_unix"].as_u64().unwrap_or(now));
        let starts = j["start_unix"].as_u64().map_or("never".to_string(), |s| s.saturating_sub(now).to_string());
        out += &format!("{:>10}  {:>10}  {:>12}\n", j["job"].as_u64().unwrap_or(0), waited, starts);
    }
    let c = &v["comparison"];
    if c.is_object() {
        let n = |k: &str| c[k].as_f64().unwrap_or(0.0);
        out += &format!(
            "since the shadow started ({} jobs): mean wait Slurm {:.1} s, {} {:.1} s; GPU-hours Slurm {:.2}, policy {:.2}\n",
            c["jobs"],
            n("slurm_mean_wait_s"),
            c["policy"].as_str().unwrap_or("?"),
            n("policy_mean_wait_s"),
            n("slurm_gpu_hours"),
            n("policy_gpu_hours")
        );
        for d in c["differ"].as_array().into_iter().flatten() {
            out += &format!(
                "  job {}: Slurm started it at {}, the policy at {}\n",
                d["job"], d["slurm_start_unix"], d["policy_start_unix"]
            );
        }
    }
    out
}
