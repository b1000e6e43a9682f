//! A streamed run's files and summary against the whole run's: runs simulated in-process, then
//! their records fed one at a time (as a streamed run hands them over) to `RecordFiles` and
//! `SummaryBuilder`, and the bytes and numbers compared with the whole-run writers' and
//! `Summary::of`'s.

use reports::fairness::{write_queue_metrics_csv, write_queue_shares_csv};
use reports::{RecordFiles, Summary, SummaryBuilder, write_decisions_csv, write_job_records_csv, write_tasks_csv};
use sim::workload::Tasks;
use sim::{
    Cluster, ClusterEvent, ControllerConfig, DepKind, Dependency, JobSpec, NodeId, QueueSpec, RecordSink, RunResult,
    Scenario, SimDuration, SimTime, TaskSpec, Workload,
};
use std::path::PathBuf;

fn cluster(shorthand: &str) -> Cluster {
    Cluster::new(&traces::parse_cluster_shorthand(shorthand).expect("valid shorthand")).expect("valid cluster")
}

/// A small deterministic mix of single-task jobs: varied sizes, works and arrivals.
fn singles(n: u64, queues: &[Option<&str>]) -> Vec<JobSpec> {
    (0..n)
        .map(|i| {
            let mix = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 7;
            let name = if i == 3 { "odd,\"name\"".to_string() } else { format!("job-{i}") };
            let gpus = [1, 2, 4, 8][(mix % 4) as usize];
            let work = SimDuration(60_000 + mix % 7_200_000 + i % 1000);
            let mut job = JobSpec::single(name, SimTime(i * 97_531 + mix % 1000), gpus, work);
            job.queue = queues[(i as usize) % queues.len()].map(Into::into);
            job
        })
        .collect()
}

fn task(name: &str, gpus: u32, work_s: u64, deps: Vec<Dependency>) -> TaskSpec {
    let mut t = TaskSpec::new(name, gpus, SimDuration::from_secs(work_s));
    t.deps = deps.into();
    t
}

fn dep(upstream: usize, kind: DepKind) -> Dependency {
    Dependency { upstream, kind }
}

/// DAG jobs (a chain with a conditional branch and a cleanup task, names needing quotes) among
/// single-task jobs.
fn with_dags(n: u64) -> Vec<JobSpec> {
    let mut jobs = singles(n, &[None]);
    for (k, job) in jobs.iter_mut().enumerate().filter(|(k, _)| k % 3 == 1) {
        job.tasks = Tasks::from_vec(vec![
            task("prep", 2, 600 + k as u64, vec![]),
            task("train,big", 8, 3_600, vec![dep(0, DepKind::Success)]),
            task("on-fail", 1, 60, vec![dep(1, DepKind::Failure)]),
            task("eval", 4, 300, vec![dep(1, DepKind::Any), dep(0, DepKind::Checkpoint(1))]),
        ]);
    }
    jobs
}

fn simulate(scenario: Scenario, policy: &str, config: ControllerConfig) -> RunResult {
    let mut policy = policies::build(policy).expect("a policy");
    let config = ControllerConfig { record_decisions: true, check_invariants: true, ..config };
    sim::simulate(scenario, policy.as_mut(), config).expect("runs")
}

