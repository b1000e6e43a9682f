//! Hand-computed schedules for the research policies (tiresias, themis, priority,
//! weighted-score): tiny clusters where every start, end and preemption was worked out on
//! paper (the arithmetic is in each test's comment) and the simulator must match exactly.

mod common;

use common::{cluster, job, run, run_with, sched, schedule};

fn preemptions(r: &sim::RunResult) -> Vec<u32> {
    r.jobs.iter().map(|j| j.preemptions).collect()
}

// ---------------------------------------------------------------------------------------------
// tiresias
// ---------------------------------------------------------------------------------------------

#[test]
fn tiresias_demoted_job_is_preempted_by_a_new_one() {
    // 1 GPU, one threshold at 10 GPU-s. a (1 GPU, 30 s) at 0 runs alone; it reaches 10 GPU-s
    // at 10 and drops to level 1 (nobody waits, so nothing happens then). b (1 GPU, 5 s)
    // arrives at 15 in level 0, above a: a is preempted (15 s done), b runs 15..20, a resumes
    // at 20 with 15 s left and ends at 35.
    let jobs = || vec![job("a", 0, 1, 30), job("b", 15, 1, 5)];
    let r = run("tiresias[thresholds=10]", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 35), ("b", 15, 20)]));
    assert_eq!(preemptions(&r), vec![1, 0]);
    // With the threshold at 40 GPU-s, a never leaves level 0 (30 < 40): FIFO, b waits for it.
    let r = run("tiresias[thresholds=40]", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 30), ("b", 30, 35)]));
    assert_eq!(preemptions(&r), vec![0, 0]);
}

#[test]
fn tiresias_wakes_when_a_running_job_crosses_a_threshold() {
    // 1 GPU, threshold 10 GPU-s. b (1 GPU, 5 s) arrives at 5 while a (1 GPU, 30 s) has 5 GPU-s:
    // both level 0, a arrived first, so b waits. a crosses 10 GPU-s at 10: the policy woke for
    // it, a drops to level 1 and b preempts it: b 10..15; a resumes with 20 s left, 15..35.
    let r = run("tiresias[thresholds=10]", cluster(&[(1, 1, "A")]), vec![job("a", 0, 1, 30), job("b", 5, 1, 5)]);
    assert_eq!(schedule(&r), sched(&[("a", 0, 35), ("b", 10, 15)]));
    assert_eq!(preemptions(&r), vec![1, 0]);
}

#[test]
fn tiresias_service_is_gpus_times_time() {
    // 1 node x 4 GPUs, threshold 20 GPU-s. a (4 GPUs, 10 s) reaches 20 GPU-s after 20/4 = 5 s.
    // b (4 GPUs, 3 s) at 6: a has 24 GPU-s, level 1: preempted; b 6..9; a resumes with 4 s
    // left, 9..13. A 1-GPU a' (same 10 s) has only 6 GPU-s at 6, so b waits for it.
    let r = run("tiresias[thresholds=20]", cluster(&[(1, 4, "A")]), vec![job("a", 0, 4, 10), job("b", 6, 4, 3)]);
    assert_eq!(schedule(&r), sched(&[("a", 0, 13), ("b", 6, 9)]));
    let r = run("tiresias[thresholds=20]", cluster(&[(1, 4, "A")]), vec![job("a'", 0, 1, 10), job("b", 6, 4, 3)]);
    assert_eq!(schedule(&r), sched(&[("a'", 0, 10), ("b", 10, 13)]));
}

#[test]
fn tiresias_promotes_a_starved_job() {
    // 1 GPU, threshold 10 GPU-s, promote_after=1. a (1 GPU, 20 s) is at level 1 from 10. b
    // (1 GPU, 100 s) arrives at 12 in level 0 and preempts a (12 s executed): a may be promoted
    // at 12 + 1 x 12 = 24. b crosses 10 GPU-s at 22 (level 1, like a: no preemption). At 24 a
    // is promoted to level 0 with its service counted from zero, and preempts b (12 s done):
    // a runs its last 8 s, 24..32 (it would cross 10 GPU-s again only at 34). b resumes with 88 s
    // left: 32..120.
    let jobs = || vec![job("a", 0, 1, 20), job("b", 12, 1, 100)];
    let r = run("tiresias[thresholds=10,promote_after=1]", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 32), ("b", 12, 120)]));
    assert_eq!(preemptions(&r), vec![1, 1]);
    // Without the guard a waits for all of b: b 12..112, a resumes with 8 s left, 112..120.
    let r = run("tiresias[thresholds=10]", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 120), ("b", 12, 112)]));
}

