//! Task DAGs, exact: hand-computed schedules of jobs whose tasks wait on each other (every
//! dependency kind, conditional branches, cleanup, start windows), what a failure does to a
//! DAG job and to a plain gang, and the critical path reported per job.

mod common;

use common::{cluster, gpu_fail, run, run_with, run_with_events};
use sim::{ControllerConfig, DepKind, Dependency, FailureConfig, JobSpec, RunResult, SimDuration, SimTime, TaskSpec};

/// A task: name, GPUs, work s, dependencies as (upstream index, kind).
type Task<'a> = (&'a str, u32, u64, &'a [(usize, DepKind)]);

/// A job of tasks, submitted at 0.
fn dag(name: &str, tasks: &[Task<'_>]) -> JobSpec {
    let mut job = JobSpec::single(name, SimTime::ZERO, 1, SimDuration(1));
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

/// (task name, state, first start s, end s) of every task of multi-task jobs, in task order.
fn tasks(r: &RunResult) -> Vec<(String, &'static str, Option<u64>, u64)> {
    r.tasks
        .iter()
        .map(|t| {
            let secs = |t: SimTime| t.as_ms() / 1000;
            (t.name.to_string(), t.status.as_str(), t.first_start.map(secs), t.finish.map(secs).expect("task ended"))
        })
        .collect()
}

fn row(name: &str, state: &'static str, start: Option<u64>, end: u64) -> (String, &'static str, Option<u64>, u64) {
    (name.to_string(), state, start, end)
}

/// prep (1 GPU, 10 s) -> train (4 GPUs, 100 s); export runs if train succeeds, alert if it
/// fails; cleanup after both, whatever happened.
fn pipeline() -> JobSpec {
    dag(
        "pipe",
        &[
            ("prep", 1, 10, &[]),
            ("train", 4, 100, &[(0, DepKind::Success)]),
            ("export", 1, 5, &[(1, DepKind::Success)]),
            ("alert", 1, 2, &[(1, DepKind::Failure)]),
            ("cleanup", 1, 3, &[(2, DepKind::Any), (3, DepKind::Any)]),
        ],
    )
}

/// On 1 x 4 GPUs: prep 0..10, train 10..110; at 110 export becomes ready and alert can never
/// run (train succeeded): skipped at 110, which meets cleanup's `any` on it. Export 110..115,
/// then cleanup 115..118. The job succeeded; its critical path is 10 + 100 + 5 + 3 = 118
/// (alert skipped counts nothing), achieved exactly on an empty cluster.
#[test]
fn the_success_branch_runs_and_the_failure_branch_is_skipped() {
    let r = run("fifo", cluster(&[(1, 4, "A")]), vec![pipeline()]);
    assert_eq!(
        tasks(&r),
        [
            row("prep", "succeeded", Some(0), 10),
            row("train", "succeeded", Some(10), 110),
            row("export", "succeeded", Some(110), 115),
            row("alert", "skipped", None, 110),
            row("cleanup", "succeeded", Some(115), 118),
        ]
    );
    assert_eq!(r.jobs[0].outcome, Some(sim::JobOutcome::Succeeded));
    assert_eq!(r.jobs[0].critical_path_ms, Some(118_000));
}

/// The same pipeline; GPU 0 fails at 50 (seen at once), with no retries: train fails for good
/// at 50. Export can never run: skipped at 50 (meeting cleanup's `any`); alert runs on a
/// remaining GPU 50..52; cleanup 52..55. The failure was handled by alert (a `failure`
/// dependent), so the job succeeded. Critical path: prep 10 + train 100 + alert 2 + cleanup 3.
#[test]
fn a_failed_task_takes_the_failure_branch_and_cleanup_still_runs() {
    let config = ControllerConfig {
        failures: FailureConfig { max_retries: 0, ..FailureConfig::default() },
        ..ControllerConfig::default()
    };
    let r = run_with_events("fifo", cluster(&[(1, 4, "A")]), vec![pipeline()], vec![gpu_fail(0, 0, 50, 1000)], config);
    assert_eq!(
        tasks(&r),
        [
            row("prep", "succeeded", Some(0), 10),
            row("train", "failed", Some(10), 50),
            row("export", "skipped", None, 50),
            row("alert", "succeeded", Some(50), 52),
            row("cleanup", "succeeded", Some(52), 55),
        ]
    );
    assert_eq!(r.jobs[0].outcome, Some(sim::JobOutcome::Succeeded));
    assert_eq!(r.jobs[0].critical_path_ms, Some(115_000));
}

/// Without the alert, nothing handles train's failure: export is skipped, cleanup (its `any`
/// met) still runs 50..53, and the job ends at 53 failed, with train's failure as its reason.
/// A plain gang (two tasks, no dependencies) instead fails at once: its other task stops.
#[test]
fn an_unhandled_failure_fails_a_dag_job_when_it_ends_and_a_gang_at_once() {
    let config = ControllerConfig {
        failures: FailureConfig { max_retries: 0, ..FailureConfig::default() },
        ..ControllerConfig::default()
    };
    let unhandled = dag(
        "pipe",
        &[
            ("prep", 1, 10, &[]),
            ("train", 4, 100, &[(0, DepKind::Success)]),
            ("export", 1, 5, &[(1, DepKind::Success)]),
            ("cleanup", 1, 3, &[(2, DepKind::Any)]),
        ],
    );
    let r = run_with_events(
        "fifo",
        cluster(&[(1, 4, "A")]),
        vec![unhandled],
        vec![gpu_fail(0, 0, 50, 1000)],
        config.clone(),
    );
    assert_eq!(
        tasks(&r),
        [
            row("prep", "succeeded", Some(0), 10),
            row("train", "failed", Some(10), 50),
            row("export", "skipped", None, 50),
            row("cleanup", "succeeded", Some(50), 53),
        ]
    );
    let outcome = r.jobs[0].outcome.clone().expect("ended");
    assert_eq!((outcome.as_str(), r.jobs[0].end), ("failed", Some(SimTime::from_secs(53))));
    assert!(outcome.reason().contains("its GPU failed"), "{}", outcome.reason());

    // A gang of two 2-GPU tasks on GPUs 0-1 and 2-3: GPU 0 fails at 50, the job fails at 50.
    let gang = dag("gang", &[("ps", 2, 100, &[]), ("worker", 2, 100, &[])]);
    let r = run_with_events("fifo", cluster(&[(1, 4, "A")]), vec![gang], vec![gpu_fail(0, 0, 50, 1000)], config);
    assert_eq!(tasks(&r), [row("ps", "failed", Some(0), 50), row("worker", "failed", Some(0), 50)]);
    assert_eq!(r.jobs[0].outcome.as_ref().map(|o| o.as_str()), Some("failed"));
}

/// pretrain (2 GPUs, 100 s, checkpoints every 30 s) on 1 x 4 GPUs; export waits for its data
/// point at 60 s of work, probe for its 2nd checkpoint (60 s too: 2 x 30), eval for its
/// success. Export runs 60..80 and probe 60..70 (1 GPU each). GPU 0 fails at 70: pretrain has
/// done 70 s, keeps 60 (its last checkpoint), and retries at once on GPUs 1 and 3 (GPU 2 is
/// export's until 80): 40 s left, 70..110. The data point stays met although pretrain lost
/// work past it. eval 110..111.
#[test]
fn progress_dependencies_are_met_at_their_point_and_stay_met() {
    let mut job = dag(
        "pre",
        &[
            ("pretrain", 2, 100, &[]),
            ("export", 1, 20, &[(0, DepKind::Data(SimDuration::from_secs(60)))]),
            ("probe", 1, 10, &[(0, DepKind::Checkpoint(2))]),
            ("eval", 1, 1, &[(0, DepKind::Success)]),
        ],
    );
    job.tasks[0].options_mut().checkpoint = Some(SimDuration::from_secs(30));
    let r = run_with_events(
        "fifo",
        cluster(&[(1, 4, "A")]),
        vec![job],
        vec![gpu_fail(0, 0, 70, 1000)],
        ControllerConfig::default(),
    );
    assert_eq!(
        tasks(&r),
        [
            row("pretrain", "succeeded", Some(0), 110),
            row("export", "succeeded", Some(60), 80),
            row("probe", "succeeded", Some(60), 70),
            row("eval", "succeeded", Some(110), 111),
        ]
    );
    // Critical path: pretrain 100 + eval 1 (export ends at 80, probe at 70).
    assert_eq!(r.jobs[0].critical_path_ms, Some(101_000));
}

/// Windows on 1 x 2 GPUs: `late` may not start before 30 although GPUs are free: 30..40.
/// `hog` (2 GPUs, 0..50) keeps `tight` (1 GPU, must start by 20) out: at 20 its window closes
/// and it fails; with no dependencies in its job, the job fails at 20.
#[test]
fn start_windows_delay_and_expire_tasks() {
    let mut late = JobSpec::single("late", SimTime::ZERO, 1, SimDuration::from_secs(10));
    late.tasks[0].options_mut().window.not_before = Some(SimTime::from_secs(30));
    let hog = JobSpec::single("hog", SimTime::ZERO, 2, SimDuration::from_secs(50));
    let mut tight = JobSpec::single("tight", SimTime::from_secs(1), 1, SimDuration::from_secs(10));
    tight.tasks[0].options_mut().window.not_after = Some(SimTime::from_secs(20));
    let r = run("fifo", cluster(&[(1, 2, "A")]), vec![hog, late, tight]);
    let end = |name: &str| {
        let j = r.jobs.iter().find(|j| j.name == name).expect("job");
        (
            j.first_start.map(|t| t.as_ms() / 1000),
            j.end.map(|t| t.as_ms() / 1000),
            j.outcome.as_ref().map(|o| o.as_str()),
        )
    };
    assert_eq!(end("hog"), (Some(0), Some(50), Some("succeeded")));
    // `late` waits for its window and then for hog's GPUs: fifo order is hog, late.
    assert_eq!(end("late"), (Some(50), Some(60), Some("succeeded")));
    assert_eq!(end("tight"), (None, Some(20), Some("failed")));
    let reason = r.jobs[2].outcome.as_ref().map(|o| o.reason().to_string()).unwrap_or_default();
    assert!(reason.contains("start window closed"), "{reason}");

    // On an idle cluster `late` starts exactly when its window opens.
    let mut late = JobSpec::single("late", SimTime::ZERO, 1, SimDuration::from_secs(10));
    late.tasks[0].options_mut().window.not_before = Some(SimTime::from_secs(30));
    let r = run("sjf", cluster(&[(1, 2, "A")]), vec![late]);
    assert_eq!(common::schedule(&r), common::sched(&[("late", 30, 40)]));
}

/// A checkpoint dependency on a task that checkpoints continuously cannot be honoured: the run
/// is refused with both task names, before anything runs.
#[test]
fn a_checkpoint_dependency_needs_checkpoints() {
    let job = dag("j", &[("a", 1, 100, &[]), ("b", 1, 10, &[(0, DepKind::Checkpoint(1))])]);
    let mut policy = policies::build("fifo").unwrap();
    let scenario = sim::Scenario::new(cluster(&[(1, 2, "A")]), sim::Workload::new(vec![job]).unwrap());
    let e = sim::simulate(scenario, policy.as_mut(), ControllerConfig::default()).unwrap_err().to_string();
    assert!(e.contains("task `b` waits for checkpoint 1 of `a`, which checkpoints continuously"), "{e}");
    // With a run default interval it runs: a reaches 40 s (1 x 40) at 40; b 40..50.
    let job = dag("j", &[("a", 1, 100, &[]), ("b", 1, 10, &[(0, DepKind::Checkpoint(1))])]);
    let config = ControllerConfig { checkpoint: SimDuration::from_secs(40), ..ControllerConfig::default() };
    let r = run_with("fifo", cluster(&[(1, 2, "A")]), vec![job], config);
    assert_eq!(tasks(&r), [row("a", "succeeded", Some(0), 100), row("b", "succeeded", Some(40), 50)]);
}
