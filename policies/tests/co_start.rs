//! Co-start jobs (Slurm's heterogeneous jobs, `JobSpec::co_start`): all of a job's tasks start
//! at the same instant or none does, under every policy. A hand-computed schedule, then a
//! property over random workloads and every policy spec.

mod common;

use common::random::{PoolDesc, arb_pools, arb_submit_ms, arb_work_ms, build_cluster};
use common::{ALL_SPECS, cluster, gpu_fail, job, run, run_with_events};
use proptest::prelude::*;
use sim::{ControllerConfig, DecisionKind, JobSpec, RunResult, Scenario, SimDuration, SimTime, TaskSpec, Workload};

/// A co-start job of tasks of these GPU counts, all of `work_s` (with that estimate).
fn het_job(name: &str, submit_s: u64, gpus: &[u32], work_s: u64) -> JobSpec {
    let mut j = job(name, submit_s, gpus[0], work_s);
    j.tasks = gpus
        .iter()
        .enumerate()
        .map(|(i, &g)| TaskSpec::new(i.to_string(), g, SimDuration::from_secs(work_s)))
        .collect();
    j.tasks.iter_mut().for_each(|t| t.estimate = SimDuration::from_secs(work_s).into());
    j.co_start = true;
    j
}

/// Each task's first start (s), by (job name, task name).
fn task_starts(r: &RunResult) -> Vec<(String, String, Option<u64>)> {
    r.tasks
        .iter()
        .map(|t| {
            let job = &r.jobs[t.job.index()].name;
            (job.to_string(), t.name.to_string(), t.first_start.map(|s| s.as_ms() / 1000))
        })
        .collect()
}

/// 2 nodes x 8 GPUs. a (8 GPUs, 100 s) starts at 0 on one node. b, a het job of 8 + 4 GPUs
/// (200 s) submitted with it: its 8-GPU component fits the other node at 0, but its 4-GPU one
/// would then find no room, so neither starts until a ends at 100; both start then (the 8 on
/// one node, the 4 on the other) and end at 300.
#[test]
fn a_het_job_waits_until_all_its_components_fit() {
    let jobs = || {
        let mut a = job("a", 0, 8, 100);
        a.tasks[0].estimate = SimDuration::from_secs(100).into();
        vec![a, het_job("b", 0, &[8, 4], 200)]
    };
    // (Task records are kept for jobs of several tasks: b's.)
    let expected = vec![("b".to_string(), "0".to_string(), Some(100)), ("b".to_string(), "1".to_string(), Some(100))];
    for spec in ["fifo", "fifo[skip=true]", "easy-backfill", "sjf", "srtf", "slurm[sched=builtin,batch_sched_delay=0]"]
    {
        let r = run(spec, cluster(&[(2, 8, "A")]), jobs());
        assert_eq!(r.jobs[0].first_start.map(|s| s.as_ms()), Some(0), "{spec}");
        assert_eq!(task_starts(&r), expected, "{spec}");
        assert_eq!(r.jobs[1].end.map(|e| e.as_ms() / 1000), Some(300), "{spec}");
    }
}

/// The same without the flag: the 8-GPU component starts at once on the free node (what the
/// replay did before co-start jobs), so the test above can fail.
#[test]
fn without_co_start_a_component_starts_alone() {
    let mut b = het_job("b", 0, &[8, 4], 200);
    b.co_start = false;
    let r = run("fifo[skip=true]", cluster(&[(2, 8, "A")]), vec![job("a", 0, 8, 100), b]);
    assert_eq!(task_starts(&r)[0].2, Some(0));
    assert_eq!(task_starts(&r)[1].2, Some(100));
}

/// 1 node x 4 GPUs. a (2 GPUs, 10 s) starts at 0; het b (1 + 1 GPUs) fits beside it and starts
/// whole at 0 under every policy; c (4 GPUs) waits for the node to drain.
#[test]
fn a_het_job_that_fits_starts_whole_at_once() {
    for spec in ALL_SPECS {
        let jobs = vec![job("a", 0, 2, 10), het_job("b", 0, &[1, 1], 5), job("c", 0, 4, 1)];
        let r = run(spec, cluster(&[(1, 4, "A")]), with_estimates(jobs));
        let starts = task_starts(&r);
        assert_eq!(starts[0].2, starts[1].2, "{spec}: {starts:?}");
        assert!(starts[0].2.is_some(), "{spec}: {starts:?}");
    }
}

