//! LLM-scale runs: giant gangs under frequent node failures.
//!
//! `cargo bench --bench llm_scale` measures:
//! - `giant_job_node_failures`: one 16,384-GPU job with 54 days of work on 2,100 x 8 GPUs,
//!   node failures drawn as the run goes (Weibull, 6,500 h mean time to failure, 24 h median
//!   repair), checkpoints every hour, retries without limit: about 500 restarts of the gang;
//! - `mixed_100k_gpus`: 200,000 jobs on 12,500 x 8 = 100,000 GPUs: the synthetic workload
//!   (load 0.8) with 40 giant jobs of 4,096 to 16,384 GPUs among them, under the same failures.
//!
//! Time only: peak memory of a whole run is measured as docs/performance.md shows (GNU time
//! around `schedlab simulate`).

use sim::{Cluster, ControllerConfig, FailureConfig, JobSpec, Scenario, SimDuration, SimTime, Workload};
use traces::{FailureSpec, Failures};

fn main() {
    divan::main();
}

const FAILURES: &str = "weibull:node_mtbf_h=6500,repair_median_h=24,repair_sigma=1";

fn cluster(shorthand: &str) -> Cluster {
    Cluster::new(&traces::parse_cluster_shorthand(shorthand).expect("valid shorthand")).expect("valid cluster")
}

fn run(cluster: Cluster, workload: Workload) -> sim::RunResult {
    let spec: FailureSpec = FAILURES.parse().expect("valid spec");
    let Failures::Feed(feed) = spec.resolve(&cluster, SimTime::ZERO, 1).expect("resolves") else {
        unreachable!("a model is a feed")
    };
    let config = ControllerConfig {
        check_invariants: false,
        checkpoint: SimDuration::from_secs(3_600),
        failures: FailureConfig { max_retries: u32::MAX, ..FailureConfig::default() },
        ..ControllerConfig::default()
    };
    let mut policy = policies::build("fifo").expect("fifo");
    sim::simulate(Scenario::new(cluster, workload).with_feed(feed), policy.as_mut(), config).expect("runs")
}

fn giant(name: &str, submit_s: u64, gpus: u32, work_days: u64) -> JobSpec {
    JobSpec::single(name, SimTime::from_secs(submit_s), gpus, SimDuration::from_secs(work_days * 86_400))
}

#[divan::bench(sample_count = 5, sample_size = 1)]
fn giant_job_node_failures(bencher: divan::Bencher) {
    let workload = Workload::new(vec![giant("pretrain", 0, 16_384, 54)]).expect("valid");
    bencher.with_inputs(|| (cluster("2100x8:H100"), workload.clone())).bench_values(|(c, w)| run(c, w));
}

fn mixed_workload() -> Workload {
    let synthetic = traces::SynthConfig::for_load(200_000, 100_000, 0.8, 0).generate().expect("synthetic");
    let mut jobs = synthetic.jobs().to_vec();
    let span_s = jobs.last().map_or(0, |j| j.submit.as_ms() / 1000);
    for i in 0..40u64 {
        let gpus = 4_096 << (i % 3);
        jobs.push(giant(&format!("giant-{i}"), span_s * i / 40, gpus, 2 + i % 5));
    }
    jobs.sort_by_key(|j| j.submit);
    Workload::new(jobs).expect("valid")
}

#[divan::bench(sample_count = 2, sample_size = 1)]
fn mixed_100k_gpus(bencher: divan::Bencher) {
    let workload = mixed_workload();
    bencher.with_inputs(|| (cluster("12500x8:H100"), workload.clone())).bench_values(|(c, w)| run(c, w));
}
