//! The determinism contract, policy by policy: same inputs give the same digest, job records
//! and decision log, run twice or on many threads at once; and the digest is a real witness of
//! the schedule (it tells policies apart and moves when one job's work moves by 1 ms).
//!
//! Workloads come from a fixed-seed SplitMix64 written here, so they never change with a
//! dependency's version. Every assertion names the seed and the spec to reproduce it.

mod common;

use common::ALL_SPECS;
use sim::{
    Cluster, ClusterSpec, ControllerConfig, JobOutcome, JobSpec, PoolSpec, RunResult, SimDuration, SimTime, TaskSpec,
    Workload,
};

const SEEDS: &[u64] = &[1, 0x5eed, 0xdead_beef];
const JOBS: usize = 300;
/// The job whose work the sensitivity test moves by 1 ms: always one schedulable GPU.
const PROBE_JOB: usize = 150;

/// Every spec of `ALL_SPECS` without restart overhead, plus srtf paying 30 s per restart.
fn variants() -> Vec<(&'static str, u64)> {
    let mut v: Vec<(&'static str, u64)> = ALL_SPECS.iter().map(|&s| (s, 0)).collect();
    v.push(("srtf", 30_000));
    v
}

struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `lo..=hi` (the modulo bias is irrelevant here).
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
    fn percent(&mut self, p: u64) -> bool {
        self.next() % 100 < p
    }
}

/// Three pools, two GPU types (pool names differ from types), 68 GPUs.
fn cluster() -> Cluster {
    let pool = |name: &str, gpu_type: &str, nodes, gpus_per_node| PoolSpec {
        name: name.into(),
        gpu_type: gpu_type.into(),
        nodes,
        gpus_per_node,
        nodes_per_rack: 2,
        speed_milli: 1000,
    };
    let pools = vec![pool("a-big", "A", 4, 8), pool("b", "B", 8, 4), pool("a-small", "A", 2, 2)];
    Cluster::new(&ClusterSpec { pools }).expect("valid cluster")
}

/// ~80% offered load with bursts of simultaneous arrivals, so queues form and ties abound.
fn workload(seed: u64) -> Vec<JobSpec> {
    let mut rng = SplitMix64(seed);
    let mut submit_ms = 0;
    (0..JOBS)
        .map(|j| {
            if !rng.percent(40) {
                submit_ms += if rng.percent(80) { rng.range(1, 300) * 1000 } else { rng.range(1, 300_000) };
            }
            let tasks = if j == PROBE_JOB || rng.percent(85) { 1 } else { rng.range(2, 3) };
            let tasks = (0..tasks)
                .map(|t| {
                    let gpus = match rng.range(0, 99) {
                        0..=54 => 1,
                        55..=69 => 2,
                        70 => 3,
                        71..=85 => 4,
                        86..=95 => 8,
                        _ => 16,
                    };
                    let gpu_type = match rng.range(0, 99) {
                        0..=69 => None,
                        70..=81 => Some("A"),
                        82..=96 => Some("b"),
                        _ => Some("C"), // not in the cluster: unschedulable
                    };
                    let mut work_ms = match rng.range(0, 99) {
                        0..=49 => rng.range(1, 600),
                        50..=84 => rng.range(600, 3600),
                        _ => rng.range(3600, 7200),
                    } * 1000;
                    if rng.percent(20) {
                        work_ms += rng.range(1, 999);
                    }
                    let estimate_ms = work_ms * rng.range(1, 16) / 4;
                    let probe = j == PROBE_JOB;
                    let mut task = TaskSpec::new(t.to_string(), if probe { 1 } else { gpus }, SimDuration(work_ms));
                    task.gpu_type = if probe { None } else { gpu_type.map(Into::into) };
                    task.single_node = !probe && rng.percent(20);
                    task.estimate = SimDuration(estimate_ms).into();
                    task
                })
                .collect();
            JobSpec {
                name: format!("job{j}").into(),
                submit: SimTime(submit_ms),
                queue: None,
                deadline: sim::OptDuration::NONE,
                cancel: sim::OptTime::NONE,
                priority: 0,
                owner: None,
                co_start: false,
                tasks,
            }
        })
        .collect()
}

