//! One run of schedlab as a library type. [`RunSpec`] says what to run (trace and format,
//! cluster, policy, failures, resilience settings, seed, outputs); [`Runner`] runs it; the
//! command line's flags, sweep.json, regress.toml, live.json and the Python package are all
//! this one type, so a setting means the same thing everywhere. [`many`] plans, shards,
//! executes and merges many runs (a sweep, a regression check, Python's sweep).
//!
//! ```no_run
//! let spec = run::RunSpec { policy: "sjf".parse().expect("a spec"), jobs: 300, ..run::RunSpec::default() };
//! let outcome = spec.run().expect("a valid run");
//! println!("mean JCT {} s, digest {}", outcome.summary.mean_jct_s, outcome.summary.digest);
//! ```

mod builtin;
mod consolidation;
mod flags;
mod grid;
mod kept;
pub mod many;
mod numbers;
mod outputs;
mod paths;
pub mod per_queue;
mod pipeline;
mod queue_defaults;
mod runner;
mod seconds;
mod seed;
mod series_limit;
mod setup;
mod spec;
mod spelling;
mod stream;
mod summarised;
pub mod text;

pub use grid::GRID_KEYS;
pub use outputs::{RUN_FOLDER_FILES, check_run_folder, write_streamed_rest};
pub use per_queue::QueueSeconds;
pub use runner::{Keep, RunOutcome, Runner};
pub use seconds::{Hours, Seconds};
pub use series_limit::MAX_SERIES_BUCKETS;
pub use setup::{Setup, parse_cluster_text};
pub use spec::{BUILTIN_CLUSTER, BUILTIN_JOBS, BUILTIN_LOAD, MAX_HORIZON_DAYS, RunSpec};
pub use spelling::Spelling;
pub use summarised::{Folder, Tee};

use std::fmt;

/// Why a run could not be made or did not finish, in the user's words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError(String);

impl RunError {
    /// An error with this message.
    pub fn new(message: impl Into<String>) -> RunError {
        RunError(message.into())
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RunError {}

impl From<String> for RunError {
    fn from(message: String) -> RunError {
        RunError(message)
    }
}

macro_rules! run_error_from {
    ($($t:ty),*) => {$(
        impl From<$t> for RunError {
            fn from(e: $t) -> RunError {
                RunError(e.to_string())
            }
        }
    )*};
}
run_error_from!(traces::TraceError, sim::SimError, sim::ClusterError, sim::WorkloadError);

impl RunSpec {
    /// Runs this spec with the built-in policies, keeping the decision log when `decisions`
    /// is set and the time series always.
    pub fn run(&self) -> Result<RunOutcome, RunError> {
        Runner::default().run(self, Keep { decisions: self.decisions, series: true })
    }
}

/// The first line of a clap error, without its `error: ` prefix.
pub fn clap_message(e: &clap::Error) -> String {
    let text = e.to_string();
    let line = text.lines().next().unwrap_or_default();
    line.strip_prefix("error: ").unwrap_or(line).to_string()
}
