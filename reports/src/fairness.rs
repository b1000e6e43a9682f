//! Sharing among queues and jobs: per-queue JCT and share of GPU-time (`queue_metrics.csv`),
//! Jain's fairness index over queues, and finish-time fairness.
//!
//! A queue's *normalised share* is its GPU-time divided by its weight (weight 1 when the
//! cluster defines no queues and queue names are labels). Jain's index over the queues that had
//! jobs is (sum x)^2 / (n sum x^2): 1 when every queue got GPU-time in proportion to its
//! weight, 1/n when one queue got it all; 1 with fewer than two queues. Finish-time fairness
//! (Themis) of a finished job is rho = JCT / the time it would take alone on an empty cluster
//! (its critical path, or its longest task): 1 is no slowdown from sharing.

use crate::summary::{hours, percentile_s};
use sim::{JobOutcome, JobRecord, RunResult};
use std::collections::BTreeMap;
use std::io::{self, Write};

/// One queue's share of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueShare {
    pub queue: String,
    pub weight: u32,
    pub max_gpus: Option<u64>,
    pub jobs: u64,
    pub finished: u64,
    /// Sorted JCTs of its finished jobs, ms.
    jct_ms: Vec<u64>,
    queue_ms: u64,
    mgpu_ms: u128,
    rho_sum: f64,
}

/// Per-queue shares, in queue name order ("-": jobs without a queue).
pub fn queue_shares(run: &RunResult) -> Vec<QueueShare> {
    let mut by_queue: BTreeMap<&str, QueueShare> = BTreeMap::new();
    for q in &run.queues {
        by_queue.insert(q.name.as_str(), share(&q.name, q.weight, q.max_mgpus.map(|m| m / 1000)));
    }
    for job in &run.jobs {
        let name = queue_name(run, job);
        let s = by_queue.entry(name).or_insert_with(|| share(name, 1, None));
        s.jobs += 1;
        s.mgpu_ms += u128::from(job.mgpu_ms);
        if let Some(jct) = jct_ms(job) {
            s.finished += 1;
            s.jct_ms.push(jct);
            s.queue_ms += job.first_start.map_or(0, |t| t.since(job.submit).as_ms());
            s.rho_sum += rho(job).unwrap_or(1.0);
        }
    }
    let mut shares: Vec<QueueShare> = by_queue.into_values().collect();
    for s in &mut shares {
        s.jct_ms.sort_unstable();
    }
    shares
}

/// The queue `job` ran in: its own, "-" for none, or the cluster's first queue for a job
/// without one when the cluster has queues.
fn queue_name<'a>(run: &'a RunResult, job: &'a JobRecord) -> &'a str {
    match (&job.queue, run.queues.first()) {
        (Some(name), _) => name,
        (None, Some(first)) => &first.name,
        (None, None) => "-",
    }
}

/// Jain's index over queues (as [`jain_index`] of [`queue_shares`]) without the per-queue JCTs
/// the shares keep: what the summary needs, in one pass and no sort.
pub fn queue_jain_index(run: &RunResult) -> f64 {
    let mut by_queue: BTreeMap<&str, (u32, u64, u128)> = BTreeMap::new();
    for q in &run.queues {
        by_queue.insert(q.name.as_str(), (q.weight, 0, 0));
    }
    for job in &run.jobs {
        let s = by_queue.entry(queue_name(run, job)).or_insert((1, 0, 0));
        s.1 += 1;
        s.2 += u128::from(job.mgpu_ms);
    }
    jain(by_queue.into_values())
}

fn share(name: &str, weight: u32, max_gpus: Option<u64>) -> QueueShare {
    QueueShare {
        queue: name.to_string(),
        weight,
        max_gpus,
        jobs: 0,
        finished: 0,
        jct_ms: Vec::new(),
        queue_ms: 0,
        mgpu_ms: 0,
        rho_sum: 0.0,
    }
}

fn jct_ms(job: &JobRecord) -> Option<u64> {
    (job.outcome == Some(JobOutcome::Succeeded)).then(|| job.end.map(|e| e.since(job.submit).as_ms())).flatten()
}

/// Finish-time fairness of a finished job; `None` where undefined (unfinished, or no work).
pub fn rho(job: &JobRecord) -> Option<f64> {
    let jct = jct_ms(job)?;
    (job.alone_ms > 0).then(|| jct as f64 / job.alone_ms as f64)
}

/// Jain's index over the queues that had jobs, of GPU-time per unit of weight.
pub fn jain_index(shares: &[QueueShare]) -> f64 {
    jain(shares.iter().map(|s| (s.weight, s.jobs, s.mgpu_ms)))
}

/// Jain's index of `(weight, jobs, GPU-time)` per queue, in queue order.
fn jain(queues: impl Iterator<Item = (u32, u64, u128)>) -> f64 {
    let x: Vec<f64> = queues
        .filter(|&(_, jobs, _)| jobs > 0)
        .map(|(weight, _, mgpu_ms)| mgpu_ms as f64 / f64::from(weight))
        .collect();
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    if x.len() < 2 || squares == 0.0 { 1.0 } else { sum * sum / (x.len() as f64 * squares) }
}

/// `queue_metrics.csv`: one row per queue.
pub fn write_queue_metrics_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let shares = queue_shares(run);
    let total: u128 = shares.iter().map(|s| s.mgpu_ms).sum();
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "queue",
        "weight",
        "max_gpus",
        "jobs",
        "finished",
        "mean_jct_s",
        "p95_jct_s",
        "mean_queue_s",
        "gpu_hours",
        "gpu_share",
        "ftf_rho_mean",
    ])?;
    for s in &shares {
        let finished = s.finished.max(1) as f64;
        let mean_jct = s.jct_ms.iter().sum::<u64>() as f64 / finished / 1000.0;
        let share = if total == 0 { 0.0 } else { s.mgpu_ms as f64 / total as f64 };
        w.write_record([
            s.queue.clone(),
            s.weight.to_string(),
            s.max_gpus.map(|g| g.to_string()).unwrap_or_default(),
            s.jobs.to_string(),
            s.finished.to_string(),
            format!("{mean_jct:.3}"),
            format!("{:.3}", percentile_s(&s.jct_ms, 95)),
            format!("{:.3}", s.queue_ms as f64 / finished / 1000.0),
            format!("{:.6}", hours(s.mgpu_ms)),
            format!("{share:.6}"),
            format!("{:.6}", s.rho_sum / finished),
        ])?;
    }
    w.flush()
}
