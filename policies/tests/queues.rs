//! Queues with quotas, exact: caps on GPUs and running jobs hold a queue's tasks back without
//! blocking other queues, borrowed GPUs are reclaimed from the task that loses the least work,
//! and under every policy on random clusters, queues and workloads no quota is ever exceeded
//! (the invariants recount it after every step) and every job ends.

mod common;

use common::random::{PoolDesc, arb_gpus, arb_pools, arb_submit_ms, arb_work_ms, build_cluster};
use common::{ALL_SPECS, cluster, job, sched, schedule};
use proptest::prelude::*;
use sim::{ControllerConfig, JobSpec, QueueSpec, RunResult, Scenario, SimDuration, Workload};

fn in_queue(mut j: JobSpec, queue: &str) -> JobSpec {
    j.queue = Some(queue.to_string().into());
    j
}

fn queue(name: &str, max_gpus: Option<u32>, max_running_jobs: Option<u32>, borrow: bool) -> QueueSpec {
    QueueSpec { max_gpus, max_running_jobs, borrow, ..QueueSpec::new(name) }
}

fn run_queues(spec: &str, gpus: u32, queues: &[QueueSpec], jobs: Vec<JobSpec>) -> RunResult {
    let scenario = Scenario::new(cluster(&[(1, gpus, "A")]), Workload::new(jobs).unwrap()).with_queues(queues).unwrap();
    let mut policy = policies::build(spec).unwrap();
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() };
    sim::simulate(scenario, policy.as_mut(), config).unwrap()
}

/// 1 x 4 GPUs; queue a may hold 2 GPUs, b is uncapped. a1 (2 GPUs, 10 s) starts at 0; a2 (2
/// GPUs) would take a to 4: parked, and it does not block b1 behind it even under strict fifo
/// (0..5). a1 ends at 10: a2 runs 10..20, although GPUs were free from 5.
#[test]
fn a_gpu_cap_holds_its_queue_back_without_blocking_others() {
    let queues = [queue("a", Some(2), None, false), queue("b", None, None, false)];
    let jobs =
        vec![in_queue(job("a1", 0, 2, 10), "a"), in_queue(job("a2", 0, 2, 10), "a"), in_queue(job("b1", 0, 1, 5), "b")];
    for spec in ["fifo", "sjf", "srtf", "easy-backfill"] {
        let r = run_queues(spec, 4, &queues, jobs.clone());
        assert_eq!(schedule(&r), sched(&[("a1", 0, 10), ("a2", 10, 20), ("b1", 0, 5)]), "{spec}");
    }
}

/// Queue c runs one job at a time on 4 GPUs: c1 0..10, c2 10..20. A job without a queue goes
/// to the first queue (c), like Slurm's default partition: d 20..30.
#[test]
fn a_running_jobs_cap_and_the_default_queue() {
    let queues = [queue("c", None, Some(1), false), queue("e", None, None, false)];
    let jobs = vec![in_queue(job("c1", 0, 1, 10), "c"), in_queue(job("c2", 0, 1, 10), "c"), job("d", 0, 1, 10)];
    let r = run_queues("fifo", 4, &queues, jobs);
    assert_eq!(schedule(&r), sched(&[("c1", 0, 10), ("c2", 10, 20), ("d", 20, 30)]));
}

/// 1 x 4 GPUs. Queue a (cap 2, may borrow) runs a1 and a2 (2 GPUs, 100 s each) from 0: a2
/// borrows. At 5, b1 (queue b, cap 2, 2 GPUs, 10 s) is within its cap and finds no room: a is
/// borrowing, so one of its tasks is preempted. a1 checkpoints every 60 s (5 s at risk), a2
/// every 1 s (nothing at risk): a2 is the victim though a1 comes first. b1 runs 5..15; a2
/// restarts at 15 with its 5 s kept: 15..110. a1 is undisturbed, 0..100.
#[test]
fn borrowed_gpus_are_reclaimed_from_the_task_that_loses_least() {
    let queues = [queue("a", Some(2), None, true), queue("b", Some(2), None, false)];
    let mut a1 = in_queue(job("a1", 0, 2, 100), "a");
    a1.tasks[0].options_mut().checkpoint = Some(SimDuration::from_secs(60));
    let mut a2 = in_queue(job("a2", 0, 2, 100), "a");
    a2.tasks[0].options_mut().checkpoint = Some(SimDuration::from_secs(1));
    let b1 = in_queue(job("b1", 5, 2, 10), "b");
    for spec in ["fifo", "sjf", "easy-backfill"] {
        let r = run_queues(spec, 4, &queues, vec![a1.clone(), a2.clone(), b1.clone()]);
        assert_eq!(schedule(&r), sched(&[("a1", 0, 100), ("a2", 0, 110), ("b1", 5, 15)]), "{spec}");
        let preempt = r.decisions.iter().find(|d| d.kind == sim::DecisionKind::Preempt).expect("a reclaim");
        assert_eq!(r.jobs[preempt.job.index()].name, "a2", "{spec}");
        assert!(
            preempt.detail.contains("queue `b` (within its quota) from queue `a` (borrowing past its quota)")
                && preempt.detail.contains("loses 0.000 s of work since its last checkpoint, the least of 2 eligible"),
            "{spec}: {}",
            preempt.detail
        );
    }
    // Without borrowing, a2 waits for a1 (0..100, then 100..200) and b1 starts at once.
    let no_borrow = [queue("a", Some(2), None, false), queue("b", Some(2), None, false)];
    let r = run_queues("fifo", 4, &no_borrow, vec![a1, a2, b1]);
    assert_eq!(schedule(&r), sched(&[("a1", 0, 100), ("a2", 100, 200), ("b1", 5, 15)]));
}

