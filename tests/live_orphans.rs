//! What a task's script started outlives its SIGKILLed agent (only the top process gets
//! PDEATHSIG); the agent started again stops it before it registers, so the retried attempt
//! never shares the GPUs with the old one. A coordinator and an agent as processes of the
//! `schedlab` binary on loopback, simulated GPUs; every wait is a bounded poll.

mod common;

use common::live::{Session, wait_for};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

/// (state, pgrp) of a process, from `/proc/PID/stat`.
fn stat(pid: u32) -> Option<(char, u32)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let fields: Vec<&str> = text[text.rfind(')')? + 1..].split_whitespace().collect();
    Some((fields.first()?.chars().next()?, fields.get(2)?.parse().ok()?))
}

/// Running, not a zombie: an orphan's zombie holds nothing, and this container's pid 1 may
/// never reap it.
fn alive(pid: u32) -> bool {
    stat(pid).is_some_and(|(state, _)| state != 'Z' && state != 'X')
}

/// Kills the task's background `sleep` when the test ends, passing or not (it would run for
/// 5 minutes otherwise). Only a process that is that `sleep`: `sleep 300`, with this test's
/// checkpoint directory in its environment (its pid may have been reused).
struct Orphan {
    pid_file: PathBuf,
    checkpoint: PathBuf,
}

impl Orphan {
    fn pid(&self) -> Option<u32> {
        std::fs::read_to_string(&self.pid_file).ok()?.trim().parse().ok()
    }
}

impl Drop for Orphan {
    fn drop(&mut self) {
        let Some(pid) = self.pid() else { return };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap_or_default();
        let mark = format!("SCHEDLAB_CHECKPOINT_DIR={}", self.checkpoint.display());
        if cmdline == b"sleep\x00300\x00" && environ.split(|b| *b == 0).any(|v| v == mark.as_bytes()) {
            let _ = Command::new("kill").args(["-KILL", &pid.to_string()]).status();
        }
    }
}

/// Agent n0's work directory and log in `s`, and the guard of the `sleep` that `job`'s task
/// leaves behind (its pid in its checkpoint directory's `child.pid`).
fn orphan_guard(s: &Session, job: &str) -> (PathBuf, PathBuf, Orphan) {
    let work = s.dir.join("agent-n0");
    let checkpoint = work.join("checkpoints").join(job).join("0");
    let orphan = Orphan { pid_file: checkpoint.join("child.pid"), checkpoint };
    (work, s.dir.join("agent-n0.log"), orphan)
}

/// Waits until the agent's `process-groups.json` records no group: every group it knew is gone.
fn wait_until_the_record_is_empty(work: &Path) {
    let record = work.join("process-groups.json");
    wait_for(30, "the record to forget the group", || {
        let v: Value = serde_json::from_slice(&std::fs::read(&record).ok()?).ok()?;
        v["groups"].as_array()?.is_empty().then_some(())
    });
}

