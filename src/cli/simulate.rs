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
    /// Trace to replay: a canonical jobs.csv or trace directory, or a file in --format. Without
    /// it, a built-in synthetic workload runs on a built-in cluster.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Format of --trace: canonical, itp (Microsoft ITP clusterNN.csv) or philly (philly.csv).
    #[arg(long, default_value = "canonical")]
    format: String,
    /// Cluster: a file (cluster.csv) or shorthand NODESxGPUS:TYPE[,...], e.g. 8x8:A100,32x8:V100.
    #[arg(long)]
    cluster: Option<String>,
    /// Policy spec name[key=value,...]; see `schedlab policies`.
    #[arg(long, default_value = "fifo")]
    policy: String,
    /// Run seed: feeds the synthetic workload and the policy's random stream.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Jobs in the built-in synthetic workload (ignored with --trace). Its arrival rate is set
    /// for --load on whichever cluster runs it.
    #[arg(long, default_value_t = builtin::JOBS)]
    jobs: usize,
    /// Offered load of the built-in synthetic workload: arriving GPU-time over cluster capacity.
    #[arg(long, default_value_t = builtin::LOAD)]
    load: f64,
    #[command(flatten)]
    resilience: ResilienceArgs,
    /// Write summary.json and jobs.csv (gpu_health.csv when hardware fails; decisions.csv with
    /// --decisions) into this folder.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Also write the decision log, decisions.csv, into --out.
    #[arg(long)]
    decisions: bool,
    /// Check every invariant after every step (slow: a full recount per step).
    #[arg(long)]
    check_invariants: bool,
}

pub fn run(args: SimulateArgs) -> CliResult {
    let trace = load_trace(&args)?;
    let trace_cluster = trace.as_ref().and_then(|t| t.cluster.clone());
    let cluster = Cluster::new(&choose_cluster(&args, trace_cluster)?)?;
    let (workload, events) = match trace {
        Some(trace) => (trace.workload, trace.events),
        None => (builtin::workload(cluster.gpu_count(), args.jobs, args.load, args.seed)?, Vec::new()),
    };
    let scenario = Scenario::new(cluster, workload).with_events(events)?;
    let mut policy = policies::build(&args.policy)?;
    let config = args.resilience.apply(ControllerConfig {
        seed: args.seed,
        check_invariants: args.check_invariants,
        record_decisions: args.decisions,
        ..ControllerConfig::default()
    })?;
    if args.decisions && args.out.is_none() {
        return Err("--decisions writes decisions.csv into --out DIR; give --out".into());
    }
    let started = Instant::now();
    let result = sim::simulate(scenario, policy.as_mut(), config)?;
    let mut summary = reports::Summary::of(&result);
    summary.wall_s = Some(started.elapsed().as_secs_f64());
    emit(reports::summary_table(&summary))?;
    if let Some(dir) = &args.out {
        write_outputs(dir, &result, &summary, args.decisions)?;
        emit(format_args!("wrote {}\n", dir.display()))?;
    }
    Ok(())
}

/// The trace given with --trace, if any.
fn load_trace(args: &SimulateArgs) -> Result<Option<traces::Trace>, Box<dyn std::error::Error>> {
    let Some(path) = &args.trace else { return Ok(None) };
    let format: traces::Format = args.format.parse()?;
    Ok(Some(traces::load(path, format)?))
}

fn choose_cluster(
    args: &SimulateArgs,
    from_trace: Option<ClusterSpec>,
) -> Result<ClusterSpec, Box<dyn std::error::Error>> {
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

fn write_outputs(dir: &Path, run: &sim::RunResult, summary: &reports::Summary, decisions: bool) -> CliResult {
    fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let create = |name: &str| {
        let path = dir.join(name);
        File::create(&path).map(BufWriter::new).map_err(|e| format!("cannot write {}: {e}", path.display()))
    };
    reports::write_summary_json(summary, create("summary.json")?)?;
    reports::write_jobs_csv(run, create("jobs.csv")?)?;
    if !run.health_series.is_empty() {
        reports::write_gpu_health_csv(run, create("gpu_health.csv")?)?;
    }
    if decisions {
        reports::write_decisions_csv(run, create("decisions.csv")?)?;
    }
    Ok(())
}
