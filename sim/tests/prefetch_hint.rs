//! `Policy::prefetch_ending`: with thousands of completions queued the engine names each
//! completion to the policy before it applies it, with the task's own job, so a policy can ask
//! for its state about them ahead.

use sim::{
    Cluster, ClusterSpec, GpuId, JobId, JobSpec, Plan, Policy, PoolSpec, Scenario, SimDuration, SimTime, TaskId,
};
use std::cell::RefCell;
use std::collections::BTreeSet;

/// Starts task `i` on GPU `i` when it is ready (one GPU for each); notes each hint and each task
/// it learns has finished that no hint named before.
#[derive(Default)]
struct Greedy {
    hinted: RefCell<BTreeSet<(TaskId, JobId)>>,
    finished: usize,
    unhinted: Vec<TaskId>,
}

impl Policy for Greedy {
    fn name(&self) -> &str {
        "greedy"
    }

    fn decide(&mut self, view: &sim::ClusterView<'_>, plan: &mut Plan<'_>) {
        // The view's own hints take any id, as a lazy heap's stale entry may name a job let
        // go of or one never admitted: they pass those over.
        for job in [JobId(0), JobId(4_999), JobId(5_000), JobId(u32::MAX)] {
            view.prefetch_job(job);
            view.prefetch_tasks(job);
        }
        for change in view.changes() {
            match *change {
                sim::Change::TaskFinished(t) => {
                    self.finished += 1;
                    if !self.hinted.borrow().contains(&(t, view.task(t).job)) {
                        self.unhinted.push(t);
                    }
                }
                sim::Change::TaskReady(t) => plan.start(t, &[GpuId(t.0)]).expect("its own GPU is free"),
                _ => {}
            }
        }
    }

    fn prefetch_ending(&self, task: TaskId, job: JobId) {
        self.hinted.borrow_mut().insert((task, job));
    }
}

/// 5,000 one-GPU jobs, all at time 0, on 5,000 GPUs, each ending a second after the one before:
/// 5,000 completions queued at once, then fewer as they end.
#[test]
fn each_completion_is_named_with_its_job_before_it_applies() {
    let pool = PoolSpec {
        name: "A".into(),
        gpu_type: "A".into(),
        nodes: 625,
        gpus_per_node: 8,
        nodes_per_rack: 0,
        speed_milli: 1000,
    };
    let cluster = Cluster::new(&ClusterSpec { pools: vec![pool] }).unwrap();
    let jobs =
        (0..5_000u64).map(|i| JobSpec::single(format!("j{i}"), SimTime(0), 1, SimDuration::from_secs(1 + i))).collect();
    let scenario = Scenario::new(cluster, sim::Workload::new(jobs).unwrap());
    let mut policy = Greedy::default();
    let result = sim::simulate(scenario, &mut policy, sim::ControllerConfig::default()).unwrap();
    assert_eq!(result.jobs.iter().filter(|j| j.end.is_some()).count(), 5_000);
    assert_eq!(policy.finished, 5_000);
    // Task i ends at i + 1 s, alone. Popping it leaves 4,999 - i completions queued, and the
    // engine names the next one while 1,024 or more are: after tasks 0..=3,975, so tasks
    // 1..=3,976 are named; task 0 (nothing popped before it) and tasks 3,977.. are not.
    let unhinted: Vec<u32> = policy.unhinted.iter().map(|t| t.0).collect();
    let expected: Vec<u32> = std::iter::once(0).chain(3_977..5_000).collect();
    assert!(unhinted == expected, "{} unhinted, from {:?} to {:?}", unhinted.len(), unhinted.first(), unhinted.last());
    let hinted = policy.hinted.borrow();
    assert!(hinted.iter().all(|&(t, j)| t.0 == j.0), "each task named with its own job");
    assert_eq!(hinted.len(), 3_976);
}
