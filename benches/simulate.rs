//! Throughput and scaling of the whole simulator (engine + controller + policy).
//!
//! `cargo bench --bench simulate` measures:
//! - `engine_events`: events per second on the built-in synthetic workload (20k jobs, 128 GPUs);
//! - `philly_full`: the full philly.csv (82,247 jobs) on the Philly cluster of the official
//!   machine list (2,490 GPUs, about 15 % utilised: little queueing) under each policy;
//! - `philly_congested`: the same jobs on 480 GPUs (about 78 % utilised, long queues);
//! - `philly_research_full`, `philly_research_congested`: the same two runs under the
//!   research policies (tiresias, its Gittins mode, themis, priority, weighted-score), kept
//!   apart so that the groups above stay comparable with earlier measurements;
//! - `philly_with_failures`: philly.csv on the Philly cluster with the InfiniteHBD node-fault
//!   history mapped onto it (about 240 node failures), 30 min checkpoints, 2 min restarts;
//! - `philly_vc_queues`: philly.csv with its virtual clusters as queues (philly_vc.csv quotas,
//!   8 GPUs per quota node, borrowing on; the 4 VCs without a quota uncapped) on the Philly
//!   cluster, under the queue-aware and research policies;
//! - `synthetic_1m`: one million synthetic jobs on 10,000 GPUs at 90 % offered load;
//! - `synthetic_1m_overload`: the same at 110 %, where queues grow to tens of thousands;
//! - `synthetic_1m_overload_others`: the same run under every other built-in policy (the
//!   research and queue policies), whose per-decision and per-round costs grow with the
//!   queue if they are not incremental (issue 13).
//!
//! Philly needs ../shared/traces beside the checkout; without it that group prints SKIPPED.
//! Peak memory is not something divan measures: docs/performance.md gives the command (GNU time) for it.

use sim::{Cluster, ControllerConfig, Workload};
use std::path::PathBuf;
use std::sync::OnceLock;

fn main() {
    divan::main();
}

const POLICIES: &[&str] = &["fifo", "fifo[skip=true]", "sjf", "srtf", "easy-backfill", "fifo[placement=spread]"];

/// The research policies of issue 4, benched on philly.csv only.
const RESEARCH: &[&str] = &["tiresias", "tiresias[mode=gittins]", "themis", "priority", "weighted-score"];

/// The Philly cluster per the official machine list: 321 x 2 GPUs (12 GB) and 231 x 8 (24 GB).
const PHILLY_CLUSTER: &str = "321x2:12GB,231x8:24GB";

fn cluster(shorthand: &str) -> Cluster {
    Cluster::new(&traces::parse_cluster_shorthand(shorthand).expect("valid shorthand")).expect("valid cluster")
}

fn synthetic(jobs: usize, gpus: u32, load: f64) -> Workload {
    traces::SynthConfig::for_load(jobs, gpus, load, 0).generate().expect("synthetic workload")
}

fn config() -> ControllerConfig {
    ControllerConfig { check_invariants: false, ..ControllerConfig::default() }
}

fn run(spec: &str, cluster: Cluster, workload: Workload) -> sim::RunResult {
    let mut policy = policies::build(spec).expect("valid policy");
    sim::simulate(sim::Scenario::new(cluster, workload), policy.as_mut(), config()).expect("runs")
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn engine_events(bencher: divan::Bencher) {
    let (c, w) = (cluster("16x8:V100"), synthetic(20_000, 128, 0.9));
    let events = run("fifo", c.clone(), w.clone()).stats.events;
    bencher
        .counter(divan::counter::ItemsCount::new(events))
        .with_inputs(|| (c.clone(), w.clone()))
        .bench_values(|(c, w)| run("fifo", c, w));
}

fn philly() -> Option<&'static Workload> {
    static PHILLY: OnceLock<Option<Workload>> = OnceLock::new();
    PHILLY
        .get_or_init(|| {
            let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/philly-pollux/philly.csv");
            if !path.is_file() {
                eprintln!("SKIPPED: {} not found; philly benches measure nothing", path.display());
                return None;
            }
            Some(traces::load(&path, traces::Format::Philly).expect("philly.csv loads").workload)
        })
        .as_ref()
}

