//! Microsoft Philly `cluster_machine_list`: `machineId, number of GPUs, single GPU mem`, with a
//! space after each comma in the header and the values (`m0, 2, 12GB`); the spaces are
//! dropped. The list names no GPU model, so a machine's GPU type is its per-GPU memory
//! (`12GB`, `24GB`). A header without the spaces is accepted too.

use super::{ClusterImport, InventoryFormat, Machine, Tally, gpu_count};
use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Column, Rows, Unknown};
use std::io::Read;

const KNOWN: &[Column] = &[
    Column { name: "machineId", required: true },
    Column { name: " number of GPUs", required: true },
    Column { name: " single GPU mem", required: true },
];
const KNOWN_UNSPACED: &[Column] = &[
    Column { name: "machineId", required: true },
    Column { name: "number of GPUs", required: true },
    Column { name: "single GPU mem", required: true },
];

/// Reads Philly's `cluster_machine_list`; `file` names it in errors.
pub fn read_philly_machines<R: Read>(source: R, file: &str) -> Result<ClusterImport, TraceError> {
    first_error(file, |sink| read_into(source, file, sink))
}

/// `12GB` and the like: whole gigabytes.
fn is_memory(text: &str) -> bool {
    text.strip_suffix("GB").is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

fn read_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<ClusterImport> {
    let mut rows = sink.ok(Rows::open(source, file))?;
    let c = sink.ok(rows
        .columns(KNOWN, Unknown::Ignore)
        .or_else(|e| rows.columns(KNOWN_UNSPACED, Unknown::Ignore).map_err(|_| e)))?;
    let (name_col, gpus_col, memory_col) = (c[0]?, c[1]?, c[2]?);
    let mut tally = Tally::new(InventoryFormat::Philly);
    rows.parse_all(sink, |row| {
        let gpus = gpu_count(row, gpus_col, row.text(gpus_col)?.trim_start_matches(' '))?;
        let memory = row.text(memory_col)?.trim_start_matches(' ');
        if gpus > 0 && !is_memory(memory) {
            return Err(row.error(memory_col, "the memory of one GPU in whole gigabytes, such as 12GB", memory));
        }
        let machine = Machine {
            name: row.text(name_col)?.trim_start_matches(' '),
            name_col,
            gpus,
            model: memory,
            model_col: memory_col,
        };
        tally.add(row, machine, "")
    })?;
    sink.ok(tally.finish(
        rows.file(),
        "not modelled: nothing; the list has no CPU or memory columns (it names no GPU model either: the GPU type \
         is the memory of one GPU)"
            .to_owned(),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "machineId, number of GPUs, single GPU mem\n";

    #[test]
    fn memory_becomes_the_gpu_type() {
        let text = format!("{HEAD}m0, 2, 12GB\nm1, 8, 24GB\nm2, 2, 12GB\n");
        let import = read_philly_machines(text.as_bytes(), "cluster_machine_list").unwrap();
        let pools: Vec<(&str, &str, u32)> =
            import.spec.pools.iter().map(|p| (p.name.as_str(), p.gpu_type.as_str(), p.nodes)).collect();
        assert_eq!(pools, [("12GB-2", "12GB", 2), ("24GB-8", "24GB", 1)]);
        let unspaced = "machineId,number of GPUs,single GPU mem\nm0,2,12GB\nm1,8,24GB\nm2,2,12GB\n";
        assert_eq!(read_philly_machines(unspaced.as_bytes(), "c").unwrap().spec, import.spec);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = |t: &str| read_philly_machines(format!("{HEAD}{t}").as_bytes(), "c").unwrap_err().to_string();
        assert_eq!(
            e("m0, 2, 12 GB\n"),
            "c:2: field ` single GPU mem`: expected the memory of one GPU in whole gigabytes, such as 12GB, got \"12 GB\""
        );
        assert_eq!(
            e("m0, two, 12GB\n"),
            "c:2: field ` number of GPUs`: expected a whole number of GPUs, 0 or more, got \"two\""
        );
        let e = read_philly_machines("machineId,gpus\n".as_bytes(), "c").unwrap_err().to_string();
        assert!(e.starts_with("c:1: the header has no column ` number of GPUs`"), "{e}");
    }
}
