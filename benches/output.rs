//! Output writing throughput, in MB/s of CSV text written: a run's per-job files from its
//! records already in memory, into a buffer (so the disk is not measured, and the formatting
//! is). Issue 36 asks for 1 GB/s.
//!
//! `cargo bench --bench output` measures, for each of two runs under fifo with the decision
//! log kept:
//! - `jobs_csv`: jobs.csv (one row per job, 22 columns);
//! - `decisions_csv`: decisions.csv (one row per start and completion, 9 columns);
//!
//! The runs: `itp_*`, the Microsoft ITP cluster04.csv (15,801 jobs) on 40x8 GPUs (the issue's
//! 12.7k-job ITP trace on 320 GPUs has this shape; it needs ../shared/traces beside the
//! checkout, and prints SKIPPED without it); `synthetic_*`, 100,000 synthetic jobs on 128x8
//! GPUs at 90 % offered load.

use divan::counter::BytesCount;
use sim::RunResult;
use std::io::Write;
use std::path::PathBuf;
use std::sync::OnceLock;

fn main() {
    divan::main();
}

fn run(cluster: &str, workload: sim::Workload) -> RunResult {
    let cluster =
        sim::Cluster::new(&traces::parse_cluster_shorthand(cluster).expect("valid shorthand")).expect("valid cluster");
    let config = sim::ControllerConfig { check_invariants: false, record_decisions: true, ..Default::default() };
    let mut policy = policies::build("fifo").expect("fifo");
    sim::simulate(sim::Scenario::new(cluster, workload), policy.as_mut(), config).expect("runs")
}

fn itp() -> Option<&'static RunResult> {
    static RUN: OnceLock<Option<RunResult>> = OnceLock::new();
    RUN.get_or_init(|| {
        let path =
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/traces/microsoft-itp-elasticflow/cluster04.csv");
        if !path.is_file() {
            eprintln!("SKIPPED: {} not found; the itp benches measure nothing", path.display());
            return None;
        }
        let workload = traces::load(&path, traces::Format::Itp).expect("cluster04.csv loads").workload;
        Some(run("40x8:V100", workload))
    })
    .as_ref()
}

fn synthetic() -> &'static RunResult {
    static RUN: OnceLock<RunResult> = OnceLock::new();
    RUN.get_or_init(|| {
        let workload = traces::SynthConfig::for_load(100_000, 1024, 0.9, 0).generate().expect("synthetic workload");
        run("128x8:V100", workload)
    })
}

/// Writes `run` with `write` into a buffer kept from one sample to the next (its growth is not
/// measured); the counter makes divan print MB/s of what was written.
fn bench_writer(bencher: divan::Bencher, run: &RunResult, write: fn(&RunResult, &mut Vec<u8>) -> std::io::Result<()>) {
    let mut out = Vec::new();
    write(run, &mut out).expect("writes");
    let bytes = out.len();
    bencher.counter(BytesCount::new(bytes)).bench_local(|| {
        out.clear();
        write(divan::black_box(run), &mut out).expect("writes");
        out.flush().expect("flushes");
    });
}

fn jobs(run: &RunResult, out: &mut Vec<u8>) -> std::io::Result<()> {
    reports::write_job_records_csv(run, out)
}

fn decisions(run: &RunResult, out: &mut Vec<u8>) -> std::io::Result<()> {
    reports::write_decisions_csv(run, out)
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn itp_jobs_csv(bencher: divan::Bencher) {
    if let Some(run) = itp() {
        bench_writer(bencher, run, jobs);
    }
}

#[divan::bench(sample_count = 50, sample_size = 1)]
fn itp_decisions_csv(bencher: divan::Bencher) {
    if let Some(run) = itp() {
        bench_writer(bencher, run, decisions);
    }
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn synthetic_jobs_csv(bencher: divan::Bencher) {
    bench_writer(bencher, synthetic(), jobs);
}

#[divan::bench(sample_count = 20, sample_size = 1)]
fn synthetic_decisions_csv(bencher: divan::Bencher) {
    bench_writer(bencher, synthetic(), decisions);
}
