//! Sharing among queues and jobs: per-queue JCT and share of GPU-time (`queue_metrics.csv`),
//! Jain's fairness index over queues, and finish-time fairness.
//!
//! A queue's *normalised share* is its GPU-time divided by its weight (weight 1 when the
//! cluster defines no queues and queue names are labels). Jain's index over the queues that had
//! jobs is (sum x)^2 / (n sum x^2): 1 when every queue got GPU-time in proportion to its
//! weight, 1/n when one queue got it all; 1 with fewer than two queues. Finish-time fairness
//! (Themis) of a finished job is rho = JCT / the time it would take alone on an empty cluster
//! (its critical path, or its longest task): 1 is no slowdown from sharing.

use crate::percentiles::{EXACT_CAP, Percentiles};
use crate::summary::hours;
use sim::{JobOutcome, JobRecord, Queue, RunResult};
use std::collections::BTreeMap;
use std::io::{self, Write};

/// One queue's share of a run: queue_metrics.csv's row.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueShare {
    pub queue: String,
    pub weight: u32,
    pub max_gpus: Option<u64>,
    pub jobs: u64,
    pub finished: u64,
    /// Its finished jobs' mean and p95 JCT and mean queueing delay, s (0 without any).
    pub mean_jct_s: f64,
    pub p95_jct_s: f64,
    pub mean_queue_s: f64,
    /// GPU-time of all its jobs, milli-GPU-ms.
    pub mgpu_ms: u128,
    /// Its finished jobs' mean finish-time fairness (a job without one counts as 1).
    pub ftf_rho_mean: f64,
}

/// Per-queue shares, in queue name order ("-": jobs without a queue).
pub fn queue_shares(run: &RunResult) -> Vec<QueueShare> {
    let mut tally = QueueTally::new(&run.queues, true, EXACT_CAP);
    run.jobs.iter().for_each(|job| tally.add(job));
    tally.finish()
}

/// Jain's index over queues (as [`jain_index`] of [`queue_shares`]).
pub fn queue_jain_index(run: &RunResult) -> f64 {
    jain_index(&queue_shares(run))
}

/// A queue's sums as its jobs come.
#[derive(Debug)]
struct QueueSums {
    weight: u32,
    max_gpus: Option<u64>,
    jobs: u64,
    finished: u64,
    jct: Percentiles,
    jct_sum_ms: u64,
    queue_ms: u64,
    mgpu_ms: u128,
    rho_sum: f64,
}

impl QueueSums {
    fn new(weight: u32, max_gpus: Option<u64>) -> QueueSums {
        QueueSums {
            weight,
            max_gpus,
            jobs: 0,
            finished: 0,
            // Capped by the tally, over all queues together.
            jct: Percentiles::with_cap(usize::MAX),
            jct_sum_ms: 0,
            queue_ms: 0,
            mgpu_ms: 0,
            rho_sum: 0.0,
        }
    }
}

/// The queues' shares gathered one job at a time, in the order handed over (float sums run in
/// that order).
/// A job without a queue is the cluster's first queue's (or "-" when it has none), so the
/// cluster's queues are known before the first job. The queues' JCTs are kept exactly while
/// they are at most `cap` values all together, then every queue's are sketched (see
/// [`crate::percentiles`]): with the summary's cap, when and only when the summary's are.
#[derive(Debug)]
pub(crate) struct QueueTally {
    default: Option<String>,
    queues: BTreeMap<String, QueueSums>,
    /// Whether the JCTs are kept for each queue's p95 (queue_metrics.csv): the summary alone
    /// needs only the queues' GPU-time (Jain's index), and a second copy of every JCT, sorted
    /// again, was a tenth of a run's instructions.
    keep_jcts: bool,
    cap: usize,
    /// JCTs kept exactly so far, over all queues; whether they were all sketched.
    exact: usize,
    sketched: bool,
}

impl QueueTally {
    pub(crate) fn new<'q>(queues: impl IntoIterator<Item = &'q Queue>, keep_jcts: bool, cap: usize) -> QueueTally {
        let mut tally =
            QueueTally { default: None, queues: BTreeMap::new(), keep_jcts, cap, exact: 0, sketched: false };
        for q in queues {
            tally.default.get_or_insert_with(|| q.name.clone());
            tally.queues.insert(q.name.clone(), QueueSums::new(q.weight, q.max_mgpus.map(|m| m / 1000)));
        }
        tally
    }

    /// The queue a job without one is counted in: the cluster's first.
    pub(crate) fn default_queue(&self) -> Option<&str> {
        self.default.as_deref()
    }

    pub(crate) fn add(&mut self, job: &JobRecord) {
        let name = job.queue.as_deref().or(self.default.as_deref()).unwrap_or("-");
        let jct = jct_ms(job);
        if jct.is_some() && self.keep_jcts && !self.sketched {
            if self.exact == self.cap {
                self.queues.values_mut().for_each(|s| s.jct.to_sketch());
                self.sketched = true;
            } else {
                self.exact += 1;
            }
        }
        if !self.queues.contains_key(name) {
            let mut sums = QueueSums::new(1, None);
            if self.sketched {
                sums.jct.to_sketch();
            }
            self.queues.insert(name.to_string(), sums);
        }
        let s = self.queues.get_mut(name).expect("just inserted");
        s.jobs += 1;
        s.mgpu_ms += u128::from(job.mgpu_ms);
        if let Some(jct) = jct {
            s.finished += 1;
            if self.keep_jcts {
                s.jct.add(jct);
            }
            s.jct_sum_ms += jct;
            s.queue_ms += job.first_start.map_or(0, |t| t.since(job.submit).as_ms());
            s.rho_sum += rho(job).unwrap_or(1.0);
        }
    }

    pub(crate) fn finish(self) -> Vec<QueueShare> {
        self.queues
            .into_iter()
            .map(|(queue, mut s)| {
                let finished = s.finished.max(1) as f64;
                QueueShare {
                    queue,
                    weight: s.weight,
                    max_gpus: s.max_gpus,
                    jobs: s.jobs,
                    finished: s.finished,
                    mean_jct_s: s.jct_sum_ms as f64 / finished / 1000.0,
                    p95_jct_s: s.jct.percentile_s(95),
                    mean_queue_s: s.queue_ms as f64 / finished / 1000.0,
                    mgpu_ms: s.mgpu_ms,
                    ftf_rho_mean: s.rho_sum / finished,
                }
            })
            .collect()
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
    write_queue_shares_csv(&queue_shares(run), out)
}

/// `queue_metrics.csv` of shares gathered already (a streamed run's, from
/// [`crate::SummaryBuilder::finish_with_queues`]).
pub fn write_queue_shares_csv(shares: &[QueueShare], out: impl Write) -> io::Result<()> {
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
    for s in shares {
        let share = if total == 0 { 0.0 } else { s.mgpu_ms as f64 / total as f64 };
        w.write_record([
            s.queue.clone(),
            s.weight.to_string(),
            s.max_gpus.map(|g| g.to_string()).unwrap_or_default(),
            s.jobs.to_string(),
            s.finished.to_string(),
            format!("{:.3}", s.mean_jct_s),
            format!("{:.3}", s.p95_jct_s),
            format!("{:.3}", s.mean_queue_s),
            format!("{:.6}", hours(s.mgpu_ms)),
            format!("{share:.6}"),
            format!("{:.6}", s.ftf_rho_mean),
        ])?;
    }
    w.flush()
}
