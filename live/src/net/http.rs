//! The coordinator's HTTP/1.1 front: all the socket IO of `live serve`, off the coordinator's
//! thread. Request heads are parsed by httparse (hyper's parser); the connection handling is
//! ours, because tiny_http (what this was built on first) has no read timeouts, queues new
//! connections behind busy ones, and reads away an unread body with a buffer of the size the
//! client announced: one unauthenticated request with `Content-Length: 99999999999999` made
//! the coordinator abort.
//!
//! - One thread, the intake ([`crate::net::intake`]), takes every connection and reads its first
//!   request head by readiness (`poll(2)`), without a thread per connection, within
//!   [`Limits::head_timeout`], with bounds per address and in all that evict the oldest
//!   waiting connection: a client without the token can deny no one service. A head (16 KiB
//!   at most, `431` beyond; what is not HTTP gets `400`) without the bearer token is answered
//!   `401` with nothing else, and closed.
//! - A head with the token gets its connection a thread, at most [`Limits::max_connections`]
//!   at once (beyond that, `503` with the reason and close). That thread takes only a
//!   `Content-Length` body of 1 MiB at most (`413` beyond, `411` for a chunked one), read
//!   within the same timeout (`408` when the client stalls), then sends the [`Call`] to the
//!   coordinator's thread over a channel, waits for the answer on a channel of its own and
//!   writes it. Kept-alive connections wait up to [`Limits::idle_timeout`] for their next
//!   request, whose head they have [`Limits::request_timeout`] for (and the token again).
//!
//! A client slow to send or to read holds only its own thread, and only until its timeout.
//! The scheduling state (Driver, SQLite, agents) stays on the coordinator's one thread, which
//! takes the calls one at a time in the order they reach the channel: the journal is that
//! thread's sequence of batches.

use crate::net::auth::{Keys, Principal};
use crate::net::tls::Identities;
use rustls::pki_types::CertificateDer;
use serde_json::{Value, json};
use std::io::{ErrorKind, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Sender, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// The largest request body taken.
pub const MAX_BODY: usize = 1 << 20;

/// What a lingering close reads away at most: a whole refused body of the largest size a
/// request may have (and TLS's framing of it), which a client that does not wait for the
/// answer has sent before it reads. It was 64 KiB, and a client that had sent 256 KiB of a
/// refused body was reset before it could read its 413 (tls.rs's test of an answer given before
/// the client is done sending failed now and then).
const LINGER_DRAIN: usize = 2 * MAX_BODY;

/// The largest request head (request line and headers) taken.
pub const MAX_HEAD: usize = 16 * 1024;

/// How long a refused connection's thread reads away what its client still sends.
pub(crate) const LINGER: Duration = Duration::from_secs(2);

/// What the front allows its clients.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Connections served at once (those that sent a head with the token). Each holds a
    /// thread and up to 1 MiB of body, so this bounds what clients can make the coordinator's
    /// process hold however many connect: room for a few hundred agents (each keeps one
    /// connection) and the command-line clients.
    pub max_connections: usize,
    /// Connections served at once for one token: the user token's, and each agent's. One
    /// token's holder (slow bodies, idle keep-alive connections) can fill only its own
    /// places, never the agents' or another agent's (an agent keeps one connection, and a
    /// second while it restarts).
    pub per_user: usize,
    pub per_agent: usize,
    /// How long a new connection has for its whole first request head (the token in it).
    pub head_timeout: Duration,
    /// Connections waiting for their first head, in all and per client address: past either,
    /// a new connection takes the place of the oldest waiting one.
    pub max_pending: usize,
    pub per_address: usize,
    /// How long a kept-alive client has for a request's head, from its first byte, and every
    /// client again for its body (a new connection's first head has at most this too, see
    /// `head_timeout`): a client stalled longer is
    /// answered `408` and closed. Writing an answer to a client that does not read times out
    /// after as long (per write).
    pub request_timeout: Duration,
    /// How long a kept-alive connection waits for its next request (longer than ureq keeps an
    /// idle connection, 15 s, so that clients close first and never reuse a closed one).
    pub idle_timeout: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_connections: 512,
            per_user: 64,
            per_agent: 4,
            head_timeout: Duration::from_secs(5),
            max_pending: 1024,
            per_address: 64,
            request_timeout: Duration::from_secs(30),
            idle_timeout: Duration::from_secs(120),
        }
    }
}