#[test]
fn tiresias_never_preempts_an_attempt_that_saved_nothing() {
    // 1 GPU, threshold 10 GPU-s, promote_after=1, checkpoints every 50 s of work. a (1 GPU,
    // 100 s) at 0, b (1 GPU, 100 s) at 1 waits behind it (both level 0). a drops to level 1 at
    // 10, under b, but has saved nothing in this attempt (its first checkpoint is at 50 s of
    // work): preempting it would throw the attempt away, so a runs on, 0..100, and b 100..200.
    // (Before this rule, b preempted a at 10, a was promoted at 20 and preempted b, and so on
    // every 10 s forever, each attempt lost whole: the run never ended.)
    let jobs = || vec![job("a", 0, 1, 100), job("b", 1, 1, 100)];
    let spec = "tiresias[thresholds=10,promote_after=1]";
    let r = run_with(spec, cluster(&[(1, 1, "A")]), jobs(), checkpoints_every(50));
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 100, 200)]));
    assert_eq!(preemptions(&r), vec![0, 0]);
    // Checkpoints every 5 s: every preemption keeps all the work. b preempts a at 10 (a saved
    // 10 s) and crosses at 20; a, promoted at 20 (waited 1 x its 10 s), preempts b (saved 10 s)
    // and crosses at 30 with 10 s of service since its promotion, when b is promoted: they
    // alternate every 10 s. a's tenth slice is 180..190; b's last 10 s run 190..200.
    let r = run_with(spec, cluster(&[(1, 1, "A")]), jobs(), checkpoints_every(5));
    assert_eq!(schedule(&r), sched(&[("a", 0, 190), ("b", 10, 200)]));
    assert_eq!(preemptions(&r), vec![9, 9]);
}

#[test]
fn tiresias_preempts_the_victim_that_loses_least_within_a_level() {
    // 1 node x 4 GPUs, threshold 10 GPU-s, checkpoints every 10 s of work. a (2 GPUs, 100 s)
    // at 0 and b (2 GPUs, 100 s) at 5 are both at level 1 by 10. c (2 GPUs, 10 s) arrives at
    // 30 in level 0 and needs one of them: a has done 30 s (all saved, 0 at risk), b 25 s (20
    // saved, 5 at risk). a, the one that loses nothing, is preempted though b arrived later:
    // c 30..40, a resumes with 70 s left, 40..110; b 5..105.
    let jobs = vec![job("a", 0, 2, 100), job("b", 5, 2, 100), job("c", 30, 2, 10)];
    let r = run_with("tiresias[thresholds=10]", cluster(&[(1, 4, "A")]), jobs, checkpoints_every(10));
    assert_eq!(schedule(&r), sched(&[("a", 0, 110), ("b", 5, 105), ("c", 30, 40)]));
    assert_eq!(preemptions(&r), vec![1, 0, 0]);
    let why = r.decisions.iter().find(|d| d.kind == sim::DecisionKind::Preempt).expect("a preemption").detail.clone();
    assert!(why.contains("level 1") && why.contains("loses 0.000 s") && why.contains("least in its level"), "{why}");
}

