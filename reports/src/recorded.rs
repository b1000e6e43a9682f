//! A replay's starts against the starts its trace recorded (a Slurm accounting dump records
//! when each job started): how far the simulated scheduler is from the real one, job by job.
//! Replayed under the policy that matches the real scheduler's configuration, this is the
//! replay's fidelity; under another policy, how much that policy moves the starts.
//!
//! Both times are taken in whole seconds (the recorded ones are; the simulated ones are
//! truncated the same way), and a deviation is the simulated start minus the recorded one.
//!
//! Two views of the same comparison: [`StartDeviations`], the few figures of `simulate`'s
//! summary line and summary.json, and [`StartDistribution`] with the per-job [`StartRow`]s,
//! what `schedlab compare-starts` prints. The figures they share are computed once, here.

use serde::Serialize;
use sim::{JobRecord, RunResult, SimTime};
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
    compared(run, recorded).map(|(job, theirs, ours)| (job.name.to_string(), ours - theirs)).collect()
}

/// Each job that started in the run and in the record, with its recorded and its simulated
/// first start in whole seconds.
fn compared<'a>(
    run: &'a RunResult,
    recorded: &'a BTreeMap<String, SimTime>,
) -> impl Iterator<Item = (&'a JobRecord, i64, i64)> + 'a {
    let seconds = |t: SimTime| (t.as_ms() / 1000) as i64;
    run.jobs.iter().filter_map(move |job| {
        let (ours, theirs) = (job.first_start?, recorded.get(job.name.as_str())?);
        Some((job, seconds(*theirs), seconds(ours)))
    })
}

/// One job compared: when the record and the replay first started it, in whole seconds of
/// the trace's clock (for a sacct dump, its times read as UTC: the naive clock as written, or
/// UTC with `tz=`), and what it asked for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartRow {
    pub job: String,
    pub recorded_start_s: i64,
    pub replay_start_s: i64,
    /// `replay_start_s - recorded_start_s`: positive when the replay started it later.
    pub deviation_s: i64,
    pub gpus: u64,
    pub queue: Option<String>,
}

/// The jobs that started in the run and in the record, by job name.
pub fn start_rows(run: &RunResult, recorded: &BTreeMap<String, SimTime>) -> Vec<StartRow> {
    let mut rows: Vec<StartRow> = compared(run, recorded)
        .map(|(job, theirs, ours)| StartRow {
            job: job.name.to_string(),
            recorded_start_s: theirs,
            replay_start_s: ours,
            deviation_s: ours - theirs,
            gpus: job.gpus,
            queue: job.queue.as_deref().map(str::to_owned),
        })
        .collect();
    rows.sort_unstable_by(|a, b| a.job.cmp(&b.job));
    rows
}

/// Whether `job` is an array task: the sacct importer names each by its `JobID`, `41_3`
/// (`traces::sacct`), and no other job name of a trace that records starts has a `_`. Slurm
/// may hold array tasks back for reasons of its own, so a comparison may leave them out.
pub fn is_array_task(job: &str) -> bool {
    job.contains('_')
}

/// The `n` rows with the largest |deviation|, largest first; equal ones by job name.
pub fn worst(rows: &[StartRow], n: usize) -> Vec<&StartRow> {
    let mut sorted: Vec<&StartRow> = rows.iter().collect();
    sorted.sort_by(|a, b| b.deviation_s.unsigned_abs().cmp(&a.deviation_s.unsigned_abs()).then(a.job.cmp(&b.job)));
    sorted.truncate(n);
    sorted
}

/// Writes `rows` as CSV: `job,recorded_start_s,replay_start_s,deviation_s`, in the order given.
pub fn write_start_rows_csv(rows: &[StartRow], out: impl std::io::Write) -> std::io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(["job", "recorded_start_s", "replay_start_s", "deviation_s"])?;
    for row in rows {
        w.write_record([
            row.job.as_str(),
            &row.recorded_start_s.to_string(),
            &row.replay_start_s.to_string(),
            &row.deviation_s.to_string(),
        ])?;
    }
    w.flush()
}

/// The whole distribution of the deviations (seconds): [`StartDeviations`]' figures and more,
/// and how many jobs the replay started earlier than the record, in the same second, later.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct StartDistribution {
    /// Jobs compared.
    pub jobs: usize,
    /// |deviation| 0 (the same second), at most 5 s, at most 30 s.
    pub exact: usize,
    pub within_5s: usize,
    pub within_30s: usize,
    /// Nearest-rank percentiles of |deviation| and the largest, seconds.
    pub p50_s: u64,
    pub p90_s: u64,
    pub p99_s: u64,
    pub max_s: u64,
    /// The most seconds the replay started a job after the record did (0: never later)...
    pub latest_s: u64,
    /// ...and before it (0: never earlier).
    pub earliest_s: u64,
    /// Jobs the replay started before the record did, in the same second, after.
    pub earlier: usize,
    pub same: usize,
    pub later: usize,
}

