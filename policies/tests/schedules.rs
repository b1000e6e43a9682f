//! Hand-computed schedules: tiny clusters where every start and end time was worked out on
//! paper (the derivation is in each test's comment) and the simulator must match exactly.

mod common;

use common::{cluster, first_gpus, job, job_est, node_fail, run, run_with, run_with_events, sched, schedule};
use sim::{ControllerConfig, JobOutcome, SimDuration};
use std::num::NonZeroU32;

/// 1 node x 4 GPUs. a (2 GPUs, 10 s) starts at 0; b (4 GPUs) must wait for a; c (1 GPU, t=1)
/// fits beside a at once.
fn head_blocking_jobs() -> Vec<sim::JobSpec> {
    vec![job("a", 0, 2, 10), job("b", 0, 4, 5), job("c", 1, 1, 2)]
}

#[test]
fn fifo_strict_blocks_behind_the_head() {
    // 0: a starts; b blocked. 1: c queued behind b. 10: a ends, b starts (ends 15). 15: c runs to 17.
    let r = run("fifo", cluster(&[(1, 4, "A")]), head_blocking_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 10, 15), ("c", 15, 17)]));
}

#[test]
fn fifo_skip_starts_later_jobs_that_fit() {
    // 1: c fits in the 2 GPUs beside a and runs 1..3, past the blocked b.
    let r = run("fifo[skip=true]", cluster(&[(1, 4, "A")]), head_blocking_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 10, 15), ("c", 1, 3)]));
}

/// 1 node x 2 GPUs, four jobs at t=0 in file order x, y, z, w.
fn sjf_jobs() -> Vec<sim::JobSpec> {
    vec![job("x", 0, 2, 100), job("y", 0, 1, 30), job("z", 0, 1, 20), job("w", 0, 2, 5)]
}

#[test]
fn fifo_same_jobs_in_arrival_order() {
    // 0: x (2 GPUs) to 100. 100: y, z start; w blocked. 120: z ends. 130: y ends, w 130..135.
    let r = run("fifo", cluster(&[(1, 2, "A")]), sjf_jobs());
    assert_eq!(schedule(&r), sched(&[("x", 0, 100), ("y", 100, 130), ("z", 100, 120), ("w", 130, 135)]));
}

#[test]
fn sjf_oracle_runs_shortest_first() {
    // 0: w (5 s) first, alone. 5: z (20) and y (30). 25: z ends, x needs 2. 35: x 35..135.
    let r = run("sjf", cluster(&[(1, 2, "A")]), sjf_jobs());
    assert_eq!(schedule(&r), sched(&[("x", 35, 135), ("y", 5, 35), ("z", 5, 25), ("w", 0, 5)]));
}

#[test]
fn sjf_estimate_orders_by_the_estimate_not_the_truth() {
    // Estimates y=1, z=50, x=100, w=200. 0: y, z start. 20: z ends (1 free). 30: y ends; x (est
    // 100) before w (est 200): x 30..130, then w 130..135.
    let jobs = vec![
        job_est("x", 0, 2, 100, 100),
        job_est("y", 0, 1, 30, 1),
        job_est("z", 0, 1, 20, 50),
        job_est("w", 0, 2, 5, 200),
    ];
    let r = run("sjf[duration=estimate]", cluster(&[(1, 2, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("x", 30, 130), ("y", 0, 30), ("z", 0, 20), ("w", 130, 135)]));
}

#[test]
fn estimate_policies_refuse_a_trace_without_estimates() {
    let mut policy = policies::build("srtf[duration=estimate]").unwrap();
    let workload = sim::Workload::new(sjf_jobs()).unwrap();
    let err = sim::simulate(
        sim::Scenario::new(cluster(&[(1, 2, "A")]), workload),
        policy.as_mut(),
        ControllerConfig::default(),
    )
    .unwrap_err();
    assert!(err.to_string().contains("job `x` has a task without one"), "{err}");
}

/// 1 node x 2 GPUs. a (2 GPUs, 100 s) at 0; b (1 GPU, 20 s) at 10; c (2 GPUs, 5 s) at 20.
fn srtf_jobs() -> Vec<sim::JobSpec> {
    vec![job("a", 0, 2, 100), job("b", 10, 1, 20), job("c", 20, 2, 5)]
}

#[test]
fn srtf_preempts_the_longest_remaining() {
    // 10: b (20 left) preempts a (90 left), runs 10..; 20: c (5) preempts b (10 left), runs
    // 20..25. 25: b resumes, 25..35. 35: a resumes, 35..125.
    let r = run("srtf", cluster(&[(1, 2, "A")]), srtf_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 125), ("b", 10, 35), ("c", 20, 25)]));
    let preemptions: Vec<u32> = r.jobs.iter().map(|j| j.preemptions).collect();
    assert_eq!(preemptions, vec![1, 1, 0]);
}

