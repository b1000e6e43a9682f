//! Property-based fuzzing of the live API (issue 32): what a user or an agent sends, as bytes.
//!
//! - **Job bodies** (`POST /v1/jobs`): random jobs built field by field (hostile names, odd JSON
//!   numbers such as `1e400`, `-0` and `1e-9`, windows and deadlines up to 10^12 s and past,
//!   dependencies of every kind, missing, cyclic and malformed, queues, datasets, GPU types,
//!   shares, speeds, unknown fields) and byte-level damage to valid bodies (the committed corpus
//!   among them) go through what the coordinator does with one: `serde_json` into
//!   [`JobRequest`], the driver's and the admission checks, then [`Driver::apply`] with random
//!   exits, beats, cancels and hardware trouble after it. No panic anywhere; a refusal is a
//!   400 or 409 with a reason; an accepted session exports as a trace whose replay in the
//!   simulator makes the live decisions, and its journal rebuilds it.
//! - **Agent bodies**: register and heartbeat requests (exits with any task and attempt
//!   numbers, health events, readings) and what agents are answered, parsed from random and
//!   damaged bytes: no panic, and what parses writes back to itself.
//! - **The coordinator over HTTP**: one started in-process per case, then random requests with
//!   the user token, two agents' tokens and forged ones (every endpoint, damaged bodies, odd
//!   paths and queries): it answers every request with a status below 500; an agent's token
//!   never acts for another agent; `GET /v1/cluster` still answers at the end; the state
//!   directory opens again and its journal replays to a session whose trace replays.
//! - **The corpus** (`tests/fuzz_corpus/`, the reproducers among them) through the same
//!   checks, every run.
//!
//! Deterministic under `PROPTEST_RNG_SEED` (CI sets it; without it a seed is drawn and
//! printed). `SCHEDLAB_FUZZ_CASES=N` runs N cases of each body campaign (N/32 HTTP sessions)
//! for a long campaign (scripts/fuzz.sh); each campaign prints a line `fuzz NAME: ...` with its
//! inputs, time and failures. `SCHEDLAB_FUZZ_ALL=1` also runs what fuzz_findings.rs shows to
//! be open defects (checkpoint intervals, restart overheads, speeds, datasets placed on nodes,
//! start windows that close); without it, they are left out of the sessions once the job was
//! parsed and checked whole, so that the short run and long campaigns find new ones.

mod fuzz;

use fuzz::agent_text::agent_body_text;
use fuzz::corpus::{bodies, corpus, job_seeds};
use fuzz::damage::damaged_body;
use fuzz::driver::check_bodies;
use fuzz::harness::{Campaign, cases};
use fuzz::job_text::{any_job_text, job_bodies};
use fuzz::json::Body;
use fuzz::requests::{Request, Who, check_http_session, request};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use schedlab_live::wire::{
    Assignment, AssignmentsReply, ExitReport, GpuInfo, GpuProcess, HealthEvent, HeartbeatReply, HeartbeatRequest,
    RegisterReply, RegisterRequest,
};

// ------------------------------------------------------------------------------------------
// (a) Job bodies through the driver

#[test]
fn random_job_bodies_are_refused_with_a_reason_or_run_and_replay() {
    let strategy = (any::<u64>(), any::<u64>(), job_bodies());
    Campaign::new("job_bodies", cases(512, 1))
        .run(strategy, |(config, follow, bodies)| check_bodies(config, follow, &bodies));
}

#[test]
fn damaged_job_bodies_are_refused_with_a_reason_or_run_and_replay() {
    let seeds = job_seeds();
    assert!(!seeds.is_empty(), "the corpus has job bodies");
    let body = damaged_body(seeds, any_job_text(0));
    let strategy = (any::<u64>(), any::<u64>(), prop::collection::vec(body, 1..3));
    Campaign::new("damaged_job_bodies", cases(512, 1))
        .run(strategy, |(config, follow, bodies)| check_bodies(config, follow, &bodies));
}

// ------------------------------------------------------------------------------------------
// (b) Agent bodies

