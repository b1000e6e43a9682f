//! One coordinator per state directory: an exclusive `flock(2)` on `STATE/lock`, held for the
//! coordinator's life (the kernel drops it when the process ends, however it ends: no stale
//! lock after a `kill -9`). The holder writes its pid and address into the file once it
//! listens, so a second `live serve` on the directory is refused naming them, before it has
//! written anything. Likewise one agent per work directory (`WORK_DIR/agent.lock`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

/// The lock, held while this lives.
#[derive(Debug)]
pub struct StateLock {
    file: File,
    path: PathBuf,
}

/// What a holder wrote into its lock file (`pid PID addr ADDR`, `pid PID`), if it wrote
/// something printable.
fn recorded(file: &mut File) -> Option<String> {
    let mut text = String::new();
    let _ = file.seek(SeekFrom::Start(0)).and_then(|_| file.read_to_string(&mut text));
    let text = text.trim();
    let plain = |c: char| c.is_ascii_graphic() || c == ' ';
    (!text.is_empty() && text.len() <= 200 && text.chars().all(plain)).then(|| text.to_string())
}

fn holder_of(file: &mut File) -> String {
    match recorded(file) {
        Some(text) => format!("a coordinator ({text})"),
        None => "a coordinator starting up (it has not written its pid and address yet)".to_string(),
    }
}

fn refused(dir: &Path, holder: String) -> String {
    format!(
        "{} is in use by {holder}: one coordinator per state directory; stop that one first, or use another --state",
        dir.display()
    )
}

/// Takes the lock without waiting: Ok(false) when another process holds it.
fn try_flock(file: &File) -> std::io::Result<bool> {
    // SAFETY: flock(2) on a descriptor we own.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Ok(true);
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() == Some(libc::EWOULDBLOCK) { Ok(false) } else { Err(e) }
}

impl StateLock {
    pub fn path_in(dir: &Path) -> PathBuf {
        dir.join("lock")
    }

    /// The lock of an existing state directory, if it has a lock file: creates nothing.
    /// Err (naming the holder) when another coordinator holds it; Ok(None) when there is no
    /// lock file yet (a new directory, or one from before the lock existed).
    pub fn try_existing(dir: &Path) -> Result<Option<StateLock>, String> {
        let path = Self::path_in(dir);
        let mut file = match std::fs::OpenOptions::new().read(true).write(true).open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(format!("{}: {e}", path.display())),
        };
        match try_flock(&file) {
            Ok(true) => Ok(Some(StateLock { file, path })),
            Ok(false) => Err(refused(dir, holder_of(&mut file))),
            Err(e) => Err(format!("{}: cannot lock: {e}", path.display())),
        }
    }

    /// The lock, creating the directory (0700) and the lock file if needed.
    pub fn acquire(dir: &Path) -> Result<StateLock, String> {
        if let Some(lock) = Self::try_existing(dir)? {
            return Ok(lock);
        }
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
        let _ = std::fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700));
        let path = Self::path_in(dir);
        let mut file = open_lock_file(&path)?;
        match try_flock(&file) {
            Ok(true) => Ok(StateLock { file, path }),
            Ok(false) => Err(refused(dir, holder_of(&mut file))),
            Err(e) => Err(format!("{}: cannot lock: {e}", path.display())),
        }
    }

    /// Writes who holds it (this process, listening on `addr`) for a refused second one to name.
    pub fn record_holder(&mut self, addr: &str) -> Result<(), String> {
        let text = format!("pid {} addr {addr}\n", std::process::id());
        let write = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.seek(SeekFrom::Start(0))?;
            f.write_all(text.as_bytes())?;
            f.sync_all()
        };
        write(&mut self.file).map_err(|e| format!("{}: {e}", self.path.display()))
    }
}

/// The lock file at `path`, opened for reading and writing, created if missing (never
/// truncated: it names the holder).
fn open_lock_file(path: &Path) -> Result<File, String> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| format!("{}: cannot create: {e}", path.display()))
}

/// One agent per work directory: an exclusive `flock(2)` on `WORK_DIR/agent.lock`, held for
/// the agent's life, with its pid in it. A second agent on the directory would take the first
/// one's running process groups (in `process-groups.json`, of this boot, leaders alive) for
/// leftovers of a previous run and stop them, failing their tasks for good with their exit
/// code: it is refused before it reads that record.
#[derive(Debug)]
pub struct WorkDirLock {
    _file: File,
}

impl WorkDirLock {
    /// The lock, creating the directory and the lock file if needed.
    pub fn acquire(dir: &Path) -> Result<WorkDirLock, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
        let path = dir.join("agent.lock");
        let mut file = open_lock_file(&path)?;
        match try_flock(&file) {
            Ok(true) => {}
            Ok(false) => {
                let holder = recorded(&mut file).map_or("starting up".to_string(), |text| format!("({text})"));
                return Err(format!(
                    "{} is in use by an agent {holder}: one agent per work directory; stop that one first, or use another --work-dir",
                    dir.display()
                ));
            }
            Err(e) => return Err(format!("{}: cannot lock: {e}", path.display())),
        }
        let text = format!("pid {}\n", std::process::id());
        let write = |f: &mut File| -> std::io::Result<()> {
            f.set_len(0)?;
            f.seek(SeekFrom::Start(0))?;
            f.write_all(text.as_bytes())
        };
        write(&mut file).map_err(|e| format!("{}: {e}", path.display()))?;
        Ok(WorkDirLock { _file: file })
    }
}

#[cfg(test)]
mod tests {
    use super::{StateLock, WorkDirLock};

    #[test]
    fn a_second_agent_lock_on_the_work_dir_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = std::env::temp_dir().join(format!("schedlab-agent-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let first = WorkDirLock::acquire(&dir).unwrap();
        let e = WorkDirLock::acquire(&dir).unwrap_err();
        assert!(
            e.contains(&format!("is in use by an agent (pid {}): one agent per work directory", std::process::id())),
            "{e}"
        );
        drop(first);
        WorkDirLock::acquire(&dir).expect("released with its holder");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_second_lock_on_the_directory_is_refused_naming_the_holder_until_the_first_is_dropped() {
        let dir = std::env::temp_dir().join(format!("schedlab-lock-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(StateLock::try_existing(&dir).unwrap().is_none(), "nothing to lock, nothing made");
        assert!(!dir.exists());
        let mut first = StateLock::acquire(&dir).unwrap();
        let e = StateLock::acquire(&dir).unwrap_err();
        assert!(e.contains("starting up"), "{e}");
        first.record_holder("127.0.0.1:9").unwrap();
        let e = StateLock::try_existing(&dir).unwrap_err();
        assert!(e.contains(&format!("(pid {} addr 127.0.0.1:9)", std::process::id())), "{e}");
        drop(first);
        assert!(StateLock::try_existing(&dir).unwrap().is_some(), "released with its holder");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
