//! The queue- and DAG-aware policies, exact: hand-computed schedules for `fair-share` (weights,
//! the queue-priority tie-break, sjf order inside a queue, caps), `drf` (dominant shares over
//! two GPU types, weighted) and `critical-path` (a DAG where arrival order delays the critical
//! task), each against what fifo or sjf do with the same jobs. Two properties: with one queue
//! (or none) fair-share and drf decide exactly as greedy fifo or sjf; with several, a replay of
//! the decision log finds every start went to the neediest queue's first job. A third replays
//! critical-path on random DAGs against ranks recomputed from `sim::dag::schedule`.

mod common;

use common::random::{PoolDesc, arb_gpu_type, arb_gpus, arb_pools, arb_submit_ms, arb_work_ms, build_cluster};
use common::{cluster, job, run, sched, schedule};
use proptest::prelude::*;
use sim::{
    Cluster, ControllerConfig, DepKind, Dependency, JobSpec, QueueSpec, RunResult, Scenario, SimDuration, SimTime,
    TaskSpec, Workload,
};

fn in_queue(mut j: JobSpec, queue: &str) -> JobSpec {
    j.queue = Some(queue.to_string().into());
    j
}

fn of_type(mut j: JobSpec, gpu_type: &str) -> JobSpec {
    j.tasks[0].gpu_type = Some(gpu_type.into());
    j
}

/// A queue with no caps: name, weight, priority.
fn queue(name: &str, weight: u32, priority: i32) -> QueueSpec {
    QueueSpec { weight, priority, ..QueueSpec::new(name) }
}

fn run_queues(spec: &str, cluster: Cluster, queues: &[QueueSpec], jobs: Vec<JobSpec>) -> RunResult {
    let scenario = Scenario::new(cluster, Workload::new(jobs).unwrap()).with_queues(queues).unwrap();
    let mut policy = policies::build(spec).unwrap();
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() };
    sim::simulate(scenario, policy.as_mut(), config).unwrap()
}

/// `n` jobs of queue `q`, named q1..qn, submitted at 0, 1 GPU and `work_s` each.
fn batch(q: &str, n: usize, work_s: u64) -> Vec<JobSpec> {
    (1..=n).map(|i| in_queue(job(&format!("{q}{i}"), 0, 1, work_s), q)).collect()
}

/// 1 x 4 GPUs; queue a has weight 1, b weight 3; four 10 s jobs each, a's first in the file.
/// At 0, shares as allocated milli-GPUs / weight:
///   a 0/1 = b 0/3, tie on priority (0 = 0) then id: a1 (a = 1000/1);
///   a 1000/1 > b 0/3: b1 (b = 1000/3);
///   a 1000/1 > b 1000/3 (1000 x 3 > 1000 x 1): b2 (b = 2000/3);
///   a 1000/1 > b 2000/3 (3000 > 2000): b3. Full.
/// At 10 all four end, both shares are 0 again: a2 (tie, id), b4 (0 < 1000), then b is empty:
/// a3, a4. fifo runs a's four first and b's four 10..20.
#[test]
fn fair_share_serves_the_queue_with_the_fewest_gpus_per_weight() {
    let queues = [queue("a", 1, 0), queue("b", 3, 0)];
    let jobs = [batch("a", 4, 10), batch("b", 4, 10)].concat();
    let r = run_queues("fair-share", cluster(&[(1, 4, "A")]), &queues, jobs.clone());
    assert_eq!(
        schedule(&r),
        sched(&[
            ("a1", 0, 10),
            ("a2", 10, 20),
            ("a3", 10, 20),
            ("a4", 10, 20),
            ("b1", 0, 10),
            ("b2", 0, 10),
            ("b3", 0, 10),
            ("b4", 10, 20)
        ])
    );
    let r = run_queues("fifo", cluster(&[(1, 4, "A")]), &queues, jobs);
    let fifo: Vec<u64> = schedule(&r).iter().map(|(_, start, _)| *start).collect();
    assert_eq!(fifo, [0, 0, 0, 0, 10, 10, 10, 10]);
}

