//! Importer for the Microsoft Philly per-job table derived by the Pollux authors
//! (`philly.csv`: `timestamp,duration,num_gpus,gpu_time,cluster`). Rows are unsorted and have
//! no job id, so each job is named `philly-<line>` after its line in the file (header = line
//! 1), which keeps the 65 exact duplicate rows as distinct jobs and lets a reader find the row
//! behind any job in a report. The queue is the virtual-cluster hash in `cluster`.
//!
//! `timestamp` is naive US Pacific local time, converted as written (see
//! [`crate::timeparse::parse_datetime_ms`]): submit times are milliseconds since
//! 1970-01-01 00:00:00 of that local clock, not UTC.

use crate::error::{Sink, TraceError, first_error};
use crate::itp::{finish, stable_order};
use crate::names::{NameIndex, numbered};
use crate::rows::{Column, Row, Rows, Unknown};
use crate::timeparse::parse_datetime_ms;
use sim::{JobSpec, SimDuration, SimTime, Workload};
use std::io::Read;

pub(crate) const KNOWN: &[Column] = &[
    Column { name: "timestamp", required: true },
    Column { name: "duration", required: true },
    Column { name: "num_gpus", required: true },
    Column { name: "gpu_time", required: true },
    Column { name: "cluster", required: true },
];

/// Reads `philly.csv`; `file` names it in errors.
pub fn read_philly_csv<R: Read>(source: R, file: &str) -> Result<Workload, TraceError> {
    first_error(file, |sink| read_philly_into(source, file, sink))
}

pub(crate) fn read_philly_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<Workload> {
    let (mut rows, c) = Rows::open_checked(source, file, KNOWN, Unknown::Ignore, sink)?;
    let mut philly = PhillyRows::new(&c)?;
    let parsed = rows.parse_all(sink, |row| philly.parse(row))?;
    // Rows are not in time order. Sorting these small records first and making the jobs in
    // submit order lays the jobs' memory out in the order everything after reads it.
    let order = stable_order(parsed.iter().map(|p| p.submit_ms));
    let jobs: Vec<JobSpec> = order.iter().filter_map(|&i| parsed.get(i)).map(|p| philly.job(p)).collect();
    finish(jobs, rows.file(), sink)
}

/// The one parser of Philly rows, for the whole-file reader and the stream: a row becomes a
/// [`Parsed`] record, a record a job.
pub(crate) struct PhillyRows {
    time_col: usize,
    duration_col: usize,
    gpus_col: usize,
    gpu_time_col: usize,
    vc_col: usize,
    queues: NameIndex,
    /// Each queue's name made once, by id: a job's is a copy (inline for a VC hash).
    queue_names: Vec<sim::Name>,
}

impl PhillyRows {
    /// The parser for a header whose [`KNOWN`] columns are `c` (`None` if one is missing).
    pub(crate) fn new(c: &[Option<usize>]) -> Option<PhillyRows> {
        Some(PhillyRows {
            time_col: (*c.first()?)?,
            duration_col: (*c.get(1)?)?,
            gpus_col: (*c.get(2)?)?,
            gpu_time_col: (*c.get(3)?)?,
            vc_col: (*c.get(4)?)?,
            queues: NameIndex::new(),
            queue_names: Vec::new(),
        })
    }

    /// The column of the submit time.
    pub(crate) fn submit_column(&self) -> usize {
        self.time_col
    }

    /// Reads one row.
    pub(crate) fn parse(&mut self, row: &Row<'_>) -> Result<Parsed, TraceError> {
        let text = row.text(self.time_col)?;
        let submit_ms = parse_datetime_ms(text).map_err(|e| row.error(self.time_col, e.0, text))?;
        let work_ms = row.positive_seconds_ms(self.duration_col)?;
        let gpus = row.gpus(self.gpus_col)?;
        // The file states gpu_time = duration x num_gpus; a row where that fails is
        // corrupt, and we cannot tell which of the fields is wrong.
        let gpu_ms = row.seconds_ms(self.gpu_time_col)?;
        let expected_ms = u128::from(work_ms) * u128::from(gpus);
        // Each value was rounded to the millisecond once, so allow that much per GPU.
        if u128::from(gpu_ms).abs_diff(expected_ms) > u128::from(gpus) {
            return Err(row.error(
                self.gpu_time_col,
                format!(
                    "duration x num_gpus = {} GPU-seconds",
                    crate::canonical::format_seconds(u64::try_from(expected_ms).unwrap_or(u64::MAX))
                ),
                row.text(self.gpu_time_col)?,
            ));
        }
        let vc = row.name_field(self.vc_col, "a virtual-cluster id such as 6214e9")?;
        let id = self.queues.intern(vc);
        if id == self.queue_names.len() {
            self.queue_names.push(vc.into());
        }
        let queue = u32::try_from(id).map_err(|_| row.error(self.vc_col, "at most 2^32 distinct clusters", vc))?;
        Ok(Parsed { submit_ms, work_ms, gpus, queue, line: row.line })
    }

