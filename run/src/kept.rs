//! Runs of a trace the runner keeps (a sweep's, a regression check's, Python's sweep): every
//! run reads the one copy kept, its jobs cloned one at a time (and shaped by the run's
//! options) as the run admits them, instead of a copy of the whole workload each. The engine
//! lets each job go once it has ended, so sixteen runs of one trace hold the trace once and
//! sixteen working sets, not sixteen traces.
//!
//! Such a run refuses what the same run of the trace in memory refuses, in the same order
//! (the order [`crate::Setup::scenario`] and [`sim::Engine::new`] check a workload in): the
//! checks a workload in memory makes of all its jobs at once are made here in one pass over
//! the kept jobs, the first refusal of each kind kept for its turn.

use crate::{RunError, Setup};
use sim::{ControllerConfig, JobSpec, Policy, Workload, WorkloadShape};
use std::borrow::Cow;
use std::sync::Arc;

/// The kept trace's jobs in arrival order for one run: cloned a batch at a time as the run
/// admits them, each shaped by the run's setup when it shapes jobs.
struct Feed {
    trace: Arc<traces::Trace>,
    next: usize,
    /// The run's setup, when it shapes jobs ([`Setup::shapes_jobs`]).
    shaping: Option<Setup>,
}

impl Iterator for Feed {
    type Item = Result<Vec<JobSpec>, String>;

    fn next(&mut self) -> Option<Self::Item> {
        let jobs = self.trace.workload.jobs().get(self.next..)?;
        let mut batch = jobs[..jobs.len().min(sim::FEED_BATCH)].to_vec();
        if batch.is_empty() {
            return None;
        }
        self.next += batch.len();
        if let Some(setup) = &self.shaping {
            batch.iter_mut().for_each(|job| setup.shape_job(job));
        }
        Some(Ok(batch))
    }
}

/// The jobs of the kept `trace` as a run of `setup` is fed them (see [`Feed`]).
pub(crate) fn feed(trace: Arc<traces::Trace>, setup: &Setup) -> sim::JobFeed {
    let shaping = setup.shapes_jobs().then(|| setup.clone());
    Box::new(Feed { trace, next: 0, shaping })
}

/// `job` as a run of `setup` sees it: borrowed when the run shapes no job, else a shaped copy
/// (dropped once checked: one job at a time, never the workload).
fn shaped<'a>(job: &'a JobSpec, setup: &Setup) -> Cow<'a, JobSpec> {
    if !setup.shapes_jobs() {
        return Cow::Borrowed(job);
    }
    let mut copy = job.clone();
    setup.shape_job(&mut copy);
    Cow::Owned(copy)
}

/// What one pass over a run's jobs found: the workload's shape (as the run shapes its jobs)
/// and the first refusal of each kind a run in memory checks after the shape, kept until the
/// run reaches the check that makes it.
pub(crate) struct Checked {
    /// The shape of the workload as the run's options shape it.
    pub shape: WorkloadShape,
    /// A job in a queue the run does not define.
    queue: Option<RunError>,
    /// A task reading a dataset the run does not define.
    dataset: Option<RunError>,
    /// A job without an estimate, under a policy that reads them.
    estimate: Option<RunError>,
    /// A `checkpoint=N` dependency on a task that never checkpoints.
    checkpoint: Option<RunError>,
}

impl Checked {
    /// What [`Setup::scenario`] refuses after the hardware events: a job's queue, then a
    /// task's dataset.
    pub fn refuse_placement(&mut self) -> Result<(), RunError> {
        match self.queue.take().or_else(|| self.dataset.take()) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// What [`sim::Engine::new`] refuses of the jobs: a missing estimate, then a checkpoint
    /// dependency.
    pub fn refuse_run(&mut self) -> Result<(), RunError> {
        match self.estimate.take().or_else(|| self.checkpoint.take()) {
            Some(error) => Err(error),
            None => Ok(()),
        }
    }

    /// Keeps what `job` is refused for, of each kind not yet found.
    fn note(&mut self, job: &JobSpec, setup: &Setup, policy: &dyn Policy, config: &ControllerConfig) {
        if self.queue.is_none() {
            self.queue = setup.queues().queue_of(job).err().map(|e| sim::SimError::BadQueue(e).into());
        }
        if self.dataset.is_none() {
            self.dataset = setup.datasets().of_job(job).err().map(|e| sim::SimError::BadQueue(e).into());
        }
        if self.estimate.is_none() && policy.needs_estimates() && job.tasks.iter().any(|t| t.estimate.is_none()) {
            let missing =
                sim::SimError::MissingEstimate { policy: policy.name().to_string(), job: job.name.to_string() };
            self.estimate = Some(missing.into());
        }
        if self.checkpoint.is_none() {
            self.checkpoint = sim::check_job_checkpoints(job, config.checkpoint).err().map(RunError::from);
        }
    }
}

/// One pass over the kept `workload` as a run of `setup` under `policy` with `config` shapes
/// it: what a shaped workload in memory refuses at once (a per-queue setting for no queue, a
/// job made invalid) is the error; the rest is kept in [`Checked`] for its turn.
pub(crate) fn check(
    workload: &Workload,
    setup: &Setup,
    policy: &dyn Policy,
    config: &ControllerConfig,
) -> Result<Checked, RunError> {
    let shaping = setup.shapes_jobs();
    if shaping {
        setup.check_queue_settings_used(workload.shape())?;
    }
    let mut checked = Checked {
        shape: if shaping { WorkloadShape::default() } else { workload.shape().clone() },
        queue: None,
        dataset: None,
        estimate: None,
        checkpoint: None,
    };
    for job in workload.jobs() {
        let job = shaped(job, setup);
        if shaping {
            // Checks the shaped job as `Workload::new` does; its order is the kept one.
            checked.shape.add(&job)?;
        }
        checked.note(&job, setup, policy, config);
    }
    Ok(checked)
}
