//! Importer for the OLCF Titan GPU life histories (`gc_full.csv` of olcf/TitanGPULife, SC'20):
//! `SN,location,insert,remove,duration,out,event`, one row per GPU life segment at a location,
//! `event` `DBE` (double-bit ECC error) or `OTB` (off the bus) when the segment ended with that
//! failure, plus failure rows with an empty `insert`.
//!
//! - **Nodes.** Titan has one GPU per node, so a location (`cX-YcCsSnN`) is a node with one
//!   GPU: the population is every distinct location (18,687), numbered in order of first
//!   appearance, and faults are GPU-level (slot 0).
//! - **Faults.** Every DBE or OTB row is a failure at its `remove` time. Rows that repeat a
//!   failure of the same location at the same instant (27 in the file, e.g. a DBE segment end
//!   and an OTB row) are merged into one fault whose class joins the distinct events
//!   (`DBE+OTB`); [`FailureTrace::records`] keeps the per-row counts (4,826 DBE, 1,541 OTB).
//! - **Repair.** A failure that ends a life segment (the GPU was pulled) lasts until a GPU is
//!   next inserted at that location (at or after the failure): how long the node went without a
//!   working GPU (median 28.8 days: Titan replaced GPUs in campaigns). Where no GPU is inserted
//!   there again (45 faults), the repair is `None`: not repaired within the span. A failure
//!   *inside* a life segment (a failure row with no `insert` while a GPU stays in place at the
//!   location past that instant: 1,127 faults, nearly all the same GPU) was survived in place —
//!   the node crashed, its jobs died, the GPU went back to work after a reset whose length the
//!   data does not give: its repair is 0 (replayed as 1 ms, and left out of repair fits).
//! - **Time.** `insert`/`remove` are `YYYY-MM-DD HH:MM:SS` in US Eastern time; they are read
//!   as a naive clock (milliseconds since 1970-01-01 00:00:00 of that clock), like Philly's.
//!   The span runs from the first insert to the last remove.
//! - Other columns (`SN`, `duration`, `out`) are ignored; `duration` disagrees with
//!   `remove - insert` by the DST hour on some rows, and the dates are what the authors trust.

use super::trace::{FailureTrace, Fault};
use crate::error::{Sink, TraceError, first_error};
use crate::rows::{Column, Row, Rows, Unknown};
use crate::timeparse::parse_datetime_ms;
use sim::{SimDuration, SimTime};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::Read;
use std::path::Path;

const KNOWN: &[Column] = &[
    Column { name: "location", required: true },
    Column { name: "insert", required: true },
    Column { name: "remove", required: true },
    Column { name: "event", required: true },
];

/// Reads `gc_full.csv` at `path`.
pub fn load_titan(path: &Path) -> Result<FailureTrace, TraceError> {
    let name = path.display().to_string();
    let file = File::open(path).map_err(|e| TraceError::io(&name, e.to_string()))?;
    read_titan(std::io::BufReader::new(file), &name)
}

/// Reads a Titan `gc_full.csv` from `source`; `file` names it in errors.
pub fn read_titan<R: Read>(source: R, file: &str) -> Result<FailureTrace, TraceError> {
    first_error(file, |sink| read_titan_into(source, file, sink))
}

/// One failure row.
struct Failure {
    location: u32,
    at_ms: u64,
    event: &'static str,
}

#[derive(Default)]
struct Reader {
    locations: BTreeMap<String, u32>,
    names: Vec<String>,
    /// Life segments (insert, remove) per location.
    segments: Vec<Vec<(u64, u64)>>,
    failures: Vec<Failure>,
    first_ms: Option<u64>,
    last_ms: u64,
}

fn read_titan_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<FailureTrace> {
    let (mut rows, c) = Rows::open_checked(source, file, KNOWN, Unknown::Ignore, sink)?;
    let cols = [c[0]?, c[1]?, c[2]?, c[3]?];
    let mut reader = Reader::default();
    rows.parse_all(sink, |row| reader.add(row, cols))?;
    sink.ok(reader.finish(file))
}

fn date(row: &Row<'_>, column: usize) -> Result<u64, TraceError> {
    let text = row.text(column)?;
    parse_datetime_ms(text).map_err(|e| row.error(column, e.0, text))
}

impl Reader {
    fn add(
        &mut self,
        row: &Row<'_>,
        [location_col, insert_col, remove_col, event_col]: [usize; 4],
    ) -> Result<(), TraceError> {
        let location = row.name_field(location_col, "a node location such as c11-2c1s4n1")?;
        let event = match row.text(event_col)? {
            "" => None,
            "DBE" => Some("DBE"),
            "OTB" => Some("OTB"),
            other => return Err(row.error(event_col, "DBE, OTB or an empty field", other)),
        };
        let remove_ms = date(row, remove_col)?;
        let insert_ms = if row.text(insert_col)?.is_empty() && event.is_some() {
            None // a failure row without its life segment
        } else {
            Some(date(row, insert_col)?)
        };
        let next = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let index = *self.locations.entry(location.to_owned()).or_insert(next);
        if index == next {
            self.names.push(location.to_owned());
            self.segments.push(Vec::new());
        }
        if let Some(insert_ms) = insert_ms {
            self.segments[index as usize].push((insert_ms, remove_ms));
            self.first_ms = Some(self.first_ms.map_or(insert_ms, |f| f.min(insert_ms)));
        }
        self.last_ms = self.last_ms.max(remove_ms);
        if let Some(event) = event {
            self.failures.push(Failure { location: index, at_ms: remove_ms, event });
        }
        Ok(())
    }

