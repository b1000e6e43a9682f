//! What happens at one instant does not depend on the order events were scheduled in:
//! equivalent histories (one failure or overlapping ones covering the same time, same-instant
//! records listed in another order, a repair time the scheduler cannot observe) give the same
//! schedule, the same detections and the same retirements. Each test is a hand-computed
//! scenario that failed before its fix; the order they rely on is in `sim/src/event.rs`
//! (repairs, then beats that reach the scheduler, then deadlines, then GPU failures seen).

mod common;

use common::{cluster, gpu_fail, heartbeats, job, node_fail, run_with_events, sched, schedule};
use sim::{
    ClusterEvent, ControllerConfig, DecisionKind, FailureConfig, JobOutcome, NodeId, RetireRule, RunResult,
    SimDuration, SimTime,
};

fn retire2() -> ControllerConfig {
    ControllerConfig {
        retire: Some(RetireRule { failures: 2, window: SimDuration::from_secs(3_600) }),
        ..ControllerConfig::default()
    }
}

fn series(r: &RunResult) -> Vec<(u64, u32, u32)> {
    r.health_series.iter().map(|h| (h.time.as_ms() / 1000, h.broken_gpus, h.unusable_gpus)).collect()
}

/// 1 node x 1 GPU, retire after 2 failures within an hour, h = 10 s, k = 3. The node is down
/// 1..11 s (misses the beat at 10; its first beat after the repair is due at 20), its GPU
/// 12..13 s. The second failure makes the rule due; the node is retired at 13 s, the repair of
/// the last failure, and "never returns to service" (RetireRule). z (1 GPU, submitted at 100 s)
/// can never run.
#[test]
fn a_node_retired_at_a_gpu_repair_never_rejoins() {
    let r = run_with_events(
        "fifo",
        cluster(&[(1, 1, "A")]),
        vec![job("z", 100, 1, 10)],
        vec![node_fail(0, 1, 10), gpu_fail(0, 0, 12, 1)],
        retire2(),
    );
    assert_eq!(r.stats.retired_nodes, 1);
    assert_eq!(
        (series(&r).last().copied(), r.jobs[0].first_start, r.jobs[0].end),
        (Some((13, 0, 1)), None, None),
        "{:?}",
        series(&r)
    );
}

/// 2 nodes x 1 GPU, retire after 2 failures. Node 1's GPU is down 0..100 s, node 1 itself
/// 10..50 s. The last of the failures is repaired at 100 s, so node 1 is retired then
/// (RetireRule: "retired when the last of them is repaired"); the symmetric case (GPU 0..50,
/// node 10..100) retires at 100 too. y (1 GPU, 200 s) runs on node 0 from 0 to 200.
#[test]
fn a_node_is_retired_at_the_repair_of_its_last_failure_node_or_gpu() {
    let run = |events| run_with_events("fifo", cluster(&[(2, 1, "A")]), vec![job("y", 0, 1, 200)], events, retire2());
    let gpu_last = run(vec![gpu_fail(1, 0, 0, 100), node_fail(1, 10, 40)]);
    let node_last = run(vec![gpu_fail(1, 0, 0, 50), node_fail(1, 10, 90)]);
    let got = [&gpu_last, &node_last].map(|r| (r.jobs[0].end, r.stats.retired_nodes, r.stats.retired_gpu_ms));
    assert_eq!(got, [(Some(SimTime::from_secs(200)), 1, 100_000); 2]);
}

/// 2 nodes x 1 GPU, retire after 2 failures. Node 1 is down 10..30 s: from one failure, from
/// two that overlap (10..20 and 15..30), or from two that touch (10..20 and 20..30: a failure
/// at the instant of a repair continues the down period). Overlapping failures of one part are
/// one failure (observe.rs, failure_properties' model; `stats.failures` is 1 each time), so
/// the node failed once and is never retired.
#[test]
fn overlapping_failures_count_once_towards_retirement() {
    let run = |events| run_with_events("fifo", cluster(&[(2, 1, "A")]), vec![job("y", 0, 1, 200)], events, retire2());
    let one = run(vec![node_fail(1, 10, 20)]);
    let overlap = run(vec![node_fail(1, 10, 10), node_fail(1, 15, 15)]);
    let touch = run(vec![node_fail(1, 10, 10), node_fail(1, 20, 10)]);
    let got = [&one, &overlap, &touch].map(|r| (r.stats.failures, r.stats.retired_nodes));
    assert_eq!(got, [(1, 0); 3]);
    assert_eq!(one.decisions, overlap.decisions);
    assert_eq!(one.decisions, touch.decisions);
}

