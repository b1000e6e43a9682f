//! Random request sequences over HTTP: with the user's token, two agents' and forged ones, to
//! every endpoint, with damaged bodies, odd paths and queries. The coordinator answers every
//! one with a status below 500, never lets an agent's token act for another, and its state
//! directory opens again to a journal whose trace replays.

use super::agent_text::{agent_name_text, heartbeat_text, register_text, uuid_text};
use super::corpus::{bodies, job_seeds};
use super::damage::{damage, damaged};
use super::driver::live_and_replayed;
use super::harness::seen;
use super::job_text::any_job_text;
use super::json::{Body, quote};
use super::served::{Served, serve_options};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use schedlab_live::wire::{HeartbeatRequest, RegisterRequest};
use std::path::Path;

/// Who sends a request.
#[derive(Debug, Clone, Copy)]
pub enum Who {
    User,
    /// Agent n0 or n1.
    Agent(usize),
    /// A token no one was given, an agent's with another name, or none.
    Forged(u8),
}

#[derive(Debug, Clone)]
pub enum Request {
    Submit(Body),
    Get(&'static str),
    Job(String),
    Cancel(String),
    ReturnGpu(String),
    Register(Who, Body),
    Heartbeat(Who, Body),
    Assignments(Who, String, String),
    Raw(Who, String, String, Body),
}

fn who() -> impl Strategy<Value = Who> {
    prop_oneof![
        6 => (0usize..2).prop_map(Who::Agent),
        1 => Just(Who::User),
        1 => (0u8..3).prop_map(Who::Forged),
    ]
}

pub fn request() -> impl Strategy<Value = Request> {
    let job_body = prop_oneof![
        4 => (0usize..12).prop_flat_map(any_job_text).prop_map(|t| Body(t.into_bytes())),
        2 => (prop::sample::select(job_seeds()), prop::collection::vec(damage(), 0..4))
            .prop_map(|(b, ds)| Body(damaged(&b, &ds))),
    ];
    let key = prop_oneof![
        (0u32..12).prop_map(|n| n.to_string()),
        (0u32..12).prop_map(|n| format!("j{n}")),
        prop::sample::select(&["..", "%2e%2e", "j0%00", "18446744073709551616", "", "-1"][..]).prop_map(str::to_string),
    ];
    prop_oneof![
        6 => job_body.prop_map(Request::Submit),
        2 => prop::sample::select(&["/v1/jobs", "/v1/cluster", "/v1/decisions", "/metrics", "/v1/jobs?after=3", "/v1/jobs?after=18446744073709551616"][..])
            .prop_map(Request::Get),
        1 => key.clone().prop_map(Request::Job),
        2 => key.prop_map(Request::Cancel),
        1 => uuid_text().prop_map(|u| Request::ReturnGpu(u.trim_matches('"').to_string())),
        2 => who().prop_flat_map(|w| (Just(w), agent_body(register_text(own_name(w)))))
            .prop_map(|(w, b)| Request::Register(w, b)),
        8 => who().prop_flat_map(|w| (Just(w), agent_body(heartbeat_text(Some(1), own_name(w)))))
            .prop_map(|(w, b)| Request::Heartbeat(w, b)),
        3 => (who(), prop::sample::select(&["n0", "n1", "n2", "..", ""][..]), prop::sample::select(&["1", "0", "2", "18446744073709551616", "x", ""][..]))
            .prop_map(|(w, n, g)| Request::Assignments(w, n.to_string(), g.to_string())),
        1 => (who(), prop::sample::select(&["GET", "POST", "PUT", "DELETE", "get"][..]), prop::sample::select(&[
                "/", "/v1", "/v1/jobs/", "//v1/jobs", "/v1/jobs/0/cancel/x", "/v1/agents/n0/assignments/x",
                "/v1/agents/register?x=1", "/v1/%76%31/jobs", "/v1/jobs/../cluster", "*", "/v1/jobs#x",
            ][..]), prop::collection::vec(any::<u8>(), 0..64))
            .prop_map(|(w, m, p, b)| Request::Raw(w, m.to_string(), p.to_string(), Body(b))),
    ]
}

/// The name an agent's body gives: its own mostly, when an agent's token sends it.
fn own_name(who: Who) -> BoxedStrategy<String> {
    match who {
        Who::Agent(a) => prop_oneof![4 => Just(quote(["n0", "n1"][a])), 1 => agent_name_text()].boxed(),
        _ => agent_name_text(),
    }
}

/// An agent's body as generated, or a corpus one damaged.
fn agent_body(text: BoxedStrategy<String>) -> BoxedStrategy<Body> {
    prop_oneof![
        4 => text.prop_map(|t| Body(t.into_bytes())),
        1 => (text_seed_bodies(), prop::collection::vec(damage(), 1..4)).prop_map(|(b, ds)| Body(damaged(&b, &ds))),
    ]
    .boxed()
}

/// The agent bodies of the corpus (registrations and heartbeats).
fn text_seed_bodies() -> BoxedStrategy<Vec<u8>> {
    prop::sample::select(bodies(&["register-", "heartbeat-"])).boxed()
}

/// The name a body claims, as the typed parse the handler uses reads it.
fn claimed_name(body: &[u8], heartbeat: bool) -> Option<String> {
    if heartbeat {
        serde_json::from_slice::<HeartbeatRequest>(body).ok().map(|h| h.name)
    } else {
        serde_json::from_slice::<RegisterRequest>(body).ok().map(|r| r.name)
    }
}

/// A request as it is sent: who sends it, how, and the agent it claims to act for.
struct Sent<'a> {
    who: Who,
    method: &'a str,
    path: String,
    body: &'a [u8],
    claimed: Option<String>,
}

