//! `queues.csv`: the cluster's queues with their quotas (specified for users in FORMAT.md),
//! beside `cluster.csv` in a trace directory or given with `simulate --queues FILE`; and the
//! importers that turn published virtual-cluster sizes into one (Philly's `philly_vc.csv`,
//! Helios's `*_cluster_gpu_number.csv`).

use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Column, Row, Rows, Unknown, parse_u32};
use sim::QueueSpec;
use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::Path;

const KNOWN: &[Column] = &[
    Column { name: "queue", required: true },
    Column { name: "pools", required: false },
    Column { name: "max_gpus", required: false },
    Column { name: "max_running_jobs", required: false },
    Column { name: "priority", required: false },
    Column { name: "weight", required: false },
    Column { name: "borrow", required: false },
];

/// Reads `queues.csv`; queues keep file order (the first is the default queue of jobs that
/// name none).
pub fn read_queues_csv<R: Read>(source: R, file: &str) -> Result<Vec<QueueSpec>, TraceError> {
    first_error(file, |sink| read_queues_into(source, file, sink))
}

/// Reads a `queues.csv` file from disk.
pub fn load_queues_file(path: &Path) -> Result<Vec<QueueSpec>, TraceError> {
    let name = path.display().to_string();
    let file = std::fs::File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
    read_queues_csv(std::io::BufReader::new(file), &name)
}

pub(crate) fn read_queues_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<Vec<QueueSpec>> {
    let (mut rows, c) = Rows::open_checked(source, file, KNOWN, Unknown::Refuse, sink)?;
    let mut lines: BTreeMap<String, u64> = BTreeMap::new();
    let queues = rows.parse_all(sink, |row| {
        let name = row.name_field(c[0].unwrap_or(0), "a queue name")?;
        if let Some(first) = lines.get(name) {
            return Err(row.error(
                c[0].unwrap_or(0),
                format!("a queue name not used before (line {first} has it)"),
                name,
            ));
        }
        lines.insert(name.to_owned(), row.line);
        let pools = row.opt_text(c[1])?;
        let weight = opt_number(row, c[5], "a weight, a whole number >= 1 (empty: 1)")?.unwrap_or(1);
        if weight == 0 {
            return Err(row.error(c[5].unwrap_or(0), "a weight, a whole number >= 1 (empty: 1)", "0"));
        }
        Ok(QueueSpec {
            name: name.to_owned(),
            pools: if pools.is_empty() { Vec::new() } else { pools.split(';').map(str::to_owned).collect() },
            max_gpus: opt_number(row, c[2], "a whole number of GPUs (empty: no cap)")?,
            max_running_jobs: opt_number(row, c[3], "a whole number of jobs (empty: no cap)")?,
            priority: opt_priority(row, c[4])?,
            weight,
            borrow: opt_bool(row, c[6])?,
        })
    })?;
    if queues.is_empty() {
        sink.push(TraceError::file(file, "no queues: the file has a header but no rows"));
        return None;
    }
    Some(queues)
}

fn opt_number(row: &Row<'_>, column: Option<usize>, expected: &str) -> Result<Option<u32>, TraceError> {
    let text = row.opt_text(column)?;
    if text.is_empty() {
        return Ok(None);
    }
    parse_u32(text).map(Some).ok_or_else(|| row.error(column.unwrap_or(0), expected, text))
}

fn opt_priority(row: &Row<'_>, column: Option<usize>) -> Result<i32, TraceError> {
    let text = row.opt_text(column)?;
    if text.is_empty() {
        return Ok(0);
    }
    text.parse().map_err(|_| row.error(column.unwrap_or(0), "an integer priority (higher first; empty: 0)", text))
}

fn opt_bool(row: &Row<'_>, column: Option<usize>) -> Result<bool, TraceError> {
    let text = row.opt_text(column)?;
    match text.to_ascii_lowercase().as_str() {
        "" | "false" | "0" => Ok(false),
        "true" | "1" => Ok(true),
        _ => Err(row.error(column.unwrap_or(0), "true/false or 1/0 (empty: false)", text)),
    }
}

/// Writes `queues` as `queues.csv` (every column), so that it reads back identically.
pub fn write_queues_csv<W: Write>(queues: &[QueueSpec], out: W) -> Result<(), TraceError> {
    let io_error = |e: csv::Error| TraceError::io("queues.csv output", e.to_string());
    let mut w = csv::Writer::from_writer(out);
    w.write_record(KNOWN.iter().map(|c| c.name)).map_err(io_error)?;
    let opt = |n: Option<u32>| n.map(|n| n.to_string()).unwrap_or_default();
    for q in queues {
        if q.name.is_empty() || q.weight == 0 || q.pools.iter().any(|p| p.is_empty() || p.contains(';')) {
            return Err(TraceError::value(
                "queues to write as queues.csv",
                format!("queue `{}` cannot be written", q.name),
            ));
        }
        w.write_record([
            q.name.as_str(),
            &q.pools.join(";"),
            &opt(q.max_gpus),
            &opt(q.max_running_jobs),
            &q.priority.to_string(),
            &q.weight.to_string(),
            if q.borrow { "true" } else { "false" },
        ])
        .map_err(io_error)?;
    }
    w.flush().map_err(|e| TraceError::io("queues.csv output", e.to_string()))
}