/// 2 nodes x 1 GPU, node 0 with explicit beats recorded at 0, 10 and from 40 on every 10 s
/// (none at 20 and 30); k = 3, so the deadline is 30 s after a delivered beat. It fails at 5
/// (the beat at 10 is not delivered) and is repaired at 15 s, at 30 s or at 30.001 s: the last
/// delivered beat is 0 in all three, so it is declared dead at 30 and x (on it from 0) fails
/// then; it rejoins at 40. The scheduler cannot tell the three apart, and the deadline detects
/// the failure at 5 in each: one detection, 25 s of lag.
#[test]
fn an_explicit_deadline_detects_the_failure_since_the_last_beat_however_it_was_repaired() {
    let run = |repair_ms: u64| {
        let mut events = heartbeats(0, [0, 10].into_iter().chain((4..=20).map(|s| s * 10)));
        events.push(ClusterEvent::NodeFail {
            time: SimTime::from_secs(5),
            node: NodeId(0),
            repair: Some(SimDuration(repair_ms)),
        });
        run_with_events("fifo", cluster(&[(2, 1, "A")]), vec![job("x", 0, 1, 100)], events, ControllerConfig::default())
    };
    let runs = [run(10_000), run(25_000), run(25_001)];
    for r in &runs {
        assert_eq!(r.jobs[0].outcome, Some(JobOutcome::Succeeded));
        let fail = r.decisions.iter().find(|d| d.kind == DecisionKind::Fail).expect("x fails");
        assert_eq!(
            (fail.time, fail.detail.as_str()),
            (SimTime::from_secs(30), "its node was declared dead; retry 1 of 3")
        );
    }
    let got = runs.each_ref().map(|r| (r.stats.detections, r.stats.detection_lag_ms));
    assert_eq!(got, [(1, 25_000); 3]);
}

fn spares1(k: u32, gpu_detect_s: u64) -> ControllerConfig {
    ControllerConfig {
        spare_nodes: 1,
        failures: FailureConfig {
            missed_beats: k,
            gpu_detect_delay: SimDuration::from_secs(gpu_detect_s),
            ..FailureConfig::default()
        },
        ..ControllerConfig::default()
    }
}

fn node_fail_for_good(node: u32, at_s: u64) -> ClusterEvent {
    ClusterEvent::NodeFail { time: SimTime::from_secs(at_s), node: NodeId(node), repair: None }
}

/// 3 nodes x 1 GPU, node 2 a hot spare; h = 10 s, k = 3, GPU failures seen 25 s after. a and
/// b (1 GPU, 1000 s, progress kept) run on nodes 0 and 1 from 0. Node 0 and its GPU both fail
/// at 5 s for good: the node is declared dead at 30 (beats 10, 20, 30 missed) and the GPU's
/// failure is seen at 30. Node 0 is declared dead under a running task, so the spare enters
/// service and a restarts on it at 30 (995 s left: ends 1025), whichever of the two failures
/// the trace lists first.
#[test]
fn a_spare_replaces_a_dead_node_whichever_failure_at_its_instant_is_listed_first() {
    let run = |events| {
        run_with_events(
            "fifo",
            cluster(&[(3, 1, "A")]),
            vec![job("a", 0, 1, 1000), job("b", 0, 1, 1000)],
            events,
            spares1(3, 25),
        )
    };
    let node_first = run(vec![node_fail_for_good(0, 5), gpu_fail(0, 0, 5, 100_000)]);
    let gpu_first = run(vec![gpu_fail(0, 0, 5, 100_000), node_fail_for_good(0, 5)]);
    let got = [&node_first, &gpu_first].map(|r| (r.jobs[0].end.map(|t| t.as_ms() / 1000), r.stats.spare_swaps));
    assert_eq!(got, [(Some(1025), 1); 2]);
}

/// 3 nodes x 1 GPU, node 2 a hot spare; h = 10 s, k = 2. a and b (1 GPU, 1000 s, progress
/// kept) run on nodes 0 and 1 from 0.
/// - Node 1 fails at 10 until r: misses 10 and 20, declared dead at 20; b restarts on the spare
///   (node 2) at 20. Repaired at r in (20, 30), it beats again at 30 and rejoins then, to refill
///   the reserve.
/// - Node 0 fails at 15 (misses 20), is repaired at 22 and fails for good at 25, before its next
///   beat: it misses 20 and 30 in a row and is declared dead at 30 under a.
///
/// At 30 node 1 rejoins (to the reserve) and node 0 is declared dead under a running task: the
/// spare (node 1) enters service and a restarts on it at 30 (985 s left: ends 1015), for r = 23
/// as for r = 27 (node 1's repair time is unobservable: it rejoins at 30 either way).
#[test]
fn a_node_rejoining_at_the_instant_another_dies_is_its_spare_whenever_it_was_repaired() {
    let run = |r_s: u64| {
        let events = vec![node_fail(1, 10, r_s - 10), node_fail(0, 15, 7), node_fail_for_good(0, 25)];
        run_with_events(
            "fifo",
            cluster(&[(3, 1, "A")]),
            vec![job("a", 0, 1, 1000), job("b", 0, 1, 1000)],
            events,
            spares1(2, 0),
        )
    };
    let (early, late) = (run(23), run(27));
    let got = [&early, &late].map(|r| {
        (
            r.jobs[0].end.map(|t| t.as_ms() / 1000),
            r.jobs[1].end.map(|t| t.as_ms() / 1000),
            r.stats.spare_swaps,
            r.stats.restarts_without_spare,
        )
    });
    assert_eq!(got, [(Some(1015), Some(1010), 2, 0); 2]);
}