#[test]
fn tiresias_orders_continuous_and_interval_victims_by_work_at_risk_then_latest() {
    // 1 node x 4 GPUs, threshold 10 GPU-s. a (2 GPUs, 100 s) checkpoints continuously (its
    // own interval 0), b (2 GPUs, 100 s, at 5) every 10 s of work (the run's default); both
    // are at level 1 by 10. c (2 GPUs, 10 s, level 0) needs one of them.
    let jobs = |c_at: u64| {
        let mut a = job("a", 0, 2, 100);
        a.tasks[0].options_mut().checkpoint = Some(sim::SimDuration::ZERO);
        vec![a, job("b", 5, 2, 100), job("c", c_at, 2, 10)]
    };
    let spec = "tiresias[thresholds=10]";
    // c at 30: b has done 25 s, saved 20 (5 at risk); a risks nothing and goes first. c
    // 30..40; a resumes with 70 s left, 40..110; b 5..105.
    let r = run_with(spec, cluster(&[(1, 4, "A")]), jobs(30), checkpoints_every(10));
    assert_eq!(schedule(&r), sched(&[("a", 0, 110), ("b", 5, 105), ("c", 30, 40)]));
    // c at 35: b has done 30 s, all saved: both risk nothing and the latest task, b, goes.
    // c 35..45; b resumes with 70 s left, 45..115; a 0..100.
    let r = run_with(spec, cluster(&[(1, 4, "A")]), jobs(35), checkpoints_every(10));
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 5, 115), ("c", 35, 45)]));
    assert_eq!(preemptions(&r), vec![0, 1, 0]);
}

#[test]
fn tiresias_gittins_orders_levels_by_the_sizes_seen() {
    // 1 GPU, threshold 10 GPU-s (levels [0, 10) and [10, inf)). j (1 GPU, 12 s) runs 0..12 and
    // is the only job seen to finish: size 12, level 1. Gittins index of level 0:
    // P(S < 10 | S >= 0) / E[min(S, 10) | S >= 0] = 0 / 10 = 0; of level 1:
    // P(S finite | S >= 10) / E[S - 10 | S >= 10] = 1 / 2. So level 1 goes first.
    // x (1 GPU, 30 s) starts at 13 and reaches level 1 at 23; y (1 GPU, 5 s) arrives at 25 in
    // level 0, which now ranks below x's: y waits for x (13..43) and runs 43..48.
    let jobs = || vec![job("j", 0, 1, 12), job("x", 13, 1, 30), job("y", 25, 1, 5)];
    let r = run("tiresias[mode=gittins,thresholds=10]", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("j", 0, 12), ("x", 13, 43), ("y", 43, 48)]));
    assert_eq!(preemptions(&r), vec![0, 0, 0]);
    // LAS on the same jobs: y preempts x at 25 (x has done 12 s), y 25..30, x 30..48.
    let r = run("tiresias[mode=las,thresholds=10]", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("j", 0, 12), ("x", 13, 48), ("y", 25, 30)]));
    assert_eq!(preemptions(&r), vec![0, 1, 0]);
}

#[test]
fn tiresias_gittins_with_small_jobs_seen_keeps_las_order() {
    // Sizes seen: j1 4 GPU-s (level 0), j2 14 GPU-s (level 1). Level 0: 1 / (4 + 1 x 10) =
    // 1/14; level 1: 1 / (14 - 10) = 1/4 > 1/14: level 1 first again. With j2 of 40 GPU-s
    // instead: level 1 is 1/30 < 1/14, so level 0 (LAS order) first and y preempts x.
    // j1 0..4, j2 4..(4+size); x (30 s) at 60 reaches level 1 at 70; y (5 s) at 75.
    let jobs = |j2: u64| vec![job("j1", 0, 1, 4), job("j2", 4, 1, j2), job("x", 60, 1, 30), job("y", 75, 1, 5)];
    let spec = "tiresias[mode=gittins,thresholds=10]";
    let r = run(spec, cluster(&[(1, 1, "A")]), jobs(14));
    assert_eq!(schedule(&r), sched(&[("j1", 0, 4), ("j2", 4, 18), ("x", 60, 90), ("y", 90, 95)]));
    let r = run(spec, cluster(&[(1, 1, "A")]), jobs(40));
    assert_eq!(schedule(&r), sched(&[("j1", 0, 4), ("j2", 4, 44), ("x", 60, 95), ("y", 75, 80)]));
}

