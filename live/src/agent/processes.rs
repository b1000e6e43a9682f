//! The agent's processes: each attempt runs in a process group of its own, recorded (see
//! [`super::leftovers`]) before its command may run; a stop is SIGTERM to the group, then
//! SIGKILL after the grace period; when an attempt's top process exits, what it left in its
//! group is SIGKILLed before the exit is reported.

use super::leftovers::{self, Group};
use super::{Agent, RECORD};
use crate::wire::{Assignment, ExitReport};
use std::io::Write;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub(super) struct Running {
    pub child: Child,
    /// The GPUs it was given (UUIDs).
    pub gpus: Vec<String>,
    /// When SIGTERM was sent, if it was.
    pub stopping: Option<Instant>,
}

fn exit_code(status: std::process::ExitStatus) -> i32 {
    status.code().unwrap_or_else(|| 128 + status.signal().unwrap_or(0))
}

impl Agent {
    pub(super) fn spawn(&mut self, a: &Assignment) -> std::io::Result<Child> {
        let (log, checkpoint) = task_paths(&self.options.work_dir, a)?;
        std::fs::create_dir_all(log.parent().unwrap_or(&self.options.work_dir))?;
        std::fs::create_dir_all(&checkpoint)?;
        let log = std::fs::File::create(log)?;
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
            .env("SCHEDLAB_CHECKPOINT_DIR", &checkpoint);
        // Set or removed, so that the agent's own environment never leaks into a task.
        for (name, value) in
            [("SCHEDLAB_GPU_MILLI", a.gpu_milli.map(|m| m.to_string())), ("SCHEDLAB_DATASET", a.dataset.clone())]
        {
            match value {
                Some(v) => command.env(name, v),
                None => command.env_remove(name),
            };
        }
        command.stdin(Stdio::piped()).stdout(log.try_clone()?).stderr(log);
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
            signal_group(&child, libc::SIGKILL);
            let _ = child.wait();
            return Err(e);
        }
        if let Some(mut go) = child.stdin.take() {
            // An error means the shell is gone already: its exit is reaped as any other.
            let _ = go.write_all(b"\n");
        }
        Ok(child)
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
            let pgid = self.running.remove(&key).and_then(|r| i32::try_from(r.child.id()).ok());
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
                "task {} attempt {} exited {code}{}{left}",
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
/// and `checkpoints/JOB/TASK`. The coordinator refuses names that are not plain names, but the
/// agent does not take its word for it: a job or task name that is not one (`..`, a `/`) is
/// refused here, so that no assignment makes the agent write outside its work directory.
fn task_paths(work_dir: &std::path::Path, a: &Assignment) -> std::io::Result<(PathBuf, PathBuf)> {
    for (what, name) in [("job", &a.job), ("task", &a.task_name)] {
        if !crate::wire::is_plain_name(name) {
            let shown = crate::wire::shown(name);
            return Err(std::io::Error::other(format!("the {what} name `{shown}` is not a plain name; not run")));
        }
    }
    let log = work_dir.join("logs").join(format!("{}.{}.{}.log", a.job, a.task_name, a.attempt));
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

pub(super) fn signal_group(child: &Child, signal: i32) {
    if let Ok(pid) = i32::try_from(child.id()) {
        // SAFETY: plain kill(2) on the child's process group.
        unsafe {
            libc::kill(-pid, signal);
        }
    }
}