/// 2 nodes x 1 GPU, heartbeats every 10 s, dead at 3 missed. Node 0 is down 5..30 s, either
/// from one failure or from two that overlap (5..25 and 15..30). It misses the beats at 10 and
/// 20; repaired at 30, it sends the beat at 30, its third, so it is never declared dead: it
/// reports at 30 that it restarted, and x (1 GPU, 1000 s, running on it from 0) fails then
/// either way.
///
/// Bug (found by `srtf_with_failures`): with the two failures, the k-th missed beat, scheduled
/// at the first failure, came before the repair scheduled at the second, which was later in the
/// heap's order at that instant; the node was declared dead at 30. A repair now applies before
/// every observation of its instant, whichever was scheduled first.
#[test]
fn a_repair_at_the_kth_missed_beat_saves_the_node_however_its_failures_overlapped() {
    let run = |events| {
        run_with_events(
            "fifo",
            cluster(&[(2, 1, "A")]),
            vec![job("x", 0, 1, 1000)],
            events,
            ControllerConfig::default(),
        )
    };
    let one = run(vec![node_fail(0, 5, 25)]);
    let two = run(vec![node_fail(0, 5, 20), node_fail(0, 15, 15)]);
    for r in [&one, &two] {
        let fail = r.decisions.iter().find(|d| d.kind == DecisionKind::Fail).expect("x fails");
        assert_eq!((fail.time, fail.detail.as_str()), (SimTime::from_secs(30), "its node restarted; retry 1 of 3"));
    }
    assert_eq!(one.decisions, two.decisions);
}

/// 1 node x 1 GPU, GPU failures seen 20 s after they happen. The GPU is down 0..20 s, from one
/// failure or from two that overlap (0..10 and 5..20). The first failure is seen at 20, when
/// the GPU is repaired: y (1 GPU, 100 s, running from 0) fails then, and the GPU is never taken
/// out (before the fix, the second failure's repair applied after the observation, which took
/// the GPU out for that instant).
#[test]
fn a_gpu_failure_seen_at_the_instant_of_its_repair_never_takes_the_gpu_out() {
    let config = ControllerConfig {
        failures: FailureConfig { gpu_detect_delay: SimDuration::from_secs(20), ..FailureConfig::default() },
        ..ControllerConfig::default()
    };
    let run =
        |events| run_with_events("fifo", cluster(&[(1, 1, "A")]), vec![job("y", 0, 1, 100)], events, config.clone());
    let one = run(vec![gpu_fail(0, 0, 0, 20)]);
    let two = run(vec![gpu_fail(0, 0, 0, 10), gpu_fail(0, 0, 5, 15)]);
    for r in [&one, &two] {
        assert!(r.health_series.iter().all(|h| h.unusable_gpus == 0), "{:?}", r.health_series);
    }
    assert_eq!(one.decisions, two.decisions);
}

/// 1 node x 1 GPU, GPU failures seen 5 s after they happen. x (1 GPU, 100 s, progress kept)
/// runs from 0; its GPU is down 10..60 s, from one failure or from three records that overlap
/// and touch (10..30, 20..45, 45..60). It fails when the failure is seen at 15 and restarts
/// at the repair at 60 (90 s left: ends 150). A failure of a part already down and the repair
/// of one of overlapping failures change nothing, so they are no decision points: the runs
/// decide at the same instants. Nor is a heartbeat recorded from a node that is up (a third
/// run adds one every 10 s).
///
/// Before: every hardware event was a decision point, and a time-dependent policy (srtf, a
/// preemption) acted at the extra ones (found by `a_failure_split_into_overlapping_records_
/// changes_nothing`).
#[test]
fn hardware_events_that_change_nothing_are_no_decision_points() {
    let config = ControllerConfig {
        failures: FailureConfig { gpu_detect_delay: SimDuration::from_secs(5), ..FailureConfig::default() },
        ..ControllerConfig::default()
    };
    let run =
        |events| run_with_events("fifo", cluster(&[(1, 1, "A")]), vec![job("x", 0, 1, 100)], events, config.clone());
    let one = run(vec![gpu_fail(0, 0, 10, 50)]);
    let three = run(vec![gpu_fail(0, 0, 10, 20), gpu_fail(0, 0, 20, 25), gpu_fail(0, 0, 45, 15)]);
    let mut with_beats = vec![gpu_fail(0, 0, 10, 50)];
    with_beats.extend(heartbeats(0, (0..=20).map(|s| s * 10)));
    let beats = run(with_beats);
    for r in [&one, &three, &beats] {
        assert_eq!(schedule(r), sched(&[("x", 0, 150)]));
        // Arrival, failure, its detection, the repair, the finish.
        assert_eq!(r.stats.decision_points, 5, "{:?}", r.decisions);
    }
    assert_eq!(one.decisions, three.decisions);
    assert_eq!(one.decisions, beats.decisions);
}
