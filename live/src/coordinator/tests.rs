//! The coordinator driven in-process: its handlers called as the routes call them, one node's
//! agent played by the test.

use super::{Coordinator, DEFAULT_APP_XIDS, ServeOptions, TlsOptions, TlsSetup, parse_app_xids};
use crate::agent::backend::{GpuBackend, SimBackend, SimInjector};
use crate::config::LiveConfig;
use crate::driver::Input;
use crate::net::http::Method;
use crate::wire::{HeartbeatRequest, JobRequest, RegisterRequest, TaskRequest};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

fn state_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("schedlab-coordinator-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn open(dir: &Path, app_xids: Option<Vec<u64>>) -> Result<Coordinator, String> {
    Coordinator::open(options(dir, app_xids))
}

/// What the tests open a coordinator with (TLS off).
fn options(dir: &Path, app_xids: Option<Vec<u64>>) -> ServeOptions {
    ServeOptions {
        state_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        // An hour between heartbeats: however slow the test machine, no heartbeat
        // deadline falls due while a test runs, so only what the tests report changes the
        // cluster.
        settings: crate::coordinator::settings::Given::all(
            &LiveConfig::new("1x2:SIM", "fifo").unwrap().with_heartbeat_ms(3_600_000),
        ),
        journal_every: Duration::from_secs(3600),
        quiet: true,
        app_xids,
        tls: None,
        http: crate::net::http::Limits::default(),
        registry: policies::Registry::builtin(),
        slurm: None,
    }
}

/// A coordinator driven in-process, its one node's agent played by the test: the
/// simulated backend's GPUs and injected health events, reported by calling the handlers.
struct Node {
    c: Coordinator,
    backend: SimBackend,
    inject: SimInjector,
}

impl Node {
    /// Registers node 0 (two GPUs) and runs a one-GPU task `long` there.
    fn start(dir: &Path, app_xids: Option<Vec<u64>>) -> Node {
        let mut c = open(dir, app_xids).unwrap();
        let mut backend = SimBackend::new(2, "SIM", "n0");
        let gpus = backend.gpus().unwrap();
        let register = RegisterRequest { name: "n0".into(), addr: "127.0.0.1".into(), gpus, node: None, fresh: true };
        c.register(register).unwrap();
        c.submit(JobRequest::new("long", vec![TaskRequest::new("0", "sleep 1000")])).unwrap();
        let inject = backend.injector();
        Node { c, backend, inject }
    }

    /// One heartbeat carrying what the backend reports; the coordinator must answer 200,
    /// which is what makes the agent forget the events it sent (acknowledgement).
    fn beat(&mut self) {
        let health = self.backend.health(0).unwrap();
        assert!(!health.is_empty(), "the test injected an event before beating");
        let request = HeartbeatRequest {
            name: "n0".into(),
            exits: Vec::new(),
            health,
            gpus: Vec::new(),
            processes: Vec::new(),
            generation: self.c.generation,
        };
        let (status, _) = self.c.heartbeat(request).map_err(|r| r.reason).unwrap();
        assert_eq!(status, 200);
    }

    /// The task's (status, attempt, slot) from GET /v1/jobs/long.
    fn task(&self) -> (String, u64, Option<u64>) {
        let t = self.c.job_json(0)["tasks"][0].clone();
        (t["status"].as_str().unwrap().to_string(), t["attempt"].as_u64().unwrap(), t["placed"][0]["slot"].as_u64())
    }

    /// Each GPU's state in GET /v1/cluster.
    fn gpu_states(&self) -> Vec<String> {
        let cluster = self.c.cluster_json();
        let gpus = cluster["nodes"][0]["gpus"].as_array().unwrap();
        gpus.iter().map(|g| g["state"].as_str().unwrap().to_string()).collect()
    }

    /// What the journal's GpuFail inputs say, in order.
    fn journaled_gpu_fails(&self) -> Vec<String> {
        let batches = self.c.store.batches().unwrap();
        let inputs = batches.into_iter().flat_map(|b| b.inputs);
        inputs.filter_map(|i| if let Input::GpuFail { what, .. } = i { Some(what) } else { None }).collect()
    }
}

