//! `schedlab trace import|validate|stats`.

use super::CliResult;
use clap::{Args, Subcommand};
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::PathBuf;

#[derive(Subcommand)]
pub enum TraceCommand {
    /// Convert a trace to the canonical format (traces/FORMAT.md).
    Import {
        #[command(flatten)]
        input: Input,
        /// Output: a jobs.csv file, or a directory (jobs.csv, plus cluster.csv and events.csv
        /// when the trace has them).
        #[arg(long, short)]
        out: PathBuf,
    },
    /// Check a trace and list its errors (file, line, field, what was expected).
    Validate {
        #[command(flatten)]
        input: Input,
    },
    /// Summarise a trace: jobs, GPU-hours, GPUs per job, span, durations, queues.
    Stats {
        #[command(flatten)]
        input: Input,
    },
}

#[derive(Args)]
pub struct Input {
    /// The trace file (or canonical trace directory).
    path: PathBuf,
    /// canonical, itp or philly.
    #[arg(long, default_value = "canonical")]
    format: String,
}

pub fn run(command: TraceCommand) -> CliResult {
    match command {
        TraceCommand::Import { input, out } => {
            let trace = traces::load(&input.path, input.format.parse()?)?;
            let jobs_path = if out.extension().is_some_and(|e| e == "csv") {
                out.clone()
            } else {
                fs::create_dir_all(&out).map_err(|e| format!("cannot create {}: {e}", out.display()))?;
                out.join("jobs.csv")
            };
            let file = File::create(&jobs_path).map_err(|e| format!("cannot write {}: {e}", jobs_path.display()))?;
            traces::write_jobs_csv(&trace.workload, BufWriter::new(file))?;
            println!("wrote {} jobs to {}", trace.workload.len(), jobs_path.display());
            Ok(())
        }
        TraceCommand::Validate { input } => {
            let errors = traces::validate(&input.path, input.format.parse()?);
            if errors.is_empty() {
                println!("{}: ok", input.path.display());
                return Ok(());
            }
            for e in &errors {
                eprintln!("{e}");
            }
            Err(format!("{}: {} error(s) shown", input.path.display(), errors.len()).into())
        }
        TraceCommand::Stats { input } => {
            let trace = traces::load(&input.path, input.format.parse()?)?;
            print!("{}", traces::TraceStats::of(&trace.workload));
            Ok(())
        }
    }
}
