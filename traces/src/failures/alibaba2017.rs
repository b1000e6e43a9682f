//! Importer for Alibaba cluster-trace-v2017 machine events (`server_event.csv`, no header):
//! `timestamp,machine_id,event_type,event_detail,cpus,memory,disk`, `timestamp` in seconds from
//! the trace start, `event_type` `add`, `softerror` (temporarily unavailable: agent failure,
//! low disk, ...) or `harderror` (hardware failure).
//!
//! - **Population**: the machines with an `add` (1,313, all at t = 0), plus any machine that has
//!   an error without one (none in the released file); numbered in order of first appearance.
//!   CPU machines: GPUs per node unknown.
//! - **Faults**: every `softerror` and `harderror` is a node-level fault at its timestamp,
//!   class `event_type/event_detail` (e.g. `softerror/agent_check`). The trace records no
//!   recovery, so every fault gets the same repair, a parameter (the `alibaba2017:` spec's
//!   `repair_h`, default 1 h): errors recur about every 7,300 s on the same machine, which
//!   suggests a periodic check that finds it still broken, and an hour down per report keeps
//!   it up about half of the time in between. The trace's own semantics are milder than a
//!   node failure ("no new work should be placed; running work may continue"): replaying them
//!   as node failures, which fail the running tasks, is the pessimistic reading.
//! - **Span**: from 0 to the last timestamp.
//! - The resource columns must be present (7 fields a row) but are not read.

use super::trace::{FailureTrace, Fault};
use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Row, Rows};
use sim::{SimDuration, SimTime};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

/// The columns, as the v2017 schema names them (the file has no header line).
pub const COLUMNS: [&str; 7] = ["timestamp", "machine_id", "event_type", "event_detail", "cpus", "memory", "disk"];

/// Reads `server_event.csv` at `path`; every fault lasts `repair`.
pub fn load_alibaba2017(path: &Path, repair: SimDuration) -> Result<FailureTrace, TraceError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
    read_alibaba2017(std::io::BufReader::new(file), &name, repair)
}

/// Reads Alibaba 2017 machine events from `source`; `file` names it in errors.
pub fn read_alibaba2017<R: Read>(source: R, file: &str, repair: SimDuration) -> Result<FailureTrace, TraceError> {
    first_error(file, |sink| read_into(source, file, repair, sink))
}

#[derive(Default)]
struct Reader {
    machines: BTreeMap<String, u32>,
    names: Vec<String>,
    added: Vec<bool>,
    faults: Vec<Fault>,
    last_ms: u64,
    rows: u64,
}

fn read_into<R: Read>(source: R, file: &str, repair: SimDuration, sink: &mut Sink) -> Option<FailureTrace> {
    let mut rows = Rows::open_headerless(source, file, &COLUMNS);
    let mut reader = Reader::default();
    rows.parse_all(sink, |row| reader.add(row, repair))?;
    sink.ok(reader.finish(file))
}

impl Reader {
    fn add(&mut self, row: &Row<'_>, repair: SimDuration) -> Result<(), TraceError> {
        let at_ms = row.seconds_ms(0)?;
        let machine = row.name_field(1, "a machine id")?;
        let kind = row.text(2)?;
        let detail = row.text(3)?;
        if !matches!(kind, "add" | "softerror" | "harderror") {
            return Err(row.error(2, "add, softerror or harderror", kind));
        }
        let next = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let node = *self.machines.entry(machine.to_owned()).or_insert(next);
        if node == next {
            self.names.push(machine.to_owned());
            self.added.push(false);
        }
        self.rows += 1;
        self.last_ms = self.last_ms.max(at_ms);
        if kind == "add" {
            self.added[node as usize] = true;
        } else {
            self.faults.push(Fault {
                node,
                gpu: None,
                start: SimTime(at_ms),
                repair: Some(repair),
                class: format!("{kind}/{detail}"),
            });
        }
        Ok(())
    }

    fn finish(self, file: &str) -> Result<FailureTrace, TraceError> {
        if self.rows == 0 {
            return Err(TraceError::file(file, "no machine events: the file is empty"));
        }
        if self.last_ms == 0 {
            return Err(TraceError::file(file, "every event is at time 0: the trace spans no time"));
        }
        let mut records: BTreeMap<String, u64> = BTreeMap::new();
        for f in &self.faults {
            *records.entry(f.class.clone()).or_insert(0) += 1;
        }
        let population = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let trace = FailureTrace::new(file, population, None, (SimTime(0), SimTime(self.last_ms)), self.faults)?;
        Ok(trace.with_node_names(self.names).with_records(records))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: SimDuration = SimDuration(3_600_000);

    fn read(text: &str) -> Result<FailureTrace, TraceError> {
        read_alibaba2017(text.as_bytes(), "server_event.csv", HOUR)
    }

    #[test]
    fn errors_become_node_faults_with_the_given_repair() {
        let t = read(
            "0,1,add,,64,0.69,1\n0,2,add,,64,0.69,1\n1351,2,softerror,agent_check,0,0,0\n\
             8611,2,softerror,agent_check,0,0,0\n9000,3,harderror,machine_fail,0,0,0\n",
        )
        .unwrap();
        assert_eq!(t.population(), 3);
        assert_eq!((t.span(), t.gpus_per_node()), ((SimTime(0), SimTime(9_000_000)), None));
        let got: Vec<(u32, u64, &str)> =
            t.faults().iter().map(|f| (f.node, f.start.as_ms(), f.class.as_str())).collect();
        assert_eq!(
            got,
            [
                (1, 1_351_000, "softerror/agent_check"),
                (1, 8_611_000, "softerror/agent_check"),
                (2, 9_000_000, "harderror/machine_fail")
            ]
        );
        assert!(t.faults().iter().all(|f| f.repair == Some(HOUR)));
        assert_eq!(t.node_name(1), Some("2"));
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = |text: &str| read(text).unwrap_err().to_string();
        assert_eq!(
            e("0,1,add,,64,0.69,1\n5,1,reboot,x,0,0,0\n"),
            "server_event.csv:2: field `event_type`: expected add, softerror or harderror, got \"reboot\""
        );
        assert!(e("x,1,add,,64,0.69,1\n").starts_with("server_event.csv:1: field `timestamp`"));
        assert!(e("0,,add,,64,0.69,1\n").starts_with("server_event.csv:1: field `machine_id`"));
        assert_eq!(e("0,1,add\n"), "server_event.csv:1: expected 7 fields (the format's columns), got 3");
        assert_eq!(e(""), "server_event.csv: no machine events: the file is empty");
        assert!(e("0,1,add,,64,0.69,1\n").contains("spans no time"));
    }
}
