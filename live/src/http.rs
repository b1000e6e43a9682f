//! The coordinator's HTTP front: all the socket IO of `live serve`, off the coordinator's
//! thread. tiny_http parses each request's headers on a thread of its own per connection, but
//! reads a body lazily (all but the smallest) and writes the answer wherever `respond` is
//! called, so whoever does either waits for the client. Here that is never the coordinator:
//!
//! - one receiver thread takes each request from tiny_http (`Server::recv`) and starts a
//!   worker thread for it (at most [`MAX_IN_FLIGHT`] at once; beyond that the request is
//!   answered 503 by one of [`REFUSERS`] refuser threads);
//! - the worker checks the bearer token (401, with nothing else, when it is wrong), reads the
//!   body (1 MiB at most: 413 over it, 400 when it cannot be read), sends the [`Call`] to the
//!   coordinator's thread over a channel, waits for the answer on a channel of its own, and
//!   writes it to the client.
//!
//! A client slow to send its body or to read its answer holds only its own worker. The
//! scheduling state (Driver, SQLite, agents) stays on the coordinator's one thread, which
//! takes the calls one at a time in the order they reach the channel: the journal is that
//! thread's sequence of batches, as before.

use serde_json::{Value, json};
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{self, Receiver, Sender, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use tiny_http::{Header, Method, Request, Response, Server};

const MAX_BODY: usize = 1 << 20;

/// Requests admitted at once: being read, waiting for the coordinator, or being answered.
/// Each holds a thread and up to 1 MiB of body, so 64 bounds what clients can make the
/// coordinator's process hold (64 MiB of bodies) however many connect. It is far above what
/// the coordinator's own clients need: an agent has one request out at a time and the
/// coordinator's thread answers in milliseconds (a SQLite commit), so requests in flight are
/// those of the last few milliseconds, not one per node. Beyond it a request is answered 503
/// at once (agents retry at their next beat) rather than queued behind the others. tiny_http
/// 0.12 sets no read timeout, so a client that stalls holds its place until it closes its
/// connection: 64 stalled clients get every other request a 503 (never the coordinator's
/// thread blocked, as one such client used to).
pub const MAX_IN_FLIGHT: usize = 64;

/// The threads that answer the requests beyond [`MAX_IN_FLIGHT`]. More than one because a
/// refused request with a body the client stalls in holds its refuser after the 503 is
/// written, while tiny_http reads the rest of the body away (it does so when the request is
/// dropped): it takes this many such clients, on top of the 64, to delay the 503s.
pub const REFUSERS: usize = 8;

/// A request for the coordinator's thread, its token checked and its body read.
pub(crate) struct Call {
    pub method: Method,
    pub url: String,
    pub body: Vec<u8>,
    reply: SyncSender<(u16, Value)>,
}

impl Call {
    /// Hands the answer (status, JSON body) to the worker, which writes it to the client.
    pub fn answer(self, status: u16, body: Value) {
        // The worker waits for it; it can only be gone if its thread died.
        let _ = self.reply.send((status, body));
    }
}

/// What the front sends the coordinator's thread.
pub(crate) enum Inbound {
    Call(Call),
    /// A line for the coordinator's log (a request refused here, not by the coordinator).
    Log(String),
    /// tiny_http stopped accepting connections: the server cannot go on.
    Failed(String),
}

fn header(name: &str, value: &str) -> Header {
    Header::from_bytes(name.as_bytes(), value.as_bytes()).expect("ASCII header")
}

fn json_response(status: u16, body: &Value) -> Response<std::io::Cursor<Vec<u8>>> {
    Response::from_string(body.to_string())
        .with_status_code(status)
        .with_header(header("Content-Type", "application/json"))
}

fn error_response(status: u16, reason: &str) -> Response<std::io::Cursor<Vec<u8>>> {
    json_response(status, &json!({ "error": reason }))
}

/// Whether `request` carries `Authorization: Bearer TOKEN`, compared in constant time.
fn authorised(request: &Request, token: &str) -> bool {
    request.headers().iter().any(|h| {
        h.field.equiv("Authorization")
            && h.value
                .as_str()
                .strip_prefix("Bearer ")
                .is_some_and(|t| constant_time_eq(t.as_bytes(), token.as_bytes()))
    })
}

/// 401 with the scheme and nothing else: no body, no reason.
fn unauthorised() -> Response<std::io::Empty> {
    Response::empty(401).with_header(header("WWW-Authenticate", "Bearer"))
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The running front: its receiver thread, stopped (and joined) when this is dropped.
pub(crate) struct Front {
    server: Arc<Server>,
    stopping: Arc<AtomicBool>,
    receiver: Option<JoinHandle<()>>,
}

impl Front {
    /// Starts the receiver (and refuser) thread for `server`; what they receive goes to
    /// `inbound`.
    pub fn start(server: Arc<Server>, token: String, inbound: Sender<Inbound>) -> Result<Front, String> {
        let stopping = Arc::new(AtomicBool::new(false));
        // The refusers end when the receiver does (it holds the only sender), after the
        // refusals queued before.
        let (refuse, refusals) = mpsc::channel();
        let refusals = Arc::new(Mutex::new(refusals));
        for _ in 0..REFUSERS {
            let (refusals, token, inbound) = (refusals.clone(), token.clone(), inbound.clone());
            std::thread::Builder::new()
                .name("http-refuser".into())
                .spawn(move || refuser(&refusals, &token, &inbound))
                .map_err(|e| format!("cannot start the HTTP refuser threads: {e}"))?;
        }
        let receiver = {
            let (server, stopping) = (server.clone(), stopping.clone());
            std::thread::Builder::new()
                .name("http-receiver".into())
                .spawn(move || receive(&server, &stopping, &Arc::<str>::from(token), &inbound, &refuse))
                .map_err(|e| format!("cannot start the HTTP receiver thread: {e}"))?
        };
        Ok(Front { server, stopping, receiver: Some(receiver) })
    }
}

impl Drop for Front {
    /// Stops the receiver, which first starts workers for what tiny_http had queued before
    /// (what comes after waits for the next `run`, or goes with the server). Workers still
    /// running finish on their own: one whose call the coordinator never takes answers 503.
    fn drop(&mut self) {
        self.stopping.store(true, Ordering::SeqCst);
        if let Some(receiver) = self.receiver.take() {
            if !receiver.is_finished() {
                self.server.unblock(); // makes its blocked `recv` return
            }
            let _ = receiver.join();
        }
    }
}

/// Decrements the count of requests in flight when its worker ends, however it ends.
struct InFlight(Arc<AtomicUsize>);

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// The receiver thread. It never waits for a client: it only takes requests from tiny_http and
/// starts threads or queues refusals (an unbounded channel, so never blocked either).
fn receive(
    server: &Server,
    stopping: &AtomicBool,
    token: &Arc<str>,
    inbound: &Sender<Inbound>,
    refuse: &Sender<(Request, String)>,
) {
    let in_flight = Arc::new(AtomicUsize::new(0));
    loop {
        let request = match server.recv() {
            Ok(request) => request,
            Err(e) => {
                if !stopping.load(Ordering::SeqCst) {
                    let _ = inbound.send(Inbound::Failed(format!("HTTP server: {e}")));
                }
                return;
            }
        };
        // Only this thread adds to the count, so it cannot pass the bound between the check
        // and the add.
        if in_flight.load(Ordering::SeqCst) >= MAX_IN_FLIGHT {
            let reason = format!("the coordinator has {MAX_IN_FLIGHT} requests in flight; try again shortly");
            let _ = refuse.send((request, reason));
            continue;
        }
        in_flight.fetch_add(1, Ordering::SeqCst);
        let slot = InFlight(in_flight.clone());
        // Held here too, so that the request can be refused if its thread cannot start (a
        // closure that `spawn` fails to run is dropped, and a dropped request is answered
        // 500 by whoever drops it, after reading the rest of its body).
        let held = Arc::new(Mutex::new(Some(request)));
        let (token, inbound, theirs) = (token.clone(), inbound.clone(), held.clone());
        let started = std::thread::Builder::new().name("http-request".into()).spawn(move || {
            let _slot = slot;
            let request = theirs.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(request) = request {
                serve(request, &token, &inbound);
            }
        });
        if let Err(e) = started {
            let request = held.lock().unwrap_or_else(|e| e.into_inner()).take();
            if let Some(request) = request {
                let _ = refuse.send((request, format!("cannot start a thread for the request: {e}")));
            }
        }
    }
}

/// A worker: one request, from its token to its answer.
fn serve(mut request: Request, token: &str, inbound: &Sender<Inbound>) {
    if !authorised(&request, token) {
        let _ = request.respond(unauthorised());
        return;
    }
    let mut body = Vec::new();
    let read = request.as_reader().take(MAX_BODY as u64 + 1).read_to_end(&mut body);
    let response = if read.is_err() {
        error_response(400, "cannot read the request body")
    } else if body.len() > MAX_BODY {
        error_response(413, "the body is over 1 MiB")
    } else {
        let (reply, answer) = mpsc::sync_channel(1);
        let call = Call { method: request.method().clone(), url: request.url().to_string(), body, reply };
        // Either fails only when the coordinator's thread has stopped taking calls (its
        // channel, with the calls still in it, is dropped when `run` returns).
        match inbound.send(Inbound::Call(call)).ok().and_then(|()| answer.recv().ok()) {
            Some((status, body)) => json_response(status, &body),
            None => error_response(503, "the coordinator is stopping"),
        }
    };
    let _ = request.respond(response);
}

/// A refuser thread: answers the requests the receiver could not admit, 401 without the
/// token and 503 with the reason with it.
fn refuser(refusals: &Mutex<Receiver<(Request, String)>>, token: &str, inbound: &Sender<Inbound>) {
    loop {
        let next = refusals.lock().unwrap_or_else(|e| e.into_inner()).recv();
        let Ok((request, reason)) = next else { return };
        if !authorised(&request, token) {
            let _ = request.respond(unauthorised());
            continue;
        }
        let _ = inbound.send(Inbound::Log(format!("{} {}: refused: {reason}", request.method(), request.url())));
        let _ = request.respond(error_response(503, &reason));
    }
}