    /// The job of a record [`PhillyRows::parse`] made.
    pub(crate) fn job(&self, p: &Parsed) -> JobSpec {
        let mut job =
            JobSpec::single(numbered("philly-", p.line), SimTime(p.submit_ms), p.gpus, SimDuration(p.work_ms));
        job.queue = self.queue_names.get(p.queue as usize).cloned();
        job
    }
}

/// One row as read, before it becomes a job: 32 bytes.
pub(crate) struct Parsed {
    pub(crate) submit_ms: u64,
    work_ms: u64,
    gpus: u32,
    /// The virtual cluster's id in the reader's [`NameIndex`].
    queue: u32,
    line: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    const HEAD: &str = "timestamp,duration,num_gpus,gpu_time,cluster\n";

    #[test]
    fn rows_become_named_jobs_in_time_order() {
        let text =
            format!("{HEAD}2017-10-09 07:01:55,66.0,1,66.0,11cb48\n2017-10-09 06:13:03,2951.0,2,5902.0,6214e9\n\n");
        let w = read_philly_csv(text.as_bytes(), "philly.csv").unwrap();
        assert_eq!(w.len(), 2);
        let first = &w.jobs()[0];
        assert_eq!(first.name, "philly-3");
        assert_eq!(first.queue.as_deref(), Some("6214e9"));
        assert_eq!(first.submit, SimTime(parse_datetime_ms("2017-10-09 06:13:03").unwrap()));
        assert_eq!(first.tasks[0].work, SimDuration(2_951_000));
        assert_eq!(first.gpus(), 2);
        assert_eq!(w.jobs()[1].name, "philly-2");
    }

    #[test]
    fn duplicate_rows_stay_distinct_jobs() {
        let row = "2017-10-09 07:01:55,66.0,1,66.0,11cb48\n";
        let w = read_philly_csv(format!("{HEAD}{row}{row}").as_bytes(), "p.csv").unwrap();
        assert_eq!(w.len(), 2);
        assert_ne!(w.jobs()[0].name, w.jobs()[1].name);
    }

    #[test]
    fn gpu_time_mismatch_names_the_line() {
        let text = format!("{HEAD}2017-10-09 07:01:55,66.0,1,66.0,11cb48\n2017-10-09 07:01:55,66.0,2,130.0,11cb48\n");
        let e = read_philly_csv(text.as_bytes(), "philly.csv").unwrap_err().to_string();
        assert_eq!(e, "philly.csv:3: field `gpu_time`: expected duration x num_gpus = 132 GPU-seconds, got \"130.0\"");
    }

    #[test]
    fn bad_fields_name_line_and_column() {
        let e = |row: &str| read_philly_csv(format!("{HEAD}{row}\n").as_bytes(), "philly.csv").unwrap_err().to_string();
        assert_eq!(
            e("2017-10-09 07:01:55,abc,1,66.0,11cb48"),
            "philly.csv:2: field `duration`: expected a positive number of seconds (decimal digits, like 66 or 0.25), got \"abc\""
        );
        assert!(
            e("2017-02-30 07:01:55,66.0,1,66.0,11cb48")
                .starts_with("philly.csv:2: field `timestamp`: expected a date-time")
        );
        assert!(e("2017-10-09 07:01:55,66.0,1,66.0,").starts_with("philly.csv:2: field `cluster`"));
        assert!(e("2017-10-09 07:01:55,66.0,0,0.0,x").starts_with("philly.csv:2: field `num_gpus`"));
    }
}
