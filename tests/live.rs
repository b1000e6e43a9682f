//! Live mode end to end: a coordinator and agents as real processes of the `schedlab` binary
//! on loopback, simulated GPUs, real child processes (`sleep`). Every wait is a poll loop
//! with a generous deadline; nothing asserts on a fixed sleep.

mod common;

use common::live::{BIN, Session, SplitMix, append, wait_for};
use live::net::client::{CallError, Client, ClientTls};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

fn task(name: &str, command: &str, deps: &[&str]) -> Value {
    json!({ "name": name, "command": command, "gpus": 1, "depends_on": deps })
}

#[test]
fn a_live_session_replays_in_the_simulator_with_the_same_decisions() {
    let mut s = Session::start("replay", &["--cluster", "2x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "5"]);
    s.agent("n0", 1);
    s.agent("n1", 1);
    s.wait_agents(2);
    let env_check = "test \"$CUDA_VISIBLE_DEVICES\" = GPU-n0-0 -o \"$CUDA_VISIBLE_DEVICES\" = GPU-n1-0 && \
                     test \"$SCHEDLAB_JOB\" = one && test \"$SCHEDLAB_RANK\" = 0 && test \"$SCHEDLAB_WORLD_SIZE\" = 1 && \
                     test -d \"$SCHEDLAB_CHECKPOINT_DIR\" && sleep 0.2";
    s.submit(json!({ "name": "one", "tasks": [task("0", env_check, &[])] })).unwrap();
    s.submit(json!({ "name": "two", "tasks": [task("a", "sleep 0.2", &[]), task("b", "sleep 0.3", &[])] })).unwrap();
    s.submit(
        json!({ "name": "dag", "tasks": [task("prep", "sleep 0.2", &[]), task("train", "sleep 0.2", &["prep"])] }),
    )
    .unwrap();
    s.submit(json!({ "name": "three", "tasks": [task("0", "sleep 0.2", &[])] })).unwrap();
    let jobs = s.wait_jobs_ended(60);
    for j in jobs["jobs"].as_array().unwrap() {
        assert_eq!(j["state"], "succeeded", "{jobs:#}");
    }
    let dag = s.job("dag");
    assert_eq!(dag["tasks"][1]["exit_code"], 0);
    // The golden signals for a scraper, with the token, in Prometheus' text format.
    let (metrics, kind) = s.client().get_text("/metrics").unwrap();
    assert_eq!(kind, "text/plain; version=0.0.4; charset=utf-8");
    for line in [
        r#"schedlab_jobs{state="succeeded"} 4"#,
        r#"schedlab_decisions_total{kind="start"} 6"#,
        "schedlab_job_completion_seconds_count 4",
    ] {
        assert!(metrics.lines().any(|l| l == line), "no `{line}` in\n{metrics}");
    }
    let stranger = Client::new(&s.addr, "wrong", Duration::from_secs(20));
    assert_eq!(stranger.get_text("/metrics").unwrap_err(), CallError::Status(401, String::new()));
    let (live, live_digest) = s.decisions();
    let log: Value = s.client().get("/v1/decisions").unwrap();
    assert_eq!(log["policy"], "fifo", "the decision log names its policy");
    assert_eq!(live.iter().filter(|l| l.contains(",start,")).count(), 6, "{live:?}");
    let (replayed, sim_digest, settings) = s.replay();
    assert_eq!(live, replayed);
    assert_eq!(live_digest, sim_digest);
    // The stored command carries the session's settings, not simulate's defaults.
    let command = settings["replay"].as_str().unwrap();
    for flag in ["--policy fifo", "--heartbeat-s 0.2", "--missed-beats 5", "--max-retries 3", "--decisions"] {
        assert!(command.contains(flag), "{command} lacks {flag}");
    }
    // ... and is the command line of the RunSpec stored beside it.
    let spec: run::RunSpec = serde_json::from_value(settings["run"].clone()).expect("live.json's `run` is a RunSpec");
    assert_eq!((spec.heartbeat_s.to_string().as_str(), spec.missed_beats, spec.decisions), ("0.2", 5, true));
    let unquoted = command.replace("'\\''", "\0").replace('\'', "").replace('\0', "'");
    assert_eq!(unquoted, format!("schedlab {}", spec.simulate_words().join(" ")));
}

#[test]
fn a_session_with_a_failed_program_and_a_cancel_replays_to_the_same_decisions() {
    let mut s = Session::start("replay-cancel", &["--cluster", "2x1:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 1);
    s.agent("n1", 1);
    s.wait_agents(2);
    // `crash` exits 3 (failed for good, not retried); `long` is cancelled while it runs, and
    // `after` takes its GPU.
    s.submit(json!({ "name": "crash", "tasks": [task("0", "sleep 0.3; exit 3", &[])] })).unwrap();
    s.submit(json!({ "name": "long", "tasks": [task("0", "sleep 30", &[])] })).unwrap();
    wait_for(30, "long running", || (s.job("long")["state"] == "running").then_some(()));
    s.client().post::<_, Value>("/v1/jobs/long/cancel", &json!({})).unwrap();
    s.submit(json!({ "name": "after", "tasks": [task("0", "sleep 0.2", &[])] })).unwrap();
    let jobs = s.wait_jobs_ended(60);
    let states: Vec<&str> = jobs["jobs"].as_array().unwrap().iter().map(|j| j["state"].as_str().unwrap()).collect();
    assert_eq!(states, ["failed", "cancelled", "succeeded"], "{jobs:#}");
    let (live, live_digest) = s.decisions();
    // Decision lines are time,kind,job,task,gpus: crash (job 0) fails, long (job 1) is cancelled.
    assert!(live.iter().any(|l| l.contains(",fail,0,0,")), "{live:?}");
    assert!(live.iter().any(|l| l.contains(",cancel,1,,")), "{live:?}");
    let (replayed, sim_digest, _) = s.replay();
    assert_eq!(live, replayed);
    assert_eq!(live_digest, sim_digest);
}

#[test]
fn queues_with_quotas_cap_a_live_session_and_its_replay() {
    let queues = std::env::temp_dir().join(format!("schedlab-live-queues-{}.csv", std::process::id()));
    std::fs::write(&queues, "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\nteam,,1,,0,1,false\n")
        .unwrap();
    let args = ["--cluster", "1x2:SIM", "--heartbeat-s", "0.2", "--queues", queues.to_str().unwrap()];
    let mut s = Session::start("queues", &args);
    s.agent("n0", 2);
    s.wait_agents(1);
    // team may hold one GPU: `second` waits for `first` though the node has two.
    for name in ["first", "second"] {
        s.submit(json!({ "name": name, "queue": "team", "tasks": [task("0", "sleep 0.3", &[])] })).unwrap();
    }
    let err = s.submit(json!({ "name": "x", "queue": "nope", "tasks": [task("0", "true", &[])] })).unwrap_err();
    assert_eq!(err, CallError::Status(400, "queue `nope` is not one of this cluster's queues (team)".into()));
    s.wait_jobs_ended(60);
    let (live, live_digest) = s.decisions();
    let starts: Vec<&String> = live.iter().filter(|l| l.contains(",start,")).collect();
    assert_eq!(starts.len(), 2, "{live:?}");
    let finish_first = live.iter().position(|l| l.contains(",finish,0,")).expect("first finished");
    let start_second = live.iter().position(|l| l.contains(",start,1,")).expect("second started");
    assert!(start_second > finish_first, "second started within the quota only after first: {live:?}");
    let (replayed, sim_digest, _) = s.replay();
    assert_eq!(live, replayed);
    assert_eq!(live_digest, sim_digest);
    std::fs::remove_file(&queues).ok();
}

#[test]
fn shared_gpus_datasets_and_start_windows_run_live_and_replay() {
    let datasets = std::env::temp_dir().join(format!("schedlab-live-datasets-{}.csv", std::process::id()));
    std::fs::write(&datasets, "dataset,nodes,transfer_s\nimagenet,1,0.1\n").unwrap();
    let args = [
        "--cluster",
        "2x1:SIM",
        "--heartbeat-s",
        "0.2",
        "--policy",
        "fifo[placement=local]",
        "--datasets",
        datasets.to_str().unwrap(),
    ];
    let mut s = Session::start("shares", &args);
    s.agent_with("n0", "sim:gpus=1,prefix=n0", &["--node", "0"]);
    s.agent_with("n1", "sim:gpus=1,prefix=n1", &["--node", "1"]);
    s.wait_agents(2);
    // a and b take half of GPU-n0-0 each and must run at the same time: each marks that it
    // runs and waits (at most 5 s) to see the other's mark.
    let marks = s.dir.join("marks");
    std::fs::create_dir_all(&marks).unwrap();
    let half = |name: &str| {
        let command = format!(
            "test \"$CUDA_VISIBLE_DEVICES\" = GPU-n0-0 && test \"$SCHEDLAB_GPU_MILLI\" = 500 && \
             test -z \"$SCHEDLAB_DATASET\" && touch '{m}/{name}' && \
             for i in $(seq 100); do test -e '{m}/a' && test -e '{m}/b' && exit 0; sleep 0.05; done; exit 1",
            m = marks.display()
        );
        json!({ "name": name, "command": command, "gpu_milli": 500 })
    };
    s.submit(json!({ "name": "shares", "deadline_s": 600, "tasks": [half("a"), half("b")] })).unwrap();
    // `data` reads imagenet, which node 1 holds: it runs there (the only place it may run
    // without paying the transfer, and the GPU there is free); `cleanup` runs once it ended.
    let reads = "test \"$CUDA_VISIBLE_DEVICES\" = GPU-n1-0 && test \"$SCHEDLAB_DATASET\" = imagenet && sleep 0.2";
    let data = json!({ "name": "0", "command": reads, "dataset": "imagenet", "speeds": "SIM=1.5" });
    let cleanup = json!({ "name": "cleanup", "command": "true", "depends_on": ["0:any"] });
    s.submit(json!({ "name": "data", "tasks": [data, cleanup] })).unwrap();
    let refused = s.submit(json!({ "name": "x", "tasks": [{ "name": "0", "command": "true", "dataset": "c4" }] }));
    assert_eq!(
        refused.unwrap_err(),
        CallError::Status(400, "task `0`: dataset `c4` is not one of this cluster's datasets (imagenet)".into())
    );
    // `later` may start no earlier than 1 s after its submission.
    let later = json!({ "name": "0", "command": "sleep 0.1", "not_before_s": 1, "checkpoint_s": 30 });
    s.submit(json!({ "name": "later", "tasks": [later] })).unwrap();
    let jobs = s.wait_jobs_ended(60);
    for j in jobs["jobs"].as_array().unwrap() {
        assert_eq!(j["state"], "succeeded", "{jobs:#}");
    }
    let (live, live_digest) = s.decisions();
    let starts: Vec<&String> = live.iter().filter(|l| l.contains(",start,")).collect();
    assert_eq!(starts.len(), 5, "{live:?}");
    // The journal's trace holds every field, and the simulator makes the same decisions from it.
    let (replayed, sim_digest, _) = s.replay();
    let jobs_csv = std::fs::read_to_string(s.trace().join("jobs.csv")).unwrap();
    for field in ["gpu_milli", "deadline_s", "not_before_s", "dataset", "speeds", "checkpoint_s"] {
        assert!(jobs_csv.lines().next().unwrap().split(',').any(|c| c == field), "jobs.csv lacks {field}: {jobs_csv}");
    }
    assert!(s.trace().join("datasets.csv").exists());
    assert_eq!(live, replayed);
    assert_eq!(live_digest, sim_digest);
    std::fs::remove_file(&datasets).ok();
}

#[test]
fn bad_requests_are_refused_with_reasons() {
    let mut s = Session::start("refuse", &["--cluster", "2x1:SIM", "--heartbeat-s", "0.2"]);
    // The token file is the owner's only.
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(s.state().join("token")).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600);
    // No token, or a wrong one: 401 and nothing else.
    for token in ["", "wrong-token-wrong-token-wrong-token-0000"] {
        let c = Client::new(&s.addr, token, Duration::from_secs(10));
        assert_eq!(c.get::<Value>("/v1/jobs").unwrap_err(), CallError::Status(401, String::new()));
        assert_eq!(c.get::<Value>("/v1/nonexistent").unwrap_err(), CallError::Status(401, String::new()));
    }
    let c = s.client();
    let err = |r: Result<Value, CallError>| match r {
        Err(CallError::Status(code, reason)) => (code, reason),
        other => panic!("expected a refusal, got {other:?}"),
    };
    let (code, reason) = err(c.post("/v1/jobs", &json!({ "name": "x" })));
    assert_eq!(code, 400);
    assert!(reason.contains("missing field `tasks`"), "{reason}");
    let (code, reason) = err(c.post("/v1/jobs", &json!({ "name": "x", "tasks": [], "colour": 1 })));
    assert_eq!((code, reason.contains("unknown field `colour`")), (400, true), "{reason}");
    let cyclic = json!({ "name": "c", "tasks": [task("a", "true", &["c"]), task("b", "true", &["a"]), task("c", "true", &["b"])] });
    let (code, reason) = err(c.post("/v1/jobs", &cyclic));
    assert_eq!(code, 400);
    assert!(reason.contains("its tasks' dependencies form a cycle: a -> b -> c -> a"), "{reason}");
    let (code, _) = err(c.get("/v1/jobs/nope"));
    assert_eq!(code, 404);
    c.post::<_, Value>("/v1/jobs", &json!({ "name": "ok", "tasks": [task("0", "true", &[])] })).unwrap();
    let (code, reason) = err(c.post("/v1/jobs", &json!({ "name": "ok", "tasks": [task("0", "true", &[])] })));
    assert_eq!((code, reason.contains("already submitted")), (409, true));
    // Agents: a GPU held by another agent, and a health report for a GPU that is not its own.
    s.agent("n0", 1);
    s.wait_agents(1);
    let gpu = json!({ "index": 0, "uuid": "GPU-n0-0", "name": "SIM", "memory_total_mib": 1, "memory_used_mib": 0,
                      "utilisation_pct": 0, "temperature_c": 30 });
    let thief = s.agent_client("thief");
    let (code, reason) =
        err(thief.post("/v1/agents/register", &json!({ "name": "thief", "addr": "x", "gpus": [gpu] })));
    assert_eq!(code, 409);
    assert!(reason.contains("GPU GPU-n0-0 is held by agent `n0`"), "{reason}");
    let (code, reason) = err(s.agent_client("n0").post(
        "/v1/agents/heartbeat",
        &json!({ "name": "n0", "generation": 1, "health": [{ "kind": "xid", "uuid": "GPU-elsewhere", "code": 79 }] }),
    ));
    assert_eq!(code, 409);
    assert!(reason.contains("unknown GPU GPU-elsewhere"), "{reason}");
    let (code, _) = err(s.agent_client("ghost").post("/v1/agents/heartbeat", &json!({ "name": "ghost" })));
    assert_eq!(code, 404);
    // Both refusals are logged.
    let log = std::fs::read_to_string(s.dir.join("coordinator.log")).unwrap();
    assert!(log.contains("REFUSED thief") && log.contains("REFUSED n0"), "{log}");
}

#[test]
fn a_killed_agent_is_declared_dead_and_its_task_reruns_elsewhere() {
    let mut s = Session::start("nodes", &["--cluster", "3x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "3"]);
    let agents: Vec<usize> = ["n0", "n1", "n2"].iter().map(|n| s.agent(n, 1)).collect();
    let agent_names = ["n0", "n1", "n2"];
    s.wait_agents(3);
    s.submit(json!({ "name": "long", "tasks": [task("0", "sleep 3", &[])] })).unwrap();
    s.submit(json!({ "name": "short", "tasks": [task("0", "sleep 0.3", &[])] })).unwrap();
    let placed = wait_for(30, "job `long` to run", || {
        let j = s.job("long");
        (j["tasks"][0]["status"] == "running").then(|| j["tasks"][0]["placed"][0]["node"].as_u64().unwrap())
    });
    // Kill the agent running `long` (its task dies with it).
    let cluster: Value = s.client().get("/v1/cluster").unwrap();
    let holder = cluster["nodes"][placed as usize]["agent"].as_str().unwrap().to_string();
    let index = agent_names.iter().position(|n| *n == holder).unwrap();
    s.procs.kill(agents[index]);
    let rerun = wait_for(30, "job `long` to rerun on another node", || {
        let j = s.job("long");
        let t = &j["tasks"][0];
        (t["status"] == "running" && t["attempt"] == 2).then(|| t["placed"][0]["node"].as_u64().unwrap())
    });
    assert_ne!(rerun, placed);
    let cluster: Value = s.client().get("/v1/cluster").unwrap();
    assert_eq!(cluster["nodes"][placed as usize]["state"], "dead");
    let jobs = s.wait_jobs_ended(60);
    for j in jobs["jobs"].as_array().unwrap() {
        assert_eq!(j["state"], "succeeded", "{jobs:#}");
    }
    let (live, digest) = s.decisions();
    assert!(live.iter().any(|l| l.contains(",fail,")), "{live:?}");
    let (replayed, sim_digest, _) = s.replay();
    assert_eq!((replayed, sim_digest), (live, digest), "the replay made other decisions");
}

#[test]
fn a_restarted_agent_loses_its_tasks_which_run_again_as_new_attempts() {
    // Missed beats far beyond the restart: the node is never declared dead.
    let mut s = Session::start("restart", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "20"]);
    let agent = s.agent("n0", 1);
    s.wait_agents(1);
    let marks = s.dir.join("attempts.txt");
    let command = format!(
        "echo \"start $SCHEDLAB_ATTEMPT\" >> {0}; sleep 1.5; echo \"end $SCHEDLAB_ATTEMPT\" >> {0}",
        marks.display()
    );
    s.submit(json!({ "name": "long", "tasks": [task("0", &command, &[])] })).unwrap();
    wait_for(30, "attempt 1 to start", || std::fs::read_to_string(&marks).ok().filter(|t| t.contains("start 1")));
    s.procs.kill(agent);
    s.agent("n0", 1);
    let jobs = s.wait_jobs_ended(60);
    assert_eq!(jobs["jobs"][0]["state"], "succeeded", "{jobs:#}");
    assert_eq!(s.job("long")["tasks"][0]["attempt"], 2);
    let text = std::fs::read_to_string(&marks).unwrap();
    assert_eq!(text, "start 1\nstart 2\nend 2\n", "attempt 1 died with its agent and never ran again");
    let (live, digest) = s.decisions();
    assert!(live.iter().any(|l| l.contains(",fail,")), "{live:?}");
    let (replayed, sim_digest, _) = s.replay();
    assert_eq!((replayed, sim_digest), (live, digest), "the replay made other decisions");
}

#[test]
fn kill_9_of_the_coordinator_loses_no_job_and_starts_no_task_twice() {
    let seed: u64 = std::env::var("SCHEDLAB_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or(6);
    let mut rng = SplitMix(seed);
    // Missed beats far beyond a restart's gap: no node is declared dead, so every task runs once.
    let args = ["--cluster", "2x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "50"];
    let mut s = Session::start("crash", &args);
    let listen = s.addr.clone();
    s.agent("n0", 1);
    s.agent("n1", 1);
    s.wait_agents(2);
    let runs = s.dir.join("runs.txt");
    // A submitter thread submits all along; a submission whose answer was lost to a kill is
    // sent again until it gets one (201, or 409: it had been committed).
    let stop = Arc::new(AtomicBool::new(false));
    let submitter = {
        let (client, stop, runs) = (s.client(), stop.clone(), runs.clone());
        let mut rng = SplitMix(seed + 1);
        std::thread::spawn(move || {
            let mut acknowledged = Vec::new();
            let mut next = 0;
            while !stop.load(Ordering::Relaxed) {
                let name = format!("j{next}");
                let command = format!("echo \"$SCHEDLAB_JOB $SCHEDLAB_ATTEMPT\" >> {}; sleep 0.1", runs.display());
                let job = json!({ "name": name, "tasks": [task("0", &command, &[])] });
                let deadline = Instant::now() + Duration::from_secs(60);
                loop {
                    match client.post::<_, Value>("/v1/jobs", &job) {
                        Ok(_) | Err(CallError::Status(409, _)) => break,
                        Err(e) => {
                            assert!(Instant::now() < deadline, "submit {name}: {e}");
                            std::thread::sleep(Duration::from_millis(50));
                        }
                    }
                }
                acknowledged.push(name);
                next += 1;
                std::thread::sleep(Duration::from_millis(rng.below(40)));
            }
            acknowledged
        })
    };
    for _ in 0..6 {
        std::thread::sleep(Duration::from_millis(100 + rng.below(800)));
        s.procs.kill(s.coordinator);
        s.spawn_coordinator(&listen, &args);
        wait_for(30, "the coordinator to come back", || s.client().get::<Value>("/v1/jobs").ok());
    }
    stop.store(true, Ordering::Relaxed);
    let acknowledged = submitter.join().expect("the submitter");
    assert!(acknowledged.len() >= 6, "seed {seed}: only {} jobs submitted", acknowledged.len());
    let jobs = s.wait_jobs_ended(60);
    let names: Vec<&str> = jobs["jobs"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap()).collect();
    assert_eq!(names, acknowledged.iter().map(String::as_str).collect::<Vec<_>>(), "seed {seed}: a job was lost");
    for j in jobs["jobs"].as_array().unwrap() {
        assert_eq!(j["state"], "succeeded", "seed {seed}: {j}");
    }
    let text = std::fs::read_to_string(&runs).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort_unstable();
    let mut expected: Vec<String> = acknowledged.iter().map(|n| format!("{n} 1")).collect();
    expected.sort_unstable();
    assert_eq!(lines, expected, "seed {seed}: each task must run exactly once");
}

#[test]
fn a_preempted_task_is_stopped_term_then_kill_and_resumes_later() {
    let args = ["--cluster", "1x1:SIM", "--policy", "srtf[duration=estimate]", "--heartbeat-s", "0.2"];
    let mut s = Session::start("preempt", &args);
    s.agent("n0", 1);
    s.wait_agents(1);
    // The long task ignores SIGTERM: it is killed after the 1 s grace.
    let marks = s.dir.join("attempts.txt");
    let long = format!(
        "echo \"start $SCHEDLAB_ATTEMPT\" >> {0}; trap '' TERM; sleep 1.5; echo \"end $SCHEDLAB_ATTEMPT\" >> {0}",
        marks.display()
    );
    let job = |name: &str, command: &str, estimate: f64| json!({ "name": name, "tasks": [{ "name": "0", "command": command, "estimate_s": estimate }] });
    s.submit(job("long", &long, 100.0)).unwrap();
    wait_for(30, "`long` to run", || (s.job("long")["tasks"][0]["status"] == "running").then_some(()));
    // Let its process start, then a shorter job preempts it.
    wait_for(30, "`long`'s process", || std::fs::read_to_string(&marks).ok().filter(|t| t.contains("start 1")));
    s.submit(job("short", "sleep 0.2", 0.5)).unwrap();
    let jobs = s.wait_jobs_ended(60);
    for j in jobs["jobs"].as_array().unwrap() {
        assert_eq!(j["state"], "succeeded", "{jobs:#}");
    }
    assert_eq!(s.job("long")["tasks"][0]["attempt"], 2);
    // Attempt 1 never ended by itself: it was killed; attempt 2 ran to the end.
    let text = std::fs::read_to_string(&marks).unwrap();
    assert_eq!(text, "start 1\nstart 2\nend 2\n");
    let log = std::fs::read_to_string(s.dir.join("agent-n0.log")).unwrap();
    assert!(
        log.contains("stopping task 0 attempt 1 (SIGTERM)") && log.contains("task 0 attempt 1 exited 137 (stopped)"),
        "{log}"
    );
    let (live, digest) = s.decisions();
    assert!(live.iter().any(|l| l.contains(",preempt,")), "{live:?}");
    let (replayed, sim_digest, _) = s.replay();
    assert_eq!((replayed, sim_digest), (live, digest), "the replay made other decisions");
}

/// Builds the fake libnvidia-ml (tests in live/ test it on its own) into `dir`.
fn fake_nvml(dir: &Path, control: &str) -> (PathBuf, PathBuf) {
    let so = dir.join("libnvidia-ml.so.1");
    let source = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("live/tests/fake_nvml/fake_nvml.c");
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_string());
    let out = Command::new(&cc)
        .args(["-shared", "-fPIC", "-O1", "-o"])
        .arg(&so)
        .arg(&source)
        .arg("-lpthread")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let ctl = PathBuf::from(format!("{}.ctl", so.display()));
    std::fs::write(&ctl, control).unwrap();
    (so, ctl)
}

#[test]
fn an_xid_error_takes_the_gpu_out_the_task_reruns_elsewhere_and_a_restarted_agent_brings_it_back() {
    let mut s = Session::start("xid", &["--cluster", "2x1:SIM", "--heartbeat-s", "0.2"]);
    // Node 0: the real NVML backend on the fake library; node 1: the simulated backend.
    let (so, ctl) = fake_nvml(&s.dir, "devices 1\n");
    let inject = s.dir.join("inject-n1.txt");
    std::fs::write(&inject, "").unwrap();
    let agents = [
        ("n0", "0", format!("nvml:{}", so.display())),
        ("n1", "1", format!("sim:gpus=1,prefix=n1,inject={}", inject.display())),
    ];
    let spawn =
        |s: &mut Session, (name, node, backend): &(&str, &str, String)| s.agent_with(name, backend, &["--node", node]);
    let procs: Vec<usize> = agents.iter().map(|a| spawn(&mut s, a)).collect();
    s.wait_agents(2);
    let cluster: Value = s.client().get("/v1/cluster").unwrap();
    assert_eq!(cluster["nodes"][0]["gpus"][0]["uuid"], "GPU-fa4e0000-0000-4000-8000-000000000000");
    assert_eq!(cluster["nodes"][0]["gpus"][0]["name"], "Fake NVIDIA A100-SXM4-40GB");
    // NVML's compute processes reach the cluster view.
    std::fs::write(&ctl, "devices 1\nproc 0 4242 100\n").unwrap();
    wait_for(30, "the process on node 0's GPU", || {
        let cluster: Value = s.client().get("/v1/cluster").ok()?;
        (cluster["nodes"][0]["gpus"][0]["processes"][0]["pid"] == 4242).then_some(())
    });
    s.submit(json!({ "name": "long", "tasks": [task("0", "sleep 3", &[])] })).unwrap();
    let node = wait_for(30, "`long` to run", || {
        let t = s.job("long")["tasks"][0].clone();
        (t["status"] == "running").then(|| t["placed"][0]["node"].as_u64().unwrap())
    });
    append(if node == 0 { &ctl } else { &inject }, "xid 0 79");
    let rerun = wait_for(30, "`long` to rerun on the other node", || {
        let t = s.job("long")["tasks"][0].clone();
        (t["status"] == "running" && t["attempt"] == 2).then(|| t["placed"][0]["node"].as_u64().unwrap())
    });
    assert_eq!(rerun, 1 - node);
    let cluster: Value = s.client().get("/v1/cluster").unwrap();
    assert_eq!(cluster["nodes"][node as usize]["gpus"][0]["state"], "out");
    let log = std::fs::read_to_string(s.dir.join("coordinator.log")).unwrap();
    assert!(log.contains("XID 79 on GPU-"), "{log}");
    // The node's agent restarts (its injected error consumed): the GPU is back in service.
    s.procs.kill(procs[node as usize]);
    std::fs::write(&inject, "").unwrap();
    spawn(&mut s, &agents[node as usize]);
    wait_for(30, "the GPU to return", || {
        let cluster: Value = s.client().get("/v1/cluster").ok()?;
        (cluster["nodes"][node as usize]["gpus"][0]["state"] != "out").then_some(())
    });
    s.wait_jobs_ended(60);
    let (live, digest) = s.decisions();
    assert!(live.iter().any(|l| l.contains(",fail,")), "{live:?}");
    let (replayed, sim_digest, _) = s.replay();
    assert_eq!((replayed, sim_digest), (live, digest), "the replay made other decisions");
}

#[test]
fn the_command_line_clients_submit_show_and_cancel() {
    let mut s = Session::start("cli", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 1);
    s.wait_agents(1);
    let token = s.state().join("token");
    let cli = |args: &[&str]| {
        let out = Command::new(BIN)
            .args(["live"])
            .args(&args[..1])
            .args(["--coordinator", &s.addr, "--token-file", token.to_str().unwrap()])
            .args(&args[1..])
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, out, err) = cli(&["submit", "--name", "sleeper", "--", "sleep", "30"]);
    assert_eq!((code, out.as_str()), (Some(0), "submitted job 0 `sleeper`\n"), "{err}");
    let file = s.dir.join("dag.json");
    let dag = json!({ "name": "dag", "tasks": [task("a", "true", &[]), task("b", "true", &["a"])] });
    std::fs::write(&file, dag.to_string()).unwrap();
    let (code, out, _) = cli(&["submit", "--file", file.to_str().unwrap()]);
    assert_eq!((code, out.as_str()), (Some(0), "submitted job 1 `dag`\n"));
    let cyclic = json!({ "name": "cyc", "tasks": [task("a", "true", &["b"]), task("b", "true", &["a"])] });
    std::fs::write(&file, cyclic.to_string()).unwrap();
    let (code, _, err) = cli(&["submit", "--file", file.to_str().unwrap()]);
    assert_eq!(code, Some(2));
    assert!(err.contains("400: job `cyc`: its tasks' dependencies form a cycle: a -> b -> a"), "{err}");
    wait_for(30, "`sleeper` to run", || {
        cli(&["status", "sleeper"]).1.contains("task 0 running attempt 1").then_some(())
    });
    let (_, out, _) = cli(&["status"]);
    assert!(
        out.contains("sleeper") && out.contains("running") && out.contains("dag") && out.contains("waiting"),
        "{out}"
    );
    let (_, out, _) = cli(&["status", "--cluster"]);
    assert!(
        out.contains("node 0 (SIM) alive agent n0") && out.contains("GPU-n0-0 SIM busy sleeper/0 (job 0)"),
        "{out}"
    );
    let (code, out, _) = cli(&["cancel", "sleeper"]);
    assert_eq!((code, out.as_str()), (Some(0), "job 0 `sleeper`: cancelled\n"));
    let (code, _, err) = cli(&["cancel", "sleeper"]);
    assert_eq!(code, Some(2));
    assert!(err.contains("409: job `sleeper` has already ended (cancelled)"), "{err}");
    s.wait_jobs_ended(60);
    let (_, out, _) = cli(&["status", "dag"]);
    assert!(out.contains("job 1 `dag` succeeded") && out.contains("task b succeeded attempt 1 exit 0"), "{out}");
    let (_, out, _) = cli(&["status", "--decisions"]);
    assert!(out.contains("cancel") && out.contains("cancelled by the user") && out.contains("digest "), "{out}");
    assert!(!out.contains("reject"), "a cancel is no policy's refusal: {out}");
    std::fs::write(s.dir.join("bad-token"), "x".repeat(64)).unwrap();
    let out = Command::new(BIN)
        .args(["live", "status", "--coordinator", &s.addr, "--token-file"])
        .arg(s.dir.join("bad-token"))
        .output()
        .unwrap();
    assert!(String::from_utf8_lossy(&out.stderr).contains("401 unauthorised"));
}

#[test]
fn over_tls_agents_and_clients_trust_the_coordinators_own_certificate() {
    let mut s = Session::start("tls", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--tls"]);
    assert!(s.addr.starts_with("https://127.0.0.1:"), "{}", s.addr);
    s.agent("n0", 1); // with --ca-file STATE/tls-cert.pem
    s.wait_agents(1);
    let (token, ca) = (s.state().join("token"), s.ca.clone().unwrap());
    let cli = |args: &[&str], ca: Option<&Path>| {
        let mut all = vec![args[0], args[1], "--coordinator", &s.addr, "--token-file", token.to_str().unwrap()];
        all.extend(ca.iter().flat_map(|ca| ["--ca-file", ca.to_str().unwrap()]));
        all.extend_from_slice(&args[2..]);
        Command::new(BIN).args(&all).output().unwrap()
    };
    let submitted = cli(&["live", "submit", "--name", "hello", "--", "sleep 0.2"], Some(&ca));
    assert!(submitted.status.success(), "{}", String::from_utf8_lossy(&submitted.stderr));
    assert_eq!(String::from_utf8_lossy(&submitted.stdout), "submitted job 0 `hello`\n");
    let jobs = s.wait_jobs_ended(60);
    assert_eq!(jobs["jobs"][0]["state"], "succeeded", "{jobs:#}");
    // A client that does not trust the certificate sends nothing (its token included).
    let untrusting = cli(&["live", "status"], None);
    assert!(!untrusting.status.success());
    let why = String::from_utf8_lossy(&untrusting.stderr);
    assert!(why.contains("coordinator unreachable") && why.to_lowercase().contains("certificate"), "{why}");
    // Plain HTTP to the TLS port gets no answer.
    let plain = Client::new(&s.addr.replace("https://", "http://"), &s.token(), Duration::from_secs(10));
    assert!(matches!(plain.get::<Value>("/v1/jobs"), Err(CallError::Unreachable(_))));
    use std::os::unix::fs::PermissionsExt;
    let key_mode = std::fs::metadata(s.state().join("tls-key.pem")).unwrap().permissions().mode();
    assert_eq!(key_mode & 0o777, 0o600);
    let (live, live_digest) = s.decisions();
    let (replayed, sim_digest, _) = s.replay();
    assert_eq!((live, live_digest), (replayed, sim_digest));
}

#[test]
fn with_mutual_tls_only_agents_and_clients_showing_an_issued_certificate_get_in() {
    // A client CA and a certificate for the agent n0, made by `live issue-cert`.
    let pki = common::live::fresh_dir("mtls-pki");
    let issue = |name: &str| {
        let args =
            ["live", "issue-cert", "--state", pki.to_str().unwrap(), "--name", name, "--out", pki.to_str().unwrap()];
        let out = Command::new(BIN).args(args).output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        (pki.join(format!("{name}-cert.pem")), pki.join(format!("{name}-key.pem")))
    };
    let n0 = issue("n0");
    let ca = pki.join("client-ca.pem");
    let args = ["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--tls", "--tls-client-ca", ca.to_str().unwrap()];
    let mut s = Session::start("mtls", &args);
    s.identity = Some(n0);
    s.agent("n0", 1);
    s.wait_agents(1);
    s.submit(json!({ "name": "hello", "tasks": [task("0", "sleep 0.1", &[])] })).unwrap();
    assert_eq!(s.wait_jobs_ended(60)["jobs"][0]["state"], "succeeded");
    // With the token and the server's certificate trusted, but no client certificate: the
    // connection ends in the handshake.
    let token = s.state().join("token");
    let status = |extra: &[&str]| {
        let base = ["live", "status", "--coordinator", &s.addr, "--token-file", token.to_str().unwrap()];
        let ca = ["--ca-file", s.ca.as_ref().unwrap().to_str().unwrap()];
        Command::new(BIN).args(base).args(ca).args(extra).output().unwrap()
    };
    let without = status(&[]);
    assert!(!without.status.success());
    assert!(String::from_utf8_lossy(&without.stderr).contains("coordinator unreachable"));
    let user = issue("alice");
    let with = status(&["--client-cert", user.0.to_str().unwrap(), "--client-key", user.1.to_str().unwrap()]);
    assert!(with.status.success(), "{}", String::from_utf8_lossy(&with.stderr));
    assert!(String::from_utf8_lossy(&with.stdout).contains("hello"));
    // A user's certificate (or another agent's) cannot act as an agent and be given its tasks:
    // not with the user token (the role is refused first), nor with the agent's own token.
    let tls = ClientTls { ca_file: s.ca.clone(), identity: Some(user) };
    let alice = Client::with_tls(&s.addr, &s.token(), Duration::from_secs(20), &tls).unwrap();
    let n0_token = live::net::auth::agent_token(&s.state(), "n0").unwrap();
    let mallory = Client::with_tls(&s.addr, &n0_token, Duration::from_secs(20), &tls).unwrap();
    for (path, body) in [
        ("/v1/agents/register", json!({ "name": "n0", "addr": "127.0.0.1", "gpus": [] })),
        ("/v1/agents/heartbeat", json!({ "name": "n0", "generation": 0 })),
    ] {
        let refused = alice.post::<_, Value>(path, &body).unwrap_err();
        let reason = format!(
            "{path}: a user token cannot act as an agent (an agent has a token of its own: schedlab live issue-token --agent NAME)"
        );
        assert_eq!(refused, CallError::Status(403, reason));
        let refused = mallory.post::<_, Value>(path, &body).unwrap_err();
        let reason = format!(
            "{path}: the client certificate is not for agent `n0` (under mutual TLS an agent shows one issued for its name: live issue-cert --name n0)"
        );
        assert_eq!(refused, CallError::Status(403, reason));
    }
    assert!(matches!(alice.get::<Value>("/v1/agents/n0/assignments"), Err(CallError::Status(403, _))));
    let cluster: Value = s.client().get("/v1/cluster").unwrap();
    assert_eq!(cluster["nodes"][0]["agent"], "n0", "the node is still n0's: {cluster}");
}
