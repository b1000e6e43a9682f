//! The HTTP front's intake: every connection from its accept until it has sent a whole
//! request head with the token, on one thread, by readiness (`poll(2)`), with no thread of
//! its own. A client without the token therefore holds a descriptor and a few KiB, never a
//! thread or a place among the authenticated connections, and not for long:
//!
//! - the whole first head must arrive within [`Limits::head_timeout`] (5 s) of the accept,
//!   else `408` (or, if nothing came, a silent close);
//! - at most [`Limits::per_address`] connections of one address wait here, and
//!   [`Limits::max_pending`] in all: a new connection past either bound evicts the oldest
//!   waiting one (of its address, else of all), so a flood of idle or slow connections keeps
//!   turning over, and a client that sends its request at once, as every real one does, is
//!   read before it could be evicted. Behind the TLS relay every connection is the relay's,
//!   from loopback: the relay bounds each real address, and only the bound on all applies
//!   here (one bucket for every TLS client let a flood from a few addresses evict the rest);
//! - only a head with the token leaves for a thread of its own ([`crate::net::http`]), and only
//!   while fewer than [`Limits::max_connections`] are served (else `503`).
//!
//! Why `poll(2)` through libc (already a dependency) and not epoll or `mio`: it is the same
//! call on every unix the crate builds on, and its cost per wake-up, linear in the waiting
//! connections, is bounded by `max_pending` (a thousand entries: microseconds).

