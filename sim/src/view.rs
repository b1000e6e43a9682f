//! What a policy may read: a read-only view of the cluster and the jobs, plus the changes since
//! its last call so it can keep incremental indexes instead of rescanning every job. What is
//! free *right now, including the policy's own tentative decisions* is read from the
//! [`crate::Plan`], not from here.

#![deny(missing_docs)]

use crate::cluster::Cluster;
use crate::health::Health;
use crate::ids::{JobId, NodeId, TaskId};
use crate::quota::{QueueId, Queues};
use crate::resident::Resident;
use crate::state::{JobState, TaskState, TaskStatus};
use crate::time::{SimDuration, SimTime};
use crate::workload::JobSpec;
use std::collections::BTreeSet;

/// One thing that changed since the policy's previous call, in the order it happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// A task became startable for the first time (its job arrived).
    TaskReady(TaskId),
    /// A task was started (by the previous plan).
    TaskStarted(TaskId),
    /// A task lost its GPUs to preemption and waits to restart: startable again.
    TaskPreempted(TaskId),
    /// A task completed its work and freed its GPUs.
    TaskFinished(TaskId),
    /// A task's attempt failed with its hardware (or its job failed) and it lost its GPUs: it
    /// is startable again if it retries (status `Retrying`), final otherwise.
    TaskFailed(TaskId),
    /// A job reached its final state (succeeded, or rejected by the previous plan).
    JobEnded(JobId),
}

/// Which duration a policy is allowed to use; the report states the choice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DurationSource {
    /// The true duration: an upper bound no real scheduler has.
    Oracle,
    /// The estimate given in the trace (or by an estimator).
    Estimate,
}

impl DurationSource {
    /// The name, as a parameter value writes it (`oracle`, `estimate`).
    pub fn as_str(self) -> &'static str {
        match self {
            DurationSource::Oracle => "oracle",
            DurationSource::Estimate => "estimate",
        }
    }
}

/// What a policy may read at a decision point: the cluster, every job and task, the queues,
/// the known hardware, and the changes since its previous call. Read-only; everything in it is
/// as of the start of the decision (the policy's own tentative decisions are in the `Plan`).
pub struct ClusterView<'a> {
    pub(crate) now: SimTime,
    pub(crate) changes: &'a [Change],
    pub(crate) cluster: &'a Cluster,
    pub(crate) specs: &'a Resident<JobSpec>,
    pub(crate) jobs: &'a Resident<JobState>,
    pub(crate) tasks: &'a Resident<TaskState>,
    pub(crate) health: &'a Health,
    pub(crate) failures_seen: &'a BTreeSet<(SimTime, NodeId)>,
    pub(crate) queues: &'a Queues,
    pub(crate) job_queue: &'a crate::quota::JobQueues,
    pub(crate) owner: &'a [crate::state::OptIndex],
    pub(crate) datasets: &'a crate::data::Datasets,
    pub(crate) speed_profiles: &'a crate::speeds::SpeedProfiles,
    pub(crate) releases: &'a crate::release::Releases,
}

