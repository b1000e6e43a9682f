//! Slurm partitions as schedlab queues. Each partition becomes a queue whose pools are those of
//! its nodes (no pool list when it spans every pool). A pool is a set of identical nodes, so a
//! partition holding only some of a pool's nodes is widened to the whole pool, and a note says
//! so. The default partition (`Default=YES`) comes first (the queue of jobs that name none),
//! then the others by name.
//!
//! A partition's QOS (`QOS=` in slurm.conf, `QoS=` in scontrol) limits all its jobs together:
//! with the QOS table (`sacctmgr show qos`), its `GrpTRES` `gres/gpu` becomes the queue's
//! `max_gpus` and its `GrpJobs` the queue's `max_running_jobs`.
//!
//! A partition's `PriorityTier` (Slurm's default 1) becomes its queue's `priority`: Slurm
//! considers the jobs of a higher tier first, as priority-aware policies serve a higher queue
//! first. Its `PriorityJobFactor` and `TRESBillingWeights` are kept for the `slurm` policy's
//! spec ([`super::slurm_sched`]).

use super::{ClusterImport, QosLimits, expand_hostlist};
use crate::error::TraceError;
use std::collections::{BTreeMap, BTreeSet};

/// A node as read: its name, its pool (`None`: not simulated, no GPUs) and scontrol's
/// `Partitions`.
pub(super) struct SlurmNode {
    pub name: String,
    pub pool: Option<String>,
    pub partitions: Vec<String>,
    pub gpus: u32,
    /// `CPUs=` (slurm.conf) or `CPUTot=` (scontrol); `None`: the line gives neither.
    pub cpus: Option<u32>,
}

/// A partition as read.
pub(super) struct Partition {
    pub name: String,
    /// The line it came from (0: from the nodes' `Partitions`).
    pub line: u64,
    /// Its nodes; `None`: `Nodes=ALL`.
    pub nodes: Option<Vec<String>>,
    pub qos: Option<String>,
    pub default: bool,
    /// `PriorityJobFactor`; `None`: not given (Slurm's default 1).
    pub job_factor: Option<u32>,
    /// `PriorityTier`; `None`: not given (Slurm's default 1).
    pub tier: Option<u16>,
    /// `TRESBillingWeights` as written; `None`: not given or `(null)`.
    pub billing: Option<String>,
}

/// Slurm's `PriorityTier` of a partition that gives none.
pub(super) const SLURM_DEFAULT_TIER: u16 = 1;

/// A `PartitionName=NAME` line's partition; `get` finds a key's value on the line.
pub(super) fn partition<'a>(
    line: u64,
    name: &str,
    get: impl Fn(&str) -> Option<&'a str>,
    file: &str,
) -> Result<Partition, TraceError> {
    let nodes = match get("Nodes").unwrap_or("") {
        all if all.eq_ignore_ascii_case("ALL") => None,
        "" | "(null)" => Some(Vec::new()),
        list => Some(expand_hostlist(list).map_err(|why| {
            TraceError::field(file, line, "Nodes", format!("a host list such as n[1-4,7], or ALL ({why})"), list)
        })?),
    };
    let qos = get("QOS").filter(|q| !q.is_empty() && *q != "N/A").map(str::to_owned);
    let default = get("Default").is_some_and(|d| d.eq_ignore_ascii_case("YES"));
    let number = |key: &str, most: u32| -> Result<Option<u32>, TraceError> {
        let Some(text) = get(key) else { return Ok(None) };
        match text.parse::<u32>() {
            Ok(n) if n <= most => Ok(Some(n)),
            _ => Err(TraceError::field(file, line, key, format!("a whole number from 0 to {most}"), text)),
        }
    };
    let job_factor = number("PriorityJobFactor", u32::from(u16::MAX))?;
    let tier = number("PriorityTier", u32::from(u16::MAX))?.and_then(|t| u16::try_from(t).ok());
    let billing = get("TRESBillingWeights").filter(|b| !b.is_empty() && *b != "(null)").map(str::to_owned);
    Ok(Partition { name: name.to_owned(), line, nodes, qos, default, job_factor, tier, billing })
}

/// The partitions scontrol's node lines name (`Partitions=`), by name.
pub(super) fn from_node_lines(nodes: &[SlurmNode]) -> Vec<Partition> {
    let mut members: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for node in nodes {
        for partition in &node.partitions {
            members.entry(partition).or_default().push(node.name.clone());
        }
    }
    members
        .into_iter()
        .map(|(name, nodes)| Partition {
            name: name.to_owned(),
            line: 0,
            nodes: Some(nodes),
            qos: None,
            default: false,
            job_factor: None,
            tier: None,
            billing: None,
        })
        .collect()
}