use crate::net::auth::{Keys, Principal};
use crate::net::http::{Answer, Head, Held, Inbound, LINGER, Limits, PerToken, UNAUTHORISED, parse_head, response};
use serde_json::json;
use std::io::{ErrorKind, Read, Write};
use std::net::{IpAddr, Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::Sender;
use std::time::{Duration, Instant};

/// What the intake hands a connection's thread: the stream, what was read of it (the head
/// and whatever followed), the parsed head.
pub(crate) type Admitted = (TcpStream, Vec<u8>, Head);

/// A connection waiting for its head, or being closed.
struct Pending {
    stream: TcpStream,
    ip: IpAddr,
    accepted: Instant,
    buf: Vec<u8>,
    /// Refused (its answer written): what it still sends is read away until then, so that the
    /// close does not reset the connection under the answer.
    lingering: Option<Instant>,
}

/// What reading a waiting connection came to.
enum Step {
    Wait,
    Close,
    Admit(Head),
}

pub(crate) struct Intake {
    listener: TcpListener,
    keys: Keys,
    limits: Limits,
    inbound: Sender<Inbound>,
    /// Behind the TLS relay: every connection comes from loopback (the relay), which bounds
    /// each client's real address itself, so no bound per address applies here.
    behind_relay: bool,
    /// Connections served by threads (authenticated), in all and per token.
    open: Arc<AtomicUsize>,
    per_token: PerToken,
    pending: Vec<Pending>,
    refused: u64,
    last_logged: Option<Instant>,
}

impl Intake {
    pub fn new(
        listener: TcpListener,
        keys: Keys,
        limits: Limits,
        inbound: Sender<Inbound>,
        behind_relay: bool,
    ) -> Intake {
        raise_descriptor_limit();
        Intake {
            listener,
            keys,
            limits,
            inbound,
            behind_relay,
            open: Arc::new(AtomicUsize::new(0)),
            per_token: PerToken::default(),
            pending: Vec::new(),
            refused: 0,
            last_logged: None,
        }
    }

    /// Runs until `stopping` is set (seen within 100 ms) or the listener fails; each head
    /// with the token goes to `serve` with the count of served connections held.
    pub fn run(mut self, stopping: &AtomicBool, serve: impl Fn(Admitted, Held) -> Result<(), String>) {
        if let Err(e) = self.listener.set_nonblocking(true) {
            let _ = self.inbound.send(Inbound::Failed(format!("HTTP server: {e}")));
            return;
        }
        while !stopping.load(Ordering::SeqCst) {
            self.expire(Instant::now());
            let (listener_ready, ready) = match self.wait() {
                Ok(r) => r,
                Err(e) => {
                    let _ = self.inbound.send(Inbound::Failed(format!("HTTP server: poll: {e}")));
                    return;
                }
            };
            // Backwards: swap_remove moves only entries already looked at.
            for i in ready.into_iter().rev() {
                self.step(i, &serve);
            }
            if listener_ready && !self.accept(&serve) {
                return;
            }
        }
    }

    /// Waits for the listener or a waiting connection to be readable, until the next
    /// deadline (100 ms at most, to see `stopping`): whether the listener is, and which
    /// connections are.
    fn wait(&self) -> std::io::Result<(bool, Vec<usize>)> {
        let now = Instant::now();
        let next = self.pending.iter().map(|p| self.deadline(p)).min();
        let timeout = next.map_or(Duration::from_millis(100), |d| d.saturating_duration_since(now));
        let timeout = timeout.min(Duration::from_millis(100)).as_millis() as libc::c_int;
        let fds = std::iter::once(self.listener.as_raw_fd()).chain(self.pending.iter().map(|p| p.stream.as_raw_fd()));
        let mut fds: Vec<libc::pollfd> = fds.map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
        loop {
            // SAFETY: `fds` is a valid array of `fds.len()` pollfd for the duration of the call.
            let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
            if n >= 0 {
                break;
            }
            let e = std::io::Error::last_os_error();
            if e.kind() != ErrorKind::Interrupted {
                return Err(e);
            }
        }
        let readable = |fd: &libc::pollfd| fd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
        let ready = fds[1..].iter().enumerate().filter(|(_, fd)| readable(fd)).map(|(i, _)| i).collect();
        Ok((readable(&fds[0]), ready))
    }

    /// When a waiting connection's time is up: its head's deadline, or its linger's end.
    fn deadline(&self, p: &Pending) -> Instant {
        p.lingering.unwrap_or(p.accepted + self.limits.head_timeout.min(self.limits.request_timeout))
    }

    /// Answers `408` to the connections whose head is late (those that sent nothing are just
    /// closed), and closes those done lingering.
    fn expire(&mut self, now: Instant) {
        let mut i = 0;
        while i < self.pending.len() {
            let p = &self.pending[i];
            if self.deadline(p) > now {
                i += 1;
            } else if p.lingering.is_none() && !p.buf.is_empty() {
                self.refuse(i, 408, "the request head did not arrive in time".into());
                i += 1;
            } else {
                drop(self.pending.swap_remove(i));
            }
        }
    }

    /// Reads connection `i` and acts on what it came to.
    fn step(&mut self, i: usize, serve: &impl Fn(Admitted, Held) -> Result<(), String>) {
        match self.read(i) {
            Step::Wait => {}
            Step::Close => drop(self.pending.swap_remove(i)),
            Step::Admit(head) => self.admit(i, head, serve),
        }
    }

    /// Reads what connection `i` sent, and judges its head once it is whole.
    fn read(&mut self, i: usize) -> Step {
        let p = &mut self.pending[i];
        let mut chunk = [0u8; 4096];
        loop {
            match p.stream.read(&mut chunk) {
                Ok(0) => return Step::Close,
                Ok(_) if p.lingering.is_some() => {}
                Ok(n) => {
                    p.buf.extend_from_slice(&chunk[..n]);
                    if p.buf.len() > crate::net::http::MAX_HEAD {
                        break;
                    }
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                Err(_) => return Step::Close,
            }
        }
        if p.lingering.is_some() {
            return Step::Wait;
        }
        match parse_head(&p.buf, &self.keys) {
            Ok(None) => Step::Wait,
            Ok(Some(head)) if head.principal.is_some() => Step::Admit(head),
            Ok(Some(_)) => {
                // Nothing more is read (or told) for a client without the token.
                self.linger(i, UNAUTHORISED);
                Step::Wait
            }
            Err((status, reason)) => {
                self.refuse(i, status, reason);
                Step::Wait
            }
        }
    }

    /// A head with the token: its connection gets a thread, if one is free.
    fn admit(&mut self, i: usize, head: Head, serve: &impl Fn(Admitted, Held) -> Result<(), String>) {
        if self.open.load(Ordering::SeqCst) >= self.limits.max_connections {
            let reason =
                format!("the coordinator has {} connections open; try again shortly", self.limits.max_connections);
            self.log_refusal(&reason);
            self.refuse(i, 503, reason);
            return;
        }
        let (key, bound) = match &head.principal {
            Some(Principal::Agent(name)) => (format!("agent `{name}`"), self.limits.per_agent),
            _ => ("the user token".to_string(), self.limits.per_user),
        };
        if !self.per_token.try_take(&key, bound) {
            let reason = format!("{key} has {bound} connections open; try again shortly");
            self.log_refusal(&reason);
            self.refuse(i, 503, reason);
            return;
        }
        // Only this thread adds to the counts, so they cannot pass their bounds between the
        // check and the add; `held` takes both away again however the connection ends.
        self.open.fetch_add(1, Ordering::SeqCst);
        let held = Held(self.open.clone(), Some((self.per_token.clone(), key)));
        let p = self.pending.swap_remove(i);
        if p.stream.set_nonblocking(false).is_err() {
            return;
        }
        if let Err(e) = serve((p.stream, p.buf, head), held) {
            let _ = self.inbound.send(Inbound::Log(e));
        }
    }

    /// One line per 10 s at most, with the count since the last: a flood must not become a
    /// flood of log lines on the coordinator's thread.
    fn log_refusal(&mut self, reason: &str) {
        self.refused += 1;
        if self.last_logged.is_none_or(|t| t.elapsed() >= Duration::from_secs(10)) {
            let _ = self.inbound.send(Inbound::Log(format!("{} connection(s) refused: {reason}", self.refused)));
            (self.refused, self.last_logged) = (0, Some(Instant::now()));
        }
    }

    /// `status` with the reason, then the connection lingers and closes.
    fn refuse(&mut self, i: usize, status: u16, reason: String) {
        self.linger(i, &response(&Answer::json(status, &json!({ "error": reason })), false, false));
    }

    /// Writes `answer` (small: the socket's buffer takes it whole, or the client is not
    /// reading and loses it), ends our side, and reads away what the client still sends
    /// until [`LINGER`] has passed.
    fn linger(&mut self, i: usize, answer: &[u8]) {
        let p = &mut self.pending[i];
        let _ = p.stream.write(answer);
        let _ = p.stream.shutdown(Shutdown::Write);
        p.buf = Vec::new();
        p.lingering = Some(Instant::now() + LINGER);
    }

    /// Takes the connections the listener has (a few dozen at most before the waiting ones
    /// are read again), each read at once: a real client has sent its request by the time it
    /// is taken, and leaves before newer connections could evict it. False if the listener
    /// failed for good.
    fn accept(&mut self, serve: &impl Fn(Admitted, Held) -> Result<(), String>) -> bool {
        for _ in 0..self.limits.per_address.max(1) {
            match self.listener.accept() {
                Ok((stream, peer)) => {
                    if self.wait_for_head(stream, peer.ip()) {
                        self.step(self.pending.len() - 1, serve);
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                // Out of descriptors: the oldest waiting connection makes room, if there is one.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EMFILE | libc::ENFILE)) => {
                    if !self.evict(None) {
                        return true;
                    }
                }
                Err(e) if crate::net::http::is_fatal(&e) => {
                    let _ = self.inbound.send(Inbound::Failed(format!("HTTP server: {e}")));
                    return false;
                }
                // The client gave up before we took it, its network went away: the next one.
                Err(_) => return true,
            }
        }
        true
    }

    /// A new connection waits for its head, in the place of the oldest waiting one of its
    /// address, or of all, when either bound is reached.
    /// False if it could not (and was closed).
    fn wait_for_head(&mut self, stream: TcpStream, ip: IpAddr) -> bool {
        if stream.set_nonblocking(true).is_err() {
            return false;
        }
        let _ = stream.set_nodelay(true);
        let crowded =
            !self.behind_relay && self.pending.iter().filter(|p| p.ip == ip).count() >= self.limits.per_address;
        if crowded {
            self.evict(Some(ip));
        } else if self.pending.len() >= self.limits.max_pending {
            self.evict(None);
        }
        self.pending.push(Pending { stream, ip, accepted: Instant::now(), buf: Vec::new(), lingering: None });
        true
    }

    /// Closes the oldest waiting connection (of `ip`, if given); false if there was none.
    fn evict(&mut self, ip: Option<IpAddr>) -> bool {
        let oldest = self
            .pending
            .iter()
            .enumerate()
            .filter(|(_, p)| ip.is_none_or(|ip| p.ip == ip))
            .min_by_key(|(_, p)| p.accepted)
            .map(|(i, _)| i);
        oldest.map(|i| drop(self.pending.swap_remove(i))).is_some()
    }
}

/// Raises this process's soft limit on open descriptors to its hard limit (at most 65,536):
/// the intake's bounds are in connections, and a soft limit of 1,024 would run out first.
fn raise_descriptor_limit() {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: `limit` is a valid rlimit for getrlimit to fill and setrlimit to read.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) == 0 {
            let want = limit.rlim_max.min(65_536);
            if limit.rlim_cur < want {
                limit.rlim_cur = want;
                libc::setrlimit(libc::RLIMIT_NOFILE, &limit);
            }
        }
    }
}
