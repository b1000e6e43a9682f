//! The engine drops the queued completions of preempted attempts in bulk (`purge_stale`), where
//! it used to pop each at its time. A stale completion changes nothing but how far the run's
//! clock gets, so a run that ends with stale completions left must still end where popping
//! them would have: at the last of them, or at the horizon if one lies past it.

mod common;

use sim::{ControllerConfig, JobSpec, Plan, Policy, Scenario, SimDuration, SimTime, TaskId, TaskStatus, Workload};

/// At each decision point, preempts every running task and starts every task that has never
/// run on free GPUs; a preempted task never runs again.
struct StartThenDrop;

impl Policy for StartThenDrop {
    fn name(&self) -> &str {
        "start-then-drop"
    }
    fn decide(&mut self, view: &sim::ClusterView<'_>, plan: &mut Plan<'_>) {
        for t in (0..view.task_count()).map(TaskId::from_index) {
            if view.task(t).status == TaskStatus::Running {
                plan.preempt(t).expect("a running task can be preempted");
            }
        }
        for t in (0..view.task_count()).map(TaskId::from_index) {
            if view.task(t).status == TaskStatus::Ready {
                let gpu = view.cluster().node(sim::NodeId(0)).gpus().find(|&g| plan.free().is_free(sim::NodeId(0), g));
                plan.start(t, &[gpu.expect("a free GPU")]).expect("starts");
            }
        }
    }
}

/// 2,000 one-GPU jobs a second apart: job 0 has 1,000,000 s of work, the others 10,000 s.
/// Each arrival preempts the job before it (1,999 stale completions, enough to be purged); the
/// last job alone completes, at 1,999 + 10,000 s, and the run then runs out of events with
/// job 0's stale completion (at 1,000,000 s) purged long before.
fn run(horizon: SimDuration) -> sim::RunResult {
    let cluster = common::one_node_of_two_gpus();
    let jobs = (0..2_000u64)
        .map(|i| {
            let work = if i == 0 { 1_000_000 } else { 10_000 };
            JobSpec::single(format!("j{i}"), SimTime(i * 1000), 1, SimDuration::from_secs(work))
        })
        .collect();
    let scenario = Scenario::new(cluster, Workload::new(jobs).unwrap());
    let config = ControllerConfig { horizon, ..ControllerConfig::default() };
    sim::simulate(scenario, &mut StartThenDrop, config).unwrap()
}

#[test]
fn a_run_ends_at_its_last_stale_completion_as_if_it_had_popped_it() {
    let result = run(sim::controller::DEFAULT_HORIZON);
    assert_eq!(result.stats.preemptions, 1_999);
    assert_eq!(result.jobs.iter().filter(|j| j.end.is_some()).count(), 1, "only the last job completes");
    assert_eq!(result.jobs[1_999].end, Some(SimTime((1_999 + 10_000) * 1000)));
    assert_eq!(result.stats.last_event, SimTime(1_000_000 * 1000));
    assert_eq!(result.stats.horizon_reached, None);
}

#[test]
fn a_stale_completion_past_the_horizon_stops_the_run_at_the_horizon() {
    let result = run(SimDuration::from_secs(100_000));
    let horizon = SimTime((1_999 + 100_000) * 1000);
    assert_eq!(result.stats.horizon_reached, Some(horizon));
    assert_eq!(result.stats.last_event, horizon);
}
