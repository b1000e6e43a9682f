//! What a run leaves behind: one record per job, run-wide counters and integrals, and the
//! decision log (always hashed into the digest, kept in memory only when asked for).

use crate::ids::{GpuId, JobId, TaskId};
use crate::job_status::JobOutcome;
use crate::series::Series;
use crate::state::TaskStatus;
use crate::time::SimTime;
use crate::workload::Dependency;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRecord {
    pub job: JobId,
    pub name: crate::workload::Name,
    pub queue: Option<crate::workload::Name>,
    pub submit: SimTime,
    pub first_start: Option<SimTime>,
    /// The time at least one of its tasks could have been started and was not (queued,
    /// preempted, retrying), up to its end (or the run's, if it did not end), in ms: the
    /// wait `first_start - submit` counts only until the first start.
    pub waited_ms: u64,
    /// When the job reached its final state (for unschedulable jobs: its arrival).
    pub end: Option<SimTime>,
    pub tasks: u32,
    pub gpus: u64,
    /// What all its tasks hold at once, in milli-GPUs (1000 per whole GPU).
    pub mgpus: u64,
    pub preemptions: u32,
    /// Attempts that failed with their hardware, and retries started after them.
    pub failures: u32,
    pub retries: u32,
    /// GPU-time held over all tasks and attempts (restart overhead included), in
    /// milli-GPU-milliseconds (exact for fractional GPUs; divide by 3.6e9 for GPU-hours)...
    pub mgpu_ms: u64,
    /// ...of which productive: work kept (ended attempts; all of them once the job ended)...
    pub productive_mgpu_ms: u64,
    /// ...and lost: work redone, detection lag, restart overhead (ended attempts).
    pub lost_redo_mgpu_ms: u64,
    pub lost_lag_mgpu_ms: u64,
    pub lost_overhead_mgpu_ms: u64,
    /// ...and writing checkpoints (progress paused).
    pub lost_checkpoint_mgpu_ms: u64,
    /// `None` when the run ended with the job still waiting or running (a stalled policy, or
    /// the run's horizon)...
    pub outcome: Option<JobOutcome>,
    /// ...and then why, in words.
    pub unfinished_reason: Option<String>,
    /// For a job with task dependencies: the length of its critical path over the tasks that
    /// were not skipped (true work, and progress points for `data`/`checkpoint` edges), the
    /// shortest it could have run on an empty cluster.
    pub critical_path_ms: Option<u64>,
    /// How long the job would take alone on an empty cluster with no failures: its critical
    /// path, or its longest task. Finish-time fairness rho = JCT / this.
    pub alone_ms: u64,
}

/// One task of a job of several tasks (the record a DAG's Gantt chart is drawn from).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskRecord {
    pub task: TaskId,
    pub job: JobId,
    pub name: crate::workload::Name,
    pub status: TaskStatus,
    pub gpus: u32,
    pub first_start: Option<SimTime>,
    /// When it reached its final state.
    pub finish: Option<SimTime>,
    pub preemptions: u32,
    pub failures: u32,
    /// Its dependencies; `upstream` indexes the job's tasks (its records, in order).
    pub deps: Vec<Dependency>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecisionKind {
    Start,
    Preempt,
    Finish,
    Reject,
    Unschedulable,
    /// An attempt failed with its hardware (retried or not: the detail says).
    Fail,
    /// The user cancelled the job (a trace's `cancel_s`, `live cancel`).
    Cancel,
}

impl DecisionKind {
    pub fn as_str(self) -> &'static str {
        match self {
            DecisionKind::Start => "start",
            DecisionKind::Preempt => "preempt",
            DecisionKind::Finish => "finish",
            DecisionKind::Reject => "reject",
            DecisionKind::Unschedulable => "unschedulable",
            DecisionKind::Fail => "fail",
            DecisionKind::Cancel => "cancel",
        }
    }
    pub(crate) fn code(self) -> u32 {
        self as u32
    }
}

/// One line of the decision log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRecord {
    pub time: SimTime,
    pub kind: DecisionKind,
    pub job: JobId,
    pub task: Option<TaskId>,
    pub gpus: Vec<GpuId>,
    pub detail: String,
}

