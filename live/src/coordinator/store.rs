//! Durable state: one SQLite database (WAL mode, synchronous FULL) in the coordinator's state
//! directory, and the API token beside it.
//!
//! - `meta`: the coordinator's configuration (fixed for the life of the directory), and the
//!   XIDs it takes for application errors (`--app-xids`);
//! - `batches`: the journal, one row per batch, written before the batch is applied;
//! - `agents`: which agent holds which node and which GPU UUIDs;
//! - `refusals`: requests refused for what they claimed (unknown GPUs, GPUs held by another
//!   agent), for the operator.
//!
//! Everything else (jobs, tasks, attempts, decisions) is derived from the journal by the
//! [`crate::driver::Driver`], so it cannot disagree with it.

use crate::config::LiveConfig;
use crate::driver::Batch;
use crate::wire::GpuInfo;
use rusqlite::{Connection, OptionalExtension, params};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

pub struct Store {
    db: Connection,
    /// The same database without syncing, for the record of refusals only: a refusal is a
    /// note for the operator, and a flood of refused requests must not cost an fsync each
    /// (812 refusals a second tripled the API's median latency). Their rows reach the disk
    /// with the next journaled batch's sync.
    notes: Connection,
    /// `STATE/acknowledged`: see [`Store::check_whole`].
    acknowledged: PathBuf,
}

/// How many refusals the record keeps (see [`Store::refuse`]).
pub const REFUSALS_KEPT: i64 = 10_000;

