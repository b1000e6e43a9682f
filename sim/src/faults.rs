//! What the run records of hardware faults, beside [`crate::health::Health`] (what is broken,
//! what the scheduler may use): when each failure became known (health-aware placement reads
//! it), the nodes retired for good and their GPUs (integrated as retired capacity), and the
//! samples of broken and unusable GPUs over time (the report's health chart). What the
//! Controller does about faults is `controller/faults.rs`.

use crate::ids::NodeId;
use crate::record::HealthSample;
use crate::time::SimTime;
use std::collections::BTreeSet;

#[derive(Debug, Default)]
pub(crate) struct Faults {
    /// (when, node) of every failure the scheduler learned of.
    seen: BTreeSet<(SimTime, NodeId)>,
    /// Nodes retired for good, and their GPUs.
    retired: BTreeSet<NodeId>,
    retired_gpus: u32,
    /// Broken and unusable GPUs, a sample at each change.
    samples: Vec<HealthSample>,
}

impl Faults {
    /// A failure on `node` became known at `now`.
    pub(crate) fn seen(&mut self, now: SimTime, node: NodeId) {
        self.seen.insert((now, node));
    }

    /// Every failure learned of, as (when, node) in time order.
    pub(crate) fn seen_log(&self) -> &BTreeSet<(SimTime, NodeId)> {
        &self.seen
    }

    /// `node`, with `gpus` GPUs, is retired for good (a node is retired once: again, nothing).
    pub(crate) fn retire(&mut self, node: NodeId, gpus: u32) {
        if self.retired.insert(node) {
            self.retired_gpus += gpus;
        }
    }

    /// GPUs on retired nodes.
    pub(crate) fn retired_gpus(&self) -> u32 {
        self.retired_gpus
    }

    /// The cluster has `broken` broken and `unusable` unusable GPUs at `now`: sampled if either
    /// changed since the last sample.
    pub(crate) fn sample(&mut self, now: SimTime, broken: u32, unusable: u32) {
        let changed =
            self.samples.last().is_none_or(|last| (last.broken_gpus, last.unusable_gpus) != (broken, unusable));
        if changed {
            self.samples.push(HealthSample { time: now, broken_gpus: broken, unusable_gpus: unusable });
        }
    }

    /// The health samples, for the run's result.
    pub(crate) fn into_samples(self) -> Vec<HealthSample> {
        self.samples
    }

    /// The retired GPUs equal the recount over the retired nodes (`gpus_of`), each of which
    /// the scheduler may not use (`dead`).
    pub(crate) fn check(&self, gpus_of: impl Fn(NodeId) -> u32, dead: impl Fn(NodeId) -> bool) -> Result<(), String> {
        let gpus: u32 = self.retired.iter().map(|&n| gpus_of(n)).sum();
        if gpus != self.retired_gpus {
            return Err(format!("retired nodes have {gpus} GPUs, the counter says {}", self.retired_gpus));
        }
        if let Some(node) = self.retired.iter().find(|&&n| !dead(n)) {
            return Err(format!("{node} is retired but in service"));
        }
        Ok(())
    }
}