/// The method of a request, as the coordinator routes on it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
    Other(String),
}

impl std::fmt::Display for Method {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Method::Get => f.write_str("GET"),
            Method::Post => f.write_str("POST"),
            Method::Other(m) => f.write_str(m),
        }
    }
}

/// A request for the coordinator's thread, its token checked and its body read.
pub(crate) struct Call {
    pub method: Method,
    pub url: String,
    pub body: Vec<u8>,
    /// The certificate the client showed, when it came through the TLS relay with one.
    pub client_cert: Option<CertificateDer<'static>>,
    /// Whom its bearer token is for (see [`crate::net::auth`]).
    pub principal: Principal,
    reply: SyncSender<Answer>,
}

/// What a connection's thread writes back: the status, the body and its type.
pub(crate) struct Answer {
    pub status: u16,
    content_type: &'static str,
    pub body: Vec<u8>,
    /// A `405`'s `Allow` header: the methods the path takes.
    pub allow: Option<String>,
}

impl Answer {
    pub(crate) fn json(status: u16, body: &Value) -> Answer {
        Answer { status, content_type: "application/json", body: body.to_string().into_bytes(), allow: None }
    }

    /// A `200` with a body of `content_type` (the metrics' text format).
    pub(crate) fn text(content_type: &'static str, body: String) -> Answer {
        Answer { status: 200, content_type, body: body.into_bytes(), allow: None }
    }

    /// With `Allow: methods`.
    pub(crate) fn allowing(self, methods: String) -> Answer {
        Answer { allow: Some(methods), ..self }
    }
}

impl Call {
    /// A call as a connection's thread would send it, and where its answer arrives (status,
    /// body): for the coordinator's tests.
    #[cfg(test)]
    pub fn for_test(
        method: Method,
        url: &str,
        body: &[u8],
        client_cert: Option<CertificateDer<'static>>,
    ) -> (Call, mpsc::Receiver<Answer>) {
        Self::for_test_as(method, url, body, client_cert, Principal::User)
    }

    /// As [`Call::for_test`], with the token of `principal`.
    #[cfg(test)]
    pub fn for_test_as(
        method: Method,
        url: &str,
        body: &[u8],
        client_cert: Option<CertificateDer<'static>>,
        principal: Principal,
    ) -> (Call, mpsc::Receiver<Answer>) {
        let (reply, answer) = mpsc::sync_channel(1);
        (Call { method, url: url.to_string(), body: body.to_vec(), client_cert, principal, reply }, answer)
    }

    /// Hands the answer (status, JSON body) to the connection's thread, which writes it (the
    /// stand-ins for the coordinator in the front's tests).
    #[cfg(test)]
    pub fn answer(self, status: u16, body: Value) {
        self.send(Answer::json(status, &body));
    }

    /// Hands `answer` to the connection's thread, which writes it.
    pub fn send(self, answer: Answer) {
        // Its thread waits for it; it can only be gone if that thread died.
        let _ = self.reply.send(answer);
    }
}

/// What the front sends the coordinator's thread.
pub(crate) enum Inbound {
    Call(Call),
    /// A line for the coordinator's log (a request refused here, not by the coordinator).
    Log(String),
    /// The listener failed: the server cannot go on.
    Failed(String),
}

/// The running front: its intake thread, stopped (and joined) when this is dropped.
/// Connections already served finish on their own: a call the coordinator no longer takes is
/// answered `503`.
pub(crate) struct Front {
    stopping: Arc<AtomicBool>,
    intake: Option<JoinHandle<()>>,
}

