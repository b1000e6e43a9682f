//! A client that stalls in the middle of its request body holds up no one else: the
//! coordinator reads bodies and writes answers on a thread per request, its own thread only
//! routes. The stalled requests are written by hand on raw sockets; everyone else uses the
//! normal client, whose 20 s timeout turns a coordinator held up by the stall into a failure,
//! not a hang. Every wait is a poll loop with a generous deadline; nothing asserts on a fixed
//! sleep.

mod common;

use common::live::{Session, fresh_dir, wait_for};
use live::client::{CallError, Client};
use live::coordinator::{ServeOptions, serve};
use live::driver::DriverConfig;
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A request whose body the client has sent only the first bytes of, the rest held back.
struct Stalled {
    stream: TcpStream,
    rest: Vec<u8>,
}

/// Opens a connection and sends `POST path` with `token`, announcing the whole of `body`
/// (`Content-Length`), then only its first 10 bytes. The body is over 1 KiB: tiny_http reads
/// a body of up to 1 KiB whole on its own connection thread before handing the request over,
/// so only a longer one (or a chunked one) is read by whoever takes the request.
fn stall(addr: &str, token: &str, path: &str, body: &[u8]) -> Stalled {
    assert!(body.len() > 1024);
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(&body[..10]).unwrap();
    stream.flush().unwrap();
    Stalled { stream, rest: body[10..].to_vec() }
}

impl Stalled {
    /// Sends the rest of the body; the answer's status code and body.
    fn finish(mut self) -> (u16, String) {
        self.stream.write_all(&self.rest).unwrap();
        read_answer(&mut self.stream)
    }
}

/// Reads a whole answer (the request said `Connection: close`): its status code and body.
fn read_answer(stream: &mut TcpStream) -> (u16, String) {
    let (status, _, body) = read_raw_answer(stream);
    (status, body)
}

/// The status code, the header block and the body of an answer read to the end of the stream.
fn read_raw_answer(stream: &mut TcpStream) -> (u16, String, String) {
    let mut text = String::new();
    stream.read_to_string(&mut text).expect("an answer within the read timeout");
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("no status: {text:?}"));
    (status, head.to_string(), body.to_string())
}

/// A job's JSON, padded with spaces (still valid JSON) to `len` bytes.
fn padded_job(name: &str, command: &str, len: usize) -> Vec<u8> {
    let mut body = json!({ "name": name, "tasks": [{ "name": "0", "command": command }] }).to_string().into_bytes();
    assert!(body.len() < len);
    body.resize(len, b' ');
    body
}