/// The runs compared: plain; queues (some jobs in none); queue names as labels; DAG jobs with
/// node failures and retries; a horizon that leaves jobs unfinished.
fn runs() -> Vec<(&'static str, RunResult)> {
    let plain = simulate(
        Scenario::new(cluster("2x8:V100"), Workload::new(singles(80, &[None])).unwrap()),
        "sjf",
        ControllerConfig::default(),
    );

    let queued_jobs = singles(90, &[Some("a"), None, Some("b"), Some("a")]);
    let mut a = QueueSpec::new("a");
    a.weight = 2;
    let mut b = QueueSpec::new("b");
    b.max_gpus = Some(8);
    let scenario =
        Scenario::new(cluster("3x8:V100"), Workload::new(queued_jobs).unwrap()).with_queues(&[a, b]).unwrap();
    let queued = simulate(scenario, "fifo", ControllerConfig::default());

    // Queue names as labels (the cluster has none): jobs without one are "-".
    let labelled = Workload::new(singles(50, &[Some("x"), None, Some("y,z")])).unwrap();
    let labels = simulate(Scenario::new(cluster("2x8:V100"), labelled), "srtf", ControllerConfig::default());

    let fail = |s: u64, node: u32| ClusterEvent::NodeFail {
        time: SimTime::from_secs(s),
        node: NodeId(node),
        repair: Some(SimDuration::from_secs(1_800)),
    };
    let scenario = Scenario::new(cluster("2x8:V100"), Workload::new(with_dags(60)).unwrap())
        .with_events(vec![fail(2_000, 0), fail(30_000, 1), fail(200_000, 0)])
        .unwrap();
    let config = ControllerConfig { checkpoint: SimDuration::from_secs(600), ..ControllerConfig::default() };
    let dags = simulate(scenario, "easy-backfill", config);

    let mut jobs = singles(40, &[None]);
    jobs.push(JobSpec::single("too-long", SimTime::ZERO, 16, SimDuration::from_secs(10_000_000)));
    let scenario = Scenario::new(cluster("2x8:V100"), Workload::new(jobs).unwrap());
    let config = ControllerConfig { horizon: SimDuration::from_secs(20_000), ..ControllerConfig::default() };
    let horizon = simulate(scenario, "fifo", config);

    vec![("plain", plain), ("queued", queued), ("labels", labels), ("dags", dags), ("horizon", horizon)]
}

/// What a streamed run returns at its end: everything but the records.
fn end_of(run: &RunResult) -> RunResult {
    RunResult { jobs: Vec::new(), tasks: Vec::new(), decisions: Vec::new(), ..run.clone() }
}

/// Feeds `run`'s records to `sink` as a streamed run would: decisions in log order with their
/// job's and task's names, then jobs in order with their tasks.
fn stream(run: &RunResult, sink: &mut impl RecordSink) {
    for d in &run.decisions {
        let task_name = d.task.and_then(|task| {
            let at = run.tasks.binary_search_by_key(&task, |t| t.task).ok()?;
            Some(run.tasks[at].name.as_str())
        });
        sink.decision(d.clone(), &run.jobs[d.job.index()].name, task_name);
    }
    for job in &run.jobs {
        let tasks = run.tasks.iter().filter(|t| t.job == job.job).cloned().collect();
        sink.job(job.clone(), tasks);
    }
}

fn folder(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("streaming").join(name);
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn whole(write: impl FnOnce(&mut Vec<u8>) -> std::io::Result<()>) -> Vec<u8> {
    let mut out = Vec::new();
    write(&mut out).expect("writes to memory");
    out
}

#[test]
fn the_runs_exercise_what_they_should() {
    let runs = runs();
    let get = |name| &runs.iter().find(|(n, _)| *n == name).unwrap().1;
    assert!(get("plain").tasks.is_empty() && !get("plain").decisions.is_empty());
    assert_eq!(get("queued").queues.len(), 2);
    assert!(get("queued").jobs.iter().any(|j| j.queue.is_none()));
    let dags = get("dags");
    assert!(!dags.tasks.is_empty());
    assert!(dags.jobs.iter().any(|j| j.failures > 0), "a failure hit a job");
    assert!(dags.decisions.iter().any(|d| d.task.is_some()));
    assert!(get("horizon").jobs.iter().any(|j| j.outcome.is_none()), "a job left unfinished");
}

#[test]
fn streamed_files_are_the_whole_runs_bytes() {
    for (name, run) in runs() {
        let dir = folder(name);
        let mut files = RecordFiles::create(&dir, &run.policy, true).expect("creates");
        stream(&run, &mut files);
        assert_eq!(files.has_tasks(), !run.tasks.is_empty(), "{name}");
        files.finish().expect("writes");
        let read = |file: &str| std::fs::read(dir.join(file)).expect(file);
        assert_eq!(read("jobs.csv"), whole(|w| write_job_records_csv(&run, w)), "{name}: jobs.csv");
        assert_eq!(read("decisions.csv"), whole(|w| write_decisions_csv(&run, w)), "{name}: decisions.csv");
        match run.tasks.is_empty() {
            true => assert!(!dir.join("tasks.csv").exists(), "{name}: no tasks.csv without jobs of several tasks"),
            false => assert_eq!(read("tasks.csv"), whole(|w| write_tasks_csv(&run, w)), "{name}: tasks.csv"),
        }
        let jobs = read("jobs.csv");
        assert_eq!(jobs.iter().filter(|&&b| b == b'\n').count(), run.jobs.len() + 1, "{name}: a row per job");
    }
}

#[test]
fn an_earlier_runs_files_are_not_left_behind() {
    let dir = folder("earlier");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("tasks.csv"), "old").unwrap();
    std::fs::write(dir.join("decisions.csv"), "old").unwrap();
    let files = RecordFiles::create(&dir, "fifo", false).expect("creates");
    files.finish().expect("writes");
    assert!(dir.join("jobs.csv").exists());
    assert!(!dir.join("tasks.csv").exists() && !dir.join("decisions.csv").exists());
}

