//! The run summary: the metric definitions users rely on, computed from a run's records.
//! Every key carries its unit in its name (`_s` seconds, `_hours`, fractions 0..1).
//!
//! JCT = end - submit of each *succeeded* job; percentiles are nearest-rank (the smallest JCT
//! with at least p% of succeeded jobs at or below it). Queueing delay = first start - submit.
//! The window is [first submit, last job end]: `makespan_s` is its length. Healthy capacity is
//! cluster GPUs x window less the GPU-time of broken GPUs (ground truth). `utilisation` is
//! allocated GPU-time over healthy capacity; `goodput` is productive GPU-time (work kept, not
//! lost to failures or preemptions) over healthy capacity. `jobs_per_hour` is succeeded jobs
//! per hour of the window. Lost GPU-hours split exactly into work redone (done, then lost since
//! the last checkpoint), detection lag (held on broken hardware before the failure was known)
//! and restart overhead. `littles_law_error` compares the engine's own integral of jobs in the system with
//! arrivals x mean time in system from the job records: |L - lambda W| / L; any value above
//! rounding noise means the accounting is broken.

use crate::fairness::{QueueShare, QueueTally, jain_index};
use crate::job_tally::{JobTally, mean_of};
use crate::percentiles::{EXACT_CAP, SKETCH_METHOD};
use serde::Serialize;
use sim::{DecisionRecord, JobRecord, Queue, RecordSink, RunResult, TaskRecord};

#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Summary {
    pub policy: String,
    pub seed: u64,
    pub cluster_gpus: u32,
    pub jobs: u64,
    pub jobs_finished: u64,
    pub jobs_unschedulable: u64,
    /// Jobs the policy refused.
    pub jobs_rejected: u64,
    /// Jobs the user cancelled (a trace's `cancel_s`, `live cancel`).
    pub jobs_cancelled: u64,
    /// Jobs that failed: a task failed past its retry budget.
    pub jobs_failed: u64,
    /// Jobs still waiting or running when the run ended (a stalled policy, or the horizon:
    /// each with its reason in jobs.csv); should be 0.
    pub jobs_unfinished: u64,
    pub mean_jct_s: f64,
    pub p50_jct_s: f64,
    pub p95_jct_s: f64,
    pub p99_jct_s: f64,
    /// How the JCT percentiles (these and queue_metrics.csv's) were computed when not exactly:
    /// [`SKETCH_METHOD`] past [`EXACT_CAP`] succeeded jobs (see [`crate::percentiles`]).
    /// Absent from summary.json (and `None`) when they are exact.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub jct_percentiles: Option<String>,
    pub mean_queue_s: f64,
    /// Finished jobs' mean wait for GPUs over their whole life: the time at least one of a
    /// job's tasks could have been started and was not, preempted and retrying time included
    /// (`mean_queue_s` counts only until the first start).
    pub mean_wait_s: f64,
    pub makespan_s: f64,
    pub utilisation: f64,
    pub goodput: f64,
    pub jobs_per_hour: f64,
    pub gpu_hours: f64,
    pub preemptions: u64,
    pub lost_gpu_hours: f64,
    pub lost_redo_gpu_hours: f64,
    pub lost_detection_gpu_hours: f64,
    pub lost_overhead_gpu_hours: f64,
    /// GPU-hours spent writing checkpoints (progress paused), part of `lost_gpu_hours`.
    pub lost_checkpoint_gpu_hours: f64,
    /// Hardware failures (GPU or node) in the run, attempts they failed, retries started.
    pub failures: u64,
    pub task_failures: u64,
    pub retries: u64,
    /// Mean time from a hardware failure to the scheduler knowing of it.
    pub mean_detection_lag_s: f64,
    /// Broken GPU-hours (ground truth) within the window.
    pub failed_gpu_hours: f64,
    /// With a failure model or a replayed failure history: how far after the first
    /// submission it produced failures, seconds (to the run's end for models, drawn as the run
    /// goes; to the end of the history for one replayed once). `None` without either.
    pub failures_span_s: Option<f64>,
    /// Effective training time ratio (see `training`): mean over jobs that started and
    /// ended, and GPU-weighted (productive GPU-time over the GPU-time their spans held).
    pub ettr_mean: f64,
    pub ettr_gpu_weighted: f64,
    /// Attempts ended by hardware failures or preemptions, over all jobs, and per day of the
    /// run (makespan).
    pub interruptions: u64,
    pub interruptions_per_day: f64,
    /// Nodes retired for failing too often (`--retire-after`), and the GPU-hours of capacity
    /// lost with them from their retirement to the run's end.
    pub retired_nodes: u32,
    pub retired_gpu_hours: f64,
    /// Hot spares (`--spare-nodes`): swaps of a spare for a dead node under running tasks,
    /// tasks hit when no spare was left (their restarts waited), hours with some pool out of
    /// spares, and the GPU-hours held in reserve (not capacity).
    pub spare_swaps: u64,
    pub restarts_without_spare: u64,
    pub no_spare_h: f64,
    pub reserved_gpu_hours: f64,
    /// When the run was stopped at its horizon with jobs unfinished, seconds after the first
    /// submission; `None`: it ended on its own.
    pub horizon_stop_s: Option<f64>,
    /// Jain's index over queues of GPU-time per unit of queue weight (1: proportional).
    pub queue_fairness_jain: f64,
    /// Finish-time fairness rho = JCT / time alone, mean and max over finished jobs.
    pub ftf_rho_mean: f64,
    pub ftf_rho_max: f64,
    /// Jobs with task dependencies, and their mean stretch: JCT / critical path.
    pub dag_jobs: u64,
    pub dag_stretch_mean: f64,
    /// Of the starts of tasks that read a dataset, the share on nodes holding it (1 if none).
    pub data_locality: f64,
    pub littles_law_error: f64,
    /// A trace that records when its jobs started (a Slurm dump): the jobs started both in
    /// the replay and in the record, the share of them the replay started within 5 s of the
    /// record, and |simulated - recorded start| at p50 and p99, seconds (nearest rank). `None`
    /// for a trace that records no starts. See [`crate::recorded`].
    pub recorded_starts_jobs: Option<u64>,
    pub recorded_starts_within_5s: Option<f64>,
    pub recorded_start_p50_s: Option<f64>,
    pub recorded_start_p99_s: Option<f64>,
    pub events: u64,
    pub decision_points: u64,
    pub refused_decisions: u64,
    pub digest: String,
    /// Wall-clock seconds the run took: the one non-deterministic key, outside the digest.
    pub wall_s: Option<f64>,
}

