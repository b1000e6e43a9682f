//! Trace input for schedlab: the canonical trace format (see `traces/FORMAT.md`), importers for
//! public cluster traces (Microsoft ITP, Philly, Alibaba openb pods), cluster descriptions, summary statistics, the
//! seeded synthetic generator, and hardware failures: real failure traces (InfiniteHBD, Titan,
//! Alibaba 2017), seeded failure models, fitting, and the `--failures` spec ([`failures`]).
//!
//! Architecture Invariant: this crate is where trace time becomes integer milliseconds, once,
//! with the rounding rule of [`timeparse`]; nothing downstream parses or rounds trace time.
//!
//! Architecture Invariant: bad input never panics; every reader returns a [`TraceError`] naming
//! file, line and column. `load` and `validate` share one reading path (a [`error`] sink that
//! keeps the first error or the first [`MAX_ERRORS`]), so they cannot disagree.

pub mod canonical;
pub mod cluster_spec;
pub mod datasets;
pub mod error;
pub mod events;
pub mod failures;
pub mod inventory;
pub mod itp;
pub mod job_builder;
mod names;
pub mod openb;
pub mod philly;
pub mod queues;
mod quote_free;
mod rows;
pub mod sacct;
pub mod stats;
pub mod stream;
pub mod synth;
pub mod timeparse;

pub use canonical::{SPEEDS_EXPECTED, format_thousandths, parse_speeds, read_jobs_csv, write_trace_jobs_csv};
pub use cluster_spec::{load_cluster_file, parse_cluster_shorthand, read_cluster_csv, write_cluster_csv};
pub use datasets::{load_datasets_file, read_datasets_csv, write_datasets_csv};
pub use error::{MAX_ERRORS, TraceError};
pub use events::{EventRecord, read_events_csv, write_events_csv};
pub use failures::{FailureModel, FailureSpec, FailureTrace, Failures, FitReport};
pub use inventory::{ClusterImport, ImportReport, InventoryFormat, load_inventory, read_inventory};
pub use itp::read_itp_csv;
pub use job_builder::{DepResolver, FieldError, JobFields, MAX_TASK_GPUS, TaskFields, parse_dep_kind};
pub use openb::{OpenbImport, OpenbReport, read_openb_pods};
pub use philly::read_philly_csv;
pub use queues::{load_queues_file, read_helios_vc_csv, read_philly_vc_csv, read_queues_csv, write_queues_csv};
pub use sacct::{NodeFailure, SacctImport, SacctReport, read_sacct};
pub use stats::{DurationSummary, TraceStats};
pub use stream::{JobStream, Order, stream_jobs, stream_sorted};
pub use synth::SynthConfig;
pub use timeparse::{parse_datetime_ms, parse_seconds_ms};

use error::{Sink, first_error};
use sim::{ClusterSpec, Workload};
use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::Path;
use std::str::FromStr;

/// Which reader a trace needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Format {
    /// schedlab's own: a `jobs.csv` file, or a directory with `jobs.csv` and optionally
    /// `cluster.csv` and `events.csv`.
    Canonical,
    /// One Microsoft ITP `clusterNN.csv` (ElasticFlow release).
    Itp,
    /// Philly's per-job `philly.csv` (Pollux artifact).
    Philly,
    /// Alibaba's GPU-sharing trace v2023: `openb_pod_list_default.csv`, one job per GPU pod
    /// (see [`openb`] for the mapping).
    Openb,
    /// Slurm accounting: `sacct --allusers --parsable2 --duplicates --format=...` output (see
    /// [`sacct`] for the mapping and traces/FORMAT.md for the fields), its times on a clock:
    /// `sacct` (naive), `sacct[tz=+02:00]` or `sacct[tz=Europe/Berlin]` ([`sacct::SacctClock`]).
    Sacct(sacct::SacctClock),
}

impl Format {
    pub const ALL: [Format; 5] =
        [Format::Canonical, Format::Itp, Format::Philly, Format::Openb, Format::Sacct(sacct::SacctClock::Naive)];

