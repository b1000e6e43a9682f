//! The time series' size, bounded before a run starts: `--series-bucket-s 1` on a trace of
//! months would write gigabytes of CSV and hold as much in memory.

use crate::{RunError, RunSpec, Spelling};
use sim::SimTime;

/// The most time-series buckets a run writes unless told otherwise (`simulate --force`):
/// about 8 MB of timeseries.csv, and as much again per queue in queue_timeseries.csv.
pub const MAX_SERIES_BUCKETS: u64 = 100_000;

/// Refuses `spec`'s `series_bucket_s` when the submissions (their first and last: `span`) alone
/// span more than `limit` buckets, saying how many and the narrowest bucket within the limit.
/// (The run may go on past its last submission, so this is a lower bound.) Without an
/// explicit width the simulator picks one giving at most 500 buckets. The error spells the
/// settings as `spelling` does.
pub fn check(spec: &RunSpec, span: Option<(SimTime, SimTime)>, limit: u64, spelling: Spelling) -> Result<(), RunError> {
    let (Some(width_s), Some((first, last))) = (spec.series_bucket_s, span) else {
        return Ok(());
    };
    let span_ms = last.since(first).as_ms();
    let buckets = |width_s: u64| span_ms / width_s.saturating_mul(1000) + 1;
    if buckets(width_s) <= limit {
        return Ok(());
    }
    // buckets(w) <= limit exactly when w * 1000 * limit > span_ms.
    let narrowest_s = span_ms / limit.saturating_mul(1000) + 1;
    let (width, force) = (|w| spelling.setting("series_bucket_s", w), spelling.force());
    Err(RunError::new(format!(
        "{} would write at least {} time-series buckets (the submissions span {} s), more than the {limit} a run \
         writes without {force}: give {} or more, or {force}",
        width(width_s),
        buckets(width_s),
        span_ms.div_ceil(1000),
        width(narrowest_s),
    )))
}