#[test]
fn srtf_restart_overhead_is_paid_on_each_restart() {
    // As above with a 3 s restart overhead: b resumes at 25 and ends 25+3+10 = 38; a resumes
    // at 38 and ends 38+3+90 = 131. GPU-time: a 2x10 + 2x93, b 10 + 13, c 2x5 = 239 GPU-s.
    let config = ControllerConfig { restart_overhead: SimDuration::from_secs(3), ..ControllerConfig::default() };
    let r = run_with("srtf", cluster(&[(1, 2, "A")]), srtf_jobs(), config);
    assert_eq!(schedule(&r), sched(&[("a", 0, 131), ("b", 10, 38), ("c", 20, 25)]));
    let gpu_s: Vec<u64> = r.jobs.iter().map(|j| j.mgpu_ms / 1000 / 1000).collect();
    assert_eq!(gpu_s, vec![206, 23, 10]);
    assert_eq!(r.stats.allocated_mgpu_ms as u64 / 1000, 239_000);
}

/// 1 node x 4 GPUs. a (2 GPUs, 10 s) at 0; at 1: b (4, 10), c (2, 20), d (1, 5), e (1, 9).
fn backfill_jobs() -> Vec<sim::JobSpec> {
    vec![job("a", 0, 2, 10), job("b", 1, 4, 10), job("c", 1, 2, 20), job("d", 1, 1, 5), job("e", 1, 1, 9)]
}

#[test]
fn easy_backfill_never_delays_the_head() {
    // 1: b reserved at shadow 10 (a ends), extra 0. c would end at 21: no. d ends 6, e ends 10:
    // both backfill. 10: b 10..20. 20: c 20..40.
    let r = run("easy-backfill", cluster(&[(1, 4, "A")]), backfill_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 10, 20), ("c", 20, 40), ("d", 1, 6), ("e", 1, 10)]));
}

#[test]
fn fifo_skip_delays_the_head_where_backfill_does_not() {
    // 1: c takes the 2 free GPUs until 21, so b waits until 21. 10: d 10..15, e 10..19.
    let r = run("fifo[skip=true]", cluster(&[(1, 4, "A")]), backfill_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 21, 31), ("c", 1, 21), ("d", 10, 15), ("e", 10, 19)]));
}

#[test]
fn easy_backfill_uses_the_extra_gpus_at_the_shadow_time() {
    // 1 node x 4. a (3, 10) at 0. b (2, 10) at 1: shadow 10 with 4 free, extra 2. c (1, 100)
    // ends long after 10 but fits in the extra: backfills at 1. 10: b 10..20.
    let jobs = vec![job("a", 0, 3, 10), job("b", 1, 2, 10), job("c", 1, 1, 100)];
    let r = run("easy-backfill", cluster(&[(1, 4, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 10, 20), ("c", 1, 101)]));
}

#[test]
fn easy_backfill_does_not_backfill_past_the_extra() {
    // 1 node x 4. a (2, 10) at 0. b (3, 10) at 1: shadow 10 with 4 free, extra 1. c (1, 100)
    // takes the extra; d (1, 100) fits now but would hold a GPU b needs at 10: it waits.
    // 10: b 10..20. 20: d 20..120. (fifo[skip=true] would start d at 1 and delay b to 101.)
    let jobs = vec![job("a", 0, 2, 10), job("b", 1, 3, 10), job("c", 1, 1, 100), job("d", 1, 1, 100)];
    let r = run("easy-backfill", cluster(&[(1, 4, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 10, 20), ("c", 1, 101), ("d", 20, 120)]));
}

