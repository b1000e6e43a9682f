//! Data locality, exact: a task reading a dataset pays its transfer when started on nodes
//! without it, `placement=local` puts it on nodes holding it when they have room, and the run
//! counts the share of local starts.

mod common;

use common::{cluster, job, sched, schedule};
use sim::{ControllerConfig, DatasetSpec, JobSpec, NodeId, RunResult, Scenario, SimDuration, Workload};

fn reads(mut j: JobSpec, dataset: &str) -> JobSpec {
    j.tasks[0].dataset = Some(dataset.to_string());
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