impl Front {
    /// Serves `listener`; what its clients ask goes to `inbound`, with the certificate each
    /// showed the TLS relay (`identities`, when there is one).
    pub fn start(
        listener: &TcpListener,
        keys: Keys,
        limits: Limits,
        inbound: Sender<Inbound>,
        identities: Option<Identities>,
    ) -> Result<Front, String> {
        let listener = listener.try_clone().map_err(|e| format!("the HTTP listener: {e}"))?;
        let stopping = Arc::new(AtomicBool::new(false));
        let flag = stopping.clone();
        let behind_relay = identities.is_some();
        let intake = crate::net::intake::Intake::new(listener, keys.clone(), limits, inbound.clone(), behind_relay);
        let serve = move |(stream, buf, head): crate::net::intake::Admitted, held: Held| {
            let (keys, theirs, identities) = (keys.clone(), inbound.clone(), identities.clone());
            std::thread::Builder::new()
                .name("http-connection".into())
                .spawn(move || {
                    let _held = held;
                    let _ = Connection::new(stream, buf, limits, identities).serve(head, &keys, &theirs);
                })
                .map(drop)
                .map_err(|e| format!("cannot start a thread for a connection ({e}); it was closed"))
        };
        let intake = std::thread::Builder::new()
            .name("http-intake".into())
            .spawn(move || intake.run(&flag, serve))
            .map_err(|e| format!("cannot start the HTTP intake thread: {e}"))?;
        Ok(Front { stopping, intake: Some(intake) })
    }
}

impl Drop for Front {
    fn drop(&mut self) {
        // The intake sees the flag within 100 ms.
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(intake) = self.intake.take() {
            let _ = intake.join();
        }
    }
}

/// Counts a connection's thread until it ends, however it ends: in all, and for its token
/// where the intake counts per token.
pub(crate) struct Held(pub Arc<AtomicUsize>, pub Option<(PerToken, String)>);

impl Drop for Held {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
        if let Some((counts, key)) = &self.1 {
            counts.release(key);
        }
    }
}

/// Connections served per token (`user`, `agent NAME`), shared by the intake (which adds)
/// and the connections' threads (which take away as they end).
#[derive(Clone, Default)]
pub(crate) struct PerToken(Arc<std::sync::Mutex<std::collections::BTreeMap<String, usize>>>);

impl PerToken {
    /// Counts one more connection for `key` if it has fewer than `bound`.
    pub fn try_take(&self, key: &str, bound: usize) -> bool {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let n = counts.entry(key.to_string()).or_default();
        if *n >= bound {
            return false;
        }
        *n += 1;
        true
    }

    fn release(&self, key: &str) {
        let mut counts = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(n) = counts.get_mut(key) {
            *n -= 1;
            if *n == 0 {
                counts.remove(key);
            }
        }
    }
}

pub(crate) fn is_fatal(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EBADF | libc::EINVAL | libc::ENOTSOCK | libc::EFAULT))
}

/// Closes after an answer to a request whose rest was not read. Closing a socket with unread
/// bytes makes the kernel reset the connection, which can destroy the answer before the client
/// reads it; so first end our side, then read away (and drop) what the client still sends, up
/// to [`LINGER_DRAIN`] or `linger`, as web servers do (a "lingering close").
pub(crate) fn close_gently(stream: &mut TcpStream, linger: Duration) {
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let deadline = Instant::now() + linger;
    let mut sink = [0u8; 16 * 1024];
    let mut drained = 0;
    while drained < LINGER_DRAIN {
        let wait = deadline.saturating_duration_since(Instant::now());
        if wait.is_zero() || stream.set_read_timeout(Some(wait)).is_err() {
            return;
        }
        match stream.read(&mut sink) {
            Ok(0) | Err(_) => return,
            Ok(n) => drained += n,
        }
    }
}

