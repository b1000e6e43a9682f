//! A streamed run (jobs read from the trace as the run reaches them, records handed on as
//! they are final) against the same run in memory: the same digest, the same records, and the
//! same bytes in every file. Traces: philly.csv (unsorted: sorted first), a Microsoft ITP
//! trace, and a trace written here with DAG jobs, queues with quotas and hardware failures.
//! The public traces live in ../shared/traces; a case without its file says SKIPPED.

mod common;

use common::{scratch, shared_trace as shared};
use run::{Keep, RunOutcome, RunSpec, Runner};
use sim::Collect;
use std::path::{Path, PathBuf};

fn spec(trace: Option<&Path>, format: &str, cluster: &str, policy: &str) -> RunSpec {
    RunSpec {
        trace: trace.map(Path::to_path_buf),
        format: format.parse().expect("a format"),
        cluster: Some(cluster.into()),
        policy: policy.parse().expect("a policy"),
        ..RunSpec::default()
    }
}

/// Every file of a run folder, as bytes, by name.
fn files(outcome: &RunOutcome, name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = scratch("streaming-files", name);
    outcome.write(&dir, true).expect("written");
    let mut out: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .expect("listed")
        .map(|e| e.expect("an entry"))
        .map(|e| (e.file_name().to_string_lossy().into_owned(), std::fs::read(e.path()).expect("read")))
        .collect();
    out.sort();
    out
}

/// Runs `spec` in memory and streamed (twice: a streamed run is deterministic too) and checks
/// that they agree byte for byte. Returns how many jobs the runs set aside.
fn same_both_ways(name: &str, spec: &RunSpec, order: traces::Order) -> u64 {
    let runner = Runner::default();
    let mut in_memory = runner.run(spec, Keep::ALL).expect("runs in memory");
    in_memory.summary.wall_s = None;
    let streamed = || {
        let mut policy = spec.build_policy(runner.registry()).expect("a policy");
        let mut records = Collect::default();
        let setup = runner.streamed_setup(spec).expect("a setup");
        let end = runner.run_streamed(&setup, policy.as_mut(), Keep::ALL, order, &mut records).expect("runs streamed");
        let result = records.into_result(end);
        let summary = reports::Summary::of(&result);
        RunOutcome { result, summary, vs_recorded: None }
    };
    let (first, second) = (streamed(), streamed());
    assert!(in_memory.result.jobs.len() > 100, "a real run: {} jobs", in_memory.result.jobs.len());
    assert_eq!(first.summary.digest, in_memory.summary.digest, "the digest");
    assert_eq!(first.result.jobs, in_memory.result.jobs, "the job records");
    assert_eq!(first.result.stats.events, in_memory.result.stats.events);
    let (want, got) = (files(&in_memory, &format!("{name}-memory")), files(&first, &format!("{name}-streamed")));
    assert_eq!(want.iter().map(|f| &f.0).collect::<Vec<_>>(), got.iter().map(|f| &f.0).collect::<Vec<_>>());
    for ((name, a), (_, b)) in want.iter().zip(&got) {
        assert!(a == b, "{name} differs between the run in memory and the streamed run");
    }
    assert_eq!(files(&second, &format!("{name}-again")), got, "a second streamed run");
    assert!(
        first.result.stats.peak_jobs_held < in_memory.result.jobs.len() as u64,
        "the streamed run held {} of {} jobs at once",
        first.result.stats.peak_jobs_held,
        in_memory.result.jobs.len()
    );
    assert_eq!(first.result.stats.jobs_set_aside, in_memory.result.stats.jobs_set_aside);
    first.result.stats.jobs_set_aside
}

#[test]
fn philly_streamed_after_sorting_is_philly_in_memory() {
    let Some(path) = shared("philly-pollux/philly.csv") else { return };
    same_both_ways("philly", &spec(Some(&path), "philly", "60x8:V100", "tiresias"), traces::Order::Sort);
}

