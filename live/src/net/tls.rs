//! TLS for the coordinator's API (`live serve --tls`), in its own process: rustls (with ring,
//! no OpenSSL to install). The HTTP front ([`crate::net::http`]) stays plain and blocking, on a
//! loopback port of its own; this front listens on `--listen`, ends each TLS connection and
//! relays the bytes to that port and back, so the HTTP code has one way to run, with TLS or
//! without. The bearer token
//! still guards every request, TLS or not; TLS keeps it (and everything else) off the wire in
//! the clear.
//!
//! One thread per connection, at most [`MAX_CONNECTIONS`] at once, each relaying with
//! `poll(2)` on its two sockets, so a slow or silent client holds only its own thread, and not
//! for ever: a handshake not done in [`HANDSHAKE`], or a connection quiet in both directions
//! for [`IDLE`], is closed (agents reconnect by themselves). A client that has not finished
//! its handshake cannot keep others out: past [`HANDSHAKING_PER_ADDRESS`] connections of its
//! address in their handshake, or past [`MAX_CONNECTIONS`] in all, a new connection closes the
//! oldest one still in its handshake (of its address, else of all) and takes its place.
//! Past the handshake, the HTTP front's intake holds each connection to its own bounds (a
//! request head with the token within 5 s), and closing the relay's connection to the front
//! ends the relay.

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::{ServerConfig, ServerConnection};
use std::collections::BTreeMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

/// Connections relayed at once. Each is a thread and two sockets; agents hold one kept-alive
/// connection each and the command-line clients one per call, so this is room for a few
/// hundred nodes, and a bound on what connecting clients can make the coordinator hold.
pub const MAX_CONNECTIONS: usize = 512;

/// A connection with no traffic either way for this long is closed.
pub const IDLE: Duration = Duration::from_secs(300);

/// A client has this long to complete its handshake (so that clients which connect and send
/// nothing cannot hold the connections for [`IDLE`]).
pub const HANDSHAKE: Duration = Duration::from_secs(5);

/// Connections of one client address in their handshake at once (see the module's doc).
pub const HANDSHAKING_PER_ADDRESS: usize = 64;

/// The connections in their handshake, by the order they were accepted: their client's
/// address and a handle to close them with (which wakes their thread in `poll`).
type Handshaking = Arc<Mutex<BTreeMap<u64, (std::net::IpAddr, TcpStream)>>>;

/// Takes a connection out of [`Handshaking`] once its handshake is over, however it ended.
struct Shaking<'a> {
    all: &'a Handshaking,
    id: u64,
}

impl Drop for Shaking<'_> {
    fn drop(&mut self) {
        self.all.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.id);
    }
}

/// Whether a new connection from `ip` may be relayed, closing the oldest connection still in
/// its handshake when a bound is reached (of `ip`'s past [`HANDSHAKING_PER_ADDRESS`], of all
/// past [`MAX_CONNECTIONS`]). False only when every relayed connection is past its handshake.
fn make_room(handshaking: &Handshaking, open: usize, ip: std::net::IpAddr) -> bool {
    let mut all = handshaking.lock().unwrap_or_else(|e| e.into_inner());
    let mine = all.iter().filter(|(_, (a, _))| *a == ip).map(|(&id, _)| id);
    let victim = if mine.clone().count() >= HANDSHAKING_PER_ADDRESS {
        mine.min()
    } else if open >= MAX_CONNECTIONS {
        all.keys().next().copied()
    } else {
        return true;
    };
    match victim.and_then(|id| all.remove(&id)) {
        Some((_, stream)) => {
            let _ = stream.shutdown(Shutdown::Both);
            true
        }
        None => false,
    }
}

/// The certificates of a PEM file (at least one).
pub(crate) fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let certs = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| format!("{}: not a PEM certificate chain: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate in it (expected PEM `BEGIN CERTIFICATE` blocks)", path.display()));
    }
    Ok(certs)
}

