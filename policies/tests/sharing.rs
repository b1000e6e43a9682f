//! GPU sharing (fractional tasks, as in Alibaba's openb trace): hand-computed placements,
//! schedules and GPU-time, in milli-GPU-milliseconds.

mod common;

use common::{cluster, first_gpus, gpu_fail, job, run, run_with_events, sched, schedule};
use sim::{ControllerConfig, JobSpec};

/// A single-task job holding `milli` thousandths of one GPU for `work_s` seconds.
fn share(name: &str, submit_s: u64, milli: u32, work_s: u64) -> JobSpec {
    let mut j = job(name, submit_s, 1, work_s);
    j.tasks[0].gpu_milli = Some(sim::gpu_share(milli).expect("a share of 1..=999 milli-GPUs"));
    j
}

/// 1 node x 2 GPUs at 0: a (0.5 GPU), b (0.3), c (0.4), all 100 s, then d (a whole GPU, 100 s).
fn mixed() -> Vec<JobSpec> {
    vec![share("a", 0, 500, 100), share("b", 0, 300, 100), share("c", 0, 400, 100), job("d", 0, 1, 100)]
}

#[test]
fn pack_fills_a_shared_gpu_before_opening_another_and_whole_tasks_never_share() {
    // a opens g0 (500 used); b fits in g0's 500 left (800 used); c (400) does not, opens g1.
    // d needs a whole GPU: none is free until a, b, c end at 100; d runs 100..200.
    let r = run("fifo", cluster(&[(1, 2, "A")]), mixed());
    assert_eq!((first_gpus(&r, "a"), first_gpus(&r, "b"), first_gpus(&r, "c")), (vec![0], vec![0], vec![1]));
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 0, 100), ("c", 0, 100), ("d", 100, 200)]));
    // GPU-time: a 100 s x 500 milli, ...; the cluster held 1,200 milli-GPUs for 100 s, then 1,000.
    let held: Vec<u64> = r.jobs.iter().map(|j| j.mgpu_ms).collect();
    assert_eq!(held, vec![50_000_000, 30_000_000, 40_000_000, 100_000_000]);
    assert_eq!(r.stats.allocated_mgpu_ms, 220_000_000);
    // Utilisation 220e6 / (2 GPUs x 200 s x 1000) = 0.55.
    assert_eq!(r.stats.allocated_mgpu_ms * 100 / (2 * 200_000 * 1000), 55);
}

#[test]
fn spread_opens_free_gpus_first_then_the_roomiest_shared_one() {
    // a opens g0, b opens g1; c (400) finds no free GPU: g1 has 700 left, g0 500: g1.
    let r = run("fifo[placement=spread]", cluster(&[(1, 2, "A")]), mixed());
    assert_eq!((first_gpus(&r, "a"), first_gpus(&r, "b"), first_gpus(&r, "c")), (vec![0], vec![1], vec![1]));
}