/// The file that holds the last batch the directory acknowledged (its `time_ms`).
pub fn acknowledged_path(dir: &Path) -> PathBuf {
    dir.join("acknowledged")
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRecord {
    pub name: String,
    pub node: u32,
    pub addr: String,
    pub gpus: Vec<GpuInfo>,
}

fn sql(e: rusqlite::Error) -> String {
    format!("state database: {e}")
}

impl Store {
    /// Whether `dir` holds a coordinator's state.
    pub fn exists(dir: &Path) -> bool {
        dir.join("live.db").is_file()
    }

    pub fn open(dir: &Path) -> Result<Store, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
        let path = dir.join("live.db");
        let db = Connection::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        db.pragma_update(None, "journal_mode", "WAL").map_err(sql)?;
        db.pragma_update(None, "synchronous", "FULL").map_err(sql)?;
        db.busy_timeout(std::time::Duration::from_secs(10)).map_err(sql)?;
        db.execute_batch(
            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS batches (time_ms INTEGER PRIMARY KEY, inputs TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS agents (name TEXT PRIMARY KEY, node INTEGER NOT NULL UNIQUE,
                 addr TEXT NOT NULL, gpus TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS refusals (id INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL,
                 who TEXT NOT NULL, reason TEXT NOT NULL);
             CREATE TABLE IF NOT EXISTS slurm_runs (job INTEGER NOT NULL, attempt INTEGER NOT NULL,
                 restarts INTEGER NOT NULL, PRIMARY KEY (job, attempt));",
        )
        .map_err(sql)?;
        let notes = Connection::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        notes.pragma_update(None, "synchronous", "OFF").map_err(sql)?;
        notes.busy_timeout(std::time::Duration::from_secs(10)).map_err(sql)?;
        let store = Store { db, notes, acknowledged: acknowledged_path(dir) };
        store.check_whole()?;
        Ok(store)
    }

    /// Refuses a database that holds fewer batches than this directory acknowledged. SQLite
    /// keeps the batches written since its last checkpoint in `live.db-wal` only: a live.db
    /// restored or copied without it opens without complaint and without them, and every
    /// job they held would be lost with no word. Each append records its last batch in
    /// `STATE/acknowledged` (outside the database, so it survives the WAL's loss).
    fn check_whole(&self) -> Result<(), String> {
        let Ok(text) = std::fs::read_to_string(&self.acknowledged) else { return Ok(()) };
        let path = self.acknowledged.display();
        let acknowledged: u64 =
            text.trim().parse().map_err(|_| format!("{path}: expected a time in ms, not `{}`", text.trim()))?;
        let last: Option<i64> = self.db.query_row("SELECT MAX(time_ms) FROM batches", [], |r| r.get(0)).map_err(sql)?;
        let last = last.map_or(0, |t| t as u64);
        if last >= acknowledged {
            return Ok(());
        }
        let dir = self.acknowledged.parent().unwrap_or(Path::new(".")).display();
        Err(format!(
            "{dir}/live.db holds batches up to {last} ms, but this directory acknowledged batches up to {acknowledged} ms: \
             its write-ahead log ({dir}/live.db-wal) is missing or cut short (a backup or copy of live.db alone?). \
             Put the live.db-wal that belongs with it back beside it; or, to start from what live.db holds and lose \
             every job and report acknowledged after {last} ms, remove {path}"
        ))
    }

    pub fn config(&self) -> Result<Option<LiveConfig>, String> {
        let text: Option<String> = self
            .db
            .query_row("SELECT value FROM meta WHERE key = 'config'", [], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        text.map(|t| LiveConfig::from_stored(&t)).transpose()
    }

    pub fn set_config(&self, config: &LiveConfig) -> Result<(), String> {
        let text = serde_json::to_string(config).map_err(|e| e.to_string())?;
        self.db
            .execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('config', ?1)", params![text])
            .map_err(sql)?;
        Ok(())
    }

    /// The Slurm executor's run records: (Slurm job, attempt) -> the requeue count of the
    /// Slurm run that carries the attempt (see `crate::slurm::executor`).
    pub fn slurm_runs(&self) -> Result<BTreeMap<(u64, u32), u32>, String> {
        let mut statement = self.db.prepare("SELECT job, attempt, restarts FROM slurm_runs").map_err(sql)?;
        let rows = statement
            .query_map([], |r| {
                Ok(((r.get::<_, i64>(0)? as u64, r.get::<_, i64>(1)? as u32), r.get::<_, i64>(2)? as u32))
            })
            .map_err(sql)?;
        rows.collect::<Result<_, _>>().map_err(sql)
    }

    /// Records, durably, that `attempt` of Slurm job `job` is its run `restarts`.
    pub fn put_slurm_run(&self, job: u64, attempt: u32, restarts: u32) -> Result<(), String> {
        self.db
            .execute(
                "INSERT OR REPLACE INTO slurm_runs (job, attempt, restarts) VALUES (?1, ?2, ?3)",
                params![job as i64, attempt as i64, restarts as i64],
            )
            .map_err(sql)?;
        Ok(())
    }

    /// The Slurm node names of the cluster this directory was made for (node id order).
    pub fn slurm_nodes(&self) -> Result<Option<Vec<String>>, String> {
        self.meta_json("slurm_nodes")
    }

    pub fn set_slurm_nodes(&self, names: &[String]) -> Result<(), String> {
        self.set_meta_json("slurm_nodes", names)
    }

    /// The XIDs the coordinator treats as application errors; None for a directory created
    /// before the setting existed (or not yet given one).
    pub fn app_xids(&self) -> Result<Option<Vec<u64>>, String> {
        self.meta_json("app_xids")
    }

    pub fn set_app_xids(&self, xids: &[u64]) -> Result<(), String> {
        self.set_meta_json("app_xids", xids)
    }

    /// A setting kept as JSON under `key` in `meta`; None when it was never set.
    fn meta_json<T: serde::de::DeserializeOwned>(&self, key: &str) -> Result<Option<T>, String> {
        let text: Option<String> = self
            .db
            .query_row("SELECT value FROM meta WHERE key = ?1", params![key], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        text.map(|t| serde_json::from_str(&t).map_err(|e| format!("state database: bad {key}: {e}"))).transpose()
    }

    fn set_meta_json<T: serde::Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<(), String> {
        let text = serde_json::to_string(value).map_err(|e| e.to_string())?;
        self.db.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?1, ?2)", params![key, text]).map_err(sql)?;
        Ok(())
    }

    /// The coordinator generation after this start: one more than the last start's (1 for
    /// the first), stored before the coordinator answers anything. Agents learn it when they
    /// register and send it with every report, so that none acts on or reports to a
    /// coordinator that is not the latest one (see [`crate::coordinator`]). It never reaches the
    /// journal: a replay does not depend on it.
    pub fn next_generation(&mut self) -> Result<u64, String> {
        let tx = self.db.transaction().map_err(sql)?;
        let last: Option<String> = tx
            .query_row("SELECT value FROM meta WHERE key = 'generation'", [], |r| r.get(0))
            .optional()
            .map_err(sql)?;
        let last = match last {
            None => 0,
            Some(t) => t.parse::<u64>().map_err(|_| format!("state database: bad generation `{t}`"))?,
        };
        let next = last + 1;
        tx.execute("INSERT OR REPLACE INTO meta (key, value) VALUES ('generation', ?1)", params![next.to_string()])
            .map_err(sql)?;
        tx.commit().map_err(sql)?;
        Ok(next)
    }

    /// The journal, in time order.
    pub fn batches(&self) -> Result<Vec<Batch>, String> {
        let mut stmt = self.db.prepare("SELECT time_ms, inputs FROM batches ORDER BY time_ms").map_err(sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))
            .map_err(sql)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql)?;
        rows.into_iter()
            .map(|(t, inputs)| {
                Ok(Batch {
                    time_ms: t as u64,
                    inputs: serde_json::from_str(&inputs).map_err(|e| format!("state database: batch {t}: {e}"))?,
                })
            })
            .collect()
    }

    /// Appends batches to the journal, all or none, durably.
    pub fn append(&mut self, batches: &[Batch]) -> Result<(), String> {
        let tx = self.db.transaction().map_err(sql)?;
        for b in batches {
            let inputs = serde_json::to_string(&b.inputs).map_err(|e| e.to_string())?;
            tx.execute("INSERT INTO batches (time_ms, inputs) VALUES (?1, ?2)", params![b.time_ms as i64, inputs])
                .map_err(sql)?;
        }
        tx.commit().map_err(sql)?;
        // The batches are durable now, and the caller applies them whatever becomes of the
        // mark: a mark not written (a full disk) only says less than the database holds.
        if let Some(last) = batches.last() {
            let _ = self.acknowledge(last.time_ms);
        }
        Ok(())
    }

    /// Records `time_ms` as the last batch acknowledged: written beside and renamed over, so
    /// the file is always whole. Not synced: after a power loss it may say less than the
    /// database holds, never more (the check is that the database holds at least as much).
    fn acknowledge(&self, time_ms: u64) -> Result<(), String> {
        let tmp = self.acknowledged.with_extension("tmp");
        std::fs::write(&tmp, format!("{time_ms}\n"))
            .and_then(|()| std::fs::rename(&tmp, &self.acknowledged))
            .map_err(|e| format!("{}: {e}", self.acknowledged.display()))
    }

    pub fn agents(&self) -> Result<Vec<AgentRecord>, String> {
        let mut stmt = self.db.prepare("SELECT name, node, addr, gpus FROM agents ORDER BY node").map_err(sql)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
            })
            .map_err(sql)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql)?;
        rows.into_iter()
            .map(|(name, node, addr, gpus)| {
                Ok(AgentRecord {
                    gpus: serde_json::from_str(&gpus).map_err(|e| format!("state database: agent {name}: {e}"))?,
                    name,
                    node: node as u32,
                    addr,
                })
            })
            .collect()
    }

    pub fn put_agent(&self, agent: &AgentRecord) -> Result<(), String> {
        let gpus = serde_json::to_string(&agent.gpus).map_err(|e| e.to_string())?;
        self.db
            .execute(
                "INSERT OR REPLACE INTO agents (name, node, addr, gpus) VALUES (?1, ?2, ?3, ?4)",
                params![agent.name, i64::from(agent.node), agent.addr, gpus],
            )
            .map_err(sql)?;
        Ok(())
    }

    /// Records a refusal; the record keeps the newest [`REFUSALS_KEPT`] (about that many: the
    /// older are removed a hundred at a time), so a flood cannot grow the database without end.
    pub fn refuse(&self, time_ms: u64, who: &str, reason: &str) -> Result<(), String> {
        self.notes
            .execute(
                "INSERT INTO refusals (time_ms, who, reason) VALUES (?1, ?2, ?3)",
                params![time_ms as i64, who, reason],
            )
            .map_err(sql)?;
        let id = self.notes.last_insert_rowid();
        if id % 100 == 0 {
            self.notes.execute("DELETE FROM refusals WHERE id <= ?1", params![id - REFUSALS_KEPT]).map_err(sql)?;
        }
        Ok(())
    }

    /// A pragma's number (the tests' window on the database).
    #[cfg(test)]
    pub(crate) fn pragma_i64(&self, name: &str) -> i64 {
        self.db.pragma_query_value(None, name, |r| r.get(0)).expect("a pragma with a number")
    }

    #[cfg(test)]
    pub(crate) fn pragma_set(&self, name: &str, value: i64) {
        self.db.pragma_update(None, name, value).expect("a pragma that takes a number");
    }

    pub fn refusals(&self) -> Result<Vec<(u64, String, String)>, String> {
        let mut stmt = self.db.prepare("SELECT time_ms, who, reason FROM refusals ORDER BY id").map_err(sql)?;
        let rows = stmt
            .query_map([], |r| Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?)))
            .map_err(sql)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(sql)?;
        Ok(rows)
    }
}

