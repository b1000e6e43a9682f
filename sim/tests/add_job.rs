//! `Controller::add_job`, the live driver's way to take a submission without rebuilding the
//! Controller: the same decisions as a Controller built with every job from the start, and
//! clear refusals of jobs that cannot join.

mod common;

use sim::{
    Cluster, Controller, ControllerConfig, Effect, JobId, JobSpec, Plan, Policy, QueueSpec, Queues, SimDuration,
    SimTime, TaskId, TaskSpec, Workload,
};

/// Starts waiting tasks in id order on the first free GPUs (enough to make decisions).
struct FirstFree;

impl Policy for FirstFree {
    fn name(&self) -> &str {
        "first-free"
    }
    fn decide(&mut self, view: &sim::ClusterView<'_>, plan: &mut Plan<'_>) {
        for t in 0..view.task_count() {
            let task = TaskId::from_index(t);
            let state = view.task(task);
            if !state.status.is_startable() {
                continue;
            }
            let cluster = view.cluster();
            let free = plan.free();
            let gpus: Vec<_> = state
                .pools
                .iter()
                .flat_map(|p| cluster.pool(p).nodes())
                .flat_map(|n| cluster.node(n).gpus().filter(move |&g| free.is_free(n, g)))
                .take(state.gpus as usize)
                .collect();
            if gpus.len() == state.gpus as usize {
                let _ = plan.start(task, &gpus);
            }
        }
    }
}

fn cluster() -> Cluster {
    common::one_node_of_two_gpus()
}

fn job(name: &str, submit_s: u64, gpus: u32, work_s: u64, queue: Option<&str>) -> JobSpec {
    let mut j = JobSpec::single(name, SimTime(submit_s * 1000), gpus, SimDuration::from_secs(work_s));
    j.queue = queue.map(Into::into);
    j
}

/// Runs `jobs` through `controller`, adding each at its submit when `add` (as live mode does),
/// completing tasks when their effects say: the decision log as text.
fn drive(mut controller: Controller, jobs: &[JobSpec], add: bool) -> Vec<String> {
    let mut policy = FirstFree;
    let mut effects = Vec::new();
    let mut finishing: Vec<(SimTime, TaskId, u32)> = Vec::new();
    let mut next = 0;
    loop {
        let now = [jobs.get(next).map(|j| j.submit), finishing.iter().map(|f| f.0).min()].into_iter().flatten().min();
        let Some(now) = now else { break };
        controller.advance_to(now);
        finishing.sort();
        while let Some(&(at, task, attempt)) = finishing.first().filter(|f| f.0 == now) {
            finishing.remove(0);
            let _ = (at, controller.task_finished(task, attempt));
        }
        while jobs.get(next).is_some_and(|j| j.submit == now) {
            let id = if add { controller.add_job(jobs[next].clone()).unwrap() } else { JobId::from_index(next) };
            assert_eq!(id, JobId::from_index(next));
            controller.job_arrived(id);
            next += 1;
        }
        controller.decide(&mut policy, &mut effects);
        for e in effects.drain(..) {
            if let Effect::Started { task, attempt, finish_at, .. } = e {
                finishing.push((finish_at, task, attempt));
            }
        }
    }
    controller
        .decision_log()
        .iter()
        .map(|d| format!("{} {} {:?} {:?}", d.time, d.kind.as_str(), d.task, d.gpus))
        .collect()
}

fn config() -> ControllerConfig {
    ControllerConfig { check_invariants: true, record_decisions: true, ..ControllerConfig::default() }
}

#[test]
fn jobs_added_one_by_one_make_the_decisions_of_a_controller_built_with_them() {
    let queues = [QueueSpec { max_gpus: Some(1), ..QueueSpec::new("team") }, QueueSpec::new("other")];
    let jobs = vec![
        job("a", 0, 1, 10, Some("team")),
        job("b", 0, 1, 5, Some("team")),
        job("c", 2, 2, 4, Some("other")),
        job("d", 3, 1, 1, None),
        job("e", 20, 2, 3, Some("other")),
    ];
    let whole = Controller::new(cluster(), Workload::new(jobs.clone()).unwrap(), "first-free", config())
        .with_queues(Queues::new(&queues, &cluster()).unwrap())
        .unwrap();
    let empty = Controller::new(cluster(), Workload::default(), "first-free", config())
        .with_queues(Queues::new(&queues, &cluster()).unwrap())
        .unwrap();
    let expected = drive(whole, &jobs, false);
    assert!(expected.len() >= 10, "{expected:?}");
    assert_eq!(drive(empty, &jobs, true), expected);
}

#[test]
fn a_job_that_cannot_join_is_refused_and_nothing_changes() {
    let queues = [QueueSpec::new("team")];
    let mut c = Controller::new(cluster(), Workload::default(), "first-free", config())
        .with_queues(Queues::new(&queues, &cluster()).unwrap())
        .unwrap();
    c.add_job(job("a", 10, 1, 1, None)).unwrap();
    let e = c.add_job(job("early", 5, 1, 1, None)).unwrap_err();
    assert_eq!(e, "job `early` is submitted at 5.000s, before job `a` at 10.000s: jobs join in submit order");
    let e = c.add_job(job("q", 10, 1, 1, Some("nope"))).unwrap_err();
    assert_eq!(e, "job `q` is in queue `nope`, which the cluster does not define (it has team)");
    let mut bad = job("zero", 10, 1, 1, None);
    bad.tasks[0] = TaskSpec::new("0", 0, SimDuration(1));
    assert_eq!(c.add_job(bad).unwrap_err(), "job `zero` task `0` asks for 0 GPUs; a task needs at least 1");
    c.advance_to(SimTime(20_000));
    let e = c.add_job(job("past", 15, 1, 1, None)).unwrap_err();
    assert_eq!(e, "job `past` is submitted at 15.000s, before now (20.000s)");
    assert_eq!((c.shape().jobs(), c.shape().tasks(), c.jobs_admitted()), (1, 1, 1));
}
