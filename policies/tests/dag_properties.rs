//! Task DAGs under every policy, on random clusters and random DAG jobs (every dependency kind,
//! start windows, hardware failures): each task starts only when its dependencies allow, a
//! skipped task had a dependency that could no longer be met, windows hold, every job ends
//! with the outcome the rules give, and a run repeats byte for byte.

mod common;

use common::ALL_SPECS;
use common::random::{PoolDesc, arb_gpus, arb_pools, arb_submit_ms, arb_work_ms, build_cluster};
use proptest::prelude::*;
use sim::{
    ControllerConfig, DepKind, Dependency, FailureConfig, JobSpec, RunResult, SimDuration, SimTime, TaskRecord,
    TaskSpec, TaskStatus, Window, Workload,
};

const CHECKPOINT_MS: u64 = 20_000;

#[derive(Debug, Clone)]
struct Case {
    pools: Vec<PoolDesc>,
    jobs: Vec<JobSpec>,
    failures: Vec<(u64, u32)>,
    seed: u64,
}

/// Tasks (2..=5) with dependencies on earlier tasks only, so the DAG is acyclic.
fn arb_job() -> impl Strategy<Value = JobSpec> {
    let task = (arb_gpus(), arb_work_ms(3_600), prop::option::of(0u64..=600), prop::option::of(0u64..=7_200));
    let dep = (any::<bool>(), any::<usize>(), 0u8..5, any::<u64>());
    (
        arb_submit_ms(&[0, 1_000, 60_000], 20),
        prop::collection::vec(task, 2..=5),
        prop::collection::vec(prop::collection::vec(dep, 0..=2), 5),
    )
        .prop_map(|(submit_ms, tasks, deps)| {
            let mut specs: Vec<TaskSpec> = tasks
                .iter()
                .enumerate()
                .map(|(i, &(gpus, work_ms, not_before_s, window_s))| {
                    let mut t = TaskSpec::new(i.to_string(), gpus, SimDuration(work_ms));
                    t.estimate = SimDuration(work_ms).into();
                    let not_before = not_before_s.map(|s| SimTime(submit_ms + s * 1000));
                    let not_after = window_s.map(|s| SimTime(submit_ms + s * 1000).max(not_before.unwrap_or_default()));
                    t.options_mut().window = Window { not_before, not_after };
                    t
                })
                .collect();
            for t in 1..specs.len() {
                for &(on, upstream, kind, x) in &deps[t] {
                    if !on {
                        continue;
                    }
                    let upstream = upstream % t;
                    let work = specs[upstream].work.as_ms();
                    let kind = match kind {
                        0 => DepKind::Success,
                        1 => DepKind::Any,
                        2 => DepKind::Failure,
                        3 => DepKind::Data(SimDuration(1 + x % work)),
                        _ => DepKind::Checkpoint(1 + (x % 4) as u32),
                    };
                    specs[t].deps.push(Dependency { upstream, kind });
                }
            }
            JobSpec {
                name: String::new().into(),
                submit: SimTime(submit_ms),
                queue: None,
                deadline: sim::OptDuration::NONE,
                cancel: sim::OptTime::NONE,
                priority: 0,
                owner: None,
                co_start: false,
                tasks: specs.into(),
            }
        })
}

fn arb_case() -> impl Strategy<Value = Case> {
    (
        arb_pools(4, 2),
        prop::collection::vec(arb_job(), 1..=25),
        prop::collection::vec((0u64..=7_200, any::<u32>()), 0..=4),
        any::<u64>(),
    )
        .prop_map(|(pools, mut jobs, failures, seed)| {
            let largest = pools.iter().map(|p| p.nodes * p.gpus_per_node).max().unwrap_or(1);
            for (i, j) in jobs.iter_mut().enumerate() {
                j.name = format!("j{i}").into();
                // Every task fits some pool: unschedulable jobs are tested elsewhere.
                for t in &mut j.tasks {
                    t.gpus = t.gpus.min(largest);
                }
            }
            Case { pools, jobs, failures, seed }
        })
}

fn run_case(spec: &str, case: &Case) -> RunResult {
    let cluster = build_cluster(&case.pools);
    let nodes = cluster.nodes().len() as u32;
    let events = case
        .failures
        .iter()
        .map(|&(at_s, node)| sim::ClusterEvent::NodeFail {
            time: SimTime::from_secs(at_s),
            node: sim::NodeId(node % nodes),
            repair: Some(SimDuration::from_secs(600)),
        })
        .collect();
    let config = ControllerConfig {
        seed: case.seed,
        checkpoint: SimDuration(CHECKPOINT_MS),
        failures: FailureConfig { max_retries: 1, ..FailureConfig::default() },
        check_invariants: true,
        record_decisions: true,
        ..ControllerConfig::default()
    };
    let workload = Workload::new(case.jobs.clone()).expect("acyclic by construction");
    let scenario = sim::Scenario::new(cluster, workload).with_events(events).expect("valid events");
    let mut policy = policies::build(spec).expect("valid spec");
    sim::simulate(scenario, policy.as_mut(), config).unwrap_or_else(|e| panic!("{spec}: refused: {e}"))
}