    fn finish(mut self, file: &str) -> Result<FailureTrace, TraceError> {
        let Some(first_ms) = self.first_ms else {
            return Err(TraceError::file(file, "no GPU life segments: no row has an insert time"));
        };
        let mut records: BTreeMap<String, u64> = BTreeMap::new();
        for f in &self.failures {
            *records.entry(f.event.to_owned()).or_insert(0) += 1;
        }
        for segments in &mut self.segments {
            segments.sort_unstable();
        }
        // One fault per (location, instant); its class joins the distinct events there.
        self.failures.sort_by(|a, b| (a.location, a.at_ms, a.event).cmp(&(b.location, b.at_ms, b.event)));
        let mut faults: Vec<Fault> = Vec::new();
        for f in &self.failures {
            if let Some(last) = faults.last_mut()
                && last.node == f.location
                && last.start.as_ms() == f.at_ms
            {
                if !last.class.split('+').any(|c| c == f.event) {
                    last.class = format!("{}+{}", last.class, f.event);
                }
                continue;
            }
            faults.push(Fault {
                node: f.location,
                gpu: Some(0),
                start: SimTime(f.at_ms),
                repair: repair_of(&self.segments[f.location as usize], f.at_ms),
                class: f.event.to_owned(),
            });
        }
        let start = first_ms.min(faults.iter().map(|f| f.start.as_ms()).min().unwrap_or(first_ms));
        let population = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        let trace = FailureTrace::new(file, population, Some(1), (SimTime(start), SimTime(self.last_ms)), faults)?;
        Ok(trace.with_node_names(self.names).with_records(records))
    }
}

/// The repair of a failure at `at_ms` at a location with these life `segments` (sorted): 0
/// while a GPU stays in place past it, else until the next insert, else `None`.
fn repair_of(segments: &[(u64, u64)], at_ms: u64) -> Option<SimDuration> {
    if segments.iter().any(|&(insert, remove)| insert <= at_ms && at_ms < remove) {
        return Some(SimDuration::ZERO);
    }
    segments.iter().map(|s| s.0).find(|&insert| insert >= at_ms).map(|insert| SimDuration(insert - at_ms))
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "SN,location,insert,remove,duration,out,event\n";

    fn read(body: &str) -> Result<FailureTrace, TraceError> {
        read_titan(format!("{HEAD}{body}").as_bytes(), "gc_full.csv")
    }

    #[test]
    fn failures_repairs_and_merged_duplicates() {
        let t = read(
            "1,c0-0c0s0n0,2014-01-01 00:00:00,2014-01-11 00:00:00,864000,FALSE,DBE\n\
             1,c0-0c0s0n0,,2014-01-11 00:00:00,,,OTB\n\
             2,c0-0c0s0n0,2014-01-12 00:00:00,2019-08-01 20:07:33,1,FALSE,\n\
             3,c0-0c0s0n1,2014-01-01 00:00:00,2015-01-01 00:00:00,1,TRUE,OTB\n\
             4,c0-0c0s0n2,2014-01-01 00:00:00,2019-08-01 20:07:33,1,FALSE,\n\
             4,c0-0c0s0n2,,2016-01-01 00:00:00,,,DBE\n",
        )
        .unwrap();
        assert_eq!(t.population(), 3);
        assert_eq!(t.gpus_per_node(), Some(1));
        assert_eq!(t.faults().len(), 3);
        // Survived in place: the GPU of c0-0c0s0n2 stays until 2019.
        let f = &t.faults()[2];
        assert_eq!((f.node, f.class.as_str(), f.repair), (2, "DBE", Some(SimDuration::ZERO)));
        let day = 86_400_000;
        let f = &t.faults()[0];
        assert_eq!((f.node, f.gpu, f.class.as_str(), f.repair), (0, Some(0), "DBE+OTB", Some(SimDuration(day))));
        let f = &t.faults()[1];
        assert_eq!((f.node, f.class.as_str(), f.repair), (1, "OTB", None));
        assert_eq!(t.records().get("OTB"), Some(&2));
        assert_eq!(t.span().0, SimTime(parse_datetime_ms("2014-01-01 00:00:00").unwrap()));
        assert_eq!(t.span().1, SimTime(parse_datetime_ms("2019-08-01 20:07:33").unwrap()));
        assert_eq!(t.node_name(2), Some("c0-0c0s0n2"));
    }

    #[test]
    fn errors_name_line_and_column() {
        let e = |body: &str| read(body).unwrap_err().to_string();
        assert_eq!(
            e("1,c0,2014-01-01 00:00:00,2014-01-02 00:00:00,1,FALSE,SBE\n"),
            "gc_full.csv:2: field `event`: expected DBE, OTB or an empty field, got \"SBE\""
        );
        assert!(
            e("1,c0,,2014-01-02 00:00:00,1,FALSE,\n")
                .starts_with("gc_full.csv:2: field `insert`: expected a date-time")
        );
        assert!(
            e("1,c0,2014-01-01 00:00:00,2014-13-02 00:00:00,1,FALSE,\n").starts_with("gc_full.csv:2: field `remove`")
        );
        assert!(
            e("1,,2014-01-01 00:00:00,2014-01-02 00:00:00,1,FALSE,\n").starts_with("gc_full.csv:2: field `location`")
        );
        assert!(e("").contains("no GPU life segments"));
        let e = read_titan("SN,location,insert\n".as_bytes(), "g.csv").unwrap_err().to_string();
        assert!(e.contains("no column `remove`"), "{e}");
    }
}
