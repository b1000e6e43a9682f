//! Hand-computed failure scenarios: ground truth, detection by missed heartbeats or GPU
//! events, checkpoints, restart overhead and retry budgets, with every time and every
//! GPU-second worked out on paper.

mod common;

use common::{cluster, gpu_fail, heartbeats, job, node_fail, run_with_events, sched, schedule};
use sim::{ClusterEvent, ControllerConfig, FailureConfig, JobOutcome, NodeId, SimDuration, SimTime};

/// One 4-GPU task of 1000 s that checkpoints every 100 s and pays 30 s to restart.
fn checkpointed_job() -> sim::JobSpec {
    let mut a = job("a", 0, 4, 1000);
    a.tasks[0].options_mut().checkpoint = Some(SimDuration::from_secs(100));
    a.tasks[0].options_mut().restart_overhead = Some(SimDuration::from_secs(30));
    a
}

fn gpu_s(ms: u64) -> u64 {
    assert_eq!(ms % 1000, 0, "whole GPU-seconds expected");
    ms / 1000
}

#[test]
fn node_failure_is_detected_at_the_kth_missed_beat_and_the_task_restarts_from_its_checkpoint() {
    // 2 nodes x 4 GPUs; heartbeats every 10 s, dead after 3 missed. a runs on node 0 from 0.
    // Node 0 fails at 255: beats 260, 270, 280 are missed, so it is declared dead at 280.
    // a made 255 s of progress, its last checkpoint is at 200: 55 s of work are lost, and it
    // sat 25 s on a dead node. It restarts at 280 on node 1, pays 30 s, has 800 s left: ends
    // at 280 + 30 + 800 = 1110.
    let r = run_with_events(
        "fifo",
        cluster(&[(2, 4, "A")]),
        vec![checkpointed_job()],
        vec![node_fail(0, 255, 10_000)],
        ControllerConfig::default(),
    );
    assert_eq!(schedule(&r), sched(&[("a", 0, 1110)]));
    let a = &r.jobs[0];
    assert_eq!((a.failures, a.retries), (1, 1));
    assert_eq!(gpu_s(a.mgpu_ms / 1000), 4 * 280 + 4 * 830);
    assert_eq!(gpu_s(a.lost_redo_mgpu_ms / 1000), 4 * 55);
    assert_eq!(gpu_s(a.lost_lag_mgpu_ms / 1000), 4 * 25);
    assert_eq!(gpu_s(a.lost_overhead_mgpu_ms / 1000), 4 * 30);
    assert_eq!((r.stats.failures, r.stats.detections, r.stats.detection_lag_ms), (1, 1, 25_000));
    let restart = r.decisions.iter().filter(|d| d.kind == sim::DecisionKind::Start).nth(1).expect("a restart");
    assert_eq!(
        (restart.time, restart.gpus.iter().map(|g| g.0).collect::<Vec<_>>()),
        (SimTime::from_secs(280), vec![4, 5, 6, 7])
    );
}

#[test]
fn a_node_repaired_before_it_is_declared_dead_reports_its_lost_tasks_at_its_next_beat() {
    // As above, but node 0 is back at 262: it beats again at 270, never declared dead, and its
    // agent reports a lost. a fails at 270 (lag 15 s) and restarts on node 0 (the lowest
    // fullest node: both are empty): 270 + 30 + 800 = 1100.
    let r = run_with_events(
        "fifo",
        cluster(&[(2, 4, "A")]),
        vec![checkpointed_job()],
        vec![node_fail(0, 255, 7)],
        ControllerConfig::default(),
    );
    assert_eq!(schedule(&r), sched(&[("a", 0, 1100)]));
    assert_eq!(gpu_s(r.jobs[0].lost_lag_mgpu_ms / 1000), 4 * 15);
    let restart = r.decisions.iter().filter(|d| d.kind == sim::DecisionKind::Start).nth(1).expect("a restart");
    assert_eq!(restart.gpus.iter().map(|g| g.0).collect::<Vec<_>>(), vec![0, 1, 2, 3]);
}

#[test]
fn a_gpu_failure_is_seen_after_its_delay_and_past_the_budget_the_job_fails() {
    // 1 node x 2 GPUs, XID seen 5 s after the fact, one retry allowed, progress never lost
    // (checkpoint 0). b (1 GPU, 100 s) on g0. g0 fails at 10, seen at 15: retry 1 of 1 on g1
    // from 15 (90 s left). g1 fails at 50, seen at 55: second failure, past the budget: b and
    // its job fail at 55. Productive 10 + 35 s, lag 5 + 5 s.
    let config = ControllerConfig {
        failures: FailureConfig {
            gpu_detect_delay: SimDuration::from_secs(5),
            max_retries: 1,
            ..FailureConfig::default()
        },
        ..ControllerConfig::default()
    };
    let events = vec![gpu_fail(0, 0, 10, 1000), gpu_fail(0, 1, 50, 1000)];
    let r = run_with_events("fifo", cluster(&[(1, 2, "A")]), vec![job("b", 0, 1, 100)], events, config);
    let b = &r.jobs[0];
    assert!(
        matches!(&b.outcome, Some(JobOutcome::Failed(why)) if why.contains("failed 2 times") && why.contains("budget was 1")),
        "{:?}",
        b.outcome
    );
    assert_eq!(b.end, Some(SimTime::from_secs(55)));
    assert_eq!((b.failures, b.retries), (2, 1));
    assert_eq!(gpu_s(b.mgpu_ms / 1000), 15 + 40);
    assert_eq!(gpu_s(b.lost_lag_mgpu_ms / 1000), 10);
    assert_eq!(gpu_s(b.lost_redo_mgpu_ms / 1000), 0);
}

