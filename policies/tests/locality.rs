//! Data locality, exact: a task reading a dataset pays its transfer when started on nodes
//! without it, `placement=local` puts it on nodes holding it when they have room, and the run
//! counts the share of local starts.

mod common;

use common::{cluster, job, sched, schedule};
use sim::{ControllerConfig, DatasetSpec, JobSpec, NodeId, RunResult, Scenario, SimDuration, Workload};

fn reads(mut j: JobSpec, dataset: &str) -> JobSpec {
    j.tasks[0].options_mut().dataset = Some(dataset.to_string());
    j
}

/// 2 nodes x 2 GPUs; dataset `d` on node `holder`, 30 s to bring elsewhere.
fn run_data(spec: &str, holder: u32, jobs: Vec<JobSpec>) -> RunResult {
    let d = DatasetSpec { name: "d".into(), nodes: vec![NodeId(holder)], transfer: SimDuration::from_secs(30) };
    let scenario = Scenario::new(cluster(&[(2, 2, "A")]), Workload::new(jobs).unwrap()).with_datasets(&[d]).unwrap();
    let mut policy = policies::build(spec).unwrap();
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() };
    sim::simulate(scenario, policy.as_mut(), config).unwrap()
}

/// `d` on node 1. pack takes node 0 (both empty: the lower id), away from the data: 30 s of
/// transfer, then 100 s of work, 0..130. local takes node 1: 0..100.
#[test]
fn a_remote_start_pays_the_transfer_and_local_placement_avoids_it() {
    let j = || vec![reads(job("j", 0, 1, 100), "d")];
    let r = run_data("fifo", 1, j());
    assert_eq!(schedule(&r), sched(&[("j", 0, 130)]));
    assert_eq!((r.stats.local_starts, r.stats.remote_starts), (0, 1));
    // The transfer is GPU-time held without progress, counted with restart overhead.
    assert_eq!(r.jobs[0].lost_overhead_mgpu_ms, 30_000_000);
    let r = run_data("fifo[placement=local]", 1, j());
    assert_eq!(schedule(&r), sched(&[("j", 0, 100)]));
    assert_eq!((r.stats.local_starts, r.stats.remote_starts), (1, 0));
}

/// `d` on node 0, which `hog` (2 GPUs, 0..50, first in line) fills: local placement does not
/// wait, it starts j on node 1 and pays the transfer, 0..130.
#[test]
fn local_placement_falls_back_to_remote_nodes() {
    let r = run_data("fifo[placement=local]", 0, vec![job("hog", 0, 2, 50), reads(job("j", 0, 1, 100), "d")]);
    assert_eq!(schedule(&r), sched(&[("hog", 0, 50), ("j", 0, 130)]));
    assert_eq!(r.stats.remote_starts, 1);
}

#[test]
fn dataset_mistakes_are_explained() {
    let w = || Workload::new(vec![reads(job("x", 0, 1, 1), "nope")]).unwrap();
    let d = DatasetSpec { name: "d".into(), nodes: vec![NodeId(0)], transfer: SimDuration::ZERO };
    let e =
        Scenario::new(cluster(&[(2, 2, "A")]), w()).with_datasets(std::slice::from_ref(&d)).unwrap_err().to_string();
    assert_eq!(e, "job `x` task `0` reads dataset `nope`, which the cluster does not define (it has d)");
    let far = DatasetSpec { nodes: vec![NodeId(5)], ..d };
    let e = Scenario::new(cluster(&[(2, 2, "A")]), w()).with_datasets(&[far]).unwrap_err().to_string();
    assert_eq!(e, "dataset `d`: node 5 does not exist (the cluster has 2, numbered from 0)");
    // Without datasets defined, dataset names are labels: no transfer, no error.
    let r = common::run("fifo", cluster(&[(2, 2, "A")]), vec![reads(job("x", 0, 1, 10), "nope")]);
    assert_eq!(schedule(&r), sched(&[("x", 0, 10)]));
}

// ---------------------------------------------------------------------------------------------
// weighted-score: the locality term and waiting for locality (delay scheduling)
// ---------------------------------------------------------------------------------------------

/// `d` on node 1. At 0 the cluster fills: f0 (2 GPUs, 200 s) packs onto node 0, f1 (1 GPU,
/// 50 s) and f2 (1 GPU, 200 s) onto node 1. `a` (no dataset) arrives at 5, `r` (reads d) at 10,
/// both 1 GPU for 10 s. At 50 f1 frees one GPU on node 1, where r's data is.
fn contended_holder() -> Vec<JobSpec> {
    vec![
        job("f0", 0, 2, 200),
        job("f1", 0, 1, 50),
        job("f2", 0, 1, 200),
        job("a", 5, 1, 10),
        reads(job("r", 10, 1, 10), "d"),
    ]
}

#[test]
fn weighted_score_locality_ranks_a_data_local_start_ahead_by_w_d() {
    // At 50, a has waited 45 s, r 40 s. Without w_d, a goes first (50..60) and r follows on
    // the same GPU at 60, local: 60..70.
    let r = run_data("weighted-score", 1, contended_holder());
    assert_eq!(schedule(&r), sched(&[("f0", 0, 200), ("f1", 0, 50), ("f2", 0, 200), ("a", 50, 60), ("r", 60, 70)]));
    // w_d = 3: r scores 40 + 3 < 45: the same order.
    let r3 = run_data("weighted-score[w_d=3]", 1, contended_holder());
    assert_eq!(schedule(&r3), schedule(&r));
    // w_d = 10: r, local now, scores 40 + 10 > 45 and takes node 1's GPU at 50 (no transfer).
    let r10 = run_data("weighted-score[w_d=10]", 1, contended_holder());
    assert_eq!(schedule(&r10), sched(&[("f0", 0, 200), ("f1", 0, 50), ("f2", 0, 200), ("a", 60, 70), ("r", 50, 60)]));
    assert_eq!((r10.stats.local_starts, r10.stats.remote_starts), (1, 0));
}