    pub fn name(self) -> &'static str {
        match self {
            Format::Canonical => "canonical",
            Format::Itp => "itp",
            Format::Philly => "philly",
            Format::Openb => "openb",
            Format::Sacct(_) => "sacct",
        }
    }

    /// Whether traces of this format record when each job started ([`Trace::recorded_starts`]),
    /// which a replay's starts can be compared with: only Slurm accounting does.
    pub fn records_starts(self) -> bool {
        matches!(self, Format::Sacct(_))
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Format::Sacct(clock) if *clock != sacct::SacctClock::Naive => write!(f, "sacct[tz={clock}]"),
            _ => f.write_str(self.name()),
        }
    }
}

impl FromStr for Format {
    type Err = TraceError;

    fn from_str(s: &str) -> Result<Format, TraceError> {
        if let Some(params) = s.strip_prefix("sacct[").and_then(|rest| rest.strip_suffix(']')) {
            let expected = |why: String| TraceError::value("trace format", format!("sacct[tz=ZONE]: {why}"));
            let zone = params.strip_prefix("tz=").ok_or_else(|| expected(format!("unknown setting `{params}`")))?;
            return sacct::SacctClock::parse(zone).map(Format::Sacct).map_err(expected);
        }
        Format::ALL.into_iter().find(|f| f.name() == s).ok_or_else(|| {
            let valid: Vec<&str> = Format::ALL.iter().map(|f| f.name()).collect();
            TraceError::value("trace format", format!("unknown format `{s}`; valid formats: {}", valid.join(", ")))
        })
    }
}

/// The importer whose required columns a header has (a file read with the wrong
/// `--format`): Philly, ITP or openb, or sacct for a `|`-separated header with `JobID`.
pub(crate) fn format_of_header(header: &[String]) -> Option<Format> {
    let has_all =
        |known: &[rows::Column]| known.iter().filter(|c| c.required).all(|c| header.iter().any(|h| h == c.name));
    if header.first().is_some_and(|h| h.split('|').any(|f| f == "JobID")) {
        return Some(Format::Sacct(sacct::SacctClock::Naive));
    }
    [(Format::Philly, philly::KNOWN), (Format::Itp, itp::KNOWN), (Format::Openb, openb::KNOWN)]
        .into_iter()
        .find(|(_, known)| has_all(known))
        .map(|(format, _)| format)
}

/// Everything a trace gives the simulator.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Trace {
    pub workload: Workload,
    /// The cluster, when the trace describes one (canonical directory with `cluster.csv`).
    pub cluster: Option<ClusterSpec>,
    /// Ground-truth cluster events, sorted by time (canonical directory with `events.csv`).
    pub events: Vec<EventRecord>,
    /// Queues with quotas (canonical directory with `queues.csv`); empty: no quotas.
    pub queues: Vec<sim::QueueSpec>,
    /// Datasets on nodes (canonical directory with `datasets.csv`); empty: none.
    pub datasets: Vec<sim::DatasetSpec>,
    /// What the import left out, changed or does not model, one line each, for a command to
    /// print on stderr when it loads the trace (such as `skipped 1,088 pods CPU-only ...` for
    /// openb). Empty when the trace was taken as written (canonical, ITP, Philly).
    pub notes: Vec<String>,
    /// When the real scheduler started each job, by job name, where the trace records it
    /// (sacct); empty otherwise. See `reports::recorded`.
    pub recorded_starts: std::collections::BTreeMap<String, sim::SimTime>,
}

/// Reads the trace at `path`; the first problem found is the error.
pub fn load(path: &Path, format: Format) -> Result<Trace, TraceError> {
    first_error(&path.display().to_string(), |sink| load_into(path, format, sink))
}