/// An answer on the wire: status line, its body's type and length, `Connection: close`
/// unless kept alive, and the body.
pub(crate) fn response(answer: &Answer, keep_alive: bool, http_1_0: bool) -> Vec<u8> {
    // HTTP/1.1 keeps a connection unless told; 1.0 closes it unless told it is kept.
    let connection = match (keep_alive, http_1_0) {
        (false, _) => "Connection: close\r\n",
        (true, true) => "Connection: keep-alive\r\n",
        (true, false) => "",
    };
    let allow = answer.allow.as_ref().map(|methods| format!("Allow: {methods}\r\n")).unwrap_or_default();
    let mut bytes = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{allow}{connection}\r\n",
        answer.status,
        reason_phrase(answer.status),
        answer.content_type,
        answer.body.len()
    )
    .into_bytes();
    bytes.extend_from_slice(&answer.body);
    bytes
}

/// `401` with the scheme and nothing else: no body, no reason.
pub(crate) const UNAUTHORISED: &[u8] =
    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";

fn reason_phrase(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        401 => "Unauthorized",
        404 => "Not Found",
        405 => "Method Not Allowed",
        408 => "Request Timeout",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        _ => "",
    }
}

pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A request's head, as the connection needs it.
pub(crate) struct Head {
    method: Method,
    url: String,
    /// Whom the token is for; None: no token, or a wrong one.
    pub principal: Option<Principal>,
    keep_alive: bool,
    http_1_0: bool,
    content_length: Option<usize>,
    chunked: bool,
    expects_continue: bool,
    /// Bytes of the buffer the head took.
    len: usize,
}

struct Connection {
    stream: TcpStream,
    limits: Limits,
    /// Where the client's certificate is, by this connection's peer address (the relay's).
    identities: Option<Identities>,
    /// What was read and not yet used (the next request's bytes, if the client pipelines).
    buf: Vec<u8>,
}

impl Connection {
    /// A connection the intake admitted, with what it read of it (its first head and what
    /// followed).
    fn new(stream: TcpStream, buf: Vec<u8>, limits: Limits, identities: Option<Identities>) -> Connection {
        let _ = stream.set_nodelay(true);
        let _ = stream.set_write_timeout(Some(limits.request_timeout));
        Connection { stream, limits, identities, buf }
    }

