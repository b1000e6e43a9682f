//! [`FailureTrace`]: a real failure history in the trace's own terms, before it is mapped onto
//! a simulated cluster. Nodes are dense indexes into the trace's population, which includes
//! the nodes that never failed (a trace that lists only failures hides them, and the failure
//! rate per node depends on them). Times are the trace's own clock, in milliseconds.

use crate::error::TraceError;
use sim::cluster::MAX_GPUS_PER_NODE;
use sim::{Cluster, ClusterEvent, SimDuration, SimTime};
use std::collections::BTreeMap;
use std::fmt;

/// One fault of the hardware.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// The node, a dense index into the trace's population.
    pub node: u32,
    /// The GPU slot on the node for a GPU-level fault; `None`: the whole node failed.
    pub gpu: Option<u32>,
    pub start: SimTime,
    /// How long until it worked again; `None`: not repaired within the observed span.
    pub repair: Option<SimDuration>,
    /// What the trace calls it, e.g. `Hardware Failure/GPU`, `DBE`, `softerror/agent_check`.
    pub class: String,
}

impl Fault {
    /// When the fault ends, or `None` if it does not within the trace.
    pub fn end(&self) -> Option<SimTime> {
        self.repair.map(|r| self.start + r)
    }
}

/// A failure history: who could fail, for how long they were watched, and what failed.
///
/// Invariants, checked by [`FailureTrace::new`]: the population has at least one node, the
/// span is not empty, every fault's node is in the population, its GPU slot (when the trace
/// knows GPUs per node) is on the node, and it starts within the span. Faults are sorted by
/// start, node, GPU slot and class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FailureTrace {
    name: String,
    population: u32,
    gpus_per_node: Option<u32>,
    span: (SimTime, SimTime),
    faults: Vec<Fault>,
    node_names: Vec<String>,
    records: BTreeMap<String, u64>,
}

impl FailureTrace {
    /// A trace called `name` (the file, in messages) of `population` nodes with
    /// `gpus_per_node` GPUs each (`None`: unknown), observed over `span` (start, end).
    pub fn new(
        name: &str,
        population: u32,
        gpus_per_node: Option<u32>,
        span: (SimTime, SimTime),
        mut faults: Vec<Fault>,
    ) -> Result<FailureTrace, TraceError> {
        let bad = |message: String| Err(TraceError::file(name, message));
        if population == 0 {
            return bad("a failure trace needs a population of at least one node".into());
        }
        if gpus_per_node.is_some_and(|g| g == 0 || g > MAX_GPUS_PER_NODE) {
            return bad(format!("GPUs per node must be 1..={MAX_GPUS_PER_NODE}"));
        }
        if span.1 <= span.0 {
            return bad(format!("the observed span must not be empty (from {} to {})", span.0, span.1));
        }
        for (index, f) in faults.iter().enumerate() {
            if f.node >= population {
                return bad(format!("fault {index}: node {} is outside the population of {population}", f.node));
            }
            if let (Some(gpu), Some(count)) = (f.gpu, gpus_per_node)
                && gpu >= count
            {
                return bad(format!("fault {index}: GPU slot {gpu}, but nodes have {count} GPUs"));
            }
            if f.start < span.0 || f.start > span.1 {
                return bad(format!("fault {index}: starts at {}, outside the span {} to {}", f.start, span.0, span.1));
            }
        }
        faults.sort_by(|a, b| (a.start, a.node, a.gpu, &a.class).cmp(&(b.start, b.node, b.gpu, &b.class)));
        Ok(FailureTrace {
            name: name.to_owned(),
            population,
            gpus_per_node,
            span,
            faults,
            node_names: Vec::new(),
            records: BTreeMap::new(),
        })
    }

    /// Names the first nodes as the trace names them (index = node); nodes past the list
    /// have no name (those that never failed in a trace that lists only failures).
    pub fn with_node_names(mut self, names: Vec<String>) -> FailureTrace {
        self.node_names = names;
        self
    }

    /// Records the number of fault records per class in the source, before duplicates were
    /// merged and classes filtered out.
    pub fn with_records(mut self, records: BTreeMap<String, u64>) -> FailureTrace {
        self.records = records;
        self
    }