#[test]
fn an_itp_trace_streamed_is_the_trace_in_memory() {
    let Some(path) = shared("microsoft-itp-elasticflow/cluster04.csv") else { return };
    same_both_ways("itp", &spec(Some(&path), "itp", "40x8:V100", "fifo"), traces::Order::Sorted);
}

/// 600 jobs: every fifth a three-task pipeline (prep, train with checkpoints, eval waiting on
/// train's second checkpoint), in three queues with quotas, under node failures.
fn dag_queue_trace(dir: &Path) -> (PathBuf, PathBuf) {
    let mut jobs = String::from("job_id,task_id,submit_s,duration_s,gpus,checkpoint_s,depends_on,queue\n");
    for i in 0..600u64 {
        let (submit, queue) = (i * 37 % 100_000 / 7 + i * 40, ["a", "b", "c"][(i % 3) as usize]);
        if i % 5 == 0 {
            jobs += &format!("p{i},prep,{submit},{},1,,,{queue}\n", 60 + i % 50);
            jobs += &format!("p{i},train,{submit},{},{},600,prep,{queue}\n", 3_000 + i * 7 % 2_000, 2 + i % 7);
            jobs += &format!("p{i},eval,{submit},300,1,,train:checkpoint=2,{queue}\n");
        } else {
            jobs += &format!("j{i},,{submit},{},{},,,{queue}\n", 100 + i * 13 % 3_000, 1 + i % 4);
        }
    }
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, jobs).expect("written");
    let queues = dir.join("queues.csv");
    std::fs::write(
        &queues,
        "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\na,,16,,0,2,true\nb,,8,,0,1,false\nc,,,4,1,1,false\n",
    )
    .expect("written");
    (trace, queues)
}

#[test]
fn dags_queues_and_failures_streamed_are_the_same_run_in_memory() {
    let dir = scratch("streaming", "dags");
    let (trace, queues) = dag_queue_trace(&dir);
    for (i, policy) in ["fifo", "fair-share", "critical-path", "srtf[duration=oracle]"].into_iter().enumerate() {
        let mut spec = spec(Some(&trace), "canonical", "6x8:V100", policy);
        spec.queues = Some(queues.clone());
        spec.failures = Some("weibull:node_mtbf_h=100".into());
        assert_eq!(same_both_ways(&format!("dags-{i}"), &spec, traces::Order::Sorted), 0, "{policy}");
    }
}

/// As above, with jobs set aside after 4 ended jobs wait for them: their rows come out of job
/// order, the same way in memory and streamed (decisions.csv included, which names each
/// decision's job and task by looking its record up).
#[test]
fn jobs_set_aside_leave_the_same_way_streamed_and_in_memory() {
    let dir = scratch("streaming", "aside");
    let (trace, queues) = dag_queue_trace(&dir);
    for (i, policy) in ["fifo", "critical-path", "srtf[duration=oracle]"].into_iter().enumerate() {
        let mut spec = spec(Some(&trace), "canonical", "6x8:V100", policy);
        spec.queues = Some(queues.clone());
        spec.failures = Some("weibull:node_mtbf_h=100".into());
        spec.set_aside_after = 4;
        let aside = same_both_ways(&format!("aside-{i}"), &spec, traces::Order::Sorted);
        assert!(aside > 10, "{policy}: {aside} jobs set aside");
    }
}

#[test]
fn the_built_in_workload_streamed_is_the_one_in_memory() {
    let spec = RunSpec { jobs: 3_000, policy: "easy-backfill".parse().expect("a policy"), ..RunSpec::default() };
    same_both_ways("builtin", &spec, traces::Order::Sorted);
}