#[test]
fn a_client_stalled_in_its_body_holds_up_neither_agents_nor_other_clients() {
    // Heartbeats every 0.2 s, a node declared dead after 3 missed: a coordinator held up by
    // the stalled client for a second would declare the agent's node dead.
    let mut s = Session::start("slow-client", &["--cluster", "1x1:SIM", "--heartbeat-s", "0.2"]);
    let token = s.token();
    let slow = stall(&s.addr, &token, "/v1/jobs", &padded_job("slow", "true", 100_000));
    // A chunked body, stalled too: never finished, dropped at the end.
    let mut chunked = TcpStream::connect(&s.addr).unwrap();
    let head = format!(
        "POST /v1/jobs HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n{{\"name\"",
        s.addr
    );
    chunked.write_all(head.as_bytes()).unwrap();

    let client = s.client();
    let cluster: Value = client.get("/v1/cluster").expect("the coordinator answers while a client stalls");
    assert_eq!(cluster["nodes"].as_array().map(Vec::len), Some(1), "{cluster}");
    s.agent("n0", 1);
    s.wait_agents(1);
    let submitted: Value = s.submit(json!({ "name": "quick", "tasks": [{ "name": "0", "command": "true" }] })).unwrap();
    assert_eq!(submitted, json!({ "id": 0, "name": "quick" }));
    s.wait_jobs_ended(60);
    assert_eq!(s.job("quick")["state"], "succeeded");

    // Without the token, still 401 with the scheme and nothing else, while the clients stall.
    let mut bare = TcpStream::connect(&s.addr).unwrap();
    bare.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let request = format!("GET /v1/cluster HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n", s.addr);
    bare.write_all(request.as_bytes()).unwrap();
    let (status, head, body) = read_raw_answer(&mut bare);
    assert_eq!(status, 401, "{head}");
    assert!(head.lines().any(|l| l.eq_ignore_ascii_case("WWW-Authenticate: Bearer")), "{head}");
    assert_eq!(body, "", "a 401 says nothing else");

    // The stalled submission, finished, is a submission like any other.
    let (status, body) = slow.finish();
    assert_eq!((status, body.as_str()), (201, r#"{"id":1,"name":"slow"}"#));
    drop(chunked);
    s.wait_jobs_ended(60);
    assert_eq!(s.job("slow")["state"], "succeeded");
    let cluster: Value = client.get("/v1/cluster").unwrap();
    assert_eq!(cluster["nodes"][0]["state"], "alive", "the agent's heartbeats were never held up: {cluster}");
    let (decisions, _) = s.decisions();
    assert!(decisions.iter().all(|d| d.contains(",start,") || d.contains(",finish,")), "{decisions:?}");
    assert_eq!(decisions.len(), 4, "{decisions:?}");
}

#[test]
fn beyond_the_requests_in_flight_bound_a_request_gets_503_and_stopping_ends_the_server() {
    // In-process, to stop it with its flag: `serve` must return, its listener closed, while
    // a client still stalls.
    let dir = fresh_dir("in-flight");
    let state = dir.join("state");
    let options = ServeOptions {
        state_dir: state.clone(),
        listen: "127.0.0.1:0".into(),
        config: Some(DriverConfig::new("1x1:SIM", "fifo")),
        journal_every: Duration::from_secs(1),
        quiet: true,
        app_xids: None,
        tls: None,
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (done, served) = std::sync::mpsc::channel();
    let flag = stop.clone();
    std::thread::spawn(move || done.send(serve(options, flag)));
    let addr = wait_for(30, "the coordinator's address", || {
        std::fs::read_to_string(state.join("addr")).ok().map(|a| a.trim().to_string())
    });
    let token = std::fs::read_to_string(state.join("token")).unwrap().trim().to_string();
    let client = Client::new(&addr, &token, Duration::from_secs(20));
    let stranger = Client::new(&addr, "wrong-token", Duration::from_secs(20));

    let (max, refusers) = (live::http::MAX_IN_FLIGHT, live::http::REFUSERS);
    let job = |i: usize| padded_job(&format!("held-{i}"), "true", 10_000);
    // tiny_http 0.12 runs each connection on a thread of its pool, and with connections
    // opened in a burst it can queue one for a thread while every thread is held by an open
    // connection (it counts a thread as idle until the thread wakes up), until a thread is
    // free. A connection opened and closed at once starts a thread, which takes the queued
    // one once its own is done: `kick`. And the clients open their connections (kept alive
    // for the next requests) before the burst.
    let kick = || drop(TcpStream::connect(&addr));
    let _: Value = client.get("/v1/jobs").unwrap();
    assert_eq!(stranger.get::<Value>("/v1/jobs").unwrap_err(), CallError::Status(401, String::new()));
    let mut stalled: Vec<Stalled> = (0..max).map(|i| stall(&addr, &token, "/v1/jobs", &job(i))).collect();
    // Each stalled request holds its place once the coordinator's front has taken it; until
    // all have, other requests are answered (and one that held a place when a stalled one
    // came in had that one refused: a few more make up for it, fewer than the refusers, which
    // the refused stalled ones hold).
    let reason =
        wait_for(60, "a request refused for the requests in flight", || match client.get::<Value>("/v1/jobs") {
            Ok(_) => {
                kick();
                if stalled.len() < max + refusers - 1 {
                    stalled.push(stall(&addr, &token, "/v1/jobs", &job(stalled.len())));
                }
                None
            }
            Err(CallError::Status(503, reason)) => Some(reason),
            Err(e) => panic!("the coordinator must answer while clients stall: {e}"),
        });
    assert_eq!(reason, format!("the coordinator has {max} requests in flight; try again shortly"));
    // Refused without the token: 401 and nothing else, not the 503's reason.
    assert_eq!(stranger.get::<Value>("/v1/jobs").unwrap_err(), CallError::Status(401, String::new()));

    // The 64 places are the stalled requests' (the refused GET was the only other one): those
    // beyond them are refused, with an answer at once, the 64 are not answered.
    let answered = |s: &Stalled| {
        s.stream.set_nonblocking(true).unwrap();
        let ready = s.stream.peek(&mut [0u8; 1]).is_ok_and(|n| n > 0);
        s.stream.set_nonblocking(false).unwrap();
        ready
    };
    wait_for(30, "the stalled requests beyond the bound to be refused", || {
        kick();
        (stalled.iter().filter(|s| answered(s)).count() == stalled.len() - max).then_some(())
    });
    let (refused, mut admitted): (Vec<Stalled>, Vec<Stalled>) = stalled.into_iter().partition(answered);
    for s in refused {
        let (status, answer) = s.finish();
        assert_eq!((status, answer), (503, json!({ "error": reason }).to_string()));
    }
    // One admitted finishes (a submission), the others give up: their places free again.
    let (status, answer) = admitted.pop().unwrap().finish();
    assert_eq!(status, 201, "{answer}");
    let last = admitted.pop().unwrap();
    drop(admitted);
    wait_for(30, "requests to be answered again", || client.get::<Value>("/v1/jobs").ok());
    let jobs: Value = client.get("/v1/jobs").unwrap();
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(1), "{jobs}");

    // Stopped with `last` still stalled: serve returns, and the listener goes with it.
    stop.store(true, Ordering::Relaxed);
    let result = served.recv_timeout(Duration::from_secs(20)).expect("serve returns once stopped");
    assert_eq!(result, Ok(()));
    wait_for(20, "the listener to close", || TcpStream::connect(&addr).is_err().then_some(()));
    // Its worker still runs: finished now, the request is answered, though not taken.
    let (status, answer) = last.finish();
    assert_eq!((status, answer.as_str()), (503, r#"{"error":"the coordinator is stopping"}"#));
    let _ = std::fs::remove_dir_all(&dir);
}