/// The certificate chain and private key files, PEM, as a rustls server configuration; with
/// `client_ca`, every client must show a certificate that one of its certificates signed
/// (mutual TLS: a connection without one ends in the handshake, before any HTTP).
pub fn server_config(cert: &Path, key: &Path, client_ca: Option<&Path>) -> Result<Arc<ServerConfig>, String> {
    let certs = certificates(cert)?;
    let key_der =
        PrivateKeyDer::from_pem_file(key).map_err(|e| format!("{}: not a PEM private key: {e}", key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?;
    let builder = match client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in certificates(ca)? {
                roots.add(c).map_err(|e| format!("{}: not a CA certificate: {e}", ca.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider)
                .build()
                .map_err(|e| format!("{}: {e}", ca.display()))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(certs, key_der)
        .map_err(|e| format!("{} and {}: {e}", cert.display(), key.display()))?;
    Ok(Arc::new(config))
}

/// Whether a certificate and its key are both there (false: neither). One without the other
/// is an error, never mended by making a new pair: that would replace what clients trust, or
/// a key certificates were issued with.
fn pair_exists(cert: &Path, key: &Path) -> Result<bool, String> {
    match (cert.exists(), key.exists()) {
        (true, true) => Ok(true),
        (false, false) => Ok(false),
        (true, false) => {
            Err(format!("{} is there but its key {} is not: restore it, or remove both", cert.display(), key.display()))
        }
        (false, true) => Err(format!(
            "{} is there but its certificate {} is not: restore it, or remove both",
            key.display(),
            cert.display()
        )),
    }
}

/// Makes a self-signed certificate for `names` (host names or IP addresses clients use) into
/// `cert` and `key` (mode 0600), unless both exist already: what `--tls` uses when given no
/// certificate of the operator's. Clients trust it with `--ca-file` pointing at `cert`.
pub fn ensure_self_signed(cert: &Path, key: &Path, names: &[String]) -> Result<bool, String> {
    if pair_exists(cert, key)? {
        return Ok(false);
    }
    let made = rcgen::generate_simple_self_signed(names.to_vec()).map_err(|e| format!("TLS certificate: {e}"))?;
    crate::coordinator::store::write_private(key, made.signing_key.serialize_pem().as_bytes())?;
    std::fs::write(cert, made.cert.pem()).map_err(|e| format!("{}: {e}", cert.display()))?;
    Ok(true)
}

/// The client CA's certificate parameters. The same each time: what a certificate it issues
/// names as its issuer is this name and the CA key's identifier, so its key and these
/// parameters are the whole CA (no parsing of its certificate file is needed to sign).
fn client_ca_params() -> Result<rcgen::CertificateParams, String> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(|e| format!("client CA: {e}"))?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params.distinguished_name.push(rcgen::DnType::CommonName, "schedlab live client CA");
    Ok(params)
}

/// The coordinator's own CA for client certificates, `STATE/client-ca.pem` (key
/// `client-ca-key.pem`, 0600), made on first use: what `live issue-cert` signs agents'
/// certificates with, and what `live serve --tls-client-ca STATE/client-ca.pem` trusts.
pub fn ensure_client_ca(state_dir: &Path) -> Result<(PathBuf, PathBuf), String> {
    let (cert, key) = (state_dir.join("client-ca.pem"), state_dir.join("client-ca-key.pem"));
    if pair_exists(&cert, &key)? {
        return Ok((cert, key));
    }
    std::fs::create_dir_all(state_dir).map_err(|e| format!("{}: {e}", state_dir.display()))?;
    let signing = rcgen::KeyPair::generate().map_err(|e| format!("client CA: {e}"))?;
    let made = client_ca_params()?.self_signed(&signing).map_err(|e| format!("client CA: {e}"))?;
    crate::coordinator::store::write_private(&key, signing.serialize_pem().as_bytes())?;
    std::fs::write(&cert, made.pem()).map_err(|e| format!("{}: {e}", cert.display()))?;
    Ok((cert, key))
}

/// A client certificate for `name` (an agent, or a user), signed by the client CA of
/// `state_dir` (see [`ensure_client_ca`]), written to `out/NAME-cert.pem` and
/// `out/NAME-key.pem` (0600; an existing key is never overwritten): the pair an agent shows
/// with `--client-cert` and `--client-key`.
pub fn issue_client_certificate(state_dir: &Path, name: &str, out: &Path) -> Result<(PathBuf, PathBuf), String> {
    check_certificate_name(name)?;
    let (_, ca_key) = ensure_client_ca(state_dir)?;
    let pem = std::fs::read_to_string(&ca_key).map_err(|e| format!("{}: {e}", ca_key.display()))?;
    let signing = rcgen::KeyPair::from_pem(&pem).map_err(|e| format!("{}: {e}", ca_key.display()))?;
    let issuer = rcgen::Issuer::new(client_ca_params()?, signing);
    let key = rcgen::KeyPair::generate().map_err(|e| format!("client certificate: {e}"))?;
    let mut params = rcgen::CertificateParams::new(vec![name.to_string()])
        .map_err(|e| format!("client certificate `{name}`: {e}"))?;
    params.distinguished_name.push(rcgen::DnType::CommonName, name);
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let made = params.signed_by(&key, &issuer).map_err(|e| format!("client certificate `{name}`: {e}"))?;
    std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
    let (cert_path, key_path) = (out.join(format!("{name}-cert.pem")), out.join(format!("{name}-key.pem")));
    crate::coordinator::store::write_private(&key_path, key.serialize_pem().as_bytes())?;
    std::fs::write(&cert_path, made.pem()).map_err(|e| format!("{}: {e}", cert_path.display()))?;
    Ok((cert_path, key_path))
}

/// The client certificates of the connections relayed now, by the address of the relay's
/// connection to the HTTP front on the relay's side (what the front sees as its peer). Put in
/// once the handshake is done, before any request is relayed; taken out when the relay ends.
pub type Identities = Arc<Mutex<BTreeMap<SocketAddr, CertificateDer<'static>>>>;

/// Whether `cert` is for `name`: one of its subject alternative names is exactly that DNS
/// name (as `live issue-cert --name` writes it; compared byte for byte, not as host names
/// are, so that `n0` is not also `N0` or `n0.`, which are other agents).
pub fn certificate_is_for(cert: &CertificateDer<'_>, name: &str) -> bool {
    webpki::EndEntityCert::try_from(cert).is_ok_and(|c| c.valid_dns_names().any(|n| n == name))
}

/// Refuses a name a client certificate cannot carry as a DNS name (what the agent check
/// compares): `.`-separated labels of letters, digits, `-` and `_`, not all digits.
pub fn check_certificate_name(name: &str) -> Result<(), String> {
    let dns = rustls::pki_types::DnsName::try_from(name).is_ok();
    let numeric = name.bytes().all(|b| b.is_ascii_digit() || b == b'.');
    if dns && !numeric {
        Ok(())
    } else {
        Err(format!(
            "`{name}` cannot be a certificate's DNS name (labels of letters, digits, `-` and `_`, separated by `.`, not all digits): under mutual TLS, name agents so"
        ))
    }
}

/// Takes a connection's identity out of [`Identities`] when its relay ends, however it ends.
struct Recorded<'a> {
    identities: &'a Identities,
    key: SocketAddr,
}

impl Drop for Recorded<'_> {
    fn drop(&mut self) {
        self.identities.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.key);
    }
}