fn run_with(spec: &str, overhead_ms: u64, seed: u64, jobs: Vec<JobSpec>, record_and_check: bool) -> RunResult {
    let mut policy = policies::build(spec).unwrap_or_else(|e| panic!("seed {seed}, spec {spec}: {e}"));
    let config = ControllerConfig {
        seed,
        restart_overhead: SimDuration(overhead_ms),
        check_invariants: record_and_check,
        record_decisions: record_and_check,
        record_series: record_and_check,
        ..ControllerConfig::default()
    };
    let workload = Workload::new(jobs).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
    sim::simulate(sim::Scenario::new(cluster(), workload), policy.as_mut(), config)
        .unwrap_or_else(|e| panic!("seed {seed}, spec {spec}: {e}"))
}

fn run(spec: &str, overhead_ms: u64, seed: u64) -> RunResult {
    run_with(spec, overhead_ms, seed, workload(seed), true)
}

fn what(seed: u64, spec: &str, overhead_ms: u64) -> String {
    format!("seed {seed:#x}, spec {spec}, restart overhead {overhead_ms} ms")
}

#[test]
fn the_workload_generator_is_fixed_and_not_degenerate() {
    for &seed in SEEDS {
        let jobs = workload(seed);
        assert_eq!(jobs, workload(seed), "seed {seed:#x}: the generator is not deterministic");
        let tied = jobs.windows(2).filter(|w| w[0].submit == w[1].submit).count();
        let multi = jobs.iter().filter(|j| j.tasks.len() > 1).count();
        assert!(tied > 50 && multi > 10, "seed {seed:#x}: {tied} tied arrivals, {multi} multi-task jobs");
        // Every policy queues jobs on it, and some jobs can never fit.
        let r = run("fifo[skip=true]", 0, seed);
        let waited = r.jobs.iter().filter(|j| j.first_start.is_some_and(|s| s > j.submit)).count();
        let unschedulable = r.jobs.iter().filter(|j| matches!(j.outcome, Some(JobOutcome::Unschedulable(_)))).count();
        assert!(waited > 30, "seed {seed:#x}: only {waited} jobs waited: the workload does not contend");
        assert!(unschedulable > 0, "seed {seed:#x}: no unschedulable job");
        let probe = &r.jobs[r.jobs.iter().position(|j| j.name == format!("job{PROBE_JOB}")).unwrap()];
        assert_eq!(probe.outcome, Some(JobOutcome::Succeeded), "seed {seed:#x}: the probe job must run");
    }
    // srtf preempts on these workloads, so its runs exercise preemption and restart overhead.
    let preemptions: u64 = SEEDS.iter().map(|&seed| run("srtf", 30_000, seed).stats.preemptions).sum();
    assert!(preemptions > 0, "srtf never preempted on seeds {SEEDS:?}");
}

#[test]
fn each_policy_run_twice_gives_identical_digest_records_and_decision_log() {
    for &seed in SEEDS {
        for (spec, overhead_ms) in variants() {
            let what = what(seed, spec, overhead_ms);
            let (a, b) = (run(spec, overhead_ms, seed), run(spec, overhead_ms, seed));
            assert_eq!(a.stats.digest.len(), 16, "{what}: digest {:?}", a.stats.digest);
            assert!(!a.decisions.is_empty() && a.stats.starts > 0, "{what}: nothing was decided");
            assert!(a.jobs.iter().all(|j| j.outcome.is_some()), "{what}: a job never ended");
            assert_eq!(a.stats.digest, b.stats.digest, "{what}: digests differ");
            assert_eq!(a.policy, b.policy, "{what}");
            assert_eq!(a.stats, b.stats, "{what}: run stats differ");
            assert_eq!(a.jobs, b.jobs, "{what}: job records differ");
            assert_eq!(a.decisions.len(), b.decisions.len(), "{what}: decision logs differ in length");
            if let Some(i) = (0..a.decisions.len()).find(|&i| a.decisions[i] != b.decisions[i]) {
                panic!("{what}: decision {i} differs: {:?} vs {:?}", a.decisions[i], b.decisions[i]);
            }
        }
    }
}

#[test]
fn the_digest_does_not_depend_on_recording_decisions_or_the_series_or_checking_invariants() {
    for &seed in SEEDS {
        for (spec, overhead_ms) in variants() {
            let what = what(seed, spec, overhead_ms);
            let full = run_with(spec, overhead_ms, seed, workload(seed), true);
            let bare = run_with(spec, overhead_ms, seed, workload(seed), false);
            assert!(bare.decisions.is_empty(), "{what}: decisions kept though not asked for");
            assert!(bare.series.buckets().is_empty(), "{what}: a series recorded though not asked for");
            assert!(!full.series.buckets().is_empty(), "{what}: no series recorded though asked for");
            assert_eq!(full.stats, bare.stats, "{what}: stats (digest included) differ");
            assert_eq!(full.jobs, bare.jobs, "{what}: job records differ");
        }
    }
}

