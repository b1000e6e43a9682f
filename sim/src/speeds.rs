//! Per-task speeds by GPU type (`TaskSpec::speeds`), resolved once per run into one speed per
//! pool and interned: tasks with the same speeds share a profile, so a task carries only an
//! index (and placement can index waiting tasks by it).

use crate::cluster::{Cluster, Pool};
use crate::workload::TaskSpec;
use std::collections::BTreeMap;

/// The distinct speed profiles of a run's tasks: each one speed (thousandths of the reference
/// type) per pool, by pool id.
#[derive(Debug, Clone, Default)]
pub struct SpeedProfiles {
    profiles: Vec<Vec<u32>>,
    index: BTreeMap<Vec<u32>, u32>,
}

impl SpeedProfiles {
    /// The profile of `task` on `cluster`, added if new; `None` when the task names no speed
    /// that differs from its pool's (it then runs at the pools' speeds, as every task does by
    /// default). GPU types the cluster does not have are not used, as a `gpu_type` would be.
    pub fn profile_of(&mut self, task: &TaskSpec, cluster: &Cluster) -> Option<u32> {
        if task.options().speeds.is_empty() {
            return None;
        }
        let speeds: Vec<u32> = cluster
            .pools()
            .iter()
            .map(|p| task.options().speeds.get(&p.gpu_type).copied().unwrap_or(p.speed_milli))
            .collect();
        if speeds.iter().zip(cluster.pools()).all(|(&s, p)| s == p.speed_milli) {
            return None;
        }
        let next = self.profiles.len() as u32;
        let id = *self.index.entry(speeds.clone()).or_insert(next);
        if id == next {
            self.profiles.push(speeds);
        }
        Some(id)
    }

    /// How fast a task of `profile` runs work in `pool`.
    pub fn speed(&self, profile: Option<u32>, pool: &Pool) -> u32 {
        profile.map_or(pool.speed_milli, |p| self.profiles[p as usize][pool.id.index()])
    }
}
