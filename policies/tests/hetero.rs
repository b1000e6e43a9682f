//! Heterogeneous GPUs, exact: a pool's speed scales how fast a task's work runs there, the
//! `fastest` placement prefers the fastest pool that fits, and work lost to a failure is
//! counted in work, its GPU-time in wall time.

mod common;

use common::{gpu_fail, job, run, run_with_events, sched, schedule};
use proptest::prelude::*;
use sim::{Cluster, ClusterSpec, ControllerConfig, JobSpec, PoolSpec, SimDuration, SimTime};

/// Pool `slow` (1 node x 2 GPUs, speed 1) first, then `fast` (1 x 2, speed `fast_milli`/1000).
fn two_speeds(fast_milli: u32) -> Cluster {
    let pool = |name: &str, speed_milli| PoolSpec {
        name: name.into(),
        gpu_type: name.into(),
        nodes: 1,
        gpus_per_node: 2,
        nodes_per_rack: 0,
        speed_milli,
    };
    Cluster::new(&ClusterSpec { pools: vec![pool("slow", 1000), pool("fast", fast_milli)] }).unwrap()
}

/// One 1-GPU task of 600 s: pack takes the first pool that fits best (slow, 0..600); fastest
/// takes the fast pool at speed 2: 0..300. Two 2-GPU tasks under fastest: the first takes the
/// fast pool (0..300), the second the slow one (0..600).
#[test]
fn fastest_prefers_the_fastest_pool_that_fits() {
    assert_eq!(schedule(&run("fifo", two_speeds(2000), vec![job("j", 0, 1, 600)])), sched(&[("j", 0, 600)]));
    let fastest = "fifo[placement=fastest]";
    assert_eq!(schedule(&run(fastest, two_speeds(2000), vec![job("j", 0, 1, 600)])), sched(&[("j", 0, 300)]));
    let r = run(fastest, two_speeds(2000), vec![job("a", 0, 2, 600), job("b", 0, 2, 600)]);
    assert_eq!(schedule(&r), sched(&[("a", 0, 300), ("b", 0, 600)]));
    // GPU-time is wall time held: a holds 2 GPUs for 300 s, b for 600 s.
    let gpu_s: Vec<u64> = r.jobs.iter().map(|j| j.mgpu_ms / 1_000_000).collect();
    assert_eq!(gpu_s, [600, 1200]);
}

fn with_speeds(mut j: JobSpec, speeds: &[(&str, u32)]) -> JobSpec {
    j.tasks[0].options_mut().speeds = speeds.iter().map(|&(ty, milli)| (ty.to_string(), milli)).collect();
    j
}

/// Tasks gain differently from the fast type. `io` (memory-bound) runs at 0.5 there, `cnn` at
/// 3, `plain` names nothing and gets the pool's 2. Under fastest each goes where it runs
/// fastest: io to slow (600 s of work at 1: 0..600), cnn to fast (at 3: 0..200), plain to fast
/// (at 2: 0..300). Under pack all three fill slow first (io, cnn on slow at 1: 0..600 each),
/// and plain lands on fast at its pool speed, 0..300.
#[test]
fn a_tasks_own_speeds_choose_its_fastest_pool_and_scale_its_work() {
    let jobs = || {
        vec![
            with_speeds(job("io", 0, 1, 600), &[("fast", 500)]),
            with_speeds(job("cnn", 0, 1, 600), &[("fast", 3000), ("absent", 9000)]),
            job("plain", 0, 1, 600),
        ]
    };
    let r = run("fifo[placement=fastest]", two_speeds(2000), jobs());
    assert_eq!(schedule(&r), sched(&[("io", 0, 600), ("cnn", 0, 200), ("plain", 0, 300)]));
    let r = run("fifo", two_speeds(2000), jobs());
    assert_eq!(schedule(&r), sched(&[("io", 0, 600), ("cnn", 0, 600), ("plain", 0, 300)]));
    // A speed equal to the pool's changes nothing: the same run as naming none.
    let same = vec![with_speeds(job("j", 0, 1, 600), &[("fast", 2000), ("slow", 1000)])];
    let r = run("fifo[placement=fastest]", two_speeds(2000), same);
    assert_eq!(schedule(&r), sched(&[("j", 0, 300)]));
}

/// At speed 1.5, 100 s of work takes 100 / 1.5 = 66.666.. s, rounded up to the ms: it ends at
/// 66.667 s, never early.
#[test]
fn wall_time_rounds_up_to_the_millisecond() {
    let r = run("fifo[placement=fastest]", two_speeds(1500), vec![job("j", 0, 1, 100)]);
    assert_eq!(r.jobs[0].end, Some(SimTime(66_667)));
}

/// A 1-GPU task of 600 s of work checkpointing every 100 s of work, on the fast pool (speed 2,
/// GPU 2). GPU 2 fails at 130 s, seen at once: it has done 260 s of work, keeps 200 (its last
/// checkpoint) and loses 60 s of work = 30 s of wall time on its GPU. It restarts at once on
/// the fast pool's other GPU with 400 s of work: 200 s, ending at 330. GPU-time: 330 GPU-s
/// held, 30 of them redone.
#[test]
fn lost_work_is_counted_in_work_and_its_gpu_time_in_wall_time() {
    let mut j: JobSpec = job("j", 0, 1, 600);
    j.tasks[0].options_mut().checkpoint = Some(SimDuration::from_secs(100));
    let r = run_with_events(
        "fifo[placement=fastest]",
        two_speeds(2000),
        vec![j],
        vec![gpu_fail(1, 0, 130, 10_000)],
        ControllerConfig::default(),
    );
    let rec = &r.jobs[0];
    assert_eq!(rec.end, Some(SimTime::from_secs(330)));
    assert_eq!((rec.mgpu_ms, rec.lost_redo_mgpu_ms), (330_000_000, 30_000_000));
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(32) })]

    /// Random jobs on pools of random speeds, under every policy: the invariants hold after
    /// every step (GPU-time split exactly into productive, redone, lag and overhead), every job
    /// ends, and a task that ran without interruption held its GPUs exactly its work's wall
    /// time at the speed of its pool.
    #[test]
    fn speeds_keep_the_books_exact(
        fast_milli in 1u32..=5000,
        jobs in prop::collection::vec((0u64..=600, 1u32..=2, 1u64..=3_600_000), 1..=20),
    ) {
        let jobs: Vec<JobSpec> = jobs
            .iter()
            .enumerate()
            .map(|(i, &(submit_s, gpus, work_ms))| {
                let mut j = JobSpec::single(format!("j{i}"), SimTime::from_secs(submit_s), gpus, SimDuration(work_ms));
                j.tasks[0].estimate = SimDuration(work_ms).into();
                j
            })
            .collect();
        for spec in common::ALL_SPECS {
            let r = run(spec, two_speeds(fast_milli), jobs.clone());
            for j in &r.jobs {
                let spec_job = jobs.iter().find(|s| s.name == j.name).expect("every job has a record");
                prop_assert!(j.end.is_some(), "{}: {} never ended", spec, j.name);
                if j.preemptions == 0 {
                    let held_ms = j.mgpu_ms / 1000 / u64::from(spec_job.tasks[0].gpus);
                    let work = spec_job.tasks[0].work.as_ms();
                    let at = |speed: u64| (u128::from(work) * 1000).div_ceil(u128::from(speed)) as u64;
                    prop_assert!(held_ms == at(1000) || held_ms == at(u64::from(fast_milli)), "{}: {} held {} ms", spec, j.name, held_ms);
                }
            }
        }
    }
}