#[test]
fn concurrent_runs_on_many_threads_match_sequential_runs() {
    let cases: Vec<(u64, &'static str, u64)> = SEEDS
        .iter()
        .flat_map(|&seed| variants().into_iter().map(move |(spec, overhead_ms)| (seed, spec, overhead_ms)))
        .collect();
    let sequential: Vec<RunResult> = cases.iter().map(|&(seed, spec, oh)| run(spec, oh, seed)).collect();
    // All of them at once, one thread each, released together; then again on 3 threads, each
    // walking the list in a different order, so runs interleave differently.
    let barrier = std::sync::Barrier::new(cases.len());
    let at_once: Vec<RunResult> = std::thread::scope(|s| {
        let handles: Vec<_> = cases
            .iter()
            .map(|&(seed, spec, oh)| {
                let barrier = &barrier;
                s.spawn(move || {
                    barrier.wait();
                    run(spec, oh, seed)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("a run panicked")).collect()
    });
    let mut pooled: Vec<Option<RunResult>> = vec![None; cases.len()];
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|k| {
                let cases = &cases;
                s.spawn(move || {
                    let mut order: Vec<usize> = (0..cases.len()).filter(|i| i % 3 == k).collect();
                    if k == 1 {
                        order.reverse();
                    }
                    order.into_iter().map(|i| (i, run(cases[i].1, cases[i].2, cases[i].0))).collect::<Vec<_>>()
                })
            })
            .collect();
        for h in handles {
            for (i, r) in h.join().expect("a run panicked") {
                pooled[i] = Some(r);
            }
        }
    });
    for (i, &(seed, spec, oh)) in cases.iter().enumerate() {
        let what = what(seed, spec, oh);
        let pooled = pooled[i].as_ref().expect("every case ran");
        for (how, other) in [("one thread each", &at_once[i]), ("3 threads", pooled)] {
            assert_eq!(sequential[i].stats.digest, other.stats.digest, "{what}: digest differs on {how}");
            assert_eq!(sequential[i].jobs, other.jobs, "{what}: job records differ on {how}");
            assert_eq!(sequential[i].decisions, other.decisions, "{what}: decision log differs on {how}");
        }
    }
}

#[test]
fn the_digest_tells_policies_apart() {
    for &seed in SEEDS {
        let digests: Vec<(&str, u64, String)> =
            variants().into_iter().map(|(spec, oh)| (spec, oh, run(spec, oh, seed).stats.digest)).collect();
        let table = format!("seed {seed:#x}: digests {digests:#?}");
        let of = |spec: &str| &digests.iter().find(|d| d.0 == spec && d.1 == 0).expect("spec in variants").2;
        // Four different policies: four different schedules on a contended workload.
        let distinct = ["fifo", "sjf", "srtf", "easy-backfill"];
        for (i, a) in distinct.iter().enumerate() {
            for b in &distinct[i + 1..] {
                assert_ne!(of(a), of(b), "seed {seed:#x}: {a} and {b} have the same digest; {table}");
            }
        }
        // Placement alone moves GPUs, and restart overhead moves times.
        assert_ne!(of("fifo"), of("fifo[placement=spread]"), "{table}");
        let srtf_overhead = &digests.iter().find(|d| d.0 == "srtf" && d.1 > 0).expect("srtf with overhead").2;
        assert_ne!(of("srtf"), srtf_overhead, "{table}");
    }
}

#[test]
fn one_millisecond_more_work_for_one_job_changes_the_digest() {
    for &seed in SEEDS {
        let base_jobs = workload(seed);
        let mut moved = base_jobs.clone();
        moved[PROBE_JOB].tasks[0].work += SimDuration(1);
        for (spec, overhead_ms) in variants() {
            let what = what(seed, spec, overhead_ms);
            let base = run_with(spec, overhead_ms, seed, base_jobs.clone(), true);
            let probe = base.jobs.iter().find(|j| j.name == base_jobs[PROBE_JOB].name).expect("probe job");
            assert_eq!(probe.outcome, Some(JobOutcome::Succeeded), "{what}: the probe job did not run");
            let after = run_with(spec, overhead_ms, seed, moved.clone(), true);
            assert_ne!(
                base.stats.digest, after.stats.digest,
                "{what}: job {} worked 1 ms longer and the digest did not change",
                base_jobs[PROBE_JOB].name
            );
        }
    }
}
