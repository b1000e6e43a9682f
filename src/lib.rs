//! schedlab as a library: [`RunSpec`] (one run, the same type the command line, sweep.json,
//! regress.toml, live.json and the Python package use) and the command line itself,
//! [`cli::main`], for programs that build their own `schedlab` binary.

pub mod cli;

pub use policies::{PolicySpec, Registry};
pub use run::{Keep, RunError, RunOutcome, RunSpec, Runner};
