//! Users' cancels and programs that fail, exactly: a trace's `cancel_s` stops whatever of a
//! job has not ended (its GPUs return at once), and a task's `exit_code` other than 0 fails
//! it for good when its work is done (no retry), as live mode treats a non-zero exit. These
//! are what make a live session with cancels and failed programs replay to its decisions.

mod common;

use common::{cluster, job, run, run_with};
use sim::{ControllerConfig, JobOutcome, JobSpec, SimTime};

fn cancelled_at(mut j: JobSpec, s: u64) -> JobSpec {
    j.cancel = SimTime(s * 1000).into();
    j
}

/// (name, first start s, end s, outcome) per job.
fn ends(r: &sim::RunResult) -> Vec<(String, Option<u64>, u64, String)> {
    r.jobs
        .iter()
        .map(|j| {
            let outcome = match j.outcome.as_ref().expect("ended") {
                JobOutcome::Succeeded => "succeeded".to_string(),
                JobOutcome::Failed(why) => format!("failed: {why}"),
                JobOutcome::Rejected(why) => format!("rejected: {why}"),
                JobOutcome::Cancelled => "cancelled".to_string(),
                JobOutcome::Unschedulable(why) => format!("unschedulable: {why}"),
            };
            let end = j.end.expect("ended").as_ms() / 1000;
            (j.name.to_string(), j.first_start.map(|t| t.as_ms() / 1000), end, outcome)
        })
        .collect()
}

fn row(name: &str, start: Option<u64>, end: u64, outcome: &str) -> (String, Option<u64>, u64, String) {
    (name.to_string(), start, end, outcome.to_string())
}

#[test]
fn a_cancel_stops_the_running_job_and_frees_its_gpu_for_the_next() {
    // 1 GPU. a (100 s) runs from 0 and is cancelled at 30; b (10 s, in at 5) starts at 30.
    // c (in at 6) is cancelled at 20 while waiting: it never runs. d is cancelled at its
    // submit (arrivals come first, then cancels, then the decision): it never runs either.
    // e is cancelled at 50, after it finished at 45: nothing changes.
    let jobs = vec![
        cancelled_at(job("a", 0, 1, 100), 30),
        job("b", 5, 1, 10),
        cancelled_at(job("c", 6, 1, 10), 20),
        cancelled_at(job("d", 35, 1, 10), 35),
        cancelled_at(job("e", 36, 1, 5), 50),
    ];
    let r = run("fifo", cluster(&[(1, 1, "A")]), jobs);
    let cancelled = "cancelled";
    assert_eq!(
        ends(&r),
        [
            row("a", Some(0), 30, cancelled),
            row("b", Some(30), 40, "succeeded"),
            row("c", None, 20, cancelled),
            row("d", None, 35, cancelled),
            row("e", Some(40), 45, "succeeded"),
        ]
    );
    // a held its GPU 30 s; nothing of c or d ran.
    let gpu_s: Vec<u64> = r.jobs.iter().map(|j| j.mgpu_ms / 1_000_000).collect();
    assert_eq!(gpu_s, [30, 10, 0, 0, 5]);
    // Each cancel is logged as one, not as a policy's refusal.
    let cancels: Vec<(u64, u32)> = r
        .decisions
        .iter()
        .filter(|d| d.kind == sim::DecisionKind::Cancel)
        .map(|d| (d.time.as_ms() / 1000, d.job.0))
        .collect();
    assert_eq!(cancels, [(20, 2), (30, 0), (35, 3)]);
    assert!(r.decisions.iter().all(|d| d.kind != sim::DecisionKind::Reject));
    assert_eq!((r.stats.cancels, r.stats.rejects), (3, 0));
}

#[test]
fn a_non_zero_exit_fails_the_task_for_good_when_its_work_is_done() {
    // 1 GPU, 3 retries allowed. f (20 s) exits 3 at 20: failed, not retried; g (in at 1)
    // starts at 20. The same f with exit code 0 succeeds.
    let mut f = job("f", 0, 1, 20);
    f.tasks[0].exit_code = 3;
    let failures = sim::FailureConfig { max_retries: 3, ..sim::FailureConfig::default() };
    let config = ControllerConfig { failures, ..ControllerConfig::default() };
    let r = run_with("fifo", cluster(&[(1, 1, "A")]), vec![f.clone(), job("g", 1, 1, 10)], config.clone());
    assert_eq!(
        ends(&r),
        [row("f", Some(0), 20, "failed: its process exited with code 3"), row("g", Some(20), 30, "succeeded")]
    );
    assert_eq!(r.jobs[0].retries, 0);
    f.tasks[0].exit_code = 0;
    let r = run_with("fifo", cluster(&[(1, 1, "A")]), vec![f], config);
    assert_eq!(ends(&r), [row("f", Some(0), 20, "succeeded")]);
}

#[test]
fn a_cancel_before_the_submit_is_refused() {
    let e = sim::Workload::new(vec![cancelled_at(job("early", 10, 1, 5), 9)]).unwrap_err().to_string();
    assert_eq!(e, "job `early` is cancelled at 9.000s, before it is submitted at 10.000s");
}