/// Parsed as a `T`: if it parses, what it writes parses back to the same value.
fn round_trip<T>(bytes: &[u8]) -> Result<(), TestCaseError>
where
    T: serde::de::DeserializeOwned + serde::Serialize + PartialEq + std::fmt::Debug,
{
    match serde_json::from_slice::<T>(bytes) {
        Err(e) => prop_assert!(!e.to_string().is_empty()),
        Ok(value) => {
            let text = serde_json::to_string(&value).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let again: T = serde_json::from_str(&text).map_err(|e| TestCaseError::fail(format!("{e}: {text}")))?;
            prop_assert_eq!(again, value);
        }
    }
    Ok(())
}

/// Every body an agent sends or is answered with.
fn parse_as_every_agent_type(bytes: &[u8]) -> Result<(), TestCaseError> {
    round_trip::<RegisterRequest>(bytes)?;
    round_trip::<HeartbeatRequest>(bytes)?;
    round_trip::<ExitReport>(bytes)?;
    round_trip::<HealthEvent>(bytes)?;
    round_trip::<GpuInfo>(bytes)?;
    round_trip::<GpuProcess>(bytes)?;
    round_trip::<RegisterReply>(bytes)?;
    round_trip::<HeartbeatReply>(bytes)?;
    round_trip::<AssignmentsReply>(bytes)?;
    round_trip::<Assignment>(bytes)?;
    round_trip::<Vec<ExitReport>>(bytes)
}

#[test]
fn random_agent_bodies_parse_or_are_refused_and_write_back_to_themselves() {
    let body = agent_body_text().prop_map(|t| Body(t.into_bytes()));
    Campaign::new("agent_bodies", cases(512, 1)).run(body, |body| parse_as_every_agent_type(&body.0));
}

#[test]
fn damaged_agent_bodies_parse_or_are_refused_and_write_back_to_themselves() {
    let seeds = bodies(&["register-", "heartbeat-", "reply-"]);
    assert!(!seeds.is_empty(), "the corpus has agent bodies");
    let body = damaged_body(seeds, agent_body_text());
    Campaign::new("damaged_agent_bodies", cases(512, 1)).run(body, |body| parse_as_every_agent_type(&body.0));
}

// ------------------------------------------------------------------------------------------
// (c) The coordinator over HTTP

#[test]
fn random_request_sequences_never_stop_the_coordinator_nor_let_an_agent_act_for_another() {
    let strategy = (any::<u64>(), prop::collection::vec(request(), 10..40));
    Campaign::new("http_sequences", cases(12, 32))
        .run(strategy, |(case, requests)| check_http_session(case, &requests));
}

// ------------------------------------------------------------------------------------------
// (d) The corpus, every run

#[test]
fn the_committed_corpus_goes_through_the_same_checks() {
    let jobs = corpus("job-");
    let agents: Vec<(String, Vec<u8>)> = ["register-", "heartbeat-", "reply-"].into_iter().flat_map(corpus).collect();
    assert!(
        jobs.len() >= 8 && agents.len() >= 4,
        "the corpus: {} job bodies, {} agent bodies",
        jobs.len(),
        agents.len()
    );
    let mut failures = Vec::new();
    for (name, bytes) in &jobs {
        // Each with a few follow-up streams, under a few settings.
        for choice in 0..4u64 {
            let follow = name.bytes().fold(choice, |h, b| h.wrapping_mul(31).wrapping_add(u64::from(b)));
            if let Err(e) = check_bodies(choice, follow, &[Body(bytes.clone())]) {
                failures.push(format!("{name} (settings {choice}): {e}"));
                break;
            }
        }
    }
    for (name, bytes) in &agents {
        if let Err(e) = parse_as_every_agent_type(bytes) {
            failures.push(format!("{name}: {e}"));
        }
    }
    if let Err(e) = check_http_session(0, &corpus_requests(&agents)) {
        failures.push(format!("through the coordinator: {e}"));
    }
    assert!(failures.is_empty(), "{} corpus failures:\n{}", failures.len(), failures.join("\n"));
}

/// The corpus's agent bodies, each sent with n0's token, then its job bodies.
fn corpus_requests(agents: &[(String, Vec<u8>)]) -> Vec<Request> {
    agents
        .iter()
        .filter(|(name, _)| !name.starts_with("reply-"))
        .map(|(name, bytes)| {
            let body = Body(bytes.clone());
            if name.starts_with("register-") {
                Request::Register(Who::Agent(0), body)
            } else {
                Request::Heartbeat(Who::Agent(0), body)
            }
        })
        .chain(job_seeds().into_iter().map(|bytes| Request::Submit(Body(bytes))))
        .collect()
}
