//! End-to-end tests through the `schedlab` binary: what a user types, what they get back.

mod common;

use common::{read_json, schedlab, scratch, shared_trace, stderr, stdout};

fn digest_line(text: &str) -> String {
    text.lines().find(|l| l.starts_with("digest")).expect("a digest line").to_string()
}

#[test]
fn bare_simulate_runs_the_builtin_workload_and_prints_a_summary() {
    let out = schedlab(&["simulate", "--jobs", "300"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    for row in ["policy", "JCT mean / p50 / p95 / p99", "utilisation", "digest", "wall time"] {
        assert!(text.contains(row), "summary lacks `{row}`:\n{text}");
    }
    assert!(text.contains("300 (300 finished, 0 unschedulable"), "{text}");
}

#[test]
fn the_same_run_twice_gives_the_same_digest_and_files() {
    let (a, b) = (scratch("cli", "twice-a"), scratch("cli", "twice-b"));
    for dir in [&a, &b] {
        let out = schedlab(&[
            "simulate",
            "--jobs",
            "400",
            "--policy",
            "srtf",
            "--seed",
            "5",
            "--decisions",
            "--out",
            dir.to_str().unwrap(),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
    }
    for file in ["jobs.csv", "decisions.csv"] {
        assert_eq!(std::fs::read(a.join(file)).unwrap(), std::fs::read(b.join(file)).unwrap(), "{file} differs");
    }
    // The decision log names the policy that made it, on every row.
    let log = std::fs::read_to_string(a.join("decisions.csv")).unwrap();
    assert!(log.starts_with("time_s,kind,job_id,task_id,job_index,task_index,gpu_indexes,detail,policy\n"), "{log}");
    assert!(
        log.lines().skip(1).all(|l| l.ends_with(",\"srtf[duration=oracle,placement=pack,avoid_failed_h=0]\"")),
        "{log}"
    );
    let (sa, sb) = (read_json(&a.join("summary.json")), read_json(&b.join("summary.json")));
    assert_eq!(sa["digest"], sb["digest"]);
    let other_seed = schedlab(&["simulate", "--jobs", "400", "--policy", "srtf", "--seed", "6"]);
    assert_ne!(digest_line(&stdout(&other_seed)), format!("digest  {}", sa["digest"].as_str().unwrap()));
}

#[test]
fn summary_json_has_every_promised_key_and_the_job_table_every_job() {
    let dir = scratch("cli", "keys");
    let out = schedlab(&["simulate", "--jobs", "200", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let summary = read_json(&dir.join("summary.json"));
    for key in [
        "jobs",
        "jobs_finished",
        "jobs_unschedulable",
        "mean_jct_s",
        "p50_jct_s",
        "p95_jct_s",
        "p99_jct_s",
        "mean_queue_s",
        "makespan_s",
        "utilisation",
        "jobs_per_hour",
        "littles_law_error",
        "events",
        "digest",
        "wall_s",
    ] {
        assert!(summary.get(key).is_some(), "summary.json lacks `{key}`: {summary}");
    }
    assert_eq!(summary["jobs"], 200);
    assert!(summary["littles_law_error"].as_f64().unwrap() < 1e-12, "{summary}");
    let jobs_csv = std::fs::read_to_string(dir.join("jobs.csv")).unwrap();
    assert_eq!(jobs_csv.lines().count(), 201, "header + one row per job");
}

/// The time series of the fifo scenario below (a: 2 GPUs 0..10, b: 4 GPUs 10..15 waiting from
/// 0, c: 1 GPU 15..17 waiting from 1) in 5 s buckets, averaged over each bucket:
/// [0,5): 2 GPUs, waiting (5 + 4) / 5 = 1.8; [5,10): 2 GPUs, 2 waiting; [10,15): 4 GPUs, c
/// waiting; [15,17) (cut at the run's end): 1 GPU. Three arrivals in the first bucket; a ends
/// in the third, b and c in the fourth.
#[test]
fn time_series_matches_a_hand_computed_run() {
    let dir = scratch("cli", "series");
    std::fs::write(
        dir.join("jobs.csv"),
        "job_id,submit_s,duration_s,gpus,queue
a,0,10,2,x
b,0,5,4,y
c,1,2,1,x
",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let trace = dir.join("jobs.csv");
    let args = ["simulate", "--trace", trace.to_str().unwrap(), "--cluster", "1x4:A", "--series-bucket-s", "5"];
    let out = schedlab(&[&args[..], &["--out", out_dir.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let series = std::fs::read_to_string(out_dir.join("timeseries.csv")).unwrap();
    let rows: Vec<&str> = series.lines().skip(1).collect();
    assert_eq!(
        rows,
        [
            "0.000,5.000,4,2.000,0.000,0.000,1.800,1.000,3,0,0,0.000000",
            "5.000,10.000,4,2.000,0.000,0.000,2.000,1.000,0,0,0,0.000000",
            "10.000,15.000,4,4.000,0.000,0.000,1.000,1.000,0,1,0,0.000000",
            "15.000,17.000,4,1.000,0.000,0.000,0.000,1.000,0,2,0,0.000000",
        ]
    );
    // Per queue: x holds a (2 GPUs) then c (1 GPU, waiting from 1 to 15); y holds b.
    let queues = std::fs::read_to_string(out_dir.join("queue_timeseries.csv")).unwrap();
    let rows: Vec<&str> = queues.lines().skip(1).collect();
    assert_eq!(
        rows,
        [
            "0.000,5.000,x,2.000,0.800,1.000",
            "0.000,5.000,y,0.000,1.000,0.000",
            "5.000,10.000,x,2.000,1.000,1.000",
            "5.000,10.000,y,0.000,1.000,0.000",
            "10.000,15.000,x,0.000,1.000,0.000",
            "10.000,15.000,y,4.000,0.000,1.000",
            "15.000,17.000,x,1.000,0.000,1.000",
            "15.000,17.000,y,0.000,0.000,0.000",
        ]
    );
}

/// A DAG job through the CLI: tasks.csv lists every task with its state and upstreams, and
/// jobs.csv its critical path; a cycle or a dangling name is refused with its line.
#[test]
fn dag_jobs_run_and_bad_dags_are_refused_with_their_line() {
    let dir = scratch("cli", "dag");
    let head = "job_id,task_id,submit_s,duration_s,gpus,depends_on\n";
    let good = dir.join("good.csv");
    std::fs::write(&good, format!("{head}p,prep,0,10,1,\np,train,0,100,2,prep\np,alert,0,1,1,train:failure\n"))
        .unwrap();
    let out_dir = dir.join("out");
    let out = schedlab(&[
        "simulate",
        "--trace",
        good.to_str().unwrap(),
        "--cluster",
        "1x2:A",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let tasks = std::fs::read_to_string(out_dir.join("tasks.csv")).unwrap();
    assert_eq!(
        tasks,
        "job_id,task_id,job_index,task_index,state,first_start_s,finish_s,gpus,depends_on\n\
         p,prep,0,0,succeeded,0.000,10.000,1,\n\
         p,train,0,1,succeeded,10.000,110.000,2,prep\n\
         p,alert,0,2,skipped,,110.000,1,train:failure\n"
    );
    let jobs = std::fs::read_to_string(out_dir.join("jobs.csv")).unwrap();
    // ETTR: 210 productive GPU-s (prep 10 s x 1, train 100 s x 2; alert skipped) over the 4
    // GPUs of its tasks for its 110 s: a DAG's sequential tasks score below 1.
    assert!(jobs.lines().nth(1).unwrap().ends_with(",succeeded,,110.000,0.477273,0,"), "{jobs}");

    let cyclic = dir.join("cyclic.csv");
    std::fs::write(&cyclic, format!("{head}p,a,0,10,1,\np,b,0,10,1,a;c\np,c,0,10,1,b\n")).unwrap();
    let dangling = dir.join("dangling.csv");
    std::fs::write(&dangling, format!("{head}p,a,0,10,1,\np,b,0,10,1,a:any;x\n")).unwrap();
    for (file, expected) in [
        (&cyclic, "cyclic.csv:2: job `p`: its tasks' dependencies form a cycle: b -> c -> b"),
        (&dangling, "dangling.csv:3: field `depends_on`: expected task names of this job (a, b)"),
    ] {
        for command in [
            &["simulate", "--trace", file.to_str().unwrap(), "--cluster", "1x2:A"][..],
            &["trace", "validate", file.to_str().unwrap()],
        ] {
            let out = schedlab(command);
            assert!(!out.status.success(), "{command:?} accepted a bad DAG");
            assert!(
                stderr(&out).contains(expected) || stdout(&out).contains(expected),
                "{command:?}: {}{}",
                stdout(&out),
                stderr(&out)
            );
        }
    }
}

/// Queues from a trace directory's queues.csv, and the sharing metrics, by hand. On 1 x 4
/// GPUs: a1 (queue a, 2 GPUs, 10 s) and b1 (b, 2, 10) run 0..10, a2 (a, 4, 10) 10..20. GPU-time:
/// a 60 GPU-s, b 20. Per unit of weight (a 1, b 3): 60 and 6.67, Jain = 66.67^2 / (2 x (3600 +
/// 44.44)) = 0.6098. rho = JCT / time alone: 1, 1, 20 / 10 = 2; mean 4/3, max 2.
#[test]
fn queues_from_the_trace_and_sharing_metrics_by_hand() {
    let dir = scratch("cli", "queues");
    std::fs::write(
        dir.join("jobs.csv"),
        "job_id,submit_s,duration_s,gpus,queue\na1,0,10,2,a\nb1,0,10,2,b\na2,0,10,4,a\n",
    )
    .unwrap();
    std::fs::write(dir.join("cluster.csv"), "pool,gpu_type,nodes,gpus_per_node\nA,A,1,4\n").unwrap();
    std::fs::write(dir.join("queues.csv"), "queue,weight\na,1\nb,3\n").unwrap();
    let out_dir = dir.join("out");
    let out = schedlab(&["simulate", "--trace", dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = read_json(&out_dir.join("summary.json"));
    let close = |key: &str, want: f64| {
        let got = s[key].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{key}: {got} != {want}");
    };
    close("queue_fairness_jain", 66.666_666_666_666_67_f64.powi(2) / (2.0 * (3600.0 + 400.0 / 9.0)));
    close("ftf_rho_mean", 4.0 / 3.0);
    close("ftf_rho_max", 2.0);
    let metrics = std::fs::read_to_string(out_dir.join("queue_metrics.csv")).unwrap();
    assert_eq!(
        metrics,
        "queue,weight,max_gpus,jobs,finished,mean_jct_s,p95_jct_s,mean_queue_s,gpu_hours,gpu_share,ftf_rho_mean\n\
         a,1,,2,2,15.000,20.000,5.000,0.016667,0.750000,1.500000\n\
         b,3,,1,1,10.000,10.000,0.000,0.005556,0.250000,1.000000\n"
    );
    // --queues replaces the trace's: a queue the jobs do not name is an error naming it.
    let other = dir.join("other.csv");
    std::fs::write(&other, "queue\nc\n").unwrap();
    let out = schedlab(&["simulate", "--trace", dir.to_str().unwrap(), "--queues", other.to_str().unwrap()]);
    assert!(
        stderr(&out).contains("job `a1` is in queue `a`, which the cluster does not define (it has c)"),
        "{}",
        stderr(&out)
    );
}

/// The fifo scenario of policies/tests/schedules.rs through the CLI: a (2 GPUs, 10 s) at 0,
/// b (4, 5) at 0, c (1, 2) at 1 on 1 x 4 GPUs run 0..10, 10..15, 15..17.
#[test]
fn summary_numbers_match_a_hand_computed_run() {
    let dir = scratch("cli", "hand");
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,0,10,2\nb,0,5,4\nc,1,2,1\n").unwrap();
    let out_dir = dir.join("out");
    let out = schedlab(&[
        "simulate",
        "--trace",
        trace.to_str().unwrap(),
        "--cluster",
        "1x4:A",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = read_json(&out_dir.join("summary.json"));
    let close = |key: &str, want: f64| {
        let got = s[key].as_f64().unwrap();
        assert!((got - want).abs() < 1e-9, "{key}: got {got}, want {want}");
    };
    // JCTs 10, 15, 16; queueing 0, 10, 14; window 0..17; GPU-time 20 + 20 + 2 = 42 GPU-s.
    close("mean_jct_s", 41.0 / 3.0);
    close("p50_jct_s", 15.0);
    close("p95_jct_s", 16.0);
    close("mean_queue_s", 8.0);
    close("makespan_s", 17.0);
    close("utilisation", 42.0 / 68.0);
    close("jobs_per_hour", 3.0 * 3600.0 / 17.0);
    close("littles_law_error", 0.0);
    let jobs = std::fs::read_to_string(out_dir.join("jobs.csv")).unwrap();
    assert!(jobs.contains("\nc,2,,1.000,15.000,17.000,16.000,14.000,2.000,1,1,0,"), "{jobs}");
}

#[test]
fn an_impossible_job_is_reported_unschedulable_not_dropped() {
    let dir = scratch("cli", "impossible");
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\nok,0,10,2\nhuge,0,10,64\n").unwrap();
    let out_dir = dir.join("out");
    let out = schedlab(&[
        "simulate",
        "--trace",
        trace.to_str().unwrap(),
        "--cluster",
        "2x4:A",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = read_json(&out_dir.join("summary.json"));
    assert_eq!(
        (s["jobs"].as_u64(), s["jobs_finished"].as_u64(), s["jobs_unschedulable"].as_u64()),
        (Some(2), Some(1), Some(1))
    );
    let jobs = std::fs::read_to_string(out_dir.join("jobs.csv")).unwrap();
    assert!(
        jobs.contains("unschedulable,task `0` asks for 64 GPUs; the largest an eligible pool (`A`) has 8"),
        "{jobs}"
    );
}

#[test]
fn a_malformed_row_names_file_line_and_field_and_exits_non_zero() {
    let dir = scratch("cli", "malformed");
    let trace = dir.join("bad.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,0,10,2\nb,0,ten,2\n").unwrap();
    let out = schedlab(&["simulate", "--trace", trace.to_str().unwrap(), "--cluster", "1x4"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("bad.csv:3") && err.contains("duration_s"), "{err}");
    let validate = schedlab(&["trace", "validate", trace.to_str().unwrap()]);
    assert!(!validate.status.success());
    assert!(stderr(&validate).contains("bad.csv:3"), "{}", stderr(&validate));
}

#[test]
fn unknown_policies_parameters_and_formats_list_the_valid_ones() {
    let out = schedlab(&["simulate", "--jobs", "10", "--policy", "lottery"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("valid policies: fifo, sjf, srtf, easy-backfill"), "{}", stderr(&out));
    let out = schedlab(&["simulate", "--jobs", "10", "--policy", "sjf[speed=2]"]);
    assert!(!out.status.success() && stderr(&out).contains("duration=oracle|estimate"), "{}", stderr(&out));
    let out = schedlab(&["simulate", "--trace", "x.csv", "--format", "slurm"]);
    assert!(!out.status.success() && stderr(&out).contains("canonical, itp, philly"), "{}", stderr(&out));
    let out = schedlab(&["simulate", "--jobs", "10", "--cluster", "4y8:V100"]);
    assert!(!out.status.success() && stderr(&out).contains("4y8"), "{}", stderr(&out));
}

#[test]
fn policies_lists_every_policy_with_parameters_and_defaults() {
    let out = schedlab(&["policies"]);
    assert!(out.status.success());
    let text = stdout(&out);
    for needle in [
        "fifo",
        "sjf",
        "srtf",
        "easy-backfill",
        "skip=true|false  (default false)",
        "placement=pack|spread|fastest|local  (default pack)",
        "duration=oracle|estimate  (default oracle)",
        "depth=1..  (default 100)",
    ] {
        assert!(text.contains(needle), "`schedlab policies` lacks `{needle}`:\n{text}");
    }
}

/// 2 nodes x 4 GPUs; a (4 GPUs, 100 s) on node 0, which fails at 5 s. Heartbeats every 10 s,
/// dead after 3 missed (10, 20, 30): at 30 a restarts on node 1 with its 5 s of progress
/// (checkpoints at every instant by default) and ends at 30 + 95 = 125.
#[test]
fn a_trace_with_failure_events_replays_them() {
    let dir = scratch("cli", "events");
    std::fs::write(dir.join("jobs.csv"), "job_id,submit_s,duration_s,gpus\na,0,100,4\n").unwrap();
    std::fs::write(dir.join("cluster.csv"), "pool,gpu_type,nodes,gpus_per_node\np,A,2,4\n").unwrap();
    std::fs::write(dir.join("events.csv"), "time_s,kind,node,gpu,repair_s\n5,node_fail,0,,600\n").unwrap();
    let out_dir = dir.join("out");
    let out = schedlab(&["simulate", "--trace", dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let s = read_json(&out_dir.join("summary.json"));
    assert_eq!(
        (s["failures"].as_u64(), s["task_failures"].as_u64(), s["retries"].as_u64()),
        (Some(1), Some(1), Some(1))
    );
    assert_eq!(s["mean_detection_lag_s"].as_f64(), Some(25.0));
    assert_eq!(s["makespan_s"].as_f64(), Some(125.0));
    assert!((s["lost_gpu_hours"].as_f64().unwrap() - 100.0 / 3600.0).abs() < 1e-12, "{s}");
    let health = std::fs::read_to_string(out_dir.join("gpu_health.csv")).unwrap();
    assert_eq!(health, "time_s,broken_gpus,unusable_gpus\n5.000,4,0\n30.000,4,4\n");
}

#[test]
fn a_canonical_directory_brings_its_own_cluster() {
    let dir = scratch("cli", "own-cluster");
    std::fs::write(dir.join("jobs.csv"), "job_id,submit_s,duration_s,gpus\na,0,10,6\n").unwrap();
    std::fs::write(dir.join("cluster.csv"), "pool,gpu_type,nodes,gpus_per_node\np,A,2,4\n").unwrap();
    let out = schedlab(&["simulate", "--trace", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let gpus_line = stdout(&out).lines().find(|l| l.starts_with("cluster GPUs")).map(str::to_owned);
    assert_eq!(gpus_line.as_deref().map(|l| l.split_whitespace().last()), Some(Some("8")), "{}", stdout(&out));
}

#[test]
fn philly_imported_to_canonical_replays_to_the_same_digest() {
    let Some(philly) = shared_trace("philly-pollux/philly.csv") else { return };
    let dir = scratch("cli", "philly-import");
    let canonical = dir.join("philly");
    let out = schedlab(&[
        "trace",
        "import",
        philly.to_str().unwrap(),
        "--format",
        "philly",
        "--out",
        canonical.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("wrote 82247 jobs"), "{}", stdout(&out));
    let cluster = "321x2:12GB,231x8:24GB";
    let direct = schedlab(&[
        "simulate",
        "--trace",
        philly.to_str().unwrap(),
        "--format",
        "philly",
        "--cluster",
        cluster,
        "--policy",
        "sjf",
    ]);
    let replayed =
        schedlab(&["simulate", "--trace", canonical.to_str().unwrap(), "--cluster", cluster, "--policy", "sjf"]);
    assert!(direct.status.success() && replayed.status.success(), "{}{}", stderr(&direct), stderr(&replayed));
    assert_eq!(digest_line(&stdout(&direct)), digest_line(&stdout(&replayed)));
    assert!(stdout(&direct).contains("82247 (82247 finished"), "{}", stdout(&direct));
}

#[test]
fn trace_stats_reports_the_source_facts() {
    let Some(itp) = shared_trace("microsoft-itp-elasticflow/cluster01.csv") else { return };
    let out = schedlab(&["trace", "stats", itp.to_str().unwrap(), "--format", "itp"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("1,595") && text.contains("22,740.126"), "{text}");
}

#[test]
fn a_failure_model_is_seeded_and_reported() {
    let run = |seed: &str| {
        let out = schedlab(&[
            "simulate",
            "--jobs",
            "300",
            "--failures",
            "weibull:node_mtbf_h=200,repair_median_h=2",
            "--checkpoint-s",
            "600",
            "--restart-overhead-s",
            "60",
            "--seed",
            seed,
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        stdout(&out)
    };
    let (a, b, c) = (run("1"), run("1"), run("2"));
    assert_eq!(digest_line(&a), digest_line(&b));
    assert_ne!(digest_line(&a), digest_line(&c));
    let failures = a.lines().find(|l| l.starts_with("failures")).expect("a failures line");
    assert!(!failures.contains(" 0 (0, 0)"), "a 200 h MTBF on 16 nodes over days must fail something: {failures}");
    let bad = schedlab(&["simulate", "--jobs", "10", "--failures", "poisson:rate=1"]);
    assert!(!bad.status.success() && stderr(&bad).contains("weibull"), "{}", stderr(&bad));
}

#[test]
fn infinitehbd_faults_replay_on_philly_and_fit_failures_prints_a_spec() {
    let (Some(philly), Some(faults)) =
        (shared_trace("philly-pollux/philly.csv"), shared_trace("infinitehbd-gpu-node-faults/fault_trace.json"))
    else {
        return;
    };
    let failures = format!("infinitehbd:{}", faults.display());
    let out = schedlab(&[
        "simulate",
        "--trace",
        philly.to_str().unwrap(),
        "--format",
        "philly",
        "--cluster",
        "321x2:12GB,231x8:24GB",
        "--failures",
        &failures,
        "--checkpoint-s",
        "1800",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("82247 (82247 finished"), "{text}");
    assert!(!text.contains("failures (tasks hit, retries)  0 "), "{text}");
    let fit = schedlab(&["trace", "fit-failures", faults.to_str().unwrap(), "--format", "infinitehbd"]);
    assert!(fit.status.success(), "{}", stderr(&fit));
    assert!(stdout(&fit).contains("weibull:node_mtbf_h="), "{}", stdout(&fit));
}

#[test]
fn openb_pods_replay_on_the_imported_openb_cluster_with_their_gpu_shares() {
    let (Some(pods), Some(nodes)) = (
        shared_trace("alibaba-gpu-v2023-openb/openb_pod_list_default.csv"),
        shared_trace("alibaba-gpu-v2023-openb/openb_node_list_gpu_node.csv"),
    ) else {
        return;
    };
    let dir = scratch("cli", "openb");
    let cluster = dir.join("cluster.csv");
    let out = schedlab(&[
        "cluster",
        "import",
        nodes.to_str().unwrap(),
        "--format",
        "openb",
        "--out",
        cluster.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("6212 GPUs"), "{}", stdout(&out));
    let out_dir = dir.join("out");
    let out = schedlab(&[
        "simulate",
        "--trace",
        pods.to_str().unwrap(),
        "--format",
        "openb",
        "--cluster",
        cluster.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("skipped 1,088 CPU-only pods"),
        "the CPU-only pods must be reported: {}",
        stderr(&out)
    );
    let s = read_json(&out_dir.join("summary.json"));
    assert_eq!((s["jobs"].as_u64(), s["jobs_finished"].as_u64()), (Some(7064), Some(7064)));
    // Shares are counted as shares: the imported pods hold 51,498.736 GPU-hours of work.
    assert!((s["gpu_hours"].as_f64().unwrap() - 51_498.736).abs() < 1e-3, "{s}");
}

/// 2 nodes x 4 GPUs; a (4 GPUs, 100 s, queue q1) on node 0, which fails at 55 s and is
/// declared dead at 80 (beats 60, 70, 80 missed). q1's defaults: checkpoints every 50 s, 10 s
/// restarts. a keeps 50 s, loses 5, sat 25 on the dead node, restarts at 80 on node 1 and ends
/// at 80 + 10 + 50 = 140; lost 4 x (5 + 25 + 10) = 160 GPU-s. Without the queue defaults it
/// keeps all 55 s and ends at 80 + 45 = 125.
#[test]
fn queue_defaults_set_checkpoints_and_restart_overheads() {
    let dir = scratch("cli", "queue-defaults");
    std::fs::write(dir.join("jobs.csv"), "job_id,submit_s,duration_s,gpus,queue\na,0,100,4,q1\n").unwrap();
    std::fs::write(dir.join("cluster.csv"), "pool,gpu_type,nodes,gpus_per_node\np,A,2,4\n").unwrap();
    std::fs::write(dir.join("events.csv"), "time_s,kind,node,gpu,repair_s\n55,node_fail,0,,600\n").unwrap();
    let run = |extra: &[&str]| {
        let out_dir = dir.join(format!("out{}", extra.len()));
        let mut args = vec!["simulate", "--trace", dir.to_str().unwrap(), "--out", out_dir.to_str().unwrap()];
        args.extend_from_slice(extra);
        let out = schedlab(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        read_json(&out_dir.join("summary.json"))
    };
    let with = run(&["--queue-checkpoint-s", "q1=50", "--queue-restart-overhead-s", "q1=10"]);
    assert_eq!(with["makespan_s"].as_f64(), Some(140.0));
    assert!((with["lost_gpu_hours"].as_f64().unwrap() - 160.0 / 3600.0).abs() < 1e-12, "{with}");
    let without = run(&[]);
    assert_eq!(without["makespan_s"].as_f64(), Some(125.0));
    let typo = schedlab(&["simulate", "--trace", dir.to_str().unwrap(), "--queue-checkpoint-s", "q2=50"]);
    assert!(!typo.status.success() && stderr(&typo).contains("no job is in queue `q2`"), "{}", stderr(&typo));
}

/// A reused `--out` folder holds one run's files, never two runs' mixed: a second run clears
/// every file the first wrote that it does not write itself (tasks.csv, decisions.csv, the
/// report), and a folder holding files no run writes is refused unless `--force`.
#[test]
fn a_reused_out_folder_holds_only_the_last_runs_files() {
    let dir = scratch("cli", "reused-out");
    let dag = dir.join("dag.csv");
    std::fs::write(&dag, "job_id,task_id,submit_s,duration_s,gpus,depends_on\np,a,0,10,1,\np,b,0,10,1,a\n").unwrap();
    let out_dir = dir.join("out");
    let out_arg = out_dir.to_str().unwrap();
    let first = ["simulate", "--trace", dag.to_str().unwrap(), "--cluster", "1x2:A", "--decisions", "--out", out_arg];
    assert!(schedlab(&first).status.success());
    assert!(schedlab(&["report", out_arg]).status.success());
    for file in ["tasks.csv", "decisions.csv", "report.html"] {
        assert!(out_dir.join(file).exists(), "the first run wrote no {file}");
    }
    let second = schedlab(&["simulate", "--jobs", "20", "--policy", "sjf", "--out", out_arg]);
    assert!(second.status.success(), "{}", stderr(&second));
    let mut left: Vec<String> =
        std::fs::read_dir(&out_dir).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    left.sort();
    assert_eq!(left, ["jobs.csv", "queue_metrics.csv", "queue_timeseries.csv", "summary.json", "timeseries.csv"]);

    std::fs::write(out_dir.join("notes.txt"), "mine").unwrap();
    let refused = schedlab(&["simulate", "--jobs", "20", "--out", out_arg]);
    assert!(!refused.status.success(), "a folder with a file no run writes was written into");
    let expected = format!(
        "--out {out_arg} holds notes.txt, which no run writes: give a new folder, one that only a run \
         wrote into, or --force to write beside it"
    );
    assert!(stderr(&refused).contains(&expected), "{}", stderr(&refused));
    assert!(read_json(&out_dir.join("summary.json"))["policy"].as_str().unwrap().starts_with("sjf"));
    let forced = schedlab(&["simulate", "--jobs", "20", "--out", out_arg, "--force"]);
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(std::fs::read_to_string(out_dir.join("notes.txt")).unwrap(), "mine");
    assert!(read_json(&out_dir.join("summary.json"))["policy"].as_str().unwrap().starts_with("fifo"));
}

/// A seed that feeds nothing in this run is said, with what it would feed; the built-in
/// workload's flags are refused with a trace, which replaces that workload.
#[test]
fn seeds_and_synthetic_flags_that_change_nothing_are_said() {
    let dir = scratch("cli", "idle-seed");
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,0,10,1\nb,5,10,2\n").unwrap();
    let traced = ["simulate", "--trace", trace.to_str().unwrap(), "--cluster", "1x2:A"];
    let seeded = schedlab(&[&traced[..], &["--seed", "3"]].concat());
    assert!(seeded.status.success(), "{}", stderr(&seeded));
    assert!(
        stderr(&seeded).contains(
            "warning: --seed 3 changes nothing here unless the policy draws random numbers: the seed feeds the \
             built-in synthetic workload (replaced by --trace), a failure model or replayed failure history (none: \
             no --failures) and a policy's own random draws (no built-in policy makes any)"
        ),
        "{}",
        stderr(&seeded)
    );
    // With a failure model the seed matters: no warning; nor without a trace.
    let failing = schedlab(&[&traced[..], &["--seed", "3", "--failures", "weibull:node_mtbf_h=1"]].concat());
    assert!(failing.status.success() && !stderr(&failing).contains("warning"), "{}", stderr(&failing));
    let synthetic = schedlab(&["simulate", "--jobs", "20", "--seed", "3"]);
    assert!(synthetic.status.success() && !stderr(&synthetic).contains("warning"), "{}", stderr(&synthetic));
    for (flags, expected) in [
        (&["--jobs", "10"][..], "--jobs shapes the built-in synthetic workload, which --trace replaces: drop it"),
        (
            &["--jobs", "10", "--load", "0.5"],
            "--jobs and --load shape the built-in synthetic workload, which --trace replaces: drop them",
        ),
    ] {
        let refused = schedlab(&[&traced[..], flags].concat());
        assert!(!refused.status.success(), "{flags:?} accepted with --trace");
        assert!(stderr(&refused).contains(expected), "{}", stderr(&refused));
    }
}

/// Columns `name` of a CSV header, by position.
fn columns(header: &str) -> std::collections::BTreeMap<&str, usize> {
    header.split(',').enumerate().map(|(i, c)| (c, i)).collect()
}

/// One naming across the outputs: jobs.csv, tasks.csv and decisions.csv name jobs and tasks by
/// the trace's `job_id` and `task_id`, with the internal numbers in `*_index` columns, so the
/// three join on the trace's ids. Job `7` (one task, submitted first) is job index 0; job `p`'s
/// tasks are task indexes 1 to 3. decisions.csv's GPUs are indexes (`gpu_indexes`), and
/// tasks.csv keeps each dependency's kind.
#[test]
fn jobs_tasks_and_decisions_join_on_the_traces_ids() {
    let dir = scratch("cli", "ids");
    let trace = dir.join("jobs.csv");
    std::fs::write(
        &trace,
        "job_id,task_id,submit_s,duration_s,gpus,depends_on\n7,,0,5,1,\np,prep,1,10,1,\np,train,1,100,2,prep\np,alert,1,1,1,train:failure\n",
    )
    .unwrap();
    let out_dir = dir.join("out");
    let args = ["simulate", "--trace", trace.to_str().unwrap(), "--cluster", "1x2:A", "--decisions"];
    let out = schedlab(&[&args[..], &["--out", out_dir.to_str().unwrap()]].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let read = |name: &str| std::fs::read_to_string(out_dir.join(name)).unwrap();
    let jobs = read("jobs.csv");
    assert!(jobs.starts_with("job_id,job_index,queue,submit_s,"), "{jobs}");
    let job_rows: Vec<Vec<&str>> = jobs.lines().skip(1).map(|l| l.split(',').take(2).collect()).collect();
    assert_eq!(job_rows, [["7", "0"], ["p", "1"]]);
    assert_eq!(
        read("tasks.csv"),
        "job_id,task_id,job_index,task_index,state,first_start_s,finish_s,gpus,depends_on\n\
         p,prep,1,1,succeeded,1.000,11.000,1,\n\
         p,train,1,2,succeeded,11.000,111.000,2,prep\n\
         p,alert,1,3,skipped,,111.000,1,train:failure\n"
    );
    let decisions = read("decisions.csv");
    let mut lines = decisions.lines();
    let header = lines.next().unwrap();
    assert_eq!(header, "time_s,kind,job_id,task_id,job_index,task_index,gpu_indexes,detail,policy");
    let c = columns(header);
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    let starts: Vec<[&str; 5]> = rows
        .iter()
        .filter(|r| r[c["kind"]] == "start")
        .map(|r| [r[c["job_id"]], r[c["task_id"]], r[c["job_index"]], r[c["task_index"]], r[c["gpu_indexes"]]])
        .collect();
    // A job of one task has no task id of its own in the trace: it joins jobs.csv on job_id.
    assert_eq!(starts.len(), 3, "{decisions}");
    assert_eq!(starts[0][..4], ["7", "", "0", "0"]);
    assert_eq!(starts[1][..4], ["p", "prep", "1", "1"]);
    assert_eq!(starts[2], ["p", "train", "1", "2", "0 1"]);
}

/// The time series is bounded: past 100,000 buckets over the submissions a run is refused
/// before it starts, saying how many it would write and the narrowest bucket within the limit,
/// unless `--force`. Submissions 0 and 200,001 s: at 1 s, 200,002 buckets; 2 s gives 100,001;
/// 3 s gives 66,668.
#[test]
fn a_time_series_past_the_bucket_limit_is_refused_unless_forced() {
    let dir = scratch("cli", "buckets");
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,0,1,1\nb,200001,1,1\n").unwrap();
    let out_dir = dir.join("out");
    let args =
        ["simulate", "--trace", trace.to_str().unwrap(), "--cluster", "1x1:A", "--out", out_dir.to_str().unwrap()];
    let refused = schedlab(&[&args[..], &["--series-bucket-s", "1"]].concat());
    assert!(!refused.status.success(), "200,002 buckets were written");
    assert!(
        stderr(&refused).contains(
            "--series-bucket-s 1 would write at least 200002 time-series buckets (the submissions span 200001 s), \
             more than the 100000 a run writes without --force: give --series-bucket-s 3 or more, or --force"
        ),
        "{}",
        stderr(&refused)
    );
    assert!(!out_dir.join("timeseries.csv").exists());
    // A sweep's runs are held to the same limit, and its --force lifts it the same way.
    let sweep = ["sweep", "--trace", trace.to_str().unwrap(), "--cluster", "1x1:A", "--series-bucket-s", "1"];
    let sweep_dir = dir.join("sweep");
    let refused = schedlab(&[&sweep[..], &["--out", sweep_dir.to_str().unwrap()]].concat());
    assert!(
        !refused.status.success() && stderr(&refused).contains("would write at least 200002"),
        "{}",
        stderr(&refused)
    );
    let within = schedlab(&[&args[..], &["--series-bucket-s", "3"]].concat());
    assert!(within.status.success(), "{}", stderr(&within));
    let forced = schedlab(&[&args[..], &["--series-bucket-s", "2", "--force"]].concat());
    assert!(forced.status.success(), "{}", stderr(&forced));
    let rows = std::fs::read_to_string(out_dir.join("timeseries.csv")).unwrap().lines().count() - 1;
    // 100,001 buckets of 2 s cover [0, 200002); b's completion at 200,002 s opens one more, cut
    // to zero length by the run's end.
    assert_eq!(rows, 100_002);
}

/// One grammar for outputs: `--out` and `-o` on every command that writes files (report's
/// `--output` stays as a spelling of `--out`).
#[test]
fn out_and_o_are_accepted_by_every_command_that_writes_files() {
    let dir = scratch("cli", "out-everywhere");
    let path = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let commands: Vec<(Vec<String>, String)> = vec![
        (vec!["simulate".into(), "--jobs".into(), "20".into(), "-o".into(), path("run")], path("run/summary.json")),
        (
            ["sweep", "--jobs", "20", "--seeds", "0..1", "-o"]
                .iter()
                .map(|s| s.to_string())
                .chain([path("sweep")])
                .collect(),
            path("sweep/sweep.csv"),
        ),
        (vec!["report".into(), path("run"), "--out".into(), path("a.html")], path("a.html")),
        (vec!["report".into(), path("run"), "-o".into(), path("b.html")], path("b.html")),
        (vec!["report".into(), path("run"), "--output".into(), path("c.html")], path("c.html")),
        (
            ["sweep", "--jobs", "20", "--seeds", "0..1", "--shard", "0/1", "--out"]
                .iter()
                .map(|s| s.to_string())
                .chain([path("shard")])
                .collect(),
            path("shard/sweep.json"),
        ),
        (vec!["merge".into(), path("shard"), "-o".into(), path("merged")], path("merged/sweep.csv")),
    ];
    for (args, written) in commands {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = schedlab(&args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(std::path::Path::new(&written).exists(), "{args:?} wrote no {written}");
    }
}

/// `schedlab policies` says a parameter several policies share (placement, avoid_failed_h)
/// once, and names it on each policy that takes it.
#[test]
fn policies_states_each_shared_parameter_once() {
    let text = stdout(&schedlab(&["policies"]));
    assert_eq!(text.matches("placement=pack|spread|fastest|local  (default pack)").count(), 1, "{text}");
    assert_eq!(text.matches("avoid_failed_h=hours >= 0").count(), 1, "{text}");
    let fifo = text.lines().skip_while(|l| !l.starts_with("fifo ")).take(4).collect::<Vec<_>>().join("\n");
    assert!(fifo.contains("also placement, avoid_failed_h"), "{fifo}");
}

/// A --cluster that names a missing file or a folder says so, rather than calling it a bad
/// shorthand; a speed finer than the documented three decimals is refused, not rounded.
#[test]
fn cluster_files_and_speeds_are_checked_in_the_users_terms() {
    let dir = scratch("cli", "cluster-terms");
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,0,10,1\n").unwrap();
    let folder = dir.to_str().unwrap();
    for (cluster, expected) in [
        ("nothere.csv", "--cluster nothere.csv: no such file (nor a shorthand such as 40x8:V100)".to_string()),
        (folder, format!("--cluster {folder}: a folder; expected a cluster.csv file or a shorthand such as 40x8:V100")),
        ("1x1:A100@1.2345", "expected a speed above 0 with at most three decimals, such as 2.5 or 1.125".to_string()),
    ] {
        let out = schedlab(&["simulate", "--trace", trace.to_str().unwrap(), "--cluster", cluster]);
        assert!(!out.status.success(), "--cluster {cluster} accepted");
        assert!(stderr(&out).contains(&expected), "--cluster {cluster}: {}", stderr(&out));
    }
}

/// What was expected, in the user's terms, never Rust's own parser messages.
#[test]
fn malformed_values_get_the_users_terms_not_rusts() {
    let dir = scratch("cli", "users-terms");
    let trace = |name: &str, body: &str| {
        let path = dir.join(name);
        std::fs::write(&path, format!("job_id,submit_s,duration_s,gpus\n{body}\n")).unwrap();
        path.to_str().unwrap().to_string()
    };
    let (ten, quote, huge) =
        (trace("ten.csv", "a,0,ten,1"), trace("quote.csv", "\"a,0,10,1"), trace("huge.csv", "a,0,10,4294967296"));
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["simulate", "--jobs", "ten"], "--jobs `ten`: expected a whole number, such as 300"),
        (
            vec!["simulate", "--series-bucket-s", "0"],
            "--series-bucket-s `0`: expected a whole number of seconds, at least 1",
        ),
        (
            vec!["simulate", "--trace", &ten, "--cluster", "1x1:A"],
            "field `duration_s`: expected a positive number of seconds (decimal digits, like 66 or 0.25), got \"ten\"",
        ),
        (
            vec!["simulate", "--trace", &quote, "--cluster", "1x1:A"],
            "quote.csv:2: a quoted field runs on past its line (a `\"` opens it and no `\"` on the line closes it)",
        ),
        (
            vec!["simulate", "--trace", &huge, "--cluster", "1x1:A"],
            "field `gpus`: expected a whole number of GPUs from 1 to 1000000 (the most a cluster may have), got \"4294967296\"",
        ),
    ];
    for (args, expected) in cases {
        let out = schedlab(&args);
        let err = stderr(&out);
        assert!(!out.status.success(), "{args:?} accepted");
        assert!(err.contains(expected), "{args:?}: {err}");
        for rust in ["invalid digit", "provided string", "18446744073709551615", "exponent"] {
            assert!(!err.contains(rust), "{args:?} leaks `{rust}`: {err}");
        }
    }
}

/// The first start of `job` when `trace` runs on `cluster` with `extra` flags (its output in a
/// folder of `dir` of its own): decisions.csv's time and GPU indexes.
fn first_start(
    dir: &std::path::Path,
    trace: &std::path::Path,
    cluster: &str,
    extra: &[&str],
    job: &str,
) -> (String, String) {
    let out_dir = dir.join(format!("out{}", extra.len()));
    let args = ["simulate", "--trace", trace.to_str().unwrap(), "--cluster", cluster, "--decisions", "--out"];
    let out = schedlab(&[&args[..], &[out_dir.to_str().unwrap()], extra].concat());
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(out_dir.join("decisions.csv")).unwrap();
    let line = log.lines().find(|l| l.contains(&format!(",start,{job},"))).unwrap_or_else(|| panic!("{log}"));
    let fields: Vec<&str> = line.split(',').collect();
    (fields[0].to_string(), fields[6].to_string())
}

/// Strict consolidation as a run option: with `--single-node-up-to 4`, a task of at most 4
/// GPUs runs within one node. On 2 nodes of 4 GPUs, a (3 GPUs, 100 s) and b (3 GPUs, 200 s)
/// leave one GPU free on each node; c (2 GPUs, submitted at 1 s) spans the two nodes at once
/// under pack, but with the option waits for a's node, from 100 s.
#[test]
fn single_node_up_to_keeps_a_small_task_on_one_node() {
    let dir = scratch("cli", "single-node");
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,0,100,3\nb,0,200,3\nc,1,10,2\n").unwrap();
    let c_start = |extra: &[&str]| {
        let (time, gpus) = first_start(&dir, &trace, "2x4:A", extra, "c");
        let nodes: std::collections::BTreeSet<u32> = gpus.split(' ').map(|g| g.parse::<u32>().unwrap() / 4).collect();
        (time, nodes.len())
    };
    assert_eq!(c_start(&[]), ("1.000".to_string(), 2));
    assert_eq!(c_start(&["--single-node-up-to", "4"]), ("100.000".to_string(), 1));
}

/// Whole nodes as a run option: with `--whole-nodes 4`, a task of a multiple of 4 GPUs takes 4
/// on each of its nodes. On 4 nodes of 4 GPUs, a (2 GPUs), x (3) and y (3), 100 s each, leave
/// 2, 1, 1 and 4 GPUs free on nodes 0-3. b (8 GPUs, submitted at 1 s) starts at once spread
/// over all four nodes under pack (node 3, then node 0's 2, then one each on nodes 1 and 2);
/// with the option it needs two free nodes and waits for them, from 100 s: nodes 0 and 1.
#[test]
fn whole_nodes_puts_a_multiple_of_a_node_on_whole_nodes() {
    let dir = scratch("cli", "whole-nodes");
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,0,100,2\nx,0,100,3\ny,0,100,3\nb,1,10,8\n").unwrap();
    let b_start = |extra: &[&str]| first_start(&dir, &trace, "4x4:A", extra, "b");
    assert_eq!(b_start(&[]), ("1.000".to_string(), "12 13 14 15 2 3 7 11".to_string()));
    assert_eq!(b_start(&["--whole-nodes", "4"]), ("100.000".to_string(), "0 1 2 3 4 5 6 7".to_string()));
}

#[test]
fn a_sacct_replay_says_how_far_its_starts_are_from_slurms() {
    // The committed dump of a real Slurm (sched/builtin, batch_sched_delay=0): 291 jobs held
    // GPUs. A second per release brings the starts close to Slurm's; a canonical trace records
    // no starts and prints no such line.
    let sacct = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/tests/data/slurm/builtin-fast/sacct.txt");
    let line = |latency: &str| {
        let args =
            ["simulate", "--trace", sacct, "--format", "sacct", "--cluster", "4x8", "--release-latency-s", latency];
        let out = schedlab(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        text.lines().find(|l| l.starts_with("starts vs the trace's recorded starts")).map(str::to_owned)
    };
    let instant = line("0").expect("a sacct replay compares its starts");
    assert!(instant.contains("291 jobs: 10 in the same second, 37 within 5 s; |deviation| p50 24 s"), "{instant}");
    let released = line("1").expect("a sacct replay compares its starts");
    assert!(released.contains("291 jobs: 18 in the same second, 268 within 5 s; |deviation| p50 2 s"), "{released}");
    let out = schedlab(&["simulate", "--jobs", "20"]);
    assert!(!stdout(&out).contains("recorded starts"), "{}", stdout(&out));
}

/// A sacct dump of `rows` jobs, `running` of them still RUNNING (which cannot be replayed).
fn sacct_dump(dir: &std::path::Path, rows: usize, running: usize) -> std::path::PathBuf {
    let mut text = String::from("JobID|Submit|Start|End|State|AllocTRES\n");
    for i in 0..rows {
        let state = if i < running { "RUNNING" } else { "COMPLETED" };
        let end = if i < running { "Unknown" } else { "2026-01-01T01:00:00" };
        text.push_str(&format!("{}|2026-01-01T00:00:00|2026-01-01T00:10:00|{end}|{state}|gres/gpu=1\n", 10 + i));
    }
    let path = dir.join("sacct.txt");
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn validate_says_ok_only_when_no_row_was_skipped() {
    let dir = scratch("cli", "validate-skipped");
    let path = sacct_dump(&dir, 4, 3);
    let out = schedlab(&["trace", "validate", path.to_str().unwrap(), "--format", "sacct"]);
    let (text, err) = (stdout(&out), stderr(&out));
    assert_eq!(out.status.code(), Some(1), "{text}{err}");
    assert!(!text.contains(": ok"), "{text}");
    assert!(text.contains("3 of 4 rows skipped"), "{text}");
    assert!(err.contains("skipped line 2: job 10 is RUNNING"), "{err}");
    let clean = sacct_dump(&dir, 2, 0);
    let out = schedlab(&["trace", "validate", clean.to_str().unwrap(), "--format", "sacct"]);
    assert!(out.status.success() && stdout(&out).ends_with(": ok\n"), "{}{}", stdout(&out), stderr(&out));
}

#[test]
fn a_trace_whose_every_row_was_skipped_says_why() {
    let dir = scratch("cli", "all-skipped");
    let path = sacct_dump(&dir, 2, 2);
    for command in ["stats", "validate"] {
        let out = schedlab(&["trace", command, path.to_str().unwrap(), "--format", "sacct"]);
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{err}");
        assert!(!err.contains("header but no rows"), "{err}");
        assert!(err.contains("every one of its 2 rows was skipped"), "{err}");
        assert!(err.contains("line 2: job 10 is RUNNING") && err.contains("line 3: job 11 is RUNNING"), "{err}");
    }
}

#[test]
fn trace_and_cluster_commands_take_the_trace_as_simulate_does() {
    let dir = scratch("cli", "trace-flag");
    let jobs = dir.join("jobs.csv");
    std::fs::write(&jobs, "job_id,submit_s,duration_s,gpus,queue\na,0,60,1,research\n").unwrap();
    let path = jobs.to_str().unwrap();
    for command in ["validate", "stats"] {
        let flagged = schedlab(&["trace", command, "--trace", path]);
        let positional = schedlab(&["trace", command, path]);
        assert!(flagged.status.success(), "{}", stderr(&flagged));
        assert_eq!(stdout(&flagged), stdout(&positional));
        let both = schedlab(&["trace", command, path, "--trace", path]);
        assert!(!both.status.success(), "{command}: a path given twice was taken");
    }
    let import = schedlab(&["trace", "import", "--trace", path, "--out", dir.join("out.csv").to_str().unwrap()]);
    assert!(import.status.success(), "{}", stderr(&import));
    let vc = dir.join("vc.csv");
    std::fs::write(&vc, "vc,node num\nprod,1\n").unwrap();
    let queues = schedlab(&[
        "cluster",
        "queues",
        vc.to_str().unwrap(),
        "--format",
        "philly-vc",
        "--trace",
        path,
        "--trace-format",
        "canonical",
    ]);
    assert!(queues.status.success(), "{}", stderr(&queues));
    assert!(stdout(&queues).contains("research"), "{}", stdout(&queues));
    // The flags' earlier names keep working.
    let old = schedlab(&[
        "cluster",
        "queues",
        vc.to_str().unwrap(),
        "--format",
        "philly-vc",
        "--jobs",
        path,
        "--jobs-format",
        "canonical",
    ]);
    assert_eq!(stdout(&old), stdout(&queues), "{}", stderr(&old));
}

#[test]
fn a_file_or_spec_in_another_shape_gets_the_fix_named() {
    let dir = scratch("cli", "other-shape");
    // Philly's header read as canonical (the default --format): suggest --format philly.
    let philly = dir.join("philly.csv");
    std::fs::write(&philly, "timestamp,duration,num_gpus,gpu_time,cluster\n1,2,1,2,a\n").unwrap();
    let out = schedlab(&["trace", "stats", philly.to_str().unwrap()]);
    let err = stderr(&out);
    assert!(err.contains("--format philly"), "{err}");
    assert!(!err.contains("known columns are"), "{err}");
    // A sacct dump written with commas: say so, not that JobID is missing.
    let comma = dir.join("sacct.txt");
    std::fs::write(&comma, "JobID,Submit,Start,End,State,AllocTRES\n1,x,x,x,COMPLETED,gres/gpu=1\n").unwrap();
    let out = schedlab(&["trace", "stats", comma.to_str().unwrap(), "--format", "sacct"]);
    let err = stderr(&out);
    assert!(err.contains("sacct.txt:1") && err.contains("not `|`-separated") && err.contains("--parsable2"), "{err}");
    // Parameters in parentheses: suggest the brackets.
    let out = schedlab(&["simulate", "--jobs", "10", "--policy", "sjf(duration=oracle)"]);
    let err = stderr(&out);
    assert!(err.contains("write `sjf[duration=oracle]`"), "{err}");
}

#[test]
fn simulate_json_prints_the_summary_as_one_object() {
    let dir = scratch("cli", "json");
    let out = schedlab(&["simulate", "--jobs", "50", "--json", "--out", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is one JSON object");
    let written = read_json(&dir.join("summary.json"));
    assert_eq!(printed, written, "the printed summary is summary.json's");
    assert!(printed.get("starts_vs_recorded").is_none());
    assert!(stderr(&out).contains("wrote "), "{}", stderr(&out));
    let sacct = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/tests/data/slurm/builtin-fast/sacct.txt");
    let out = schedlab(&["simulate", "--trace", sacct, "--format", "sacct", "--cluster", "4x8", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed: serde_json::Value = serde_json::from_str(&stdout(&out)).expect("stdout is one JSON object");
    assert_eq!(printed["starts_vs_recorded"]["jobs"], 291, "{printed}");
    assert_eq!(printed["starts_vs_recorded"]["exact"], 10, "{printed}");
    assert!(printed["digest"].is_string(), "{printed}");
}

#[test]
fn completions_are_printed_for_each_shell() {
    for (shell, marker) in [("bash", "_schedlab()"), ("zsh", "#compdef schedlab"), ("fish", "complete -c schedlab")] {
        let out = schedlab(&["completions", shell]);
        assert!(out.status.success(), "{shell}: {}", stderr(&out));
        let script = stdout(&out);
        assert!(script.contains(marker), "{shell}: no `{marker}`");
        // Every command and a flag of a nested one are offered.
        assert!(script.contains("simulate") && script.contains("fit-failures"), "{shell}");
        assert!(script.contains("trace-format"), "{shell}");
    }
    let out = schedlab(&["completions", "tcsh"]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("bash"), "{}", stderr(&out));
}

#[test]
fn slurm_cluster_import_writes_the_slurm_policy_spec() {
    let dir = scratch("cli", "slurm-policy");
    let dump = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/tests/data/slurm/fairshare-classic");
    let file = |name: &str| format!("{dump}/{name}");
    let (policy, queues) = (dir.join("policy.txt"), dir.join("queues.csv"));
    let (conf, config, assoc, qos) = (file("slurm.conf"), file("config.txt"), file("assoc.txt"), file("qos.txt"));
    #[rustfmt::skip]
    let out = schedlab(&[
        "cluster", "import", &conf, "--format", "slurm", "--config", &config, "--assoc", &assoc, "--qos", &qos,
        "--policy-out", policy.to_str().unwrap(), "--queues-out", queues.to_str().unwrap(),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let written = std::fs::read_to_string(&policy).unwrap();
    assert_eq!(written.lines().count(), 1, "{written}");
    let written = written.trim_end();
    // The same spec on stderr, as a note line.
    assert!(stderr(&out).lines().any(|l| l == format!("policy: {written}")), "{}", stderr(&out));
    // A spec `--policy` reads, printed back the same (keys sorted, one text per spec).
    let spec: schedlab::PolicySpec = written.parse().unwrap();
    assert_eq!(spec.to_string(), written);
    assert_eq!(spec.name(), "slurm");
    // fairshare-classic/'s slurm.conf and config.txt: NO_FAIR_TREE, bf_interval=10,
    // bf_max_job_test=50, BOOT_TIME 2026-12-05T06:49:29.
    for (key, value) in
        [("fair_tree", "false"), ("bf_interval", "10"), ("bf_max_job_test", "50"), ("started_s", "1796453369")]
    {
        assert_eq!(spec.param(key), Some(value), "{key} in {written}");
    }
    assert!(spec.param("sched").is_none(), "sched/backfill is the default: {written}");
    // PriorityTier (not set: Slurm's 1) is the queues' priority column.
    let csv = std::fs::read_to_string(&queues).unwrap();
    assert_eq!(
        csv,
        "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\nmain,,,,1,1,false\nurgent,v100-8,,,1,1,false\n"
    );
    // Slurm's files are for --format slurm only.
    let out = schedlab(&["cluster", "import", &conf, "--format", "pai", "--config", &config]);
    assert!(!out.status.success());
    assert!(stderr(&out).contains("--config is for --format slurm (Slurm's files), not pai"), "{}", stderr(&out));
}