/// 1 x 3 GPUs, equal weights, 10 s jobs. Equal shares go to the higher queue priority: with b
/// at priority 5, at 0: b1 (tie, b's priority), a1 (0 < 1000), b2 (tie again); at 10 (all end,
/// shares 0): b3, a2, b4; at 20: a3, a4. With equal priorities the tie goes to queue id (a):
/// a1, b1, a2 at 0; a3, b2, a4 at 10; b3, b4 at 20.
#[test]
fn fair_share_breaks_equal_shares_by_queue_priority_then_id() {
    let jobs = [batch("a", 4, 10), batch("b", 4, 10)].concat();
    let r = run_queues("fair-share", cluster(&[(1, 3, "A")]), &[queue("a", 1, 0), queue("b", 1, 5)], jobs.clone());
    assert_eq!(
        schedule(&r),
        sched(&[
            ("a1", 0, 10),
            ("a2", 10, 20),
            ("a3", 20, 30),
            ("a4", 20, 30),
            ("b1", 0, 10),
            ("b2", 0, 10),
            ("b3", 10, 20),
            ("b4", 10, 20)
        ])
    );
    let r = run_queues("fair-share", cluster(&[(1, 3, "A")]), &[queue("a", 1, 0), queue("b", 1, 0)], jobs);
    assert_eq!(
        schedule(&r),
        sched(&[
            ("a1", 0, 10),
            ("a2", 0, 10),
            ("a3", 10, 20),
            ("a4", 10, 20),
            ("b1", 0, 10),
            ("b2", 10, 20),
            ("b3", 20, 30),
            ("b4", 20, 30)
        ])
    );
}

/// 1 x 1 GPU, queues a and b of equal weight; a1 (30 s), a2 (10 s), b1 (20 s) at 0. Shares are
/// what a queue holds *now*: with the GPU idle both are 0 and a wins on id every time.
/// order=fifo: a1 0..30, a2 30..40, b1 40..60. order=sjf: a's shortest first: a2 0..10,
/// a1 10..40, b1 40..60.
#[test]
fn fair_share_orders_each_queue_by_arrival_or_shortest_first() {
    let queues = [queue("a", 1, 0), queue("b", 1, 0)];
    let jobs = vec![
        in_queue(job("a1", 0, 1, 30), "a"),
        in_queue(job("a2", 0, 1, 10), "a"),
        in_queue(job("b1", 0, 1, 20), "b"),
    ];
    let r = run_queues("fair-share", cluster(&[(1, 1, "A")]), &queues, jobs.clone());
    assert_eq!(schedule(&r), sched(&[("a1", 0, 30), ("a2", 30, 40), ("b1", 40, 60)]));
    let r = run_queues("fair-share[order=sjf]", cluster(&[(1, 1, "A")]), &queues, jobs);
    assert_eq!(schedule(&r), sched(&[("a1", 10, 40), ("a2", 0, 10), ("b1", 40, 60)]));
}

/// 1 x 4 GPUs; a may hold 2 GPUs, b is uncapped; a1..a3 and b1 (1 GPU, 10 s) at 0. a1 (tie,
/// id), b1 (0 < 1000), a2 (1000 = 1000, id); then a3 would take a past its cap: parked, and a
/// GPU stays idle (b has nothing more). At 10 a's tasks stop: a3 10..20.
#[test]
fn fair_share_keeps_queue_caps() {
    let queues = [QueueSpec { max_gpus: Some(2), ..queue("a", 1, 0) }, queue("b", 1, 0)];
    let jobs = [batch("a", 3, 10), batch("b", 1, 10)].concat();
    for spec in ["fair-share", "drf"] {
        let r = run_queues(spec, cluster(&[(1, 4, "A")]), &queues, jobs.clone());
        assert_eq!(schedule(&r), sched(&[("a1", 0, 10), ("a2", 0, 10), ("a3", 10, 20), ("b1", 0, 10)]), "{spec}");
    }
}

/// Without queues both are greedy fifo (fifo[skip=true]), or sjf with order=sjf. 1 x 4 GPUs:
/// big (4 GPUs, 10 s) behind h (2 GPUs, 20 s) at 0, then s1 (1 GPU, 5 s), s2 (1 GPU, 30 s):
/// fifo order: h 0..20, big does not fit, s1 0..5, s2 0..30 (skipping big); big 30..40.
/// sjf order: s1 0..5, big no, h 0..20, s2 0..30; big 30..40 the same here.
#[test]
fn without_queues_they_are_greedy_fifo_or_sjf() {
    let jobs = vec![job("h", 0, 2, 20), job("big", 0, 4, 10), job("s1", 0, 1, 5), job("s2", 0, 1, 30)];
    let expected = sched(&[("h", 0, 20), ("big", 30, 40), ("s1", 0, 5), ("s2", 0, 30)]);
    for spec in ["fifo[skip=true]", "sjf", "fair-share", "drf", "fair-share[order=sjf]", "drf[order=sjf]"] {
        let r = run(spec, cluster(&[(1, 4, "A")]), jobs.clone());
        assert_eq!(schedule(&r), expected, "{spec}");
    }
}

