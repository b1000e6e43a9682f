//! `NODE_FAIL` attempts as what a replay can use: a node that fails at a time, whatever job
//! the replay put there. Slurm ends a job `NODE_FAIL` when slurmctld declares a node of its
//! allocation down (missed pings, or an admin's `scontrol update State=DOWN`); with
//! `--duplicates` sacct keeps that attempt and the job's requeued one. sacct has no node
//! history of its own, so the failure is read off the jobs:
//!
//! - **when**: the attempt's `End`, the instant Slurm declared the node down (a detection,
//!   not the crash: replay it with `--heartbeat-s 1 --missed-beats 1`, which detects a failure
//!   at its whole second).
//! - **which node**: the attempt's `NodeList`. Slurm kills a multi-node job when any one of its
//!   nodes fails and does not say which, so a node of the list on which another job ran
//!   through that instant (started before, ended after, not `NODE_FAIL`) is left out: it
//!   did not fail. When that leaves none, the whole list is kept.
//! - **back by**: the first `Start` of any job on that node at or after the failure. sacct does
//!   not record the repair; this is the latest it can have been (the node may have come back
//!   earlier and stayed idle). No later job on the node: no repair within the history.
//!
//! Several jobs killed by one node at one instant are one failure.

use super::{Attempt, SacctClock};
use crate::error::TraceError;
use crate::events::EventRecord;
use crate::inventory::{InventoryFormat, load_inventory};
use sim::{NodeId, SimDuration, SimTime};
use std::collections::BTreeMap;
use std::path::Path;

/// One node failure read off `NODE_FAIL` attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeFailure {
    /// The node's Slurm name, as `NodeList` writes it.
    pub node: String,
    /// When Slurm declared it down (the attempt's `End`), ms of the dump's clock.
    pub time: u64,
    /// The first `Start` of a job on the node at or after `time`; `None`: none in the dump.
    pub back_by: Option<u64>,
    /// The line of the (first) `NODE_FAIL` row that records it.
    pub line: u64,
}

/// What ran on a node: (start, end, ended NODE_FAIL) of each attempt that held it.
type Spans = Vec<(Option<u64>, Option<u64>, bool)>;

/// The node failures that `attempts` record, ordered by time, then node name.
pub(super) fn node_failures<'a>(attempts: impl Iterator<Item = &'a Attempt>) -> Vec<NodeFailure> {
    let attempts: Vec<&Attempt> = attempts.collect();
    let failed: Vec<&Attempt> =
        attempts.iter().copied().filter(|a| a.state == "NODE_FAIL" && a.end.is_some()).collect();
    // Only the nodes that NODE_FAIL jobs held are looked at, each through its own spans.
    let mut spans: BTreeMap<&str, Spans> =
        failed.iter().flat_map(|a| a.hosts.iter()).map(|h| (h.as_str(), Spans::new())).collect();
    for attempt in &attempts {
        for host in &attempt.hosts {
            if let Some(list) = spans.get_mut(host.as_str()) {
                list.push((attempt.start, attempt.end, attempt.state == "NODE_FAIL"));
            }
        }
    }
    let mut failures: BTreeMap<(u64, &str), u64> = BTreeMap::new();
    for attempt in failed {
        let Some(time) = attempt.end else { continue };
        let ran_through = |node: &&str| {
            let through = |&(s, e, node_fail): &(Option<u64>, Option<u64>, bool)| {
                !node_fail && s.is_some_and(|s| s < time) && e.is_some_and(|e| e > time)
            };
            spans.get(*node).is_some_and(|list| list.iter().any(through))
        };
        let hosts: Vec<&str> = attempt.hosts.iter().map(String::as_str).collect();
        let down: Vec<&str> = hosts.iter().copied().filter(|n| !ran_through(n)).collect();
        for node in if down.is_empty() { hosts } else { down } {
            failures.entry((time, node)).or_insert(attempt.line);
        }
    }
    failures
        .into_iter()
        .map(|((time, node), line)| NodeFailure {
            node: node.to_owned(),
            time,
            back_by: spans.get(node).into_iter().flatten().filter_map(|&(s, _, _)| s.filter(|&s| s >= time)).min(),
            line,
        })
        .collect()
}

/// The note on what the dump's node failures are and how to replay them.
pub(super) fn note(failures: &[NodeFailure]) -> String {
    let shown: Vec<String> = failures.iter().take(5).map(|f| format!("{} (line {})", f.node, f.line)).collect();
    let more = if failures.len() > 5 { format!(" and {} more", failures.len() - 5) } else { String::new() };
    format!(
        "{} node failure{} read off NODE_FAIL jobs: {}{more}; trace import --nodes NODES --failures-out F writes \
         them as node_fail events",
        failures.len(),
        if failures.len() == 1 { "" } else { "s" },
        shown.join(", ")
    )
}

/// `failures` as `node_fail` events on the cluster whose node names by id are `node_names`
/// (`ClusterImport::node_names` of the same Slurm's node list); `file` is the sacct dump, for
/// a node the cluster does not have.
pub fn failure_events(
    failures: &[NodeFailure],
    node_names: &[String],
    file: &str,
) -> Result<Vec<EventRecord>, TraceError> {
    let ids: BTreeMap<&str, usize> = node_names.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    failures
        .iter()
        .map(|f| {
            let Some(&id) = ids.get(f.node.as_str()) else {
                return Err(TraceError::field(
                    file,
                    f.line,
                    "NodeList",
                    "nodes of the cluster's node list (a GPU node of scontrol show nodes or slurm.conf)",
                    &f.node,
                ));
            };
            Ok(EventRecord::NodeFail {
                time: SimTime(f.time),
                node: NodeId::from_index(id),
                repair: f.back_by.map(|b| SimDuration((b - f.time).max(1))),
            })
        })
        .collect()
}

/// The node failures of the sacct dump at `sacct` (times on `clock`) as events on the cluster that
/// `cluster import --format slurm` makes of the node list at `nodes`.
pub fn load_failure_events(sacct: &Path, clock: SacctClock, nodes: &Path) -> Result<Vec<EventRecord>, TraceError> {
    let file = sacct.display().to_string();
    let text = std::fs::read(sacct).map_err(|e| TraceError::io(&file, e.to_string()))?;
    let import = super::read_sacct_on(text.as_slice(), &file, clock)?;
    let cluster = load_inventory(nodes, InventoryFormat::Slurm)?;
    failure_events(&import.report.node_failures, &cluster.node_names, &file)
}
