//! What a task can do to its agent and its node (issue 32, items 5, 6 and 9): read the agent's
//! credentials, fill the node's disk with its output, or be given names too long for a log
//! file's name. A coordinator and agents as processes of the `schedlab` binary on loopback,
//! simulated GPUs. Every wait is a poll loop with a generous deadline; nothing asserts on a
//! fixed sleep.

mod common;

use common::live::{BIN, Session, wait_for};
use serde_json::{Value, json};
use std::path::Path;
use std::process::{Child, Command, Stdio};

fn one_gpu(name: &str, task: &str, command: &str) -> Value {
    json!({ "name": name, "tasks": [{ "name": task, "command": command, "gpus": 1 }] })
}

/// Waits for job `name` to end; its state.
fn ended(s: &Session, name: &str) -> String {
    wait_for(60, &format!("job {name} to end"), || {
        let state = s.job(name)["state"].as_str()?.to_string();
        matches!(state.as_str(), "succeeded" | "failed" | "cancelled").then_some(state)
    })
}

/// A child killed when the test ends, passing or not.
struct Killed(Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn running_as_root() -> bool {
    let out = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&out.stdout).trim() == "0"
}

/// The user the agent runs as when the test runs as root: root may read any process's
/// memory and environment whatever the process says (CAP_SYS_PTRACE), so a same-user task
/// is played by an unprivileged user.
const NOBODY: u32 = 65534;

