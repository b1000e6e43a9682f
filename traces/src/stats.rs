//! Summary facts of a workload, for `schedlab trace stats` and for importer tests that compare
//! against the facts published with each trace. Everything is computed from integer
//! milliseconds; GPU-hours is summed exactly (in milli-GPU-milliseconds, so GPU shares are
//! exact too) and converted to `f64` once at the end.

use crate::timeparse::format_datetime_ms;
use serde::Serialize;
use sim::Workload;
use std::collections::BTreeMap;
use std::fmt;

/// Job durations. A job's duration is its longest task's work (for single-task jobs, the
/// task's work): what the job would take with all its tasks running side by side.
/// Percentiles interpolate linearly between the two nearest ranks (the numpy/pandas default),
/// rounded half up to the millisecond, so they match the facts published with the traces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct DurationSummary {
    pub min_ms: u64,
    pub p50_ms: u64,
    pub p90_ms: u64,
    pub p99_ms: u64,
    pub max_ms: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceStats {
    pub jobs: u64,
    pub tasks: u64,
    /// Jobs with more than one task.
    pub multi_task_jobs: u64,
    /// Tasks that carry a duration estimate (what non-oracle policies see).
    pub tasks_with_estimate: u64,
    /// Tasks that share one GPU (`gpu_milli` set).
    pub fractional_tasks: u64,
    /// Sum over tasks of work x GPUs, in hours; a task sharing a GPU counts its share
    /// (`gpu_milli` / 1000 of a GPU).
    pub gpu_hours: f64,
    /// The part of `gpu_hours` that comes from tasks sharing a GPU (their shares).
    pub fractional_gpu_hours: f64,
    /// Jobs by their total GPU count (sum over their tasks).
    pub gpus_per_job: BTreeMap<u64, u64>,
    pub earliest_submit_ms: Option<u64>,
    pub latest_submit_ms: Option<u64>,
    pub duration: Option<DurationSummary>,
    pub jobs_per_queue: BTreeMap<String, u64>,
    pub jobs_without_queue: u64,
}

impl TraceStats {
    pub fn of(workload: &Workload) -> TraceStats {
        // Milli-GPU-milliseconds: exact for GPU shares.
        let (mut mgpu_ms, mut fractional_mgpu_ms): (u128, u128) = (0, 0);
        let mut fractional_tasks = 0;
        let mut gpus_per_job = BTreeMap::new();
        // Counted by borrowed name; a name is copied once per queue, not once per job.
        let mut jobs_per_queue: BTreeMap<&str, u64> = BTreeMap::new();
        let mut jobs_without_queue = 0;
        let mut durations = Vec::with_capacity(workload.len());
        let mut tasks_with_estimate = 0;
        for job in workload.jobs() {
            for task in &job.tasks {
                let milli = match task.gpu_milli {
                    Some(share) => {
                        fractional_tasks += 1;
                        u128::from(share.get())
                    }
                    None => u128::from(task.gpus) * 1000,
                };
                let held = u128::from(task.work.as_ms()) * milli;
                mgpu_ms += held;
                if task.gpu_milli.is_some() {
                    fractional_mgpu_ms += held;
                }
                tasks_with_estimate += u64::from(task.estimate.is_some());
            }
            *gpus_per_job.entry(job.gpus()).or_insert(0) += 1;
            match &job.queue {
                Some(q) => *jobs_per_queue.entry(q.as_str()).or_insert(0) += 1,
                None => jobs_without_queue += 1,
            }
            durations.push(job.tasks.iter().map(|t| t.work.as_ms()).max().unwrap_or(0));
        }
        durations.sort_unstable();
        let submits = workload.jobs().iter().map(|j| j.submit.as_ms());
        TraceStats {
            jobs: workload.len() as u64,
            tasks: workload.task_count() as u64,
            multi_task_jobs: workload.jobs().iter().filter(|j| j.tasks.len() > 1).count() as u64,
            tasks_with_estimate,
            fractional_tasks,
            gpu_hours: hours(mgpu_ms),
            fractional_gpu_hours: hours(fractional_mgpu_ms),
            gpus_per_job,
            earliest_submit_ms: submits.clone().min(),
            latest_submit_ms: submits.max(),
            duration: summarize(&durations),
            jobs_per_queue: jobs_per_queue.into_iter().map(|(q, n)| (q.to_owned(), n)).collect(),
            jobs_without_queue,
        }
    }
}

/// Milli-GPU-milliseconds as GPU-hours, rounded once.
fn hours(mgpu_ms: u128) -> f64 {
    mgpu_ms as f64 / 3_600_000_000.0
}