    /// The certificate the client showed the TLS relay, if it did.
    fn client_cert(&self) -> Option<CertificateDer<'static>> {
        let peer = self.stream.peer_addr().ok()?;
        self.identities.as_ref()?.lock().unwrap_or_else(|e| e.into_inner()).get(&peer).cloned()
    }

    /// Requests, one after another from the one the intake read, until the client closes,
    /// idles, breaks the protocol or is refused.
    fn serve(&mut self, first: Head, keys: &Keys, inbound: &Sender<Inbound>) -> std::io::Result<()> {
        let mut next = Some(first);
        loop {
            let read = match next.take() {
                Some(head) => Ok(Some(head)),
                None => self.read_head(keys, self.limits.idle_timeout),
            };
            let head = match read {
                Ok(Some(head)) => head,
                Ok(None) => return Ok(()),
                Err((status, reason)) => return self.refuse(status, reason),
            };
            self.buf.drain(..head.len);
            let Some(principal) = head.principal.clone() else {
                // Before the body is read: an unauthenticated client makes the coordinator
                // read nothing more and learns nothing.
                self.stream.write_all(UNAUTHORISED)?;
                close_gently(&mut self.stream, LINGER);
                return Ok(());
            };
            if head.chunked {
                return self.refuse(411, "a chunked request body is not accepted; send Content-Length".into());
            }
            if head.method == Method::Other("HEAD".into()) {
                // Every answer here has a body, which a HEAD answer must not: refused, closed.
                return self.refuse(405, "HEAD is not served; use GET".into());
            }
            let length = head.content_length.unwrap_or(0);
            if length > MAX_BODY {
                return self.refuse(413, format!("the body is over 1 MiB ({length} bytes)"));
            }
            // HTTP/1.0 has no 100 (Continue): its clients send the body without waiting.
            if head.expects_continue && !head.http_1_0 && length > self.buf.len() {
                self.stream.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            }
            let body = match self.read_body(length) {
                Ok(body) => body,
                Err(e) if is_timeout(&e) => return self.refuse(408, "the request body did not arrive in time".into()),
                Err(_) => return Ok(()),
            };
            let (reply, answer) = mpsc::sync_channel(1);
            let client_cert = self.client_cert();
            let call = Call { method: head.method, url: head.url, body, client_cert, principal, reply };
            // Either fails only when the coordinator's thread has stopped taking calls (its
            // channel, with the calls still in it, is dropped when `run` returns).
            let answer = inbound
                .send(Inbound::Call(call))
                .ok()
                .and_then(|()| answer.recv().ok())
                .unwrap_or_else(|| Answer::json(503, &json!({ "error": "the coordinator is stopping" })));
            self.stream.write_all(&response(&answer, head.keep_alive, head.http_1_0))?;
            if !head.keep_alive {
                return Ok(());
            }
        }
    }

    /// `status` with the reason, and close (what else the client sent is not read).
    fn refuse(&mut self, status: u16, reason: String) -> std::io::Result<()> {
        self.stream.write_all(&response(&Answer::json(status, &json!({ "error": reason })), false, false))?;
        close_gently(&mut self.stream, LINGER);
        Ok(())
    }

    /// Reads until a whole head is in the buffer: the first byte within `first_byte`, the rest
    /// within the request timeout. None: the connection ended (closed, or idle) before a
    /// request began; the error is the answer to give.
    fn read_head(&mut self, keys: &Keys, first_byte: Duration) -> Result<Option<Head>, (u16, String)> {
        let mut deadline = None;
        loop {
            if !self.buf.is_empty() {
                deadline.get_or_insert_with(|| Instant::now() + self.limits.request_timeout);
                if let Some(head) = parse_head(&self.buf, keys)? {
                    return Ok(Some(head));
                }
            }
            let wait = match deadline {
                Some(d) => d.saturating_duration_since(Instant::now()),
                None => first_byte,
            };
            if wait.is_zero() {
                return Err((408, "the request head did not arrive in time".into()));
            }
            let _ = self.stream.set_read_timeout(Some(wait));
            let mut chunk = [0u8; 4096];
            match self.stream.read(&mut chunk) {
                Ok(0) => return Ok(None),
                Ok(n) => self.buf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) if is_timeout(&e) && deadline.is_none() => return Ok(None),
                Err(e) if is_timeout(&e) => return Err((408, "the request head did not arrive in time".into())),
                Err(_) => return Ok(None),
            }
        }
    }

    /// The next `length` bytes (some may be in the buffer already), within the request timeout.
    fn read_body(&mut self, length: usize) -> std::io::Result<Vec<u8>> {
        let deadline = Instant::now() + self.limits.request_timeout;
        let buffered = length.min(self.buf.len());
        let mut body: Vec<u8> = self.buf.drain(..buffered).collect();
        body.resize(length, 0);
        let mut at = buffered;
        while at < length {
            let wait = deadline.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return Err(ErrorKind::TimedOut.into());
            }
            self.stream.set_read_timeout(Some(wait))?;
            match self.stream.read(&mut body[at..]) {
                Ok(0) => return Err(ErrorKind::UnexpectedEof.into()),
                Ok(n) => at += n,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(body)
    }
}

/// The head at the start of `buf`, once it is whole (None: not yet); an error is the answer
/// to give.
pub(crate) fn parse_head(buf: &[u8], keys: &Keys) -> Result<Option<Head>, (u16, String)> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut request = httparse::Request::new(&mut headers);
    // A head is judged on its first 16 KiB only, however much more was read with them.
    match request.parse(&buf[..buf.len().min(MAX_HEAD)]) {
        Ok(httparse::Status::Complete(len)) => Ok(Some(head_of(&request, len, keys)?)),
        Ok(httparse::Status::Partial) if buf.len() >= MAX_HEAD => Err((431, "the request head is over 16 KiB".into())),
        Ok(httparse::Status::Partial) => Ok(None),
        Err(httparse::Error::TooManyHeaders) => Err((431, "more than 64 headers".into())),
        Err(e) => Err((400, format!("not an HTTP/1.1 request: {e}"))),
    }
}