/// Pools A (1 x 4 GPUs) and B (1 x 2 GPUs); queues x, y of weight 1. At 0 x1 takes both B GPUs
/// and y1 two of A's (2 GPUs, 100 s each). At 1, x2, x3, y2, y3 arrive (1 GPU of type A, 10 s).
/// drf: x's dominant share is max(0/4, 2/2) = 1, y's 2/4 = 1/2: y2 (y 3/4 < 1), y3 (y 4/4): A
///   is full. At 11 y2, y3 end: x2, x3 11..21.
/// fair-share counts GPUs alone: x 2000 = y 2000, tie on id: x2; then y2 (2000 < 3000); A full.
///   At 11: x 2000 = y 2000 again: x3, y3 11..21.
/// fifo: x2, x3 1..11, y2, y3 11..21.
/// Weighted drf with x's weight 2: x's share 1/2 = y's 1/2, tie on id: x2 (x max(1/4, 1)/2 =
///   1/2 = y's), x3: as fifo.
#[test]
fn drf_serves_the_smallest_dominant_share_over_gpu_types() {
    let pools = || cluster(&[(1, 4, "A"), (1, 2, "B")]);
    let queues = [queue("x", 1, 0), queue("y", 1, 0)];
    let jobs = vec![
        of_type(in_queue(job("x1", 0, 2, 100), "x"), "B"),
        of_type(in_queue(job("y1", 0, 2, 100), "y"), "A"),
        of_type(in_queue(job("x2", 1, 1, 10), "x"), "A"),
        of_type(in_queue(job("x3", 1, 1, 10), "x"), "A"),
        of_type(in_queue(job("y2", 1, 1, 10), "y"), "A"),
        of_type(in_queue(job("y3", 1, 1, 10), "y"), "A"),
    ];
    let times = |r: &RunResult| -> Vec<(u64, u64)> { schedule(r).iter().map(|&(_, s, e)| (s, e)).collect() };
    let r = run_queues("drf", pools(), &queues, jobs.clone());
    assert_eq!(times(&r), [(0, 100), (0, 100), (11, 21), (11, 21), (1, 11), (1, 11)], "drf");
    let r = run_queues("fair-share", pools(), &queues, jobs.clone());
    assert_eq!(times(&r), [(0, 100), (0, 100), (1, 11), (11, 21), (1, 11), (11, 21)], "fair-share");
    let r = run_queues("fifo", pools(), &queues, jobs.clone());
    assert_eq!(times(&r), [(0, 100), (0, 100), (1, 11), (1, 11), (11, 21), (11, 21)], "fifo");
    let weighted = [queue("x", 2, 0), queue("y", 1, 0)];
    let r = run_queues("drf", pools(), &weighted, jobs);
    assert_eq!(times(&r), [(0, 100), (0, 100), (1, 11), (1, 11), (11, 21), (11, 21)], "weighted drf");
}

/// A task: name, GPUs, work s, dependencies as (upstream index, kind).
type Task<'a> = (&'a str, u32, u64, &'a [(usize, DepKind)]);