/// A copy of the binary and a work directory `nobody` can reach: the checkout (and so the
/// binary and the session's folder) may lie under a folder only root may enter, as a clone
/// in a `mktemp -d` folder (mode 0700) does. Under the system's temporary folder, each 0755.
fn reachable_by_nobody() -> (std::path::PathBuf, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let dir = std::env::temp_dir().join(format!("schedlab-agent-creds-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    let bin = dir.join("schedlab");
    std::fs::copy(BIN, &bin).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    (bin, dir.join("work"))
}

#[test]
fn a_task_sees_none_of_its_agents_credentials() {
    let s = Session::start("agent-creds", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    let token = std::fs::read_to_string(s.agent_token("n0")).unwrap().trim().to_string();
    let key = s.dir.join("agent-n0-client-key.pem");
    let root = running_as_root();
    let (bin, work) = if root { reachable_by_nobody() } else { (BIN.into(), s.dir.join("agent-n0")) };
    std::fs::create_dir_all(&work).unwrap();
    if root {
        std::os::unix::fs::chown(&work, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let log = std::fs::File::create(s.dir.join("agent-n0.log")).unwrap();
    let mut agent = Command::new(bin);
    agent
        .args(["live", "agent", "--coordinator", &s.addr, "--name", "n0", "--backend", "sim:gpus=1,prefix=n0"])
        .args(["--work-dir", work.to_str().unwrap(), "--grace-s", "1"])
        // The credentials as an operator may give them: in the agent's environment.
        .env("SCHEDLAB_TOKEN", &token)
        .env("SCHEDLAB_CLIENT_KEY", &key)
        .env_remove("SCHEDLAB_CLIENT_CERT")
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log);
    if root {
        use std::os::unix::process::CommandExt;
        agent.uid(NOBODY).gid(NOBODY);
    }
    let agent = Killed(agent.spawn().unwrap());
    s.wait_agents(1);

    // What a curious task tries: its own environment, then its parent's (the agent's).
    let command = "env; for f in environ maps mem; do (exec 3< /proc/$PPID/$f) 2>/dev/null && \
                   echo \"opened the agent's $f\"; done; tr '\\0' '\\n' < /proc/$PPID/environ; true";
    s.submit(one_gpu("creds", "0", command)).unwrap();
    assert_eq!(ended(&s, "creds"), "succeeded", "{:#}", s.job("creds"));
    let output = std::fs::read_to_string(work.join("logs/creds.0.1.log")).unwrap();
    assert!(output.contains("SCHEDLAB_JOB=creds"), "the task printed its environment: {output}");
    let seen: Vec<&str> = [
        (output.contains(&token), "the agent's token"),
        (output.contains(key.to_str().unwrap()), "the agent's client key"),
        (output.contains("opened the agent's environ"), "the agent's /proc/PID/environ"),
        (output.contains("opened the agent's maps"), "the agent's /proc/PID/maps"),
        (output.contains("opened the agent's mem"), "the agent's /proc/PID/mem"),
    ]
    .into_iter()
    .filter_map(|(seen, what)| seen.then_some(what))
    .collect();
    assert!(seen.is_empty(), "the task saw {seen:?}: {output}");
    drop(agent);
    if root {
        let _ = std::fs::remove_dir_all(work.parent().unwrap());
    }
}

#[test]
fn a_task_log_is_cut_at_its_limit_and_the_task_runs_on() {
    let mut s = Session::start("agent-log-cap", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 1);
    s.wait_agents(1);
    let after = s.dir.join("ran-after-the-cut");
    // 70 MB: past the default limit of 64 MiB.
    let command = format!("head -c 70000000 /dev/zero && echo the-end && touch {}", after.display());
    s.submit(one_gpu("loud", "0", &command)).unwrap();
    assert_eq!(ended(&s, "loud"), "succeeded", "{:#}", s.job("loud"));
    assert!(after.exists(), "the task ran on after its log was cut");
    let log = std::fs::read(s.dir.join("agent-n0/logs/loud.0.1.log")).unwrap();
    let limit = 64 << 20;
    assert!(log.len() > limit && log.len() < limit + 1000, "{} bytes", log.len());
    let tail = String::from_utf8_lossy(&log[limit..]);
    assert!(tail.contains(&format!("log cut at {limit} bytes")), "{tail}");
    assert!(!tail.contains("the-end"), "output past the limit is dropped: {tail}");
    let agent_log = std::fs::read_to_string(s.dir.join("agent-n0.log")).unwrap();
    assert!(agent_log.contains("dropped"), "{agent_log}");
}

/// Makes agent `name`'s record of process groups unwritable as a full disk is (ENOSPC): its
/// temporary file, written before every start, is /dev/full.
fn fill_record_disk(work: &Path) {
    std::os::unix::fs::symlink("/dev/full", work.join("process-groups.json.tmp")).unwrap();
}

#[test]
fn a_full_work_directory_fails_the_node_not_the_task() {
    let mut s = Session::start("agent-disk-full", &["--cluster", "2x1:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 1);
    s.wait_agents(1);
    // After it registered: an agent that cannot write its record at start-up does not start.
    fill_record_disk(&s.dir.join("agent-n0"));
    s.submit(one_gpu("j", "0", "echo ran")).unwrap();
    // Not the program's failure: the attempt goes back to the queue and n0's GPU is out.
    wait_for(30, "n0's GPU to be taken out", || {
        let task = s.task("j");
        assert_ne!(task["status"], "failed", "a full disk failed the task: {task:#}");
        (s.gpu(0, 0)["state"] == "out").then_some(())
    });
    let agent_log = std::fs::read_to_string(s.dir.join("agent-n0.log")).unwrap();
    assert!(agent_log.contains("No space left on device"), "{agent_log}");
    assert!(agent_log.contains("work directory"), "{agent_log}");
    s.agent("n1", 1);
    assert_eq!(ended(&s, "j"), "succeeded", "{:#}", s.job("j"));
    assert_eq!(s.task("j")["attempt"], 2, "{:#}", s.task("j"));
    let output = std::fs::read_to_string(s.dir.join("agent-n1/logs/j.0.2.log")).unwrap();
    assert_eq!(output, "ran\n", "attempt 2 ran on n1");
    assert_eq!(s.gpu(0, 0)["state"], "out", "n0 gets no more work");
}

#[test]
fn a_log_that_cannot_be_written_drains_the_nodes_idle_gpus() {
    let mut s = Session::start("agent-log-full", &["--cluster", "1x2:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 2);
    s.wait_agents(1);
    let logs = s.dir.join("agent-n0/logs");
    std::fs::create_dir_all(&logs).unwrap();
    std::os::unix::fs::symlink("/dev/full", logs.join("full.0.1.log")).unwrap();
    s.submit(one_gpu("full", "0", "echo some output; sleep 2")).unwrap();
    let slot = wait_for(30, "`full` to run", || s.task("full")["placed"][0]["slot"].as_u64()) as usize;
    // The task itself goes on (its exit is its own); no new work lands on the node.
    assert_eq!(ended(&s, "full"), "succeeded", "{:#}", s.job("full"));
    wait_for(30, "the idle GPU to be taken out", || (s.gpu(0, 1 - slot)["state"] == "out").then_some(()));
    let agent_log = std::fs::read_to_string(s.dir.join("agent-n0.log")).unwrap();
    assert!(agent_log.contains("No space left on device"), "{agent_log}");
}

#[test]
fn the_longest_job_and_task_names_make_a_log_file_name_that_fits() {
    let mut s = Session::start("agent-long-names", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    s.agent("n0", 1);
    s.wait_agents(1);
    let (job, task) = ("j".repeat(128), "t".repeat(128));
    s.submit(one_gpu(&job, &task, "echo hello")).unwrap();
    assert_eq!(ended(&s, &job), "succeeded", "{:#}", s.job(&job));
    let logs: Vec<_> = std::fs::read_dir(s.dir.join("agent-n0/logs")).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(logs.len(), 1, "{logs:?}");
    let name = logs[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.len() <= 255 && name.starts_with("jjjj") && name.ends_with(".log"), "{name}");
    assert!(name.contains(".1."), "the attempt is in the name: {name}");
    assert_eq!(std::fs::read_to_string(&logs[0]).unwrap(), "hello\n");
}