#[test]
fn a_share_waits_for_room_and_a_whole_gpu_is_never_shared() {
    // 1 x 1 GPU. e holds it whole from 0 to 100: f (0.1 GPU, at 1) waits until 100. Then g
    // (0.95, at 150) cannot join f's GPU (900 room): it waits for f to end at 200.
    let jobs = vec![job("e", 0, 1, 100), share("f", 1, 100, 100), share("g", 150, 950, 10)];
    let r = run("fifo[skip=true]", cluster(&[(1, 1, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("e", 0, 100), ("f", 100, 200), ("g", 200, 210)]));
}

#[test]
fn a_strict_head_sharing_a_gpu_starts_when_a_share_ends_and_leaves_room() {
    // 1 x 1 GPU: a (0.5, 100 s) and b (0.5, 50 s) share it from 0. c (0.5, 10 s, at 1) finds
    // no room and heads strict fifo's queue; d (0.5, at 2) arrives behind it, a decision point
    // that frees nothing. b ends at 50 and leaves 500 room on the GPU, still shared by a: c
    // starts there (50..60), then d (60..70), long before a ends at 100.
    let jobs = vec![share("a", 0, 500, 100), share("b", 0, 500, 50), share("c", 1, 500, 10), share("d", 2, 500, 10)];
    let r = run("fifo", cluster(&[(1, 1, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 0, 50), ("c", 50, 60), ("d", 60, 70)]));
}

#[test]
fn a_failed_shared_gpu_fails_every_share_on_it() {
    // 1 x 1 GPU shared by a and b (0.5 each, 100 s). It fails at 10 (seen at once) and is back
    // at 50: both retry there with their 10 s of progress: 50 + 90 = 140.
    let jobs = vec![share("a", 0, 500, 100), share("b", 0, 500, 100)];
    let r = run_with_events(
        "fifo",
        cluster(&[(1, 1, "A")]),
        jobs,
        vec![gpu_fail(0, 0, 10, 40)],
        ControllerConfig::default(),
    );
    assert_eq!(schedule(&r), sched(&[("a", 0, 140), ("b", 0, 140)]));
    assert_eq!((r.stats.task_failures, r.stats.retries), (2, 2));
    assert_eq!(r.jobs[0].mgpu_ms, 100_000 * 500);
}

#[test]
fn a_share_of_a_whole_gpu_or_of_several_gpus_is_refused() {
    // A share of 0 cannot be held (`gpu_milli` is non-zero): importers refuse it, and any other
    // value that is not a share, through `sim::gpu_share`.
    for milli in [0, 1000, 65_536] {
        assert_eq!(sim::gpu_share(milli), None);
    }
    for (gpus, milli) in [(1, 1000), (1, u16::MAX), (2, 500)] {
        let mut j = job("x", 0, gpus, 10);
        j.tasks[0].gpu_milli = std::num::NonZeroU16::new(milli);
        let err = sim::Workload::new(vec![j]).unwrap_err().to_string();
        assert!(err.contains("1..=999 milli-GPUs of exactly 1 GPU"), "{err}");
    }
}

mod properties {
    use super::common::{ALL_SPECS, cluster, run_with_events};
    use proptest::prelude::*;
    use sim::{
        ClusterEvent, ControllerConfig, FailureConfig, JobOutcome, JobSpec, NodeId, SimDuration, SimTime, TaskSpec,
    };

    /// 1..=30 jobs mixing shares (100..=900 milli) and whole-GPU gangs of 1, 2 or 4.
    fn jobs() -> impl Strategy<Value = Vec<JobSpec>> {
        let task = (
            prop_oneof![2 => (1u16..=9).prop_map(|m| (1, std::num::NonZeroU16::new(m * 100))), 1 => prop_oneof![Just(1u32), Just(2), Just(4)].prop_map(|g| (g, None))],
            1u64..=600_000,
        );
        prop::collection::vec((0u64..=300_000, task), 1..=30).prop_map(|rows| {
            rows.into_iter()
                .enumerate()
                .map(|(i, (submit, ((gpus, milli), work)))| {
                    let mut t = TaskSpec::new("0", gpus, SimDuration(work));
                    t.gpu_milli = milli;
                    t.estimate = SimDuration(work).into();
                    JobSpec {
                        name: format!("j{i}").into(),
                        submit: SimTime(submit),
                        queue: None,
                        deadline: sim::OptDuration::NONE,
                        cancel: sim::OptTime::NONE,
                        priority: 0,
                        owner: None,
                        co_start: false,
                        tasks: [t].into(),
                    }
                })
                .collect()
        })
    }

    /// A few GPU and node failures on a 2 x 4 cluster, repaired within 10 minutes.
    fn failures() -> impl Strategy<Value = Vec<ClusterEvent>> {
        let one =
            (0u64..=600_000, 0u32..2, prop::option::of(0u32..4), 1u64..=600_000).prop_map(|(t, node, gpu, repair)| {
                let (time, node, repair) = (SimTime(t), NodeId(node), Some(SimDuration(repair)));
                match gpu {
                    Some(gpu) => ClusterEvent::GpuFail { time, node, gpu, repair },
                    None => ClusterEvent::NodeFail { time, node, repair },
                }
            });
        prop::collection::vec(one, 0..=4)
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(64) })]

        /// Every policy, shares and whole GPUs mixed, hardware failing: the invariants hold at
        /// every step (no GPU over 1000 milli, whole GPUs never shared, nothing on a GPU known
        /// unusable), every job succeeds, and GPU-time adds up exactly.
        #[test]
        fn shares_and_whole_gpus_mix_safely(jobs in jobs(), events in failures(), spec in prop::sample::select(ALL_SPECS)) {
            // Four failures can hit one task four times: a budget of 8 retries lets every job end.
            let config = ControllerConfig { failures: FailureConfig { max_retries: 8, ..FailureConfig::default() }, ..ControllerConfig::default() };
            let r = run_with_events(spec, cluster(&[(2, 4, "A")]), jobs.clone(), events, config);
            let mut total = 0u128;
            for (record, spec_job) in r.jobs.iter().zip(&{ let mut j = jobs.clone(); j.sort_by_key(|j| j.submit); j }) {
                prop_assert_eq!(&record.outcome, &Some(JobOutcome::Succeeded), "{} {:?}", spec, record);
                let t = &spec_job.tasks[0];
                let mgpus = u64::from(t.gpus) * t.gpu_milli.map_or(1000, |m| u64::from(m.get()));
                let lost = record.lost_redo_mgpu_ms + record.lost_lag_mgpu_ms + record.lost_overhead_mgpu_ms;
                prop_assert_eq!(record.mgpu_ms, t.work.as_ms() * mgpus + lost, "{} {:?}", spec, record);
                total += u128::from(record.mgpu_ms);
            }
            prop_assert_eq!(r.stats.allocated_mgpu_ms, total);
        }
    }
}

#[test]
fn a_failed_shared_gpu_takes_no_new_share_while_its_shares_are_released() {
    // 1 x 1 GPU, a (half of it, 100 s) alone on it; the GPU fails at 10 (seen at once) and is
    // back at 50. a's half is being released 10..12 while the GPU is out: its retry may not
    // take the room that half leaves, and waits for the repair. 0..10 kept (continuous
    // checkpoints), 90 s left from 50: it ends at 140, as with no latency.
    let jobs = || vec![share("a", 0, 500, 100)];
    let latency = ControllerConfig { release_latency: sim::SimDuration::from_secs(2), ..ControllerConfig::default() };
    for config in [latency, ControllerConfig::default()] {
        let r = run_with_events("fifo", cluster(&[(1, 1, "A")]), jobs(), vec![gpu_fail(0, 0, 10, 40)], config);
        assert_eq!(schedule(&r), sched(&[("a", 0, 140)]));
    }
}