fn dag(name: &str, submit_s: u64, tasks: &[Task<'_>]) -> JobSpec {
    let mut job = JobSpec::single(name, SimTime::from_secs(submit_s), 1, SimDuration(1));
    job.tasks = tasks
        .iter()
        .map(|&(task, gpus, work_s, deps)| {
            let mut t = TaskSpec::new(task, gpus, SimDuration::from_secs(work_s));
            t.deps = deps.iter().map(|&(upstream, kind)| Dependency { upstream, kind }).collect();
            t
        })
        .collect();
    job
}

/// (task name, first start s, end s) of the tasks of multi-task jobs.
fn task_times(r: &RunResult) -> Vec<(String, u64, u64)> {
    let secs = |t: Option<SimTime>| t.expect("task ran").as_ms() / 1000;
    r.tasks.iter().map(|t| (t.name.to_string(), secs(t.first_start), secs(t.finish))).collect()
}

/// 1 x 2 GPUs. At 0, e (a single-task job, 1 GPU, 30 s) and then DAG job d: d0 (30 s),
/// d1 (10 s), d2 (60 s after d1), 1 GPU each.
/// d's longest-path schedule: earliest d0 0, d1 0, d2 10; length max(30, 10 + 60) = 70;
/// latest d2 70 - 60 = 10, d1 10 - 10 = 0, d0 70 - 30 = 40. Paths (length - latest): d0 30,
/// d1 70, d2 60; slack: d0 40, d1 0, d2 0. e's path is its 30 s, slack 0.
/// critical-path: zero slack first, longest path first: d1 (70), e (30), then d0 (slack 40).
///   d1 0..10 and e 0..30; at 10 d2 (critical, 60) passes d0: 10..70; d0 30..60. d ends at
///   70, its critical path; e is not delayed.
/// fifo (arrival order e, d0, d1): e, d0 0..30; d1 30..40; d2 40..100: d ends 30 s later.
/// sjf: d1 0..10, e 0..30 (30 = d0's 30, e first by id); at 10 d0 (30) before d2 (60): 10..40;
///   d2 30..90: d ends at 90.
#[test]
fn critical_path_runs_the_critical_task_first() {
    let jobs = || {
        vec![
            job("e", 0, 1, 30),
            dag("d", 0, &[("d0", 1, 30, &[]), ("d1", 1, 10, &[]), ("d2", 1, 60, &[(1, DepKind::Success)])]),
        ]
    };
    let rows = |rows: &[(&str, u64, u64)]| sched(rows);
    for (spec, d_end, tasks) in [
        ("critical-path", 70, rows(&[("d0", 30, 60), ("d1", 0, 10), ("d2", 10, 70)])),
        ("critical-path[duration=estimate]", 70, rows(&[("d0", 30, 60), ("d1", 0, 10), ("d2", 10, 70)])),
        ("fifo", 100, rows(&[("d0", 0, 30), ("d1", 30, 40), ("d2", 40, 100)])),
        ("sjf", 90, rows(&[("d0", 10, 40), ("d1", 0, 10), ("d2", 30, 90)])),
    ] {
        let mut jobs = jobs();
        for t in jobs.iter_mut().flat_map(|j| j.tasks.iter_mut()) {
            t.estimate = t.work.into();
        }
        let r = run(spec, cluster(&[(1, 2, "A")]), jobs);
        assert_eq!(schedule(&r), sched(&[("e", 0, 30), ("d", 0, d_end)]), "{spec}");
        assert_eq!(task_times(&r), tasks, "{spec}");
        assert_eq!(r.jobs[1].critical_path_ms, Some(70_000), "{spec}");
    }
}

/// Estimates steer it: the same jobs with d2 estimated at 1 s (truly 60). From the estimates,
/// d's length is max(30, 10 + 1) = 30; latest d2 29, d1 min(30 - 10, 29 - 10) = 19, d0 0. d0 is
/// now critical (path 30, slack 0) and d1 is not (path 11, slack 19): e (path 30, first by id)
/// and d0 start at 0, d1 30..40, d2 40..100, as fifo.
#[test]
fn critical_path_with_estimates_ranks_by_what_it_is_told() {
    let mut d = dag("d", 0, &[("d0", 1, 30, &[]), ("d1", 1, 10, &[]), ("d2", 1, 60, &[(1, DepKind::Success)])]);
    for t in &mut d.tasks {
        t.estimate = t.work.into();
    }
    d.tasks[2].estimate = SimDuration::from_secs(1).into();
    let mut e = job("e", 0, 1, 30);
    e.tasks[0].estimate = SimDuration::from_secs(30).into();
    let r = run("critical-path[duration=estimate]", cluster(&[(1, 2, "A")]), vec![e, d]);
    assert_eq!(task_times(&r), sched(&[("d0", 0, 30), ("d1", 30, 40), ("d2", 40, 100)]));
}

/// Zero slack goes first even before a longer path with slack. 1 x 2 GPUs; at 0, DAG job d:
/// prep (10 s) -> train (90 s), and side (60 s) beside them; then s (single task, 20 s); 1 GPU
/// each. d's length is 100: prep path 100, train 90 (slack 0), side path 60 with slack 40. s's
/// path is 20, slack 0.
/// critical-path: prep and s at 0; at 10 train (critical) 10..100; at 20 side 20..80, within
///   its slack: d still ends at 100, and s at 20.
/// fifo (prep, side, train, s by id): prep 0..10, side 0..60, train 10..100, s 60..80. Ranking
///   by path alone (side's 60 before s's 20) would do the same.
#[test]
fn critical_path_puts_zero_slack_before_a_longer_path_with_slack() {
    let jobs = || {
        let d = dag("d", 0, &[("prep", 1, 10, &[]), ("train", 1, 90, &[(0, DepKind::Success)]), ("side", 1, 60, &[])]);
        vec![d, job("s", 0, 1, 20)]
    };
    let r = run("critical-path", cluster(&[(1, 2, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("d", 0, 100), ("s", 0, 20)]));
    assert_eq!(task_times(&r), sched(&[("prep", 0, 10), ("train", 10, 100), ("side", 20, 80)]));
    let r = run("fifo", cluster(&[(1, 2, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("d", 0, 100), ("s", 60, 80)]));
    assert_eq!(task_times(&r), sched(&[("prep", 0, 10), ("train", 10, 100), ("side", 0, 60)]));
}

/// A `data` edge's lag is its progress point, not the upstream's whole duration. 1 x 2 GPUs;
/// d: a (100 s), b (50 s) waiting for a's artifact at 10 s of work; s (single task, 20 s)
/// arrives at 10. d's schedule: earliest b 10; length max(100, 10 + 50) = 100; latest b
/// 100 - 50 = 50, a min(0, 50 - 10) = 0. So b has slack 40: at 10, b (ready then) and s
/// compete for the free GPU and s (critical) goes first: s 10..30, b 30..80, and d still ends
/// at 100. (Were the lag a's 100 s, b would be critical and go first.) fifo: b 10..60, s 60..80.
#[test]
fn critical_path_counts_a_data_edge_from_its_progress_point() {
    let jobs = || {
        let d = dag("d", 0, &[("a", 1, 100, &[]), ("b", 1, 50, &[(0, DepKind::Data(SimDuration::from_secs(10)))])]);
        vec![d, job("s", 10, 1, 20)]
    };
    let r = run("critical-path", cluster(&[(1, 2, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("d", 0, 100), ("s", 10, 30)]));
    assert_eq!(task_times(&r), sched(&[("a", 0, 100), ("b", 30, 80)]));
    let r = run("fifo", cluster(&[(1, 2, "A")]), jobs());
    assert_eq!(schedule(&r), sched(&[("d", 0, 100), ("s", 60, 80)]));
}

/// Non-critical tasks are lowered, never preempted. 1 x 2 GPUs; d (no dependencies: a gang of
/// two independent tasks) has long (100 s, slack 0) and short (10 s, slack 90): both start at 0.
/// At 1, s (1 GPU, 50 s, critical: its own path) finds no GPU; short is not preempted for it:
/// s 10..60.
#[test]
fn critical_path_never_preempts_a_non_critical_task() {
    let d = dag("d", 0, &[("long", 1, 100, &[]), ("short", 1, 10, &[])]);
    let r = run("critical-path", cluster(&[(1, 2, "A")]), vec![d, job("s", 1, 1, 50)]);
    assert_eq!(schedule(&r), sched(&[("d", 0, 100), ("s", 10, 60)]));
    assert!(r.decisions.iter().all(|d| d.kind != sim::DecisionKind::Preempt));
}

/// Specs are strict: a bad order is refused with what is valid, and the name lists every
/// parameter.
#[test]
fn specs_are_strict_and_names_complete() {
    let e = policies::build("fair-share[order=lifo]").err().expect("refused").to_string();
    assert!(e.contains("order=lifo") && e.contains("fifo|sjf"), "{e}");
    assert!(policies::build("drf[weight=2]").is_err());
    let names: Vec<String> = ["fair-share", "drf[order=sjf,duration=estimate]", "critical-path[placement=spread]"]
        .iter()
        .map(|s| policies::build(s).unwrap().name().to_string())
        .collect();
    assert_eq!(
        names,
        [
            "fair-share[order=fifo,duration=oracle,placement=pack,avoid_failed_h=0]",
            "drf[order=sjf,duration=estimate,placement=pack,avoid_failed_h=0]",
            "critical-path[duration=oracle,placement=spread,avoid_failed_h=0]"
        ]
    );
}

/// 1 x 4 GPUs. Queue a (cap 2, may borrow) runs a1 and a2 (2 GPUs, 100 s) from 0: a2 borrows.
/// At 5, b1 (queue b, cap 2, 2 GPUs, 10 s) finds no room; b is the neediest queue (0 GPUs)
/// and within its cap, so it reclaims: a2 (checkpoints every 1 s, nothing at risk) is preempted
/// rather than a1 (checkpoints every 60 s, 5 s at risk). b1 5..15; a2 restarts at 15 with its
/// 5 s kept: 15..110. The same under every new policy.
#[test]
fn borrowed_gpus_are_reclaimed_for_the_neediest_queue() {
    let queues = [
        QueueSpec { max_gpus: Some(2), borrow: true, ..queue("a", 1, 0) },
        QueueSpec { max_gpus: Some(2), ..queue("b", 1, 0) },
    ];
    let mut a1 = in_queue(job("a1", 0, 2, 100), "a");
    a1.tasks[0].options_mut().checkpoint = Some(SimDuration::from_secs(60));
    let mut a2 = in_queue(job("a2", 0, 2, 100), "a");
    a2.tasks[0].options_mut().checkpoint = Some(SimDuration::from_secs(1));
    let b1 = in_queue(job("b1", 5, 2, 10), "b");
    for spec in ["fair-share", "drf", "critical-path"] {
        let r = run_queues(spec, cluster(&[(1, 4, "A")]), &queues, vec![a1.clone(), a2.clone(), b1.clone()]);
        assert_eq!(schedule(&r), sched(&[("a1", 0, 100), ("a2", 0, 110), ("b1", 5, 15)]), "{spec}");
        let preempts: Vec<&sim::DecisionRecord> =
            r.decisions.iter().filter(|d| d.kind == sim::DecisionKind::Preempt).collect();
        assert_eq!(preempts.len(), 1, "{spec}");
        assert_eq!(r.jobs[preempts[0].job.index()].name, "a2", "{spec}");
        assert!(preempts[0].detail.starts_with("reclaimed for"), "{spec}: {}", preempts[0].detail);
    }
}

fn arb_jobs() -> impl Strategy<Value = Vec<JobSpec>> {
    let job = (arb_submit_ms(&[0, 1_000, 60_000], 20), arb_gpus(), arb_gpu_type(), any::<bool>(), arb_work_ms(3_600));
    prop::collection::vec(job, 1..=40).prop_map(|jobs| {
        jobs.into_iter()
            .enumerate()
            .map(|(i, (submit_ms, gpus, gpu_type, single_node, work_ms))| {
                let mut j = JobSpec::single(format!("j{i}"), SimTime(submit_ms), gpus, SimDuration(work_ms));
                j.tasks[0].gpu_type = gpu_type.map(Into::into);
                j.tasks[0].single_node = single_node && gpus <= 2;
                j.tasks[0].estimate = SimDuration(work_ms / 2 + 1).into();
                j
            })
            .collect()
    })
}

/// Every decision, as (time, kind, task, GPUs).
fn decisions(r: &RunResult) -> Vec<(u64, sim::DecisionKind, Option<sim::TaskId>, Vec<sim::GpuId>)> {
    r.decisions.iter().map(|d| (d.time.as_ms(), d.kind, d.task, d.gpus.clone())).collect()
}

/// Jobs that no pool can ever host are left out (they are unschedulable under every policy).
fn runnable(pools: &[PoolDesc], jobs: Vec<JobSpec>) -> Vec<JobSpec> {
    let fits = |j: &JobSpec| {
        let t = &j.tasks[0];
        pools.iter().any(|p| {
            t.gpu_type.as_deref().is_none_or(|ty| ty == p.gpu_type)
                && if t.single_node { t.gpus <= p.gpus_per_node } else { t.gpus <= p.nodes * p.gpus_per_node }
        })
    };
    jobs.into_iter().filter(fits).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(48) })]

    /// Without queues, or with one queue that caps nothing, fair-share and drf make exactly
    /// the decisions of greedy fifo (`fifo[skip=true]`), or of sjf with `order=sjf`; and
    /// critical-path never preempts.
    #[test]
    fn with_one_queue_fair_share_and_drf_are_greedy_fifo_or_sjf(
        pools in arb_pools(4, 2),
        jobs in arb_jobs(),
        one_queue in any::<bool>(),
    ) {
        let jobs = runnable(&pools, jobs);
        prop_assume!(!jobs.is_empty());
        let queues: Vec<QueueSpec> = if one_queue { vec![queue("only", 3, 1)] } else { Vec::new() };
        let go = |spec: &str| run_queues(spec, build_cluster(&pools), &queues, jobs.clone());
        for (spec, same_as) in [
            ("fair-share", "fifo[skip=true]"),
            ("drf", "fifo[skip=true]"),
            ("fair-share[order=sjf,duration=estimate]", "sjf[duration=estimate]"),
            ("drf[order=sjf]", "sjf"),
        ] {
            prop_assert_eq!(decisions(&go(spec)), decisions(&go(same_as)), "{} vs {}", spec, same_as);
        }
        prop_assert_eq!(go("critical-path[duration=estimate]").stats.preemptions, 0);
    }
}

/// A random case for the fairness replay: 2-3 uncapped queues with weights and priorities, one
/// pool, single-GPU single-task jobs (so any waiting job fits any free GPU).
#[derive(Debug, Clone)]
struct FairCase {
    nodes: u32,
    gpus_per_node: u32,
    queues: Vec<(u32, i32)>,
    jobs: Vec<(u64, u64, usize)>,
}

fn arb_fair_case() -> impl Strategy<Value = FairCase> {
    let queues = prop::collection::vec((1u32..=4, -1i32..=1), 2..=3);
    let jobs = prop::collection::vec((arb_submit_ms(&[0, 1_000, 60_000], 10), arb_work_ms(600), 0usize..3), 1..=40);
    (1u32..=2, 1u32..=4, queues, jobs).prop_map(|(nodes, gpus_per_node, queues, jobs)| {
        let jobs = jobs.into_iter().map(|(s, w, q)| (s, w, q % queues.len())).collect();
        FairCase { nodes, gpus_per_node, queues, jobs }
    })
}

/// Replays the decision log of a fair-share (or, on one pool, drf) run and checks each start:
/// its queue had the smallest GPUs / weight among the queues with a job waiting (ties: higher
/// priority, then lower id) and the job was its queue's earliest waiting one; and after each
/// decision point no GPU is free while a job waits.
fn check_fair(case: &FairCase, spec: &str) -> Result<(), TestCaseError> {
    let specs: Vec<QueueSpec> =
        case.queues.iter().enumerate().map(|(i, &(w, p))| queue(&format!("q{i}"), w, p)).collect();
    let jobs: Vec<JobSpec> = case
        .jobs
        .iter()
        .enumerate()
        .map(|(i, &(submit_ms, work_ms, q))| {
            let mut j = JobSpec::single(format!("j{i}"), SimTime(submit_ms), 1, SimDuration(work_ms));
            j.queue = Some(format!("q{q}").into());
            j
        })
        .collect();
    let gpus = case.nodes * case.gpus_per_node;
    let r = run_queues(spec, cluster(&[(case.nodes, case.gpus_per_node, "A")]), &specs, jobs);
    // Job ids are in (submit, file order); read each job's queue and submit from the records.
    let queue_of: Vec<usize> =
        r.jobs.iter().map(|j| j.name[1..].parse::<usize>().map(|i| case.jobs[i].2).unwrap()).collect();
    let mut used = vec![0u64; case.queues.len()];
    let mut started = vec![false; r.jobs.len()];
    let mut running = 0u32;
    let waiting = |started: &[bool], t: u64, q: usize| {
        (0..r.jobs.len()).find(|&j| !started[j] && queue_of[j] == q && r.jobs[j].submit.as_ms() <= t)
    };
    let log = &r.decisions;
    for (i, d) in log.iter().enumerate() {
        let t = d.time.as_ms();
        let j = d.job.index();
        match d.kind {
            sim::DecisionKind::Start => {
                let q = queue_of[j];
                prop_assert_eq!(
                    waiting(&started, t, q),
                    Some(j),
                    "{}: at {} ms job {} is not its queue's first",
                    spec,
                    t,
                    j
                );
                for other in (0..case.queues.len()).filter(|&o| o != q && waiting(&started, t, o).is_some()) {
                    let (wq, wo) = (u64::from(case.queues[q].0), u64::from(case.queues[other].0));
                    let order = (used[q] * wo).cmp(&(used[other] * wq));
                    let (pq, po) = (case.queues[q].1, case.queues[other].1);
                    let first = order.is_lt() || (order.is_eq() && (pq > po || (pq == po && q < other)));
                    prop_assert!(
                        first,
                        "{}: at {} ms queue {} ({:?}) served before queue {}: used {:?}",
                        spec,
                        t,
                        q,
                        case.queues,
                        other,
                        used
                    );
                }
                used[q] += 1;
                started[j] = true;
                running += 1;
            }
            sim::DecisionKind::Finish => {
                used[queue_of[j]] -= 1;
                running -= 1;
            }
            kind => prop_assert!(false, "{}: unexpected {:?}", spec, kind),
        }
        let last_of_instant = log.get(i + 1).is_none_or(|next| next.time.as_ms() > t);
        if last_of_instant {
            let someone_waits = (0..case.queues.len()).any(|q| waiting(&started, t, q).is_some());
            prop_assert!(running == gpus || !someone_waits, "{}: at {} ms a GPU is idle while a job waits", spec, t);
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(64) })]

    #[test]
    fn fair_share_and_drf_serve_the_neediest_queue_first(case in arb_fair_case()) {
        check_fair(&case, "fair-share")?;
        check_fair(&case, "drf")?;
    }
}

