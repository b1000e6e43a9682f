//! What the fuzz tests of live mode share (issue 32): the campaign harness, the generators of
//! the API's bodies, byte-level damage, the committed corpus, and the sessions a case runs
//! (through the driver, or over HTTP against an in-process coordinator).
//!
//! fuzz_api.rs uses all of it; fuzz_agent.rs the harness and `json::quote` only.

pub mod agent_text;
pub mod corpus;
pub mod damage;
pub mod driver;
pub mod harness;
pub mod job_text;
pub mod json;
pub mod mix;
pub mod requests;
pub mod served;
