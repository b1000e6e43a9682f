//! Argument parsing and dispatch.

mod cluster;
mod compare;
mod live;
mod merge;
mod policies;
mod regress;
mod report;
mod resilience;
mod simulate;
mod sweep;
mod trace;

use clap::{Parser, Subcommand};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::{Mutex, OnceLock};

pub type CliResult = Result<(), Box<dyn std::error::Error>>;

#[derive(Parser)]
#[command(
    name = "schedlab",
    version,
    about = "Deterministic simulator and replay bench for GPU-cluster scheduling policies"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run a workload (a trace, or the built-in synthetic one) under a policy and report metrics.
    Simulate(Box<simulate::SimulateArgs>),
    /// Run traces x policies x seeds (x parameter grids) on all cores; --shard i/n runs a slice.
    Sweep(Box<sweep::SweepArgs>),
    /// Combine the outputs of sweep shards into one sweep.
    Merge(merge::MergeArgs),
    /// Two runs or sweeps side by side: deltas, and which is better on each metric.
    Compare(compare::CompareArgs),
    /// Run a fixed sweep and compare every metric with a committed baseline (CI regression).
    Regress(regress::RegressArgs),
    /// One self-contained HTML report (inline SVG charts) of a run or sweep folder; --png/--svg files.
    Report(report::ReportArgs),
    /// List the policies with their parameters and defaults.
    Policies,
    /// Import, validate or describe traces.
    #[command(subcommand)]
    Trace(trace::TraceCommand),
    /// Build a cluster from a real machine inventory (Alibaba PAI, openb, spot; Philly), or queues
    /// from virtual-cluster sizes (Philly, Helios).
    #[command(subcommand)]
    Cluster(cluster::ClusterCommand),
    /// Live mode: a coordinator and node agents run real processes on real GPUs under a policy.
    #[command(subcommand)]
    Live(live::LiveCommand),
}

/// Writes `text` to standard output. A closed pipe (`schedlab trace stats ... | head`) ends
/// the output quietly instead of panicking as `print!` would.
pub fn emit(text: impl std::fmt::Display) -> CliResult {
    use std::io::Write;
    match write!(std::io::stdout().lock(), "{text}") {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => Err(e.into()),
        _ => Ok(()),
    }
}

/// Loads a trace and tells the user, on stderr, what its importer could not carry over (CPU-only
/// pods skipped, columns not modelled): nothing a user submitted disappears without a word.
/// A command that runs many runs on one trace (a sweep) reads and reports it once: once it has
/// called [`keep_loaded_traces`], traces are kept for the rest of the process, keyed by path
/// and format. Other commands read theirs without keeping a copy.
pub fn load_trace(path: &std::path::Path, format: &str) -> Result<traces::Trace, Box<dyn std::error::Error>> {
    type Loaded = BTreeMap<(PathBuf, String), traces::Trace>;
    static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
    if !KEEP_TRACES.load(std::sync::atomic::Ordering::Relaxed) {
        return read_trace(path, format);
    }
    let key = (path.to_path_buf(), format.to_string());
    // Held while loading, so parallel runs of one sweep read (and report) each trace once.
    let mut loaded = LOADED.get_or_init(Mutex::default).lock().map_err(|_| "trace cache poisoned")?;
    if let Some(trace) = loaded.get(&key) {
        return Ok(trace.clone());
    }
    let trace = read_trace(path, format)?;
    loaded.insert(key, trace.clone());
    Ok(trace)
}

/// Whether [`load_trace`] keeps what it reads (a command of many runs on the same traces).
static KEEP_TRACES: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// From now on, [`load_trace`] keeps each trace it reads for the rest of the process.
pub fn keep_loaded_traces() {
    KEEP_TRACES.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// Reads a trace and prints its notes (what was skipped or not modelled).
fn read_trace(path: &std::path::Path, format: &str) -> Result<traces::Trace, Box<dyn std::error::Error>> {
    let trace = traces::load(path, format.parse()?)?;
    for note in &trace.notes {
        eprintln!("note: {}: {note}", path.display());
    }
    Ok(trace)
}

/// Leaves `value` to the end of the process instead of freeing it: a one-shot command's
/// last big structure (a trace, a run's records) is about to be returned to the OS whole, and
/// freeing a million jobs one allocation at a time costs more than the rest of the exit.
pub fn leave_for_exit<T>(value: T) {
    std::mem::forget(value);
}

pub fn run() -> CliResult {
    match Cli::parse().command {
        Command::Simulate(args) => simulate::run(*args),
        Command::Sweep(args) => sweep::run(*args),
        Command::Merge(args) => merge::run(args),
        Command::Compare(args) => compare::run(args),
        Command::Regress(args) => regress::run(args),
        Command::Report(args) => report::run(args),
        Command::Policies => policies::run(),
        Command::Trace(command) => trace::run(command),
        Command::Cluster(command) => cluster::run(command),
        Command::Live(command) => live::run(command),
    }
}
