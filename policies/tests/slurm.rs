//! The `slurm` policy's mechanisms on schedules computed by hand: the main scheduler's passes
//! and partition blocking, a backfill that fits before a reservation and one that does not,
//! `bf_max_job_test` cutting a pass, and fair share ordered after decay.
//!
//! Every run sets `started_s=0` (slurmctld's clocks from 0: main passes at most every 3 s
//! after the last, the backfill and priority threads from 1 s) and submits from 10 s on.

mod common;

use common::{cluster, job_est, sched, schedule};
use sim::{ControllerConfig, JobSpec, Owner, QueueSpec, RunResult, Scenario, Workload};

fn run(spec: &str, pools: &[(u32, u32, &str)], queues: &[QueueSpec], jobs: Vec<JobSpec>) -> RunResult {
    let scenario =
        Scenario::new(cluster(pools), Workload::new(jobs).expect("jobs")).with_queues(queues).expect("queues");
    let mut policy = policies::build(spec).expect("spec");
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() };
    sim::simulate(scenario, policy.as_mut(), config).expect("run")
}

fn in_partition(mut j: JobSpec, partition: &str) -> JobSpec {
    j.queue = Some(partition.into());
    j
}

fn owned_by(mut j: JobSpec, account: &str, user: &str) -> JobSpec {
    j.owner = Some(Box::new(Owner { account: account.into(), user: user.into(), qos: "".into() }));
    j
}

/// One node of 4 GPUs. a (3 GPUs, limit 20 s) starts at 10 (its submission asks for a pass;
/// the last was at 0, 3 s ago or more) and ends at 20. b (4 GPUs, limit 10 s) at 11 and c
/// (1 GPU, 5 s of work) at 12 wait for the next pass, at 13 (10 + batch_sched_delay): b does
/// not fit, and blocks its partition, so c waits although a GPU is free. a's end asks for a
/// pass: at 20 b starts, c is blocked again; b's end: c at 25.
/// With backfill every 5 s (passes at 10, 15, ...), the pass at 15 plans b at 30 (a's limit:
/// 10 + 20) on the node, from 30 to 40; c, limit 10 s, is done by 25: it starts at 15. With a
/// limit of 20 s c would reach into b's reservation: it waits until 25 as without backfill.
#[test]
fn a_blocked_head_holds_its_partition_and_backfill_starts_only_what_ends_before_its_reservation() {
    let jobs =
        |c_limit: u64| vec![job_est("a", 10, 3, 10, 20), job_est("b", 11, 4, 5, 10), job_est("c", 12, 1, 5, c_limit)];
    let pools = [(1, 4, "A")];
    let main_only = sched(&[("a", 10, 20), ("b", 20, 25), ("c", 25, 30)]);
    let builtin = run("slurm[sched=builtin,started_s=0]", &pools, &[], jobs(10));
    assert_eq!(schedule(&builtin), main_only);
    let fits = run("slurm[bf_interval=5,bf_resolution=1,started_s=0]", &pools, &[], jobs(10));
    assert_eq!(schedule(&fits), sched(&[("a", 10, 20), ("b", 20, 25), ("c", 15, 20)]));
    let too_long = run("slurm[bf_interval=5,bf_resolution=1,started_s=0]", &pools, &[], jobs(20));
    assert_eq!(schedule(&too_long), main_only);
    // bf_max_job_test=1: the pass at 15 tests b only, and c, which would fit, is not tried.
    let cut = run("slurm[bf_interval=5,bf_resolution=1,bf_max_job_test=1,started_s=0]", &pools, &[], jobs(10));
    assert_eq!(schedule(&cut), main_only);
}