/// The TLS listener: runs until dropped.
pub struct TlsFront {
    addr: SocketAddr,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl TlsFront {
    /// Listens on `listen` and relays each connection, its TLS ended, to `backend`; the client
    /// certificates shown go into `identities`.
    pub fn start(
        listen: &str,
        backend: SocketAddr,
        config: Arc<ServerConfig>,
        identities: Identities,
    ) -> Result<TlsFront, String> {
        let listener = TcpListener::bind(listen).map_err(|e| format!("cannot listen on {listen}: {e}"))?;
        Self::start_on(listener, backend, config, identities)
    }

    /// As [`TlsFront::start`], on a listener bound already (the coordinator binds before it
    /// writes anything to its state directory).
    pub fn start_on(
        listener: TcpListener,
        backend: SocketAddr,
        config: Arc<ServerConfig>,
        identities: Identities,
    ) -> Result<TlsFront, String> {
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("tls-accept".into())
            .spawn(move || accept(listener, backend, config, &identities, &flag))
            .map_err(|e| format!("cannot start the TLS listener: {e}"))?;
        Ok(TlsFront { addr, stop, thread: Some(thread) })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for TlsFront {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // The accept loop blocks in accept(): a connection of our own wakes it to see `stop`
        // (with a timeout: if a full backlog drops it, the thread ends with the next one).
        if TcpStream::connect_timeout(&self.addr, Duration::from_secs(2)).is_ok()
            && let Some(thread) = self.thread.take()
        {
            let _ = thread.join();
        }
    }
}

fn accept(
    listener: TcpListener,
    backend: SocketAddr,
    config: Arc<ServerConfig>,
    identities: &Identities,
    stop: &AtomicBool,
) {
    let open = Arc::new(AtomicUsize::new(0));
    let handshaking = Handshaking::default();
    for (id, stream) in (0u64..).zip(listener.incoming()) {
        if stop.load(Ordering::SeqCst) {
            return;
        }
        let Ok(stream) = stream else {
            // A client gone before it was taken, or descriptors out for a moment: not a
            // reason to stop, nor to spin.
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        let Ok(peer) = stream.peer_addr() else { continue };
        // Dropped (closed at once) when every place is past its handshake. A place freed by
        // closing a handshake is counted free once its thread has ended: until then the count
        // may pass the bound by the connections closed that way.
        let (Ok(handle), true) = (stream.try_clone(), make_room(&handshaking, open.load(Ordering::SeqCst), peer.ip()))
        else {
            continue;
        };
        handshaking.lock().unwrap_or_else(|e| e.into_inner()).insert(id, (peer.ip(), handle));
        open.fetch_add(1, Ordering::SeqCst);
        let held = crate::net::http::Held(open.clone(), None);
        let (config, identities, handshaking) = (config.clone(), identities.clone(), handshaking.clone());
        // The count goes down when the thread ends however it ends, or with the closure if
        // the thread cannot start.
        let _ = std::thread::Builder::new().name("tls-relay".into()).spawn(move || {
            let _held = held;
            let shaking = Shaking { all: &handshaking, id };
            // A failed connection (a bad handshake, a client gone) concerns that client only.
            let _ = relay(stream, backend, config, &identities, shaking);
        });
    }
}

/// Waits until `a` (when it is watched) or `b` has something to read (or was closed), at
/// most `timeout`: which of them, or neither when the time ran out.
fn wait_readable(a: Option<&TcpStream>, b: Option<&TcpStream>, timeout: Duration) -> std::io::Result<(bool, bool)> {
    // poll(2) skips an entry whose descriptor is negative.
    let fd = |s: Option<&TcpStream>| s.map_or(-1, AsRawFd::as_raw_fd);
    let mut fds = [fd(a), fd(b)].map(|fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 });
    let ready = loop {
        // SAFETY: `fds` is a valid array of two pollfd for the duration of the call.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 2, timeout.as_millis() as libc::c_int) };
        if n >= 0 {
            break n;
        }
        let e = std::io::Error::last_os_error();
        if e.kind() != ErrorKind::Interrupted {
            return Err(e);
        }
    };
    let readable = |fd: &libc::pollfd| fd.fd >= 0 && fd.revents & (libc::POLLIN | libc::POLLHUP | libc::POLLERR) != 0;
    Ok(if ready == 0 { (false, false) } else { (readable(&fds[0]), readable(&fds[1])) })
}

/// Writes what rustls has to send (records, alerts) to the client.
fn flush(tls: &mut ServerConnection, client: &mut TcpStream) -> std::io::Result<()> {
    while tls.wants_write() {
        tls.write_tls(client)?;
    }
    Ok(())
}

/// Reads the client's next records and decrypts them; false once the client closed its side.
/// A protocol error is told to the client (a TLS alert) before it is returned.
fn receive(tls: &mut ServerConnection, client: &mut TcpStream) -> std::io::Result<bool> {
    if tls.read_tls(client)? == 0 {
        return Ok(false);
    }
    if let Err(e) = tls.process_new_packets() {
        let _ = flush(tls, client);
        return Err(std::io::Error::other(e));
    }
    Ok(true)
}

/// Relays what rustls has decrypted to the front; false once the client has said it sends no
/// more (close_notify, or its connection closed), or the front no longer reads.
fn forward(tls: &mut ServerConnection, plain: &mut TcpStream, buf: &mut [u8]) -> bool {
    loop {
        match tls.reader().read(buf) {
            Ok(0) => return false,
            Ok(n) if plain.write_all(&buf[..n]).is_ok() => {}
            Ok(_) => return false,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(_) => return false,
        }
    }
}

/// Ends one client's TLS and relays its requests to `backend` and the answers back, until
/// the front closes (after the client said it sends no more, or refused it), the client breaks
/// the protocol, the handshake takes over [`HANDSHAKE`], or the connection idles for [`IDLE`].
fn relay(
    mut client: TcpStream,
    backend: SocketAddr,
    config: Arc<ServerConfig>,
    identities: &Identities,
    shaking: Shaking<'_>,
) -> std::io::Result<()> {
    let mut tls = ServerConnection::new(config).map_err(std::io::Error::other)?;
    let _ = client.set_nodelay(true);
    // Writes to a client that does not read fail after this, instead of holding the thread.
    let _ = client.set_write_timeout(Some(HANDSHAKE));
    // The handshake first, with no connection to the front yet: a client that connects and
    // sends nothing holds only this thread, and for HANDSHAKE at most.
    let handshake_ends = std::time::Instant::now() + HANDSHAKE;
    while tls.is_handshaking() {
        flush(&mut tls, &mut client)?;
        let wait = handshake_ends.saturating_duration_since(std::time::Instant::now());
        if wait.is_zero() || !wait_readable(Some(&client), None, wait)?.0 || !receive(&mut tls, &mut client)? {
            return Ok(());
        }
    }
    drop(shaking);
    let mut plain = TcpStream::connect(backend)?;
    // Recorded before anything is relayed (the client's first request may have come with the
    // handshake's last flight): the front finds it with that request.
    let recorded = Recorded { identities, key: plain.local_addr()? };
    if let Some(cert) = tls.peer_certificates().and_then(|c| c.first()) {
        identities.lock().unwrap_or_else(|e| e.into_inner()).insert(recorded.key, cert.clone().into_owned());
    }
    let mut buf = vec![0u8; 16 * 1024];
    let mut client_sends = true;
    loop {
        if client_sends && !forward(&mut tls, &mut plain, &mut buf) {
            // No more requests: the front answers what it has, then closes.
            client_sends = false;
            let _ = plain.shutdown(Shutdown::Write);
        }
        flush(&mut tls, &mut client)?;
        let (from_client, from_backend) = wait_readable(client_sends.then_some(&client), Some(&plain), IDLE)?;
        if !from_client && !from_backend {
            return Ok(()); // idle
        }
        if from_backend {
            match plain.read(&mut buf) {
                Ok(n) if n > 0 => tls.writer().write_all(&buf[..n])?,
                // The front closed: its last answer is relayed; then close as it does, reading
                // away what the client still sends so that the kernel does not reset the
                // connection under that answer.
                _ => {
                    tls.send_close_notify();
                    flush(&mut tls, &mut client)?;
                    crate::net::http::close_gently(&mut client, Duration::from_secs(2));
                    return Ok(());
                }
            }
        }
        if from_client && !receive(&mut tls, &mut client)? {
            client_sends = false;
            let _ = plain.shutdown(Shutdown::Write);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::client::{CallError, Client};
    use serde_json::{Value, json};

    /// The coordinator's HTTP front on a loopback port, every call answered with its method,
    /// URL and body, as JSON, by a thread standing in for the coordinator's.
    fn backend() -> (SocketAddr, crate::net::http::Front, TcpListener, std::thread::JoinHandle<()>) {
        use crate::net::http::{Front, Inbound, Limits};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let (inbound, calls) = std::sync::mpsc::channel();
        let front = Front::start(&listener, "t".into(), Limits::default(), inbound, None).unwrap();
        let thread = std::thread::spawn(move || {
            while let Ok(Inbound::Call(call)) = calls.recv() {
                let body = String::from_utf8_lossy(&call.body).into_owned();
                let answer = json!({ "method": call.method.to_string(), "url": call.url.clone(), "body": body });
                call.answer(200, answer);
            }
        });
        (addr, front, listener, thread)
    }

    /// A fresh directory for one test, with a self-signed certificate for 127.0.0.1 in it:
    /// the directory, the certificate and its key.
    fn scratch_with_certificate(tag: &str) -> (PathBuf, PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("schedlab-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("tls-cert.pem"), dir.join("tls-key.pem"));
        ensure_self_signed(&cert, &key, &["127.0.0.1".to_string()]).unwrap();
        (dir, cert, key)
    }

    /// A client configuration trusting `ca` only.
    fn trusting(ca: &Path) -> crate::net::client::ClientTls {
        crate::net::client::ClientTls { ca_file: Some(ca.to_path_buf()), identity: None }
    }

    /// A client CA in `DIR/NAME-state/` and a certificate it issued to NAME: the CA's file,
    /// and the client's pair.
    fn client_pki(dir: &Path, name: &str) -> (PathBuf, (PathBuf, PathBuf)) {
        let state = dir.join(format!("{name}-state"));
        let (ca, _) = ensure_client_ca(&state).unwrap();
        let made = std::fs::read(&ca).unwrap();
        let pair = issue_client_certificate(&state, name, dir).unwrap();
        // Made once: issuing did not make another CA.
        assert_eq!(std::fs::read(&ca).unwrap(), made);
        (ca, pair)
    }

    #[test]
    fn with_a_client_ca_only_clients_showing_a_certificate_it_issued_get_through() {
        let (dir, cert, key) = scratch_with_certificate("mtls");
        let (ca, agent) = client_pki(&dir, "n0");
        let (_, stranger) = client_pki(&dir, "other"); // signed by another CA
        let (plain, _http, _listener, _served) = backend();
        let front = TlsFront::start(
            "127.0.0.1:0",
            plain,
            server_config(&cert, &key, Some(&ca)).unwrap(),
            Identities::default(),
        )
        .unwrap();
        let url = format!("https://127.0.0.1:{}", front.addr().port());
        let timeout = Duration::from_secs(20);
        let with = |identity: Option<(PathBuf, PathBuf)>| {
            let tls = crate::net::client::ClientTls { ca_file: Some(cert.clone()), identity };
            Client::with_tls(&url, "t", timeout, &tls).unwrap().get::<Value>("/v1/cluster")
        };
        let der = CertificateDer::from_pem_file(&agent.0).unwrap();
        assert!(certificate_is_for(&der, "n0"));
        for other in ["n1", "N0", "n0.", "n_0"] {
            assert!(!certificate_is_for(&der, other), "{other}");
        }
        for bad in ["42", "10.0.0.1", "-a", "a..b"] {
            assert!(
                issue_client_certificate(&dir.join("n0-state"), bad, &dir)
                    .unwrap_err()
                    .contains("cannot be a certificate's DNS name"),
                "{bad}"
            );
        }
        assert_eq!(with(Some(agent)).unwrap()["url"], "/v1/cluster");
        assert!(matches!(with(None), Err(CallError::Unreachable(_))));
        assert!(matches!(with(Some(stranger)), Err(CallError::Unreachable(_))));
        assert!(server_config(&cert, &key, Some(&dir.join("missing.pem"))).unwrap_err().contains("missing.pem"));
        // Half a pair is an error, not a new CA.
        std::fs::remove_file(dir.join("other-state").join("client-ca-key.pem")).unwrap();
        assert!(ensure_client_ca(&dir.join("other-state")).unwrap_err().contains("is there but its key"));
        // A key is never overwritten.
        assert!(issue_client_certificate(&dir.join("n0-state"), "n0", &dir).unwrap_err().contains("n0-key.pem"));
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn connections_that_never_finish_a_handshake_keep_no_client_out() {
        // More connections than the relay has places, none of which says a word: each new
        // one closes the oldest still in its handshake, so a client that handshakes at once
        // gets through promptly (before, the 513th connection on was closed at once).
        let (dir, cert, key) = scratch_with_certificate("tls-flood");
        let (plain, _http, _listener, _served) = backend();
        let front =
            TlsFront::start("127.0.0.1:0", plain, server_config(&cert, &key, None).unwrap(), Identities::default())
                .unwrap();
        let silent: Vec<TcpStream> =
            (0..MAX_CONNECTIONS + 88).map(|_| TcpStream::connect(front.addr()).unwrap()).collect();
        let url = format!("https://127.0.0.1:{}", front.addr().port());
        let mut times: Vec<Duration> = (0..20)
            .map(|_| {
                let started = std::time::Instant::now();
                let client = Client::with_tls(&url, "t", Duration::from_secs(20), &trusting(&cert)).unwrap();
                assert_eq!(client.get::<Value>("/v1/cluster").unwrap()["url"], "/v1/cluster");
                started.elapsed()
            })
            .collect();
        times.sort_unstable();
        assert!(times[19] < Duration::from_secs(1), "{times:?}");
        drop(silent);
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn an_answer_the_front_gives_before_the_client_is_done_sending_arrives_whole() {
        // A body over 1 MiB is refused (413) from its Content-Length while the client still
        // sends it: the relay must carry the answer to the client before it closes, and close
        // without a reset.
        let (dir, cert, key) = scratch_with_certificate("tls-close");
        let (plain, _http, _listener, _served) = backend();
        let front =
            TlsFront::start("127.0.0.1:0", plain, server_config(&cert, &key, None).unwrap(), Identities::default())
                .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(CertificateDer::from_pem_file(&cert).unwrap()).unwrap();
        let config = rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
        let tcp = TcpStream::connect(front.addr()).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let mut stream = rustls::StreamOwned::new(rustls::ClientConnection::new(Arc::new(config), name).unwrap(), tcp);
        stream
            .write_all(b"POST /v1/jobs HTTP/1.1\r\nAuthorization: Bearer t\r\nContent-Length: 9999999\r\n\r\n")
            .unwrap();
        // Part of the body, as a client does that does not wait for an answer.
        let _ = stream.write_all(&vec![b' '; 256 * 1024]);
        let mut answer = String::new();
        let _ = stream.read_to_string(&mut answer);
        assert!(answer.starts_with("HTTP/1.1 413 "), "{answer:?}");
        assert!(answer.ends_with(r#"{"error":"the body is over 1 MiB (9999999 bytes)"}"#), "{answer:?}");
        std::fs::remove_dir_all(&dir).ok();
    }

    #[test]
    fn requests_over_tls_reach_the_backend_and_only_a_trusted_certificate_is_accepted() {
        let dir = std::env::temp_dir().join(format!("schedlab-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (cert, key) = (dir.join("tls-cert.pem"), dir.join("tls-key.pem"));
        let names = ["localhost".to_string(), "127.0.0.1".to_string()];
        assert!(ensure_self_signed(&cert, &key, &names).unwrap());
        // Made once: a second start keeps the certificate clients already trust.
        let made = std::fs::read(&cert).unwrap();
        assert!(!ensure_self_signed(&cert, &key, &names).unwrap());
        assert_eq!(std::fs::read(&cert).unwrap(), made);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&key).unwrap().permissions().mode() & 0o777, 0o600);

        let (plain, http, _listener, served) = backend();
        let front =
            TlsFront::start("127.0.0.1:0", plain, server_config(&cert, &key, None).unwrap(), Identities::default())
                .unwrap();
        let url = format!("https://127.0.0.1:{}", front.addr().port());
        let timeout = Duration::from_secs(20);
        let client = Client::with_tls(&url, "t", timeout, &trusting(&cert)).unwrap();
        let got: Value = client.post("/v1/jobs?x=1", &json!({ "name": "j" })).unwrap();
        assert_eq!((got["method"].as_str(), got["url"].as_str()), (Some("POST"), Some("/v1/jobs?x=1")));
        let body: Value = serde_json::from_str(got["body"].as_str().unwrap()).unwrap();
        assert_eq!(body, json!({ "name": "j" }));
        // The same connection again (kept alive through the relay).
        let again: Value = client.get("/v1/cluster").unwrap();
        assert_eq!(again["url"], "/v1/cluster");
        // A client that does not trust the certificate refuses the connection; plain HTTP to
        // the TLS port gets no answer.
        let untrusting = Client::new(&url, "t", timeout).get::<Value>("/v1/cluster").unwrap_err();
        assert!(
            matches!(&untrusting, CallError::Unreachable(e) if e.contains("certificate") || e.contains("issuer")),
            "{untrusting:?}"
        );
        let plain_text = format!("http://127.0.0.1:{}", front.addr().port());
        assert!(matches!(
            Client::new(&plain_text, "t", timeout).get::<Value>("/v1/cluster"),
            Err(CallError::Unreachable(_))
        ));
        // What is not a certificate is refused with the file's name.
        std::fs::write(dir.join("junk.pem"), "not pem").unwrap();
        assert!(server_config(&dir.join("junk.pem"), &key, None).unwrap_err().contains("junk.pem"));
        assert!(
            Client::with_tls(&url, "t", timeout, &trusting(&dir.join("junk.pem")))
                .err()
                .unwrap()
                .contains("no certificate")
        );
        drop(front);
        drop(http); // the stand-in's channel closes with the front's last connection
        drop(client);
        served.join().unwrap();
        std::fs::remove_dir_all(&dir).ok();
    }
}
