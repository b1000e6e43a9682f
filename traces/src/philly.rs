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
use crate::rows::{Column, Rows, Unknown};
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
    let (time_col, duration_col, gpus_col, gpu_time_col, vc_col) = (c[0]?, c[1]?, c[2]?, c[3]?, c[4]?);
    let mut queues = NameIndex::new();
    let parsed = rows.parse_all(sink, |row| {
        let text = row.text(time_col)?;
        let submit_ms = parse_datetime_ms(text).map_err(|e| row.error(time_col, e.0, text))?;
        let work_ms = row.positive_seconds_ms(duration_col)?;
        let gpus = row.gpus(gpus_col)?;
        // The file states gpu_time = duration x num_gpus; a row where that fails is
        // corrupt, and we cannot tell which of the fields is wrong.
        let gpu_ms = row.seconds_ms(gpu_time_col)?;
        let expected_ms = u128::from(work_ms) * u128::from(gpus);
        // Each value was rounded to the millisecond once, so allow that much per GPU.
        if u128::from(gpu_ms).abs_diff(expected_ms) > u128::from(gpus) {
            return Err(row.error(
                gpu_time_col,
                format!(
                    "duration x num_gpus = {} GPU-seconds",
                    crate::canonical::format_seconds(u64::try_from(expected_ms).unwrap_or(u64::MAX))
                ),
                row.text(gpu_time_col)?,
            ));
        }
        let vc = row.name_field(vc_col, "a virtual-cluster id such as 6214e9")?;
        Ok(Parsed { submit_ms, work_ms, gpus, queue: queues.intern(vc), line: row.line })
    })?;
    // Rows are not in time order. Sorting these small records first and making the jobs in
    // submit order lays the jobs' memory out in the order everything after reads it.
    let order = stable_order(parsed.iter().map(|p| p.submit_ms));
    // Each queue's name made once: a job's is a copy (inline for a VC hash).
    let queue_names: Vec<sim::Name> = (0..queues.len()).map(|id| queues.name(id).into()).collect();
    let mut jobs = Vec::with_capacity(order.len());
    for p in order.iter().filter_map(|&i| parsed.get(i)) {
        let mut job =
            JobSpec::single(numbered("philly-", p.line), SimTime(p.submit_ms), p.gpus, SimDuration(p.work_ms));
        job.queue = queue_names.get(p.queue).cloned();
        jobs.push(job);
    }
    finish(jobs, rows.file(), sink)
}

/// One row as read, before it becomes a job.
struct Parsed {
    submit_ms: u64,
    work_ms: u64,
    gpus: u32,
    /// The virtual cluster's id in the reader's [`NameIndex`].
    queue: usize,
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
