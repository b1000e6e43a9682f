//! Data locality: datasets held by nodes. A task may name the dataset it reads; started on
//! nodes that all hold it, it runs as usual; started elsewhere, it first pays the dataset's
//! transfer time on its GPUs, without progress (counted with restart overhead as start
//! overhead). Without datasets defined, dataset names are only labels.

use crate::cluster::{Cluster, ClusterError};
use crate::ids::NodeId;
use crate::time::SimDuration;
use crate::workload::{JobSpec, Workload};
use std::collections::BTreeSet;

/// One dataset as the user describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DatasetSpec {
    pub name: String,
    /// The nodes holding it.
    pub nodes: Vec<NodeId>,
    /// What a task started away from it pays to bring it over.
    pub transfer: SimDuration,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dataset {
    pub name: String,
    pub nodes: BTreeSet<NodeId>,
    pub transfer: SimDuration,
}

/// The cluster's datasets (none: tasks' dataset names are only labels).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Datasets {
    datasets: Vec<Dataset>,
}

impl Datasets {
    pub fn new(specs: &[DatasetSpec], cluster: &Cluster) -> Result<Datasets, ClusterError> {
        let mut datasets = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let err = |m: String| Err(ClusterError(format!("dataset `{}`: {m}", spec.name)));
            if spec.name.is_empty() {
                return Err(ClusterError(format!("dataset {i} has an empty name")));
            }
            if specs[..i].iter().any(|s| s.name == spec.name) {
                return err("defined twice".into());
            }
            let count = cluster.nodes().len();
            if let Some(bad) = spec.nodes.iter().find(|n| n.index() >= count) {
                return err(format!("node {} does not exist (the cluster has {count}, numbered from 0)", bad.0));
            }
            datasets.push(Dataset {
                name: spec.name.clone(),
                nodes: spec.nodes.iter().copied().collect(),
                transfer: spec.transfer,
            });
        }
        Ok(Datasets { datasets })
    }

    pub fn is_empty(&self) -> bool {
        self.datasets.is_empty()
    }
    pub fn get(&self, index: u32) -> &Dataset {
        &self.datasets[index as usize]
    }
    pub fn find(&self, name: &str) -> Option<u32> {
        self.datasets.iter().position(|d| d.name == name).map(|i| i as u32)
    }

    /// Checks every task's dataset ([`Datasets::of_job`]); an error names a task reading a
    /// dataset not defined.
    pub fn assign(&self, workload: &Workload) -> Result<(), String> {
        workload.jobs().iter().try_for_each(|job| self.of_job(job).map(drop))
    }

    /// Each task's dataset of `job` (none when the run defines none: dataset names are then
    /// only labels); an error names a task reading a dataset not defined.
    pub fn of_job(&self, job: &JobSpec) -> Result<Vec<Option<u32>>, String> {
        if self.is_empty() {
            return Ok(Vec::new()); // no allocation for the common run without datasets
        }
        let mut out = Vec::with_capacity(job.tasks.len());
        for task in &job.tasks {
            let index = match (&task.options().dataset, self.is_empty()) {
                (Some(name), false) => Some(self.find(name).ok_or_else(|| {
                    let names: Vec<&str> = self.datasets.iter().map(|d| d.name.as_str()).collect();
                    format!(
                        "job `{}` task `{}` reads dataset `{name}`, which the cluster does not define (it has {})",
                        job.name,
                        task.name,
                        names.join(", ")
                    )
                })?),
                _ => None,
            };
            out.push(index);
        }
        Ok(out)
    }
}
