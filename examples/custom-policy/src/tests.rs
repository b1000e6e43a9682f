//! The policy run by schedlab's engine with every invariant checked after every step (no
//! double allocation, no split gang, GPU time conserved): hand-computed schedules first, then
//! a larger synthetic workload.

use policies::Registry;
use sim::{ClusterSpec, ControllerConfig, JobOutcome, JobSpec, PoolSpec, RunResult, Scenario, SimDuration, SimTime};

/// One pool of `nodes` nodes with `gpus` GPUs each.
fn cluster(nodes: u32, gpus: u32) -> sim::Cluster {
    let pool = PoolSpec {
        name: "v100".into(),
        gpu_type: "V100".into(),
        nodes,
        gpus_per_node: gpus,
        nodes_per_rack: 0,
        speed_milli: 1000,
    };
    sim::Cluster::new(&ClusterSpec { pools: vec![pool] }).expect("valid cluster")
}

fn run(spec: &str, cluster: sim::Cluster, jobs: Vec<JobSpec>) -> RunResult {
    let registry = Registry::builtin().with("my-policy", crate::build);
    let mut policy = registry.build(&spec.parse().expect("valid spec")).expect("the policy builds");
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() };
    let workload = sim::Workload::new(jobs).expect("valid workload");
    sim::simulate(Scenario::new(cluster, workload), policy.as_mut(), config).expect("the run completes")
}

/// (job, start s, end s) of every job.
fn schedule(result: &RunResult) -> Vec<(String, u64, u64)> {
    let secs = |t: Option<SimTime>| t.expect("the job ran").as_ms() / 1000;
    result.jobs.iter().map(|j| (j.name.to_string(), secs(j.first_start), secs(j.end))).collect()
}

fn job(name: &str, submit_s: u64, gpus: u32, work_s: u64) -> JobSpec {
    JobSpec::single(name, SimTime::from_secs(submit_s), gpus, SimDuration::from_secs(work_s))
}

/// On 4 GPUs: `a` holds them all until 100 s; `b` (4 GPUs) and `c` (1 GPU) wait for them.
fn contended() -> Vec<JobSpec> {
    vec![job("a", 0, 4, 100), job("b", 1, 4, 10), job("c", 2, 1, 10)]
}

fn rows(rows: &[(&str, u64, u64)]) -> Vec<(String, u64, u64)> {
    rows.iter().map(|&(n, s, e)| (n.to_string(), s, e)).collect()
}

#[test]
fn the_smallest_gang_goes_first() {
    let result = run("my-policy", cluster(1, 4), contended());
    // At 100 s `c` (1 GPU) starts before `b` (4 GPUs), which then waits for `c`'s GPU.
    assert_eq!(schedule(&result), rows(&[("a", 0, 100), ("b", 110, 120), ("c", 100, 110)]));
    assert_eq!(result.policy, "my-policy[starve_after_s=3600,placement=pack,avoid_failed_h=0]");
}

#[test]
fn an_overdue_task_goes_first_and_blocks_the_rest() {
    let result = run("my-policy[starve_after_s=50]", cluster(1, 4), contended());
    // At 100 s `b` has waited 99 s, past the limit: it starts first, and `c` waits for it.
    assert_eq!(schedule(&result), rows(&[("a", 0, 100), ("b", 100, 110), ("c", 110, 120)]));
}

#[test]
fn a_key_it_does_not_read_is_refused() {
    let registry = Registry::builtin().with("my-policy", crate::build);
    let error = registry.check(&"my-policy[starve_after=50]".parse().expect("valid spec")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "policy `my-policy` has no parameter `starve_after`; the parameters it reads: avoid_failed_h, placement, \
         starve_after_s"
    );
}

/// 400 jobs of 1 to 16 GPUs on 4 nodes of 8, from a fixed linear congruential sequence.
fn synthetic() -> Vec<JobSpec> {
    let mut x: u64 = 12345;
    let mut next = move |n: u64| {
        x = x.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (x >> 33) % n
    };
    (0..400)
        .map(|i| {
            let gpus = [1, 1, 2, 4, 8, 16][next(6) as usize];
            job(&format!("j{i}"), i * 30 + next(30), gpus, 60 + next(3600))
        })
        .collect()
}

#[test]
fn a_synthetic_workload_runs_to_the_end_with_every_invariant_held() {
    let first = run("my-policy[starve_after_s=1800]", cluster(4, 8), synthetic());
    assert_eq!(first.jobs.len(), 400);
    assert!(first.jobs.iter().all(|j| j.outcome == Some(JobOutcome::Succeeded)), "every job succeeds");
    assert_eq!(first.stats.refused, 0, "the policy never makes a decision the plan refuses");
    // Deterministic: the same run gives the same decisions.
    let again = run("my-policy[starve_after_s=1800]", cluster(4, 8), synthetic());
    assert_eq!(first.stats.digest, again.stats.digest);
    // The age limit changes decisions (it is not dead code), and so the digest.
    let never = run("my-policy[starve_after_s=100000000]", cluster(4, 8), synthetic());
    assert_ne!(first.stats.digest, never.stats.digest);
}