#[test]
fn pack_fills_the_fullest_node_and_keeps_whole_nodes() {
    // 2 nodes x 4. a, b (1 GPU) both go to node 0 (GPUs 0, 1); c (4) gets node 1 whole.
    let jobs = vec![job("a", 0, 1, 100), job("b", 0, 1, 100), job("c", 0, 4, 100)];
    let r = run("fifo[placement=pack]", cluster(&[(2, 4, "A")]), jobs);
    assert_eq!(first_gpus(&r, "a"), vec![0]);
    assert_eq!(first_gpus(&r, "b"), vec![1]);
    assert_eq!(first_gpus(&r, "c"), vec![4, 5, 6, 7]);
}

#[test]
fn spread_uses_the_emptiest_node_and_spans_when_it_must() {
    // 2 nodes x 4. a -> node 0 (tie, lowest id), b -> node 1 (emptiest). c (4) fits on no node:
    // the emptiest first (node 0 on the 3-3 tie: GPUs 1, 2, 3), the last GPU on node 1 (GPU 5).
    let jobs = vec![job("a", 0, 1, 100), job("b", 0, 1, 100), job("c", 0, 4, 100)];
    let r = run("fifo[placement=spread]", cluster(&[(2, 4, "A")]), jobs);
    assert_eq!(first_gpus(&r, "a"), vec![0]);
    assert_eq!(first_gpus(&r, "b"), vec![4]);
    assert_eq!(first_gpus(&r, "c"), vec![1, 2, 3, 5]);
}

#[test]
fn pack_prefers_the_pool_with_the_fullest_fitting_node_spread_the_freest_pool() {
    // Pools A (1 x 4, GPUs 0-3) and B (1 x 8, GPUs 4-11); a 2-GPU task of any type.
    let jobs = || vec![job("a", 0, 2, 10)];
    let packed = run("fifo", cluster(&[(1, 4, "A"), (1, 8, "B")]), jobs());
    assert_eq!(first_gpus(&packed, "a"), vec![0, 1]);
    let spread = run("fifo[placement=spread]", cluster(&[(1, 4, "A"), (1, 8, "B")]), jobs());
    assert_eq!(first_gpus(&spread, "a"), vec![4, 5]);
}

#[test]
fn a_gpu_type_confines_the_task_to_its_pool() {
    let mut j = job("a", 0, 2, 10);
    j.tasks[0].gpu_type = Some("b".into()); // types compare case-insensitively
    let r = run("fifo", cluster(&[(1, 4, "A"), (1, 8, "B")]), vec![j]);
    assert_eq!(first_gpus(&r, "a"), vec![4, 5]);
}

#[test]
fn jobs_that_can_never_fit_are_unschedulable_with_a_reason_and_others_run() {
    let mut single = job("single", 0, 8, 10);
    single.tasks[0].single_node = true;
    let mut typed = job("typed", 0, 1, 10);
    typed.tasks[0].gpu_type = Some("H100".into());
    let jobs = vec![job("huge", 0, 16, 10), single, typed, job("ok", 0, 8, 10)];
    let r = run("fifo", cluster(&[(2, 4, "A")]), jobs);
    let outcome = |name: &str| r.jobs.iter().find(|j| j.name == name).unwrap().outcome.clone().unwrap();
    assert!(
        matches!(outcome("huge"), JobOutcome::Unschedulable(ref why) if why.contains("16 GPUs") && why.contains("has 8"))
    );
    assert!(matches!(outcome("single"), JobOutcome::Unschedulable(ref why) if why.contains("on one node")));
    assert!(matches!(outcome("typed"), JobOutcome::Unschedulable(ref why) if why.contains("H100")));
    assert_eq!(outcome("ok"), JobOutcome::Succeeded);
    // The 8-GPU job spans both nodes and runs at once.
    assert_eq!(schedule_of(&r, "ok"), (0, 10));
}