#[test]
fn weighted_score_locality_does_not_count_for_a_task_whose_data_nodes_are_full() {
    // `d` on node 0, which f0 holds until 200: at 50 r cannot start locally, so its w_d does
    // not apply and a (waited longer) takes node 1's GPU first, even with a large w_d.
    let r = run_data("weighted-score[w_d=1000]", 0, contended_holder());
    assert_eq!(schedule(&r), sched(&[("f0", 0, 200), ("f1", 0, 50), ("f2", 0, 200), ("a", 50, 60), ("r", 60, 100)]));
    // r landed away from its data: 30 s of transfer, then 10 s of work.
    assert_eq!((r.stats.local_starts, r.stats.remote_starts), (0, 1));
}

/// `d` on node 0, held by `hog` (2 GPUs) for 20 s; `r` (reads d, 100 s) and then `a` (no
/// dataset, 5 s) arrive at 0.
fn data_busy_for_20_s() -> Vec<JobSpec> {
    vec![job("hog", 0, 2, 20), reads(job("r", 0, 1, 100), "d"), job("a", 0, 1, 5)]
}

#[test]
fn weighted_score_waits_for_locality_up_to_local_wait_s() {
    // No waiting: r takes node 1 at once and pays the transfer, 0..130; a beside it, 0..5.
    let r = run_data("weighted-score", 0, data_busy_for_20_s());
    assert_eq!(schedule(&r), sched(&[("hog", 0, 20), ("r", 0, 130), ("a", 0, 5)]));
    // local_wait_s = 60: r is passed over (a starts past it at 0) until node 0 frees at 20,
    // then starts there without a transfer: 20..120, ten seconds sooner.
    let r = run_data("weighted-score[local_wait_s=60]", 0, data_busy_for_20_s());
    assert_eq!(schedule(&r), sched(&[("hog", 0, 20), ("r", 20, 120), ("a", 0, 5)]));
    // Locality counts starts of tasks that read a dataset: r's, local.
    assert_eq!((r.stats.local_starts, r.stats.remote_starts), (1, 0));
    // local_wait_s = 10: the policy wakes at 10, r's wait is up and node 0 still busy, so it
    // goes where pack puts it (node 1) and pays the transfer: 10..140.
    let r = run_data("weighted-score[local_wait_s=10]", 0, data_busy_for_20_s());
    assert_eq!(schedule(&r), sched(&[("hog", 0, 20), ("r", 10, 140), ("a", 0, 5)]));
}

/// Random jobs reading two datasets on a cluster of 3 nodes x 2 GPUs, under weighted-score
/// with a locality weight and a wait for locality: no task that reads a dataset starts away
/// from its data before it has waited `local_wait_s` (its first attempt entered the queue at
/// its submit: no failures here), and every job still finishes.
mod waiting_for_locality {
    use super::*;
    use proptest::prelude::*;

    const WAIT_S: u64 = 30;

    fn arb_jobs() -> impl Strategy<Value = Vec<(u64, u32, u64, Option<usize>)>> {
        // (submit s, GPUs, work s, dataset)
        prop::collection::vec((0u64..60, 1u32..=2, 1u64..50, prop::option::of(0usize..2)), 1..25)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn no_remote_start_before_the_wait_and_every_job_ends(
            jobs in arb_jobs(),
            holders in (0u32..3, 0u32..3),
            w_d in 0u64..100,
        ) {
            let specs: Vec<JobSpec> = jobs
                .iter()
                .enumerate()
                .map(|(i, &(submit, gpus, work, dataset))| {
                    let j = job(&format!("j{i}"), submit, gpus, work);
                    match dataset {
                        Some(d) => reads(j, ["d0", "d1"][d]),
                        None => j,
                    }
                })
                .collect();
            let datasets = [
                DatasetSpec { name: "d0".into(), nodes: vec![NodeId(holders.0)], transfer: SimDuration::from_secs(20) },
                DatasetSpec { name: "d1".into(), nodes: vec![NodeId(holders.1)], transfer: SimDuration::from_secs(20) },
            ];
            let workload = Workload::new(specs).unwrap();
            let scenario = Scenario::new(cluster(&[(3, 2, "A")]), workload.clone()).with_datasets(&datasets).unwrap();
            let spec = format!("weighted-score[w_d={w_d},local_wait_s={WAIT_S},placement=local]");
            let mut policy = policies::build(&spec).unwrap();
            let config = ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() };
            let r = sim::simulate(scenario, policy.as_mut(), config).unwrap();
            prop_assert!(r.jobs.iter().all(|j| j.outcome.is_some()), "a job did not end");
            for d in r.decisions.iter().filter(|d| d.kind == sim::DecisionKind::Start) {
                let spec = &workload.jobs()[d.job.index()];
                let Some(name) = spec.tasks[0].options().dataset.as_deref() else { continue };
                let holder = datasets.iter().find(|x| x.name == name).unwrap().nodes[0];
                // 2 GPUs per node: GPUs 2n and 2n + 1 are node n's.
                let local = d.gpus.iter().all(|g| g.0 / 2 == holder.0);
                let waited = d.time.since(spec.submit);
                prop_assert!(
                    local || waited >= SimDuration::from_secs(WAIT_S),
                    "{} started away from {name} after {waited} of waiting: {:?}", spec.name, d
                );
            }
        }
    }
}