impl Request {
    fn sent(&self) -> Sent<'_> {
        let user = Who::User;
        let (who, method, path, body, claimed): (Who, &str, String, &[u8], Option<String>) = match self {
            Request::Submit(b) => (user, "POST", "/v1/jobs".into(), &b.0, None),
            Request::Get(p) => (user, "GET", (*p).into(), b"", None),
            Request::Job(k) => (user, "GET", format!("/v1/jobs/{k}"), b"", None),
            Request::Cancel(k) => (user, "POST", format!("/v1/jobs/{k}/cancel"), b"", None),
            Request::ReturnGpu(u) => (user, "POST", format!("/v1/gpus/{}/return", url_segment(u)), b"", None),
            Request::Register(w, b) => (*w, "POST", "/v1/agents/register".into(), &b.0, claimed_name(&b.0, false)),
            Request::Heartbeat(w, b) => (*w, "POST", "/v1/agents/heartbeat".into(), &b.0, claimed_name(&b.0, true)),
            Request::Assignments(w, n, g) => {
                (*w, "GET", format!("/v1/agents/{n}/assignments?generation={g}"), b"", Some(n.clone()))
            }
            Request::Raw(w, m, p, b) => (*w, m.as_str(), p.clone(), &b.0, None),
        };
        Sent { who, method, path, body, claimed }
    }
}

fn url_segment(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.".contains(&b) { (b as char).to_string() } else { format!("%{b:02X}") }
        })
        .collect()
}

impl Served {
    fn token(&self, who: Who) -> Option<String> {
        match who {
            Who::User => Some(self.user.clone()),
            Who::Agent(a) => Some(self.agents[a].clone()),
            Who::Forged(0) => Some(format!("agent.n0.{}", "0".repeat(64))),
            Who::Forged(1) => Some(self.agents[0].replacen("agent.n0.", "agent.n1.", 1)),
            Who::Forged(_) => None,
        }
    }

