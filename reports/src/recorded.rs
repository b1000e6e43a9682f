//! A replay's starts against the starts its trace recorded (a Slurm accounting dump records
//! when each job started): how far the simulated scheduler is from the real one, job by job.
//! Replayed under the policy that matches the real scheduler's configuration, this is the
//! replay's fidelity; under another policy, how much that policy moves the starts.
//!
//! Both times are taken in whole seconds (the recorded ones are; the simulated ones are
//! truncated the same way), and a deviation is the simulated start minus the recorded one.

use serde::Serialize;
use sim::{RunResult, SimTime};
use std::collections::BTreeMap;

/// The distribution of |simulated start - recorded start| over the jobs both have.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartDeviations {
    /// Jobs compared: started in the replay and in the record.
    pub jobs: usize,
    /// Started in the same second.
    pub exact: usize,
    pub within_5s: usize,
    /// Nearest-rank percentiles and the largest, seconds.
    pub p50_s: u64,
    pub p99_s: u64,
    pub max_s: u64,
    /// The most seconds the replay started a job after the record did (0: never later).
    pub latest_s: u64,
}

/// Each job's simulated start minus its recorded start, seconds, by job name: the jobs that
/// started in both.
pub fn start_deviations(run: &RunResult, recorded: &BTreeMap<String, SimTime>) -> BTreeMap<String, i64> {
    let seconds = |t: SimTime| (t.as_ms() / 1000) as i64;
    run.jobs
        .iter()
        .filter_map(|job| {
            let (ours, theirs) = (job.first_start?, recorded.get(job.name.as_str())?);
            Some((job.name.to_string(), seconds(ours) - seconds(*theirs)))
        })
        .collect()
}

impl StartDeviations {
    /// The distribution of `deviations` (seconds); `None` when there are none.
    pub fn of<'a>(deviations: impl IntoIterator<Item = &'a i64>) -> Option<StartDeviations> {
        let signed: Vec<i64> = deviations.into_iter().copied().collect();
        let mut abs: Vec<u64> = signed.iter().map(|d| d.unsigned_abs()).collect();
        abs.sort_unstable();
        let max_s = *abs.last()?;
        let rank = |p: usize| abs[(abs.len() * p).div_ceil(100).clamp(1, abs.len()) - 1];
        Some(StartDeviations {
            jobs: abs.len(),
            exact: abs.iter().filter(|&&d| d == 0).count(),
            within_5s: abs.iter().filter(|&&d| d <= 5).count(),
            p50_s: rank(50),
            p99_s: rank(99),
            max_s,
            latest_s: signed.iter().copied().max().unwrap_or(0).max(0).unsigned_abs(),
        })
    }

    /// Sets `summary`'s `recorded_start*` keys to these deviations.
    pub fn fill_summary(&self, summary: &mut crate::Summary) {
        summary.recorded_starts_jobs = Some(self.jobs as u64);
        summary.recorded_starts_within_5s = Some(self.within_5s as f64 / self.jobs as f64);
        summary.recorded_start_p50_s = Some(self.p50_s as f64);
        summary.recorded_start_p99_s = Some(self.p99_s as f64);
    }

    /// One line for the summary: "274 jobs: 16 in the same second, 263 within 5 s; p50 2 s, ...".
    pub fn line(&self) -> String {
        format!(
            "{} jobs: {} in the same second, {} within 5 s; |deviation| p50 {} s, p99 {} s, max {} s; at most {} s later",
            self.jobs, self.exact, self.within_5s, self.p50_s, self.p99_s, self.max_s, self.latest_s
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank_over_absolute_deviations() {
        // |d| sorted: 0 0 1 2 3 4 6 7 9 20 -> p50 is the 5th (3), p99 the 10th (20).
        let devs = [0, 0, -1, 2, 3, -4, 6, 7, -9, 20];
        let d = StartDeviations::of(&devs).expect("some");
        assert_eq!((d.jobs, d.exact, d.within_5s), (10, 2, 6));
        assert_eq!((d.p50_s, d.p99_s, d.max_s, d.latest_s), (3, 20, 20, 20));
        let earlier = StartDeviations::of(&[-3, -1]).expect("some");
        assert_eq!((earlier.latest_s, earlier.p50_s), (0, 1));
        assert_eq!(StartDeviations::of(&[]), None);
    }
}