#[test]
fn tiresias_rejects_bad_thresholds() {
    let err = |spec: &str| policies::build(spec).err().expect("spec is invalid").to_string();
    assert!(err("tiresias[thresholds=10;5]").contains("strictly increasing"));
    assert!(err("tiresias[thresholds=0]").contains("> 0"));
    assert!(err("tiresias[thresholds=1;;2]").contains("empty item"));
    assert!(err("tiresias[mode=srpt]").contains("las|gittins"));
    assert_eq!(
        policies::build("tiresias").unwrap().name(),
        "tiresias[mode=las,thresholds=3600;36000,promote_after=0,placement=pack,avoid_failed_h=0]"
    );
}

// ---------------------------------------------------------------------------------------------
// themis
// ---------------------------------------------------------------------------------------------

/// 1 GPU. a (100 s) at 0, b (10 s) at 1, c (50 s) at 2.
fn themis_jobs() -> Vec<sim::JobSpec> {
    vec![job("a", 0, 1, 100), job("b", 1, 1, 10), job("c", 2, 1, 50)]
}

#[test]
fn themis_gives_the_gpu_to_the_largest_rho_at_each_round() {
    // Lease 10 s; rho = (end if run from now - submit) / duration, for a running task its
    // expected end. 0: a starts. 10 (round): a 100/100 = 1; b (10+10-1)/10 = 1.9; c
    // (10+50-2)/50 = 1.16: b preempts a (1 < 1.9), b 10..20; c finds no smaller-rho victim left.
    // 20: c (20+50-2)/50 = 1.36 > a (20+90)/100 = 1.1: c runs from 20 (end 70).
    // 30, 40: a 1.2, 1.3 < c's 68/50 = 1.36. 50: a 1.4 > 1.36: a preempts c (30 s done), a runs
    // from 50 (end 140). 60: c (60+20-2)/50 = 1.56 > a 140/100 = 1.4: c preempts a (10 s more
    // done, 80 left), c 60..80. 70: a (70+80)/100 = 1.5 < c 78/50 = 1.56. 80: a 80..160.
    let r = run("themis[lease_s=10]", cluster(&[(1, 1, "A")]), themis_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 160), ("b", 10, 20), ("c", 20, 80)]));
    assert_eq!(preemptions(&r), vec![2, 0, 1]);
}

#[test]
fn themis_preempts_only_at_round_boundaries() {
    // Lease 1000 s: the only rounds in the run are at 0 and 1000. a runs 0..100 untouched; b and
    // c, never ranked, fill the GPU in arrival order: b 100..110, c 110..160.
    let r = run("themis[lease_s=1000]", cluster(&[(1, 1, "A")]), themis_jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 100, 110), ("c", 110, 160)]));
    assert_eq!(preemptions(&r), vec![0, 0, 0]);
}

