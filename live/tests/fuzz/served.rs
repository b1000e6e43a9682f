//! A coordinator serving in-process on loopback, on a state directory of its own, and one
//! request at a time to it.

use super::driver::QUEUES;
use schedlab_live::config::LiveConfig;
use schedlab_live::coordinator::ServeOptions;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// A coordinator serving in-process on loopback, on a state directory of its own.
pub struct Served {
    pub dir: PathBuf,
    addr: String,
    pub user: String,
    /// n0's and n1's tokens.
    pub agents: [String; 2],
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Result<(), String>>>,
}

/// The coordinator's options on `dir`: 2 nodes of 2 GPUs, fifo, the two queues.
pub fn serve_options(dir: &Path) -> ServeOptions {
    use schedlab_live::coordinator::settings::Given;
    ServeOptions {
        state_dir: dir.to_path_buf(),
        listen: "127.0.0.1:0".into(),
        settings: Given::all(&LiveConfig {
            queues: QUEUES.into(),
            ..LiveConfig::new("2x2:SIM", "fifo").unwrap().with_heartbeat_ms(1000)
        }),
        journal_every: Duration::from_secs(3600),
        quiet: true,
        app_xids: None,
        tls: None,
        http: schedlab_live::net::http::Limits::default(),
        registry: policies::Registry::builtin(),
        slurm: None,
    }
}

impl Served {
    pub fn start(case: u64) -> Served {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir = std::env::temp_dir().join(format!("schedlab-fuzz-api-{}-{n}-{case:x}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let options = serve_options(&dir);
        let theirs = stop.clone();
        let thread = std::thread::spawn(move || schedlab_live::coordinator::serve(options, theirs));
        let deadline = Instant::now() + Duration::from_secs(30);
        let addr = loop {
            if let Ok(text) = std::fs::read_to_string(dir.join("addr"))
                && text.ends_with('\n')
            {
                break text.trim().to_string();
            }
            assert!(!thread.is_finished(), "the coordinator did not start: {:?}", thread.join());
            assert!(Instant::now() < deadline, "the coordinator did not start in 30 s");
            std::thread::sleep(Duration::from_millis(5));
        };
        let user = schedlab_live::coordinator::store::load_or_create_token(&dir).unwrap();
        let agents = ["n0", "n1"].map(|a| schedlab_live::net::auth::agent_token(&dir, a).unwrap());
        Served { dir, addr, user, agents, stop, thread: Some(thread) }
    }

    /// One request on a connection of its own: the status, and the body.
    pub fn call(&self, method: &str, path: &str, token: Option<&str>, body: &[u8]) -> Result<(u16, Vec<u8>), String> {
        let mut stream = TcpStream::connect(&self.addr).map_err(|e| format!("connect: {e}"))?;
        stream.set_read_timeout(Some(Duration::from_secs(30))).map_err(|e| e.to_string())?;
        let auth = token.map(|t| format!("Authorization: Bearer {t}\r\n")).unwrap_or_default();
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: fuzz\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).and_then(|_| stream.write_all(body)).map_err(|e| format!("write: {e}"))?;
        let mut answer = Vec::new();
        stream.read_to_end(&mut answer).map_err(|e| format!("read: {e}"))?;
        let text = String::from_utf8_lossy(&answer);
        let status = text
            .strip_prefix("HTTP/1.1 ")
            .and_then(|rest| rest.get(..3))
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| format!("no status line in {:?}", text.chars().take(200).collect::<String>()))?;
        let body = answer.windows(4).position(|w| w == b"\r\n\r\n").map_or(Vec::new(), |at| answer[at + 4..].to_vec());
        Ok((status, body))
    }

    pub fn alive(&self) -> bool {
        self.thread.as_ref().is_some_and(|t| !t.is_finished())
    }

    /// Stops it (as SIGTERM would): how `run` ended.
    pub fn stop(&mut self) -> Result<(), String> {
        self.stop.store(true, Ordering::Relaxed);
        match self.thread.take().map(|t| t.join()) {
            Some(Ok(result)) => result,
            Some(Err(_)) => Err("the coordinator's thread panicked".into()),
            None => Ok(()),
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