/// GPU-hours with three decimals and grouped thousands: `51,498.736`.
fn gpu_hours_text(gpu_hours: f64) -> String {
    let whole = gpu_hours.trunc() as u64;
    let thousandths = ((gpu_hours - gpu_hours.trunc()) * 1000.0).round() as u64;
    let (whole, thousandths) = if thousandths == 1000 { (whole + 1, 0) } else { (whole, thousandths) };
    format!("{}.{thousandths:03}", grouped(whole))
}

fn summarize(sorted: &[u64]) -> Option<DurationSummary> {
    Some(DurationSummary {
        min_ms: *sorted.first()?,
        p50_ms: percentile(sorted, 50)?,
        p90_ms: percentile(sorted, 90)?,
        p99_ms: percentile(sorted, 99)?,
        max_ms: *sorted.last()?,
    })
}

/// The `pct`-th percentile of sorted values, linear between closest ranks, in integers.
pub(crate) fn percentile(sorted: &[u64], pct: u64) -> Option<u64> {
    let last = sorted.len().checked_sub(1)? as u64;
    let rank = u128::from(pct.min(100)) * u128::from(last);
    let (low, frac) = ((rank / 100) as usize, rank % 100);
    let a = u128::from(*sorted.get(low)?);
    let b = u128::from(*sorted.get(low + 1).unwrap_or(&sorted[low]));
    // Sorted, so b >= a; half up at the millisecond.
    Some((a + ((b - a) * frac + 50) / 100) as u64)
}

/// `1234567` as `1,234,567`, for tables meant to be read.
pub(crate) fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Seconds with the milliseconds only when there are some: `1,144 s`, `11,264.8 s`.
fn seconds(ms: u64) -> String {
    let whole = grouped(ms / 1000);
    match ms % 1000 {
        0 => format!("{whole} s"),
        frac => format!("{whole}.{}", format!("{frac:03}").trim_end_matches('0')) + " s",
    }
}

/// A submit time; times after 2000-01-01 read as calendar dates too (absolute traces such as
/// Philly count from 1970, relative ones such as ITP from the start of collection, never
/// reaching 30 years).
fn instant(ms: u64) -> String {
    const YEAR_2000_MS: u64 = 946_684_800_000;
    if ms >= YEAR_2000_MS { format!("{} ({})", seconds(ms), format_datetime_ms(ms)) } else { seconds(ms) }
}

