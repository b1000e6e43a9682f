//! The agent's record of the process groups it started, so that an agent that starts again
//! stops what its previous incarnation left running. A task's top process dies with the
//! agent (PDEATHSIG), but what that process started keeps running on the GPUs while the
//! coordinator retries the attempt: the same task twice on the same GPUs. (While the agent
//! runs, it kills what a task left itself, when the task's top process exits.)
//!
//! The record is one small JSON file in the agent's work directory, rewritten whole (temp
//! file, fsync, rename, fsync of the directory) before each attempt's command may run and
//! after each attempt's process group is gone: an agent SIGKILLed at any instant leaves a
//! record that lists every group that may still have processes.
//!
//! Which leftovers are stopped (the rule, [`is_ours`]): a pid number can be reused, so a
//! recorded process group id alone proves nothing. The record holds the boot id and the
//! start time (field 22 of `/proc/PID/stat`, clock ticks since boot) of the group's leader.
//! - Another boot id: nothing of the previous run survived the reboot; nothing is stopped.
//! - The leader (pid = pgid) is alive with the recorded start time: the group is ours (a pid
//!   and its start time name one process within a boot).
//! - The leader is gone: the group is ours if a member (pgrp = pgid) started at or after the
//!   recorded leader start time and its environment names the attempt (`SCHEDLAB_JOB`,
//!   `SCHEDLAB_TASK`, `SCHEDLAB_ATTEMPT`). Linux does not reuse a number while a process
//!   still has it as its process group id, so a member of the original group is never
//!   confused with a newer group; the environment check is for the number reused after the
//!   original group emptied (every member of a newer group started later, so the start time
//!   alone cannot tell them apart). A leftover that cleared its environment is not stopped:
//!   an unrelated process is never killed.

use serde::{Deserialize, Serialize};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One attempt's process group.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Group {
    pub task: u32,
    pub attempt: u32,
    /// The names the attempt's environment carries (`SCHEDLAB_JOB`, `SCHEDLAB_TASK`).
    pub job: String,
    pub task_name: String,
    pub pgid: i32,
    /// The leader's start time, clock ticks since boot (`/proc/PID/stat` field 22).
    pub start: u64,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct File {
    boot_id: String,
    groups: Vec<Group>,
}

/// The record file and what it holds.
#[derive(Debug)]
pub struct Record {
    path: PathBuf,
    boot_id: String,
    groups: Vec<Group>,
}

impl Record {
    /// An empty record that will be saved at `path` (what [`Record::load`] replaces).
    pub fn new(path: &Path) -> Record {
        Record { path: path.to_path_buf(), boot_id: String::new(), groups: Vec::new() }
    }