#[test]
fn an_application_xid_leaves_the_gpu_in_service_and_others_take_it_out() {
    let dir = state_dir("app-xid");
    let mut n = Node::start(&dir, None);
    let (status, attempt, slot) = n.task();
    assert_eq!((status.as_str(), attempt), ("running", 1));
    let slot = slot.unwrap();
    let mut busy = vec!["free"; 2];
    busy[slot as usize] = "busy";
    assert_eq!(n.gpu_states(), busy);

    // XID 13 (graphics engine exception) is in the default list: the task keeps its GPU.
    n.inject.xid(slot as u32, 13);
    n.beat();
    assert_eq!(n.task(), ("running".to_string(), 1, Some(slot)));
    assert_eq!(n.gpu_states(), busy);
    assert_eq!(n.journaled_gpu_fails(), Vec::<String>::new());

    // XID 79 (fell off the bus) is the GPU's: it goes out and the task runs again on the other.
    n.inject.xid(slot as u32, 79);
    n.beat();
    assert_eq!(n.journaled_gpu_fails(), vec!["xid 79"]);
    let mut out = vec!["busy"; 2];
    out[slot as usize] = "out";
    assert_eq!(n.gpu_states(), out);
    assert_eq!(n.task(), ("running".to_string(), 2, Some(1 - slot)));
    drop(n);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_returned_gpu_is_journaled_as_a_repair_and_the_journal_replays() {
    let dir = state_dir("return-gpu");
    let mut n = Node::start(&dir, None);
    let slot = n.task().2.unwrap();
    let uuid = format!("GPU-n0-{slot}");
    let refused = |n: &mut Node, uuid: &str| n.c.return_gpu(uuid).map(|_| ()).unwrap_err();
    let r = refused(&mut n, &uuid);
    assert_eq!((r.status, r.reason.as_str()), (409, format!("GPU {uuid} is in service; nothing to return").as_str()));
    let r = refused(&mut n, "GPU-nope");
    assert_eq!(r.status, 404, "{}", r.reason);
    n.inject.xid(slot as u32, 79);
    n.beat();
    assert_eq!(n.gpu_states()[slot as usize], "out");
    let (status, reply) = n.c.return_gpu(&uuid).map_err(|r| r.reason).unwrap();
    assert_eq!(status, 200);
    assert_eq!(
        (reply["node"].as_u64(), reply["slot"].as_u64(), &reply["state"]),
        (Some(0), Some(slot), &json!("free"))
    );
    assert_eq!(n.gpu_states()[slot as usize], "free");
    // The same input the re-registration path journals, once.
    let batches = n.c.store.batches().unwrap();
    let repairs: Vec<&Input> =
        batches.iter().flat_map(|b| &b.inputs).filter(|i| matches!(i, Input::GpuRepair { .. })).collect();
    assert_eq!(repairs, vec![&Input::GpuRepair { node: 0, slot: slot as u32 }]);
    let r = refused(&mut n, &uuid);
    assert_eq!(r.status, 409, "returned once, it is in service: {}", r.reason);
    let replayed = crate::driver::Driver::replay(n.c.driver.config().clone(), batches).unwrap();
    assert_eq!(replayed.controller().digest_hex(), n.c.driver.controller().digest_hex());
    assert!(!replayed.gpu_out(sim::GpuId(slot as u32)));
    drop(n);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn the_journal_is_written_off_the_coordinators_thread_and_not_again_before_its_interval() {
    let dir = state_dir("journal-writer");
    let mut n = Node::start(&dir, None);
    // Something changed and nothing was written yet: a snapshot goes to the writer.
    n.c.journal_step();
    assert!(n.c.journal_writer.is_some() && !n.c.journal_dirty);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !n.c.journal_writer.as_ref().is_some_and(JoinHandle::is_finished) {
        assert!(Instant::now() < deadline, "the journal writer ends");
        std::thread::sleep(Duration::from_millis(5));
    }
    n.c.journal_step();
    assert!(n.c.journal_writer.is_none());
    let jobs = std::fs::read_to_string(dir.join("journal").join("jobs.csv")).unwrap();
    assert!(jobs.lines().any(|l| l.starts_with("long,")), "{jobs}");
    // Another submission: the journal is behind, but its interval (an hour here) has not
    // passed since the writing ended, so nothing is written yet.
    n.c.submit(JobRequest::new("second", vec![TaskRequest::new("0", "true")])).unwrap();
    n.c.journal_step();
    assert!(n.c.journal_writer.is_none() && n.c.journal_dirty);
    // What `run` does last: written at once.
    n.c.write_journal().unwrap();
    let jobs = std::fs::read_to_string(dir.join("journal").join("jobs.csv")).unwrap();
    assert!(jobs.lines().any(|l| l.starts_with("second,")), "{jobs}");
    assert!(!n.c.journal_dirty);
}

#[test]
fn metrics_count_jobs_nodes_gpus_and_decisions_by_state_as_the_api_shows_them() {
    let dir = state_dir("metrics");
    let n = Node::start(&dir, None);
    let text = n.c.metrics_text();
    let value = |series: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(series).and_then(|rest| rest.strip_prefix(' ')))
            .unwrap_or_else(|| panic!("no {series} in\n{text}"))
            .to_string()
    };
    // `long` runs on one of n0's two GPUs; the cluster has one node.
    assert_eq!(value(r#"schedlab_jobs{state="running"}"#), "1");
    assert_eq!(value(r#"schedlab_jobs{state="succeeded"}"#), "0");
    assert_eq!(value(r#"schedlab_nodes{state="alive"}"#), "1");
    assert_eq!(
        (value(r#"schedlab_gpus{state="busy"}"#), value(r#"schedlab_gpus{state="free"}"#)),
        ("1".into(), "1".into())
    );
    assert_eq!(value(r#"schedlab_decisions_total{kind="start"}"#), "1");
    assert_eq!(value("schedlab_job_completion_seconds_count"), "0");
    assert!(text.contains("# TYPE schedlab_decisions_total counter\n"), "{text}");
    // Each GPU as its agent reported it (the simulated backend's made-up readings).
    assert!(
        text.lines().any(|l| l.starts_with(r#"schedlab_gpu_temperature_celsius{node="0",slot="0",uuid="GPU-n0-0"} "#)),
        "{text}"
    );
}

#[test]
fn under_mutual_tls_a_call_without_a_certificate_is_refused_whatever_it_asks() {
    // As a call straight to the plain front's loopback port would come: no certificate.
    let dir = state_dir("mtls-bypass");
    let (ca, _) = crate::net::tls::ensure_client_ca(&dir.join("pki")).unwrap();
    let mut c = Coordinator::open(ServeOptions {
        tls: Some(TlsOptions {
            certificate: TlsSetup::SelfSigned { names: vec!["127.0.0.1".into()] },
            client_ca: Some(ca),
        }),
        ..options(&dir, None)
    })
    .unwrap();
    for (method, url) in [(Method::Get, "/v1/jobs"), (Method::Get, "/metrics"), (Method::Post, "/v1/agents/heartbeat")]
    {
        let (call, answer) = crate::net::http::Call::for_test(method, url, br#"{"name":"n0"}"#, None);
        c.handle(call);
        let answer = answer.recv().unwrap();
        assert_eq!(answer.status, 403, "{url}");
        assert!(String::from_utf8_lossy(&answer.body).contains("no client certificate"), "{url}");
    }
}

#[test]
fn with_no_application_xids_every_xid_takes_the_gpu_out() {
    let dir = state_dir("no-app-xids");
    let mut n = Node::start(&dir, Some(parse_app_xids("none").unwrap()));
    let slot = n.task().2.unwrap();
    n.inject.xid(slot as u32, 13);
    n.beat();
    assert_eq!(n.journaled_gpu_fails(), vec!["xid 13"]);
    assert_eq!(n.gpu_states()[slot as usize], "out");
    assert_eq!(n.task().1, 2, "the task runs again");
    drop(n);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restarted_coordinator_keeps_its_application_xids() {
    let dir = state_dir("keeps-app-xids");
    let c = open(&dir, None).unwrap();
    assert_eq!(c.app_xids, DEFAULT_APP_XIDS, "a new directory without the flag gets the default");
    drop(c);
    assert_eq!(open(&dir, None).unwrap().app_xids, DEFAULT_APP_XIDS);
    let _ = std::fs::remove_dir_all(&dir);

    let n = Node::start(&dir, Some(vec![94]));
    let slot = n.task().2.unwrap() as u32;
    // Stopped, and started again without the flag; the agent (the backend) carries on.
    let Node { c, backend, inject } = n;
    drop(c);
    let mut n = Node { c: open(&dir, None).unwrap(), backend, inject };
    assert_eq!(n.c.app_xids, vec![94], "the stored list, not the default");
    n.inject.xid(slot, 94);
    n.beat();
    assert_eq!(n.journaled_gpu_fails(), Vec::<String>::new());
    // 13 is in the default list but not in this directory's.
    n.inject.xid(slot, 13);
    n.beat();
    assert_eq!(n.journaled_gpu_fails(), vec!["xid 13"]);
    drop(n);
    // The same list given again is fine; another is refused, naming the stored one.
    assert!(open(&dir, Some(vec![94])).is_ok());
    let e = open(&dir, Some(vec![13])).err().unwrap();
    assert!(e.contains("was created with --app-xids 94;"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

/// An agent's token acts for its own agent only, whatever else the body holds: a field the
/// handler ignores that a loose parse cannot read (a lone surrogate, a number past f64, deep
/// nesting) must not let n0's token register another agent or report for one.
#[test]
fn an_agents_token_cannot_act_for_another_through_a_body_a_loose_parse_cannot_read() {
    let dir = state_dir("impersonation");
    let mut c = open(&dir, None).unwrap();
    let generation = c.generation;
    let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
    let gpu = r#"{"index":0,"uuid":"GPU-x","name":"SIM","memory_total_mib":1,"memory_used_mib":0,"utilisation_pct":0,"temperature_c":30}"#;
    let bodies = [
        format!(r#"{{"name":"ghost","addr":"127.0.0.1","gpus":[{gpu}],"fresh":true,"node":0,"x":"\ud800"}}"#),
        format!(
            r#"{{"name":"ghost","addr":"127.0.0.1","gpus":[{}],"fresh":true}}"#,
            gpu.replace('}', r#","x":1e400}"#)
        ),
        format!(r#"{{"name":"n1","exits":[{{"task":0,"attempt":1,"code":0,"x":{deep}}}],"generation":{generation}}}"#),
        format!(
            r#"{{"name":"n1","exits":[{{"task":0,"attempt":1,"code":0,"x":"\ud800"}}],"generation":{generation}}}"#
        ),
    ];
    for (i, body) in bodies.iter().enumerate() {
        let url = if i < 2 { "/v1/agents/register" } else { "/v1/agents/heartbeat" };
        let principal = crate::net::auth::Principal::Agent("n0".into());
        let (call, answer) = crate::net::http::Call::for_test_as(Method::Post, url, body.as_bytes(), None, principal);
        c.handle(call);
        let answer = answer.recv().unwrap();
        let text = String::from_utf8_lossy(&answer.body).to_string();
        assert!(matches!(answer.status, 400 | 403), "body {i}: {} {text}", answer.status);
    }
    assert!(c.agents.is_empty(), "{:?}", c.agents.keys().collect::<Vec<_>>());
    // A well-formed body for another agent is refused too, with the reason, and recorded.
    let body = format!(r#"{{"name":"n1","generation":{generation}}}"#);
    let principal = crate::net::auth::Principal::Agent("n0".into());
    let (call, answer) =
        crate::net::http::Call::for_test_as(Method::Post, "/v1/agents/heartbeat", body.as_bytes(), None, principal);
    c.handle(call);
    let answer = answer.recv().unwrap();
    assert_eq!(answer.status, 403);
    assert!(
        String::from_utf8_lossy(&answer.body).contains("agent `n0`'s token cannot act for agent `n1`"),
        "{}",
        String::from_utf8_lossy(&answer.body)
    );
}

/// A job's name is what a user typed: `cancel 1` cancels the job named `1`, not job id 1;
/// an id still finds a job no name matches.
#[test]
fn a_name_finds_its_job_before_an_id_does() {
    let dir = state_dir("cancel-by-name");
    let mut c = open(&dir, None).unwrap();
    c.submit(JobRequest::new("1", vec![TaskRequest::new("0", "sleep 100")])).unwrap();
    c.submit(JobRequest::new("x", vec![TaskRequest::new("0", "sleep 100")])).unwrap();
    let (_, cancelled) = c.cancel("1").unwrap();
    assert_eq!(cancelled["name"], "1", "{cancelled}");
    assert_eq!(c.driver.job_state(1).as_str(), "running");
    assert_eq!(c.job_json(c.find_job("1").unwrap())["name"], "1");
    assert_eq!(c.job_json(c.find_job("0").unwrap())["name"], "1");
    assert_eq!(c.find_job("2").unwrap_err().status, 404);
}

/// What the kernel cannot run is refused at the API with the reason (a command past
/// MAX_ARG_STRLEN failed as exit 127 on the node), and a `data=` point of a task without an
/// estimate is checked against the work it is assumed to do (--default-work-s), not 1 ms.
#[test]
fn a_command_too_long_to_run_is_refused_and_data_points_use_the_default_work() {
    let dir = state_dir("long-command");
    let mut c = open(&dir, None).unwrap();
    let long = format!("echo {}", "x".repeat(200 * 1024));
    let refused = c.submit(JobRequest::new("long", vec![TaskRequest::new("0", long)])).unwrap_err();
    assert_eq!(refused.status, 400);
    assert!(refused.reason.contains("task `0`: the command is 204805 bytes"), "{}", refused.reason);
    let tasks = vec![
        TaskRequest::new("prep", "true"),
        TaskRequest { depends_on: vec!["prep:data=30".into()], ..TaskRequest::new("train", "true") },
    ];
    c.submit(JobRequest::new("p", tasks)).unwrap();
}

/// A full disk (here SQLite's own limit on the database's size, which fails a write with the
/// same SQLITE_FULL): a change is refused with 503 and nothing of it applied; deadlines wait;
/// the coordinator stays up, and takes the same request once there is room.
#[test]
fn a_full_disk_refuses_changes_with_503_and_the_coordinator_carries_on() {
    let dir = state_dir("disk-full");
    let mut c = open(&dir, None).unwrap();
    let pages: i64 = c.store.pragma_i64("page_count");
    c.store.pragma_set("max_page_count", pages);
    let big = || JobRequest::new("big", vec![TaskRequest::new("0", format!("echo {}", "x".repeat(64 * 1024)))]);
    let refused = c.submit(big()).unwrap_err();
    assert_eq!(refused.status, 503, "{}", refused.reason);
    assert!(refused.reason.contains("full"), "{}", refused.reason);
    assert!(c.driver.find("big").is_none(), "nothing of a refused request is applied");
    c.commit_due();
    c.store.pragma_set("max_page_count", 1 << 30);
    c.submit(big()).unwrap();
    assert_eq!(c.driver.job_state(c.find_job("big").unwrap()).as_str(), "running");
}

/// `GET /v1/jobs` lists a page at a time (1,000 jobs at most), with the `after` of the next
/// page; following `next` lists every job once, in id order. `/v1/decisions` too.
#[test]
fn the_job_list_comes_in_pages_that_together_list_every_job_once() {
    let dir = state_dir("pages");
    let mut c = open(&dir, None).unwrap();
    for i in 0..2500 {
        c.submit(JobRequest::new(format!("j{i}"), vec![TaskRequest::new("0", "true")])).unwrap();
    }
    let first = c.jobs_json(None, None);
    assert_eq!((first["jobs"].as_array().unwrap().len(), first["next"].as_u64()), (1000, Some(999)));
    let mut ids = Vec::new();
    let mut after = None;
    loop {
        let page = c.jobs_json(after, Some(700));
        ids.extend(page["jobs"].as_array().unwrap().iter().map(|j| j["id"].as_u64().unwrap()));
        match page["next"].as_u64() {
            Some(next) => after = Some(next),
            None => break,
        }
    }
    assert_eq!(ids, (0..2500).collect::<Vec<u64>>());
    // Past the end, and a limit past the page's bound, give what there is.
    assert_eq!(c.jobs_json(Some(u64::MAX), None)["jobs"].as_array().unwrap().len(), 0);
    assert_eq!(c.jobs_json(Some(2400), Some(1 << 40))["jobs"].as_array().unwrap().len(), 99);
    // The decision log pages the same way, each page with the digest of the whole log.
    let whole = c.driver.decisions().len();
    assert_eq!(whole, 2, "the two GPUs' starts");
    let first = c.decisions_json(None, Some(1));
    let second = c.decisions_json(first["next"].as_u64(), Some(1));
    assert_eq!((first["decisions"].as_array().unwrap().len(), first["next"].as_u64()), (1, Some(0)));
    assert_eq!((second["decisions"].as_array().unwrap().len(), second["next"].as_u64()), (1, None));
    assert_eq!(first["decisions"][0]["job"], 0);
    assert_eq!(second["decisions"][0]["job"], 1);
    assert_eq!(first["digest"], second["digest"]);
}