#[test]
fn themis_t_id_on_a_fair_share_favours_small_jobs() {
    // 1 node x 4 GPUs, lease 10 s. z (4 GPUs, 10 s) runs 0..10; x (4 GPUs, 10 s) and y (1 GPU,
    // 10 s) arrive at 1. Round at 10 (z has ended): T_sh = 10 + 10 - 1 = 19 for both.
    // alone: T_id = 10 for both, rho 1.9 each, tie on task id: x 10..20, then y 20..30.
    // share: N = 2 jobs, C = 4 GPUs; x: T_id = 10 x max(4, 4 x 2) / 4 = 20, rho 0.95;
    // y: T_id = 10 x max(4, 1 x 2) / 4 = 10, rho 1.9: y 10..20 first (x cannot fit beside it),
    // then x 20..30.
    let jobs = || vec![job("z", 0, 4, 10), job("x", 1, 4, 10), job("y", 1, 1, 10)];
    let r = run("themis[lease_s=10]", cluster(&[(1, 4, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("z", 0, 10), ("x", 10, 20), ("y", 20, 30)]));
    let r = run("themis[lease_s=10,t_id=share]", cluster(&[(1, 4, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("z", 0, 10), ("x", 20, 30), ("y", 10, 20)]));
}

/// Without queues a round keeps its order lazily sorted (`RankedQueue`); with queues it sorts
/// in full and re-keys the wait queue with integer ranks. Under one queue that caps nothing
/// no task is ever parked, so the two ways must make every decision alike, in order, with
/// preemptions among them, in both `t_id` modes.
#[test]
fn themis_decides_alike_with_one_uncapped_queue_and_without_queues() {
    let mut seed: u64 = 0x5eed_7e15;
    let mut next = move |modulo: u64| {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        (seed >> 33) % modulo
    };
    let jobs: Vec<sim::JobSpec> = (0..300)
        .map(|i| job(&format!("j{i}"), next(20_000), [1, 1, 2, 4, 8][next(5) as usize], 30 + next(3_000)))
        .collect();
    for spec in ["themis[lease_s=60]", "themis[lease_s=60,t_id=share]"] {
        let plain = run(spec, cluster(&[(4, 8, "A")]), jobs.clone());
        let scenario = sim::Scenario::new(cluster(&[(4, 8, "A")]), sim::Workload::new(jobs.clone()).unwrap())
            .with_queues(&[sim::QueueSpec::new("all")])
            .unwrap();
        let mut policy = policies::build(spec).unwrap();
        let config = sim::ControllerConfig { check_invariants: true, record_decisions: true, ..Default::default() };
        let queued = sim::simulate(scenario, policy.as_mut(), config).unwrap();
        let preempts = plain.decisions.iter().filter(|d| d.kind == sim::DecisionKind::Preempt).count();
        assert!(preempts > 10, "{spec}: {preempts} preemptions, the test needs some");
        assert_eq!(plain.decisions.len(), queued.decisions.len(), "{spec}");
        for (a, b) in plain.decisions.iter().zip(&queued.decisions) {
            assert_eq!(a, b, "{spec}");
        }
    }
}

#[test]
fn themis_spec_is_strict() {
    let err = |spec: &str| policies::build(spec).err().expect("spec is invalid").to_string();
    assert!(err("themis[lease_s=0]").contains("lease_s"));
    assert!(err("themis[t_id=half]").contains("alone|share"));
    assert_eq!(
        policies::build("themis").unwrap().name(),
        "themis[lease_s=600,t_id=alone,duration=oracle,placement=pack,avoid_failed_h=0]"
    );
}

// ---------------------------------------------------------------------------------------------
// priority
// ---------------------------------------------------------------------------------------------

fn with_priority(mut j: sim::JobSpec, priority: i32) -> sim::JobSpec {
    j.priority = priority;
    j
}

fn checkpoints_every(s: u64) -> sim::ControllerConfig {
    sim::ControllerConfig { checkpoint: sim::SimDuration::from_secs(s), ..sim::ControllerConfig::default() }
}

#[test]
fn priority_preempts_the_victim_that_loses_least() {
    // 1 node x 4 GPUs, checkpoints every 20 s of work. a, b (priority 0, 2 GPUs, 100 s) start
    // at 0 and 5. c (priority 5, 2 GPUs, 10 s) arrives at 30: a has done 30 s (saved 20, 10 at
    // risk), b 25 s (saved 20, 5 at risk): b is preempted. c 30..40; b restarts from 20 s at
    // 40 with 80 s left: 40..120. a 0..100.
    let jobs = || vec![job("a", 0, 2, 100), job("b", 5, 2, 100), with_priority(job("c", 30, 2, 10), 5)];
    let r = run_with("priority", cluster(&[(1, 4, "A")]), jobs(), checkpoints_every(20));
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 5, 120), ("c", 30, 40)]));
    assert_eq!(preemptions(&r), vec![0, 1, 0]);
    let why = r.decisions.iter().find(|d| d.kind == sim::DecisionKind::Preempt).expect("a preemption").detail.clone();
    assert!(why.contains("priority 5") && why.contains("loses 5.000 s") && why.contains("least of 2"), "{why}");
    // Continuous checkpoints: both lose nothing, the tie goes to the lower task id, a. a has
    // 70 s left at 40: 40..110; b 5..105.
    let r = run("priority", cluster(&[(1, 4, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("a", 0, 110), ("b", 5, 105), ("c", 30, 40)]));
}