fn schedule_of(r: &sim::RunResult, name: &str) -> (u64, u64) {
    let j = r.jobs.iter().find(|j| j.name == name).unwrap();
    (j.first_start.unwrap().as_ms() / 1000, j.end.unwrap().as_ms() / 1000)
}

#[test]
fn completions_free_gpus_before_arrivals_at_the_same_instant() {
    // 1 node x 1. a runs 0..10; b arrives at exactly 10 and starts at 10, not later.
    let r = run("fifo", cluster(&[(1, 1, "A")]), vec![job("a", 0, 1, 10), job("b", 10, 1, 5)]);
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 10, 15)]));
}

#[test]
fn unknown_policies_and_parameters_list_the_valid_ones() {
    let err = |spec: &str| policies::build(spec).err().expect("spec is invalid").to_string();
    assert!(err("lottery").contains("fifo, sjf, srtf, easy-backfill"));
    assert!(err("sjf[speed=3]").contains("duration=oracle|estimate"));
    assert!(err("fifo[skip=maybe]").contains("true|false"));
    assert!(err("srtf[placement=random]").contains("pack|spread"));
    assert!(err("fifo[skip").contains("`]`"));
    assert_eq!(
        policies::build("easy-backfill").unwrap().name(),
        "easy-backfill[duration=oracle,depth=100,placement=pack,avoid_failed_h=0]"
    );
}

/// 3 nodes x 4 GPUs (g0-g3 node 0, g4-g7 node 1, g8-g11 node 2). a (2 GPUs, 100 s) at 0; b
/// (6 GPUs, 3 on each node, 50 s) at 0; c (4 GPUs, 2 on each node, 10 s) at 0.
fn per_node_jobs() -> Vec<sim::JobSpec> {
    let mut b = job("b", 0, 6, 50);
    b.tasks[0].gpus_per_node = NonZeroU32::new(3);
    let mut c = job("c", 0, 4, 10);
    c.tasks[0].gpus_per_node = NonZeroU32::new(2);
    vec![job("a", 0, 2, 100), b, c]
}

#[test]
fn a_gang_with_gpus_per_node_takes_exactly_that_many_on_each_node() {
    // pack. 0: a on node 0 (g0, g1). b needs 2 nodes with 3 free: nodes 1 and 2, 3 each (left
    // free, b would take node 1 whole and the 2 GPUs beside a). c needs 2 nodes with 2 free:
    // only node 0 has them (nodes 1, 2 have 1 each), so c waits although 4 GPUs are free. 50:
    // b ends; the fullest nodes with 2 free are node 0 (2 free), then node 1: c 50..60.
    let r = run("fifo", cluster(&[(3, 4, "A")]), per_node_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 0, 50), ("c", 50, 60)]));
    assert_eq!(first_gpus(&r, "b"), vec![4, 5, 6, 8, 9, 10]);
    assert_eq!(first_gpus(&r, "c"), vec![2, 3, 4, 5]);
    // Without the constraint the same jobs pack b as node 1 whole and a's neighbours, and c
    // starts at once on the rest.
    let mut free = per_node_jobs();
    free.iter_mut().for_each(|j| j.tasks[0].gpus_per_node = None);
    let r = run("fifo", cluster(&[(3, 4, "A")]), free);
    assert_eq!(first_gpus(&r, "b"), vec![4, 5, 6, 7, 2, 3]);
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 0, 50), ("c", 0, 10)]));
}

#[test]
fn spread_puts_a_gang_with_gpus_per_node_on_the_emptiest_nodes() {
    // spread: a goes to node 0 (all empty, lowest id). b: the emptiest nodes with 3 free are
    // nodes 1 and 2. 50: c takes the emptiest nodes with 2 free, nodes 1 and 2 (4 each), not
    // node 0 beside a.
    let r = run("fifo[placement=spread]", cluster(&[(3, 4, "A")]), per_node_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 0, 50), ("c", 50, 60)]));
    assert_eq!(first_gpus(&r, "b"), vec![4, 5, 6, 8, 9, 10]);
    assert_eq!(first_gpus(&r, "c"), vec![4, 5, 8, 9]);
}