/// The point of `upstream`'s work a progress dependency waits for, in ms.
fn point_ms(kind: DepKind, upstream: &TaskSpec) -> u64 {
    match kind {
        DepKind::Data(at) => at.as_ms(),
        DepKind::Checkpoint(n) => (u64::from(n) * CHECKPOINT_MS).min(upstream.work.as_ms()),
        _ => 0,
    }
}

fn check(spec: &str, case: &Case) -> Result<(), TestCaseError> {
    let r = run_case(spec, case);
    let ctx = format!("{spec}, seed {}", case.seed);
    common::check_series(&r).map_err(|e| TestCaseError::fail(format!("{ctx}: {e}")))?;
    let workload = Workload::new(case.jobs.clone()).expect("valid");
    let mut records = r.tasks.iter();
    for (job, spec_job) in r.jobs.iter().zip(workload.jobs()) {
        let jctx = format!("{ctx}, job {}", job.name);
        prop_assert!(job.outcome.is_some(), "{}: the job never ended", jctx);
        let tasks: Vec<&TaskRecord> = records.by_ref().take(spec_job.tasks.len()).collect();
        let mut unhandled = false;
        for (t, (rec, t_spec)) in tasks.iter().zip(&spec_job.tasks).enumerate() {
            let tctx = format!("{jctx}, task {t}");
            prop_assert!(rec.status.is_final(), "{}: ended {:?}", tctx, rec.status);
            let finish = rec.finish.expect("a final task has an end");
            if let Some(start) = rec.first_start {
                prop_assert!(
                    t_spec.options().window.not_before.is_none_or(|nb| nb <= start),
                    "{}: started before its window",
                    tctx
                );
                prop_assert!(
                    t_spec.options().window.not_after.is_none_or(|na| start <= na),
                    "{}: started after its window",
                    tctx
                );
                for dep in &t_spec.deps {
                    let up = tasks[dep.upstream];
                    let up_end = up.finish.map_or(u64::MAX, SimTime::as_ms);
                    let ok = match dep.kind {
                        DepKind::Success => up.status == TaskStatus::Succeeded && up_end <= start.as_ms(),
                        DepKind::Failure => up.status == TaskStatus::Failed && up_end <= start.as_ms(),
                        DepKind::Any => up_end <= start.as_ms(),
                        // Work cannot be done faster than real time.
                        kind => up.first_start.is_some_and(|s| {
                            s.as_ms() + point_ms(kind, &spec_job.tasks[dep.upstream]) <= start.as_ms()
                        }),
                    };
                    prop_assert!(ok, "{}: started at {} though {:?} on {:?} was not met", tctx, start, dep.kind, up);
                }
            }
            match rec.status {
                TaskStatus::Skipped => {
                    prop_assert!(rec.first_start.is_none(), "{}: skipped after starting", tctx);
                    let never = t_spec.deps.iter().any(|dep| {
                        let up = tasks[dep.upstream].status;
                        match dep.kind {
                            DepKind::Success => up != TaskStatus::Succeeded,
                            DepKind::Failure => up != TaskStatus::Failed,
                            DepKind::Any => false,
                            _ => up != TaskStatus::Succeeded,
                        }
                    });
                    prop_assert!(never, "{}: skipped with every dependency meetable", tctx);
                }
                TaskStatus::Failed => {
                    let handled = spec_job
                        .tasks
                        .iter()
                        .any(|o| o.deps.iter().any(|d| d.upstream == t && d.kind == DepKind::Failure));
                    unhandled |= !handled;
                }
                _ => {}
            }
            prop_assert!(job.end.is_some_and(|e| finish <= e), "{}: ended after its job", tctx);
        }
        let outcome = job.outcome.as_ref().expect("checked");
        // A job whose task failed with no handler failed; one whose failures were all handled
        // succeeded. (A gang, without dependencies, fails at its first failure.)
        prop_assert_eq!(outcome.as_str() == "failed", unhandled, "{}: outcome {:?}", jctx, outcome);
    }
    // Run twice: the same decisions.
    let again = run_case(spec, case);
    prop_assert_eq!(&r.stats.digest, &again.stats.digest, "{}: not deterministic", ctx);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::with_cases(24) })]

    #[test]
    fn dependencies_windows_and_outcomes_hold_under_every_policy(case in arb_case()) {
        for spec in ALL_SPECS {
            check(spec, &case)?;
        }
    }
}