/// Two nodes of 4 GPUs, A and B; partition p1 on A, p2 on B, p3 on both. a (p1, 3 GPUs) runs
/// 10-20 on A. At the pass at 13: b (p1, 4 GPUs) cannot start and blocks p1, whose node A is
/// then hidden from every partition: e (p1, 1 GPU) waits though A has a free GPU; c (p2) and
/// d (p3, which may use A or B) start on B. Their ends at 18 ask for a pass (at 18: nothing
/// fits), so a's end at 20 waits for the next, at 21 (18 + batch_sched_delay): b starts on A;
/// e is blocked again, until b ends at 26.
#[test]
fn a_blocked_partition_hides_its_nodes_from_the_others_for_the_rest_of_the_pass() {
    let queue = |name: &str, pools: &[&str]| QueueSpec {
        pools: pools.iter().map(|p| p.to_string()).collect(),
        ..QueueSpec::new(name)
    };
    let queues = [queue("p1", &["A"]), queue("p2", &["B"]), queue("p3", &[])];
    let jobs = vec![
        in_partition(job_est("a", 10, 3, 10, 20), "p1"),
        in_partition(job_est("b", 11, 4, 5, 10), "p1"),
        in_partition(job_est("c", 12, 1, 5, 10), "p2"),
        in_partition(job_est("d", 12, 1, 5, 10), "p3"),
        in_partition(job_est("e", 12, 1, 5, 10), "p1"),
    ];
    let r = run("slurm[sched=builtin,started_s=0]", &[(1, 4, "A"), (1, 4, "B")], &queues, jobs);
    assert_eq!(schedule(&r), sched(&[("a", 10, 20), ("b", 21, 26), ("c", 13, 18), ("d", 13, 18), ("e", 26, 31)]));
    let node_of = |job: &str| common::first_gpus(&r, job)[0] / 4;
    assert_eq!([node_of("c"), node_of("d"), node_of("e")], [1, 1, 0]);
}

/// One GPU; users x (account A) and y (account B), equal shares; priority is fair share only
/// (Fair Tree: the user whose account used less ranks 2 of 2, factor 1, the other 1 of 2),
/// recomputed every 10 s from 1 s. x1 runs 10-110; y1 (nobody else has usage for y) runs
/// 110-140. At 140 x2 and y2 wait, submitted at 12 and 13. x used 100 GPU-seconds long ago,
/// y 30 lately. Without decay x's usage is the larger: y2 starts first. With a 10 s
/// half-life, x's usage has decayed to almost nothing by 131 (the last calculation): x2 first.
#[test]
fn fair_share_orders_by_decayed_usage() {
    let jobs = vec![
        owned_by(job_est("x1", 10, 1, 100, 200), "A", "x"),
        owned_by(job_est("y1", 11, 1, 30, 200), "B", "y"),
        owned_by(job_est("x2", 12, 1, 10, 200), "A", "x"),
        owned_by(job_est("y2", 13, 1, 10, 200), "B", "y"),
    ];
    let spec = |half_life: u64| {
        format!(
            "slurm[priority=multifactor,weight_fairshare=1000,calc_period=10,decay_half_life={half_life},sched=builtin,started_s=0]"
        )
    };
    let no_decay = run(&spec(0), &[(1, 1, "A")], &[], jobs.clone());
    assert_eq!(schedule(&no_decay), sched(&[("x1", 10, 110), ("y1", 110, 140), ("x2", 150, 160), ("y2", 140, 150)]));
    let decayed = run(&spec(10), &[(1, 1, "A")], &[], jobs);
    assert_eq!(schedule(&decayed), sched(&[("x1", 10, 110), ("y1", 110, 140), ("x2", 140, 150), ("y2", 150, 160)]));
}

fn with_qos(mut j: JobSpec, user: &str, qos: &str) -> JobSpec {
    j.owner = Some(Box::new(Owner { account: "A".into(), user: user.into(), qos: qos.into() }));
    j
}

/// Two nodes of 4 GPUs, A (partition p1) and B (p2); QOS `small` may hold 4 GPUs in all,
/// across partitions. a (p1, small, 3 GPUs) runs 10-20. At the pass at 13, b (p2, small, 2
/// GPUs) would take small to 5: it stays pending, and p2 is not blocked by it: c (p2, no
/// limit) and d (p2, small, 1 GPU: small at 4) start. Their ends at 18 pass over b again
/// (a still runs); a's end at 20 asks for a pass, at 21 (18 + batch_sched_delay): b starts.
/// Without the limit b starts at 13 beside c and d.
#[test]
fn a_qos_limits_its_jobs_across_partitions_without_blocking_them() {
    let queue = |name: &str, pool: &str| QueueSpec { pools: vec![pool.to_string()], ..QueueSpec::new(name) };
    let queues = [queue("p1", "A"), queue("p2", "B")];
    let jobs = vec![
        with_qos(in_partition(job_est("a", 10, 3, 10, 20), "p1"), "x", "small"),
        with_qos(in_partition(job_est("b", 11, 2, 5, 10), "p2"), "x", "small"),
        with_qos(in_partition(job_est("c", 12, 1, 5, 10), "p2"), "x", "normal"),
        with_qos(in_partition(job_est("d", 12, 1, 5, 10), "p2"), "x", "small"),
    ];
    let pools = [(1, 4, "A"), (1, 4, "B")];
    let limited = run("slurm[sched=builtin,started_s=0,qos_grp_gpus=small:4]", &pools, &queues, jobs.clone());
    assert_eq!(schedule(&limited), sched(&[("a", 10, 20), ("b", 21, 26), ("c", 13, 18), ("d", 13, 18)]));
    let free = run("slurm[sched=builtin,started_s=0]", &pools, &queues, jobs);
    assert_eq!(schedule(&free), sched(&[("a", 10, 20), ("b", 13, 18), ("c", 13, 18), ("d", 13, 18)]));
}