fn bench_philly(bencher: divan::Bencher, spec: &str, shorthand: &str) {
    let Some(workload) = philly() else { return };
    let c = cluster(shorthand);
    bencher.with_inputs(|| (c.clone(), workload.clone())).bench_values(|(c, w)| run(spec, c, w));
}

/// The queue-aware and research policies the VC-queue bench runs (fifo as the baseline).
const QUEUE_POLICIES: &[&str] = &[
    "fifo",
    "fair-share",
    "drf",
    "critical-path",
    "tiresias",
    "tiresias[mode=gittins]",
    "themis",
    "priority",
    "weighted-score",
];

/// Philly's VCs as queues: the quotas of philly_vc.csv, and uncapped queues for the VCs the
/// trace names without one. `None` when the shared traces are absent.
fn philly_queues() -> Option<Vec<sim::QueueSpec>> {
    let workload = philly()?;
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/philly-pollux/philly_vc.csv");
    let file = std::fs::File::open(&path).ok()?;
    let mut queues = traces::read_philly_vc_csv(file, "philly_vc.csv", 8, true).expect("philly_vc.csv loads");
    let named: std::collections::BTreeSet<&str> = workload.jobs().iter().filter_map(|j| j.queue.as_deref()).collect();
    for name in named {
        if !queues.iter().any(|q| q.name == name) {
            queues.push(sim::QueueSpec::new(name));
        }
    }
    Some(queues)
}

#[divan::bench(args = QUEUE_POLICIES, sample_count = 5, sample_size = 1)]
fn philly_vc_queues(bencher: divan::Bencher, spec: &str) {
    let (Some(workload), Some(queues)) = (philly(), philly_queues()) else { return };
    let c = cluster(PHILLY_CLUSTER);
    bencher.with_inputs(|| (c.clone(), workload.clone())).bench_values(|(c, w)| {
        let mut policy = policies::build(spec).expect("valid policy");
        let scenario = sim::Scenario::new(c, w).with_queues(&queues).expect("every VC has a queue");
        sim::simulate(scenario, policy.as_mut(), config()).expect("runs")
    });
}

#[divan::bench(args = POLICIES, sample_count = 5, sample_size = 1)]
fn philly_full(bencher: divan::Bencher, spec: &str) {
    bench_philly(bencher, spec, PHILLY_CLUSTER);
}

#[divan::bench(args = POLICIES, sample_count = 5, sample_size = 1)]
fn philly_congested(bencher: divan::Bencher, spec: &str) {
    bench_philly(bencher, spec, "60x8:V100");
}

#[divan::bench(args = RESEARCH, sample_count = 5, sample_size = 1)]
fn philly_research_full(bencher: divan::Bencher, spec: &str) {
    bench_philly(bencher, spec, PHILLY_CLUSTER);
}

#[divan::bench(args = RESEARCH, sample_count = 5, sample_size = 1)]
fn philly_research_congested(bencher: divan::Bencher, spec: &str) {
    bench_philly(bencher, spec, "60x8:V100");
}

#[divan::bench(args = POLICIES, sample_count = 5, sample_size = 1)]
fn philly_with_failures(bencher: divan::Bencher, spec: &str) {
    let Some(workload) = philly() else { return };
    let c = cluster(PHILLY_CLUSTER);
    let faults =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/infinitehbd-gpu-node-faults/fault_trace.json");
    let failures: traces::FailureSpec = format!("infinitehbd:{}", faults.display()).parse().expect("valid spec");
    let first = workload.jobs()[0].submit;
    let config = ControllerConfig {
        checkpoint: sim::SimDuration::from_secs(1800),
        restart_overhead: sim::SimDuration::from_secs(120),
        ..config()
    };
    bencher
        .with_inputs(|| {
            let Ok(traces::Failures::Feed(feed)) = failures.resolve(&c, first, 0) else { panic!("a mapped history") };
            sim::Scenario::new(c.clone(), workload.clone()).with_feed(feed)
        })
        .bench_values(|scenario| {
            let mut policy = policies::build(spec).expect("valid policy");
            sim::simulate(scenario, policy.as_mut(), config.clone()).expect("runs")
        });
}

