//! Argument parsing and dispatch.

mod cluster;
mod compare;
mod compare_starts;
mod live;
mod merge;
mod policies;
mod regress;
mod report;
mod simulate;
mod sweep;
mod trace;

use clap::parser::ValueSource;
use clap::{ArgMatches, CommandFactory, FromArgMatches, Parser, Subcommand};

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
    /// A replay's starts against those its trace recorded (a Slurm sacct dump): the
    /// distribution of the deviations, by sign, the jobs furthest off; --csv every job.
    CompareStarts(Box<compare_starts::CompareStartsArgs>),
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
    /// Print a completion script for SHELL: `schedlab completions bash >
    /// ~/.local/share/bash-completion/completions/schedlab`.
    Completions {
        /// bash, zsh, fish, elvish or powershell.
        shell: clap_complete::Shell,
    },
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

/// The runner of every command that simulates: it prints each trace's notes (what its
/// importer skipped or does not model) on stderr, so nothing a user submitted disappears
/// without a word.
pub fn runner() -> run::Runner {
    run::Runner::new(registry().clone()).with_notes(print_note)
}

/// The policies this binary knows: the built-ins, and a program's own when it started the
/// command line with [`main_with`].
static REGISTRY: std::sync::OnceLock<::policies::Registry> = std::sync::OnceLock::new();

/// The policies every command builds from (see [`REGISTRY`]).
pub fn registry() -> &'static ::policies::Registry {
    REGISTRY.get_or_init(::policies::Registry::builtin)
}

fn print_note(path: &std::path::Path, note: &str) {
    eprintln!("note: {}: {note}", path.display());
}

/// Reads a trace and prints its notes (what was skipped or not modelled).
pub fn read_trace(path: &std::path::Path, format: &str) -> Result<traces::Trace, Box<dyn std::error::Error>> {
    let trace = traces::load(path, format.parse()?)?;
    for note in &trace.notes {
        print_note(path, note);
    }
    Ok(trace)
}

/// Leaves `value` to the end of the process instead of freeing it: a one-shot command's
/// last big structure (a trace, a run's records) is about to be returned to the OS whole, and
/// freeing a million jobs one allocation at a time costs more than the rest of the exit.
pub fn leave_for_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Runs the command line with the built-in policies: exit code 0 when the command succeeded,
/// 2 on any error (printed as `error: ...`); `regress` exits 1 on a regression.
pub fn main() -> std::process::ExitCode {
    main_with(::policies::Registry::builtin())
}

/// Runs the command line with the policies of `registry`, as a team's own `schedlab` binary
/// does with its policy compiled in (see docs/writing-a-policy.md): every command (simulate,
/// sweep, regress, policies, live serve) knows them.
///
/// ```no_run
/// # fn my_policy(p: &policies::Params) -> Result<Box<dyn sim::Policy + Send>, policies::SpecError> { unimplemented!() }
/// fn main() -> std::process::ExitCode {
///     schedlab::cli::main_with(schedlab::Registry::builtin().with("my-policy", my_policy))
/// }
/// ```
pub fn main_with(registry: ::policies::Registry) -> std::process::ExitCode {
    if REGISTRY.set(registry).is_err() {
        eprintln!("error: the command line was started twice in one process");
        return std::process::ExitCode::from(2);
    }
    match run() {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            std::process::ExitCode::from(2)
        }
    }
}

fn run() -> CliResult {
    let matches = Cli::command().try_get_matches().unwrap_or_else(|e| in_users_terms(e).exit());
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit());
    let typed = |id: &str| typed_on_command_line(&matches, id);
    match cli.command {
        Command::Simulate(args) => simulate::run(*args, &typed),
        Command::Sweep(args) => sweep::run(*args),
        Command::Merge(args) => merge::run(args),
        Command::Compare(args) => compare::run(args),
        Command::CompareStarts(args) => compare_starts::run(*args, &typed),
        Command::Regress(args) => regress::run(args),
        Command::Report(args) => report::run(args),
        Command::Policies => policies::run(),
        Command::Trace(command) => trace::run(command),
        Command::Cluster(command) => cluster::run(command),
        Command::Live(command) => live::run(command, &typed),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "schedlab", &mut script);
            emit(String::from_utf8_lossy(&script))
        }
    }
}

/// A flag's bad value said as `--flag `value`: what was expected`, in place of clap's
/// `invalid value 'value' for '--flag <FLAG>': ...`; other errors (and help) as clap says them.
fn in_users_terms(e: clap::Error) -> clap::Error {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ValueValidation {
        return e;
    }
    let (Some(ContextValue::String(arg)), Some(ContextValue::String(value)), Some(why)) =
        (e.get(ContextKind::InvalidArg), e.get(ContextKind::InvalidValue), std::error::Error::source(&e))
    else {
        return e;
    };
    let flag = arg.split_whitespace().next().unwrap_or(arg);
    clap::Error::raw(ErrorKind::ValueValidation, format!("{flag} `{value}`: {why}\n"))
}

/// Whether the user typed the flag `id` of the command run (the innermost subcommand, such as
/// `simulate` or `live serve`) rather than left its default.
fn typed_on_command_line(matches: &ArgMatches, id: &str) -> bool {
    let mut command = matches;
    while let Some((_, sub)) = command.subcommand() {
        command = sub;
    }
    // An id the command does not have was not typed (and asking clap for it would panic).
    command.ids().any(|known| known.as_str() == id) && command.value_source(id) == Some(ValueSource::CommandLine)
}

/// Refuses the flags of the built-in synthetic workload (--jobs, --load) with a trace, which
/// replaces that workload: they would change nothing, yet be recorded as run settings.
fn refuse_synthetic_flags(traced: bool, typed: &dyn Fn(&str) -> bool) -> Result<(), String> {
    let given: Vec<&str> = ["--jobs", "--load"].into_iter().filter(|flag| typed(&flag[2..])).collect();
    if !traced || given.is_empty() {
        return Ok(());
    }
    let (verb, it) = if given.len() == 1 { ("shapes", "it") } else { ("shape", "them") };
    Err(format!("{} {verb} the built-in synthetic workload, which --trace replaces: drop {it}", given.join(" and ")))
}