/// Philly's `philly_vc.csv` (`vc,node num`, the Helios authors' node quota per VC): one queue
/// per VC capped at `node num x gpus_per_node` GPUs (the Helios simulation took 8-GPU nodes).
pub fn read_philly_vc_csv<R: Read>(
    source: R,
    file: &str,
    gpus_per_node: u32,
    borrow: bool,
) -> Result<Vec<QueueSpec>, TraceError> {
    first_error(file, |sink| {
        let columns = [Column { name: "vc", required: true }, Column { name: "node num", required: true }];
        let (mut rows, c) = Rows::open_checked(source, file, &columns, Unknown::Refuse, sink)?;
        rows.parse_all(sink, |row| {
            let vc = row.name_field(c[0].unwrap_or(0), "a virtual-cluster id")?;
            let nodes = row.gpus(c[1].unwrap_or(1))?;
            Ok(QueueSpec { max_gpus: Some(nodes.saturating_mul(gpus_per_node)), borrow, ..QueueSpec::new(vc) })
        })
    })
}

/// Helios's `*_cluster_gpu_number.csv` (`date`, one column of GPUs per VC, `total`): one queue
/// per VC capped at its GPUs on `date` (the last day when `None`). VCs with no GPUs that day
/// are left out, each named in the returned notes.
pub fn read_helios_vc_csv<R: Read>(
    source: R,
    file: &str,
    date: Option<&str>,
    borrow: bool,
) -> Result<(Vec<QueueSpec>, Vec<String>), TraceError> {
    first_error(file, |sink| {
        let mut rows = sink.ok(Rows::open(source, file))?;
        let header: Vec<String> = rows.header().to_vec();
        if header.first().map(String::as_str) != Some("date") || header.last().map(String::as_str) != Some("total") {
            sink.push(TraceError::file(file, "expected a header `date,<one column per VC>,total`"));
            return None;
        }
        let mut chosen: Option<(u64, Vec<String>)> = None;
        while let Some(row) = rows.next_row() {
            let row = sink.ok(row)?;
            let day = sink.ok(row.text(0))?;
            if date.is_none_or(|d| d == day) {
                let fields = (0..header.len()).map(|i| row.text(i).map(str::to_owned)).collect::<Result<Vec<_>, _>>();
                chosen = Some((row.line, sink.ok(fields)?));
            }
        }
        let Some((line, fields)) = chosen else {
            sink.push(TraceError::file(file, format!("no row for date `{}`", date.unwrap_or("(any)"))));
            return None;
        };
        let mut queues = Vec::new();
        let mut notes = Vec::new();
        for (vc, gpus) in header.iter().zip(&fields).skip(1).take(header.len() - 2) {
            let Some(gpus) = parse_u32(gpus) else {
                sink.push(TraceError::field(file, line, vc, "a whole number of GPUs", gpus));
                return None;
            };
            if gpus == 0 {
                notes.push(format!("VC {vc} has no GPUs on {}: no queue", fields[0]));
                continue;
            }
            queues.push(QueueSpec { max_gpus: Some(gpus), borrow, ..QueueSpec::new(vc.as_str()) });
        }
        Some((queues, notes))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn queues_read_strictly_and_write_exactly() {
        let text = "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\n\
                    research,A100;V100,64,,5,2,true\n\
                    prod,,,10,0,1,false\n";
        let q = read_queues_csv(text.as_bytes(), "queues.csv").unwrap();
        assert_eq!(q[0].pools, ["A100", "V100"]);
        assert_eq!((q[0].max_gpus, q[0].priority, q[0].weight, q[0].borrow), (Some(64), 5, 2, true));
        assert_eq!((q[1].max_gpus, q[1].max_running_jobs, q[1].pools.len()), (None, Some(10), 0));
        let mut out = Vec::new();
        write_queues_csv(&q, &mut out).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), text);

        let minimal = read_queues_csv("queue\na\n".as_bytes(), "q.csv").unwrap();
        assert_eq!(minimal, [QueueSpec::new("a")]);
        let err = |t: &str| read_queues_csv(t.as_bytes(), "q.csv").unwrap_err().to_string();
        assert_eq!(
            err("queue,weight\na,0\n"),
            "q.csv:2: field `weight`: expected a weight, a whole number >= 1 (empty: 1), got \"0\""
        );
        assert_eq!(
            err("queue,borrow\na,maybe\n"),
            "q.csv:2: field `borrow`: expected true/false or 1/0 (empty: false), got \"maybe\""
        );
        assert!(
            err("queue\na\na\n")
                .contains("q.csv:3: field `queue`: expected a queue name not used before (line 2 has it)")
        );
        assert!(err("queue,max_gpu\na,1\n").contains("unknown column `max_gpu`"));
    }

    #[test]
    fn virtual_cluster_sizes_become_queues() {
        let philly =
            read_philly_vc_csv("vc,node num\n6214e9,64\n7f04ca,32\n".as_bytes(), "philly_vc.csv", 8, false).unwrap();
        let caps: Vec<(&str, Option<u32>)> = philly.iter().map(|q| (q.name.as_str(), q.max_gpus)).collect();
        assert_eq!(caps, [("6214e9", Some(512)), ("7f04ca", Some(256))]);

        let helios = "date,vcA,vcB,vcC,total\n2020-04-01,8,0,16,24\n2020-04-02,8,4,0,12\n";
        let (q, notes) = read_helios_vc_csv(helios.as_bytes(), "h.csv", None, true).unwrap();
        let caps: Vec<(&str, Option<u32>, bool)> = q.iter().map(|q| (q.name.as_str(), q.max_gpus, q.borrow)).collect();
        assert_eq!(caps, [("vcA", Some(8), true), ("vcB", Some(4), true)]);
        assert_eq!(notes, ["VC vcC has no GPUs on 2020-04-02: no queue"]);
        let (q, _) = read_helios_vc_csv(helios.as_bytes(), "h.csv", Some("2020-04-01"), false).unwrap();
        assert_eq!(q.len(), 2);
        assert!(read_helios_vc_csv(helios.as_bytes(), "h.csv", Some("2021-01-01"), false).is_err());
    }
}