/// Every number of two summaries, compared by bits (serde_json writes each f64 in the
/// shortest form that reads back to the same bits).
fn same_summary(a: &Summary, b: &Summary, what: &str) {
    assert_eq!(a, b, "{what}");
    assert_eq!(serde_json::to_string(a).unwrap(), serde_json::to_string(b).unwrap(), "{what}");
}

#[test]
fn a_built_summary_is_the_whole_runs() {
    for (name, run) in runs() {
        let mut builder = SummaryBuilder::with_queue_metrics(&run.queues);
        stream(&run, &mut builder);
        let (summary, shares) = builder.finish_with_queues(&end_of(&run));
        same_summary(&summary, &Summary::of(&run), name);
        assert_eq!(summary.jobs, run.jobs.len() as u64);
        assert_eq!(summary.jct_percentiles, None, "{name}: exact under the cap");
        let json = serde_json::to_string(&summary).unwrap();
        assert!(!json.contains("jct_percentiles"), "{name}: summary.json as before");
        assert_eq!(
            whole(|w| write_queue_shares_csv(&shares, w)),
            whole(|w| write_queue_metrics_csv(&run, w)),
            "{name}: queue_metrics.csv"
        );
        assert_eq!(summary.queue_fairness_jain, reports::fairness::queue_jain_index(&run), "{name}");
    }
}

#[test]
fn past_the_cap_the_summary_says_its_percentiles_are_sketched() {
    for (name, run) in runs() {
        let finished = Summary::of(&run).jobs_finished as usize;
        let mut builder = SummaryBuilder::with_cap(&run.queues, finished / 2);
        run.jobs.iter().for_each(|j| builder.add(j));
        let (sketched, shares) = builder.finish_with_queues(&end_of(&run));
        let exact = Summary::of(&run);
        assert_eq!(sketched.jct_percentiles.as_deref(), Some(reports::percentiles::SKETCH_METHOD), "{name}");
        let json = serde_json::to_value(&sketched).unwrap();
        assert_eq!(json["jct_percentiles"], reports::percentiles::SKETCH_METHOD);
        assert!(reports::summary_table(&sketched).contains("(percentiles: sketch(0.1%))"), "{name}");
        assert!(!reports::summary_table(&exact).contains("percentiles:"), "{name}");
        let bound = reports::percentiles::SKETCH_RELATIVE_ERROR;
        for (got, want) in [
            (sketched.p50_jct_s, exact.p50_jct_s),
            (sketched.p95_jct_s, exact.p95_jct_s),
            (sketched.p99_jct_s, exact.p99_jct_s),
        ] {
            assert!((got - want).abs() <= want * bound, "{name}: {got} vs {want}");
        }
        // Everything else is as exact as before.
        let same = Summary {
            p50_jct_s: exact.p50_jct_s,
            p95_jct_s: exact.p95_jct_s,
            p99_jct_s: exact.p99_jct_s,
            jct_percentiles: None,
            ..sketched
        };
        same_summary(&same, &exact, name);
        for (s, e) in shares.iter().zip(reports::fairness::queue_shares(&run)) {
            assert!((s.p95_jct_s - e.p95_jct_s).abs() <= e.p95_jct_s * bound, "{name}: queue {}", s.queue);
            assert_eq!((s.mean_jct_s, s.jobs, s.mgpu_ms), (e.mean_jct_s, e.jobs, e.mgpu_ms));
        }
    }
}

#[test]
#[should_panic(expected = "other queues")]
fn a_summary_built_for_other_queues_is_refused() {
    let (_, run) = runs().into_iter().find(|(n, _)| *n == "queued").unwrap();
    SummaryBuilder::new(&[]).finish(&end_of(&run));
}
