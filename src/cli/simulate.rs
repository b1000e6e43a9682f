//! `schedlab simulate`: one workload, one cluster, one policy, to the end.

use super::{CliResult, emit};
use clap::Args;
use run::{Keep, RunSpec};
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    run: RunSpec,
    /// Write summary.json, jobs.csv, timeseries.csv and queue_timeseries.csv (tasks.csv when
    /// jobs have several tasks; gpu_health.csv when hardware fails; decisions.csv with
    /// --decisions) into this folder. A folder reused for another run keeps only the new run's
    /// files (the earlier run's others and its report.html are removed); one holding files no
    /// run writes is refused unless --force.
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Write into an --out folder that holds files no run writes (they are left as they are),
    /// and a time series of more than 100,000 buckets (--series-bucket-s).
    #[arg(long)]
    force: bool,
    /// Also write the decision log, decisions.csv, into --out.
    #[arg(long)]
    decisions: bool,
    /// Print the summary as one JSON object on stdout (summary.json's fields, and
    /// `starts_vs_recorded` when the trace records starts) instead of the table.
    #[arg(long)]
    json: bool,
    /// Stream the run: jobs are read from the trace (canonical, itp or philly; or drawn, for
    /// the built-in workload) as simulated time reaches them, and each job's rows are written
    /// to --out as it and every job before it have ended, so memory follows the jobs in the
    /// system, not the trace. The same results and files as without. A trace must be in
    /// submission order (or give --sort); its cluster, queues and datasets come from flags.
    #[arg(long)]
    stream: bool,
    /// With --stream: sort a trace that is not in submission order first (about 40 bytes a
    /// job, in memory), rather than refusing it.
    #[arg(long, requires = "stream")]
    sort: bool,
}

/// Runs one simulation; `typed` says which flags the user typed (rather than left default).
pub fn run(args: SimulateArgs, typed: &dyn Fn(&str) -> bool) -> CliResult {
    super::refuse_synthetic_flags(args.run.trace.is_some(), typed)?;
    if args.decisions && args.out.is_none() {
        return Err("--decisions writes decisions.csv into --out DIR; give --out".into());
    }
    if let Some(dir) = &args.out {
        run::check_run_folder(dir, run::Spelling::Cli, args.force)?;
    }
    let spec = RunSpec { out: args.out, decisions: args.decisions, ..args.run };
    if let (true, Some(reason)) = (typed("seed"), spec.idle_seed_reason()) {
        eprintln!(
            "warning: --seed {} changes nothing here unless the policy draws random numbers: {reason}",
            spec.seed
        );
    }
    // The time series is integrated only when it will be written.
    let keep = Keep { decisions: spec.decisions, series: spec.out.is_some() };
    let mut runner = super::runner().forced(args.force);
    if std::io::stderr().is_terminal() {
        runner = runner.with_progress(progress_bar());
    }
    if args.stream {
        let order = if args.sort { traces::Order::Sort } else { traces::Order::Sorted };
        return run_streamed(&runner, &spec, keep, order, args.json);
    }
    let outcome = runner.run(&spec, keep)?;
    if args.json {
        emit(summary_json(&outcome.summary, outcome.vs_recorded.as_ref())?)?;
    } else {
        emit(reports::summary_table(&outcome.summary))?;
        if let Some(vs) = &outcome.vs_recorded {
            emit(format_args!("{:<42} {}\n", "starts vs the trace's recorded starts", vs.line()))?;
        }
        say_set_aside(&outcome.result.stats)?;
    }
    if let Some(dir) = &spec.out {
        outcome.write(dir, spec.decisions)?;
        // With --json, stdout is the JSON object alone.
        if args.json {
            eprintln!("wrote {}", dir.display());
        } else {
            emit(format_args!("wrote {}\n", dir.display()))?;
        }
    }
    super::leave_for_exit(outcome);
    Ok(())
}

/// The jobs set aside, when there were any: their rows are out of job order.
fn say_set_aside(stats: &sim::RunStats) -> CliResult {
    if stats.jobs_set_aside > 0 {
        let aside = stats.jobs_set_aside;
        emit(format_args!("{:<43}{aside} (their jobs.csv rows come when they end)\n", "jobs set aside"))?;
    }
    Ok(())
}

/// `simulate --stream`: the run streamed, its record files written as it goes, the rest after.
fn run_streamed(runner: &run::Runner, spec: &RunSpec, keep: Keep, order: traces::Order, json: bool) -> CliResult {
    let setup = runner.streamed_setup(spec)?;
    let mut policy = spec.build_policy(runner.registry())?;
    let summary = reports::SummaryBuilder::with_queue_metrics(setup.queues().iter().map(|(_, q)| q));
    let files = match &spec.out {
        Some(dir) => {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
            let created = reports::RecordFiles::create(dir, policy.name(), spec.decisions);
            Some(created.map_err(|e| format!("cannot write into {}: {e}", dir.display()))?)
        }
        None => None,
    };
    let mut sink = run::Tee { summary, files };
    let started = std::time::Instant::now();
    let end = runner.run_streamed(&setup, policy.as_mut(), keep, order, &mut sink)?;
    let (mut summary, shares) = sink.summary.finish_with_queues(&end);
    summary.wall_s = Some(started.elapsed().as_secs_f64());
    if json {
        emit(summary_json(&summary, None)?)?;
    } else {
        emit(reports::summary_table(&summary))?;
        let held = end.stats.peak_jobs_held;
        emit(format_args!(
            "{:<43}{held} of {} ({:.2} %)\n",
            "jobs held at most",
            summary.jobs,
            percent(held, summary.jobs)
        ))?;
        say_set_aside(&end.stats)?;
    }
    if let (Some(dir), Some(files)) = (&spec.out, sink.files) {
        files.finish().map_err(|e| format!("cannot write into {}: {e}", dir.display()))?;
        run::write_streamed_rest(dir, &summary, &end, &shares)?;
        if json {
            eprintln!("wrote {}", dir.display());
        } else {
            emit(format_args!("wrote {}\n", dir.display()))?;
        }
    }
    Ok(())
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 { 0.0 } else { part as f64 * 100.0 / whole as f64 }
}

/// `simulate --json`: summary.json's object, with `starts_vs_recorded` (the table's
/// "starts vs the trace's recorded starts" line) when the trace records starts.
fn summary_json(
    summary: &reports::Summary,
    vs_recorded: Option<&reports::recorded::StartDeviations>,
) -> Result<String, serde_json::Error> {
    let mut value = serde_json::to_value(summary)?;
    if let (Some(vs), Some(object)) = (vs_recorded, value.as_object_mut()) {
        object.insert("starts_vs_recorded".into(), serde_json::to_value(vs)?);
    }
    let mut text = serde_json::to_string_pretty(&value)?;
    text.push('\n');
    Ok(text)
}

/// A bar on stderr for a run long enough to report before its end (a million jobs take about
/// a second): jobs arrived of the workload's; cleared when the run ends.
fn progress_bar() -> impl Fn(sim::RunProgress) + Send + Sync {
    let style = indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} jobs arrived ({elapsed})")
        .expect("a valid template");
    let bar = indicatif::ProgressBar::new(0).with_style(style);
    move |p: sim::RunProgress| {
        bar.set_length(p.jobs as u64);
        bar.set_position(p.arrived as u64);
        if p.arrived == p.jobs {
            bar.finish_and_clear();
        }
    }
}