impl fmt::Display for TraceStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{:<22}{}", "jobs", grouped(self.jobs))?;
        writeln!(
            f,
            "{:<22}{} ({} jobs with several tasks)",
            "tasks",
            grouped(self.tasks),
            grouped(self.multi_task_jobs)
        )?;
        writeln!(f, "{:<22}{}", "tasks with estimate", grouped(self.tasks_with_estimate))?;
        if self.fractional_tasks > 0 {
            writeln!(
                f,
                "{:<22}{} ({} GPU-hours, counting their shares)",
                "tasks sharing a GPU",
                grouped(self.fractional_tasks),
                gpu_hours_text(self.fractional_gpu_hours)
            )?;
        }
        writeln!(f, "{:<22}{}", "GPU-hours", gpu_hours_text(self.gpu_hours))?;
        if let (Some(first), Some(last)) = (self.earliest_submit_ms, self.latest_submit_ms) {
            writeln!(f, "{:<22}{}", "first submit", instant(first))?;
            writeln!(f, "{:<22}{}", "last submit", instant(last))?;
            let span_days = (last - first) as f64 / 86_400_000.0;
            writeln!(f, "{:<22}{span_days:.1} days", "submit span")?;
        }
        if let Some(d) = &self.duration {
            writeln!(f, "job duration")?;
            for (name, ms) in
                [("min", d.min_ms), ("p50", d.p50_ms), ("p90", d.p90_ms), ("p99", d.p99_ms), ("max", d.max_ms)]
            {
                writeln!(f, "  {name:<20}{:>16}", seconds(ms))?;
            }
        }
        writeln!(f, "GPUs per job{:>26}{:>9}", "jobs", "share")?;
        for (gpus, jobs) in &self.gpus_per_job {
            let share = 100.0 * *jobs as f64 / self.jobs.max(1) as f64;
            writeln!(f, "  {gpus:<20}{:>16}{share:>8.2}%", grouped(*jobs))?;
        }
        if !self.jobs_per_queue.is_empty() {
            writeln!(f, "queue{:>33}", "jobs")?;
            // Largest first, ties by name: the same order on every machine.
            let mut queues: Vec<_> = self.jobs_per_queue.iter().collect();
            queues.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
            for (queue, jobs) in queues {
                writeln!(f, "  {queue:<20}{:>16}", grouped(*jobs))?;
            }
        }
        if self.jobs_without_queue > 0 {
            writeln!(f, "{:<22}{:>16}", "jobs without queue", grouped(self.jobs_without_queue))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{JobSpec, SimDuration, SimTime, TaskSpec};

    #[test]
    fn percentiles_interpolate_like_pandas() {
        let v = [1, 2, 3, 4];
        assert_eq!(percentile(&v, 50), Some(3)); // 2.5 rounds half up
        assert_eq!(percentile(&[10, 20], 90), Some(19));
        assert_eq!(percentile(&[7], 99), Some(7));
        assert_eq!(percentile(&[], 50), None);
        let hundred: Vec<u64> = (1..=100).map(|x| x * 1000).collect();
        assert_eq!(percentile(&hundred, 90), Some(90_100));
        assert_eq!(percentile(&hundred, 99), Some(99_010));
        assert_eq!(percentile(&hundred, 100), Some(100_000));
    }

    #[test]
    fn stats_count_jobs_tasks_and_gpu_hours() {
        let mut multi = JobSpec::single("m", SimTime(5_000), 2, SimDuration(3_600_000));
        multi.tasks.push(TaskSpec::new("1", 6, SimDuration(1_800_000)));
        multi.queue = Some("q".into());
        let single = JobSpec::single("s", SimTime(1_000), 1, SimDuration(7_200_000));
        let w = Workload::new(vec![multi, single]).unwrap();
        let s = TraceStats::of(&w);
        assert_eq!((s.jobs, s.tasks, s.multi_task_jobs), (2, 3, 1));
        // 2 GPUs x 1 h + 6 x 0.5 h + 1 x 2 h
        assert_eq!(s.gpu_hours, 7.0);
        assert_eq!(s.gpus_per_job, BTreeMap::from([(1, 1), (8, 1)]));
        assert_eq!((s.earliest_submit_ms, s.latest_submit_ms), (Some(1_000), Some(5_000)));
        let d = s.duration.unwrap();
        assert_eq!((d.min_ms, d.max_ms), (3_600_000, 7_200_000));
        assert_eq!(s.jobs_per_queue, BTreeMap::from([("q".to_string(), 1)]));
        assert_eq!(s.jobs_without_queue, 1);
        assert_eq!((s.fractional_tasks, s.fractional_gpu_hours), (0, 0.0));
        let text = s.to_string();
        assert!(text.contains("GPU-hours             7.000"), "{text}");
        assert!(text.contains("p50"), "{text}");
        assert!(!text.contains("sharing"), "{text}");
    }

    #[test]
    fn gpu_shares_count_as_their_share() {
        let mut shared = JobSpec::single("s", SimTime(0), 1, SimDuration(3_600_000));
        shared.tasks[0].gpu_milli = std::num::NonZeroU16::new(250);
        let mut tiny = JobSpec::single("t", SimTime(0), 1, SimDuration(1));
        tiny.tasks[0].gpu_milli = std::num::NonZeroU16::new(1);
        let whole = JobSpec::single("w", SimTime(0), 2, SimDuration(1_800_000));
        let s = TraceStats::of(&Workload::new(vec![shared, tiny, whole]).unwrap());
        assert_eq!(s.fractional_tasks, 2);
        // 0.25 GPU x 1 h + 0.001 GPU x 1 ms + 2 GPUs x 0.5 h, summed exactly.
        assert_eq!(s.gpu_hours, (250 * 3_600_000 + 1 + 2_000 * 1_800_000_u64) as f64 / 3.6e9);
        assert_eq!(s.fractional_gpu_hours, (250 * 3_600_000 + 1) as f64 / 3.6e9);
        assert_eq!(s.gpus_per_job, BTreeMap::from([(1, 2), (2, 1)]));
        let text = s.to_string();
        assert!(text.contains("tasks sharing a GPU   2 (0.250 GPU-hours, counting their shares)"), "{text}");
        assert!(text.contains("GPU-hours             1.250"), "{text}");
    }

    #[test]
    fn number_formatting() {
        assert_eq!(grouped(0), "0");
        assert_eq!(grouped(1234567), "1,234,567");
        assert_eq!(grouped(100), "100");
        assert_eq!(seconds(11_264_800), "11,264.8 s");
        assert_eq!(seconds(1_144_000), "1,144 s");
        assert!(instant(1_504_521_041_000).ends_with("(2017-09-04 10:30:41)"));
        assert_eq!(instant(2_816_000), "2,816 s");
    }
}
