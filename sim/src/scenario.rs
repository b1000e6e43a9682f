//! What one run simulates ([`Scenario`]: a cluster, its jobs, what happens to its hardware,
//! queues and datasets), the checks a run makes of it before it starts, and [`SimError`].

use crate::cluster::Cluster;
use crate::controller::ControllerConfig;
use crate::failure::ClusterEvent;
use crate::hardware::HardwareFeed;
use crate::policy::Policy;
use crate::quota::{QueueSpec, Queues};
use crate::workload::{Workload, WorkloadShape};
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SimError {
    /// The policy reads estimates and this job has a task without one.
    MissingEstimate { policy: String, job: String },
    /// A cluster event names hardware the cluster does not have.
    BadEvent { index: usize, problem: String },
    /// A task dependency this run cannot honour.
    BadDependency { job: String, problem: String },
    /// A queue or dataset definition, or a job's queue or dataset, that does not fit the
    /// cluster.
    BadQueue(String),
    /// A streamed run's jobs could not be read on (the trace changed since it was checked).
    Feed(String),
    /// A run setting that does not fit the cluster (more spare nodes than a pool has).
    BadConfig(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::MissingEstimate { policy, job } => write!(
                f,
                "policy {policy} uses duration estimates, but job `{job}` has a task without one \
                 (give an estimate column, or use duration=oracle)"
            ),
            SimError::BadEvent { index, problem } => write!(f, "cluster event {index}: {problem}"),
            SimError::BadDependency { job, problem } => write!(f, "job `{job}`: {problem}"),
            SimError::BadQueue(problem) | SimError::BadConfig(problem) | SimError::Feed(problem) => {
                f.write_str(problem)
            }
        }
    }
}

impl std::error::Error for SimError {}

/// What one run simulates: a cluster, the jobs submitted to it, and what happens to its
/// hardware: fixed events (failures, repairs, heartbeats) and a feed of failures drawn as the
/// run goes (both empty for a cluster that never fails).
pub struct Scenario {
    pub cluster: Cluster,
    /// The jobs, held in memory; empty for a streamed run (see [`Scenario::streamed`]).
    pub workload: Workload,
    /// A streamed run's jobs: the workload's shape, gathered beforehand, and the feed that
    /// gives its jobs in arrival order as the run reaches them.
    pub(crate) stream: Option<(WorkloadShape, crate::arrivals::JobFeed)>,
    pub(crate) events: Vec<ClusterEvent>,
    pub(crate) feed: Option<Box<dyn HardwareFeed>>,
    pub(crate) queues: Queues,
    pub(crate) datasets: crate::data::Datasets,
}

impl fmt::Debug for Scenario {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scenario")
            .field("cluster", &self.cluster)
            .field("workload", &self.workload)
            .field("streamed", &self.stream.as_ref().map(|(shape, _)| shape))
            .field("events", &self.events.len())
            .field("queues", &self.queues)
            .finish_non_exhaustive()
    }
}

impl Scenario {
    pub fn new(cluster: Cluster, workload: Workload) -> Scenario {
        Scenario {
            cluster,
            workload,
            stream: None,
            events: Vec::new(),
            feed: None,
            queues: Queues::default(),
            datasets: crate::data::Datasets::default(),
        }
    }

    /// A run whose jobs are read as it goes: `jobs` gives them in arrival order, each already
    /// counted into `shape` and checked ([`Scenario::check_job`], with the queues and
    /// datasets this scenario will have) by a pass over the same jobs before the run.
    pub fn streamed(cluster: Cluster, shape: WorkloadShape, jobs: crate::arrivals::JobFeed) -> Scenario {
        Scenario { stream: Some((shape, jobs)), ..Scenario::new(cluster, Workload::default()) }
    }

    /// What the run refuses of one job, as it refuses it of a workload in memory: a job
    /// without an estimate under a policy that reads them, a `checkpoint=N` dependency on a task
    /// that never checkpoints, a queue or a dataset this scenario does not define.
    pub fn check_job(
        &self,
        job: &crate::workload::JobSpec,
        policy: &dyn Policy,
        config: &ControllerConfig,
    ) -> Result<(), SimError> {
        if policy.needs_estimates() && job.tasks.iter().any(|t| t.estimate.is_none()) {
            return Err(SimError::MissingEstimate { policy: policy.name().to_string(), job: job.name.to_string() });
        }
        check_job_checkpoints(job, config.checkpoint)?;
        self.queues.queue_of(job).map_err(SimError::BadQueue)?;
        self.datasets.of_job(job).map_err(SimError::BadQueue)?;
        Ok(())
    }