#[test]
fn a_gang_whose_gpus_per_node_no_node_has_is_unschedulable_with_a_reason() {
    // 2 nodes x 4 GPUs: 8 GPUs at 4 a node fit; 6 GPUs at 2 a node need 3 nodes; 8 GPUs at 8
    // a node need nodes of 8.
    let mut whole = job("whole", 0, 8, 10);
    whole.tasks[0].gpus_per_node = NonZeroU32::new(4);
    let mut three = job("three", 0, 6, 10);
    three.tasks[0].gpus_per_node = NonZeroU32::new(2);
    let mut big = job("big", 0, 8, 10);
    big.tasks[0].gpus_per_node = NonZeroU32::new(8);
    let r = run("fifo", cluster(&[(2, 4, "A")]), vec![whole, three, big]);
    let outcome = |name: &str| r.jobs.iter().find(|j| j.name == name).unwrap().outcome.clone().unwrap();
    assert_eq!(outcome("whole"), JobOutcome::Succeeded);
    let why = |name: &str| match outcome(name) {
        JobOutcome::Unschedulable(why) => why,
        other => panic!("{name}: {other:?}"),
    };
    assert!(
        why("three").contains("6 GPUs, 2 on each node it uses; taken so, the most an eligible pool (`A`) has 4"),
        "{}",
        why("three")
    );
    assert!(
        why("big").contains("8 on each node it uses; taken so, the most an eligible pool (`A`) has 0"),
        "{}",
        why("big")
    );
}

#[test]
fn passes_every_5_s_hold_every_start_to_the_next_pass() {
    // 1 node x 2 GPUs, passes at 0, 5, 10, 15 s. a (2 GPUs, 12 s) at 0 starts in the pass at 0.
    // b (1 GPU, 3 s) at 1 waits for a's GPUs; a ends at 12, between passes: b starts at 15.
    // c (1 GPU, 2 s) at 13 also waits for the pass at 15. Deciding at every event instead, b
    // starts when a ends (12) and c when it arrives (13).
    let jobs = || vec![job("a", 0, 2, 12), job("b", 1, 1, 3), job("c", 13, 1, 2)];
    let passes = ControllerConfig { pass_interval: SimDuration(5_000), ..ControllerConfig::default() };
    let r = run_with("fifo", cluster(&[(1, 2, "A")]), jobs(), passes);
    assert_eq!(schedule(&r), sched(&[("a", 0, 12), ("b", 15, 18), ("c", 15, 17)]));
    let r = run("fifo", cluster(&[(1, 2, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 12), ("b", 12, 15), ("c", 13, 15)]));
}

/// The run settings with GPUs returning `seconds` after the task that held them lets go.
fn release_after(seconds: u64) -> ControllerConfig {
    ControllerConfig { release_latency: SimDuration::from_secs(seconds), ..ControllerConfig::default() }
}

#[test]
fn a_release_latency_holds_the_gpus_a_task_let_go_of() {
    // 1 node x 2 GPUs, GPUs back 2 s after a task ends. a (2 GPUs, 10 s) at 0 runs 0..10; its
    // GPUs return at 12, so b (1 GPU, 5 s, waiting since 0) runs 12..17, and c (1 GPU, 3 s),
    // arriving at 12 as they return, 12..15 beside it. d (2 GPUs, 1 s) at 13 needs both: c's
    // is back at 17, b's at 19: d runs 19..20. Without the latency: b 10..15, c 12..15, d 15..16.
    let jobs = || vec![job("a", 0, 2, 10), job("b", 0, 1, 5), job("c", 12, 1, 3), job("d", 13, 2, 1)];
    let r = run_with("fifo", cluster(&[(1, 2, "A")]), jobs(), release_after(2));
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 12, 17), ("c", 12, 15), ("d", 19, 20)]));
    let r = run("fifo", cluster(&[(1, 2, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 10), ("b", 10, 15), ("c", 12, 15), ("d", 15, 16)]));
}

