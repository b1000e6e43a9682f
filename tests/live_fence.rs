//! Fencing: every coordinator start is a new generation, which agents learn when they register
//! and send with every report. A report for another generation is refused (409), and the agent
//! registers again; an agent acts on no answer of a coordinator that is not the one it
//! registered with. Processes of the `schedlab` binary on loopback (tests/common/live.rs), and
//! a fake coordinator played by the test.

mod common;

use common::fake_coordinator::{fake_agent, fake_coordinator, touching};
use common::live::{Procs, Session, fresh_dir, wait_for};
use live::net::client::CallError;
use serde_json::{Value, json};
use std::sync::atomic::Ordering;

#[test]
fn after_a_coordinator_restart_a_report_of_the_old_generation_is_refused_and_the_agent_registers_again() {
    let args = ["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "50"];
    let mut s = Session::start("fence-restart", &args);
    let listen = s.addr.clone();
    s.agent("n0", 1);
    s.wait_agents(1);
    assert!(s.log().contains("(generation 1,"), "{}", s.log());
    s.procs.kill(s.coordinator);
    s.spawn_coordinator(&listen, &args);
    wait_for(30, "the coordinator to come back", || s.client().get::<Value>("/v1/jobs").ok());
    assert!(s.log().contains("(generation 2,"), "{}", s.log());
    let agent_log = || std::fs::read_to_string(s.dir.join("agent-n0.log")).unwrap();
    wait_for(30, "the agent to register with generation 2", || {
        agent_log().contains("coordinator generation 2)").then_some(())
    });
    assert!(agent_log().contains("stale coordinator generation"), "{}", agent_log());
    // A report made for generation 1 (an exit of a task that is not running) is refused.
    let beat = json!({ "name": "n0", "generation": 1, "exits": [{ "task": 0, "attempt": 1, "code": 0 }] });
    let agent = s.agent_client("n0");
    match agent.post::<_, Value>("/v1/agents/heartbeat", &beat) {
        Err(CallError::Status(409, reason)) => assert!(
            reason
                .starts_with("stale coordinator generation: it is for generation 1, this coordinator is generation 2"),
            "{reason}"
        ),
        other => panic!("a report of generation 1 was not refused: {other:?}"),
    }
    // As is one for a generation to come, and a request for assignments without the current one.
    let ahead = json!({ "name": "n0", "generation": 3 });
    let e = agent.post::<_, Value>("/v1/agents/heartbeat", &ahead).unwrap_err();
    assert!(matches!(&e, CallError::Status(409, r) if r.contains("this coordinator is not the current one")), "{e}");
    let e = agent.get::<Value>("/v1/agents/n0/assignments?generation=1").unwrap_err();
    assert!(matches!(&e, CallError::Status(409, _)), "{e}");
    let now: Value = agent.get("/v1/agents/n0/assignments?generation=2").unwrap();
    assert_eq!(now["generation"], 2);
    // And the agent, registered again, runs what it is given.
    s.submit(json!({ "name": "after", "tasks": [{ "name": "0", "command": "true" }] })).unwrap();
    s.wait_jobs_ended(60);
    assert_eq!(s.job("after")["state"], "succeeded");
}

#[test]
fn an_agent_acts_on_no_answer_of_a_coordinator_of_another_generation() {
    // Registered with generation 2, answered by generation 1 (a coordinator that is not the
    // current one): the task it assigns never runs, and the agent keeps registering again.
    let dir = fresh_dir("fence-stale");
    let marker = dir.join("ran");
    let (addr, seen) = fake_coordinator(2, 1, touching("j", "t", &marker));
    let mut procs = Procs::default();
    fake_agent(&mut procs, &dir, &addr);
    wait_for(60, "five heartbeats", || (seen.heartbeats.load(Ordering::SeqCst) >= 5).then_some(()));
    assert!(!marker.exists(), "the agent ran an assignment of a coordinator of another generation");
    assert!(seen.registrations.load(Ordering::SeqCst) >= 2, "it registers again after a stale answer");
    assert!(seen.generations.lock().unwrap().iter().all(|&g| g == 2), "every report carries its generation");
    let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
    assert!(log.contains("ignored a heartbeat answer of coordinator generation 1 (registered with 2)"), "{log}");
    drop(procs);

    // The same coordinator answering as the generation it registered with: the task runs
    // (what makes the test above able to fail).
    let dir = fresh_dir("fence-current");
    let marker = dir.join("ran");
    let (addr, _) = fake_coordinator(2, 2, touching("j", "t", &marker));
    let mut procs = Procs::default();
    fake_agent(&mut procs, &dir, &addr);
    wait_for(60, "the assignment to run", || marker.exists().then_some(()));
}