/// 2 nodes x 4 GPUs; het b (4 + 4 GPUs, 100 s) starts whole at 0, one component per node. A
/// GPU of node 1 fails at 30 s for 60 s: that component fails and retries alone once it is
/// back (a failure stops only the tasks on the broken hardware), started by itself as its
/// job's one waiting task.
/// Every policy finishes b; its components first start together (at 0, or at 3 s under
/// slurm's batch_sched_delay).
#[test]
fn a_het_job_component_that_fails_retries_alone() {
    for spec in ALL_SPECS {
        let jobs = with_estimates(vec![het_job("b", 0, &[4, 4], 100)]);
        let events = vec![gpu_fail(1, 0, 30, 60)];
        let r = run_with_events(spec, cluster(&[(2, 4, "A")]), jobs, events, ControllerConfig::default());
        assert_eq!(r.jobs[0].outcome, Some(sim::JobOutcome::Succeeded), "{spec}");
        let starts = task_starts(&r);
        assert!(starts[0].2.is_some() && starts[0].2 == starts[1].2, "{spec}: {starts:?}");
        let failures: u32 = r.tasks.iter().map(|t| t.failures).sum();
        assert_eq!(failures, 1, "{spec}");
    }
}

fn with_estimates(mut jobs: Vec<JobSpec>) -> Vec<JobSpec> {
    for t in jobs.iter_mut().flat_map(|j| j.tasks.iter_mut()) {
        t.estimate = t.work.into();
    }
    jobs
}

// ---------------------------------------------------------------------------------------------
// The property: every policy starts a co-start job's tasks together, attempt by attempt
// ---------------------------------------------------------------------------------------------

#[derive(Debug, Clone)]
struct Case {
    pools: Vec<PoolDesc>,
    jobs: Vec<JobSpec>,
}

/// Jobs of 1..=3 tasks; about a third of those with several start together. A co-start job's
/// tasks ask for no type or node shape and fit the smallest pool together, so it can always
/// start once the cluster drains.
fn arb_case() -> impl Strategy<Value = Case> {
    let task = (prop_oneof![4 => Just(1u32), 2 => Just(2), 1 => Just(4)], arb_work_ms(3600), any::<bool>());
    let job = (arb_submit_ms(&[0, 1_000, 60_000], 20), prop::collection::vec(task, 1..=3), 0u8..3, -2i32..=2);
    (arb_pools(4, 2), prop::collection::vec(job, 1..=30)).prop_map(|(pools, jobs)| {
        let smallest = pools.iter().map(|p| p.nodes * p.gpus_per_node).min().unwrap_or(1);
        let jobs = jobs
            .into_iter()
            .enumerate()
            .map(|(i, (submit_ms, tasks, pick, priority))| {
                let mut j = JobSpec::single(format!("j{i}"), SimTime(submit_ms), 1, SimDuration(1));
                j.priority = priority;
                j.tasks = tasks
                    .iter()
                    .enumerate()
                    .map(|(k, &(gpus, work_ms, single_node))| {
                        let mut t = TaskSpec::new(k.to_string(), gpus, SimDuration(work_ms));
                        t.estimate = SimDuration(work_ms).into();
                        t.single_node = single_node && gpus <= pools[0].gpus_per_node;
                        t
                    })
                    .collect();
                let total: u32 = j.tasks.iter().map(|t| t.gpus).sum();
                j.co_start = j.tasks.len() > 1 && pick == 0 && total <= smallest;
                if j.co_start {
                    j.tasks.iter_mut().for_each(|t| t.single_node = false);
                }
                j
            })
            .collect();
        Case { pools, jobs }
    })
}

