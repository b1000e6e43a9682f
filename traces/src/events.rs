//! `events.csv`: ground-truth cluster events (GPU and node failures, node heartbeats), read
//! into `sim::ClusterEvent`s, which the simulator replays (see sim/src/failure.rs for what
//! the scheduler observes of them and when).

use crate::canonical::format_seconds;
use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Column, Row, Rows, Unknown};
use crate::timeparse::MAX_SECONDS;
use sim::{ClusterSpec, NodeId, SimDuration, SimTime};
use std::io::{Read, Write};

/// One cluster event: `sim::ClusterEvent`, the one type the simulator replays.
pub use sim::ClusterEvent as EventRecord;

const KNOWN: &[Column] = &[
    Column { name: "time_s", required: true },
    Column { name: "kind", required: true },
    Column { name: "node", required: true },
    Column { name: "gpu", required: false },
    Column { name: "repair_s", required: false },
];

const KINDS: &str = "gpu_fail, node_fail or heartbeat";

/// Reads `events.csv`. When `cluster` is given, node indexes and GPU slots are checked against
/// it. Events come back sorted by time; events at the same time keep file order.
pub fn read_events_csv<R: Read>(
    source: R,
    file: &str,
    cluster: Option<&ClusterSpec>,
) -> Result<Vec<EventRecord>, TraceError> {
    first_error(file, |sink| read_events_into(source, file, cluster, sink))
}

/// Writes `events` as `events.csv` (all five columns, in the given order). Times must be
/// within the format's range and repair times positive, so the file reads back identically.
pub fn write_events_csv<W: Write>(events: &[EventRecord], out: W) -> Result<(), TraceError> {
    let max_ms = MAX_SECONDS * 1000;
    for (index, event) in events.iter().enumerate() {
        let repair = match event {
            EventRecord::GpuFail { repair, .. } | EventRecord::NodeFail { repair, .. } => *repair,
            EventRecord::Heartbeat { .. } => None,
        };
        let repair_ok = repair.is_none_or(|r| (1..=max_ms).contains(&r.as_ms()));
        if event.time().as_ms() > max_ms || !repair_ok {
            return Err(TraceError::value(
                "events to write as events.csv",
                format!("event {index}: time must be at most {MAX_SECONDS} s and repair 0.001..={MAX_SECONDS} s"),
            ));
        }
    }
    let io_error = |e: csv::Error| TraceError::io("events.csv output", e.to_string());
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(KNOWN.iter().map(|c| c.name)).map_err(io_error)?;
    for event in events {
        let time = format_seconds(event.time().as_ms());
        let node = event.node().0.to_string();
        let (kind, gpu, repair) = match event {
            EventRecord::GpuFail { gpu, repair, .. } => ("gpu_fail", gpu.to_string(), *repair),
            EventRecord::NodeFail { repair, .. } => ("node_fail", String::new(), *repair),
            EventRecord::Heartbeat { .. } => ("heartbeat", String::new(), None),
        };
        let repair = repair.map(|r| format_seconds(r.as_ms())).unwrap_or_default();
        writer.write_record([time.as_str(), kind, &node, &gpu, &repair]).map_err(io_error)?;
    }
    writer.flush().map_err(|e| TraceError::io("events.csv output", e.to_string()))
}

/// For each node index, how many GPUs it has (the layout `sim::Cluster::new` builds).
struct NodeShape {
    /// `(first node index after the pool, GPUs per node)` per pool, in order.
    pools: Vec<(u64, u32)>,
}

impl NodeShape {
    fn new(spec: &ClusterSpec) -> NodeShape {
        let mut end = 0u64;
        let pools = spec
            .pools
            .iter()
            .map(|p| {
                end += u64::from(p.nodes);
                (end, p.gpus_per_node)
            })
            .collect();
        NodeShape { pools }
    }

    fn node_count(&self) -> u64 {
        self.pools.last().map_or(0, |p| p.0)
    }

    fn gpus_of(&self, node: u32) -> Option<u32> {
        self.pools.iter().find(|p| u64::from(node) < p.0).map(|p| p.1)
    }
}

pub(crate) fn read_events_into<R: Read>(
    source: R,
    file: &str,
    cluster: Option<&ClusterSpec>,
    sink: &mut Sink,
) -> Option<Vec<EventRecord>> {
    let (mut rows, cols) = Rows::open_checked(source, file, KNOWN, Unknown::Refuse, sink)?;
    let shape = cluster.map(NodeShape::new);
    let mut events = rows.parse_all(sink, |row| parse_event(row, &cols, shape.as_ref()))?;
    // Stable: same-time events keep the order the file gives them.
    events.sort_by_key(EventRecord::time);
    Some(events)
}