    /// The record at `path`; empty if there is none (a first run).
    pub fn load(path: &Path) -> Result<Record, String> {
        let file = match std::fs::read(path) {
            Ok(bytes) => serde_json::from_slice::<File>(&bytes)
                .map_err(|e| format!("{}: {e} (remove it if no task of a previous run is left)", path.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => File::default(),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        Ok(Record { path: path.to_path_buf(), boot_id: file.boot_id, groups: file.groups })
    }

    pub fn groups(&self) -> &[Group] {
        &self.groups
    }

    /// The boot the groups were recorded in (empty for a first run).
    pub fn boot_id(&self) -> &str {
        &self.boot_id
    }

    /// Records `group`, durably, before it may run anything.
    pub fn add(&mut self, group: Group) -> std::io::Result<()> {
        self.groups.retain(|g| (g.task, g.attempt) != (group.task, group.attempt));
        self.groups.push(group);
        self.save()
    }

    /// Forgets the group of (task, attempt); saves only if it was there.
    pub fn remove(&mut self, task: u32, attempt: u32) -> std::io::Result<()> {
        let before = self.groups.len();
        self.groups.retain(|g| (g.task, g.attempt) != (task, attempt));
        if self.groups.len() == before { Ok(()) } else { self.save() }
    }

    /// Keeps only the groups `keep` says, under this boot's id, and saves.
    pub fn retain(&mut self, keep: impl FnMut(&Group) -> bool) -> std::io::Result<()> {
        self.groups.retain(keep);
        self.boot_id = boot_id();
        self.save()
    }

    fn save(&mut self) -> std::io::Result<()> {
        // Groups are recorded only by this boot's agent: the id is this boot's.
        self.boot_id = boot_id();
        let file = File { boot_id: self.boot_id.clone(), groups: self.groups.clone() };
        let bytes = serde_json::to_vec_pretty(&file).map_err(std::io::Error::other)?;
        let dir = self.path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        std::fs::create_dir_all(dir)?;
        let temp = self.path.with_extension("json.tmp");
        let mut out = std::fs::File::create(&temp)?;
        out.write_all(&bytes)?;
        out.sync_all()?;
        drop(out);
        std::fs::rename(&temp, &self.path)?;
        // The rename is durable only once the directory is.
        std::fs::File::open(dir)?.sync_all()
    }
}

/// This boot's id; empty where the kernel does not say (then no group is ever stopped).
pub fn boot_id() -> String {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id").map(|s| s.trim().to_string()).unwrap_or_default()
}

/// What `/proc/PID/stat` says of a process: (state, pgrp, start time).
pub fn stat(pid: i32) -> Option<(char, i32, u64)> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) is in parentheses and may hold spaces and parentheses.
    let rest = &text[text.rfind(')')? + 1..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // `fields[0]` is field 3.
    let state = fields.first()?.chars().next()?;
    let pgrp = fields.get(2)?.parse().ok()?;
    let start = fields.get(19)?.parse().ok()?;
    Some((state, pgrp, start))
}

/// The live (not zombie) members of process group `pgid`: (pid, start time).
fn members(pgid: i32) -> Vec<(i32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(|pid| match stat(pid) {
            Some((state, pgrp, start)) if pgrp == pgid && state != 'Z' && state != 'X' => Some((pid, start)),
            _ => None,
        })
        .collect()
}

/// How many processes of group `pgid` are alive (not zombies).
pub fn alive_members(pgid: i32) -> usize {
    members(pgid).len()
}

/// Whether group `pgid` still has a process that is not a zombie. A zombie holds no GPU,
/// and nobody may reap an orphan (a container's pid 1 often does not).
pub fn group_alive(pgid: i32) -> bool {
    // SAFETY: signal 0 only checks that the group exists.
    if unsafe { libc::kill(-pgid, 0) } != 0 && std::io::Error::last_os_error().raw_os_error() == Some(libc::ESRCH) {
        return false;
    }
    !members(pgid).is_empty()
}

fn environment_names(pid: i32, group: &Group) -> bool {
    let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
    let wanted = [
        format!("SCHEDLAB_JOB={}", group.job),
        format!("SCHEDLAB_TASK={}", group.task_name),
        format!("SCHEDLAB_ATTEMPT={}", group.attempt),
    ];
    let vars: Vec<&[u8]> = environ.split(|b| *b == 0).collect();
    wanted.iter().all(|w| vars.contains(&w.as_bytes()))
}

/// Whether `group`, recorded in boot `recorded_boot`, is still a group of ours: the rule of
/// the module's doc.
pub fn is_ours(group: &Group, recorded_boot: &str) -> bool {
    let now = boot_id();
    if now.is_empty() || now != recorded_boot || group.pgid <= 1 {
        return false;
    }
    let members = members(group.pgid);
    if members.iter().any(|&(pid, start)| pid == group.pgid && start == group.start) {
        return true;
    }
    if members.iter().any(|&(pid, _)| pid == group.pgid) {
        // The number leads another group now.
        return false;
    }
    members.iter().any(|&(pid, start)| start >= group.start && environment_names(pid, group))
}

/// Stops every group of `record` that is still ours: SIGTERM, up to `grace` for it to be gone,
/// then SIGKILL. Returns the groups stopped; the record keeps only those still alive after
/// SIGKILL (a process in uninterruptible sleep), for the next start to try again.
pub fn stop_leftovers(record: &mut Record, grace: Duration) -> std::io::Result<Vec<Group>> {
    let boot = record.boot_id().to_string();
    let ours: Vec<Group> = record.groups().iter().filter(|g| is_ours(g, &boot)).cloned().collect();
    // All at once: the restart waits one grace period, not one per group.
    signal_all(&ours, libc::SIGTERM);
    let deadline = Instant::now() + grace;
    while ours.iter().any(|g| group_alive(g.pgid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left: Vec<Group> = ours.iter().filter(|g| group_alive(g.pgid)).cloned().collect();
    signal_all(&left, libc::SIGKILL);
    // SIGKILL is not instant either; a bounded wait, so the record is right for most.
    let deadline = Instant::now() + Duration::from_secs(1);
    while left.iter().any(|g| group_alive(g.pgid)) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let still: Vec<Group> = left.into_iter().filter(|g| group_alive(g.pgid)).collect();
    record.retain(|g| still.contains(g))?;
    Ok(ours)
}

fn signal_all(groups: &[Group], signal: i32) {
    for g in groups {
        // SAFETY: plain kill(2) on a process group found to be ours.
        unsafe {
            libc::kill(-g.pgid, signal);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group(task: u32, attempt: u32, pgid: i32) -> Group {
        Group { task, attempt, job: "j".into(), task_name: "t".into(), pgid, start: 7 }
    }

    fn dir(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("schedlab-leftovers-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        dir
    }

    #[test]
    fn the_record_is_written_read_back_and_emptied() {
        let dir = dir("record");
        let path = dir.join("process-groups.json");
        let mut record = Record::load(&path).unwrap();
        assert!(record.groups().is_empty());
        record.add(group(1, 1, 100)).unwrap();
        record.add(group(2, 3, 200)).unwrap();
        // What a restarted agent reads: the same groups, under this boot.
        let again = Record::load(&path).unwrap();
        assert_eq!(again.groups(), &[group(1, 1, 100), group(2, 3, 200)]);
        assert_eq!(again.boot_id(), boot_id());
        record.remove(1, 1).unwrap();
        record.remove(9, 9).unwrap();
        assert_eq!(Record::load(&path).unwrap().groups(), &[group(2, 3, 200)]);
        record.remove(2, 3).unwrap();
        assert!(Record::load(&path).unwrap().groups().is_empty());
        // Nothing but the record is left in the directory: the temp file was renamed.
        let names: Vec<_> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("process-groups.json")]);
        std::fs::write(&path, "{ not json").unwrap();
        assert!(Record::load(&path).unwrap_err().contains("process-groups.json"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// SIGKILLs the group when the test ends, passing or not.
    struct Kill(i32);
    impl Drop for Kill {
        fn drop(&mut self) {
            // SAFETY: plain kill(2) on the test's own process group.
            unsafe {
                libc::kill(-self.0, libc::SIGKILL);
            }
        }
    }

    #[test]
    fn only_a_group_whose_leader_or_members_match_the_record_is_ours_and_it_is_stopped() {
        use std::io::BufRead;
        use std::os::unix::process::CommandExt;
        let boot = boot_id();
        let mut leader = std::process::Command::new("sh")
            .args(["-c", "sleep 300 & echo $!; wait"])
            .env("SCHEDLAB_JOB", "j")
            .env("SCHEDLAB_TASK", "t")
            .env("SCHEDLAB_ATTEMPT", "1")
            .process_group(0)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pgid = leader.id() as i32;
        let _kill = Kill(pgid);
        let mut line = String::new();
        std::io::BufReader::new(leader.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let sleep: i32 = line.trim().parse().unwrap();
        let (_, _, start) = stat(pgid).unwrap();
        let ours = Group { start, ..group(1, 1, pgid) };
        assert!(is_ours(&ours, &boot), "the leader, with its start time");
        assert!(!is_ours(&ours, "another boot"));
        assert!(!is_ours(&Group { start: start + 1, ..ours.clone() }, &boot), "the leader is another process");
        // The leader dies, as with PDEATHSIG; its background `sleep` is left in the group.
        leader.kill().unwrap();
        leader.wait().unwrap();
        assert!(group_alive(pgid));
        assert!(is_ours(&ours, &boot), "a member started after the leader, in the attempt's environment");
        assert!(!is_ours(&Group { attempt: 2, ..ours.clone() }, &boot), "its environment names another attempt");
        assert!(!is_ours(&Group { start: u64::MAX, ..ours.clone() }, &boot), "it started before the leader");
        let dir = dir("stop");
        let mut record = Record::load(&dir.join("process-groups.json")).unwrap();
        let stranger = Group { attempt: 2, ..ours.clone() };
        record.add(ours.clone()).unwrap();
        record.add(stranger).unwrap();
        let stopped = stop_leftovers(&mut record, Duration::from_secs(5)).unwrap();
        assert_eq!(stopped, vec![ours]);
        assert!(!group_alive(pgid));
        assert!(stat(sleep).is_none_or(|(state, _, _)| state == 'Z'), "the sleep is gone");
        assert!(record.groups().is_empty(), "stopped and not ours: both forgotten");
        assert!(Record::load(&dir.join("process-groups.json")).unwrap().groups().is_empty());
        // A number no process uses.
        assert!(!group_alive(i32::MAX - 1));
        assert!(!is_ours(&group(1, 1, i32::MAX - 1), &boot));
        let _ = std::fs::remove_dir_all(&dir);
    }
}