#[test]
fn priority_takes_the_lowest_priority_first_and_never_preempts_its_equal() {
    // As above with b at priority 1: a (priority 0) goes first although it loses more (10 s):
    // a restarts from 20 s at 40, 80 s left: 40..120; b 5..105.
    let jobs = vec![job("a", 0, 2, 100), with_priority(job("b", 5, 2, 100), 1), with_priority(job("c", 30, 2, 10), 5)];
    let r = run_with("priority", cluster(&[(1, 4, "A")]), jobs, checkpoints_every(20));
    assert_eq!(schedule(&r), sched(&[("a", 0, 120), ("b", 5, 105), ("c", 30, 40)]));
    // c at priority 0 preempts nobody: it waits for a, 100..110.
    let jobs = vec![job("a", 0, 2, 100), job("b", 5, 2, 100), job("c", 30, 2, 10)];
    let r = run_with("priority", cluster(&[(1, 4, "A")]), jobs, checkpoints_every(20));
    assert_eq!(schedule(&r), sched(&[("a", 0, 100), ("b", 5, 105), ("c", 100, 110)]));
    assert_eq!(preemptions(&r), vec![0, 0, 0]);
}

#[test]
fn priority_orders_the_queue_by_priority_then_arrival() {
    // 1 GPU. x (10 s) runs 0..10 at priority 9. Waiting at 10: l (priority 0, at 1), h (3, at 2),
    // m (3, at 3): h 10..20, m 20..30, l 30..40. Nobody outranks x: no preemption.
    let jobs = vec![
        with_priority(job("x", 0, 1, 10), 9),
        job("l", 1, 1, 10),
        with_priority(job("h", 2, 1, 10), 3),
        with_priority(job("m", 3, 1, 10), 3),
    ];
    let r = run("priority", cluster(&[(1, 1, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("x", 0, 10), ("l", 30, 40), ("h", 10, 20), ("m", 20, 30)]));
    assert_eq!(preemptions(&r), vec![0, 0, 0, 0]);
}

// ---------------------------------------------------------------------------------------------
// weighted-score
// ---------------------------------------------------------------------------------------------

#[test]
fn weighted_score_ages_waiting_tasks_past_urgent_ones() {
    // 1 GPU; w_p = 10 (a priority level is worth 10 s of waiting), w_w = 1. x (30 s) runs 0..30.
    // Waiting at 30: l (priority 0, in at 1) scores 29; h1 (priority 1, in at 5) 10 + 25 = 35;
    // h2 (priority 1, in at 15) 10 + 15 = 25. h1 30..40. At 40: l 39 > h2 35: l 40..50, h2 50..60.
    let jobs = || {
        vec![
            job("x", 0, 1, 30),
            job("l", 1, 1, 10),
            with_priority(job("h1", 5, 1, 10), 1),
            with_priority(job("h2", 15, 1, 10), 1),
        ]
    };
    let r = run("weighted-score[w_p=10,w_w=1]", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("x", 0, 30), ("l", 40, 50), ("h1", 30, 40), ("h2", 50, 60)]));
    // No aging (w_w = 0): strict priority, h1, h2, then l.
    let r = run("weighted-score[w_p=10,w_w=0]", cluster(&[(1, 1, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("x", 0, 30), ("l", 50, 60), ("h1", 30, 40), ("h2", 40, 50)]));
}

#[test]
fn weighted_score_is_strict_the_top_task_blocks_the_rest() {
    // 1 node x 2 GPUs. x (1 GPU, 10 s) at 0. At 1: big (priority 1, 2 GPUs, 10 s) cannot fit
    // beside x; small (priority 0, 1 GPU, 5 s) could, but ranks below big and waits: big 10..20,
    // small 20..25.
    let jobs = vec![job("x", 0, 1, 10), with_priority(job("big", 1, 2, 10), 1), job("small", 1, 1, 5)];
    let r = run("weighted-score", cluster(&[(1, 2, "A")]), jobs);
    assert_eq!(schedule(&r), sched(&[("x", 0, 10), ("big", 10, 20), ("small", 20, 25)]));
}

