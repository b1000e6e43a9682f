//! `schedlab compare-starts`: one run, as `simulate` runs it, with each job's start set against
//! the start its trace recorded (a Slurm accounting dump): the distribution of the deviations,
//! by sign, the jobs furthest off, and optionally every job as CSV. How faithful a replay is on
//! the user's own cluster. The figures are `reports::recorded`'s, which `simulate`'s summary
//! line and tests/slurm_fidelity.rs also use.

use super::{CliResult, emit};
use clap::Args;
use reports::recorded::{StartDistribution, StartRow, is_array_task, start_rows, worst, write_start_rows_csv};
use run::{Keep, RunSpec};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct CompareStartsArgs {
    #[command(flatten)]
    run: RunSpec,
    /// List the N jobs whose replayed start is furthest from the recorded one.
    #[arg(long, value_name = "N", default_value_t = 10)]
    worst: usize,
    /// Also write every compared job, by job name, into this CSV file: job, recorded_start_s,
    /// replay_start_s, deviation_s (whole seconds of the trace's clock).
    #[arg(long, value_name = "PATH")]
    csv: Option<PathBuf>,
    /// Leave out array tasks (a JobID such as 41_3): Slurm may hold them back for reasons of
    /// its own, which no policy replays.
    #[arg(long)]
    exclude_arrays: bool,
    /// Print one JSON object on stdout (the distribution and the worst jobs) instead of the tables.
    #[arg(long)]
    json: bool,
}

/// What `--json` prints.
#[derive(serde::Serialize)]
struct Comparison<'a> {
    trace: &'a Path,
    format: String,
    policy: &'a str,
    /// Array tasks left out by --exclude-arrays (0 without it).
    array_tasks_left_out: usize,
    distribution: &'a StartDistribution,
    worst: Vec<&'a StartRow>,
}

/// Runs the replay and prints how its starts compare with the recorded ones; `typed` says
/// which flags the user typed.
pub fn run(args: CompareStartsArgs, typed: &dyn Fn(&str) -> bool) -> CliResult {
    super::refuse_synthetic_flags(args.run.trace.is_some(), typed)?;
    let format = args.run.format;
    let Some(path) = args.run.trace.clone() else {
        return Err(format!(
            "compare-starts needs --trace: it compares a replay with the starts its trace recorded, and \
             the built-in synthetic workload records none. Formats that record when each job started: {}",
            formats_with_starts()
        )
        .into());
    };
    if !format.records_starts() {
        let imported = if format == traces::Format::Canonical {
            " (a trace that `trace import` wrote from a sacct dump does not keep them: give the dump itself)"
        } else {
            ""
        };
        return Err(format!(
            "{}: read with --format {format}, it records no job starts to compare the replay with. \
             Formats that record when each job started: {}{imported}",
            path.display(),
            formats_with_starts()
        )
        .into());
    }
    let trace = traces::load(&path, format)?;
    for note in &trace.notes {
        super::print_note(&path, note);
    }
    if trace.recorded_starts.is_empty() {
        return Err(format!(
            "{}: none of its jobs started (each was cancelled before it ran), so there are no recorded \
             starts to compare with",
            path.display()
        )
        .into());
    }
    let recorded = trace.recorded_starts.clone();
    let outcome = super::runner().run_trace(&args.run, trace, Keep::SUMMARY)?;
    let mut rows = start_rows(&outcome.result, &recorded);
    let started_in_both = rows.len();
    if args.exclude_arrays {
        rows.retain(|row| !is_array_task(&row.job));
    }
    let left_out = started_in_both - rows.len();
    let Some(distribution) = StartDistribution::of(rows.iter().map(|row| &row.deviation_s)) else {
        let why = if started_in_both == 0 {
            format!("none of the {} jobs with a recorded start started in the replay", recorded.len())
        } else {
            format!("all {started_in_both} jobs that started in both are array tasks, left out by --exclude-arrays")
        };
        return Err(format!("{}: nothing to compare: {why}", path.display()).into());
    };
    if let Some(csv) = &args.csv {
        let file = std::fs::File::create(csv).map_err(|e| format!("{}: {e}", csv.display()))?;
        write_start_rows_csv(&rows, std::io::BufWriter::new(file)).map_err(|e| format!("{}: {e}", csv.display()))?;
    }
    let worst = worst(&rows, args.worst);
    if args.json {
        let comparison = Comparison {
            trace: &path,
            format: format.to_string(),
            policy: &outcome.summary.policy,
            array_tasks_left_out: left_out,
            distribution: &distribution,
            worst,
        };
        let mut text = serde_json::to_string_pretty(&comparison)?;
        text.push('\n');
        emit(text)?;
    } else {
        let utc = matches!(format, traces::Format::Sacct(clock) if clock != traces::sacct::SacctClock::Naive);
        emit(tables(&path, &outcome.summary.policy, left_out, &distribution, &worst, utc))?;
    }
    if let Some(csv) = &args.csv {
        // With --json, stdout is the JSON object alone.
        let wrote = format!("wrote {} ({} jobs)", csv.display(), rows.len());
        if args.json { eprintln!("{wrote}") } else { emit(format_args!("{wrote}\n"))? }
    }
    super::leave_for_exit(outcome);
    Ok(())
}

