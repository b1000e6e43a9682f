//! Every endpoint has one role: a user's token (STATE/token) cannot act as an agent, an
//! agent's token (`live issue-token --agent NAME`) cannot act as a user nor as another agent.
//! Processes of the `schedlab` binary on loopback (tests/common/live.rs).

mod common;

use common::live::{Session, run_bounded};
use live::net::client::{CallError, Client};
use serde_json::{Value, json};
use std::time::Duration;

/// The agent endpoints, for agent `name`: (method, path, body).
fn agent_calls(name: &str) -> Vec<(&'static str, String, Value)> {
    let gpu = json!({ "index": 0, "uuid": format!("GPU-{name}-0"), "name": "SIM", "memory_total_mib": 1,
                      "memory_used_mib": 0, "utilisation_pct": 0, "temperature_c": 30 });
    vec![
        ("POST", "/v1/agents/register".into(), json!({ "name": name, "addr": "127.0.0.1", "gpus": [gpu] })),
        ("POST", "/v1/agents/heartbeat".into(), json!({ "name": name, "generation": 1 })),
        ("GET", format!("/v1/agents/{name}/assignments?generation=1"), Value::Null),
    ]
}

/// The user endpoints.
fn user_calls() -> Vec<(&'static str, String, Value)> {
    let job = json!({ "name": "j", "tasks": [{ "name": "0", "command": "true" }] });
    vec![
        ("POST", "/v1/jobs".into(), job),
        ("GET", "/v1/jobs".into(), Value::Null),
        ("GET", "/v1/jobs/0".into(), Value::Null),
        ("POST", "/v1/jobs/0/cancel".into(), Value::Null),
        ("GET", "/v1/cluster".into(), Value::Null),
        ("POST", "/v1/gpus/GPU-n0-0/return".into(), Value::Null),
        ("GET", "/v1/decisions".into(), Value::Null),
        ("GET", "/metrics".into(), Value::Null),
    ]
}

fn call(client: &Client, (method, path, body): &(&str, String, Value)) -> Result<(), CallError> {
    if path == "/metrics" {
        return client.get_text(path).map(|_| ());
    }
    match *method {
        "GET" => client.get::<Value>(path).map(|_| ()),
        _ => client.post::<_, Value>(path, body).map(|_| ()),
    }
}

fn refused_403(client: &Client, c: &(&str, String, Value)) -> String {
    match call(client, c) {
        Err(CallError::Status(403, reason)) => reason,
        other => panic!("{} {}: expected 403, got {other:?}", c.0, c.1),
    }
}

#[test]
fn every_agent_endpoint_refuses_a_user_token_and_every_user_endpoint_an_agents() {
    let mut s = Session::start("roles", &["--cluster", "2x1:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 1);
    s.wait_agents(1);
    let (user, n0, n1) = (s.client(), s.agent_client("n0"), s.agent_client("n1"));
    for c in agent_calls("n0") {
        let reason = refused_403(&user, &c);
        assert!(reason.contains("a user token cannot act as an agent"), "{}: {reason}", c.1);
    }
    for c in user_calls() {
        let reason = refused_403(&n0, &c);
        assert!(reason.contains("agent `n0`'s token is for its agent's calls only"), "{}: {reason}", c.1);
    }
    // n0's token cannot act for n1; n1's own can (it is not registered: 404, not 403).
    for c in agent_calls("n1") {
        let reason = refused_403(&n0, &c);
        assert!(reason.contains("agent `n0`'s token cannot act for agent `n1`"), "{}: {reason}", c.1);
    }
    let beat = &agent_calls("n1")[1];
    assert!(matches!(call(&n1, beat), Err(CallError::Status(404, _))));
    // A token made up from n0's, for n1: no one's (401).
    let n0_token = std::fs::read_to_string(s.agent_token("n0")).unwrap();
    let forged = n0_token.trim().replacen("agent.n0.", "agent.n1.", 1);
    let forger = Client::new(&s.addr, &forged, Duration::from_secs(10));
    assert_eq!(call(&forger, beat), Err(CallError::Status(401, String::new())));
    // Nothing the refused calls asked for happened: the user endpoints still work for the
    // user, no job was submitted, n0 is still n0's.
    let jobs: Value = user.get("/v1/jobs").unwrap();
    assert_eq!(jobs["jobs"].as_array().unwrap().len(), 0, "{jobs}");
    let cluster: Value = user.get("/v1/cluster").unwrap();
    assert_eq!(cluster["nodes"][0]["agent"], "n0");
    assert_eq!(cluster["nodes"][1]["agent"], Value::Null);
    let log = s.log();
    assert!(log.contains("REFUSED a user: /v1/agents/register: a user token cannot act as an agent"), "{log}");
}

#[test]
fn an_agent_started_with_the_user_token_stops_at_once_with_the_reason() {
    let s = Session::start("roles-user-agent", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    let token = s.state().join("token");
    let work = s.dir.join("work");
    let args = [
        "live",
        "agent",
        "--coordinator",
        &s.addr,
        "--token-file",
        token.to_str().unwrap(),
        "--name",
        "n0",
        "--backend",
        "sim:gpus=1",
        "--work-dir",
        work.to_str().unwrap(),
    ];
    let (code, _, err) = run_bounded(&args, 60);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("registration refused: 403: /v1/agents/register: a user token cannot act as an agent"),
        "{err}"
    );
}