impl StartDistribution {
    /// The distribution of `deviations` (seconds); `None` when there are none.
    pub fn of<'a>(deviations: impl IntoIterator<Item = &'a i64>) -> Option<StartDistribution> {
        let signed: Vec<i64> = deviations.into_iter().copied().collect();
        let mut abs: Vec<u64> = signed.iter().map(|d| d.unsigned_abs()).collect();
        abs.sort_unstable();
        let max_s = *abs.last()?;
        let rank = |p: usize| abs[(abs.len() * p).div_ceil(100).clamp(1, abs.len()) - 1];
        let within = |s: u64| abs.iter().filter(|&&d| d <= s).count();
        let count = |sign: i64| signed.iter().filter(|d| d.signum() == sign).count();
        Some(StartDistribution {
            jobs: abs.len(),
            exact: within(0),
            within_5s: within(5),
            within_30s: within(30),
            p50_s: rank(50),
            p90_s: rank(90),
            p99_s: rank(99),
            max_s,
            latest_s: signed.iter().copied().max().unwrap_or(0).max(0).unsigned_abs(),
            earliest_s: signed.iter().copied().min().unwrap_or(0).min(0).unsigned_abs(),
            earlier: count(-1),
            same: count(0),
            later: count(1),
        })
    }

    /// The figures of `simulate`'s summary line and summary.json.
    pub fn summary(&self) -> StartDeviations {
        StartDeviations {
            jobs: self.jobs,
            exact: self.exact,
            within_5s: self.within_5s,
            p50_s: self.p50_s,
            p99_s: self.p99_s,
            max_s: self.max_s,
            latest_s: self.latest_s,
        }
    }
}

impl StartDeviations {
    /// The distribution of `deviations` (seconds); `None` when there are none.
    pub fn of<'a>(deviations: impl IntoIterator<Item = &'a i64>) -> Option<StartDeviations> {
        StartDistribution::of(deviations).map(|d| d.summary())
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

    #[test]
    fn the_distribution_counts_by_sign_and_ranks_every_percentile() {
        // |d| sorted: 0 0 0 1 2 4 5 6 12 30 31 40 -> of 12, p50 the 6th (4), p90 the 11th (31),
        // p99 the 12th (40).
        let devs = [0, -1, 2, 0, -40, 5, -6, 31, 0, 12, -4, -30];
        let d = StartDistribution::of(&devs).expect("some");
        assert_eq!((d.jobs, d.exact, d.within_5s, d.within_30s), (12, 3, 7, 10));
        assert_eq!((d.p50_s, d.p90_s, d.p99_s, d.max_s), (4, 31, 40, 40));
        assert_eq!((d.latest_s, d.earliest_s), (31, 40));
        assert_eq!((d.earlier, d.same, d.later), (5, 3, 4));
        // The summary line's figures are the same computation.
        assert_eq!(d.summary(), StartDeviations::of(&devs).expect("some"));
        let later = StartDistribution::of(&[3, 1, 0]).expect("some");
        assert_eq!((later.earliest_s, later.latest_s, later.earlier, later.same, later.later), (0, 3, 0, 1, 2));
        assert_eq!(StartDistribution::of(&[]), None);
    }

    fn row(job: &str, deviation_s: i64) -> StartRow {
        StartRow {
            job: job.into(),
            recorded_start_s: 100,
            replay_start_s: 100 + deviation_s,
            deviation_s,
            gpus: 1,
            queue: None,
        }
    }

    #[test]
    fn the_worst_are_the_largest_absolute_deviations_ties_by_name() {
        let rows = [row("a", 3), row("b", -7), row("c", 7), row("d", 0), row("e", -9)];
        let names = |n: usize| worst(&rows, n).iter().map(|r| r.job.as_str()).collect::<Vec<_>>();
        assert_eq!(names(3), ["e", "b", "c"]);
        assert_eq!(names(10), ["e", "b", "c", "a", "d"]);
        assert!(names(0).is_empty());
        let mut csv = Vec::new();
        write_start_rows_csv(&rows[..2], &mut csv).unwrap();
        assert_eq!(
            String::from_utf8(csv).unwrap(),
            "job,recorded_start_s,replay_start_s,deviation_s\na,100,103,3\nb,100,93,-7\n"
        );
    }
}
