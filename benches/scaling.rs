//! How the simulator scales with the number of jobs: fifo on the built-in synthetic workload at
//! 110 % offered load, from 10k jobs on 100 GPUs to 1M jobs on 10,000 GPUs (the cluster grows
//! with the jobs, so queues stay alike and the cost per job should grow only as log n), in
//! memory (the workload drawn whole first) and streamed (`simulate --stream`: jobs drawn as
//! simulated time reaches them, records handed on as they end).
//! `SCHEDLAB_BENCH_10M=1` adds 10M jobs on 100,000 GPUs (about a minute and several GB).
//!
//! `cargo bench --bench scaling` prints the time per run (divan) and then, for each size, the
//! peak resident memory of one more run in a process of its own and its bytes per job (Linux:
//! the VmHWM of /proc/self/status; elsewhere it says so): in memory at 110 %, streamed at
//! 110 % (the same run streamed: a backlog that grows with the trace), and streamed at 90 %
//! (a stable system: what it holds follows the jobs in the system, here the cluster's size).
//! Each run is the simulation and its summary, as `schedlab simulate` without --out does them;
//! docs/scaling.md has the whole process, files written, against jobs and against GPUs.

use sim::{Cluster, ControllerConfig, Workload};

/// The runs whose peak memory is printed, by the name a child process is given.
const MEMORY_RUNS: [&str; 3] = ["in memory at 110 %", "streamed at 110 %", "streamed at 90 %"];

fn main() {
    if let Some(jobs) = std::env::var("SCHEDLAB_SCALING_ONE").ok().and_then(|v| v.parse().ok()) {
        let which = std::env::var("SCHEDLAB_SCALING_RUN").unwrap_or_default();
        return report_peak_memory(jobs, &which);
    }
    divan::main();
    // Each size's memory in a fresh process: memory freed by earlier runs stays resident in
    // this one, and would be counted again.
    for which in MEMORY_RUNS {
        for jobs in sizes() {
            let me = std::env::current_exe().expect("the bench knows its own path");
            let status = std::process::Command::new(me)
                .env("SCHEDLAB_SCALING_ONE", jobs.to_string())
                .env("SCHEDLAB_SCALING_RUN", which)
                .status();
            if !status.as_ref().is_ok_and(|s| s.success()) {
                eprintln!("{jobs} jobs, {which}: the memory run failed ({status:?})");
            }
        }
    }
}

/// Jobs per run; each runs on jobs / 100 GPUs.
fn sizes() -> Vec<usize> {
    let mut sizes = vec![10_000, 100_000, 1_000_000];
    if std::env::var_os("SCHEDLAB_BENCH_10M").is_some() {
        sizes.push(10_000_000);
    }
    sizes
}

fn scenario(jobs: usize) -> (Cluster, Workload) {
    let nodes = (jobs / 800).max(1);
    let spec = traces::parse_cluster_shorthand(&format!("{nodes}x8:V100")).expect("valid shorthand");
    let cluster = Cluster::new(&spec).expect("valid cluster");
    let workload = traces::SynthConfig::for_load(jobs, cluster.gpu_count(), 1.1, 0).generate().expect("synthetic");
    (cluster, workload)
}

fn run(cluster: Cluster, workload: Workload) -> reports::Summary {
    let mut policy = policies::build("fifo").expect("valid policy");
    let config = ControllerConfig { check_invariants: false, ..ControllerConfig::default() };
    let result = sim::simulate(sim::Scenario::new(cluster, workload), policy.as_mut(), config).expect("runs");
    reports::Summary::of(&result)
}

/// `schedlab simulate --stream` without --out, as a library call: the workload drawn job by
/// job as the run goes, each record summed up as its job ends.
fn run_streamed(jobs: usize, load: f64) -> reports::Summary {
    let nodes = (jobs / 800).max(1);
    let flags = ["--jobs", &jobs.to_string(), "--cluster", &format!("{nodes}x8:V100"), "--load", &load.to_string()];
    let spec = schedlab::RunSpec::from_flags(flags).expect("valid flags");
    let runner = schedlab::Runner::new(schedlab::Registry::builtin());
    let setup = runner.streamed_setup(&spec).expect("a streamed setup");
    let mut policy = spec.build_policy(runner.registry()).expect("valid policy");
    let mut summary = reports::SummaryBuilder::new(setup.queues().iter().map(|(_, q)| q));
    let keep = schedlab::Keep { decisions: false, series: false };
    let end = runner.run_streamed(&setup, policy.as_mut(), keep, traces::Order::Sorted, &mut summary).expect("runs");
    summary.finish(&end)
}

#[divan::bench(args = sizes(), sample_count = 3, sample_size = 1)]
fn fifo_at_110_percent(bencher: divan::Bencher, jobs: usize) {
    bencher.with_inputs(|| scenario(jobs)).bench_values(|(c, w)| run(c, w));
}

/// The same runs streamed; the workload's drawing is in the time (it happens as the run goes).
#[divan::bench(args = sizes(), sample_count = 3, sample_size = 1)]
fn fifo_streamed_at_110_percent(jobs: usize) -> reports::Summary {
    run_streamed(jobs, 1.1)
}

/// One run (`which`, of [`MEMORY_RUNS`]) in this process, its peak resident memory printed
/// (the workload's generation included: it is part of what `schedlab simulate` holds).
fn report_peak_memory(jobs: usize, which: &str) {
    let summary = match which {
        "streamed at 110 %" => run_streamed(jobs, 1.1),
        "streamed at 90 %" => run_streamed(jobs, 0.9),
        _ => {
            let (cluster, workload) = scenario(jobs);
            run(cluster, workload)
        }
    };
    let Some(peak_kib) = peak_rss_kib() else {
        return eprintln!("{jobs} jobs, {which}: peak memory not measured (needs Linux's /proc/self/status)");
    };
    eprintln!(
        "{jobs} jobs, {which}: peak RSS {:.0} MiB, {:.0} bytes per job ({} events)",
        peak_kib as f64 / 1024.0,
        peak_kib as f64 * 1024.0 / jobs as f64,
        summary.events
    );
}

/// VmHWM of /proc/self/status, KiB.
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