/// Each partition as a queue over the pools of its nodes, with a note where a partition holds
/// part of a pool; a partition naming a node the file does not have is an error at its line.
pub(super) fn partition_queues(
    import: &mut ClusterImport,
    nodes: &[SlurmNode],
    partitions: &[Partition],
    file: &str,
) -> Result<(), TraceError> {
    let pool_of: BTreeMap<&str, Option<&str>> = nodes.iter().map(|n| (n.name.as_str(), n.pool.as_deref())).collect();
    let all: BTreeSet<&str> = import.spec.pools.iter().map(|p| p.name.as_str()).collect();
    let mut ordered: Vec<&Partition> = partitions.iter().collect();
    ordered.sort_by(|a, b| b.default.cmp(&a.default).then_with(|| a.name.cmp(&b.name)));
    for partition in ordered {
        let mut pools: BTreeMap<&str, u32> = BTreeMap::new();
        let names: Vec<&str> = match &partition.nodes {
            Some(list) => list.iter().map(String::as_str).collect(),
            None => nodes.iter().map(|n| n.name.as_str()).collect(),
        };
        for name in names {
            match pool_of.get(name) {
                Some(Some(pool)) => *pools.entry(pool).or_default() += 1,
                Some(None) => {}
                None => {
                    let expected = "nodes of the file's NodeName lines";
                    return Err(TraceError::field(file, partition.line, "Nodes", expected, name));
                }
            }
        }
        let name = &partition.name;
        if pools.is_empty() {
            import.report.notes.push(format!("partition {name} has no GPU nodes: no queue"));
            continue;
        }
        for (&pool, &count) in &pools {
            let size = import.spec.pools.iter().find(|p| p.name == pool).map_or(0, |p| p.nodes);
            if count < size {
                import.report.notes.push(format!(
                    "partition {name} has {count} of the {size} nodes of pool {pool}: its queue may use the whole pool"
                ));
            }
        }
        let mut queue = sim::QueueSpec::new(name.as_str());
        queue.priority = i32::from(partition.tier.unwrap_or(SLURM_DEFAULT_TIER));
        if pools.keys().copied().collect::<BTreeSet<&str>>() != all {
            queue.pools = pools.keys().map(|p| (*p).to_owned()).collect();
        }
        import.queues.push(queue);
    }
    import
        .report
        .notes
        .push("node states (DRAIN, DOWN) are not carried: every node is up; partitions became queues".to_owned());
    Ok(())
}

/// Each partition QOS's limits on its queue, with a note per QOS applied, missing or not a
/// partition's.
pub(super) fn apply_qos(import: &mut ClusterImport, partitions: &[Partition], qos: &[QosLimits]) {
    let notes = &mut import.report.notes;
    if partitions.iter().all(|p| p.line == 0) {
        notes.push(
            "no PartitionName lines, so no partition QOS is known: give a slurm.conf, or scontrol show partitions \
             --oneliner after the nodes in the same file"
                .to_owned(),
        );
    }
    for partition in partitions {
        let Some(name) = &partition.qos else { continue };
        let Some(queue) = import.queues.iter_mut().find(|q| q.name == partition.name) else { continue };
        match qos.iter().find(|q| &q.name == name) {
            Some(limits) => {
                queue.max_gpus = limits.max_gpus;
                queue.max_running_jobs = limits.max_running_jobs;
                let cap = |n: Option<u32>, what: &str| n.map_or(format!("no {what} limit"), |n| format!("{n} {what}"));
                notes.push(format!(
                    "partition {} takes QOS {name}'s limits: {}, {}",
                    partition.name,
                    cap(limits.max_gpus, "GPUs"),
                    cap(limits.max_running_jobs, "running jobs")
                ));
            }
            None => notes.push(format!(
                "partition {} names QOS {name}, which the QOS list does not have: no cap",
                partition.name
            )),
        }
    }
    let limits_jobs = |q: &&QosLimits| {
        [q.max_gpus, q.max_running_jobs, q.max_gpus_per_user, q.max_jobs_per_user].iter().any(Option::is_some)
    };
    for limits in qos.iter().filter(limits_jobs) {
        if !partitions.iter().any(|p| p.qos.as_deref() == Some(limits.name.as_str())) {
            notes.push(format!(
                "QOS {} limits the jobs that ask for it, across partitions: only the `slurm` policy's spec \
                 (--policy-out) carries that; queues are partitions",
                limits.name
            ));
        }
    }
}