fn is_timeout(e: &std::io::Error) -> bool {
    matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut)
}

/// What the connection needs of a parsed head; an error is the answer to give.
fn head_of(request: &httparse::Request<'_, '_>, len: usize, keys: &Keys) -> Result<Head, (u16, String)> {
    let method = match request.method.unwrap_or("") {
        "GET" => Method::Get,
        "POST" => Method::Post,
        other => Method::Other(other.to_string()),
    };
    let url = request.path.unwrap_or("/").to_string();
    fn values<'a>(headers: &'a [httparse::Header<'a>], name: &'a str) -> impl Iterator<Item = &'a [u8]> + 'a {
        headers.iter().filter(move |h| h.name.eq_ignore_ascii_case(name)).map(|h| h.value)
    }
    let header = |name: &'static str| values(request.headers, name);
    // The scheme's name is case-insensitive (RFC 9110), the token is not.
    let principal = header("Authorization")
        .find_map(|v| (v.len() > 7 && v[..7].eq_ignore_ascii_case(b"Bearer ")).then(|| keys.principal(&v[7..]))?);
    if principal.is_none() {
        // Nothing more is looked at (or told) for a client without the token.
        let (keep_alive, content_length, chunked, expects_continue) = (false, None, false, false);
        let http_1_0 = request.version == Some(0);
        return Ok(Head {
            method,
            url,
            principal,
            keep_alive,
            http_1_0,
            content_length,
            chunked,
            expects_continue,
            len,
        });
    }
    let text = |v: &[u8]| String::from_utf8_lossy(v).trim().to_ascii_lowercase();
    let connection: Vec<String> = header("Connection").map(text).collect();
    // HTTP/1.1 keeps the connection unless told to close; 1.0 closes unless told to keep it.
    let keep_alive = if request.version == Some(1) {
        !connection.iter().any(|c| c.split(',').any(|t| t.trim() == "close"))
    } else {
        connection.iter().any(|c| c.split(',').any(|t| t.trim() == "keep-alive"))
    };
    let lengths: Vec<String> = header("Content-Length").map(text).collect();
    let content_length = match lengths.as_slice() {
        [] => None,
        // Digits only (`+5` parses as a number, but is no Content-Length).
        [one] => match one.parse::<usize>() {
            Ok(n) if one.bytes().all(|b| b.is_ascii_digit()) => Some(n),
            _ => return Err((400, format!("Content-Length `{one}` is not a number of bytes"))),
        },
        // Two lengths are how request smuggling starts: refused, whatever they say.
        _ => return Err((400, "more than one Content-Length".into())),
    };
    let chunked = header("Transfer-Encoding").next().is_some();
    let expects_continue = header("Expect").any(|v| text(v) == "100-continue");
    let http_1_0 = request.version == Some(0);
    Ok(Head { method, url, principal, keep_alive, http_1_0, content_length, chunked, expects_continue, len })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    /// A front on a loopback port whose calls a stand-in for the coordinator's thread answers
    /// with their method, URL and body.
    struct Served {
        addr: SocketAddr,
        _front: Front,
        _listener: TcpListener,
    }

    fn served(limits: Limits) -> Served {
        served_with(limits, None)
    }

    /// As [`served`], behind a TLS relay when `identities` is given (every connection then
    /// comes from loopback, as the relay's do).
    fn served_with(limits: Limits, identities: Option<Identities>) -> Served {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (inbound, calls) = mpsc::channel();
        let front = Front::start(&listener, "secret".into(), limits, inbound, identities).unwrap();
        std::thread::spawn(move || {
            while let Ok(next) = calls.recv() {
                if let Inbound::Call(call) = next {
                    let body = String::from_utf8_lossy(&call.body).into_owned();
                    let answer = json!({ "method": call.method.to_string(), "url": call.url.clone(), "body": body });
                    call.answer(200, answer);
                }
            }
        });
        Served { addr, _front: front, _listener: listener }
    }

    /// Sends `bytes` and reads until the server closes the connection.
    fn exchange(addr: SocketAddr, bytes: &[u8]) -> String {
        let mut stream = TcpStream::connect(addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        stream.write_all(bytes).unwrap();
        let mut out = String::new();
        let _ = stream.read_to_string(&mut out);
        out
    }

    const AUTH: &str = "Authorization: Bearer secret\r\n";

    /// Behind the TLS relay every client is 127.0.0.1: the relay bounds each real address
    /// (its handshakes), so the front's bound per address would put every TLS client in one
    /// bucket, where a flood from other addresses evicts the legitimate ones. Only the bound
    /// on all waiting connections holds there.
    #[test]
    fn behind_the_tls_relay_waiting_clients_are_not_bounded_as_one_address() {
        let limits = Limits { per_address: 2, ..Limits::default() };
        for relay in [None, Some(Identities::default())] {
            let behind = relay.is_some();
            let s = served_with(limits, relay);
            let start = || {
                let mut c = TcpStream::connect(s.addr).unwrap();
                c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
                c.write_all(b"GET /first HTTP/1.1\r\n").unwrap();
                c
            };
            let mut first = start();
            // Let the front take `first` before the others come.
            std::thread::sleep(Duration::from_millis(200));
            let _others: Vec<TcpStream> = (0..2).map(|_| start()).collect();
            std::thread::sleep(Duration::from_millis(200));
            let _ = first.write_all(format!("{AUTH}Connection: close\r\n\r\n").as_bytes());
            let mut out = String::new();
            let _ = first.read_to_string(&mut out);
            // Without the relay the oldest of one address is evicted (closed unanswered).
            assert_eq!(out.starts_with("HTTP/1.1 200 OK"), behind, "behind the relay: {behind}: {out:?}");
        }
    }

    #[test]
    fn pipelined_requests_are_answered_in_order_and_close_ends_the_connection() {
        let s = served(Limits::default());
        let two = format!(
            "POST /a HTTP/1.1\r\n{AUTH}Content-Length: 2\r\n\r\nhiGET /b?x=1 HTTP/1.1\r\n{AUTH}Connection: close\r\n\r\n"
        );
        let out = exchange(s.addr, two.as_bytes());
        let bodies: Vec<&str> = out.split("\r\n\r\n").skip(1).map(|b| b.split("HTTP/1.1").next().unwrap()).collect();
        assert_eq!(
            bodies,
            [r#"{"body":"hi","method":"POST","url":"/a"}"#, r#"{"body":"","method":"GET","url":"/b?x=1"}"#],
            "{out}"
        );
        assert!(out.matches("HTTP/1.1 200 OK").count() == 2 && out.contains("Connection: close"), "{out}");
    }

    #[test]
    fn http_1_0_closes_and_expect_continue_is_answered_before_the_body() {
        let s = served(Limits::default());
        let out = exchange(s.addr, format!("GET /v HTTP/1.0\r\n{AUTH}\r\n").as_bytes());
        assert!(out.starts_with("HTTP/1.1 200 OK\r\n") && out.contains("Connection: close"), "{out}");
        // A 1.0 client that asks to keep the connection is told it is kept.
        let mut kept = TcpStream::connect(s.addr).unwrap();
        kept.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        kept.write_all(format!("GET /k HTTP/1.0\r\n{AUTH}Connection: keep-alive\r\n\r\n").as_bytes()).unwrap();
        let mut first = [0u8; 512];
        let n = kept.read(&mut first).unwrap();
        let first = String::from_utf8_lossy(&first[..n]);
        assert!(first.contains("Connection: keep-alive\r\n") && first.ends_with(r#""url":"/k"}"#), "{first}");
        // curl sends `Expect: 100-continue` for bodies over 1 KiB and waits for the 100.
        let mut stream = TcpStream::connect(s.addr).unwrap();
        stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let head =
            format!("POST /e HTTP/1.1\r\n{AUTH}Content-Length: 3\r\nExpect: 100-continue\r\nConnection: close\r\n\r\n");
        stream.write_all(head.as_bytes()).unwrap();
        let mut first = [0u8; 25];
        stream.read_exact(&mut first).unwrap();
        assert_eq!(&first, b"HTTP/1.1 100 Continue\r\n\r\n");
        stream.write_all(b"abc").unwrap();
        let mut rest = String::new();
        stream.read_to_string(&mut rest).unwrap();
        assert!(rest.ends_with(r#"{"body":"abc","method":"POST","url":"/e"}"#), "{rest}");
    }

    #[test]
    fn what_is_not_a_request_is_refused_with_the_reason() {
        let s = served(Limits::default());
        let status = |bytes: &[u8]| exchange(s.addr, bytes).split(' ').nth(1).unwrap_or("none").to_string();
        assert_eq!(status(b"NOT A REQUEST\r\n\r\n"), "400");
        let long = format!("GET / HTTP/1.1\r\n{AUTH}X: {}\r\n\r\n", "a".repeat(MAX_HEAD));
        assert_eq!(status(long.as_bytes()), "431");
        let many: String = (0..70).map(|i| format!("X{i}: y\r\n")).collect();
        assert_eq!(status(format!("GET / HTTP/1.1\r\n{many}\r\n").as_bytes()), "431");
        assert_eq!(status(format!("POST / HTTP/1.1\r\n{AUTH}Content-Length: x\r\n\r\n").as_bytes()), "400");
        assert_eq!(status(format!("POST / HTTP/1.1\r\n{AUTH}Content-Length: +5\r\n\r\n").as_bytes()), "400");
        // A HEAD answer may have no body, and every answer here has one.
        assert_eq!(status(format!("HEAD / HTTP/1.1\r\n{AUTH}\r\n").as_bytes()), "405");
        // The scheme's name in any case; the token exactly.
        assert_eq!(status(b"GET / HTTP/1.1\r\nauthorization: bearer secret\r\nConnection: close\r\n\r\n"), "200");
        assert_eq!(status(b"GET / HTTP/1.1\r\nAuthorization: Bearer SECRET\r\n\r\n"), "401");
        // Without the token, nothing about the request is judged but that.
        assert_eq!(status(b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n"), "401");
        assert_eq!(status(format!("POST / HTTP/1.1\r\n{AUTH}Transfer-Encoding: chunked\r\n\r\n").as_bytes()), "411");
    }

    #[test]
    fn a_405_names_the_methods_its_path_takes_in_allow() {
        let answer =
            Answer::json(405, &json!({ "error": "PUT is not allowed on /v1/jobs" })).allowing("GET, POST".into());
        let bytes = String::from_utf8(response(&answer, false, false)).unwrap();
        assert_eq!(
            bytes,
            "HTTP/1.1 405 Method Not Allowed\r\nContent-Type: application/json\r\nContent-Length: 42\r\n\
             Allow: GET, POST\r\nConnection: close\r\n\r\n{\"error\":\"PUT is not allowed on /v1/jobs\"}"
        );
        // Any other answer has no Allow.
        let ok = String::from_utf8(response(&Answer::json(200, &json!({})), true, false)).unwrap();
        assert_eq!(ok, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
    }

    #[test]
    fn a_client_that_stops_sending_is_answered_408_and_an_idle_one_closed() {
        let limits = Limits {
            request_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(300),
            ..Limits::default()
        };
        let s = served(limits);
        // Half a head.
        let out = exchange(s.addr, format!("GET / HTTP/1.1\r\n{AUTH}").as_bytes());
        assert!(out.starts_with("HTTP/1.1 408 "), "{out}");
        // A connection that never sends anything is closed without an answer.
        assert_eq!(exchange(s.addr, b""), "");
    }
}
