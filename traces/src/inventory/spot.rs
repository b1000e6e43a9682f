//! Alibaba spot-GPU 2026 `node_info_df.csv`: `gpu_model,gpu_capacity_num,cpu_num,node_name`
//! (the column order differs from the release's README; columns are found by name).
//! `GPU-series-1` and `GPU-series-2` are undisclosed models and stay as written.

use super::{ClusterImport, InventoryFormat, Machine, Tally, gpu_count, not_modelled_line};
use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Column, Rows, Unknown};
use std::io::Read;

const KNOWN: &[Column] = &[
    Column { name: "node_name", required: true },
    Column { name: "gpu_capacity_num", required: true },
    Column { name: "gpu_model", required: true },
    Column { name: "cpu_num", required: false },
];

/// Reads a spot-GPU `node_info_df.csv`; `file` names it in errors.
pub fn read_spot_nodes<R: Read>(source: R, file: &str) -> Result<ClusterImport, TraceError> {
    first_error(file, |sink| read_into(source, file, sink))
}

fn read_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<ClusterImport> {
    let (mut rows, c) = Rows::open_checked(source, file, KNOWN, Unknown::Ignore, sink)?;
    let (name_col, gpus_col, model_col) = (c[0]?, c[1]?, c[2]?);
    let ignored: &[&str] = if c[3].is_some() { &["cpu_num"] } else { &[] };
    let mut tally = Tally::new(InventoryFormat::Spot);
    rows.parse_all(sink, |row| {
        let gpus_text = row.text(gpus_col)?;
        let machine = Machine {
            name: row.text(name_col)?,
            name_col,
            gpus: gpu_count(row, gpus_col, gpus_text)?,
            model: row.text(model_col)?,
            model_col,
        };
        tally.add(row, machine, "")
    })?;
    sink.ok(tally.finish(rows.file(), not_modelled_line(ignored)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nodes_group_by_model_and_size() {
        let text = "gpu_model,gpu_capacity_num,cpu_num,node_name\nGPU-series-1,4,192,0\nA10,1,128,1\n\
                    GPU-series-1,1,192,2\nA10,1,128,3\n";
        let import = read_spot_nodes(text.as_bytes(), "node_info_df.csv").unwrap();
        let names: Vec<&str> = import.spec.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["A10-1", "GPU-series-1-1", "GPU-series-1-4"]);
        assert_eq!(import.report.gpus, 7);
        assert!(import.report.not_modelled.starts_with("not modelled: `cpu_num` "));
        let e = read_spot_nodes(format!("{text}A10,1,128,3\n").as_bytes(), "n.csv").unwrap_err().to_string();
        assert_eq!(e, "n.csv:6: field `node_name`: expected a machine name not used before (line 5 has it), got \"3\"");
    }
}
