//! Task logs: each attempt's output (stdout and stderr) goes through a pipe to a thread of the
//! agent that writes it to `logs/`, up to a limit (`--log-limit-mib`, [`DEFAULT_LOG_LIMIT`]).
//! Written straight to the file, one chatty task filled its node's disk and every later task
//! there failed to start.
//!
//! At the limit the log gets a line saying where it was cut, and the rest of the attempt's
//! output is read and dropped: the task runs on (a program is not failed for talking too
//! much, and a full pipe would stall it). A log that cannot be written (a full disk) is
//! dropped the same way, and the failure is raised on the agent's [`FaultFlag`] so that the
//! node stops getting work. The thread ends when every process holding the pipe has closed
//! it; the agent waits a moment for that before it reports an exit, so a log is whole when
//! the coordinator says the task ended.

use super::faults::{FaultFlag, is_node_fault};
use std::io::{Read, Write};
use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// A task's log is cut at 64 MiB unless the agent is told otherwise.
pub const DEFAULT_LOG_LIMIT: u64 = 64 << 20;

/// The longest file name Linux file systems take (NAME_MAX).
const NAME_MAX: usize = 255;

/// How much of the job's and the task's name a shortened log name keeps.
const KEPT: usize = 64;

/// The name of an attempt's log file: `JOB.TASK.ATTEMPT.log`, or when that is longer than a
/// file name may be (two names of 128 characters), the first 64 characters of each and a
/// hash of both: `JOB64.TASK64.ATTEMPT.HASH.log`, 16 hex digits of SHA-256 of `JOB\0TASK`.
/// A hash is 16 characters and an attempt at most 10 digits, so the two forms never meet.
pub fn log_name(job: &str, task: &str, attempt: u32) -> String {
    let plain = format!("{job}.{task}.{attempt}.log");
    if plain.len() <= NAME_MAX {
        return plain;
    }
    let digest = ring::digest::digest(&ring::digest::SHA256, format!("{job}\0{task}").as_bytes());
    let hash = crate::net::auth::hex(&digest.as_ref()[..8]);
    format!("{}.{}.{attempt}.{hash}.log", prefix(job, KEPT), prefix(task, KEPT))
}

