//! The Plan's job-level gang: a co-start job's tasks start together (`Plan::start_together`),
//! never alone, all or nothing; preempting one preempts them all; a co-start job whose tasks
//! wait on one another is refused when the workload is built.

mod common;

use sim::{
    ControllerConfig, DepKind, Dependency, GpuId, JobId, JobSpec, Plan, PlanError, Policy, RunResult, Scenario,
    SimDuration, SimTime, TaskId, TaskSpec, Workload,
};

/// A policy that runs `script` at each decision point (its index given) and keeps what each
/// call reported.
struct Scripted {
    script: fn(usize, &mut Plan<'_>) -> Vec<String>,
    calls: usize,
    said: Vec<String>,
}

impl Policy for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }
    fn decide(&mut self, _view: &sim::ClusterView<'_>, plan: &mut Plan<'_>) {
        let said = (self.script)(self.calls, plan);
        self.said.extend(said);
        self.calls += 1;
    }
}

/// Job `x`: two tasks of one GPU and 10 s, co-start; the cluster one node of two GPUs.
fn run(script: fn(usize, &mut Plan<'_>) -> Vec<String>) -> (RunResult, Vec<String>) {
    let mut x = JobSpec::single("x", SimTime::ZERO, 1, SimDuration::from_secs(10));
    x.tasks.push(TaskSpec::new("1", 1, SimDuration::from_secs(10)));
    x.co_start = true;
    let scenario = Scenario::new(common::one_node_of_two_gpus(), Workload::new(vec![x]).unwrap());
    let mut policy = Scripted { script, calls: 0, said: Vec::new() };
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() };
    let result = sim::simulate(scenario, &mut policy, config).unwrap();
    (result, policy.said)
}

const T0: TaskId = TaskId(0);
const T1: TaskId = TaskId(1);
const G0: GpuId = GpuId(0);
const G1: GpuId = GpuId(1);

#[test]
fn a_co_start_task_never_starts_alone_and_together_is_all_or_nothing() {
    let (result, said) = run(|call, plan| {
        if call > 0 {
            return Vec::new();
        }
        let alone = plan.start(T0, &[G0]);
        assert_eq!(alone, Err(PlanError::CoStart { task: T0, job: JobId(0) }));
        // Leaving a waiting task out is refused.
        let part = plan.start_together(&[(T0, &[G0])]);
        assert_eq!(part, Err(PlanError::NotTogether { job: Some(JobId(0)), task: Some(T1) }));
        // The second task's GPU is the first's: refused, and the first's start undone.
        let clash = plan.start_together(&[(T0, &[G0]), (T1, &[G0])]);
        assert_eq!(clash, Err(PlanError::GpuNotFree { gpu: G0 }));
        let untouched = (plan.free().total(), plan.decisions().len(), plan.is_decided(T0));
        assert_eq!(untouched, (2, 0, false));
        plan.start_together(&[(T1, &[G1]), (T0, &[G0])]).unwrap();
        vec![format!("{} free, {} decisions", plan.free().total(), plan.decisions().len())]
    });
    assert_eq!(said, ["0 free, 2 decisions"]);
    let starts: Vec<_> = result.tasks.iter().map(|t| t.first_start.map(SimTime::as_ms)).collect();
    assert_eq!(starts, [Some(0), Some(0)]);
}

#[test]
fn start_together_with_places_each_task_after_the_ones_before() {
    let (result, said) = run(|call, plan| {
        if call > 0 {
            return Vec::new();
        }
        // No room for the second: nothing starts.
        let none = plan.start_together_with(JobId(0), |task, _, gpus| {
            gpus.push(G0);
            task == T0
        });
        assert_eq!(none, Ok(false));
        assert_eq!((plan.free().total(), plan.decisions().len()), (2, 0));
        // Each takes the first GPU still free when it is placed.
        let both = plan.start_together_with(JobId(0), |_, free, gpus| {
            let gpu = [G0, G1].into_iter().find(|&g| free.is_free(sim::NodeId(0), g));
            gpus.extend(gpu);
            gpu.is_some()
        });
        vec![format!("{both:?}")]
    });
    assert_eq!(said, ["Ok(true)"]);
    let gpus: Vec<_> = result.decisions.iter().map(|d| d.gpus.clone()).filter(|g| !g.is_empty()).collect();
    assert_eq!(gpus[..2], [vec![G0], vec![G1]]);
}

#[test]
fn preempting_one_task_preempts_its_job_and_they_restart_together() {
    let (result, said) = run(|call, plan| match call {
        0 => {
            plan.start_together(&[(T0, &[G0]), (T1, &[G1])]).unwrap();
            plan.wake_at(SimTime::from_secs(4)).unwrap();
            Vec::new()
        }
        1 => {
            plan.preempt(T1).unwrap();
            let freed = plan.free().total();
            // Both wait again: a lone restart is refused, a together-start of both is not.
            let alone = plan.start_together(&[(T1, &[G1])]).is_err();
            plan.start_together(&[(T0, &[G1]), (T1, &[G0])]).unwrap();
            vec![format!("{freed} freed, alone refused: {alone}")]
        }
        _ => Vec::new(),
    });
    assert_eq!(said, ["2 freed, alone refused: true"]);
    let preemptions: Vec<_> = result.tasks.iter().map(|t| t.preemptions).collect();
    assert_eq!(preemptions, [1, 1]);
    // Both restarted at 4 s (keeping their progress: continuous checkpoints, no overhead).
    let starts = |task: TaskId| -> Vec<u64> {
        let starts = result.decisions.iter().filter(|d| d.kind == sim::DecisionKind::Start && d.task == Some(task));
        starts.map(|d| d.time.as_ms()).collect()
    };
    assert_eq!((starts(T0), starts(T1)), (vec![0, 4_000], vec![0, 4_000]));
    let ends: Vec<_> = result.tasks.iter().map(|t| t.finish.map(SimTime::as_ms)).collect();
    assert_eq!(ends, [Some(10_000), Some(10_000)]);
}

#[test]
fn a_co_start_job_whose_tasks_wait_on_each_other_is_refused() {
    let mut x = JobSpec::single("x", SimTime::ZERO, 1, SimDuration::from_secs(10));
    let mut second = TaskSpec::new("1", 1, SimDuration::from_secs(10));
    second.deps.push(Dependency { upstream: 0, kind: DepKind::Success });
    x.tasks.push(second);
    x.co_start = true;
    let e = Workload::new(vec![x.clone()]).unwrap_err();
    assert!(e.0.contains("co_start") && e.0.contains("task `1`"), "{e}");
    x.co_start = false;
    assert!(Workload::new(vec![x]).is_ok());
}
