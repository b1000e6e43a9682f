//! A client that stalls in the middle of its request body holds up no one else: the
//! coordinator reads requests and writes answers on a thread per connection, within
//! timeouts, its own thread only routes. The stalled requests are written by hand on raw sockets; everyone else uses the
//! normal client, whose 20 s timeout turns a coordinator held up by the stall into a failure,
//! not a hang. Every wait is a poll loop with a generous deadline; nothing asserts on a fixed
//! sleep.

mod common;

use common::live::{Session, fresh_dir, wait_for};
use live::config::LiveConfig;
use live::coordinator::{ServeOptions, serve};
use live::net::client::{CallError, Client};
use live::net::http::Limits;
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
/// (`Content-Length`), then only its first 10 bytes (over 1 KiB: more than one read).
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
    /// Whether the coordinator has answered (refused it: a place of its token was taken, say
    /// by an earlier call whose connection had not yet closed) or closed it, rather than held it.
    fn answered(&self) -> bool {
        self.stream.set_nonblocking(true).unwrap();
        let answered = !matches!(self.stream.peek(&mut [0u8; 1]), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
        self.stream.set_nonblocking(false).unwrap();
        answered
    }

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
    // A request timeout far above what the test takes: the stalled body is finished below.
    let args = ["--cluster", "1x1:SIM", "--heartbeat-s", "0.2", "--request-timeout-s", "300"];
    let mut s = Session::start("slow-client", &args);
    let token = s.token();
    let slow = stall(&s.addr, &token, "/v1/jobs", &padded_job("slow", "true", 100_000));
    // A chunked body is refused at once (411): only Content-Length bodies are taken.
    let mut chunked = TcpStream::connect(&s.addr).unwrap();
    chunked.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST /v1/jobs HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n{{\"name\"",
        s.addr
    );
    chunked.write_all(head.as_bytes()).unwrap();
    assert_eq!(read_answer(&mut chunked).0, 411);

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
    s.wait_jobs_ended(60);
    assert_eq!(s.job("slow")["state"], "succeeded");
    let cluster: Value = client.get("/v1/cluster").unwrap();
    assert_eq!(cluster["nodes"][0]["state"], "alive", "the agent's heartbeats were never held up: {cluster}");
    let (decisions, _) = s.decisions();
    assert!(decisions.iter().all(|d| d.contains(",start,") || d.contains(",finish,")), "{decisions:?}");
    assert_eq!(decisions.len(), 4, "{decisions:?}");
}

/// One answer on a kept-alive connection: its status code and body (`Content-Length` long).
fn read_one_answer(stream: &mut TcpStream) -> (u16, String) {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        stream.read_exact(&mut byte).expect("an answer within the read timeout");
        head.push(byte[0]);
    }
    let head = String::from_utf8(head).unwrap();
    let status = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
    let length: usize =
        head.lines().find_map(|l| l.strip_prefix("Content-Length: ")).and_then(|n| n.trim().parse().ok()).unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

/// A coordinator served in-process (on `cluster`, fifo, with `limits`), stopped with its flag.
struct InProcess {
    dir: std::path::PathBuf,
    addr: String,
    stop: Arc<AtomicBool>,
    /// What `serve` returned, once it has.
    served: std::sync::mpsc::Receiver<Result<(), String>>,
}

impl InProcess {
    fn start(name: &str, cluster: &str, limits: Limits) -> InProcess {
        let dir = fresh_dir(name);
        let state = dir.join("state");
        let options = ServeOptions {
            state_dir: state.clone(),
            listen: "127.0.0.1:0".into(),
            settings: live::coordinator::settings::Given::all(&LiveConfig::new(cluster, "fifo").unwrap()),
            journal_every: Duration::from_secs(1),
            quiet: true,
            app_xids: None,
            tls: None,
            http: limits,
            registry: policies::Registry::builtin(),
            slurm: None,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (done, served) = std::sync::mpsc::channel();
        let flag = stop.clone();
        std::thread::spawn(move || done.send(serve(options, flag)));
        let addr = wait_for(30, "the coordinator's address", || {
            std::fs::read_to_string(state.join("addr")).ok().map(|a| a.trim().to_string())
        });
        InProcess { dir, addr, stop, served }
    }
}

#[test]
fn beyond_the_connection_bound_a_client_gets_503_a_stalled_one_408_and_stopping_ends_the_server() {
    // In-process, with small limits, to stop it with its flag: `serve` must return, its
    // listener closed.
    let limits = Limits { max_connections: 8, request_timeout: Duration::from_secs(2), ..Limits::default() };
    let InProcess { dir, addr, stop, served, .. } = InProcess::start("bounds", "1x1:SIM", limits);
    let token = std::fs::read_to_string(dir.join("state").join("token")).unwrap().trim().to_string();
    // A kept-alive connection of our own, open through everything below.
    let mut kept = TcpStream::connect(&addr).unwrap();
    kept.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let get = format!("GET /v1/jobs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\r\n");
    kept.write_all(get.as_bytes()).unwrap();
    assert_eq!(read_one_answer(&mut kept), (200, r#"{"jobs":[],"next":null}"#.to_string()));

    // Seven clients stall in their bodies: with `kept`, the 8 connections allowed. The next
    // connection is refused at once, with the reason (without reading what it sends).
    let job = |i: usize| padded_job(&format!("held-{i}"), "true", 10_000);
    let stalled: Vec<Stalled> = (0..7).map(|i| stall(&addr, &token, "/v1/jobs", &job(i))).collect();
    let mut refused = stall(&addr, &token, "/v1/jobs", &job(7)).stream;
    let (status, body) = read_answer(&mut refused);
    assert_eq!(
        (status, body),
        (503, json!({ "error": "the coordinator has 8 connections open; try again shortly" }).to_string())
    );
    // A stalled client is answered 408 after the request timeout and closed: the places free.
    for s in stalled {
        let mut stream = s.stream;
        let (status, body) = read_answer(&mut stream);
        assert_eq!((status, body), (408, json!({ "error": "the request body did not arrive in time" }).to_string()));
    }
    let client = Client::new(&addr, &token, Duration::from_secs(20));
    let submitted: Value = wait_for(30, "a place again", || {
        client.post("/v1/jobs", &json!({ "name": "after", "tasks": [{ "name": "0", "command": "true" }] })).ok()
    });
    assert_eq!(submitted, json!({ "id": 0, "name": "after" }));
    // Without the token: 401 and nothing else, before the body is read; a body over 1 MiB is
    // refused from its Content-Length, unread.
    assert_eq!(
        Client::new(&addr, "wrong", Duration::from_secs(20)).get::<Value>("/v1/jobs").unwrap_err(),
        CallError::Status(401, String::new())
    );
    let mut huge = TcpStream::connect(&addr).unwrap();
    huge.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!(
        "POST /v1/jobs HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Length: 99999999999999\r\n\r\n{{"
    );
    huge.write_all(head.as_bytes()).unwrap();
    assert_eq!(
        read_answer(&mut huge),
        (413, json!({ "error": "the body is over 1 MiB (99999999999999 bytes)" }).to_string())
    );

    // Without the token, the same length is answered 401, unread, and the coordinator goes
    // on (its first HTTP server allocated what a length announced, and aborted on this).
    let mut stranger = TcpStream::connect(&addr).unwrap();
    stranger.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let head = format!("POST /v1/jobs HTTP/1.1\r\nHost: {addr}\r\nContent-Length: 99999999999999\r\n\r\n{{");
    stranger.write_all(head.as_bytes()).unwrap();
    assert_eq!(read_answer(&mut stranger), (401, String::new()));
    let jobs: Value = client.get("/v1/jobs").unwrap();
    assert_eq!(jobs["jobs"].as_array().map(Vec::len), Some(1), "{jobs}");

    // Stopped: serve returns, and the listener goes with it. A request on a connection
    // that was open before is answered 503, not taken.
    stop.store(true, Ordering::Relaxed);
    let result = served.recv_timeout(Duration::from_secs(20)).expect("serve returns once stopped");
    assert_eq!(result, Ok(()));
    wait_for(20, "the listener to close", || TcpStream::connect(&addr).is_err().then_some(()));
    kept.write_all(get.as_bytes()).unwrap();
    assert_eq!(read_one_answer(&mut kept), (503, r#"{"error":"the coordinator is stopping"}"#.to_string()));
    let _ = std::fs::remove_dir_all(&dir);
}

/// One token's holder fills only that token's places: the user token's slow bodies leave the
/// agents served, and one agent's leave another agent served (issue 32: one token's slow
/// bodies made 296 of 297 legitimate requests 503, and a restarting agent could not register).
#[test]
fn one_tokens_connections_cannot_take_another_tokens_places() {
    let limits = Limits { max_connections: 16, per_user: 3, per_agent: 2, ..Limits::default() };
    let InProcess { dir, addr, stop, served } = InProcess::start("per-token", "2x1:SIM", limits);
    let state = dir.join("state");
    let user = std::fs::read_to_string(state.join("token")).unwrap().trim().to_string();
    let agent = |name: &str| live::net::auth::agent_token(&state, name).unwrap();
    let status_of = |token: &str, url: &str| {
        let client = Client::new(&addr, token, Duration::from_secs(20));
        match client.get::<Value>(url) {
            Ok(_) => 200,
            Err(CallError::Status(status, _)) => status,
            Err(e) => panic!("{url}: {e:?}"),
        }
    };
    let job = |i: usize| padded_job(&format!("held-{i}"), "true", 10_000);
    let users: Vec<Stalled> = (0..3).map(|i| stall(&addr, &user, "/v1/jobs", &job(i))).collect();
    // The user token's places are full: a fourth is refused, saying whose places they are...
    wait_for(20, "the user token's places to fill", || (status_of(&user, "/v1/jobs") == 503).then_some(()));
    let mut refused = stall(&addr, &user, "/v1/jobs", &job(3)).stream;
    assert_eq!(
        read_answer(&mut refused),
        (503, json!({ "error": "the user token has 3 connections open; try again shortly" }).to_string())
    );
    // ...and an agent is served all the same.
    assert_ne!(status_of(&agent("n0"), "/v1/agents/n0/assignments?generation=0"), 503);
    // One agent's places full: it is refused, another agent is served.
    // The call just made may hold its place a moment after its answer: a stall refused for
    // it is made again until both hold theirs.
    let n0_stall = || stall(&addr, &agent("n0"), "/v1/agents/heartbeat", &job(9));
    let mut n0: Vec<Stalled> = (0..2).map(|_| n0_stall()).collect();
    wait_for(20, "agent n0's places to fill", || {
        for s in n0.iter_mut().filter(|s| s.answered()) {
            *s = n0_stall();
        }
        (status_of(&agent("n0"), "/v1/agents/n0/assignments?generation=0") == 503).then_some(())
    });
    assert_ne!(status_of(&agent("n1"), "/v1/agents/n1/assignments?generation=0"), 503);
    // Places free as their connections end.
    drop((users, n0));
    wait_for(20, "the user token's places to free", || (status_of(&user, "/v1/jobs") == 200).then_some(()));
    stop.store(true, Ordering::Relaxed);
    assert_eq!(served.recv_timeout(Duration::from_secs(20)).expect("serve returns once stopped"), Ok(()));
    let _ = std::fs::remove_dir_all(&dir);
}