/// Run-wide counters and integrals. Integrals are exact integers over the run's window, from
/// the first event (the first submit) to the last.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RunStats {
    /// Events applied: arrivals, completions, wake-ups and hardware events (failures, repairs,
    /// detections, explicit heartbeats); stale completions of preempted or failed attempts are
    /// skipped and not counted.
    pub events: u64,
    /// The most jobs the run held at once (a streamed run's memory: from the oldest job in the
    /// system to the newest arrived; see `resident.rs`). Not in the summary: it describes the
    /// simulator, not the cluster.
    pub peak_jobs_held: u64,
    /// Jobs set aside while still in the system, so that the ended jobs after them could
    /// leave (see `ControllerConfig::set_aside_after`): their records came out of job order.
    /// Not in the summary either.
    pub jobs_set_aside: u64,
    pub decision_points: u64,
    pub starts: u64,
    pub preemptions: u64,
    pub rejects: u64,
    /// Jobs the user cancelled.
    pub cancels: u64,
    /// Decisions the plan refused (a policy bug or a policy probing; each names its rule).
    pub refused: u64,
    pub cluster_gpus: u32,
    /// Integral of allocated GPUs over time, in milli-GPU-milliseconds.
    pub allocated_mgpu_ms: u128,
    /// Integral of jobs in the system (arrived, not ended) over time, in job-milliseconds.
    pub in_system_job_ms: u128,
    pub first_submit: Option<SimTime>,
    /// When the last job ended.
    pub last_end: Option<SimTime>,
    /// The time of the last event (the run's end; after `last_end` only if jobs never ended).
    pub last_event: SimTime,
    /// Hardware failures (GPU or node) that happened, failures detected, and the summed
    /// detection lag of those, in ms.
    pub failures: u64,
    pub detections: u64,
    pub detection_lag_ms: u64,
    /// Attempts failed by hardware, and retries started after them.
    pub task_failures: u64,
    pub retries: u64,
    /// Starts of tasks reading a dataset on nodes holding it, and elsewhere (paying a transfer).
    pub local_starts: u64,
    pub remote_starts: u64,
    /// Integral of broken GPUs (truth) over time, in GPU-milliseconds.
    pub broken_gpu_ms: u64,
    /// Nodes retired for failing too often (`ControllerConfig::retire`), and the integral of
    /// their GPUs over time from their retirement on, in GPU-milliseconds: capacity lost.
    pub retired_nodes: u32,
    pub retired_gpu_ms: u64,
    /// Hot spares (`ControllerConfig::spare_nodes`): spares swapped in for dead nodes under
    /// running tasks, tasks hit when no spare was left (their restarts had to wait), time
    /// with some pool out of spares (ms), and the integral of GPUs held in reserve (GPU-ms).
    pub spare_swaps: u64,
    pub restarts_without_spare: u64,
    pub no_spare_ms: u64,
    pub reserved_gpu_ms: u64,
    /// When the run was stopped at its horizon (`ControllerConfig::horizon` after the last
    /// submission) with jobs not ended; `None`: it ended on its own.
    pub horizon_reached: Option<SimTime>,
    /// In a simulated run with a failure feed, the end of the span it covered: the run's end
    /// for failure models (drawn as the run goes), the end of the history for one replayed
    /// once; `None` without a feed.
    pub failures_until: Option<SimTime>,
    /// Hex digest of the decision log.
    pub digest: String,
}

/// The count of broken and unusable GPUs from `time` until the next sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthSample {
    pub time: SimTime,
    /// Broken now (truth).
    pub broken_gpus: u32,
    /// Known unusable now (on nodes declared dead, or failed GPUs seen).
    pub unusable_gpus: u32,
}

#[derive(Debug, Clone)]
pub struct RunResult {
    pub policy: String,
    pub seed: u64,
    /// In the order the run handed them over ([`crate::RecordSink`]): job order, unless the
    /// run set jobs aside (`stats.jobs_set_aside`), which only runs of tens of thousands of
    /// jobs do by default. Index by `JobRecord::job` only when none was.
    pub jobs: Vec<JobRecord>,
    /// The tasks of jobs with several tasks, in task order within a job, jobs as in `jobs`
    /// (empty when every job has one).
    pub tasks: Vec<TaskRecord>,
    /// The cluster's queues with their quotas (empty: queue names were only labels).
    pub queues: Vec<crate::quota::Queue>,
    pub stats: RunStats,
    /// The decision log, when the run was configured to keep it.
    pub decisions: Vec<DecisionRecord>,
    /// Broken and unusable GPUs over time, one sample per change (O(failures)).
    pub health_series: Vec<HealthSample>,
    /// The cluster's time series, in fixed-width buckets.
    pub series: Series,
}
