//! `schedlab trace import|validate|stats|fit-failures`.

use super::{CliResult, emit};
use clap::{Args, Subcommand};
use std::fs::File;
use std::io::BufWriter;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Convert a trace to the canonical format (traces/FORMAT.md).
    Import {
        #[command(flatten)]
        input: Input,
        /// Output: a jobs.csv file, or a directory (jobs.csv, plus cluster.csv, events.csv,
        /// queues.csv and datasets.csv when the trace has them).
        #[arg(long, short)]
        out: PathBuf,
        /// sacct: also write the node failures that NODE_FAIL jobs record as an events.csv
        /// here (for `simulate --failures events:PATH`); needs --nodes.
        #[arg(long, requires = "nodes")]
        failures_out: Option<PathBuf>,
        /// sacct: the cluster's `scontrol show nodes --oneliner` output (or slurm.conf), which
        /// numbers the nodes of --failures-out as `cluster import --format slurm` does.
        #[arg(long, requires = "failures_out")]
        nodes: Option<PathBuf>,
    },
    /// Check a trace and list its errors (file, line, field, what was expected). Says `ok`
    /// only when every row becomes a job; rows the import skipped are named and exit 1.
    Validate {
        #[command(flatten)]
        input: Input,
    },
    /// Summarise a trace: jobs, GPU-hours, GPUs per job, span, durations, queues.
    Stats {
        #[command(flatten)]
        input: Input,
    },
    /// Fit a Weibull/lognormal failure model to a failure trace; print the fit, its goodness
    /// and the `simulate --failures` spec that reproduces it.
    FitFailures {
        #[command(flatten)]
        input: FailureInput,
        /// infinitehbd (fault_trace.json), titan (gc_full.csv) or alibaba2017 (server_event.csv).
        #[arg(long)]
        format: String,
    },
}

#[derive(Args)]
#[group(skip)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["path", "trace"])))]
pub struct Input {
    /// The trace file (or canonical trace directory); or --trace PATH.
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,
    /// The trace, as simulate and sweep take it (the same as the PATH argument).
    #[arg(long = "trace", value_name = "PATH")]
    trace: Option<PathBuf>,
    /// canonical, itp, philly, openb or sacct (sacct[tz=Europe/Berlin] or sacct[tz=+02:00]
    /// for times written in a local time zone).
    #[arg(long, default_value = "canonical")]
    format: String,
}

/// `trace fit-failures`' failure trace, as an argument or --trace.
#[derive(Args)]
#[group(skip)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["path", "trace"])))]
pub struct FailureInput {
    /// The failure trace file; or --trace PATH.
    #[arg(value_name = "PATH")]
    path: Option<PathBuf>,
    /// The failure trace (the same as the PATH argument).
    #[arg(long = "trace", value_name = "PATH")]
    trace: Option<PathBuf>,
}

impl Input {
    /// The trace's path, given as the argument or as --trace (clap requires one).
    fn path(&self) -> &std::path::Path {
        self.path.as_deref().or(self.trace.as_deref()).expect("clap requires PATH or --trace")
    }
}

pub fn run(command: TraceCommand) -> CliResult {
    match command {
        TraceCommand::Import { input, out, failures_out, nodes } => {
            let trace = super::read_trace(input.path(), &input.format)?;
            if out.extension().is_some_and(|e| e == "csv") {
                let file = File::create(&out).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
                traces::write_trace_jobs_csv(&trace.workload, BufWriter::new(file))?;
            } else {
                traces::write_trace_dir(&trace, &out)?;
            }
            // After the trace, so that --failures-out may name a file of the --out directory.
            if let (Some(failures_out), Some(nodes)) = (failures_out, nodes) {
                write_node_failures(&input, &nodes, &failures_out)?;
            }
            emit(format_args!("wrote {} jobs to {}\n", trace.workload.len(), out.display()))
        }
        TraceCommand::Validate { input } => {
            let checked = traces::check(input.path(), input.format.parse()?);
            let path = input.path().display();
            if !checked.errors.is_empty() {
                for e in &checked.errors {
                    eprintln!("{e}");
                }
                return Err(format!("{path}: {} error(s) shown", checked.errors.len()).into());
            }
            for note in &checked.notes {
                super::print_note(input.path(), note);
            }
            if checked.skipped == 0 {
                return emit(format_args!("{path}: ok\n"));
            }
            // Readable, but not all of it would be replayed: not `ok`, and exit 1 (errors exit 2).
            let plural = |n: usize| if n == 1 { "" } else { "s" };
            emit(format_args!(
                "{path}: {} of {} rows skipped (each named in the notes above); {} job{} to replay\n",
                checked.skipped,
                checked.rows,
                checked.jobs,
                plural(checked.jobs)
            ))?;
            std::process::exit(1)
        }
        TraceCommand::Stats { input } => {
            let trace = super::read_trace(input.path(), &input.format)?;
            emit(traces::TraceStats::of(&trace.workload))?;
            super::leave_for_exit(trace);
            Ok(())
        }
        TraceCommand::FitFailures { input, format } => {
            let path = input.path.as_deref().or(input.trace.as_deref()).expect("clap requires PATH or --trace");
            let trace = traces::failures::load(path, format.parse()?)?;
            emit(traces::failures::fit(&trace))
        }
    }
}

/// `trace import --failures-out`: the sacct dump's node failures as events.csv.
fn write_node_failures(input: &Input, nodes: &std::path::Path, out: &std::path::Path) -> CliResult {
    let traces::Format::Sacct(clock) = input.format.parse::<traces::Format>()? else {
        return Err(format!("--failures-out reads NODE_FAIL jobs of --format sacct, not {}", input.format).into());
    };
    let events = traces::sacct::load_failure_events(input.path(), clock, nodes)?;
    let file = File::create(out).map_err(|e| format!("cannot write {}: {e}", out.display()))?;
    traces::write_events_csv(&events, BufWriter::new(file))?;
    eprintln!("wrote {} node failures to {}", events.len(), out.display());
    Ok(())
}
