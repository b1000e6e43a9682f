//! [`Setup`]: a [`RunSpec`] with its files read (the cluster, its queues and datasets), and the
//! one way a run is built from it: the settings of the Controller, the policy, the jobs as the
//! run's options shape them, and either a [`Scenario`] (the virtual clock: `simulate`, sweeps,
//! a live session's replay) or a Controller without jobs (the wall clock: live mode, its jobs
//! added as they are submitted). Where the files come from is the caller's: a trace and the
//! paths of a RunSpec ([`crate::Runner`]), or the texts a live state directory keeps.

use crate::consolidation;
use crate::queue_defaults::QueueDefaults;
use crate::{RunError, RunSpec};
use policies::Registry;
use sim::{
    Cluster, ClusterEvent, ClusterSpec, Controller, ControllerConfig, DatasetSpec, Datasets, HardwareFeed, JobSpec,
    Policy, QueueSpec, Queues, Scenario, Workload, WorkloadShape,
};

/// A RunSpec and what its files hold, checked: every setting valid, the queues and datasets
/// placed on the cluster.
#[derive(Debug, Clone)]
pub struct Setup {
    spec: RunSpec,
    config: ControllerConfig,
    queue_defaults: QueueDefaults,
    cluster_spec: ClusterSpec,
    cluster: Cluster,
    queue_specs: Vec<QueueSpec>,
    queues: Queues,
    dataset_specs: Vec<DatasetSpec>,
    datasets: Datasets,
}

impl Setup {
    /// `spec`'s settings on `cluster` with `queues` and `datasets` (read by the caller from
    /// wherever they are kept).
    pub fn new(
        spec: RunSpec,
        cluster: ClusterSpec,
        queues: Vec<QueueSpec>,
        datasets: Vec<DatasetSpec>,
    ) -> Result<Setup, RunError> {
        let config = spec.controller_config()?;
        let queue_defaults = QueueDefaults::of(&spec)?;
        let built = Cluster::new(&cluster)?;
        let placed_queues = Queues::new(&queues, &built)?;
        let placed_datasets = Datasets::new(&datasets, &built)?;
        Ok(Setup {
            spec,
            config,
            queue_defaults,
            cluster_spec: cluster,
            cluster: built,
            queue_specs: queues,
            queues: placed_queues,
            dataset_specs: datasets,
            datasets: placed_datasets,
        })
    }