/// Checks the trace at `path` and returns up to [`MAX_ERRORS`] problems (empty: valid).
/// Rows with errors are skipped and reading goes on, so one run shows many problems.
pub fn validate(path: &Path, format: Format) -> Vec<TraceError> {
    let mut sink = Sink::new(MAX_ERRORS);
    load_into(path, format, &mut sink);
    sink.into_errors()
}

/// What [`check`] found: the errors (as [`validate`]'s), and when there were none, the
/// import's notes and how many of the file's rows it skipped (see [`Trace::notes`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Checked {
    pub errors: Vec<TraceError>,
    pub notes: Vec<String>,
    /// Data rows the import read.
    pub rows: u64,
    /// Data rows that became no job (an unfinished sacct job, a CPU-only pod): named in the notes.
    pub skipped: u64,
    /// Jobs the trace replays as.
    pub jobs: usize,
}

/// [`validate`], and for a trace without errors what its import left out: `trace validate`
/// says `ok` only when nothing was skipped.
pub fn check(path: &Path, format: Format) -> Checked {
    let mut sink = Sink::new(MAX_ERRORS);
    let mut counts = (0, 0);
    let trace = if path.is_dir() {
        load_into(path, format, &mut sink)
    } else {
        match open(path, &mut sink) {
            Some((file, name)) => read_file_counting(file, &name, format, &mut sink, &mut counts),
            None => None,
        }
    };
    let errors = sink.into_errors();
    match trace {
        Some(trace) if errors.is_empty() => {
            Checked { errors, jobs: trace.workload.len(), notes: trace.notes, rows: counts.0, skipped: counts.1 }
        }
        _ => Checked { errors, ..Checked::default() },
    }
}

/// Reads one jobs file of `format` from any reader; `file` names it in errors. For tests,
/// stdin and in-memory data; [`read_trace`] also gives the import's notes.
pub fn read_workload<R: Read>(source: R, file: &str, format: Format) -> Result<Workload, TraceError> {
    read_trace(source, file, format).map(|trace| trace.workload)
}

/// Reads one jobs file of `format` from any reader, with the import's notes; `file` names it
/// in errors. [`load`] is the same on a path (and reads canonical directories too).
pub fn read_trace<R: Read>(source: R, file: &str, format: Format) -> Result<Trace, TraceError> {
    first_error(file, |sink| read_file_into(source, file, format, sink))
}

/// Writes `trace` as a canonical trace directory: `jobs.csv`, plus `cluster.csv` when the
/// trace has a cluster, `events.csv` when it has events, `queues.csv` when it has queues and
/// `datasets.csv` when it has datasets. Creates `dir` if needed.
pub fn write_trace_dir(trace: &Trace, dir: &Path) -> Result<(), TraceError> {
    let name = dir.display().to_string();
    std::fs::create_dir_all(dir).map_err(|e| TraceError::io(&name, format!("cannot create: {e}")))?;
    let create = |file: &str| {
        let path = dir.join(file);
        File::create(&path)
            .map(std::io::BufWriter::new)
            .map_err(|e| TraceError::io(&path.display().to_string(), format!("cannot write: {e}")))
    };
    write_trace_jobs_csv(&trace.workload, create("jobs.csv")?)?;
    if let Some(cluster) = &trace.cluster {
        write_cluster_csv(cluster, create("cluster.csv")?)?;
    }
    if !trace.events.is_empty() {
        write_events_csv(&trace.events, create("events.csv")?)?;
    }
    if !trace.queues.is_empty() {
        write_queues_csv(&trace.queues, create("queues.csv")?)?;
    }
    if !trace.datasets.is_empty() {
        write_datasets_csv(&trace.datasets, create("datasets.csv")?)?;
    }
    Ok(())
}

/// [`validate`] for one jobs file of `format` read from any reader (stdin, memory).
pub fn validate_workload<R: Read>(source: R, file: &str, format: Format) -> Vec<TraceError> {
    let mut sink = Sink::new(MAX_ERRORS);
    read_file_into(source, file, format, &mut sink);
    sink.into_errors()
}

