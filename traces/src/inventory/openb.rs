//! Alibaba openb 2023 node lists (`openb_node_list_gpu_node.csv`, `openb_node_list_all_node.csv`):
//! `sn,cpu_milli,memory_mib,gpu,model`. `model` is empty for CPU-only nodes; `G1`..`G3` are
//! undisclosed internal models and stay as written.

use super::{ClusterImport, InventoryFormat, Machine, Tally, gpu_count, not_modelled_line};
use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Column, Rows, Unknown};
use std::io::Read;

const KNOWN: &[Column] = &[
    Column { name: "sn", required: true },
    Column { name: "gpu", required: true },
    Column { name: "model", required: true },
    Column { name: "cpu_milli", required: false },
    Column { name: "memory_mib", required: false },
];

/// Reads an openb node list; `file` names it in errors.
pub fn read_openb_nodes<R: Read>(source: R, file: &str) -> Result<ClusterImport, TraceError> {
    first_error(file, |sink| read_into(source, file, sink))
}

fn read_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<ClusterImport> {
    let (mut rows, c) = Rows::open_checked(source, file, KNOWN, Unknown::Ignore, sink)?;
    let (name_col, gpus_col, model_col) = (c[0]?, c[1]?, c[2]?);
    let ignored: Vec<&str> = KNOWN[3..].iter().zip(&c[3..]).filter(|(_, i)| i.is_some()).map(|(k, _)| k.name).collect();
    let mut tally = Tally::new(InventoryFormat::Openb);
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
    sink.ok(tally.finish(rows.file(), not_modelled_line(&ignored)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_and_memory_columns_are_named_as_not_modelled() {
        let text = "sn,cpu_milli,memory_mib,gpu,model\nn0,32000,262144,0,\nn1,64000,262144,2,P100\n";
        let import = read_openb_nodes(text.as_bytes(), "all.csv").unwrap();
        assert_eq!(import.spec.pools.len(), 1);
        assert_eq!(import.spec.pools[0].name, "P100-2");
        assert_eq!(
            import.report.not_modelled,
            "not modelled: `cpu_milli`, `memory_mib` (schedlab's cluster has GPUs only; CPU and memory do not limit \
             placement)"
        );
        let e = read_openb_nodes("sn,model\n".as_bytes(), "n.csv").unwrap_err().to_string();
        assert!(e.starts_with("n.csv:1: the header has no column `gpu`"), "{e}");
    }
}
