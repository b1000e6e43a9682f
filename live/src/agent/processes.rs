//! The agent's processes: each attempt runs in a process group of its own, recorded (see
//! [`super::leftovers`]) before its command may run; a stop is SIGTERM to the group, then
//! SIGKILL after the grace period; when an attempt's top process exits, what it left in its
//! group is SIGKILLed before the exit is reported.
//!
//! Tasks run as the agent's user, so what keeps the agent's credentials from them is the
//! agent's doing: none is in a task's environment ([`CREDENTIALS`]), and the agent is
//! undumpable ([`close_to_tasks`]).

use super::leftovers::{self, Group};
use super::tasklog::{TaskLog, log_name};
use super::{Agent, RECORD};
use crate::wire::{Assignment, ExitReport};
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(super) struct Running {
    pub child: Child,
    /// The GPUs it was given (UUIDs).
    pub gpus: Vec<String>,
    /// When SIGTERM was sent, if it was.
    pub stopping: Option<Instant>,
    /// The thread writing its output to its log.
    pub log: TaskLog,
}

/// The environment variables the agent's command line takes its credentials from (its token,
/// its TLS client certificate and key): removed from every task's environment, where any
/// program of any user's job would read them and could act as the agent.
const CREDENTIALS: [&str; 3] = ["SCHEDLAB_TOKEN", "SCHEDLAB_CLIENT_KEY", "SCHEDLAB_CLIENT_CERT"];

/// How long a reaped attempt's log may take to get the last of its output before its exit is
/// reported anyway (only a process that left the group, still holding the output, keeps it
/// open that long).
const LOG_DRAIN: Duration = Duration::from_secs(1);

/// Makes the agent undumpable (PR_SET_DUMPABLE 0). Its tasks run as its user, and Linux lets
/// a process open `/proc/PID/environ`, `mem`, `maps`, `fd`, `cwd` of any dumpable process of
/// the same user: a task would read the agent's token there (its environment, its memory).
/// Of an undumpable process, only a process with CAP_SYS_PTRACE can (root, which can read
/// everything anyway). The flag is not inherited across exec: tasks are dumpable as usual,
/// and `leftovers` still reads their environment. The price: no core dump of the agent, and
/// a debugger needs root. What this does not cover: files the agent's user can read (a
/// `--token-file`, named in the agent's command line, which anyone may read) are readable by
/// its tasks too; only running tasks as another user closes that.
pub(super) fn close_to_tasks() -> std::io::Result<()> {
    // SAFETY: prctl(2) with an integer argument; it changes one flag of this process. Passed
    // as unsigned long, the type the kernel reads it as (varargs).
    let r = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0 as libc::c_ulong) };
    if r == 0 { Ok(()) } else { Err(std::io::Error::last_os_error()) }
}