    /// Adds queues with quotas (checked against the cluster and the jobs' queue names).
    pub fn with_queues(mut self, specs: &[QueueSpec]) -> Result<Scenario, SimError> {
        let queues = Queues::new(specs, &self.cluster).map_err(|e| SimError::BadQueue(e.0))?;
        queues.assign(&self.workload).map_err(SimError::BadQueue)?;
        self.queues = queues;
        Ok(self)
    }

    pub fn queues(&self) -> &Queues {
        &self.queues
    }

    /// Puts datasets on nodes (checked against the cluster and the tasks' dataset names).
    pub fn with_datasets(mut self, specs: &[crate::data::DatasetSpec]) -> Result<Scenario, SimError> {
        let datasets = crate::data::Datasets::new(specs, &self.cluster).map_err(|e| SimError::BadQueue(e.0))?;
        datasets.assign(&self.workload).map_err(SimError::BadQueue)?;
        self.datasets = datasets;
        Ok(self)
    }

    /// Adds ground-truth cluster events, checked against the cluster and sorted by time
    /// (events at one instant keep the given order).
    pub fn with_events(mut self, mut events: Vec<ClusterEvent>) -> Result<Scenario, SimError> {
        for (index, e) in events.iter().enumerate() {
            let bad = |problem: String| SimError::BadEvent { index, problem };
            let nodes = self.cluster.nodes().len();
            if e.node().index() >= nodes {
                return Err(bad(format!("node {} does not exist (the cluster has {nodes})", e.node().0)));
            }
            if let ClusterEvent::GpuFail { node, gpu, .. } = *e {
                let count = self.cluster.node(node).gpu_count;
                if gpu >= count {
                    return Err(bad(format!("node {} has {count} GPUs, no GPU slot {gpu}", node.0)));
                }
            }
        }
        events.sort_by_key(ClusterEvent::time);
        self.events = events;
        Ok(self)
    }

    pub fn events(&self) -> &[ClusterEvent] {
        &self.events
    }

    /// Adds failures produced as the run goes (a failure model, a replayed history), merged
    /// after the fixed events of the same instant. The feed must name hardware the cluster has.
    pub fn with_feed(mut self, feed: Box<dyn HardwareFeed>) -> Scenario {
        self.feed = Some(feed);
        self
    }

    /// What a run refuses before it starts: a policy that reads estimates on jobs without,
    /// a `checkpoint=N` dependency on a task that never checkpoints, spares that leave a pool
    /// empty.
    pub(crate) fn check(&self, policy: &dyn Policy, config: &ControllerConfig) -> Result<(), SimError> {
        if policy.needs_estimates() {
            let missing = self.workload.jobs().iter().find(|j| j.tasks.iter().any(|t| t.estimate.is_none()));
            if let Some(job) = missing {
                return Err(SimError::MissingEstimate { policy: policy.name().to_string(), job: job.name.to_string() });
            }
        }
        check_checkpoint_dependencies(&self.workload, config.checkpoint)?;
        if let Some(pool) = self.cluster.pools().iter().find(|p| p.node_count <= config.spare_nodes) {
            return Err(SimError::BadConfig(format!(
                "{} spare nodes per pool leave none in service in pool `{}` of {} nodes",
                config.spare_nodes, pool.name, pool.node_count
            )));
        }
        Ok(())
    }
}

/// A `checkpoint=N` dependency needs an upstream that checkpoints at intervals: with the
/// task's own interval or the run's default, it must not be continuous (zero).
fn check_checkpoint_dependencies(workload: &Workload, default: crate::time::SimDuration) -> Result<(), SimError> {
    if !workload.has_dags() {
        return Ok(());
    }
    workload.jobs().iter().try_for_each(|job| check_job_checkpoints(job, default))
}

/// [`check_checkpoint_dependencies`] for one job (what live mode checks at submission).
pub fn check_job_checkpoints(
    job: &crate::workload::JobSpec,
    default: crate::time::SimDuration,
) -> Result<(), SimError> {
    for task in &job.tasks {
        for dep in &task.deps {
            let upstream = &job.tasks[dep.upstream];
            if let crate::workload::DepKind::Checkpoint(n) = dep.kind
                && upstream.options().checkpoint.unwrap_or(default) == crate::time::SimDuration::ZERO
            {
                return Err(SimError::BadDependency {
                    job: job.name.to_string(),
                    problem: format!(
                        "task `{}` waits for checkpoint {n} of `{}`, which checkpoints continuously (interval \
                         0); give it a checkpoint_s, or the run a --checkpoint-s",
                        task.name, upstream.name
                    ),
                });
            }
        }
    }
    Ok(())
}
