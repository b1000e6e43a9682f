//! Every name that becomes a path component is a plain name (letters, digits, `-`, `_`, `.`,
//! and not `.` or `..` alone), on every route into a path: jobs and tasks (the agent's
//! `checkpoints/JOB/TASK` and `logs/JOB.TASK.N.log`), agents (`--name`, their tokens and
//! certificates), and what an agent is assigned, which it checks itself. A refused name is
//! logged escaped. Processes of the `schedlab` binary on loopback.

mod common;

use common::fake_coordinator::{fake_agent, fake_coordinator, touching};
use common::live::{BIN, Procs, Session, fresh_dir, run_bounded, wait_for};
use live::net::client::CallError;
use serde_json::{Value, json};
use std::process::Command;

const NOT_PLAIN: [&str; 9] = [".", "..", "", "a/b", "../x", "a\\b", "a\0b", "a\nb", "a b"];

fn job(name: &str, task: &str) -> Value {
    json!({ "name": name, "tasks": [{ "name": task, "command": "true" }] })
}

#[test]
fn job_task_and_agent_names_that_are_not_plain_are_refused() {
    let mut s = Session::start("names", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 1);
    s.wait_agents(1);
    let expected = "use 1 to 128 letters, digits, `-`, `_` or `.`, and not `.` or `..` alone";
    for name in NOT_PLAIN {
        for (body, what) in [(job(name, "0"), "job name"), (job("j", name), "task name")] {
            match s.submit(body) {
                Err(CallError::Status(400, reason)) => {
                    assert!(reason.starts_with(what) && reason.contains(expected), "{name:?}: {reason}");
                }
                other => panic!("{what} {name:?}: expected 400, got {other:?}"),
            }
        }
    }
    // Agents: no token, certificate or agent process for such a name.
    let state = s.state();
    for name in ["..", ".", "a/b"] {
        let pki = s.dir.join("pki");
        let issue_token = ["live", "issue-token", "--state", state.to_str().unwrap(), "--agent", name];
        let issue_cert = ["live", "issue-cert", "--state", pki.to_str().unwrap(), "--name", name];
        let work = s.dir.join("work");
        let agent = [
            "live",
            "agent",
            "--coordinator",
            &s.addr,
            "--name",
            name,
            "--backend",
            "sim:gpus=1",
            "--work-dir",
            work.to_str().unwrap(),
        ];
        for args in [&issue_token[..], &issue_cert[..], &agent[..]] {
            let (code, _, err) = run_bounded(args, 30);
            assert_eq!(code, Some(2), "{args:?}: {err}");
            assert!(err.contains(expected), "{args:?}: {err}");
        }
        assert!(!work.exists(), "the agent made its work directory");
    }
    let out = Command::new(BIN).args(["live", "issue-token", "--state", state.to_str().unwrap()]).output().unwrap();
    assert!(!out.status.success());
    // A name with a newline, refused, is logged on one line with the newline escaped.
    let forged = "x\n[     0.000s] FORGED";
    assert!(matches!(s.submit(job(forged, "0")), Err(CallError::Status(400, _))));
    let n0 = s.agent_client("n0");
    let e = n0.post::<_, Value>("/v1/agents/heartbeat", &json!({ "name": forged, "generation": 1 })).unwrap_err();
    assert!(matches!(e, CallError::Status(403, _)), "{e}");
    let log = s.log();
    assert!(!log.lines().any(|l| l.contains("FORGED") && !l.contains("\\n")), "{log}");
    assert!(log.contains("x\\n[     0.000s] FORGED"), "{log}");
}

#[test]
fn an_agent_runs_no_assignment_whose_names_would_leave_its_work_directory() {
    for (case, (job, task)) in [("..", ".."), ("../../escape", "t"), ("j", ".")].into_iter().enumerate() {
        let dir = fresh_dir(&format!("names-agent-{case}"));
        let marker = dir.join("ran");
        let (addr, seen) = fake_coordinator(1, 1, touching(job, task, &marker));
        let mut procs = Procs::default();
        fake_agent(&mut procs, &dir, &addr);
        let exit = wait_for(60, "the refused assignment's exit", || seen.exits.lock().unwrap().first().cloned());
        assert_eq!(exit, json!({ "task": 0, "attempt": 1, "code": 127 }), "{job}/{task}");
        assert!(!marker.exists(), "{job}/{task} ran");
        assert!(!dir.join("escape").exists(), "{job}/{task} made a directory outside the work directory");
        let log = std::fs::read_to_string(dir.join("agent.log")).unwrap();
        assert!(log.contains("is not a plain name; not run"), "{log}");
    }
}