/// The formats whose traces record starts, as `--format` names them.
fn formats_with_starts() -> String {
    let names: Vec<String> = traces::Format::ALL
        .into_iter()
        .filter(|f| f.records_starts())
        .map(|f| match f {
            traces::Format::Sacct(_) => "--format sacct (Slurm accounting, `sacct --parsable2`)".to_owned(),
            other => format!("--format {}", other.name()),
        })
        .collect();
    names.join(", ")
}

/// The text output: what was compared, the distribution, by sign, the worst jobs.
fn tables(path: &Path, policy: &str, left_out: usize, d: &StartDistribution, worst: &[&StartRow], utc: bool) -> String {
    let mut out = String::new();
    let arrays = if left_out > 0 { format!(" ({left_out} array tasks left out)") } else { String::new() };
    let _ = writeln!(out, "starts replayed under {policy}");
    let _ = writeln!(out, "vs the starts recorded in {}{arrays}", path.display());
    let _ = writeln!(out, "deviation = replayed start - recorded start, whole seconds; percentiles of |deviation|");
    out.push('\n');
    let header = ["jobs", "exact", "within 5 s", "within 30 s", "p50", "p90", "p99", "max", "latest", "earliest"]
        .map(String::from);
    let values = [d.jobs, d.exact, d.within_5s, d.within_30s].map(|n| n.to_string());
    let seconds = [d.p50_s, d.p90_s, d.p99_s, d.max_s, d.latest_s, d.earliest_s].map(|s| format!("{s} s"));
    let values: Vec<String> = values.into_iter().chain(seconds).collect();
    out.push_str(&aligned(&[header.to_vec(), values], &[]));
    out.push('\n');
    let share = |n: usize| format!("{n} ({:.1} %)", 100.0 * n as f64 / d.jobs as f64);
    let _ = writeln!(
        out,
        "by sign: {} earlier, {} in the same second, {} later",
        share(d.earlier),
        share(d.same),
        share(d.later)
    );
    if worst.is_empty() {
        return out;
    }
    out.push('\n');
    let _ = writeln!(out, "the {} largest |deviation|:", worst.len());
    let zone = if utc { " (UTC)" } else { "" };
    let mut rows = vec![vec![
        "job".to_owned(),
        format!("recorded start{zone}"),
        format!("replayed start{zone}"),
        "deviation".to_owned(),
        "GPUs".to_owned(),
        "queue".to_owned(),
    ]];
    for row in worst {
        rows.push(vec![
            row.job.clone(),
            datetime(row.recorded_start_s),
            datetime(row.replay_start_s),
            format!("{:+} s", row.deviation_s),
            row.gpus.to_string(),
            row.queue.clone().unwrap_or_else(|| "-".to_owned()),
        ]);
    }
    out.push_str(&aligned(&rows, &[0, 1, 2, 5]));
    out
}

/// Whole seconds of the trace's clock as sacct writes a time, `YYYY-MM-DDTHH:MM:SS`.
fn datetime(seconds: i64) -> String {
    match u64::try_from(seconds) {
        Ok(s) => traces::timeparse::format_datetime_ms(s * 1000).replacen(' ', "T", 1),
        Err(_) => format!("{seconds} s"),
    }
}

/// Rows as columns two spaces apart: right-aligned, except the columns in `left`.
fn aligned(rows: &[Vec<String>], left: &[usize]) -> String {
    let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
    let widths: Vec<usize> = (0..columns)
        .map(|c| rows.iter().filter_map(|r| r.get(c)).map(|v| v.chars().count()).max().unwrap_or(0))
        .collect();
    let mut out = String::new();
    for row in rows {
        let cells: Vec<String> = row
            .iter()
            .zip(&widths)
            .enumerate()
            .map(|(c, (v, &w))| if left.contains(&c) { format!("{v:<w$}") } else { format!("{v:>w$}") })
            .collect();
        out.push_str(cells.join("  ").trim_end());
        out.push('\n');
    }
    out
}
