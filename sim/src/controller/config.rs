//! How a Controller runs: the run's seed, overheads, failure rules, what it records, spares,
//! retirement, horizon, passes and release latency.

use crate::failure::FailureConfig;
use crate::time::SimDuration;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerConfig {
    /// The run seed; the policy draws from the stream "policy:<name>" under it.
    pub seed: u64,
    /// Paid (on the GPUs, with no progress) each time a preempted or failed task restarts,
    /// unless the task sets its own.
    pub restart_overhead: SimDuration,
    /// Work between checkpoints, unless the task sets its own; zero: progress is never lost.
    pub checkpoint: SimDuration,
    /// Wall time each checkpoint takes to write, progress paused (see `checkpoints.rs`),
    /// unless the task sets its own; zero: checkpoints are free.
    pub checkpoint_cost: SimDuration,
    /// Heartbeats, detection delays and retry budgets.
    pub failures: FailureConfig,
    /// Check every invariant after every step (on by default in debug builds and tests).
    pub check_invariants: bool,
    /// Keep the decision log in memory for output (it is always hashed).
    pub record_decisions: bool,
    /// Integrate the time series (`RunResult::series`: timeseries.csv, queue_timeseries.csv,
    /// the report's charts). Off, its tables stay empty and the run is about a tenth cheaper:
    /// for runs whose series nobody writes (a summary, a sweep's table, a regression check).
    pub record_series: bool,
    /// Width of the time series' buckets; `None`: about 500 buckets over the submit span
    /// (see [`crate::series::auto_width`]).
    pub series_bucket: Option<SimDuration>,
    /// Healthy nodes each pool keeps in reserve as hot spares (see `spares.rs`); 0: none.
    /// In simulation and live mode alike. Must be fewer than the nodes of the smallest pool.
    pub spare_nodes: u32,
    /// Retire a node for good once it has failed this often within a window (`None`: never):
    /// an operator's rule for "lemon" servers. Simulation only (live nodes are retired by
    /// their operators).
    pub retire: Option<RetireRule>,
    /// The simulation stops this long after the last submission, reporting what has not ended
    /// as unfinished with the reason (see [`DEFAULT_HORIZON`]). Live mode has no horizon.
    pub horizon: SimDuration,
    /// Decide only in passes this far apart, at whole multiples of it in trace time (a
    /// scheduler's periodic pass, see `passes.rs`); zero (the default): at every event.
    pub pass_interval: SimDuration,
    /// GPUs a task lets go of return to the free pool only this long after (Slurm's
    /// `COMPLETING`, a pod's termination; see `release.rs`); zero (the default): at once.
    pub release_latency: SimDuration,
    /// Jobs leave a run oldest first once ended, so that their records come in job order. A
    /// job still in the system while more than this many jobs after it have ended (and the
    /// policy has been told so) and wait for it is set aside: held alone, its record handed over when it ends, after theirs. The jobs
    /// held are then at most those in the system plus this many (see [`SET_ASIDE_AFTER`]);
    /// `usize::MAX`: records always in job order, whatever that holds.
    pub set_aside_after: usize,
}

/// The default [`ControllerConfig::set_aside_after`]: 262,144 ended jobs waiting for an older
/// one hold about 100 MB (a job held takes 300 to 450 bytes). Far more than any test or
/// regression baseline reaches, so their records come in job order; a policy that starves a
/// job in a run of millions no longer keeps every job after it in memory. Fewer cost time:
/// each job set aside is hashed by id in every room (fifo, 10^7 jobs on 100,000 GPUs at
/// `--load 0.9`: 65,536 set aside 983k jobs and ran 13-20 % slower, 235 MiB at the peak;
/// 262,144 set aside 243k, 330 MiB; none, 917 MiB).
pub const SET_ASIDE_AFTER: usize = 262_144;

/// A node whose failures (of the node or of any of its GPUs) reach `failures` within a
/// `window` is retired when the last of them is repaired: it never returns to service.
/// Failures that overlap on one part are one failure (one down period), as everywhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetireRule {
    pub failures: u32,
    pub window: SimDuration,
}

/// The default horizon: ten years of simulated time after the last submission. Failures are
/// drawn for as long as a run lasts, so a job that can never start (a gang larger than what is
/// ever up at once) would otherwise keep the run going forever. Ten years is far past any
/// replay's real tail (the public traces' longest jobs run weeks; a 16k-GPU pre-training run
/// under heavy failures, months), and cheap: the run's cost past its last job is the failures
/// it draws, O(parts x years / MTBF) (a 2,048-node cluster at a 6,000 h MTBF: about 30,000).
pub const DEFAULT_HORIZON: SimDuration = SimDuration(10 * 365 * 86_400_000);

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            seed: 0,
            restart_overhead: SimDuration::ZERO,
            checkpoint: SimDuration::ZERO,
            checkpoint_cost: SimDuration::ZERO,
            failures: FailureConfig::default(),
            check_invariants: cfg!(debug_assertions),
            record_decisions: false,
            record_series: true,
            series_bucket: None,
            horizon: DEFAULT_HORIZON,
            retire: None,
            spare_nodes: 0,
            pass_interval: SimDuration::ZERO,
            release_latency: SimDuration::ZERO,
            set_aside_after: SET_ASIDE_AFTER,
        }
    }
}
