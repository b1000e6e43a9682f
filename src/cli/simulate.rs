//! `schedlab simulate`: one workload, one cluster, one policy, to the end.

use super::resilience::ResilienceArgs;
use super::{CliResult, emit};
use crate::builtin;
use clap::Args;
use sim::{Cluster, ClusterSpec, ControllerConfig, Scenario};
use std::fs::{self, File};
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct SimulateArgs {
    #[command(flatten)]
    run: RunArgs,
    /// Write summary.json, jobs.csv, timeseries.csv and queue_timeseries.csv (tasks.csv when
    /// jobs have several tasks; gpu_health.csv when hardware fails; decisions.csv with
    /// --decisions) into this folder.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write the decision log, decisions.csv, into --out.
    #[arg(long)]
    decisions: bool,
}

/// Everything one run needs, as the command line gives it. `simulate` runs one; commands that
/// run many (sweeps, regression checks) vary the trace, policy and seed of a copy, so a run
/// means the same thing everywhere.
#[derive(Args, Clone, Debug)]
pub struct RunArgs {
    /// Trace to replay: a canonical jobs.csv or trace directory, or a file in --format. Without
    /// it, a built-in synthetic workload runs on a built-in cluster.
    #[arg(long)]
    pub trace: Option<PathBuf>,
    /// Format of --trace: canonical, itp (Microsoft ITP clusterNN.csv), philly (philly.csv) or
    /// openb (Alibaba openb_pod_list_default.csv).
    #[arg(long, default_value = "canonical")]
    pub format: String,
    /// Cluster: a file (cluster.csv) or shorthand NODESxGPUS:TYPE[,...], e.g. 8x8:A100,32x8:V100.
    #[arg(long)]
    pub cluster: Option<String>,
    /// Hardware failures: a model (weibull:node_mtbf_h=H[,shape=K][,gpu_mtbf_h=..]
    /// [,repair_median_h=M][,repair_sigma=S]), drawn for as long as the run lasts; a real
    /// failure trace mapped onto the cluster (infinitehbd:PATH, titan:PATH, alibaba2017:PATH,
    /// each [,scale=X][,past_end=repeat|stop]); or events:PATH. Added to any events.csv of
    /// the trace.
    #[arg(long)]
    pub failures: Option<String>,
    /// Queues with quotas: a queues.csv (traces/FORMAT.md), in place of any queues.csv of the
    /// trace directory. Without either, queue names are only labels.
    #[arg(long)]
    pub queues: Option<PathBuf>,
    /// Datasets on nodes: a datasets.csv (traces/FORMAT.md), in place of any of the trace
    /// directory. Without either, tasks' dataset names are only labels.
    #[arg(long)]
    pub datasets: Option<PathBuf>,
    /// Policy spec name[key=value,...]; see `schedlab policies`.
    #[arg(long, default_value = "fifo")]
    pub policy: String,
    /// Run seed: feeds the synthetic workload, the failure model and the policy's random stream.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Jobs in the built-in synthetic workload (ignored with --trace). Its arrival rate is set
    /// for --load on whichever cluster runs it.
    #[arg(long, default_value_t = builtin::JOBS)]
    pub jobs: usize,
    /// Offered load of the built-in synthetic workload: arriving GPU-time over cluster capacity.
    #[arg(long, default_value_t = builtin::LOAD)]
    pub load: f64,
    #[command(flatten)]
    pub resilience: ResilienceArgs,
    /// Check every invariant after every step (slow: a full recount per step).
    #[arg(long)]
    pub check_invariants: bool,
    /// Width in seconds of the time series' buckets (timeseries.csv, queue_timeseries.csv);
    /// without it, the smallest of 1 min, 2 min, 5 min, ... 2 weeks giving at most 500 buckets
    /// over the submissions.
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub series_bucket_s: Option<u64>,
    /// Stop the run this many days of simulated time after the last submission, reporting the
    /// jobs that have not ended as unfinished with the reason. Failures are drawn for as long
    /// as a run lasts, so a job that can never start would otherwise never let it end.
    #[arg(long, default_value_t = 3650, value_parser = clap::value_parser!(u64).range(1..=100_000))]
    pub horizon_days: u64,
}

pub fn run(args: SimulateArgs) -> CliResult {
    if args.decisions && args.out.is_none() {
        return Err("--decisions writes decisions.csv into --out DIR; give --out".into());
    }
    let keep = Keep { decisions: args.decisions, series: args.out.is_some() };
    let (result, summary) = execute(&args.run, keep)?;
    emit(reports::summary_table(&summary))?;
    if let Some(dir) = &args.out {
        write_outputs(dir, &result, &summary, args.decisions)?;
        emit(format_args!("wrote {}\n", dir.display()))?;
    }
    super::leave_for_exit(result);
    Ok(())
}