#[test]
fn a_preemption_hands_its_gpus_over_at_once_and_an_end_after_the_latency() {
    // 1 node x 2 GPUs, GPUs back 2 s after a task ends; srtf, progress never lost. a (2 GPUs,
    // 100 s) at 0. b (2 GPUs, 10 s) at 5 has less left (10 < 95): a is preempted and b starts
    // on its GPUs at once, 5..15. b's GPUs return at 17, when a restarts with its 95 s: 17..112.
    let jobs = vec![job("a", 0, 2, 100), job("b", 5, 2, 10)];
    let r = run_with("srtf", cluster(&[(1, 2, "A")]), jobs, release_after(2));
    assert_eq!(schedule(&r), sched(&[("a", 0, 112), ("b", 5, 15)]));
}

#[test]
fn released_shares_of_a_gpu_come_back_after_the_latency() {
    // 1 GPU, shares back 2 s after a task ends. p (half a GPU, 10 s) and q (half, 4 s) share it
    // from 0. q ends at 4, its half back at 6: s (half, 1 s, at 5) runs 6..7, its half back at
    // 9. r (the whole GPU, 1 s, at 5) waits for p's half too (p ends at 10, back at 12): 12..13.
    // Without the latency: s 5..6, r 10..11.
    let half = |name: &str, submit: u64, work: u64| {
        let mut j = job(name, submit, 1, work);
        j.tasks[0].gpu_milli = std::num::NonZeroU16::new(500);
        j
    };
    let jobs = || vec![half("p", 0, 10), half("q", 0, 4), half("s", 5, 1), job("r", 5, 1, 1)];
    let r = run_with("fifo", cluster(&[(1, 1, "A")]), jobs(), release_after(2));
    assert_eq!(schedule(&r), sched(&[("p", 0, 10), ("q", 0, 4), ("s", 6, 7), ("r", 12, 13)]));
    let r = run("fifo", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("p", 0, 10), ("q", 0, 4), ("s", 5, 6), ("r", 10, 11)]));
}

#[test]
fn easy_backfill_counts_gpus_being_released_in_the_head_reservation() {
    // 1 node x 6 GPUs, GPUs back 2 s after a task ends. b (3 GPUs, 100 s) and a (2, 10 s) at
    // 0; h (3, 20 s) at 1 is the blocked head (1 free), c (1, 50 s) behind it. a ends at 10
    // and its 2 GPUs are back at 12: h's shadow time is 12, with no extra GPU, so c may not
    // take the free one (it would hold h until 61). h runs 12..32, its GPUs back at 34: c
    // runs 34..84. A reservation blind to GPUs being released took b's end (100) for the
    // shadow at 10, let c take the free GPU (10..60), and h waited for it: 62..82.
    let jobs = vec![job("b", 0, 3, 100), job("a", 0, 2, 10), job("h", 1, 3, 20), job("c", 1, 1, 50)];
    let r = run_with("easy-backfill", cluster(&[(1, 6, "A")]), jobs, release_after(2));
    assert_eq!(schedule(&r), sched(&[("b", 0, 100), ("a", 0, 10), ("h", 12, 32), ("c", 34, 84)]));
}

#[test]
fn easy_backfill_does_not_count_gpus_released_on_a_dead_node() {
    // 2 nodes x 2 GPUs, GPUs back 30 s after a task ends. b (1 GPU, 100 s) on g0, d (2 GPUs,
    // 10,000 s) on node 1, which fails at 5 and is declared dead at 30: d fails and is the
    // blocked head (g1 free). d's GPUs are being released until 60, but on a dead node: they
    // never come back. d's shadow is b's end plus the latency (130) with no extra GPU, so c
    // (1 GPU, 1000 s, at 31) may not take g1, and d restarts at 130 on node 0. Counting the
    // dead node's GPUs back at 60, c took g1 at 31 and d waited until 1,061.
    let jobs = vec![job("b", 0, 1, 100), job("d", 0, 2, 10_000), job("c", 31, 1, 1000)];
    let events = vec![node_fail(1, 5, 20_000)];
    let r = run_with_events("easy-backfill", cluster(&[(2, 2, "A")]), jobs, events, release_after(30));
    let d_starts: Vec<u64> = r
        .decisions
        .iter()
        .filter(|d| d.kind == sim::DecisionKind::Start && d.job == sim::JobId(1))
        .map(|d| d.time.as_ms() / 1000)
        .collect();
    assert_eq!(d_starts, vec![0, 130]);
    assert!(schedule(&r)[2].1 > 130, "c may not delay the head: {:?}", schedule(&r));
}

