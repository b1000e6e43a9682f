//! Effective training time: how much of a job's time on the cluster trained its model, the
//! figure pre-training teams track (ETTR), and how often it was interrupted.
//!
//! - **ETTR** of a job that started and ended: productive GPU-time (work kept: not redone
//!   after a failure, not detection lag, not restart overhead) over the GPU-time it would have
//!   held training from its first start to its end, `mgpus x (end - first start)`. Waiting
//!   between attempts (for a repair, for room) counts against it, as it does for an operator.
//!   For a job of several tasks the denominator counts every task's GPUs over the whole span,
//!   so DAG jobs whose tasks run one after another score lower than their tasks do.
//! - **Interruptions**: attempts ended by a hardware failure or a preemption.
//! - **Mean time between interruptions**: (end - first start) / interruptions.

use sim::JobRecord;

/// `(first start, end)` in ms, for a job that started and ended.
pub(crate) fn span_ms(job: &JobRecord) -> Option<u64> {
    Some(job.end?.since(job.first_start?).as_ms())
}

/// The job's ETTR (0..=1); `None` unless it started and ended after some time.
pub fn ettr(job: &JobRecord) -> Option<f64> {
    let denominator = u128::from(span_ms(job)?) * u128::from(job.mgpus);
    (denominator > 0).then(|| job.productive_mgpu_ms as f64 / denominator as f64)
}

pub fn interruptions(job: &JobRecord) -> u32 {
    job.failures + job.preemptions
}

/// Mean time between interruptions in seconds; `None` without an interruption.
pub fn mtbi_s(job: &JobRecord) -> Option<f64> {
    let n = interruptions(job);
    (n > 0).then(|| span_ms(job).map(|ms| ms as f64 / 1000.0 / f64::from(n))).flatten()
}
