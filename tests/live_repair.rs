//! Returning a GPU to service without restarting its agent (`POST /v1/gpus/{uuid}/return`,
//! `schedlab live return-gpu`), end to end: a coordinator and an agent as processes of the
//! `schedlab` binary on loopback, simulated GPUs whose injection file takes `xid DEV CODE`.
//! Every wait is a poll loop with a generous deadline; nothing asserts on a fixed sleep. The
//! session helpers are tests/common/live.rs's, shared with tests/live.rs.

mod common;

use common::live::{Session, append, wait_for};
use live::net::client::{CallError, Client};
use serde_json::{Value, json};
use std::time::Duration;

fn one_gpu(name: &str, command: &str) -> Value {
    json!({ "name": name, "tasks": [{ "name": "0", "command": command, "gpus": 1 }] })
}

#[test]
fn a_gpu_taken_out_by_an_xid_returned_with_the_cli_runs_a_waiting_task_and_the_session_replays() {
    let mut s = Session::start("repair-return", &["--cluster", "1x2:SIM", "--heartbeat-s", "0.2"]);
    let (_, inject) = s.agent_with_inject("n0", 2);
    s.wait_agents(1);
    // `long` outlasts the test (it is cancelled at the end), so the only way `waiting` can run
    // is on the GPU returned to service.
    s.submit(one_gpu("long", "sleep 120")).unwrap();
    let slot = wait_for(30, "`long` to run", || {
        let t = s.task("long");
        (t["status"] == "running").then(|| t["placed"][0]["slot"].as_u64().unwrap() as usize)
    });
    let uuid = format!("GPU-n0-{slot}");
    append(&inject, &format!("xid {slot} 79"));
    wait_for(30, "the GPU to be out and `long` to run again on the other", || {
        let t = s.task("long");
        let moved = t["status"] == "running" && t["attempt"] == 2 && t["placed"][0]["slot"] == 1 - slot as u64;
        (s.gpu(0, slot)["state"] == "out" && moved).then_some(())
    });
    // It writes the GPUs it was given, so the test sees the real process got the returned one.
    s.submit(one_gpu("waiting", "echo \"$CUDA_VISIBLE_DEVICES\"")).unwrap();
    wait_for(30, "`waiting` to be queued", || (s.task("waiting")["status"] == "ready").then_some(()));
    assert_eq!(s.gpu(0, slot)["state"], "out", "nothing brings the GPU back by itself");

    let (code, out, err) = s.return_gpu(&uuid);
    assert_eq!(code, Some(0), "{err}");
    // The policy runs in the batch that returns the GPU: the answer already names its new task.
    assert_eq!(
        out,
        format!("GPU {uuid} (node 0 slot {slot}, agent n0) is back in service: busy, running waiting/0 (job 1)\n")
    );
    assert!(s.log().contains(&format!("GPU {uuid} returned to service by the operator")), "{}", s.log());
    wait_for(30, "`waiting` to succeed", || (s.task("waiting")["status"] == "succeeded").then_some(()));
    let output = std::fs::read_to_string(s.dir.join("agent-n0/logs/waiting.0.1.log")).unwrap();
    assert_eq!(output.trim(), uuid);
    // The agent was never restarted: `long` kept its second attempt throughout.
    assert_eq!(s.task("long")["attempt"], 2);
    assert_eq!(s.gpu(0, slot)["state"], "free");

    let _: Value = s.client().post("/v1/jobs/long/cancel", &Value::Null).unwrap();
    s.wait_jobs_ended(60);
    let (live, digest) = s.decisions();
    assert!(live.iter().any(|l| l.contains(",fail,")), "{live:?}");
    let (replayed, sim_digest, _) = s.replay();
    let events = std::fs::read_to_string(s.trace().join("events.csv")).unwrap();
    assert_eq!((replayed, sim_digest), (live, digest), "the replay made other decisions");
    // The return is the failure's repair in the trace, as an agent's re-registration is.
    let row = events.lines().find(|l| l.contains(",gpu_fail,")).unwrap_or_else(|| panic!("{events}"));
    assert!(row.starts_with(char::is_numeric) && !row.ends_with(','), "no repair_s: {row}");
}

#[test]
fn returning_an_unknown_gpu_one_in_service_or_one_on_a_dead_node_is_refused_with_the_reason() {
    let mut s =
        Session::start("repair-refusals", &["--cluster", "2x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "3"]);
    // One at a time, so that n0 holds node 0 (agents take the first free node).
    let (n0, inject) = s.agent_with_inject("n0", 1);
    s.wait_agents(1);
    s.agent_with_inject("n1", 1);
    s.wait_agents(2);

    let (code, _, err) = s.return_gpu("GPU-nope");
    assert_eq!(code, Some(2));
    assert!(err.contains("404: no GPU `GPU-nope`"), "{err}");
    let (code, _, err) = s.return_gpu("GPU-n1-0");
    assert_eq!(code, Some(2));
    assert!(err.contains("409: GPU GPU-n1-0 is in service; nothing to return"), "{err}");
    let (code, _, err) = s.return_gpu("a/b");
    assert_eq!(code, Some(2));
    assert!(err.contains("`a/b` is not a GPU UUID"), "{err}");

    // The same token rule as every request, and only POST.
    let stranger = Client::new(&s.addr, "not-the-token", Duration::from_secs(20));
    let r = stranger.post::<_, Value>("/v1/gpus/GPU-n1-0/return", &Value::Null);
    assert!(matches!(r, Err(CallError::Status(401, _))), "{r:?}");
    let r = s.client().get::<Value>("/v1/gpus/GPU-n1-0/return");
    assert!(matches!(r, Err(CallError::Status(405, _))), "{r:?}");

    // Out, then its agent dies: the node must come back before the GPU can.
    append(&inject, "xid 0 79");
    wait_for(30, "GPU-n0-0 to be out", || (s.gpu(0, 0)["state"] == "out").then_some(()));
    s.procs.kill(n0);
    wait_for(30, "node 0 to be declared dead", || {
        let v: Value = s.client().get("/v1/cluster").ok()?;
        (v["nodes"][0]["state"] == "dead").then_some(())
    });
    let (code, _, err) = s.return_gpu("GPU-n0-0");
    assert_eq!(code, Some(2));
    assert!(
        err.contains(
            "409: GPU GPU-n0-0 is on node 0, whose agent `n0` is declared dead: the node must come back first"
        ),
        "{err}"
    );
    assert_eq!(s.gpu(0, 0)["state"], "out");
    let log = s.log();
    assert!(log.contains("/v1/gpus/GPU-n0-0/return: refused: GPU GPU-n0-0 is on node 0"), "{log}");
    assert!(!log.contains("returned to service"), "{log}");
}