/// Ends the session (its processes killed) and removes its directory.
fn remove(s: Session) {
    let dir = s.dir.clone();
    drop(s);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_restarted_agent_stops_what_its_killed_tasks_left_running_before_it_registers() {
    // Missed beats far beyond the restart: the node is never declared dead, the restart alone
    // fails the attempt.
    let mut s = Session::start("orphans", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--missed-beats", "20"]);
    let (_, log, orphan) = orphan_guard(&s, "orphan");
    let agent = s.agent("n0", 1);
    let client = s.client();

    // Attempt 1 leaves a `sleep` in its process group; the retry ends at once.
    let command = "if [ \"$SCHEDLAB_ATTEMPT\" = 1 ]; then \
                   sleep 300 & echo $! > \"$SCHEDLAB_CHECKPOINT_DIR/child.pid\"; wait; fi";
    let job = json!({ "name": "orphan", "tasks": [{ "name": "0", "command": command, "gpus": 1 }] });
    client.post::<_, Value>("/v1/jobs", &job).unwrap();
    let pid = wait_for(30, "attempt 1 to start its sleep", || orphan.pid());
    let (_, pgrp) = stat(pid).expect("the sleep runs");

    s.procs.kill(agent);
    // The problem: the agent's death reached the top process only.
    assert!(alive(pid), "the sleep {pid} outlived its agent");

    s.agent("n0", 1);
    wait_for(30, "the leftover sleep to be stopped", || (!alive(pid)).then_some(()));
    let text = wait_for(30, "the agent to register again", || {
        std::fs::read_to_string(&log).ok().filter(|t| t.matches("registered as node").count() == 2)
    });
    let said = format!("agent n0: stopped leftover process group {pgrp} of task ");
    let stopped = text.find(&said).unwrap_or_else(|| panic!("the agent's log does not say {said:?}:\n{text}"));
    assert!(text[stopped..].lines().next().unwrap().ends_with(" attempt 1 from a previous run"), "{text}");
    let second = text.rfind("registered as node").unwrap();
    assert!(stopped < second, "stopped before it registered again:\n{text}");

    // The retry ran, alone.
    let jobs = wait_for(60, "the job to end", || {
        let v: Value = client.get("/v1/jobs/orphan").ok()?;
        matches!(v["state"].as_str(), Some("succeeded" | "failed" | "cancelled")).then_some(v)
    });
    assert_eq!(jobs["state"], "succeeded", "{jobs:#}");
    assert_eq!(jobs["tasks"][0]["attempt"], 2, "{jobs:#}");
    remove(s);
}

#[test]
fn what_a_task_left_running_is_killed_when_its_top_process_exits() {
    let mut s = Session::start("orphans-exit", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    let (work, log, orphan) = orphan_guard(&s, "leaver");
    s.agent("n0", 1);

    // The script ends at once, successfully, with a `sleep` still running in its group.
    let command = "sleep 300 & echo $! > \"$SCHEDLAB_CHECKPOINT_DIR/child.pid\"; exit 0";
    s.submit(json!({ "name": "leaver", "tasks": [{ "name": "0", "command": command, "gpus": 1 }] })).unwrap();
    let jobs = s.wait_jobs_ended(60);
    assert_eq!(jobs["jobs"][0]["state"], "succeeded", "{jobs:#}");
    assert_eq!(s.task("leaver")["attempt"], 1);
    // The pid file was written before the script exited, so it is there by now.
    let pid = orphan.pid().expect("the script wrote its sleep's pid");

    // SIGKILL was sent before the exit was reported; dying may take a moment.
    wait_for(30, "the sleep to be gone", || (!alive(pid)).then_some(()));
    let text = std::fs::read_to_string(&log).unwrap();
    let said = " attempt 1 exited 0; stopped 1 leftover process it started";
    assert!(text.lines().any(|l| l.starts_with("agent n0: task ") && l.ends_with(said)), "{text}");
    // Its group is gone, so the record forgets it (the next restart has nothing to stop).
    wait_until_the_record_is_empty(&work);
    remove(s);
}

/// Whether `pid` ignores SIGTERM (`SigIgn` of `/proc/PID/status`, a hex mask, bit N-1 for
/// signal N; SIGTERM is 15 on Linux).
fn ignores_term(pid: u32) -> bool {
    let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else { return false };
    let mask = status.lines().find_map(|l| l.strip_prefix("SigIgn:")).map(str::trim);
    mask.and_then(|m| u64::from_str_radix(m, 16).ok()).is_some_and(|m| m & (1 << 14) != 0)
}

#[test]
fn what_a_stopped_task_started_is_killed_after_the_grace_period_though_its_top_process_exited() {
    // The session's agents run with `--grace-s 1`.
    let mut s = Session::start("orphans-stop", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    let (work, log, orphan) = orphan_guard(&s, "stubborn");
    s.agent("n0", 1);

    // The top process (the attempt's shell) runs an inner shell and waits for it, so SIGTERM
    // ends it; the inner shell ignores SIGTERM, and so does its `sleep` (in POSIX sh a signal
    // ignored on entry stays ignored in the children).
    let command = "sh -c 'trap \"\" TERM; sleep 300 & echo $! > \"$SCHEDLAB_CHECKPOINT_DIR/child.pid\"; wait'";
    s.submit(json!({ "name": "stubborn", "tasks": [{ "name": "0", "command": command, "gpus": 1 }] })).unwrap();
    let pid = wait_for(30, "the task to start its sleep", || orphan.pid());
    assert!(ignores_term(pid), "the sleep {pid} ignores SIGTERM");

    // Cancelling stops the attempt as a preemption does: SIGTERM, grace, SIGKILL.
    s.client().post::<_, Value>("/v1/jobs/stubborn/cancel", &json!({})).unwrap();
    wait_for(30, "the sleep to be gone after the grace period", || (!alive(pid)).then_some(()));
    // The top process went at SIGTERM (143); the inner shell and the sleep got SIGKILL once the
    // grace period was over.
    let said = " attempt 1 exited 143 (stopped); stopped 2 leftover processes it started";
    wait_for(30, "the agent to log the kill", || {
        let text = std::fs::read_to_string(&log).ok()?;
        text.lines().any(|l| l.starts_with("agent n0: task ") && l.ends_with(said)).then_some(())
    });
    assert_eq!(s.job("stubborn")["state"], "cancelled");
    wait_until_the_record_is_empty(&work);
    remove(s);
}
