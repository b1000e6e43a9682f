//! Clients without the token cannot deny service to those with it (issue 12, item 4): a
//! coordinator flooded with idle connections, then with a slowloris (connections sending a
//! byte a second), still answers a legitimate client's new connections promptly, and an
//! agent restarting during the flood registers. Before the front read heads by readiness,
//! 600 idle connections took its 512 threads and every new client got `503` for 30 s.
//!
//! Bounded: each phase runs a fixed number of requests; every wait has a deadline.

mod common;

use common::live::{Session, wait_for};
use socket2::{Domain, Socket, Type};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A legitimate request on a new connection (as a command-line client makes it): how long
/// its whole answer took. Panics unless it is `200`.
fn legitimate(addr: &str, token: &str) -> Duration {
    let started = Instant::now();
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let request = format!(
        "GET /v1/cluster HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    assert!(answer.starts_with("HTTP/1.1 200 "), "{answer:?}");
    started.elapsed()
}

/// The slowest of `n` legitimate requests but the 1 % slowest (p99, nearest rank: the 99th of
/// 100), in turn.
fn p99(addr: &str, token: &str, n: usize) -> Duration {
    let mut times: Vec<Duration> = (0..n)
        .map(|_| {
            let t = legitimate(addr, token);
            std::thread::sleep(Duration::from_millis(10));
            t
        })
        .collect();
    times.sort_unstable();
    // Not `times[n * 99 / 100]`: for 100 requests that is the slowest, so one scheduling
    // hiccup of a loaded CI machine failed the test (1.022 s once).
    times[(n * 99).div_ceil(100) - 1]
}

/// Where the slowloris connects from: another address than the legitimate clients'
/// (127.0.0.1), as an attacker's is. A client that shares the attacker's address shares its
/// 64 places among the connections waiting for their head, by design: there the flood's
/// reconnections (600 in a burst each second) closed a legitimate connection whose request
/// had not arrived yet when it was taken, and the client read nothing (a01c684's CI, once).
const ATTACKER: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 2);

/// A connection to `addr` from [`ATTACKER`] (every 127.x address is the loopback's on Linux).
fn connect_from_attacker(addr: &str) -> Option<TcpStream> {
    let to: SocketAddr = addr.parse().ok()?;
    let socket = Socket::new(Domain::IPV4, Type::STREAM, None).ok()?;
    socket.bind(&SocketAddr::from((ATTACKER, 0)).into()).ok()?;
    socket.connect(&to.into()).ok()?;
    Some(socket.into())
}

/// `count` connections from [`ATTACKER`] that each send one byte of a request head a second
/// (a new connection in place of one the coordinator closed), until `stop`.
fn slowloris(addr: String, count: usize, stop: Arc<AtomicBool>) -> std::thread::JoinHandle<u64> {
    std::thread::spawn(move || {
        let head = b"GET /v1/cluster HTTP/1.1\r\nHost: x\r\nX-Padding: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\n";
        let open = || connect_from_attacker(&addr).map(|s| (s, 0usize));
        let mut conns: Vec<Option<(TcpStream, usize)>> = (0..count).map(|_| open()).collect();
        assert!(conns.iter().any(Option::is_some), "the slowloris could not connect from {ATTACKER}");
        let mut reopened = 0u64;
        while !stop.load(Ordering::SeqCst) {
            for c in &mut conns {
                let sent = c.as_mut().is_some_and(|(s, at)| {
                    let ok = s.write_all(&head[*at % head.len()..*at % head.len() + 1]).is_ok();
                    *at += 1;
                    ok
                });
                if !sent {
                    *c = open();
                    reopened += 1;
                }
            }
            let second = Instant::now() + Duration::from_secs(1);
            while Instant::now() < second && !stop.load(Ordering::SeqCst) {
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        reopened
    })
}

#[test]
fn idle_and_slow_connections_without_the_token_deny_no_one_service() {
    let mut s = Session::start("flood", &["--cluster", "1x1:SIM", "--heartbeat-s", "1"]);
    let token = s.token();
    let agent = s.agent("n0", 1);
    s.wait_agents(1);
    // What this guards against is a front that runs out of threads: every new client then
    // got `503` (`legitimate` panics) or waited 30 s. Two seconds leaves room for a shared
    // 2-core machine under a 600-connection flood; a healthy front answers in milliseconds.
    let bound = Duration::from_secs(2);

    // 600 idle connections, more than the 512 the front once gave a thread each.
    let idle: Vec<TcpStream> = (0..600).map(|_| TcpStream::connect(&s.addr).unwrap()).collect();
    let idle_p99 = p99(&s.addr, &token, 100);
    assert!(idle_p99 < bound, "p99 {idle_p99:?} with 600 idle connections open");
    drop(idle);

    // A slowloris of 600 connections at a byte a second, while legitimate requests run and
    // the agent restarts.
    let stop = Arc::new(AtomicBool::new(false));
    let loris = slowloris(s.addr.clone(), 600, stop.clone());
    std::thread::sleep(Duration::from_secs(2)); // it has sent its first bytes, twice
    s.procs.kill(agent);
    let restarted = Instant::now();
    s.agent("n0", 1);
    let slow_p99 = p99(&s.addr, &token, 100);
    wait_for(30, "the restarted agent to register", || s.log().contains("agent `n0` restarted").then_some(()));
    let registered = restarted.elapsed();
    stop.store(true, Ordering::SeqCst);
    let reopened = loris.join().unwrap();
    let flood = format!("a slowloris of 600 connections ({reopened} reopened after the coordinator closed them)");
    assert!(slow_p99 < bound, "p99 {slow_p99:?} under {flood}");
    // The agent's own start and first try take well under a second; its retries back off.
    assert!(registered < Duration::from_secs(10), "the restarted agent registered after {registered:?} under {flood}");
}
