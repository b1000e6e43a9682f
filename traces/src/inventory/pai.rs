//! Alibaba PAI 2020 `pai_machine_spec.csv`. The file has no header line; the release's
//! `pai_machine_spec.header` gives the columns `machine,gpu_type,cap_cpu,cap_mem,cap_gpu`
//! (a copy of the file with that header line prepended reads the same). `gpu_type` is `CPU`
//! for machines without GPUs and `MISC` for older generations (K40m, K80, M60) lumped together.

use super::{ClusterImport, InventoryFormat, Machine, Tally, gpu_count, not_modelled_line};
use crate::error::{Sink, TraceError, first_error};
use crate::rows::Rows;
use std::io::Read;

/// The columns of `pai_machine_spec.header`, in order.
const COLUMNS: [&str; 5] = ["machine", "gpu_type", "cap_cpu", "cap_mem", "cap_gpu"];
const NAME: usize = 0;
const MODEL: usize = 1;
const GPUS: usize = 4;

/// Reads `pai_machine_spec.csv`; `file` names it in errors.
pub fn read_pai_machines<R: Read>(source: R, file: &str) -> Result<ClusterImport, TraceError> {
    first_error(file, |sink| read_into(source, file, sink))
}

fn read_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<ClusterImport> {
    let mut rows = Rows::open_headerless(source, file, &COLUMNS);
    let mut tally = Tally::new(InventoryFormat::Pai);
    let mut first = true;
    rows.parse_all(sink, |row| {
        let is_header = first && (0..COLUMNS.len()).all(|c| row.text(c).is_ok_and(|t| t == COLUMNS[c]));
        first = false;
        if is_header {
            return Ok(());
        }
        let gpus_text = row.text(GPUS)?;
        let machine = Machine {
            name: row.text(NAME)?,
            name_col: NAME,
            gpus: gpu_count(row, GPUS, gpus_text)?,
            model: row.text(MODEL)?,
            model_col: MODEL,
        };
        tally.add(row, machine, "CPU")
    })?;
    sink.ok(tally.finish(rows.file(), not_modelled_line(&COLUMNS[2..4])))
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROWS: &str = "7399a758eb02bae1a3621236,CPU,96,512,0\nb1,V100M32,96,384,8\nb2,P100,64,512,2\n";

    #[test]
    fn machines_become_pools_and_cpu_machines_are_counted() {
        let import = read_pai_machines(ROWS.as_bytes(), "pai_machine_spec.csv").unwrap();
        let names: Vec<&str> = import.spec.pools.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["P100-2", "V100M32-8"]);
        assert_eq!(import.report.no_gpu.machines, 1);
        assert_eq!(import.report.skip_lines(), ["skipped 1 CPU-only machine (schedlab schedules GPUs)"]);
        assert!(import.report.not_modelled.starts_with("not modelled: `cap_cpu`, `cap_mem` "));
        // The header line of pai_machine_spec.header, prepended, is not a machine.
        let with_header = format!("{}\n{ROWS}", COLUMNS.join(","));
        assert_eq!(read_pai_machines(with_header.as_bytes(), "p.csv").unwrap().spec, import.spec);
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = |t: &str| read_pai_machines(t.as_bytes(), "p.csv").unwrap_err().to_string();
        assert_eq!(
            e("a,CPU,96,512,2\n"),
            "p.csv:1: field `gpu_type`: expected a GPU model (letters, digits, `-`, `_` or `.`) for a machine with 2 \
             GPUs; `CPU` is for machines without GPUs, got \"CPU\""
        );
        assert_eq!(e("a,T4,96,512,2\nb,T4,96,512\n"), "p.csv:2: expected 5 fields (the format's columns), got 4");
        assert_eq!(
            e("a,T4,96,512,-2\n"),
            "p.csv:1: field `cap_gpu`: expected a whole number of GPUs, 0 or more, got \"-2\""
        );
        assert_eq!(e(""), "p.csv: no machines: the inventory has no rows");
    }
}