/// One node of 8 GPUs; QOS `q` lets each user run one job, or hold 2 GPUs. x1 (x, 1 GPU) runs
/// 10-20; at the pass at 13 x2 (x) waits for it, y1 (y) starts. y1's end asks for a pass at
/// 18, so x1's end at 20 gets the next at 21: x2 starts. With 2 GPUs per user instead, x2 (2
/// GPUs) waits the same way and y1 does not.
#[test]
fn a_qos_limits_each_users_jobs_and_gpus() {
    let jobs = |x2_gpus: u32| {
        vec![
            with_qos(job_est("x1", 10, 1, 10, 20), "x", "q"),
            with_qos(job_est("x2", 11, x2_gpus, 5, 10), "x", "q"),
            with_qos(job_est("y1", 12, 1, 5, 10), "y", "q"),
        ]
    };
    let expected = sched(&[("x1", 10, 20), ("x2", 21, 26), ("y1", 13, 18)]);
    let one_job = run("slurm[sched=builtin,started_s=0,qos_max_jobs_per_user=q:1]", &[(1, 8, "A")], &[], jobs(1));
    assert_eq!(schedule(&one_job), expected);
    let two_gpus = run("slurm[sched=builtin,started_s=0,qos_max_gpus_per_user=q:2]", &[(1, 8, "A")], &[], jobs(2));
    assert_eq!(schedule(&two_gpus), expected);
    let free = run("slurm[sched=builtin,started_s=0]", &[(1, 8, "A")], &[], jobs(2));
    assert_eq!(schedule(&free), sched(&[("x1", 10, 20), ("x2", 13, 18), ("y1", 13, 18)]));
}

/// One node of 4 GPUs, backfill every 5 s testing 2 jobs. a (QOS q, 3 GPUs, limit 20) runs
/// 10-20; h (4 GPUs) blocks the partition, and the pass at 15 reserves the node for it from
/// 30. q (QOS q, 1 GPU) is over its QOS's limit while a runs. Over q's GPU limit (3), it is
/// tested but neither starts nor reserves, and the pass's second test is spent: c (1 GPU,
/// limit 10, which would end before h's reservation) is not tried. Over a job-count limit
/// (1 job), q is passed over before it counts, and c backfills at 15. Without a limit, q
/// itself backfills at 15 and c is not tried.
#[test]
fn backfill_counts_a_job_over_a_qos_gpu_limit_as_tested_and_one_over_a_job_limit_not() {
    let jobs = vec![
        with_qos(job_est("a", 10, 3, 10, 20), "x", "q"),
        with_qos(job_est("h", 11, 4, 5, 10), "x", "normal"),
        with_qos(job_est("q", 12, 1, 5, 10), "x", "q"),
        with_qos(job_est("c", 13, 1, 5, 10), "x", "normal"),
    ];
    let spec = |limit: &str| format!("slurm[bf_interval=5,bf_resolution=1,bf_max_job_test=2,started_s=0{limit}]");
    let gpu_limit = run(&spec(",qos_grp_gpus=q:3"), &[(1, 4, "A")], &[], jobs.clone());
    assert_eq!(schedule(&gpu_limit), sched(&[("a", 10, 20), ("h", 20, 25), ("q", 25, 30), ("c", 25, 30)]));
    let job_limit = run(&spec(",qos_grp_jobs=q:1"), &[(1, 4, "A")], &[], jobs.clone());
    assert_eq!(schedule(&job_limit), sched(&[("a", 10, 20), ("h", 20, 25), ("q", 25, 30), ("c", 15, 20)]));
    let free = run(&spec(""), &[(1, 4, "A")], &[], jobs);
    assert_eq!(schedule(&free), sched(&[("a", 10, 20), ("h", 20, 25), ("q", 15, 20), ("c", 25, 30)]));
}
