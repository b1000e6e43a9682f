//! schedlab live mode: the second driver of the same `sim::Controller` and the same policies,
//! with a wall clock in place of the virtual one. Only this crate touches wall time,
//! processes, sockets and hardware.

pub mod admission;
pub mod agent;
pub mod api;
pub mod auth;
pub mod backend;
pub mod client;
pub mod coordinator;
pub mod driver;
pub mod http;
mod intake;
mod leftovers;
pub mod lock;
pub mod metrics;
pub mod settings;
pub mod signals;
pub mod store;
pub mod tally;
pub mod tls;
