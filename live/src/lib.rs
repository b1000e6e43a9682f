//! schedlab live mode: the second driver of the same `sim::Controller` and the same policies,
//! with a wall clock in place of the virtual one. Only this crate touches wall time,
//! processes, sockets and hardware.
//!
//! By role: [`coordinator`] (the loop, the journal, the views, the agent protocol), [`agent`]
//! (the node agent: process groups, leftovers, GPU backends), [`net`] (the HTTP front, the TLS
//! relay, the client, the routes table) and [`wire`] (what crosses the network). [`driver`]
//! applies journaled batches to the Controller.

pub mod agent;
pub mod config;
pub mod coordinator;
pub mod driver;
pub mod lock;
pub mod net;
pub mod signals;
pub mod slurm;
pub mod tally;
pub mod wire;