fn open(path: &Path, sink: &mut Sink) -> Option<(File, String)> {
    let name = path.display().to_string();
    let file = sink.ok(File::open(path).map_err(|e| TraceError::io(&name, e.to_string())))?;
    Some((file, name))
}

fn load_into(path: &Path, format: Format, sink: &mut Sink) -> Option<Trace> {
    if path.is_dir() {
        if format != Format::Canonical {
            sink.push(TraceError::file(
                &path.display().to_string(),
                format!("is a directory; the {format} format reads one CSV file"),
            ));
            return None;
        }
        return load_directory(path, sink);
    }
    let (file, name) = open(path, sink)?;
    read_file_into(file, &name, format, sink)
}

/// The one reading path of every single-file format, for `load`, `validate` and the readers.
fn read_file_into<R: Read>(source: R, file: &str, format: Format, sink: &mut Sink) -> Option<Trace> {
    read_file_counting(source, file, format, sink, &mut (0, 0))
}

/// [`read_file_into`], setting `counts` to (rows read, rows skipped) where the format skips
/// rows (openb, sacct); (0, 0) for the others, which read every row or fail.
fn read_file_counting<R: Read>(
    source: R,
    file: &str,
    format: Format,
    sink: &mut Sink,
    counts: &mut (u64, u64),
) -> Option<Trace> {
    let none = std::collections::BTreeMap::new;
    let (workload, notes, recorded_starts) = match format {
        Format::Canonical => (canonical::read_jobs_into(source, file, sink)?, Vec::new(), none()),
        Format::Itp => (itp::read_itp_into(source, file, sink)?, Vec::new(), none()),
        Format::Philly => (philly::read_philly_into(source, file, sink)?, Vec::new(), none()),
        Format::Openb => {
            let import = openb::read_openb_into(source, file, sink)?;
            *counts = (import.report.pods, import.report.cpu_only);
            (import.workload, import.report.notes(), none())
        }
        Format::Sacct(clock) => {
            let import = sacct::read_sacct_into(source, file, clock, sink)?;
            *counts = (import.report.rows, import.report.skipped.len() as u64);
            (import.workload, import.report.notes(), import.recorded_starts)
        }
    };
    debug_assert!(format.records_starts() || recorded_starts.is_empty(), "Format::records_starts is out of date");
    let (cluster, events, queues, datasets) = (None, Vec::new(), Vec::new(), Vec::new());
    Some(Trace { workload, cluster, events, queues, datasets, notes, recorded_starts })
}

