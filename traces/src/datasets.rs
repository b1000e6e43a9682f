//! `datasets.csv`: which nodes hold which datasets, and what bringing a dataset to a node that
//! lacks it costs (specified for users in FORMAT.md). Beside `cluster.csv` in a trace
//! directory, or given with `simulate --datasets FILE`.

use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Column, Row, Rows, Unknown, parse_u32};
use sim::{DatasetSpec, NodeId, SimDuration};
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

const KNOWN: &[Column] = &[
    Column { name: "dataset", required: true },
    Column { name: "nodes", required: true },
    Column { name: "transfer_s", required: true },
];

const NODES: &str = "node numbers (from 0, in cluster.csv order) and ranges, `;`-separated, such as 0-7;12";

pub fn read_datasets_csv<R: Read>(source: R, file: &str) -> Result<Vec<DatasetSpec>, TraceError> {
    first_error(file, |sink| read_datasets_into(source, file, sink))
}

pub fn load_datasets_file(path: &Path) -> Result<Vec<DatasetSpec>, TraceError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
    read_datasets_csv(std::io::BufReader::new(file), &name)
}

pub(crate) fn read_datasets_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<Vec<DatasetSpec>> {
    let (mut rows, c) = Rows::open_checked(source, file, KNOWN, Unknown::Refuse, sink)?;
    let (name_col, nodes_col, transfer_col) = (c[0]?, c[1]?, c[2]?);
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    rows.parse_all(sink, |row| {
        let name = row.name_field(name_col, "a dataset name")?;
        if let Some(first) = lines.get(name) {
            return Err(row.error(name_col, format!("a dataset name not used before (line {first} has it)"), name));
        }
        lines.insert(name.to_owned(), row.line);
        let nodes = parse_nodes(row, nodes_col)?;
        let transfer = SimDuration(row.seconds_ms(transfer_col)?);
        Ok(DatasetSpec { name: name.to_owned(), nodes, transfer })
    })
}

fn parse_nodes(row: &Row<'_>, column: usize) -> Result<Vec<NodeId>, TraceError> {
    let text = row.text(column)?;
    let mut nodes = Vec::new();
    for part in text.split(';') {
        let (from, to) = part.split_once('-').unwrap_or((part, part));
        let (Some(from), Some(to)) = (parse_u32(from.trim()), parse_u32(to.trim())) else {
            return Err(row.error(column, NODES, text));
        };
        if from > to || to - from >= 1_000_000 {
            return Err(row.error(column, NODES, text));
        }
        nodes.extend((from..=to).map(NodeId));
    }
    Ok(nodes)
}

/// Writes `datasets` as `datasets.csv`, one node number per item, so it reads back identically.
pub fn write_datasets_csv<W: Write>(datasets: &[DatasetSpec], out: W) -> Result<(), TraceError> {
    let io_error = |e: csv::Error| TraceError::io("datasets.csv output", e.to_string());
    let mut w = csv::Writer::from_writer(out);
    w.write_record(KNOWN.iter().map(|c| c.name)).map_err(io_error)?;
    for d in datasets {
        let nodes: Vec<String> = d.nodes.iter().map(|n| n.0.to_string()).collect();
        let transfer = format!("{}.{:03}", d.transfer.as_ms() / 1000, d.transfer.as_ms() % 1000);
        w.write_record([d.name.as_str(), &nodes.join(";"), &transfer]).map_err(io_error)?;
    }
    w.flush().map_err(|e| TraceError::io("datasets.csv output", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn datasets_read_strictly_and_write_exactly() {
        let d =
            read_datasets_csv("dataset,nodes,transfer_s\nimagenet,0-2;7,120\nc4,3,0.5\n".as_bytes(), "d.csv").unwrap();
        assert_eq!(d[0].nodes, [NodeId(0), NodeId(1), NodeId(2), NodeId(7)]);
        assert_eq!((d[0].transfer, d[1].transfer), (SimDuration(120_000), SimDuration(500)));
        let mut out = Vec::new();
        write_datasets_csv(&d, &mut out).unwrap();
        assert_eq!(read_datasets_csv(out.as_slice(), "again.csv").unwrap(), d);
        let err = |t: &str| read_datasets_csv(t.as_bytes(), "d.csv").unwrap_err().to_string();
        assert_eq!(
            err("dataset,nodes,transfer_s\nx,3-1,5\n"),
            format!("d.csv:2: field `nodes`: expected {NODES}, got \"3-1\"")
        );
        assert!(err("dataset,nodes,transfer_s\nx,1,5\nx,2,5\n").contains("d.csv:3: field `dataset`"));
        assert!(err("dataset,nodes\nx,1\n").contains("transfer_s"));
    }
}