/// The command of attempt `a` (stdio and process group aside), its checkpoints in
/// `checkpoint`: `sh -c COMMAND` once the agent says go, with the task's environment.
fn task_command(a: &Assignment, checkpoint: &Path) -> Command {
    // The shell waits for a line on stdin before it runs the command (with stdin from
    // /dev/null, in the same process and group), so the group is on record before anything
    // of the task runs; if the agent dies first, the read ends and nothing runs.
    let mut command = Command::new("sh");
    command
        .arg("-c")
        .arg("read -r go || exit 125; exec </dev/null; exec sh -c \"$1\"")
        .arg("sh")
        .arg(&a.command)
        .env("CUDA_VISIBLE_DEVICES", a.gpus.join(","))
        .env("SCHEDLAB_JOB", &a.job)
        .env("SCHEDLAB_TASK", &a.task_name)
        .env("SCHEDLAB_ATTEMPT", a.attempt.to_string())
        .env("SCHEDLAB_RANK", a.rank.to_string())
        .env("SCHEDLAB_WORLD_SIZE", a.world_size.to_string())
        .env("SCHEDLAB_MASTER_ADDR", &a.master_addr)
        .env("SCHEDLAB_CHECKPOINT_DIR", checkpoint);
    // Set or removed, so that the agent's own environment never leaks into a task.
    for (name, value) in
        [("SCHEDLAB_GPU_MILLI", a.gpu_milli.map(|m| m.to_string())), ("SCHEDLAB_DATASET", a.dataset.clone())]
    {
        match value {
            Some(v) => command.env(name, v),
            None => command.env_remove(name),
        };
    }
    for name in CREDENTIALS {
        command.env_remove(name);
    }
    command
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

impl Agent {
    /// Starts attempt `a`: its process, and the thread writing its output to its log. An
    /// error that [`super::faults::is_node_fault`] is the node's (its work directory).
    pub(super) fn spawn(&mut self, a: &Assignment) -> std::io::Result<(Child, TaskLog)> {
        let (log_path, checkpoint) = task_paths(&self.options.work_dir, a)?;
        std::fs::create_dir_all(log_path.parent().unwrap_or(&self.options.work_dir))?;
        std::fs::create_dir_all(&checkpoint)?;
        let log_file = std::fs::File::create(&log_path)?;
        // Through a pipe, not to the file: the agent keeps the log within its limit.
        let (output, input) = std::io::pipe()?;
        let mut command = task_command(a, &checkpoint);
        command.stdin(Stdio::piped()).stdout(input.try_clone()?).stderr(input);
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            command.pre_exec(|| {
                // Its own process group, so a stop reaches everything it started; and it dies
                // with the agent, as it would with its node.
                libc::setpgid(0, 0);
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = command.spawn()?;
        // The agent's copies of the pipe's input: the log ends once the task's processes
        // have closed theirs.
        drop(command);
        let pgid = i32::try_from(child.id()).map_err(std::io::Error::other)?;
        let recorded = match leftovers::stat(pgid) {
            Some((_, _, start)) => self.record.add(Group {
                task: a.task,
                attempt: a.attempt,
                job: a.job.clone(),
                task_name: a.task_name.clone(),
                pgid,
                start,
            }),
            None => Err(std::io::Error::other(format!("no /proc/{pgid}/stat"))),
        };
        if let Err(e) = recorded {
            // Not on record: it must not run (a restart could not stop what it left).
            return Err(abandon(child, e));
        }
        let log = match TaskLog::start(output, log_file, &log_path, self.log_limit, self.fault.clone()) {
            Ok(log) => log,
            Err(e) => return Err(abandon(child, e)),
        };
        if let Some(mut go) = child.stdin.take() {
            // An error means the shell is gone already: its exit is reaped as any other.
            let _ = go.write_all(b"\n");
        }
        Ok((child, log))
    }

    /// Forgets the recorded groups of ended attempts that have no process left.
    pub(super) fn forget_ended_groups(&mut self) {
        let running = &self.running;
        let gone: Vec<(u32, u32)> = self
            .record
            .groups()
            .iter()
            .filter(|g| !running.contains_key(&(g.task, g.attempt)) && !leftovers::group_alive(g.pgid))
            .map(|g| (g.task, g.attempt))
            .collect();
        for (task, attempt) in gone {
            if let Err(e) = self.record.remove(task, attempt) {
                self.log(format!("{}: {e}", self.options.work_dir.join(RECORD).display()));
            }
        }
    }

    /// Collects ended processes; true when one ended that the coordinator must hear of.
    pub(super) fn reap(&mut self) -> bool {
        let grace = self.options.grace;
        let mut ended = Vec::new();
        for (key, r) in self.running.iter_mut() {
            let Ok(pid) = i32::try_from(r.child.id()) else { continue };
            // Look before reaping: until the top process's zombie is reaped, its pid (the group
            // id) cannot be reused, so the SIGKILL below reaches only what the task started.
            let killed = match (exited_unreaped(pid), r.stopping) {
                (Ok(false), _) => continue,
                // The task is over (as a job step is when its main process exits): what it
                // left in its group would keep the GPUs the coordinator hands out as soon as it
                // hears of the exit. No grace period: its top process already chose to end
                // without them, and waiting would either hold back the exit report (idle
                // GPUs) or let them share the GPUs with the next task.
                (Ok(true), None) => kill_leftovers(pid),
                // Stopped, and its top process went at SIGTERM: what it started gets the rest
                // of the grace period, then SIGKILL. Until then the attempt stays in `running`
                // with its zombie unreaped, so the group id stays ours and its GPUs stay busy
                // (`reconcile` starts nothing on them); were it dropped here, a child that
                // ignores SIGTERM would never get the SIGKILL and would share the GPUs with
                // the next task.
                (Ok(true), Some(since)) if since.elapsed() < grace && leftovers::group_alive(pid) => continue,
                (Ok(true), Some(_)) => kill_leftovers(pid),
                // An error from waitid (never expected): reap without killing, as before.
                (Err(_), _) => 0,
            };
            if let Ok(Some(status)) = r.child.try_wait() {
                ended.push((*key, exit_code(status), r.stopping.is_some(), killed));
            }
        }
        let mut news = false;
        for (key, code, stopped, killed) in ended {
            let Some(r) = self.running.remove(&key) else { continue };
            let pgid = i32::try_from(r.child.id()).ok();
            // The log is whole before the exit is reported: what the task wrote last is in it
            // when the coordinator says the task ended.
            let output = match r.log.finish(LOG_DRAIN) {
                Some(end) => end.summary(),
                None => "; its output is still held open by a process that left its group".to_string(),
            };
            // Killed processes take a moment to die: their group stays on record until it is
            // gone (`forget_ended_groups`), not waited for here.
            let lingering = pgid.is_some_and(leftovers::group_alive);
            let left = match killed {
                0 if lingering => "; processes it started are still running".to_string(),
                0 => String::new(),
                1 => "; stopped 1 leftover process it started".to_string(),
                n => format!("; stopped {n} leftover processes it started"),
            };
            self.log(format!(
                "task {} attempt {} exited {code}{}{left}{output}",
                key.0,
                key.1,
                if stopped { " (stopped)" } else { "" },
            ));
            if !lingering && let Err(e) = self.record.remove(key.0, key.1) {
                self.log(format!("{}: {e}", self.options.work_dir.join(RECORD).display()));
            }
            if !stopped {
                self.exits.push(ExitReport { task: key.0, attempt: key.1, code });
                news = true;
            }
        }
        news
    }

    pub(super) fn stop_all(&mut self) {
        let now = Instant::now();
        for r in self.running.values_mut() {
            // A stop, so a top process that exits at SIGTERM leaves the rest of its group
            // the same grace period (`reap` keeps a stopped attempt until its group is empty
            // or the grace period is over, and SIGKILLs what is left then).
            r.stopping = Some(now);
            signal_group(&r.child, libc::SIGTERM);
        }
        let deadline = Instant::now() + self.options.grace;
        while !self.running.is_empty() && Instant::now() < deadline {
            self.reap();
            std::thread::sleep(Duration::from_millis(20));
        }
        // Past the grace period: the attempts whose top process exited get their leftovers
        // SIGKILLed by `reap`, which logs how many; the rest get SIGKILL below.
        self.reap();
        for r in self.running.values_mut() {
            signal_group(&r.child, libc::SIGKILL);
            let _ = r.child.wait();
        }
        self.running.clear();
        // What is still alive (dying) stays on record for the next start.
        self.forget_ended_groups();
    }
}

/// Where an attempt's log and checkpoint directory go under `work_dir`: `logs/JOB.TASK.N.log`
/// (shortened when too long for a file name, see [`log_name`]) and `checkpoints/JOB/TASK`.
/// The coordinator refuses names that are not plain names, but the agent does not take its
/// word for it: a job or task name that is not one (`..`, a `/`) is refused here, so that no
/// assignment makes the agent write outside its work directory.
fn task_paths(work_dir: &std::path::Path, a: &Assignment) -> std::io::Result<(PathBuf, PathBuf)> {
    for (what, name) in [("job", &a.job), ("task", &a.task_name)] {
        if !crate::wire::is_plain_name(name) {
            let shown = crate::wire::shown(name);
            return Err(std::io::Error::other(format!("the {what} name `{shown}` is not a plain name; not run")));
        }
    }
    let log = work_dir.join("logs").join(log_name(&a.job, &a.task_name, a.attempt));
    let checkpoint = work_dir.join("checkpoints").join(&a.job).join(&a.task_name);
    Ok((log, checkpoint))
}

/// Whether child `pid` has exited, leaving it unreaped (`WNOWAIT`) for `Child::try_wait`.
pub(super) fn exited_unreaped(pid: i32) -> std::io::Result<bool> {
    // SAFETY: an all-zero siginfo_t is valid; POSIX leaves si_pid 0 when nothing exited.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    let id = libc::id_t::try_from(pid).map_err(std::io::Error::other)?;
    // SAFETY: waitid(2) on our own child, never blocking (WNOHANG), writing only `info`.
    let r = unsafe { libc::waitid(libc::P_PID, id, &mut info, libc::WEXITED | libc::WNOHANG | libc::WNOWAIT) };
    if r != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: waitid filled `info` (or left it zeroed).
    Ok(unsafe { info.si_pid() } != 0)
}

/// SIGKILLs what is alive in the group of `pgid`, whose leader has exited but is not reaped;
/// how many processes that was. One scan of /proc and one kill(2): nothing waits.
fn kill_leftovers(pgid: i32) -> usize {
    let alive = leftovers::alive_members(pgid);
    // With none alive nothing can join the group (only its members can fork into it).
    if alive > 0 {
        // SAFETY: plain kill(2) on the process group of our unreaped child.
        unsafe {
            libc::kill(-pgid, libc::SIGKILL);
        }
    }
    alive
}

/// SIGKILLs a started attempt that must not run, and reaps it; `e`, why.
fn abandon(mut child: Child, e: std::io::Error) -> std::io::Error {
    signal_group(&child, libc::SIGKILL);
    let _ = child.wait();
    e
}

pub(super) fn signal_group(child: &Child, signal: i32) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: plain kill(2) on the child's process group.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assignment() -> Assignment {
        Assignment {
            task: 0,
            attempt: 1,
            job: "j".into(),
            task_name: "t".into(),
            command: "env".into(),
            gpus: vec!["GPU-0".into()],
            rank: 0,
            world_size: 1,
            master_addr: "127.0.0.1".into(),
            gpu_milli: None,
            dataset: None,
        }
    }

    #[test]
    fn a_tasks_environment_holds_none_of_the_agents_credentials() {
        let command = task_command(&assignment(), Path::new("/tmp/checkpoints/j/t"));
        let envs: Vec<(&std::ffi::OsStr, Option<&std::ffi::OsStr>)> = command.get_envs().collect();
        for name in ["SCHEDLAB_TOKEN", "SCHEDLAB_CLIENT_KEY", "SCHEDLAB_CLIENT_CERT"] {
            assert!(envs.contains(&(name.as_ref(), None)), "{name} is not removed: {envs:?}");
        }
        assert!(envs.contains(&("SCHEDLAB_JOB".as_ref(), Some("j".as_ref()))), "{envs:?}");
    }

    #[test]
    fn the_longest_names_make_a_log_path_whose_file_name_fits() {
        let a = Assignment { job: "j".repeat(128), task_name: "t".repeat(128), ..assignment() };
        let (log, checkpoint) = task_paths(Path::new("/w"), &a).unwrap();
        let name = log.file_name().unwrap().to_str().unwrap();
        assert!(name.len() <= 255, "{name}");
        assert_eq!(log.parent(), Some(Path::new("/w/logs")));
        assert_eq!(checkpoint, Path::new("/w/checkpoints").join(&a.job).join(&a.task_name));
    }
}