impl<'a> ClusterView<'a> {
    /// The time of this decision point.
    pub fn now(&self) -> SimTime {
        self.now
    }
    /// How long after a task ends its GPUs return to the free pool (the run's release
    /// latency, `--release-latency-s`; zero: at once). A policy that plans when GPUs come
    /// back adds it to every running task's end.
    pub fn release_latency(&self) -> SimDuration {
        self.releases.latency()
    }
    /// GPUs let go of and not yet back, as (when, GPU, milli-GPUs) in the order they return:
    /// neither free nor held meanwhile.
    pub fn releasing(&self) -> impl Iterator<Item = (SimTime, crate::ids::GpuId, u32)> + 'a {
        self.releases.due()
    }
    /// What happened since the policy's previous call, in the order it happened: what a
    /// policy's incremental indexes follow.
    pub fn changes(&self) -> &'a [Change] {
        self.changes
    }
    /// The cluster: pools, nodes, GPUs (all of them; which are usable is `health`).
    pub fn cluster(&self) -> &'a Cluster {
        self.cluster
    }
    /// A task's state: status, gang size, pools, work and estimate, attempt, placement.
    pub fn task(&self, task: TaskId) -> &'a TaskState {
        &self.tasks[task.index()]
    }
    /// A job's state: its tasks, whether it arrived or ended.
    pub fn job(&self, job: JobId) -> &'a JobState {
        &self.jobs[job.index()]
    }
    /// A hint, for speed alone: asks the processor to start loading `job`'s state, which the
    /// policy will read soon (a job whose threshold comes next). Reads nothing of it, changes
    /// nothing; a job no longer held is passed over.
    pub fn prefetch_job(&self, job: JobId) {
        if let Some(state) = self.jobs.get(job.index()) {
            crate::prefetch::prefetch(state);
        }
    }
    /// A hint, as [`ClusterView::prefetch_job`], for the state of `job`'s tasks (up to four):
    /// it reads the job's state to find them, so it is for a job asked for earlier.
    pub fn prefetch_tasks(&self, job: JobId) {
        let Some(state) = self.jobs.get(job.index()) else { return };
        for task in state.tasks().take(4).filter_map(|t| self.tasks.get(t.index())) {
            crate::prefetch::prefetch(task);
        }
    }
    /// The job as submitted (name, submit time, priority, tasks and their DAG).
    pub fn job_spec(&self, job: JobId) -> &'a JobSpec {
        &self.specs[job.index()]
    }
    /// The cluster's queues and their quotas (what each queue uses now, including this
    /// decision's tentative starts and preemptions, is `Plan::quota`).
    pub fn queues(&self) -> &'a Queues {
        self.queues
    }
    /// The task holding `gpu` whole (as of the start of this decision), if any.
    pub fn gpu_owner(&self, gpu: crate::ids::GpuId) -> Option<TaskId> {
        self.owner[gpu.index()].get().map(TaskId)
    }
    /// How fast a task with `profile` (`TaskState::speed_profile`) runs work in `pool`, in
    /// thousandths of the reference type: its own speed for that GPU type, else the pool's.
    pub fn speed_in(&self, profile: Option<u32>, pool: crate::ids::PoolId) -> u32 {
        self.speed_profiles.speed(profile, self.cluster.pool(pool))
    }
    /// The cluster's datasets (a task's `dataset` indexes them).
    pub fn datasets(&self) -> &'a crate::data::Datasets {
        self.datasets
    }
    /// The queue `job` runs in, when the cluster has queues.
    pub fn queue_of(&self, job: JobId) -> Option<QueueId> {
        self.job_queue.of(job)
    }
    /// Where a running task's work stands now, done and checkpointed (all attempts); `None`
    /// for a task not running. One read of its progress for what a preemptive policy weighs
    /// about each victim: [`Self::work_at_risk`] and [`Self::work_saved_this_attempt`] are
    /// parts of it, and its work done is what [`Self::expected_remaining`] subtracts.
    pub fn progress_now(&self, task: TaskId) -> Option<crate::Progress> {
        let t = &self.tasks[task.index()];
        (t.status == TaskStatus::Running).then(|| t.progress_after(t.progress_wall_at(self.now)))
    }
    /// The work a running task would lose if it were preempted now: what it did since its
    /// last checkpoint (nothing with continuous checkpoints, or while stalled it has none).
    pub fn work_at_risk(&self, task: TaskId) -> SimDuration {
        self.progress_now(task).map_or(SimDuration::ZERO, |at| at.done - at.saved)
    }
    /// The work a running task has checkpointed during its current attempt: what preempting it
    /// now would keep of the attempt. Zero while it pays its restart overhead and until its
    /// first checkpoint of the attempt (at once with continuous checkpoints). A preemptive
    /// policy that takes victims only when this is positive cannot livelock: every attempt it
    /// ends has moved its task forward for good.
    pub fn work_saved_this_attempt(&self, task: TaskId) -> SimDuration {
        let t = &self.tasks[task.index()];
        self.progress_now(task).map_or(SimDuration::ZERO, |at| t.saved_this_attempt(at))
    }
    /// What the scheduler knows of the hardware (nodes declared dead, GPUs taken out). The
    /// ground truth in it is for reports; a policy that reads `broken` is cheating.
    pub fn health(&self) -> &'a Health {
        self.health
    }
    /// Nodes on which a failure became known at or after `since`, in time order (a node may
    /// repeat). O(failures since then).
    pub fn failures_seen_since(&self, since: SimTime) -> impl Iterator<Item = NodeId> + 'a {
        self.failures_seen.range((since, NodeId(0))..).map(|&(_, node)| node)
    }
    /// Whether `task` is in the run now: its job has joined and not been let go (a job leaves
    /// once it has ended and a decision has told the policy so). Not a range of ids: a job
    /// still in the system after many later ones have left is held on its own.
    pub fn holds_task(&self, task: TaskId) -> bool {
        self.tasks.get(task.index()).is_some()
    }
    /// Whether `job` is in the run now (see [`ClusterView::holds_task`]).
    pub fn holds_job(&self, job: JobId) -> bool {
        self.jobs.get(job.index()).is_some()
    }
    /// How many jobs have joined the run so far (job ids are `0..job_count`).
    pub fn job_count(&self) -> usize {
        self.jobs.end()
    }
    /// How many tasks have joined the run so far (task ids are `0..task_count`; a streamed
    /// run admits jobs as they are submitted).
    pub fn task_count(&self) -> usize {
        self.tasks.end()
    }

    /// The task's whole duration as `source` knows it. With `Estimate`, a task without an
    /// estimate falls back to its true duration; the engine refuses to run an estimate-based
    /// policy on a trace that lacks estimates, so that fallback is never silent.
    pub fn expected_duration(&self, task: TaskId, source: DurationSource) -> SimDuration {
        let t = self.task(task);
        match source {
            DurationSource::Oracle => t.work,
            DurationSource::Estimate => t.estimate.get().unwrap_or(t.work),
        }
    }

    /// Work left as `source` knows it: the expected duration less the work done so far.
    /// An estimate that has been overrun reads as zero left.
    pub fn expected_remaining(&self, task: TaskId, source: DurationSource) -> SimDuration {
        let t = self.task(task);
        let done = t.work - t.remaining_at(self.now);
        self.expected_duration(task, source) - done
    }

    /// The overhead `task` pays if started now: its restart overhead after a preemption or
    /// failure (also for a task preempted by the plan being made), nothing on a first start.
    pub fn start_overhead(&self, task: TaskId) -> SimDuration {
        let t = self.task(task);
        if t.attempt > 0 { t.restart_overhead } else { SimDuration::ZERO }
    }

    /// When `task` would end if started now and never interrupted, by `source`.
    pub fn expected_end_if_started(&self, task: TaskId, source: DurationSource) -> SimTime {
        self.now + self.start_overhead(task) + self.expected_remaining(task, source)
    }

    /// For a running task: when it is expected to end, by `source`, counting any restart
    /// overhead still to pay. Never earlier than now.
    pub fn expected_end(&self, task: TaskId, source: DurationSource) -> SimTime {
        let t = self.task(task);
        let overhead_end = t.run_start + t.overhead;
        let resume = if overhead_end > self.now { overhead_end } else { self.now };
        // Checkpoints still to write pause it on the way (counted on the true work left).
        let to_write =
            t.checkpoints_before(t.work) - t.checkpoints_before(t.work - t.remaining + t.progress_at(self.now));
        resume + t.wall_for(self.expected_remaining(task, source)) + SimDuration(to_write * t.checkpoint_cost.as_ms())
    }
}