#[test]
fn a_deadline_shrinks_the_retry_budget_to_what_fits() {
    // 1 node x 2 GPUs, R_max 3. c (1 GPU, 100 s, deadline 130 s after submit). g0 fails at 60,
    // seen at once: mean attempt 60 s, 70 s left to the deadline: budget min(3, max(1, 1)) = 1,
    // so c retries on g1 from 60. g1 fails at 100: mean attempt (60 + 40) / 2 = 50 s, 30 s
    // left: budget max(1, 0) = 1, and this is the second failure: c fails at 100.
    let mut c = job("c", 0, 1, 100);
    c.deadline = SimDuration::from_secs(130).into();
    let events = vec![gpu_fail(0, 0, 60, 1000), gpu_fail(0, 1, 100, 1000)];
    let r = run_with_events("fifo", cluster(&[(1, 2, "A")]), vec![c], events, ControllerConfig::default());
    assert!(
        matches!(&r.jobs[0].outcome, Some(JobOutcome::Failed(why)) if why.contains("budget was 1")),
        "{:?}",
        r.jobs[0].outcome
    );
    assert_eq!(r.jobs[0].end, Some(SimTime::from_secs(100)));
}

#[test]
fn a_task_placed_on_a_broken_but_undetected_node_makes_no_progress() {
    // 2 nodes x 1 GPU. Node 1 fails at 5 (not known until 30: beats 10, 20, 30 missed). x
    // (1 GPU, 100 s) holds node 0 from 0; y (1 GPU, 10 s) arrives at 6 and pack puts it on
    // node 1, broken but not known to be: it makes no progress, fails at 30 (lag 24 s), and
    // waits for a healthy GPU: x ends at 100, y runs 100..110.
    let events = vec![node_fail(1, 5, 10_000)];
    let r = run_with_events(
        "fifo",
        cluster(&[(2, 1, "A")]),
        vec![job("x", 0, 1, 100), job("y", 6, 1, 10)],
        events,
        ControllerConfig::default(),
    );
    assert_eq!(schedule(&r), sched(&[("x", 0, 100), ("y", 6, 110)]));
    assert_eq!(gpu_s(r.jobs[1].lost_lag_mgpu_ms / 1000), 24);
}

#[test]
fn a_dead_node_rejoins_at_its_first_beat_after_repair() {
    // 1 node x 1 GPU. The node fails at 5 (dead at 30), repaired at 5 + 100 = 105, beats
    // again at 110. z (1 GPU, 10 s) arrives at 40 and can only start at 110: ends 120.
    let r = run_with_events(
        "fifo",
        cluster(&[(1, 1, "A")]),
        vec![job("z", 40, 1, 10)],
        vec![node_fail(0, 5, 100)],
        ControllerConfig::default(),
    );
    assert_eq!(schedule(&r), sched(&[("z", 110, 120)]));
    let series: Vec<(u64, u32, u32)> =
        r.health_series.iter().map(|h| (h.time.as_ms() / 1000, h.broken_gpus, h.unusable_gpus)).collect();
    assert_eq!(series, vec![(5, 1, 0), (30, 1, 1), (105, 0, 1), (110, 0, 0)]);
}

#[test]
fn explicit_heartbeats_are_honoured_gaps_included() {
    // 1 node x 1 GPU with recorded heartbeats at 0, 10, 20 and then 60, 70, ... (a gap, no
    // failure). After the beat at 20 nothing comes for 3 x 10 s: the node is declared dead at
    // 50 and w (1 GPU, 100 s, from 0, continuous checkpoints) fails there, losing nothing but
    // its GPU; the beat at 60 brings the node back and w restarts: 60 + 50 = 110.
    let mut events = heartbeats(0, [0, 10, 20, 60, 70, 80, 90, 100, 110, 120]);
    events.reverse(); // any order: the scenario sorts them
    let r = run_with_events(
        "fifo",
        cluster(&[(1, 1, "A")]),
        vec![job("w", 0, 1, 100)],
        events,
        ControllerConfig::default(),
    );
    assert_eq!(schedule(&r), sched(&[("w", 0, 110)]));
    assert_eq!((r.jobs[0].failures, r.stats.failures), (1, 0));
}