#[test]
fn an_unsorted_trace_is_refused_by_file_line_and_times_unless_sorted() {
    let trace = scratch("streaming", "unsorted").join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,10,60,1\nb,5,60,1\nc,20,60,1\n").expect("written");
    let spec = spec(Some(&trace), "canonical", "1x8:V100", "fifo");
    let runner = Runner::default();
    let mut policy = spec.build_policy(runner.registry()).expect("a policy");
    let mut records = Collect::default();
    let setup = runner.streamed_setup(&spec).expect("a setup");
    let error = runner
        .run_streamed(&setup, policy.as_mut(), Keep::SUMMARY, traces::Order::Sorted, &mut records)
        .expect_err("refused")
        .to_string();
    assert!(error.contains("jobs.csv:3"), "{error}");
    assert!(error.contains("submitted at 5") && error.contains("10"), "{error}");
    assert!(records.jobs.is_empty(), "nothing ran");
    let end = runner.run_streamed(&setup, policy.as_mut(), Keep::SUMMARY, traces::Order::Sort, &mut records);
    let names: Vec<&str> = records.jobs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!((end.is_ok(), names), (true, vec!["b", "a", "c"]));
}

/// The command line's streamed run writes the same folder as its run in memory: every file,
/// byte for byte, decisions.csv included (its policy column names the policy in full),
/// summary.json but for its wall time. A DAG trace with queues (tasks.csv and the queue files),
/// the built-in workload, whose jobs name no queue (queue_timeseries.csv's "-" rows), and the
/// DAG trace with jobs set aside (rows out of job order).
#[test]
fn simulate_stream_writes_the_same_files_as_simulate() {
    let dir = scratch("streaming", "cli");
    let (trace, queues) = dag_queue_trace(&dir);
    let (trace, queues) = (trace.display().to_string(), queues.display().to_string());
    let dag_run =
        ["--trace", &trace, "--cluster", "6x8:V100", "--queues", &queues, "--failures", "weibull:node_mtbf_h=100"];
    let builtin = ["--jobs", "300", "--cluster", "4x8:V100"];
    let aside = [&dag_run[..], &["--set-aside-after", "4"]].concat();
    for (case, args) in [("dags", &dag_run[..]), ("builtin", &builtin[..]), ("aside", &aside[..])] {
        let run = |mode: &str| {
            let out = dir.join(format!("{case}-{mode}"));
            let out_text = out.display().to_string();
            let mut all = vec!["simulate", "--policy", "tiresias", "--decisions", "--out", &out_text];
            all.extend_from_slice(args);
            if mode == "streamed" {
                all.push("--stream");
            }
            let output = common::schedlab(&all);
            assert!(output.status.success(), "{}", common::stderr(&output));
            let said = String::from_utf8_lossy(&output.stdout).contains("jobs set aside");
            assert_eq!(said, case == "aside", "{case} {mode}: simulate says how many jobs were set aside");
            out
        };
        let (memory, streamed) = (run("memory"), run("streamed"));
        let names = |dir: &Path| {
            let entries = std::fs::read_dir(dir).expect("listed").map(|e| e.expect("an entry"));
            let mut names: Vec<String> = entries.map(|e| e.file_name().to_string_lossy().into()).collect();
            names.sort();
            names
        };
        assert_eq!(names(&memory), names(&streamed), "{case}");
        let expected = if case == "builtin" { "queue_timeseries.csv" } else { "tasks.csv" };
        assert!(names(&memory).contains(&expected.to_string()), "{case}: {:?}", names(&memory));
        for name in names(&memory) {
            let read = |dir: &Path| {
                let text = std::fs::read_to_string(dir.join(&name)).expect("read");
                text.lines().filter(|l| !l.contains("\"wall_s\"")).collect::<Vec<_>>().join("\n")
            };
            assert!(read(&memory) == read(&streamed), "{case}: {name} differs between simulate and simulate --stream");
        }
        // jobs.csv's job_index column: in order unless jobs were set aside.
        let jobs = std::fs::read_to_string(streamed.join("jobs.csv")).expect("read");
        let index: Vec<u64> = jobs.lines().skip(1).map(|l| l.split(',').nth(1).unwrap().parse().unwrap()).collect();
        assert_eq!(index.is_sorted(), case != "aside", "{case}: job_index in order");
    }
}