    /// Sends `request`; checks its answer: a status below 500, and never a 2xx for an agent's
    /// token acting as another agent, a user's token acting as an agent or an agent's as a
    /// user, or a token no one was given.
    fn send(&self, request: &Request) -> Result<(), TestCaseError> {
        let Sent { who, method, path, body, claimed } = request.sent();
        let (status, answer) = self
            .call(method, &path, self.token(who).as_deref(), body)
            .map_err(|e| TestCaseError::fail(format!("{method} {path}: no answer: {e}")))?;
        let shown = String::from_utf8_lossy(&answer).chars().take(300).collect::<String>();
        seen(format!("HTTP {status}"));
        prop_assert!(status < 500, "{method} {path}: {status} {shown}");
        let ok = (200..300).contains(&status);
        let agent_route = path.starts_with("/v1/agents/");
        match who {
            Who::Agent(a) if agent_route => {
                if let Some(claimed) = &claimed {
                    let mine = ["n0", "n1"][a];
                    prop_assert!(
                        !ok || claimed == mine,
                        "{method} {path}: agent {mine}'s token acted for `{claimed}` ({status} {shown})"
                    );
                }
            }
            Who::Agent(_) => prop_assert!(!ok, "{method} {path}: an agent's token acted as a user ({status})"),
            Who::User if agent_route => {
                prop_assert!(!ok, "{method} {path}: the user token acted as an agent ({status})")
            }
            Who::User => {}
            Who::Forged(_) => prop_assert!(!ok, "{method} {path}: a forged token was taken ({status})"),
        }
        if !ok && status != 404 && status != 405 && !answer.is_empty() && method != "HEAD" {
            // A refusal says why (the 401s of the front have no body).
            prop_assert!(status == 401 || !shown.trim().is_empty(), "{method} {path}: {status} without a reason");
        }
        Ok(())
    }

    /// n0 and n1 register, two GPUs each.
    fn register_agents(&self) -> Result<(), TestCaseError> {
        for (a, name) in ["n0", "n1"].into_iter().enumerate() {
            let gpus: Vec<String> = (0..2)
                .map(|g| {
                    format!(
                        r#"{{"index":{g},"uuid":"GPU-{name}-{g}","name":"SIM","memory_total_mib":81920,"memory_used_mib":0,"utilisation_pct":0,"temperature_c":30}}"#
                    )
                })
                .collect();
            let body = format!(r#"{{"name":"{name}","addr":"127.0.0.1","gpus":[{}],"fresh":true}}"#, gpus.join(","));
            let (status, answer) =
                self.call("POST", "/v1/agents/register", Some(&self.agents[a]), body.as_bytes()).unwrap();
            prop_assert_eq!(status, 200, "{}", String::from_utf8_lossy(&answer));
        }
        Ok(())
    }
}

/// n0 and n1 register (two GPUs each); `requests` follow; then the checks of a session.
pub fn check_http_session(case: u64, requests: &[Request]) -> Result<(), TestCaseError> {
    let mut served = Served::start(case);
    served.register_agents()?;
    for request in requests {
        served.send(request)?;
        prop_assert!(served.alive(), "the coordinator stopped after {:?}", request);
    }
    let (status, _) = served
        .call("GET", "/v1/cluster", Some(&served.user.clone()), b"")
        .map_err(|e| TestCaseError::fail(format!("GET /v1/cluster after the session: {e}")))?;
    prop_assert_eq!(status, 200, "GET /v1/cluster after the session");
    let stopped = served.stop();
    prop_assert!(stopped.is_ok(), "the coordinator ended with {:?}", stopped);
    check_reopened(&served.dir)
}

/// The state directory opens again: its journal replays, exports and replays in the
/// simulator to the same decisions.
fn check_reopened(dir: &Path) -> Result<(), TestCaseError> {
    let reopened = schedlab_live::coordinator::Coordinator::open(serve_options(dir));
    let c = reopened.map_err(|e| TestCaseError::fail(format!("the state directory does not open again: {e}")))?;
    let (live, sim) = live_and_replayed(c.driver(), "journal")?;
    prop_assert_eq!(live, sim, "the journal's replay in the simulator");
    Ok(())
}