/// A canonical trace directory: `jobs.csv` required, `cluster.csv`, `events.csv`,
/// `queues.csv` and `datasets.csv` optional. Every file present is read even after an error
/// (until the error limit), so `validate` reports problems in each.
fn load_directory(dir: &Path, sink: &mut Sink) -> Option<Trace> {
    let jobs_path = dir.join("jobs.csv");
    let workload = if jobs_path.is_file() {
        open(&jobs_path, sink).and_then(|(file, name)| canonical::read_jobs_into(file, &name, sink))
    } else {
        sink.push(TraceError::file(
            &dir.display().to_string(),
            "the trace directory has no jobs.csv (cluster.csv, events.csv, queues.csv and datasets.csv are optional)",
        ));
        None
    };
    let cluster_path = dir.join("cluster.csv");
    let cluster = if cluster_path.exists() && !sink.is_full() {
        open(&cluster_path, sink).and_then(|(file, name)| cluster_spec::read_cluster_into(file, &name, sink))
    } else {
        None
    };
    let events_path = dir.join("events.csv");
    let events = if events_path.exists() && !sink.is_full() {
        open(&events_path, sink).and_then(|(file, name)| events::read_events_into(file, &name, cluster.as_ref(), sink))
    } else {
        Some(Vec::new())
    };
    let queues_path = dir.join("queues.csv");
    let queues = if queues_path.exists() && !sink.is_full() {
        open(&queues_path, sink).and_then(|(file, name)| queues::read_queues_into(file, &name, sink))
    } else {
        Some(Vec::new())
    };
    let datasets_path = dir.join("datasets.csv");
    let datasets = if datasets_path.exists() && !sink.is_full() {
        open(&datasets_path, sink).and_then(|(file, name)| datasets::read_datasets_into(file, &name, sink))
    } else {
        Some(Vec::new())
    };
    Some(Trace {
        workload: workload?,
        cluster,
        events: events?,
        queues: queues?,
        datasets: datasets?,
        notes: Vec::new(),
        recorded_starts: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_parse_and_print() {
        for f in Format::ALL {
            assert_eq!(f.name().parse::<Format>(), Ok(f));
        }
        let e = "csv".parse::<Format>().unwrap_err().to_string();
        assert_eq!(e, "trace format: unknown format `csv`; valid formats: canonical, itp, philly, openb, sacct");
        for zoned in ["sacct[tz=Europe/Berlin]", "sacct[tz=-05:00]"] {
            assert_eq!(zoned.parse::<Format>().map(|f| f.to_string()), Ok(zoned.to_owned()));
        }
        let e = "sacct[zone=UTC]".parse::<Format>().unwrap_err().to_string();
        assert_eq!(e, "trace format: sacct[tz=ZONE]: unknown setting `zone=UTC`");
    }

    #[test]
    fn read_workload_dispatches_on_format() {
        let itp = "job_id,submission_time,duration,num_gpu\na,1,600,1\n";
        assert_eq!(read_workload(itp.as_bytes(), "x", Format::Itp).unwrap().len(), 1);
        assert!(read_workload(itp.as_bytes(), "x", Format::Philly).is_err());
        let openb = "name,num_gpu,gpu_milli,qos,creation_time,deletion_time,scheduled_time\n\
                     a,1,500,LS,0,10,0\nb,0,0,BE,0,10,0\n";
        let trace = read_trace(openb.as_bytes(), "x", Format::Openb).unwrap();
        assert_eq!(trace.workload.len(), 1);
        assert_eq!(trace.notes, ["skipped 1 CPU-only pod (num_gpu = 0; schedlab schedules GPUs)"]);
        assert_eq!(read_trace(itp.as_bytes(), "x", Format::Itp).unwrap().notes, Vec::<String>::new());
        assert_eq!(validate_workload(openb.as_bytes(), "x", Format::Openb), []);
    }

    #[test]
    fn validate_collects_many_errors_and_skips_bad_rows() {
        let mut text = String::from("job_id,submit_s,duration_s,gpus\n");
        for i in 0..30 {
            text.push_str(&format!("j{i},0,{},1\n", if i % 2 == 0 { "x" } else { "5" }));
        }
        let errors = validate_workload(text.as_bytes(), "jobs.csv", Format::Canonical);
        assert_eq!(errors.len(), 15);
        let lines: Vec<u64> = errors.iter().filter_map(TraceError::line).collect();
        assert_eq!(lines, (0..15).map(|k| 2 + 2 * k).collect::<Vec<u64>>());
        text.push_str(&"j,0,x,1\n".repeat(30));
        assert_eq!(validate_workload(text.as_bytes(), "jobs.csv", Format::Canonical).len(), MAX_ERRORS);
        // The first error of validate is the error of load.
        let first = read_workload(text.as_bytes(), "jobs.csv", Format::Canonical).unwrap_err();
        assert_eq!(Some(&first), validate_workload(text.as_bytes(), "jobs.csv", Format::Canonical).first());
    }

    #[test]
    fn missing_files_are_io_errors() {
        let e = load(Path::new("/nonexistent/schedlab/philly.csv"), Format::Philly).unwrap_err();
        assert!(matches!(e, TraceError::Io { .. }), "{e}");
        assert!(e.to_string().starts_with("/nonexistent/schedlab/philly.csv: cannot read:"), "{e}");
        assert_eq!(validate(Path::new("/nonexistent/x.csv"), Format::Itp).len(), 1);
    }
}
