//! The per-job half of the summary, gathered in one pass over the job records, fed one at a
//! time in the order the run hands them over (a streamed run's records are never all in memory;
//! at a million jobs every pass reads hundreds of megabytes, so the summary reads them once).
//! Sums of floats run in that order (job order, but for jobs set aside: see `sim::RecordSink`).

use crate::fairness::rho;
use crate::percentiles::Percentiles;
use crate::training::{ettr, interruptions, span_ms};
use sim::{JobOutcome, JobRecord, SimTime};

#[derive(Debug, Default)]
pub(crate) struct JobTally {
    pub unschedulable: u64,
    pub rejected: u64,
    pub cancelled: u64,
    pub failed: u64,
    pub unfinished: u64,
    /// JCTs of the succeeded jobs, ms (for percentiles), and their sum.
    pub jct: Percentiles,
    pub jct_sum_ms: u128,
    /// Succeeded jobs, and of them the queueing delays summed and counted (a succeeded job
    /// always started; the count is kept for the mean's exact definition).
    pub finished: u64,
    pub queue_ms: u128,
    /// The finished jobs' waits for GPUs over their whole life, summed (ms).
    pub wait_ms: u128,
    pub queued: u64,
    pub redo: u128,
    pub lag: u128,
    pub overhead: u128,
    pub checkpointing: u128,
    pub ettr_sum: f64,
    pub ettr_jobs: u64,
    pub productive: u128,
    pub held: u128,
    pub interruptions: u64,
    pub rho_sum: f64,
    pub rho_jobs: u64,
    pub rho_max: f64,
    pub dag_jobs: u64,
    pub dag_rho_sum: f64,
    pub dag_rho_jobs: u64,
    /// Sum of the times in the system of the jobs with an end, ms; the jobs without one and
    /// the sum of their submission times, for [`JobTally::sojourns_ms`].
    ended_sojourns_ms: u128,
    endless: u64,
    endless_submits_ms: u128,
}

impl JobTally {
    /// An empty tally whose JCT percentiles are exact up to `cap` values.
    pub fn new(cap: usize) -> JobTally {
        JobTally { jct: Percentiles::with_cap(cap), ..JobTally::default() }
    }

    /// Sum of the jobs' times in the system, a job without an end (unfinished) counting until
    /// `last_event`, ms. `last_event` is the run's last event, at or after every submission
    /// (each arrival is an event), so this is the sum of `end.unwrap_or(last_event) - submit`
    /// over the jobs, though it learns `last_event` only after the last job.
    pub fn sojourns_ms(&self, last_event: SimTime) -> u128 {
        let endless_until_last = u128::from(self.endless) * u128::from(last_event.as_ms());
        debug_assert!(endless_until_last >= self.endless_submits_ms, "a job submitted after the run's last event");
        self.ended_sojourns_ms + endless_until_last.saturating_sub(self.endless_submits_ms)
    }

    pub fn add(&mut self, job: &JobRecord) {
        match &job.outcome {
            Some(JobOutcome::Succeeded) => self.add_finished(job),
            Some(JobOutcome::Unschedulable(_)) => self.unschedulable += 1,
            Some(JobOutcome::Rejected(_)) => self.rejected += 1,
            Some(JobOutcome::Cancelled) => self.cancelled += 1,
            Some(JobOutcome::Failed(_)) => self.failed += 1,
            None => self.unfinished += 1,
        }
        self.redo += u128::from(job.lost_redo_mgpu_ms);
        self.lag += u128::from(job.lost_lag_mgpu_ms);
        self.overhead += u128::from(job.lost_overhead_mgpu_ms);
        self.checkpointing += u128::from(job.lost_checkpoint_mgpu_ms);
        if let (Some(e), Some(span)) = (ettr(job), span_ms(job)) {
            self.ettr_sum += e;
            self.ettr_jobs += 1;
            self.productive += u128::from(job.productive_mgpu_ms);
            self.held += u128::from(span) * u128::from(job.mgpus);
        }
        self.interruptions += u64::from(interruptions(job));
        self.dag_jobs += u64::from(job.critical_path_ms.is_some());
        match job.end {
            Some(end) => self.ended_sojourns_ms += u128::from(end.since(job.submit).as_ms()),
            None => {
                self.endless += 1;
                self.endless_submits_ms += u128::from(job.submit.as_ms());
            }
        }
    }

    fn add_finished(&mut self, job: &JobRecord) {
        self.finished += 1;
        self.wait_ms += u128::from(job.waited_ms);
        if let Some(end) = job.end {
            let jct = end.since(job.submit).as_ms();
            self.jct.add(jct);
            self.jct_sum_ms += u128::from(jct);
        }
        if let Some(start) = job.first_start {
            self.queue_ms += u128::from(start.since(job.submit).as_ms());
            self.queued += 1;
        }
        if let Some(r) = rho(job) {
            self.rho_sum += r;
            self.rho_jobs += 1;
            self.rho_max = self.rho_max.max(r);
            if job.critical_path_ms.is_some() {
                self.dag_rho_sum += r;
                self.dag_rho_jobs += 1;
            }
        }
    }
}

/// `sum / n`; 0 when `n` is 0.
pub(crate) fn mean_of(sum: f64, n: u64) -> f64 {
    if n == 0 { 0.0 } else { sum / n as f64 }
}