/// Replays the decision log: every start of a task of a co-start job comes in one block of
/// consecutive starts of that job, which starts exactly the job's tasks waiting then (all of
/// them at first; after a preemption, every preempted one; a task that finished stays done).
fn check_together(spec: &str, case: &Case) -> Result<(), TestCaseError> {
    let mut policy = policies::build(spec).expect("valid policy spec");
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() };
    let workload = Workload::new(case.jobs.clone()).expect("valid workload");
    let scenario = Scenario::new(build_cluster(&case.pools), workload.clone());
    let r = sim::simulate(scenario, policy.as_mut(), config).expect("simulation runs");
    let mut first_task = Vec::new();
    let mut next = 0;
    for j in workload.jobs() {
        first_task.push(next);
        next += j.tasks.len();
    }
    let co_start = |job: sim::JobId| workload.jobs()[job.index()].co_start;
    let tasks_of =
        |job: sim::JobId| first_task[job.index()]..first_task[job.index()] + workload.jobs()[job.index()].tasks.len();
    // Whether each task waits to start (no failures here: only starts, preemptions and ends).
    let mut waiting = vec![true; next];
    let mut i = 0;
    while i < r.decisions.len() {
        let d = &r.decisions[i];
        let task = d.task.map(sim::TaskId::index);
        match (d.kind, task) {
            (DecisionKind::Start, Some(t)) if co_start(d.job) => {
                let block: Vec<usize> = r.decisions[i..]
                    .iter()
                    .take_while(|e| e.kind == DecisionKind::Start && e.job == d.job && e.time == d.time)
                    .filter_map(|e| e.task.map(sim::TaskId::index))
                    .collect();
                let expected: Vec<usize> = tasks_of(d.job).filter(|&k| waiting[k]).collect();
                let mut got = block.clone();
                got.sort_unstable();
                prop_assert_eq!(&got, &expected, "{}: job {} at {} ms (from task {})", spec, d.job, d.time.as_ms(), t);
                block.iter().for_each(|&k| waiting[k] = false);
                i += block.len();
                continue;
            }
            (DecisionKind::Start, Some(t)) => waiting[t] = false,
            (DecisionKind::Preempt, Some(t)) => waiting[t] = true,
            (_, Some(t)) => waiting[t] = false,
            (_, None) => tasks_of(d.job).for_each(|k| waiting[k] = false),
        }
        i += 1;
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn every_policy_starts_a_co_start_job_together(case in arb_case()) {
        for spec in ALL_SPECS {
            check_together(spec, &case)?;
        }
    }
}

/// easy-backfill reserves for a blocked co-start head what its whole job needs. 2 nodes x 4
/// GPUs. r1 (4 GPUs, 100 s) and r2 (2 GPUs, 300 s) run from 0. h, a het job of 4 + 4 GPUs
/// (50 s) submitted at 1, needs all 8: blocked, its reservation is at 300 (r2's end) with no
/// GPU to spare. b (2 GPUs, 1,000 s) at 2 would run past 300: it waits; h runs 300-350, b
/// from 350. Reserving for h's first task alone (4 GPUs, at r1's end with 2 to spare) let b
/// take the spare 2 at once, and h waited until b's end at 1,002.
#[test]
fn easy_backfill_reserves_for_a_co_start_heads_whole_job() {
    let timed = |name: &str, submit: u64, gpus: u32, work: u64| {
        let mut j = job(name, submit, gpus, work);
        j.tasks[0].estimate = SimDuration::from_secs(work).into();
        j
    };
    let jobs =
        vec![timed("r1", 0, 4, 100), timed("r2", 0, 2, 300), het_job("h", 1, &[4, 4], 50), timed("b", 2, 2, 1000)];
    let r = run("easy-backfill[duration=estimate]", cluster(&[(2, 4, "A")]), jobs);
    let starts: Vec<Option<u64>> = r.jobs.iter().map(|j| j.first_start.map(|s| s.as_ms() / 1000)).collect();
    assert_eq!(starts, [Some(0), Some(0), Some(300), Some(350)]);
}