#[test]
fn pack_puts_a_gang_with_gpus_per_node_in_the_pool_where_it_fits_tightest() {
    // Pools A (nodes 0-1, g0-g7) and V (nodes 2-3, g8-g15), 4 GPUs a node. x (6 V GPUs, 3 a
    // node) leaves g11 and g15 free. c (2 GPUs, 1 a node, any type) needs two nodes in either
    // pool: in V they are those two leftovers, in A it would break two empty nodes.
    let mut x = job("x", 0, 6, 10);
    x.tasks[0].gpus_per_node = NonZeroU32::new(3);
    x.tasks[0].gpu_type = Some("V".into());
    let mut c = job("c", 0, 2, 10);
    c.tasks[0].gpus_per_node = NonZeroU32::new(1);
    let r = run("fifo", cluster(&[(2, 4, "A"), (2, 4, "V")]), vec![x, c]);
    assert_eq!(first_gpus(&r, "x"), vec![8, 9, 10, 12, 13, 14]);
    assert_eq!(first_gpus(&r, "c"), vec![11, 15]);
}

#[test]
fn easy_backfill_lends_no_extra_gpus_ahead_of_a_head_that_needs_whole_nodes() {
    // 3 nodes x 4 GPUs. 0: a (2 GPUs, 100 s) and e (1, 1000 s) on node 0, b (2, 100 s) on node
    // 1. 1: h (8 GPUs, 4 a node) needs two free nodes: only node 2 is; the pool counts 7 free,
    // 9 + 2 at 100 s (a and b end), so 3 "extra". d (3 GPUs, 500 s) would take node 2 on them
    // and hold h until 501; lent nothing, d waits, and h starts at 100 on nodes 1 and 2, d
    // beside e on node 0.
    let mut h = job("h", 1, 8, 10);
    h.tasks[0].gpus_per_node = NonZeroU32::new(4);
    let jobs = vec![job("a", 0, 2, 100), job("e", 0, 1, 1000), job("b", 0, 2, 100), h, job("d", 1, 3, 500)];
    let r = run("easy-backfill", cluster(&[(3, 4, "A")]), jobs);
    assert_eq!(schedule_of(&r, "h"), (100, 110));
    assert_eq!(first_gpus(&r, "h"), vec![4, 5, 6, 7, 8, 9, 10, 11]);
    assert_eq!(schedule_of(&r, "d"), (100, 600));
}

/// A job's wait for GPUs over its whole life counts the time it spent preempted, where the
/// first-start delay stops at its first start. 1 GPU under priority: `low` (100 s) runs from
/// 0; `high` (priority 5, 20 s) arrives at 10 and preempts it; `low` waits from 10 to 30, then
/// runs its last 90 s (progress is never lost without checkpoint intervals) and ends at 120.
/// `late` (1 s, in at 15) waits from 15 until `low` ends at 120.
#[test]
fn a_jobs_wait_counts_the_time_it_spent_preempted() {
    let mut high = job("high", 10, 1, 20);
    high.priority = 5;
    let r = run("priority", cluster(&[(1, 1, "A")]), vec![job("low", 0, 1, 100), high, job("late", 15, 1, 1)]);
    assert_eq!(schedule(&r), [("low".into(), 0, 120), ("high".into(), 10, 30), ("late".into(), 120, 121)]);
    let waited: Vec<u64> = r.jobs.iter().map(|j| j.waited_ms / 1000).collect();
    assert_eq!(waited, [20, 0, 105]);
    let queued: Vec<u64> = r.jobs.iter().map(|j| j.first_start.unwrap().since(j.submit).as_ms() / 1000).collect();
    assert_eq!(queued, [0, 0, 105], "the first-start delay misses low's 20 s preempted");
}