/// Mistakes are refused before the run, naming what is wrong; a task bigger than its queue's
/// cap can never run: unschedulable, with the queue named.
#[test]
fn queue_mistakes_are_explained() {
    let cluster = || cluster(&[(1, 4, "A")]);
    let w = || Workload::new(vec![in_queue(job("x", 0, 1, 1), "nope")]).unwrap();
    let e = Scenario::new(cluster(), w()).with_queues(&[queue("a", None, None, false)]).unwrap_err().to_string();
    assert_eq!(e, "job `x` is in queue `nope`, which the cluster does not define (it has a)");
    let mut bad_pool = queue("a", None, None, false);
    bad_pool.pools = vec!["B".into()];
    let e = Scenario::new(cluster(), w()).with_queues(&[bad_pool]).unwrap_err().to_string();
    assert_eq!(e, "queue `a`: no pool `B` in the cluster (it has A)");

    let r = run_queues("fifo", 4, &[queue("a", Some(2), None, false)], vec![in_queue(job("big", 0, 4, 1), "a")]);
    let reason = r.jobs[0].outcome.as_ref().map(|o| o.reason().to_string()).unwrap_or_default();
    assert_eq!(reason, "task `0` asks for 4 GPUs; its queue `a` allows 2 GPUs and any number of running jobs");
}

#[derive(Debug, Clone)]
struct Case {
    pools: Vec<PoolDesc>,
    queues: Vec<QueueSpec>,
    jobs: Vec<JobSpec>,
    seed: u64,
}

fn arb_case() -> impl Strategy<Value = Case> {
    let queue = (prop::option::of(1u32..=16), prop::option::of(1u32..=4), any::<bool>());
    let job = (arb_submit_ms(&[0, 1_000, 60_000], 20), arb_gpus(), arb_work_ms(3_600), 0usize..4, 1u64..=120);
    (arb_pools(4, 2), prop::collection::vec(queue, 1..=3), prop::collection::vec(job, 1..=40), any::<u64>()).prop_map(
        |(pools, queues, jobs, seed)| {
            let largest = pools.iter().map(|p| p.nodes * p.gpus_per_node).max().unwrap_or(1);
            let queues: Vec<QueueSpec> = queues
                .iter()
                .enumerate()
                .map(|(i, &(max_gpus, max_running_jobs, borrow))| QueueSpec {
                    max_gpus,
                    max_running_jobs,
                    borrow,
                    ..QueueSpec::new(format!("q{i}"))
                })
                .collect();
            let jobs = jobs
                .iter()
                .enumerate()
                .map(|(i, &(submit_ms, gpus, work_ms, q, checkpoint_s))| {
                    let mut j = JobSpec::single(
                        format!("j{i}"),
                        sim::SimTime(submit_ms),
                        gpus.min(largest),
                        SimDuration(work_ms),
                    );
                    j.tasks[0].estimate = SimDuration(work_ms).into();
                    j.tasks[0].options_mut().checkpoint = Some(SimDuration::from_secs(checkpoint_s));
                    j.queue = (q < queues.len()).then(|| queues[q].name.as_str().into());
                    j
                })
                .collect();
            Case { pools, queues, jobs, seed }
        },
    )
}

fn check(spec: &str, case: &Case) -> Result<(), TestCaseError> {
    let scenario = Scenario::new(build_cluster(&case.pools), Workload::new(case.jobs.clone()).unwrap())
        .with_queues(&case.queues)
        .unwrap();
    let mut policy = policies::build(spec).unwrap();
    // Invariants after every step include: no queue over its GPU cap unless it borrows, none
    // over its running-jobs cap, and usage equal to a recount.
    let config = ControllerConfig {
        seed: case.seed,
        check_invariants: true,
        record_decisions: true,
        ..ControllerConfig::default()
    };
    let r = sim::simulate(scenario, policy.as_mut(), config).unwrap();
    for j in &r.jobs {
        prop_assert!(j.outcome.is_some(), "{}: job {} never ended", spec, j.name);
    }
    // Reclaims happen only for a task of a queue within its cap, from a borrowing queue.
    for d in r.decisions.iter().filter(|d| d.kind == sim::DecisionKind::Preempt && d.detail.starts_with("reclaimed")) {
        prop_assert!(d.detail.contains("(borrowing past its quota)"), "{}: {}", spec, d.detail);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(32) })]

    #[test]
    fn quotas_hold_and_every_job_ends_under_every_policy(case in arb_case()) {
        for spec in ALL_SPECS {
            check(spec, &case)?;
        }
    }
}