#[test]
fn events_naming_missing_hardware_are_refused() {
    let scenario = |e| {
        sim::Scenario::new(cluster(&[(1, 2, "A")]), sim::Workload::new(vec![job("a", 0, 1, 1)]).unwrap())
            .with_events(vec![e])
    };
    let err = scenario(gpu_fail(0, 2, 1, 1)).unwrap_err().to_string();
    assert!(err.contains("no GPU slot 2"), "{err}");
    let err = scenario(node_fail(3, 1, 1)).unwrap_err().to_string();
    assert!(err.contains("node 3 does not exist"), "{err}");
}

#[test]
fn avoid_failed_h_steers_new_work_away_from_a_node_that_just_failed() {
    // 2 nodes x 1 GPU. Node 0 fails at 5 and is back at 6: it beats again at 10, when its
    // failure becomes known. v (1 GPU) arrives at 20. Plain pack takes the lowest node (both
    // empty): node 0. With avoid_failed_h=1 node 0 had a failure seen 10 s ago: node 1.
    let jobs = || vec![job("v", 20, 1, 10)];
    let plain =
        run_with_events("fifo", cluster(&[(2, 1, "A")]), jobs(), vec![node_fail(0, 5, 1)], ControllerConfig::default());
    let wary = run_with_events(
        "fifo[avoid_failed_h=1]",
        cluster(&[(2, 1, "A")]),
        jobs(),
        vec![node_fail(0, 5, 1)],
        ControllerConfig::default(),
    );
    assert_eq!(common::first_gpus(&plain, "v"), vec![0]);
    assert_eq!(common::first_gpus(&wary, "v"), vec![1]);
    // A preference, not a ban: with node 1 busy, node 0 is used.
    let busy = vec![job("w", 0, 1, 100), job("v", 20, 1, 10)];
    let r = run_with_events(
        "fifo[avoid_failed_h=1]",
        cluster(&[(2, 1, "A")]),
        busy,
        vec![node_fail(0, 5, 1)],
        ControllerConfig::default(),
    );
    // w started at 0 on node 0, which failed at 5 and was back at 6: w fails at 10 and
    // restarts at once on node 1 (node 0 now avoided). v at 20 gets node 0 anyway.
    assert_eq!(common::first_gpus(&r, "v"), vec![0]);
}

/// 2 nodes x 1 GPU, nodes retired after 2 failures within 30 days. Node 0's GPU fails at 0 for
/// good (no repair time); node 0 itself is down 10..20 s. Its second failure is repaired at
/// 20 s, the last of its failures that will ever be: it is retired then, rather than waiting
/// for a repair that never comes (and rejoining meanwhile). y runs on node 1 from 0 to 200, so
/// the retired GPU-time is 200 - 20 = 180 s.
#[test]
fn a_node_with_a_gpu_broken_for_good_is_retired_at_its_last_repair() {
    let config = ControllerConfig {
        retire: Some(sim::RetireRule { failures: 2, window: SimDuration::from_secs(720 * 3600) }),
        ..ControllerConfig::default()
    };
    let gpu_for_good = ClusterEvent::GpuFail { time: SimTime::ZERO, node: NodeId(0), gpu: 0, repair: None };
    let r = run_with_events(
        "fifo",
        cluster(&[(2, 1, "A")]),
        vec![job("y", 0, 1, 200)],
        vec![gpu_for_good, node_fail(0, 10, 10)],
        config,
    );
    assert_eq!(schedule(&r), sched(&[("y", 0, 200)]));
    assert_eq!((r.stats.retired_nodes, gpu_s(r.stats.retired_gpu_ms)), (1, 180));
}

/// 2 nodes x 1 GPU, heartbeats every 10 s, dead at 3 missed; node 0's beats are recorded at 0
/// and then every 10 s from 15 on. Node 0 is down 11..12 s and 17..20 s. Its beat at 15 gets
/// out: it reports then the task it lost at 11 (4 s of lag). The beat at 25 reports the loss
/// at 17 (8 s): the second failure starts a new run of missed beats, since a beat was
/// delivered after the first. (Before, the implicit beat grid judged that no beat got out
/// since the repair at 12, and counted 14 s from 11.)
#[test]
fn an_explicit_beat_between_two_failures_starts_a_new_run_of_missed_beats() {
    let mut events = heartbeats(0, std::iter::once(0).chain((0..20).map(|i| 15 + 10 * i)));
    events.extend([node_fail(0, 11, 1), node_fail(0, 17, 3)]);
    let r = run_with_events(
        "fifo",
        cluster(&[(2, 1, "A")]),
        vec![job("x", 0, 1, 100)],
        events,
        ControllerConfig::default(),
    );
    let fails: Vec<(u64, &str)> = r
        .decisions
        .iter()
        .filter(|d| d.kind == sim::DecisionKind::Fail)
        .map(|d| (d.time.as_ms() / 1000, d.detail.as_str()))
        .collect();
    assert_eq!(fails, [(15, "its node restarted; retry 1 of 3"), (25, "its node restarted; retry 2 of 3")]);
    assert_eq!((r.stats.detections, r.stats.detection_lag_ms), (2, 12_000));
}