fn bench_1m(bencher: divan::Bencher, spec: &str, workload: &Workload) {
    let c = cluster("1250x8:V100");
    bencher.with_inputs(|| (c.clone(), workload.clone())).bench_values(|(c, w)| run(spec, c, w));
}

#[divan::bench(args = POLICIES, sample_count = 2, sample_size = 1)]
fn synthetic_1m(bencher: divan::Bencher, spec: &str) {
    static WORKLOAD: OnceLock<Workload> = OnceLock::new();
    bench_1m(bencher, spec, WORKLOAD.get_or_init(|| synthetic(1_000_000, 10_000, 0.9)));
}

#[divan::bench(args = POLICIES, sample_count = 2, sample_size = 1)]
fn synthetic_1m_overload(bencher: divan::Bencher, spec: &str) {
    static WORKLOAD: OnceLock<Workload> = OnceLock::new();
    bench_1m(bencher, spec, WORKLOAD.get_or_init(|| synthetic(1_000_000, 10_000, 1.1)));
}

/// Every built-in policy not in `POLICIES`, for `synthetic_1m_overload_others`.
const OTHERS: &[&str] = &[
    "tiresias",
    "tiresias[mode=gittins]",
    "themis",
    "priority",
    "weighted-score",
    "fair-share",
    "drf",
    "critical-path",
];

#[divan::bench(args = OTHERS, sample_count = 2, sample_size = 1)]
fn synthetic_1m_overload_others(bencher: divan::Bencher, spec: &str) {
    static WORKLOAD: OnceLock<Workload> = OnceLock::new();
    bench_1m(bencher, spec, WORKLOAD.get_or_init(|| synthetic(1_000_000, 10_000, 1.1)));
}

/// 200 node failures (1 h repairs), one every 10 minutes from the start, on nodes below 1,250.
fn fixed_failures() -> Vec<sim::ClusterEvent> {
    (0..200u64)
        .map(|i| sim::ClusterEvent::NodeFail {
            time: sim::SimTime(i * 600_000 + 7_777),
            node: sim::NodeId((i * 37 % 1250) as u32),
            repair: Some(sim::SimDuration::from_secs(3600)),
        })
        .collect()
}

/// Implicit heartbeats cost O(failures): the same jobs and failures on 10,000 and on 20,000
/// GPUs apply the same number of events (printed), and take about the same time.
#[divan::bench(args = ["1250x8:V100", "2500x8:V100"], sample_count = 3, sample_size = 1)]
fn heartbeats_scale_with_failures_not_nodes(bencher: divan::Bencher, shorthand: &str) {
    static WORKLOAD: OnceLock<Workload> = OnceLock::new();
    let workload = WORKLOAD.get_or_init(|| synthetic(100_000, 10_000, 0.9));
    let c = cluster(shorthand);
    let scenario =
        || sim::Scenario::new(c.clone(), workload.clone()).with_events(fixed_failures()).expect("valid events");
    let mut policy = policies::build("fifo").expect("valid policy");
    let events = sim::simulate(scenario(), policy.as_mut(), config()).expect("runs").stats.events;
    eprintln!("{shorthand}: {events} events with 200 node failures");
    bencher.counter(divan::counter::ItemsCount::new(events)).with_inputs(scenario).bench_values(|s| {
        let mut policy = policies::build("fifo").expect("valid policy");
        sim::simulate(s, policy.as_mut(), config()).expect("runs")
    });
}