/// Creates `path` readable by its owner only (0600) with `bytes`; an existing file is an error
/// (a secret is never overwritten).
pub fn write_private(path: &Path, bytes: &[u8]) -> Result<(), String> {
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| format!("{}: cannot create: {e}", path.display()))?;
    f.write_all(bytes).map_err(|e| format!("{}: {e}", path.display()))
}

/// The API token in `dir/token`: read it, or on first start generate one (32 random bytes,
/// hex) and write it readable by its owner only.
pub fn load_or_create_token(dir: &Path) -> Result<String, String> {
    let path = token_path(dir);
    match std::fs::read_to_string(&path) {
        Ok(text) => {
            let mode = std::fs::metadata(&path).map(|m| m.permissions().mode() & 0o777).unwrap_or(0);
            if mode & 0o077 != 0 {
                return Err(format!("{}: readable by others (mode {mode:o}); chmod 600 it", path.display()));
            }
            let token = text.trim().to_string();
            if token.len() < 32 {
                return Err(format!("{}: too short to be a token", path.display()));
            }
            Ok(token)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            let mut bytes = [0u8; 32];
            std::fs::File::open("/dev/urandom")
                .and_then(|mut f| f.read_exact(&mut bytes))
                .map_err(|e| format!("/dev/urandom: {e}"))?;
            let token = crate::net::auth::hex(&bytes);
            write_private(&path, format!("{token}\n").as_bytes())?;
            Ok(token)
        }
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

pub fn token_path(dir: &Path) -> PathBuf {
    dir.join("token")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_in_wal_mode_with_full_sync() {
        let dir = std::env::temp_dir().join(format!("schedlab-store-wal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let mut store = Store::open(&dir).unwrap();
        store.append(&[Batch { time_ms: 0, inputs: Vec::new() }]).unwrap();
        // WAL is a property of the file: another connection (a restarted coordinator, `live
        // export` beside a running one) sees it too, and the write went to the log.
        let other = Connection::open(dir.join("live.db")).unwrap();
        let mode: String = other.query_row("PRAGMA journal_mode", [], |r| r.get(0)).unwrap();
        assert_eq!(mode, "wal");
        assert!(dir.join("live.db-wal").exists(), "a WAL database writes to live.db-wal");
        // synchronous is per connection: the store's own must be FULL (2), so that a batch
        // acknowledged is on disk before it is applied.
        let sync: i64 = store.db.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
        assert_eq!(sync, 2);
        drop((store, other));
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// Refusals cost no sync, and the record keeps the newest ten thousand or so.
    #[test]
    fn the_record_of_refusals_is_not_synced_and_keeps_the_newest() {
        let dir = std::env::temp_dir().join(format!("schedlab-store-refusals-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let store = Store::open(&dir).unwrap();
        let sync: i64 = store.notes.query_row("PRAGMA synchronous", [], |r| r.get(0)).unwrap();
        assert_eq!(sync, 0);
        for i in 0..10_550u64 {
            store.refuse(i, "x", &format!("refusal {i}")).unwrap();
        }
        let kept = store.refusals().unwrap();
        assert!((10_000..10_100).contains(&kept.len()), "{}", kept.len());
        assert_eq!(kept.last().unwrap().2, "refusal 10549");
        assert_eq!(kept.first().unwrap().0, 10_550 - kept.len() as u64);
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// A backup that copied live.db alone (its WAL left behind) holds fewer batches than the
    /// directory acknowledged: the store refuses to open it, saying what is missing and how
    /// to go on, instead of starting with the jobs it lost and no word.
    #[test]
    fn a_database_without_its_wal_is_refused_with_what_it_lost() {
        let dir = std::env::temp_dir().join(format!("schedlab-store-lost-wal-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let batch = |t: u64| Batch { time_ms: t, inputs: Vec::new() };
        let mut store = Store::open(&dir).unwrap();
        store.append(&[batch(1)]).unwrap();
        store.db.execute_batch("PRAGMA wal_checkpoint(TRUNCATE)").unwrap();
        store.append(&[batch(2), batch(3)]).unwrap();
        // The backup: live.db as it is on disk while the coordinator runs (batch 1 only).
        let copy = std::fs::read(dir.join("live.db")).unwrap();
        drop(store);
        std::fs::write(dir.join("live.db"), copy).unwrap();
        let _ = std::fs::remove_file(dir.join("live.db-wal"));
        let e = Store::open(&dir).err().expect("a database that lost acknowledged batches is refused");
        assert!(e.contains("holds batches up to 1 ms, but this directory acknowledged batches up to 3 ms"), "{e}");
        assert!(e.contains("live.db-wal"), "{e}");
        // The operator's way on, as the message says: accept the loss by removing the mark.
        std::fs::remove_file(acknowledged_path(&dir)).unwrap();
        assert_eq!(Store::open(&dir).unwrap().batches().unwrap().len(), 1);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
