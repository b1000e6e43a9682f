//! A clean stop, and what a restart or a submission may not change: SIGTERM stops the
//! coordinator and the agents by their clean paths; a restart giving other settings than the
//! state directory keeps is refused, naming each; a job that can never run, a queue without
//! queues and a utilisation that is no percentage are refused. Processes of the `schedlab`
//! binary on loopback (tests/common/live.rs).

mod common;

use common::live::{Session, run_bounded, wait_for};
use live::net::client::CallError;
use serde_json::{Value, json};

fn job(name: &str, command: &str) -> Value {
    json!({ "name": name, "tasks": [{ "name": "0", "command": command }] })
}

#[test]
fn sigterm_stops_agent_and_coordinator_cleanly_and_the_journal_replays() {
    // The trace journal would be written once, then not for an hour: what STATE/journal holds
    // at the end is what the clean stop wrote. 500 missed beats: the node is not declared dead
    // while the test runs on after its agent stopped.
    let args = ["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "500", "--journal-every-s", "3600"];
    let mut s = Session::start("stop", &args);
    let agent = s.agent("n0", 1);
    s.wait_agents(1);
    for name in ["a", "b", "c"] {
        s.submit(job(name, "sleep 0.1")).unwrap();
    }
    s.submit(job("long", "sleep 60")).unwrap();
    wait_for(60, "`long` to run", || (s.task("long")["status"] == "running").then_some(()));
    s.procs.signal(agent, "TERM");
    let status = s.procs.wait(agent, 30).expect("the agent exits after SIGTERM");
    assert!(status.success(), "{status:?}");
    let agent_log = std::fs::read_to_string(s.dir.join("agent-n0.log")).unwrap();
    assert!(agent_log.contains("stopping (SIGTERM)"), "{agent_log}");
    assert!(agent_log.contains("(stopped)"), "its task was stopped: {agent_log}");
    let _: Value = s.client().post("/v1/jobs/long/cancel", &Value::Null).unwrap();
    s.wait_jobs_ended(60);
    let (live, digest) = s.decisions();
    s.procs.signal(s.coordinator, "TERM");
    let status = s.procs.wait(s.coordinator, 30).expect("the coordinator exits after SIGTERM");
    assert!(status.success(), "{status:?}");
    let log = s.log();
    assert!(log.contains("stopping (SIGTERM): taking no new calls, writing the journal"), "{log}");
    assert!(log.trim_end().ends_with("stopped"), "{log}");
    let jobs = std::fs::read_to_string(s.state().join("journal/jobs.csv")).unwrap();
    for name in ["a", "b", "c", "long"] {
        assert!(jobs.lines().any(|l| l.starts_with(&format!("{name},"))), "{name} not in the journal:\n{jobs}");
    }
    let (replayed, replay_digest, _) = s.replay();
    assert_eq!(live, replayed);
    assert_eq!(digest, replay_digest);
}

#[test]
fn a_restart_with_other_settings_is_refused_naming_each_and_the_same_are_accepted() {
    let args = ["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"];
    let mut s = Session::start("settings", &args);
    s.procs.signal(s.coordinator, "TERM");
    assert!(s.procs.wait(s.coordinator, 30).is_some_and(|st| st.success()));
    let state = s.state();
    let base = ["live", "serve", "--state", state.to_str().unwrap(), "--listen", "127.0.0.1:0"];
    let changed = ["--policy", "srtf", "--heartbeat-s", "1", "--missed-beats", "9", "--max-retries", "7"];
    let (code, _, err) = run_bounded(&[&base[..], &changed[..]].concat(), 30);
    assert_eq!(code, Some(2), "{err}");
    for part in [
        "was created with --policy fifo (this start gives srtf), --heartbeat-s 0.2 (this start gives 1), ",
        "--missed-beats 3 (this start gives 9), --max-retries 3 (this start gives 7): a state directory keeps its settings",
    ] {
        assert!(err.contains(part), "{err}");
    }
    assert!(!err.contains("DriverConfig") && !err.contains('{'), "a struct dump: {err}");
    let (code, _, err) = run_bounded(&[&base[..], &["--cluster", "2x1:SIM"][..]].concat(), 30);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("--cluster 1x1:SIM (this start gives 2x1:SIM)"), "{err}");
    // The same settings, or none: it starts.
    for same in [&args[..], &[][..]] {
        let index = s.procs.spawn(&[&base[..], same].concat(), &s.dir.join("again.log"));
        wait_for(30, "the restarted coordinator to listen", || {
            std::fs::read_to_string(s.dir.join("again.log")).ok()?.contains("listening on").then_some(())
        });
        s.procs.signal(index, "TERM");
        assert!(s.procs.wait(index, 30).is_some_and(|st| st.success()));
        std::fs::remove_file(s.dir.join("again.log")).unwrap();
    }
}

