//! Who may call what. Two roles, each with credentials of its own:
//!
//! - **user**: the API token in `STATE/token` (0600, made on the first start). Submits,
//!   cancels, reads the jobs, the cluster, the decisions and `/metrics`, returns GPUs.
//! - **agent NAME**: a token `live issue-token --agent NAME` prints. Registers as NAME,
//!   heartbeats (exits, health) for NAME and reads NAME's assignments: nothing else, and
//!   nothing for another agent.
//!
//! An agent's token is `agent.NAME.MAC`, MAC the HMAC-SHA256 of the name under the state
//! directory's agent key (`STATE/agent-key`, 0600, 32 random bytes, made on first use): the
//! coordinator checks one without a table, so a token issued while it runs works at once, and
//! the HTTP front tells the role before it reads a body. Issuing again gives the same token;
//! removing the agent key (and restarting the coordinator) revokes every agent's token.
//! Mutual TLS (`--tls-client-ca`) stays the stronger option, on top of this. Which role each
//! endpoint is for is its row in [`crate::net::routes`].

use crate::coordinator::store::{load_or_create_token, write_private};
use ring::hmac;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Who a request's bearer token says it comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Principal {
    User,
    Agent(String),
}

impl std::fmt::Display for Principal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Principal::User => f.write_str("a user token"),
            Principal::Agent(name) => write!(f, "agent `{name}`'s token"),
        }
    }
}

/// The credentials a coordinator accepts. Cheap to clone (the HTTP front's threads share it).
#[derive(Clone)]
pub struct Keys(Arc<Inner>);

struct Inner {
    user: String,
    /// None: no agent token is accepted (the HTTP front's own tests).
    agent: Option<hmac::Key>,
}

/// Only a user token (the front's tests).
impl From<&str> for Keys {
    fn from(user: &str) -> Keys {
        Keys(Arc::new(Inner { user: user.to_string(), agent: None }))
    }
}

const PREFIX: &str = "agent.";

fn mac_message(name: &str) -> Vec<u8> {
    format!("schedlab live agent token v1\0{name}").into_bytes()
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &[u8]) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    let digit = |c: u8| (c as char).to_digit(16);
    text.chunks(2).map(|p| Some((digit(p[0])? * 16 + digit(p[1])?) as u8)).collect()
}

impl Keys {
    /// The state directory's user token and agent key, made if absent.
    pub fn load_or_create(dir: &Path) -> Result<Keys, String> {
        let user = load_or_create_token(dir)?;
        let agent = agent_key(dir)?;
        Ok(Keys(Arc::new(Inner { user, agent: Some(agent) })))
    }

    /// The user token.
    pub fn user_token(&self) -> &str {
        &self.0.user
    }

    /// Who `bearer` (the token as sent) is, if anyone. Both comparisons take a time that does
    /// not depend on how much of the token was right.
    pub fn principal(&self, bearer: &[u8]) -> Option<Principal> {
        if crate::net::http::constant_time_eq(bearer, self.0.user.as_bytes()) {
            return Some(Principal::User);
        }
        let rest = bearer.strip_prefix(PREFIX.as_bytes())?;
        let dot = rest.iter().rposition(|&b| b == b'.')?;
        let (name, mac) = (std::str::from_utf8(&rest[..dot]).ok()?, &rest[dot + 1..]);
        crate::wire::check_name("agent name", name).ok()?;
        let mac = unhex(mac)?;
        hmac::verify(self.0.agent.as_ref()?, &mac_message(name), &mac).ok()?;
        Some(Principal::Agent(name.to_string()))
    }
}

/// Agent `name`'s token for the coordinator of `dir` (`live issue-token`).
pub fn agent_token(dir: &Path, name: &str) -> Result<String, String> {
    crate::wire::check_name("agent name", name).map_err(|r| r.reason)?;
    let key = agent_key(dir)?;
    Ok(format!("{PREFIX}{name}.{}", hex(hmac::sign(&key, &mac_message(name)).as_ref())))
}

pub fn agent_key_path(dir: &Path) -> PathBuf {
    dir.join("agent-key")
}

/// `dir/agent-key`: read it, or make it. Made under another name and linked into place, so
/// that a coordinator starting and a `live issue-token` at the same moment agree on one key.
fn agent_key(dir: &Path) -> Result<hmac::Key, String> {
    let path = agent_key_path(dir);
    if !path.exists() {
        if !dir.is_dir() {
            return Err(format!("{}: no such state directory (start the coordinator first)", dir.display()));
        }
        let mut bytes = [0u8; 32];
        std::fs::File::open("/dev/urandom")
            .and_then(|mut f| f.read_exact(&mut bytes))
            .map_err(|e| format!("/dev/urandom: {e}"))?;
        let tmp = dir.join(format!("agent-key.{}.tmp", std::process::id()));
        let _ = std::fs::remove_file(&tmp);
        write_private(&tmp, format!("{}\n", hex(&bytes)).as_bytes())?;
        let linked = std::fs::hard_link(&tmp, &path);
        let _ = std::fs::remove_file(&tmp);
        match linked {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(format!("{}: cannot create: {e}", path.display())),
        }
    }
    let mode = std::os::unix::fs::PermissionsExt::mode(
        &std::fs::metadata(&path).map_err(|e| format!("{}: {e}", path.display()))?.permissions(),
    );
    if mode & 0o077 != 0 {
        return Err(format!("{}: readable by others (mode {:o}); chmod 600 it", path.display(), mode & 0o777));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| format!("{}: {e}", path.display()))?;
    match unhex(text.trim().as_bytes()) {
        Some(bytes) if bytes.len() >= 32 => Ok(hmac::Key::new(hmac::HMAC_SHA256, &bytes)),
        _ => Err(format!("{}: not an agent key (64 hex digits)", path.display())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_agent_token_names_its_agent_and_only_its_key_makes_it() {
        let dir = std::env::temp_dir().join(format!("schedlab-auth-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        assert!(agent_token(&dir, "n0").unwrap_err().contains("no such state directory"));
        std::fs::create_dir_all(&dir).unwrap();
        let keys = Keys::load_or_create(&dir).unwrap();
        let n0 = agent_token(&dir, "n0").unwrap();
        assert_eq!(agent_token(&dir, "n0").unwrap(), n0, "issued again, the same");
        assert_eq!(keys.principal(n0.as_bytes()), Some(Principal::Agent("n0".into())));
        assert_eq!(keys.principal(keys.user_token().as_bytes()), Some(Principal::User));
        // Another name with n0's MAC, a changed MAC, a truncated one, a name that is no name.
        let mac = n0.rsplit_once('.').unwrap().1;
        // The last hex digit changed (to another digit whatever it was).
        let last = if n0.ends_with('0') { '1' } else { '0' };
        let changed = format!("{}{last}", &n0[..n0.len() - 1]);
        for forged in [format!("agent.n1.{mac}"), changed, n0[..n0.len() - 2].to_string()] {
            assert_eq!(keys.principal(forged.as_bytes()), None, "{forged}");
        }
        assert_eq!(keys.principal(format!("agent.../x.{mac}").as_bytes()), None);
        assert!(agent_token(&dir, "a/b").is_err() && agent_token(&dir, "..").is_err());
        // Another state directory's key makes other tokens.
        let other = dir.join("other");
        std::fs::create_dir_all(&other).unwrap();
        assert_ne!(agent_token(&other, "n0").unwrap(), n0);
        assert_eq!(Keys::load_or_create(&other).unwrap().principal(n0.as_bytes()), None);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
