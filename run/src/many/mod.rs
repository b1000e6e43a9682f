//! Many runs: a sweep planned (traces x policies x `--grid` x seeds into numbered runs, their
//! folder names and their [`RunSpec`](crate::RunSpec)s), sliced into shards, executed in
//! parallel, and its shards merged back; a regression spec (regress.toml) read into runs keyed
//! for its baseline. `schedlab sweep`, `merge` and `regress` and Python's `sweep` all go
//! through here: one plan, one parallel loop ([`Executor::execute`]).
//!
//! ```no_run
//! use run::many::{Executor, Plan};
//! let settings = reports::sweep::SweepSettings {
//!     traces: vec![],
//!     policies: vec!["fifo".into(), "sjf".into()],
//!     grid: vec!["placement=pack|spread".into()],
//!     seeds: vec![0, 1, 2],
//!     run: serde_json::Map::new(),
//! };
//! let plan = Plan::new(settings, &policies::Registry::builtin()).expect("a valid sweep");
//! let base = run::RunSpec { jobs: 300, ..run::RunSpec::default() };
//! let runs = plan.slice(None);
//! let runner = run::Runner::default().keeping_traces();
//! let done = Executor::new(None)
//!     .expect("threads")
//!     .execute(&runner, runs.len(), |i| plan.spec(&base, &runs[i], None))
//!     .expect("every run");
//! println!("run 0: mean JCT {} s", done[0].summary.mean_jct_s);
//! ```

mod execute;
mod expand;
mod merge;
mod plan;
mod regress;
mod shard;

pub use execute::{Done, Executor, Failed};
pub use merge::{Merged, Part, merge};
pub use plan::{MAX_RUNS, Plan, shared_settings, trace_and_cluster};
pub use regress::RegressSpec;
pub use shard::VERSION;