impl Summary {
    /// The summary of a run with its records: [`SummaryBuilder`] fed `run.jobs`.
    pub fn of(run: &RunResult) -> Summary {
        let mut builder = SummaryBuilder::new(&run.queues);
        run.jobs.iter().for_each(|job| builder.add(job));
        builder.finish(run)
    }
}

/// A run's summary and queue metrics gathered in one pass over its job records, fed one at a
/// time in the order a run hands them to a [`RecordSink`] (streamed or not), then finished with
/// the run's end (its records may be empty: only its policy, seed, queues and stats are read).
/// The result is the same, bit for bit, for a run in memory and streamed: float sums run in the
/// records' order, which is the same both ways.
#[derive(Debug)]
pub struct SummaryBuilder {
    jobs: JobTally,
    queues: QueueTally,
    count: u64,
}

impl SummaryBuilder {
    /// For a run on a cluster with these queues (`RunResult::queues`; a streamed run's come
    /// from its scenario, `Scenario::queues`): a job without a queue counts in the first.
    pub fn new<'q>(queues: impl IntoIterator<Item = &'q Queue>) -> SummaryBuilder {
        SummaryBuilder { jobs: JobTally::new(EXACT_CAP), queues: QueueTally::new(queues, false, EXACT_CAP), count: 0 }
    }

    /// As [`SummaryBuilder::new`], also gathering each queue's metrics for queue_metrics.csv
    /// ([`SummaryBuilder::finish_with_queues`]).
    pub fn with_queue_metrics<'q>(queues: impl IntoIterator<Item = &'q Queue>) -> SummaryBuilder {
        SummaryBuilder::with_cap(queues, EXACT_CAP)
    }

    /// As [`SummaryBuilder::with_queue_metrics`], the percentiles exact up to `cap` JCTs (tests).
    pub fn with_cap<'q>(queues: impl IntoIterator<Item = &'q Queue>, cap: usize) -> SummaryBuilder {
        SummaryBuilder { jobs: JobTally::new(cap), queues: QueueTally::new(queues, true, cap), count: 0 }
    }

    /// The next job's record, in the order handed over.
    pub fn add(&mut self, job: &JobRecord) {
        self.jobs.add(job);
        self.queues.add(job);
        self.count += 1;
    }

    /// The summary.
    pub fn finish(self, run: &RunResult) -> Summary {
        self.finish_with_queues(run).0
    }

    /// The summary and the per-queue shares (`fairness::write_queue_shares_csv`; their p95 JCTs
    /// only from a builder [`SummaryBuilder::with_queue_metrics`]).
    ///
    /// Panics if `run`'s queues are not the ones given to [`SummaryBuilder::new`].
    pub fn finish_with_queues(self, run: &RunResult) -> (Summary, Vec<QueueShare>) {
        assert_eq!(
            self.queues.default_queue(),
            run.queues.first().map(|q| q.name.as_str()),
            "the summary was built for other queues than the run's"
        );
        let SummaryBuilder { jobs, queues, count } = self;
        let shares = queues.finish();
        let summary = summarise(run, jobs, count, jain_index(&shares));
        (summary, shares)
    }
}

