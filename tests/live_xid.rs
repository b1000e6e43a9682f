//! `live serve --app-xids` end to end: a coordinator and a node agent as real processes of the
//! `schedlab` binary on loopback, the simulated GPU backend fed through an injection file.
//! Every wait is a poll loop with a generous deadline; nothing asserts on a fixed sleep.
//! (The coordinator's own unit tests cover `none` and a restart keeping the list.)

mod common;

use common::live::{Session, append, wait_for};
use common::{schedlab, scratch, stderr};
use serde_json::{Value, json};

#[test]
fn bad_app_xids_are_refused_naming_the_flag_and_the_item() {
    let dir = scratch("live_xid", "bad");
    let state = dir.join("state");
    for (list, item) in [("13,x", "`x`"), ("13,,31", "an empty item"), ("13;31", "`13;31`")] {
        let serve = ["live", "serve", "--state", state.to_str().unwrap(), "--cluster", "1x1:SIM"];
        let out = schedlab(&[&serve[..], &["--app-xids", list]].concat());
        assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
        let expected = format!("error: --app-xids {list}: {item} is not an XID number");
        assert!(stderr(&out).contains(&expected), "{}", stderr(&out));
    }
    assert!(!state.join("live.db").exists(), "a refused flag creates no state");
}

#[test]
fn an_application_xid_keeps_the_gpu_and_is_acknowledged_while_xid_79_takes_it_out() {
    // The default list (13 is in it): no --app-xids.
    let mut s = Session::start("xid-app", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    let client = s.client();
    let (_, inject) = s.agent_with_inject("n0", 1);
    let gpu_state = || -> Option<String> {
        let v: Value = client.get("/v1/cluster").ok()?;
        (v["nodes"][0]["state"] == "alive").then(|| v["nodes"][0]["gpus"][0]["state"].as_str().unwrap().to_string())
    };
    wait_for(30, "the agent to register", gpu_state);
    let _: Value = client
        .post("/v1/jobs", &json!({ "name": "long", "tasks": [{ "name": "0", "command": "sleep 120" }] }))
        .unwrap();
    wait_for(30, "`long` to run", || (gpu_state()? == "busy").then_some(()));

    let log = || s.log();
    let app_line = "node 0: XID 13 on GPU-n0-0: an application error, the GPU stays in service";
    append(&inject, "xid 0 13");
    wait_for(30, "the coordinator to log XID 13", || log().contains(app_line).then_some(()));
    assert_eq!(gpu_state().as_deref(), Some("busy"), "the GPU stays in service, its task on it");

    append(&inject, "xid 0 79");
    wait_for(30, "XID 79 to take the GPU out", || (gpu_state()? == "out").then_some(()));
    let log = log();
    assert!(log.contains("node 0: XID 79 on GPU-n0-0"), "{log}");
    // Had XID 13 not been acknowledged, the agent would have sent it again with every beat,
    // XID 79's included, and the coordinator would have logged it again.
    assert_eq!(log.matches(app_line).count(), 1, "{log}");
    let decisions: Value = client.get("/v1/decisions").unwrap();
    let fails: Vec<&Value> =
        decisions["decisions"].as_array().unwrap().iter().filter(|d| d["kind"] == "fail").collect();
    assert_eq!(fails.len(), 1, "only XID 79 failed the task: {decisions:#}");
}