mod no_starvation {
    use super::*;
    use proptest::prelude::*;

    /// An adversarial stream: one low-priority job L and a stream of urgent jobs that each
    /// take the whole node and arrive faster than they run, so the queue never empties and
    /// strict priority would start L only after the last urgent job.
    #[derive(Debug, Clone)]
    struct Case {
        gap_s: u64,
        urgent: Vec<(i32, u64)>, // (priority 1..=3, work in [gap, 2 gap] s)
        l_submit_s: u64,
        l_gpus: u32,
        l_work_s: u64,
        w_p: u64,
        w_w: u64,
    }

    fn arb_case() -> impl Strategy<Value = Case> {
        (5u64..=10).prop_flat_map(|gap| {
            (
                Just(gap),
                prop::collection::vec((1i32..=3, gap..=2 * gap), 60),
                0..=2 * gap,
                1u32..=4,
                1..=gap,
                1u64..=10,
                1u64..=4,
            )
                .prop_map(|(gap_s, urgent, l_submit_s, l_gpus, l_work_s, w_p, w_w)| Case {
                    gap_s,
                    urgent,
                    l_submit_s,
                    l_gpus,
                    l_work_s,
                    w_p,
                    w_w,
                })
        })
    }

    fn jobs(case: &Case) -> Vec<sim::JobSpec> {
        let mut jobs: Vec<sim::JobSpec> = case
            .urgent
            .iter()
            .enumerate()
            .map(|(i, &(p, work))| with_priority(job(&format!("h{i}"), i as u64 * case.gap_s, 4, work), p))
            .collect();
        jobs.push(job("L", case.l_submit_s, case.l_gpus, case.l_work_s));
        jobs
    }

    fn start_ms(r: &sim::RunResult, name: &str) -> u64 {
        r.jobs.iter().find(|j| j.name == name).and_then(|j| j.first_start).expect("started").as_ms()
    }

    proptest! {
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(48) })]

        #[test]
        fn aging_starts_every_low_priority_job_within_the_bound(case in arb_case()) {
            let spec = format!("weighted-score[w_p={},w_w={}]", case.w_p, case.w_w);
            let r = run(&spec, cluster(&[(1, 4, "A")]), jobs(&case));
            // From X = s_L + 1000 w_p (p_max - p_L) / w_w ms on, every newcomer ranks behind L;
            // ahead of it are at most the urgent jobs that arrived before X, and each head
            // starts within one longest duration of the previous one (or of X).
            let p_max = i64::from(case.urgent.iter().map(|&(p, _)| p).max().unwrap_or(0));
            let delta_ms = (1000 * case.w_p * p_max as u64).div_ceil(case.w_w);
            let x_ms = case.l_submit_s * 1000 + delta_ms;
            let ahead = (0..case.urgent.len() as u64).filter(|i| i * case.gap_s * 1000 < x_ms).count() as u64;
            let longest_ms = 1000 * case.urgent.iter().map(|&(_, w)| w).max().unwrap_or(0).max(case.l_work_s);
            let bound_ms = x_ms + (ahead + 1) * longest_ms;
            let l_start = start_ms(&r, "L");
            prop_assert!(l_start <= bound_ms, "{spec}: L started at {l_start} ms, bound {bound_ms} ms ({case:?})");
            // The bound is meaningful: well before the stream ends...
            let last = format!("h{}", case.urgent.len() - 1);
            prop_assert!(bound_ms < start_ms(&r, &last), "{case:?}: bound {bound_ms} not before the last urgent start");
            // ...where strict priority (no aging) starves L until the last urgent job started.
            let strict = run(&format!("weighted-score[w_p={},w_w=0]", case.w_p), cluster(&[(1, 4, "A")]), jobs(&case));
            prop_assert!(start_ms(&strict, "L") >= start_ms(&strict, &last), "{case:?}: strict priority did not starve L");
        }
    }
}