impl RecordSink for SummaryBuilder {
    fn decision(&mut self, _decision: DecisionRecord, _job_name: &str, _task_name: Option<&str>) {}
    fn job(&mut self, job: JobRecord, _tasks: Vec<TaskRecord>) {
        self.add(&job);
    }
}

/// The summary of `run`'s end and its jobs' tally.
fn summarise(run: &RunResult, mut jobs: JobTally, count: u64, queue_fairness_jain: f64) -> Summary {
    let stats = &run.stats;
    let window_ms = match (stats.first_submit, stats.last_end) {
        (Some(first), Some(last)) => last.since(first).as_ms(),
        _ => 0,
    };
    // Healthy capacity in milli-GPU-ms, the unit of every GPU-time the simulator keeps:
    // broken, retired and reserved (spare) GPUs are not capacity.
    let out_of_service = u128::from(stats.broken_gpu_ms + stats.retired_gpu_ms + stats.reserved_gpu_ms);
    let capacity = (u128::from(stats.cluster_gpus) * u128::from(window_ms)).saturating_sub(out_of_service) * 1000;
    let (redo, lag, overhead, checkpointing) = (jobs.redo, jobs.lag, jobs.overhead, jobs.checkpointing);
    let lost = redo + lag + overhead + checkpointing;
    let since_first = |t: sim::SimTime| t.since(stats.first_submit.unwrap_or(sim::SimTime::ZERO)).as_secs_f64();
    let jct_count = jobs.jct.len();
    let interruptions = jobs.interruptions;
    Summary {
        policy: run.policy.clone(),
        seed: run.seed,
        cluster_gpus: stats.cluster_gpus,
        jobs: count,
        jobs_finished: jobs.finished,
        jobs_unschedulable: jobs.unschedulable,
        jobs_rejected: jobs.rejected,
        jobs_cancelled: jobs.cancelled,
        jobs_failed: jobs.failed,
        jobs_unfinished: jobs.unfinished,
        mean_jct_s: if jct_count == 0 { 0.0 } else { jobs.jct_sum_ms as f64 / jct_count as f64 / 1000.0 },
        p50_jct_s: jobs.jct.percentile_s(50),
        p95_jct_s: jobs.jct.percentile_s(95),
        p99_jct_s: jobs.jct.percentile_s(99),
        jct_percentiles: (!jobs.jct.is_exact()).then(|| SKETCH_METHOD.to_string()),
        mean_queue_s: if jobs.queued == 0 { 0.0 } else { jobs.queue_ms as f64 / jobs.queued as f64 / 1000.0 },
        mean_wait_s: if jobs.finished == 0 { 0.0 } else { jobs.wait_ms as f64 / jobs.finished as f64 / 1000.0 },
        makespan_s: window_ms as f64 / 1000.0,
        utilisation: ratio(stats.allocated_mgpu_ms, capacity),
        goodput: ratio(stats.allocated_mgpu_ms - lost, capacity),
        jobs_per_hour: if window_ms == 0 { 0.0 } else { jobs.finished as f64 * 3_600_000.0 / window_ms as f64 },
        gpu_hours: hours(stats.allocated_mgpu_ms),
        preemptions: stats.preemptions,
        lost_gpu_hours: hours(lost),
        lost_redo_gpu_hours: hours(redo),
        lost_detection_gpu_hours: hours(lag),
        lost_overhead_gpu_hours: hours(overhead),
        lost_checkpoint_gpu_hours: hours(checkpointing),
        failures: stats.failures,
        task_failures: stats.task_failures,
        retries: stats.retries,
        mean_detection_lag_s: if stats.detections == 0 {
            0.0
        } else {
            stats.detection_lag_ms as f64 / stats.detections as f64 / 1000.0
        },
        failed_gpu_hours: hours(u128::from(stats.broken_gpu_ms) * 1000),
        failures_span_s: stats.failures_until.map(since_first),
        horizon_stop_s: stats.horizon_reached.map(since_first),
        ettr_mean: mean_of(jobs.ettr_sum, jobs.ettr_jobs),
        ettr_gpu_weighted: if jobs.held == 0 { 0.0 } else { jobs.productive as f64 / jobs.held as f64 },
        interruptions,
        interruptions_per_day: if window_ms == 0 {
            0.0
        } else {
            interruptions as f64 * 86_400_000.0 / window_ms as f64
        },
        spare_swaps: stats.spare_swaps,
        restarts_without_spare: stats.restarts_without_spare,
        no_spare_h: stats.no_spare_ms as f64 / 3_600_000.0,
        reserved_gpu_hours: hours(u128::from(stats.reserved_gpu_ms) * 1000),
        retired_nodes: stats.retired_nodes,
        retired_gpu_hours: hours(u128::from(stats.retired_gpu_ms) * 1000),
        queue_fairness_jain,
        ftf_rho_mean: mean_of(jobs.rho_sum, jobs.rho_jobs),
        ftf_rho_max: jobs.rho_max,
        dag_jobs: jobs.dag_jobs,
        data_locality: {
            let starts = stats.local_starts + stats.remote_starts;
            if starts == 0 { 1.0 } else { stats.local_starts as f64 / starts as f64 }
        },
        dag_stretch_mean: mean_of(jobs.dag_rho_sum, jobs.dag_rho_jobs),
        littles_law_error: littles_law_error(stats.in_system_job_ms, jobs.sojourns_ms(stats.last_event)),
        recorded_starts_jobs: None,
        recorded_starts_within_5s: None,
        recorded_start_p50_s: None,
        recorded_start_p99_s: None,
        events: stats.events,
        decision_points: stats.decision_points,
        refused_decisions: stats.refused,
        digest: stats.digest.clone(),
        wall_s: None,
    }
}