    /// The settings.
    pub fn spec(&self) -> &RunSpec {
        &self.spec
    }
    /// The Controller's settings (what the runner keeps is set on the copy it takes).
    pub fn config(&self) -> ControllerConfig {
        self.config.clone()
    }
    /// The cluster as described.
    pub fn cluster_spec(&self) -> &ClusterSpec {
        &self.cluster_spec
    }
    /// The cluster, built.
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }
    /// The queues as described (none: queue names are labels).
    pub fn queue_specs(&self) -> &[QueueSpec] {
        &self.queue_specs
    }
    /// The queues, placed on the cluster.
    pub fn queues(&self) -> &Queues {
        &self.queues
    }
    /// The datasets as described (none: dataset names are labels).
    pub fn dataset_specs(&self) -> &[DatasetSpec] {
        &self.dataset_specs
    }
    /// The datasets, placed on the cluster.
    pub fn datasets(&self) -> &Datasets {
        &self.datasets
    }

    /// `job` as the run's options shape it: its queue's defaults filled in, then strict
    /// consolidation (`--single-node-up-to`, `--whole-nodes`). Shaping a shaped job changes
    /// nothing.
    pub fn shape_job(&self, job: &mut JobSpec) {
        self.queue_defaults.apply_to_job(job);
        if consolidation::applies(&self.spec) {
            consolidation::apply_to_job(&self.spec, job);
        }
    }

    /// Whether [`Setup::shape_job`] may change a job: some per-queue default or strict
    /// consolidation is set. Without, a run takes its jobs as they are, uncopied.
    pub fn shapes_jobs(&self) -> bool {
        !self.queue_defaults.is_empty() || consolidation::applies(&self.spec)
    }

    /// `workload` shaped job by job ([`Setup::shape_job`]); a per-queue setting for a queue
    /// no job is in is refused.
    pub fn shape(&self, workload: Workload) -> Result<Workload, RunError> {
        if !self.shapes_jobs() {
            return Ok(workload);
        }
        self.queue_defaults.check_used(workload.shape())?;
        let mut jobs = workload.into_jobs();
        jobs.iter_mut().for_each(|job| self.shape_job(job));
        Ok(Workload::new(jobs)?)
    }

    /// The virtual clock's run of `workload` (shaped here) with hardware `events` and the
    /// failure `feed` drawn as the run goes.
    pub fn scenario(
        &self,
        workload: Workload,
        events: Vec<ClusterEvent>,
        feed: Option<Box<dyn HardwareFeed>>,
    ) -> Result<Scenario, RunError> {
        let workload = self.shape(workload)?;
        self.with_hardware(Scenario::new(self.cluster.clone(), workload), events, feed)
    }

    /// A per-queue setting for a queue no job of a workload of `shape` is in is refused (what
    /// [`Setup::shape`] checks of a workload in memory).
    pub fn check_queue_settings_used(&self, shape: &WorkloadShape) -> Result<(), RunError> {
        Ok(self.queue_defaults.check_used(shape)?)
    }

    /// The virtual clock's run of jobs read as it goes: `jobs` (each shaped by
    /// [`Setup::shape_job`] and counted into `shape`, which a pass over them gathered and
    /// checked), with hardware `events` and the failure `feed`.
    pub fn streamed_scenario(
        &self,
        shape: WorkloadShape,
        jobs: sim::JobFeed,
        events: Vec<ClusterEvent>,
        feed: Option<Box<dyn HardwareFeed>>,
    ) -> Result<Scenario, RunError> {
        self.with_hardware(Scenario::streamed(self.cluster.clone(), shape, jobs), events, feed)
    }

    /// `scenario` with this setup's queues and datasets, hardware `events` and failure `feed`.
    fn with_hardware(
        &self,
        scenario: Scenario,
        events: Vec<ClusterEvent>,
        feed: Option<Box<dyn HardwareFeed>>,
    ) -> Result<Scenario, RunError> {
        let scenario =
            scenario.with_events(events)?.with_queues(&self.queue_specs)?.with_datasets(&self.dataset_specs)?;
        Ok(match feed {
            Some(feed) => scenario.with_feed(feed),
            None => scenario,
        })
    }

    /// The wall clock's Controller, under a policy named `policy_name` with `config` (the
    /// caller's copy of [`Setup::config`]), before any job: jobs join it as they are
    /// submitted, each shaped by [`Setup::shape_job`].
    pub fn controller(&self, policy_name: &str, config: ControllerConfig) -> Result<Controller, RunError> {
        Controller::new(self.cluster.clone(), Workload::default(), policy_name, config)
            .with_queues(self.queues.clone())
            .and_then(|c| c.with_datasets(self.datasets.clone()))
            .map_err(RunError::new)
    }
}

impl RunSpec {
    /// The policy this spec names, built from `registry`: the one place a run's policy is made.
    pub fn build_policy(&self, registry: &Registry) -> Result<Box<dyn Policy + Send>, RunError> {
        registry.build(&self.policy).map_err(|e| RunError::new(format!("policy: {e}")))
    }
}

/// A cluster given as text: a shorthand (`40x8:V100,8x8:A100`) or the text of a cluster.csv
/// (any text of more than one line).
pub fn parse_cluster_text(text: &str) -> Result<ClusterSpec, RunError> {
    Ok(if text.contains('\n') {
        traces::read_cluster_csv(text.as_bytes(), "cluster.csv")?
    } else {
        traces::parse_cluster_shorthand(text)?
    })
}