fn parse_event(row: &Row<'_>, cols: &[Option<usize>], shape: Option<&NodeShape>) -> Result<EventRecord, TraceError> {
    let (Some(time_col), Some(kind_col), Some(node_col)) = (cols[0], cols[1], cols[2]) else {
        return Err(TraceError::row(row.file(), row.line, "required columns missing"));
    };
    let (gpu_col, repair_col) = (cols[3], cols[4]);
    let time = SimTime(row.seconds_ms(time_col)?);
    let kind = row.text(kind_col)?;
    let node = row.index(node_col, "a node index")?;
    if let Some(shape) = shape
        && u64::from(node) >= shape.node_count()
    {
        return Err(row.error(
            node_col,
            format!("a node index below {} (the cluster's node count)", shape.node_count()),
            &node.to_string(),
        ));
    }
    let node_id = NodeId(node);
    let gpu_text = row.opt_text(gpu_col)?;
    let repair = row.opt_positive_seconds_ms(repair_col)?.map(SimDuration);
    let must_be_empty = |column: Option<usize>, text: &str, why: &str| match column {
        Some(c) if !text.is_empty() => Err(row.error(c, format!("an empty field ({why})"), text)),
        _ => Ok(()),
    };
    match kind {
        "gpu_fail" => {
            let Some(gpu_col) = gpu_col.filter(|_| !gpu_text.is_empty()) else {
                return Err(TraceError::row(
                    row.file(),
                    row.line,
                    "a gpu_fail event needs the GPU's slot on its node in column `gpu`",
                ));
            };
            let gpu = row.index(gpu_col, "a GPU slot on the node")?;
            if let Some(count) = shape.and_then(|s| s.gpus_of(node))
                && gpu >= count
            {
                return Err(row.error(
                    gpu_col,
                    format!("a GPU slot below {count} (node {node} has {count} GPUs)"),
                    gpu_text,
                ));
            }
            Ok(EventRecord::GpuFail { time, node: node_id, gpu, repair })
        }
        "node_fail" => {
            must_be_empty(gpu_col, gpu_text, "a node_fail event takes the whole node")?;
            Ok(EventRecord::NodeFail { time, node: node_id, repair })
        }
        "heartbeat" => {
            must_be_empty(gpu_col, gpu_text, "a heartbeat is per node")?;
            let repair_text = row.opt_text(repair_col)?;
            must_be_empty(repair_col, repair_text, "a heartbeat has no repair time")?;
            Ok(EventRecord::Heartbeat { time, node: node_id })
        }
        other => Err(row.error(kind_col, KINDS, other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::PoolSpec;

    fn cluster() -> ClusterSpec {
        ClusterSpec { pools: vec![PoolSpec::of_type("A100", 2, 8), PoolSpec::of_type("K80", 3, 2)] }
    }

    fn read(text: &str) -> Result<Vec<EventRecord>, TraceError> {
        read_events_csv(text.as_bytes(), "events.csv", Some(&cluster()))
    }

    #[test]
    fn events_parse_and_sort_by_time() {
        let text = "time_s,kind,node,gpu,repair_s\n\
                    50,heartbeat,4,,\n\
                    10.5,gpu_fail,1,7,3600\n\
                    10.5,node_fail,4,,\n";
        let events = read(text).unwrap();
        assert_eq!(
            events,
            [
                EventRecord::GpuFail {
                    time: SimTime(10_500),
                    node: NodeId(1),
                    gpu: 7,
                    repair: Some(SimDuration(3_600_000))
                },
                EventRecord::NodeFail { time: SimTime(10_500), node: NodeId(4), repair: None },
                EventRecord::Heartbeat { time: SimTime(50_000), node: NodeId(4) },
            ]
        );
        assert_eq!(events[2].node(), NodeId(4));
        // Header only: no events is a valid events file.
        assert_eq!(read("time_s,kind,node\n").unwrap(), []);
    }

    #[test]
    fn event_errors_name_the_line_and_column() {
        let e = |t: &str| read(t).unwrap_err().to_string();
        let head = "time_s,kind,node,gpu,repair_s\n";
        assert_eq!(
            e(&format!("{head}1,gpu_crash,0,0,\n")),
            "events.csv:2: field `kind`: expected gpu_fail, node_fail or heartbeat, got \"gpu_crash\""
        );
        assert_eq!(
            e(&format!("{head}1,node_fail,5,,\n")),
            "events.csv:2: field `node`: expected a node index below 5 (the cluster's node count), got \"5\""
        );
        assert_eq!(
            e(&format!("{head}1,gpu_fail,2,2,\n")),
            "events.csv:2: field `gpu`: expected a GPU slot below 2 (node 2 has 2 GPUs), got \"2\""
        );
        assert!(e(&format!("{head}1,gpu_fail,0,,\n")).starts_with("events.csv:2: a gpu_fail event needs"));
        assert!(
            e(&format!("{head}1,node_fail,0,3,\n")).starts_with("events.csv:2: field `gpu`: expected an empty field")
        );
        assert!(
            e(&format!("{head}1,heartbeat,0,,5\n"))
                .starts_with("events.csv:2: field `repair_s`: expected an empty field")
        );
        assert!(
            e(&format!("{head}1,node_fail,0,,0\n")).starts_with("events.csv:2: field `repair_s`: expected a positive")
        );
        assert!(e(&format!("{head}-1,node_fail,0,,\n")).starts_with("events.csv:2: field `time_s`"));
        assert!(e("time_s,kind\n").contains("no column `node`"));
    }

    #[test]
    fn events_round_trip() {
        let events = vec![
            EventRecord::GpuFail { time: SimTime(1), node: NodeId(1), gpu: 7, repair: Some(SimDuration(3_600_500)) },
            EventRecord::NodeFail { time: SimTime(10_000), node: NodeId(4), repair: None },
            EventRecord::Heartbeat { time: SimTime(10_000), node: NodeId(0) },
        ];
        let mut out = Vec::new();
        write_events_csv(&events, &mut out).unwrap();
        assert_eq!(read_events_csv(out.as_slice(), "e.csv", Some(&cluster())).unwrap(), events);
        let bad = [EventRecord::NodeFail { time: SimTime(0), node: NodeId(0), repair: Some(SimDuration(0)) }];
        assert!(write_events_csv(&bad, Vec::new()).is_err());
    }

    #[test]
    fn without_a_cluster_indexes_are_not_range_checked() {
        let events = read_events_csv("time_s,kind,node,gpu\n1,gpu_fail,900,63\n".as_bytes(), "e.csv", None).unwrap();
        assert_eq!(events[0].node(), NodeId(900));
    }
}