/// At most `max` bytes of `name`, cut on a character boundary.
fn prefix(name: &str, max: usize) -> &str {
    let mut end = name.len().min(max);
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// How a log ended: what was written, what was dropped, and the write error, if one
/// stopped it.
#[derive(Debug, Default)]
pub struct LogEnd {
    pub written: u64,
    pub dropped: u64,
    /// The limit, when the log was cut at it.
    pub cut_at: Option<u64>,
    pub error: Option<std::io::Error>,
}

impl LogEnd {
    /// What the agent's log says of it after an exit, empty when the log is whole.
    pub fn summary(&self) -> String {
        match (&self.error, self.cut_at) {
            (Some(e), _) => format!("; its log could not be written ({e}): {} bytes of output dropped", self.dropped),
            (None, Some(limit)) => {
                format!("; its log was cut at {limit} bytes: {} bytes of output dropped", self.dropped)
            }
            (None, None) => String::new(),
        }
    }
}

/// The line that ends a log cut at `limit`.
fn cut_line(limit: u64) -> String {
    format!("\n[schedlab agent: log cut at {limit} bytes; the rest of this attempt's output is dropped]\n")
}

/// Copies `from` to `to` until `from` ends: at most `limit` bytes, then the line saying so;
/// past the limit, or once a write failed, what is read is dropped. `failed` hears of a
/// write error when it happens.
pub fn copy_capped(
    mut from: impl Read,
    mut to: impl Write,
    limit: u64,
    mut failed: impl FnMut(&std::io::Error),
) -> LogEnd {
    let mut end = LogEnd::default();
    let mut buffer = vec![0u8; 64 << 10];
    loop {
        let n = match from.read(&mut buffer) {
            Ok(0) => return end,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            // A pipe read error is not expected; what is left cannot be read either.
            Err(_) => return end,
        };
        if end.error.is_some() || end.cut_at.is_some() {
            end.dropped += n as u64;
            continue;
        }
        let room = usize::try_from(limit - end.written).unwrap_or(usize::MAX);
        let kept = n.min(room);
        let written = to
            .write_all(&buffer[..kept])
            .and_then(|()| if kept < n { to.write_all(cut_line(limit).as_bytes()) } else { Ok(()) });
        match written {
            Ok(()) => {
                end.written += kept as u64;
                end.dropped += (n - kept) as u64;
                if kept < n {
                    end.cut_at = Some(limit);
                }
            }
            Err(e) => {
                // What of the chunk reached the file is not known: all of it counts as dropped.
                end.dropped += n as u64;
                failed(&e);
                end.error = Some(e);
            }
        }
    }
}

/// The thread writing one attempt's log.
pub struct TaskLog {
    done: mpsc::Receiver<LogEnd>,
}

impl TaskLog {
    /// Starts the thread copying `pipe` to `file` (at `path`, for messages), at most `limit`
    /// bytes; a write error that means the node's disk cannot be written raises `fault`.
    pub fn start(
        pipe: std::io::PipeReader,
        file: std::fs::File,
        path: &Path,
        limit: u64,
        fault: FaultFlag,
    ) -> std::io::Result<TaskLog> {
        let (tx, done) = mpsc::channel();
        let path = path.display().to_string();
        std::thread::Builder::new().name("task log".into()).stack_size(128 << 10).spawn(move || {
            let end = copy_capped(pipe, file, limit, |e| {
                if is_node_fault(e) {
                    fault.raise(format!("cannot write the task log {path}: {e}"));
                }
            });
            // The agent may have stopped waiting for it: nothing to tell then.
            let _ = tx.send(end);
        })?;
        Ok(TaskLog { done })
    }

    /// How the log ended, waiting up to `wait` for the last of the output; None when a
    /// process (one outside the attempt's process group) still holds the pipe.
    pub fn finish(&self, wait: Duration) -> Option<LogEnd> {
        self.done.recv_timeout(wait).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_names_are_plain_and_fit_a_file_name() {
        assert_eq!(log_name("train", "0", 3), "train.0.3.log");
        let (job, task) = ("j".repeat(128), "t".repeat(128));
        let name = log_name(&job, &task, u32::MAX);
        assert!(name.len() <= NAME_MAX, "{} characters: {name}", name.len());
        assert!(name.starts_with(&format!("{}.{}.4294967295.", "j".repeat(64), "t".repeat(64))), "{name}");
        assert!(name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c)), "a plain name: {name}");
        assert_eq!(name, log_name(&job, &task, u32::MAX), "the same names, the same file");
        // Names that differ only past what is kept still get files of their own.
        let other = format!("{}x", &task[..127]);
        assert_ne!(name, log_name(&job, &other, u32::MAX));
        // The longest name that fits whole is kept whole.
        let fits = format!("{}.{}.1.log", "a".repeat(125), "b".repeat(123));
        assert_eq!(fits.len(), NAME_MAX);
        assert_eq!(log_name(&"a".repeat(125), &"b".repeat(123), 1), fits);
        assert!(log_name(&"a".repeat(125), &"b".repeat(124), 1).len() < NAME_MAX, "one more is shortened");
    }

    #[test]
    fn a_log_is_cut_at_its_limit_with_a_line_saying_so_and_the_rest_is_read_and_dropped() {
        let input = vec![b'x'; 200 << 10];
        let mut out = Vec::new();
        let end = copy_capped(&input[..], &mut out, 100_000, |_| panic!("no write fails"));
        assert_eq!((end.written, end.dropped, end.cut_at), (100_000, (200 << 10) - 100_000, Some(100_000)));
        assert!(out[..100_000].iter().all(|&b| b == b'x'));
        assert_eq!(String::from_utf8_lossy(&out[100_000..]), cut_line(100_000));
        assert!(end.summary().contains("cut at 100000 bytes"), "{}", end.summary());
        // Under the limit: all of it, no line.
        let mut out = Vec::new();
        let end = copy_capped(&b"hello\n"[..], &mut out, 6, |_| panic!("no write fails"));
        assert_eq!((out.as_slice(), end.cut_at, end.summary()), (&b"hello\n"[..], None, String::new()));
        // A limit of nothing: only the line.
        let mut out = Vec::new();
        copy_capped(&b"hello\n"[..], &mut out, 0, |_| {});
        assert_eq!(String::from_utf8_lossy(&out), cut_line(0));
    }

    #[test]
    fn a_log_on_a_full_disk_is_dropped_and_the_failure_heard_once() {
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let input = vec![b'x'; 300 << 10];
        let mut heard = Vec::new();
        let end = copy_capped(&input[..], full, DEFAULT_LOG_LIMIT, |e| heard.push(e.raw_os_error()));
        assert_eq!(heard, vec![Some(libc::ENOSPC)]);
        assert_eq!((end.written, end.dropped), (0, 300 << 10), "everything read, nothing written");
        assert!(end.summary().contains("could not be written"), "{}", end.summary());
    }

    #[test]
    fn the_thread_raises_the_fault_and_reports_the_end_once_the_pipe_closes() {
        let (reader, mut writer) = std::io::pipe().unwrap();
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let fault = FaultFlag::default();
        let log = TaskLog::start(reader, full, Path::new("/dev/full"), 10, fault.clone()).unwrap();
        writer.write_all(b"hello").unwrap();
        assert!(log.finish(Duration::from_millis(50)).is_none(), "the pipe is still open");
        drop(writer);
        let end = log.finish(Duration::from_secs(10)).expect("the thread ended");
        assert_eq!(end.error.and_then(|e| e.raw_os_error()), Some(libc::ENOSPC));
        assert!(fault.take().is_some_and(|why| why.contains("/dev/full")));
        assert!(fault.take().is_none(), "taken once");
    }
}