/// Random DAG jobs of single-GPU tasks: (submit ms, tasks as (work s, upstreams by index)).
type DagJob = (u64, Vec<(u64, Vec<usize>)>);

fn arb_dag_jobs() -> impl Strategy<Value = Vec<DagJob>> {
    let task = (1u64..=300, prop::collection::vec(0usize..4, 0..=2));
    let job = (arb_submit_ms(&[0, 1_000, 60_000], 10), prop::collection::vec(task, 1..=4));
    prop::collection::vec(job, 1..=12).prop_map(|jobs| {
        jobs.into_iter()
            .map(|(submit, tasks)| {
                // Upstreams point to earlier tasks only: acyclic by construction.
                let tasks = tasks
                    .into_iter()
                    .enumerate()
                    .map(|(i, (work, ups))| {
                        let mut ups: Vec<usize> = ups.into_iter().filter(|&u| u < i).collect();
                        ups.sort_unstable();
                        ups.dedup();
                        (work, ups)
                    })
                    .collect();
                (submit, tasks)
            })
            .collect()
    })
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(64) })]

    /// A replay of critical-path's decision log: every start is of a ready task with the least
    /// (non-critical, longest path first, id) key among the ready tasks, keys recomputed here
    /// from `sim::dag::schedule` on the true durations; no GPU idles while a task is ready.
    #[test]
    fn critical_path_starts_the_most_critical_ready_task(
        nodes in 1u32..=2,
        gpus_per_node in 1u32..=3,
        jobs in arb_dag_jobs(),
    ) {
        let specs: Vec<JobSpec> = jobs
            .iter()
            .enumerate()
            .map(|(i, (submit_ms, tasks))| {
                let mut j = JobSpec::single(format!("{i}"), SimTime(*submit_ms), 1, SimDuration(1));
                j.tasks = tasks
                    .iter()
                    .enumerate()
                    .map(|(k, (work_s, ups))| {
                        let mut t = TaskSpec::new(format!("{k}"), 1, SimDuration::from_secs(*work_s));
                        t.deps = ups.iter().map(|&u| Dependency { upstream: u, kind: DepKind::Success }).collect();
                        t
                    })
                    .collect();
                j
            })
            .collect();
        let r = run("critical-path", cluster(&[(nodes, gpus_per_node, "A")]), specs.clone());
        // Task ids follow job ids (submit, file order), tasks in job order.
        let mut key = Vec::new(); // by task id: (non-critical, -path, id)
        let mut task_job = Vec::new();
        let mut upstreams = Vec::new();
        for (job_id, record) in r.jobs.iter().enumerate() {
            let spec = &specs[record.name.parse::<usize>().unwrap()];
            let first = key.len();
            let s = sim::dag::schedule(spec, |t| spec.tasks[t].work.as_ms(), |t, d| spec.tasks[spec.tasks[t].deps[d].upstream].work.as_ms());
            for (t, task) in spec.tasks.iter().enumerate() {
                let path = s.length_ms - s.latest_start_ms[t];
                key.push((s.slack_ms(t) > 0, u64::MAX - path, first + t));
                task_job.push(job_id);
                upstreams.push(task.deps.iter().map(|d| first + d.upstream).collect::<Vec<usize>>());
            }
        }
        let n = key.len();
        let (mut started, mut finished) = (vec![false; n], vec![false; n]);
        let mut running = 0u32;
        let ready = |t: usize, now: u64, started: &[bool], finished: &[bool]| {
            !started[t] && r.jobs[task_job[t]].submit.as_ms() <= now && upstreams[t].iter().all(|&u| finished[u])
        };
        let log = &r.decisions;
        for (i, d) in log.iter().enumerate() {
            let now = d.time.as_ms();
            let t = d.task.expect("a task decision").index();
            match d.kind {
                sim::DecisionKind::Start => {
                    prop_assert!(ready(t, now, &started, &finished), "task {} started before it was ready", t);
                    for w in (0..n).filter(|&w| w != t && ready(w, now, &started, &finished)) {
                        prop_assert!(key[t] < key[w], "at {} ms task {} {:?} started before task {} {:?}", now, t, key[t], w, key[w]);
                    }
                    started[t] = true;
                    running += 1;
                }
                sim::DecisionKind::Finish => {
                    finished[t] = true;
                    running -= 1;
                }
                kind => prop_assert!(false, "unexpected {:?}", kind),
            }
            if log.get(i + 1).is_none_or(|next| next.time.as_ms() > now) {
                let someone_ready = (0..n).any(|w| ready(w, now, &started, &finished));
                prop_assert!(running == nodes * gpus_per_node || !someone_ready, "at {} ms a GPU idles while a task is ready", now);
            }
        }
        prop_assert!(finished.iter().all(|&f| f), "every task ran");
    }
}