    /// The failures among `events` within `window` (start inclusive, end exclusive) on
    /// `cluster`, as a trace over that window: the inverse of replaying, for fitting what a
    /// model or a mapping produced. Heartbeats are left out; GPUs per node is known when
    /// every node has the same count.
    pub fn from_events(
        cluster: &Cluster,
        window: (SimTime, SimTime),
        events: &[ClusterEvent],
    ) -> Result<FailureTrace, TraceError> {
        let nodes = u32::try_from(cluster.nodes().len()).unwrap_or(u32::MAX);
        let counts: Vec<u32> = cluster.nodes().iter().map(|n| n.gpu_count).collect();
        let uniform = counts.first().filter(|&&g| counts.iter().all(|&c| c == g)).copied();
        let mut faults = Vec::new();
        for e in events {
            if e.time() < window.0 || e.time() >= window.1 {
                continue;
            }
            let (gpu, repair, class) = match *e {
                ClusterEvent::GpuFail { gpu, repair, .. } => (Some(gpu), repair, "gpu_fail"),
                ClusterEvent::NodeFail { repair, .. } => (None, repair, "node_fail"),
                ClusterEvent::Heartbeat { .. } => continue,
            };
            faults.push(Fault { node: e.node().0, gpu, start: e.time(), repair, class: class.to_owned() });
        }
        FailureTrace::new("events", nodes, uniform, window, faults)
    }

    /// The file or source the trace came from.
    pub fn name(&self) -> &str {
        &self.name
    }
    pub fn population(&self) -> u32 {
        self.population
    }
    pub fn gpus_per_node(&self) -> Option<u32> {
        self.gpus_per_node
    }
    /// The observed span: (start, end) on the trace's clock.
    pub fn span(&self) -> (SimTime, SimTime) {
        self.span
    }
    pub fn span_ms(&self) -> u64 {
        self.span.1.as_ms() - self.span.0.as_ms()
    }
    pub fn faults(&self) -> &[Fault] {
        &self.faults
    }
    /// The trace's name for `node`, if it has one.
    pub fn node_name(&self, node: u32) -> Option<&str> {
        self.node_names.get(node as usize).map(String::as_str)
    }
    /// Fault records per class as read, before merging and filtering (empty when unknown).
    pub fn records(&self) -> &BTreeMap<String, u64> {
        &self.records
    }

    /// Faults per class, as kept.
    pub fn faults_by_class(&self) -> BTreeMap<&str, u64> {
        let mut counts = BTreeMap::new();
        for f in &self.faults {
            *counts.entry(f.class.as_str()).or_insert(0) += 1;
        }
        counts
    }

    /// How many nodes have at least one fault.
    pub fn faulty_nodes(&self) -> usize {
        let mut seen = vec![false; self.population as usize];
        for f in &self.faults {
            seen[f.node as usize] = true;
        }
        seen.into_iter().filter(|&s| s).count()
    }
}

impl fmt::Display for FailureTrace {
    /// A short summary: population, span, faults, classes.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gpus = self.gpus_per_node.map_or_else(String::new, |g| format!(" x {g} GPUs"));
        let days = self.span_ms() as f64 / 86_400_000.0;
        let records: u64 = self.records.values().sum();
        write!(
            f,
            "{}: {} nodes{gpus}, {days:.2} days observed; {} faults",
            self.name,
            self.population,
            self.faults.len()
        )?;
        if records as usize != self.faults.len() && records > 0 {
            write!(f, " (of {records} records)")?;
        }
        let open = self.faults.iter().filter(|x| x.repair.is_none()).count();
        writeln!(f, " on {} nodes, {open} not repaired within the span", self.faulty_nodes())?;
        let mut classes: Vec<(&str, u64)> = self.faults_by_class().into_iter().collect();
        classes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let listed: Vec<String> = classes.iter().map(|(c, n)| format!("{c} {n}")).collect();
        writeln!(f, "classes: {}", listed.join(" · "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault(node: u32, start: u64) -> Fault {
        Fault { node, gpu: None, start: SimTime(start), repair: Some(SimDuration(5)), class: "x".into() }
    }

    #[test]
    fn new_checks_and_sorts() {
        let t = FailureTrace::new(
            "t",
            3,
            Some(8),
            (SimTime(0), SimTime(100)),
            vec![fault(2, 50), fault(1, 50), fault(0, 7)],
        )
        .unwrap();
        let order: Vec<(u64, u32)> = t.faults().iter().map(|f| (f.start.as_ms(), f.node)).collect();
        assert_eq!(order, [(7, 0), (50, 1), (50, 2)]);
        assert_eq!(t.faulty_nodes(), 3);
        let bad = |population, gpus, span: (u64, u64), faults| {
            FailureTrace::new("t", population, gpus, (SimTime(span.0), SimTime(span.1)), faults)
                .unwrap_err()
                .to_string()
        };
        assert!(bad(0, None, (0, 1), vec![]).contains("population"));
        assert!(bad(1, None, (5, 5), vec![]).contains("span"));
        assert!(bad(1, Some(0), (0, 5), vec![]).contains("GPUs per node"));
        assert!(bad(1, None, (0, 5), vec![fault(1, 0)]).contains("outside the population"));
        assert!(bad(1, None, (0, 5), vec![fault(0, 6)]).contains("outside the span"));
        let gpu = Fault { gpu: Some(8), ..fault(0, 1) };
        assert!(bad(1, Some(8), (0, 5), vec![gpu]).contains("GPU slot 8"));
    }
}