/// |L - lambda W| / L over the run, where L is the engine's integral of jobs in the system and
/// lambda W is the sum of the jobs' own times in the system (an unfinished job counts until
/// the run's last event). Both over the same window, so the window cancels.
fn littles_law_error(integral: u128, sojourns: u128) -> f64 {
    if integral == 0 {
        return if sojourns == 0 { 0.0 } else { 1.0 };
    }
    (integral.abs_diff(sojourns)) as f64 / integral as f64
}

/// GPU-hours from milli-GPU-milliseconds.
pub fn hours(mgpu_ms: u128) -> f64 {
    mgpu_ms as f64 / 3_600_000_000.0
}

fn ratio(numerator: u128, denominator: u128) -> f64 {
    if denominator == 0 { 0.0 } else { numerator as f64 / denominator as f64 }
}

/// Nearest-rank percentile of sorted values, in seconds; 0 for no values.
pub fn percentile_s(sorted_ms: &[u64], p: u32) -> f64 {
    if sorted_ms.is_empty() {
        return 0.0;
    }
    let rank = (u64::from(p) * sorted_ms.len() as u64).div_ceil(100).max(1) as usize;
    sorted_ms[rank - 1] as f64 / 1000.0
}

#[cfg(test)]
mod tests {
    use super::percentile_s;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<u64> = (1..=10).map(|s| s * 1000).collect();
        assert_eq!(percentile_s(&v, 50), 5.0);
        assert_eq!(percentile_s(&v, 95), 10.0);
        assert_eq!(percentile_s(&v, 10), 1.0);
        assert_eq!(percentile_s(&[7000], 99), 7.0);
        assert_eq!(percentile_s(&[], 50), 0.0);
    }
}