#[test]
fn a_job_that_can_never_run_a_queue_without_queues_and_a_bad_utilisation_are_refused() {
    let mut s = Session::start("admission", &["--cluster", "1x2:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 2);
    s.wait_agents(1);
    let refused = |body: Value| match s.submit(body) {
        Err(CallError::Status(400, reason)) => reason,
        other => panic!("expected 400, got {other:?}"),
    };
    let big = json!({ "name": "big", "tasks": [{ "name": "0", "command": "true", "gpus": 3, "single_node": true }] });
    assert_eq!(
        refused(big),
        "job `big`: task `0` asks for 3 GPUs on one node; the largest node of an eligible pool (`SIM`) has 2: it can never run on this cluster"
    );
    let typed = json!({ "name": "h", "tasks": [{ "name": "0", "command": "true", "gpu_type": "H100" }] });
    assert!(refused(typed).contains("asks for GPU type `H100`, which the cluster does not have (it has SIM)"));
    let queued = json!({ "name": "q", "queue": "team", "tasks": [{ "name": "0", "command": "true" }] });
    assert!(refused(queued).starts_with("queue `team`: this coordinator has no queues"));
    let jobs: Value = s.client().get("/v1/jobs").unwrap();
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 0, "nothing refused was journaled: {jobs}");
    // An agent's utilisation reading must be a percentage.
    let gpu = json!({ "index": 0, "uuid": "GPU-n0-0", "name": "SIM", "memory_total_mib": 1, "memory_used_mib": 0,
                      "utilisation_pct": 4_294_967_295u64, "temperature_c": 30 });
    let n0 = s.agent_client("n0");
    let e = n0.post::<_, Value>("/v1/agents/heartbeat", &json!({ "name": "n0", "generation": 1, "gpus": [gpu] }));
    assert_eq!(
        e.unwrap_err(),
        CallError::Status(400, "GPU GPU-n0-0: utilisation_pct 4294967295 is not a percentage (0 to 100)".into())
    );
    let (metrics, _) = s.client().get_text("/metrics").unwrap();
    assert!(!metrics.contains("42949672"), "{metrics}");
}

/// `live serve` takes `simulate`'s run flags: a session with spares, passes, release latency
/// and whole nodes runs under them (no task on the spare node, every start at a pass), and
/// its live.json replays with them to the same decisions.
#[test]
fn a_session_runs_under_simulates_run_flags_and_replays_with_them() {
    let args = [
        "--cluster",
        "3x2:SIM",
        "--heartbeat-s",
        "0.2",
        "--spare-nodes",
        "1",
        "--pass-interval-s",
        "0.5",
        "--release-latency-s",
        "0.3",
        "--whole-nodes",
        "2",
    ];
    let mut s = Session::start("run-flags", &args);
    for n in 0..3 {
        s.agent(&format!("n{n}"), 2);
    }
    s.wait_agents(3);
    for name in ["a", "b", "c"] {
        let gang = json!({ "name": name, "tasks": [{ "name": "0", "command": "sleep 0.2", "gpus": 4 }] });
        s.submit(gang).unwrap();
    }
    s.wait_jobs_ended(60);
    let (live, digest) = s.decisions();
    let starts: Vec<&String> = live.iter().filter(|l| l.split(',').nth(1) == Some("start")).collect();
    assert_eq!(starts.len(), 3, "{live:?}");
    for start in &starts {
        let ms: u64 = start.split(',').next().unwrap().parse().unwrap();
        assert_eq!(ms % 500, 0, "a start between passes: {start}");
        // The spare node (one of 3x2) is out of reach: a 4-GPU gang takes both others whole.
        let gpus: Vec<&str> = start.split(',').nth(4).unwrap().split(' ').collect();
        assert_eq!(gpus.len(), 4, "{start}");
    }
    let used: std::collections::BTreeSet<&str> =
        starts.iter().flat_map(|l| l.split(',').nth(4).unwrap().split(' ')).collect();
    assert_eq!(used.len(), 4, "the gangs ran on the two nodes in service: {live:?}");
    let (replayed, replay_digest, settings) = s.replay();
    assert_eq!((live, digest), (replayed, replay_digest));
    let run = &settings["run"];
    assert_eq!((run["spare_nodes"].as_u64(), run["pass_interval_s"].as_f64()), (Some(1), Some(0.5)), "{run}");
    assert_eq!(run["release_latency_s"].as_f64(), Some(0.3), "{run}");
}

/// What a wall clock cannot honour is refused by name before anything is kept: the state
/// directory can then be started with settings that work.
#[test]
fn live_serve_refuses_by_name_what_a_wall_clock_cannot_honour() {
    let dir = common::live::fresh_dir("refused-settings");
    let state = dir.join("state");
    let base = ["live", "serve", "--state", state.to_str().unwrap(), "--listen", "127.0.0.1:0", "--cluster", "1x1:SIM"];
    let refused = ["--failures", "weibull:node_mtbf_h=10", "--horizon-days", "1", "--trace", "jobs.csv"];
    let (code, _, err) = run_bounded(&[&base[..], &refused[..]].concat(), 30);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("error: live serve cannot honour --trace: a live session's jobs are submitted"), "{err}");
    assert!(err.contains("; --failures: a live session's hardware fails for real"), "{err}");
    assert!(err.contains("; --horizon-days: a live session runs until it is stopped"), "{err}");
    let store = live::coordinator::store::Store::open(&state).unwrap();
    assert_eq!(store.config().unwrap(), None, "a refused start keeps no settings");
}