/// What a run keeps beyond its summary and job records: only what will be written is paid for.
#[derive(Debug, Clone, Copy)]
pub struct Keep {
    /// The decision log (decisions.csv).
    pub decisions: bool,
    /// The time series (timeseries.csv, queue_timeseries.csv).
    pub series: bool,
}

/// Runs `args` to the end: the run's records and its summary (with its wall time).
pub fn execute(args: &RunArgs, keep: Keep) -> Result<(sim::RunResult, reports::Summary), Box<dyn std::error::Error>> {
    let trace = load_trace(args)?;
    let trace_cluster = trace.as_ref().and_then(|t| t.cluster.clone());
    let cluster = Cluster::new(&choose_cluster(args, trace_cluster)?)?;
    let (workload, mut events, trace_queues, trace_datasets) = match trace {
        Some(trace) => (trace.workload, trace.events, trace.queues, trace.datasets),
        None => {
            let workload = builtin::workload(cluster.gpu_count(), args.jobs, args.load, args.seed)?;
            (workload, Vec::new(), Vec::new(), Vec::new())
        }
    };
    let datasets = match &args.datasets {
        Some(path) => traces::load_datasets_file(path)?,
        None => trace_datasets,
    };
    let queues = match &args.queues {
        Some(path) => traces::load_queues_file(path)?,
        None => trace_queues,
    };
    let mut feed = None;
    if let Some(spec) = &args.failures {
        let spec: traces::FailureSpec = spec.parse()?;
        let start = workload.jobs().first().map_or(sim::SimTime::ZERO, |j| j.submit);
        match spec.resolve(&cluster, start, args.seed)? {
            traces::Failures::Events(fixed) => events.extend(fixed),
            traces::Failures::Feed(f) => feed = Some(f),
        }
    }
    let workload = args.resilience.apply_queue_defaults(workload)?;
    let mut scenario =
        Scenario::new(cluster, workload).with_events(events)?.with_queues(&queues)?.with_datasets(&datasets)?;
    if let Some(feed) = feed {
        scenario = scenario.with_feed(feed);
    }
    let mut policy = policies::build(&args.policy)?;
    let config = args.resilience.apply(ControllerConfig {
        seed: args.seed,
        check_invariants: args.check_invariants,
        record_decisions: keep.decisions,
        record_series: keep.series,
        series_bucket: args.series_bucket_s.map(sim::SimDuration::from_secs),
        horizon: sim::SimDuration::from_secs(args.horizon_days * 86_400),
        ..ControllerConfig::default()
    })?;
    let started = Instant::now();
    let result = sim::simulate(scenario, policy.as_mut(), config)?;
    let mut summary = reports::Summary::of(&result);
    summary.wall_s = Some(started.elapsed().as_secs_f64());
    Ok((result, summary))
}

/// The trace given with --trace, if any.
fn load_trace(args: &RunArgs) -> Result<Option<traces::Trace>, Box<dyn std::error::Error>> {
    let Some(path) = &args.trace else { return Ok(None) };
    Ok(Some(super::load_trace(path, &args.format)?))
}

fn choose_cluster(args: &RunArgs, from_trace: Option<ClusterSpec>) -> Result<ClusterSpec, Box<dyn std::error::Error>> {
    if let Some(text) = &args.cluster {
        let path = Path::new(text);
        return Ok(if path.is_file() {
            traces::load_cluster_file(path)?
        } else {
            traces::parse_cluster_shorthand(text)?
        });
    }
    if let Some(spec) = from_trace {
        return Ok(spec);
    }
    if args.trace.is_some() {
        return Err("this trace does not describe its cluster: give --cluster, e.g. --cluster 40x8:V100".into());
    }
    Ok(traces::parse_cluster_shorthand(builtin::CLUSTER)?)
}

pub(super) fn write_outputs(
    dir: &Path,
    run: &sim::RunResult,
    summary: &reports::Summary,
    decisions: bool,
) -> CliResult {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let create = |name: &str| {
        let path = dir.join(name);
        File::create(&path).map(BufWriter::new).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    reports::write_summary_json(summary, create("summary.json")?)?;
    reports::write_jobs_csv(run, create("jobs.csv")?)?;
    reports::write_timeseries_csv(run, create("timeseries.csv")?)?;
    reports::fairness::write_queue_metrics_csv(run, create("queue_metrics.csv")?)?;
    reports::write_queue_timeseries_csv(run, create("queue_timeseries.csv")?)?;
    if !run.tasks.is_empty() {
        reports::write_tasks_csv(run, create("tasks.csv")?)?;
    }
    if !run.health_series.is_empty() {
        reports::write_gpu_health_csv(run, create("gpu_health.csv")?)?;
    }
    if decisions {
        reports::write_decisions_csv(run, create("decisions.csv")?)?;
    }
    Ok(())
}
