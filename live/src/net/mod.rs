//! The network side of live mode: the coordinator's HTTP front ([`http`], its connection
//! [`intake`]), the TLS relay ([`tls`]), the tokens ([`auth`]), the one table of endpoints
//! ([`routes`]) and the client of the API ([`client`]).

pub mod auth;
pub mod client;
pub mod http;
mod intake;
pub(crate) mod routes;
pub mod tls;
