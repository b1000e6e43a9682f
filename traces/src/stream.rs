//! Streamed reading of a jobs file (issue 36): a [`JobStream`] gives a trace's jobs one at a
//! time, in submit order, as a streamed run admits them, instead of a [`sim::Workload`] of all
//! of them. It gives exactly the jobs, in exactly the order, that [`crate::load`] gives, read
//! by the same row parsers ([`crate::canonical::CanonicalRows`], [`crate::itp::ItpRows`],
//! [`crate::philly::PhillyRows`]). Each canonical job is checked as [`sim::Workload::new`]
//! checks it, with the whole-file reader's message; Philly's and ITP's jobs (one task of whole
//! GPUs, nothing else set) pass those checks as they are made (debug builds check that too).
//!
//! Two orders (see [`Order`]). [`Order::Sorted`] reads the file once, front to back, and
//! refuses a job submitted before the job above it; it holds the reader's buffer, one job
//! and, for formats with job ids (canonical, ITP), the ids seen so far, so that a repeated id
//! is refused as the whole-file reader refuses it. [`Order::Sort`] reads the file once to
//! check every row and index its jobs, sorts the index (stably: ties keep file order), then
//! makes the jobs in that order: Philly's from the small records the first pass kept,
//! canonical's and ITP's by reading their rows again at their byte offset. See
//! docs/traces-and-formats.md ("Streamed reading") for the memory each takes.
//!
//! openb and sacct are read whole (their imports look across rows: sacct joins a job's
//! steps and components, openb sums what it skipped): [`stream_jobs`] says so, and the caller
//! reads them with [`crate::load`].

use crate::canonical::CanonicalRows;
use crate::error::TraceError;
use crate::itp::{ItpRows, stable_order};
use crate::philly::{Parsed, PhillyRows};
use crate::rows::{Row, Rows, Unknown};
use crate::{Format, itp, philly};
use sim::JobSpec;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use std::sync::Arc;

/// How a stream treats a file whose rows are not in submission order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Order {
    /// The file must be in submit order (ties in any order; they keep file order): a job
    /// submitted before the job above it ends the stream with an error naming both lines and
    /// both times. One pass, one job in memory.
    Sorted,
    /// Sort first: one pass indexes the jobs (a few bytes each), then they are made in submit
    /// order, ties in file order, as [`crate::load`] orders them.
    Sort,
}

/// A trace's jobs, one at a time, in submit order (ties in file order): what
/// `traces::load(path, format)?.workload.jobs()` holds, without holding it. Made by
/// [`stream_jobs`] or [`stream_sorted`].
///
/// An error (a bad row, a job that fails the simulator's checks, a job out of order) is the
/// last item: the stream ends after it. A file with a header and no rows gives the
/// whole-file reader's error (`no jobs: the file has a header but no rows`).
pub struct JobStream {
    file: String,
    source: Source,
    /// Check each job as [`sim::Workload::new`] does (canonical: jobs of many shapes).
    check: bool,
    /// Jobs given so far.
    given: u64,
    /// Nothing more to give (after an error or the end).
    done: bool,
}

/// Where a stream's jobs come from.
enum Source {
    /// [`Order::Sorted`]: the file's rows, front to back.
    Rows(Box<InOrder>),
    /// [`Order::Sort`] of Philly: the records of every row, and the order to make them in.
    Records(Box<Records>),
    /// [`Order::Sort`] of canonical and ITP: each job's rows read again.
    Reread(Box<Reread>),
}

/// Philly's records, and the order to make their jobs in.
struct Records {
    philly: PhillyRows,
    parsed: Vec<Parsed>,
    order: std::vec::IntoIter<usize>,
}

type Reader = Box<dyn Read + Send>;

/// Reads a file's rows in file order into jobs.
struct InOrder {
    rows: Rows<Reader>,
    parser: Parser,
    /// The job the last row closed, to give next.
    ready: Option<JobSpec>,
    /// The error to give after it.
    pending: Option<TraceError>,
    /// The rows are all read.
    ended: bool,
    /// The last job started: its first line, submit time, and that time as the file wrote it.
    last: Option<(u64, u64, String)>,
}

/// One format's rows into jobs, a job handed out when the row after it starts another (or
/// the rows end), as canonical's rows close a job.
enum Parser {
    Canonical(Box<CanonicalRows>),
    Itp(ItpRows, Option<JobSpec>),
    Philly(PhillyRows, Option<JobSpec>),
}

impl Parser {
    /// Reads one row: the job it closed, and the submit time (ms) of the job it started.
    fn add(&mut self, row: &Row<'_>) -> Result<(Option<JobSpec>, Option<u64>), TraceError> {
        match self {
            Parser::Canonical(canonical) => {
                let closed = canonical.add(row)?;
                Ok((closed, canonical.started_at(row.line)))
            }
            Parser::Itp(itp, current) => {
                let job = itp.parse(row)?;
                let submit = job.submit.as_ms();
                Ok((current.replace(job), Some(submit)))
            }
            Parser::Philly(philly, current) => {
                let parsed = philly.parse(row)?;
                let job = philly.job(&parsed);
                let submit = job.submit.as_ms();
                Ok((current.replace(job), Some(submit)))
            }
        }
    }

    /// The last job, at the end of the rows.
    fn finish(&mut self, file: &str) -> Result<Option<JobSpec>, TraceError> {
        match self {
            Parser::Canonical(canonical) => canonical.finish(file),
            Parser::Itp(_, current) | Parser::Philly(_, current) => Ok(current.take()),
        }
    }

    fn submit_column(&self) -> usize {
        match self {
            Parser::Canonical(canonical) => canonical.submit_column(),
            Parser::Itp(itp, _) => itp.submit_column(),
            Parser::Philly(philly, _) => philly.submit_column(),
        }
    }

    /// A parser for rows this one read, read again from a job's first row.
    fn rereading(&self) -> Parser {
        match self {
            Parser::Canonical(canonical) => Parser::Canonical(Box::new(canonical.rereading())),
            Parser::Itp(itp, _) => Parser::Itp(itp.rereading(), None),
            Parser::Philly(..) => unreachable!("Philly is sorted from its records, not re-read"),
        }
    }

    /// The parser of `format` for the file `rows` reads (its header read), or the header's error.
    fn new<R: Read>(format: Format, rows: &Rows<R>) -> Result<Parser, TraceError> {
        let missing = || rows.header_error("the header lacks a column the format needs".into());
        match format {
            Format::Canonical => Ok(Parser::Canonical(Box::new(CanonicalRows::new(rows)?))),
            Format::Itp => {
                let c = rows.columns(itp::KNOWN, Unknown::Ignore)?;
                Ok(Parser::Itp(ItpRows::new(&c).ok_or_else(missing)?, None))
            }
            Format::Philly => {
                let c = rows.columns(philly::KNOWN, Unknown::Ignore)?;
                Ok(Parser::Philly(PhillyRows::new(&c).ok_or_else(missing)?, None))
            }
            Format::Openb | Format::Sacct(_) => Err(read_whole(rows.file(), format)),
        }
    }
}

/// The error for a format that is not streamed.
fn read_whole(file: &str, format: Format) -> TraceError {
    TraceError::file(
        file,
        format!(
            "the {} format is read whole, not streamed (its import looks across rows); streamed formats \
             are canonical, itp and philly: read this trace with traces::load",
            format.name()
        ),
    )
}

/// Canonical and ITP jobs made in sorted order from their rows, read again.
struct Reread {
    file: Arc<File>,
    header: Arc<[String]>,
    /// Each job's first row, by the job's place in the file: its offset and its line.
    index: Vec<(u64, u64)>,
    order: std::vec::IntoIter<usize>,
    /// A parser of the format, for each new reading.
    parser: Parser,
    /// The reading under way, and the place in the file of the job it would close next.
    reading: Option<(Rows<Reader>, Parser, usize)>,
}

/// Bytes read at a time when reading rows again after a seek: a job's rows, and the next
/// few jobs' (read on without a seek when the next job in order is the next in the file).
const REREAD_CHUNK: usize = 8 * 1024;

/// Streams the jobs of the trace at `path` (a jobs file, or for [`Format::Canonical`] a
/// canonical trace directory, whose `jobs.csv` it reads; its other files are the caller's to
/// load). openb and sacct are not streamed: an error says so, and [`Format::streams`] tells
/// beforehand.
///
/// Errors found before the first job can be given come here: the file cannot be opened, its
/// header is wrong, and with [`Order::Sort`] any row's error (every row is read to sort).
/// The rest come from the stream, as its last item.
pub fn stream_jobs(path: &Path, format: Format, order: Order) -> Result<JobStream, TraceError> {
    let name = path.display().to_string();
    if !format.streams() {
        return Err(read_whole(&name, format));
    }
    let path = if path.is_dir() {
        if format != Format::Canonical {
            return Err(TraceError::file(&name, format!("is a directory; the {format} format reads one CSV file")));
        }
        let jobs = path.join("jobs.csv");
        if !jobs.is_file() {
            return Err(TraceError::file(
                &name,
                "the trace directory has no jobs.csv (cluster.csv, events.csv, queues.csv and datasets.csv are \
                 optional)",
            ));
        }
        jobs
    } else {
        path.to_owned()
    };
    let name = path.display().to_string();
    let open = || File::open(&path).map_err(|e| TraceError::io(&name, e.to_string()));
    match order {
        Order::Sorted => stream_sorted(open()?, &name, format),
        Order::Sort => sort(open()?, open()?, &name, format),
    }
}

/// Streams the jobs of a jobs file in submit order ([`Order::Sorted`]) from any reader (stdin,
/// memory); `file` names it in errors.
pub fn stream_sorted<R: Read + Send + 'static>(source: R, file: &str, format: Format) -> Result<JobStream, TraceError> {
    if !format.streams() {
        return Err(read_whole(file, format));
    }
    let rows = Rows::open(Box::new(source) as Reader, file)?;
    let parser = Parser::new(format, &rows)?;
    let in_order = InOrder { rows, parser, ready: None, pending: None, ended: false, last: None };
    Ok(JobStream::new(file, format, Source::Rows(Box::new(in_order))))
}

/// [`Order::Sort`]: reads every row of `first` (checking it, and keeping an index or Philly's
/// records), sorts, and makes a stream that reads `again` (the same file) where it must.
fn sort(first: File, again: File, file: &str, format: Format) -> Result<JobStream, TraceError> {
    let mut rows = Rows::open(Box::new(first) as Reader, file)?;
    let mut parser = Parser::new(format, &rows)?;
    if let Parser::Philly(philly, _) = &mut parser {
        let mut parsed = Vec::new();
        while let Some(row) = rows.next_row() {
            parsed.push(philly.parse(&row?)?);
        }
        no_jobs(parsed.is_empty(), file)?;
        let order = stable_order(parsed.iter().map(|p| p.submit_ms)).into_iter();
        let Parser::Philly(philly, _) = parser else { unreachable!() };
        return Ok(JobStream::new(file, format, Source::Records(Box::new(Records { philly, parsed, order }))));
    }
    let mut index = Vec::new();
    let mut submits = Vec::new();
    while let Some(row) = rows.next_row() {
        let row = row?;
        if let (_, Some(submit)) = parser.add(&row)? {
            index.push((row.offset, row.line));
            submits.push(submit);
        }
    }
    parser.finish(file)?;
    no_jobs(index.is_empty(), file)?;
    let order = stable_order(submits.iter().copied()).into_iter();
    drop(submits);
    let parser = parser.rereading();
    let header = rows.shared_header();
    let reread = Reread { file: Arc::new(again), header, index, order, parser, reading: None };
    Ok(JobStream::new(file, format, Source::Reread(Box::new(reread))))
}

/// The whole-file reader's error for a file without jobs.
fn no_jobs(empty: bool, file: &str) -> Result<(), TraceError> {
    if empty { Err(TraceError::file(file, "no jobs: the file has a header but no rows")) } else { Ok(()) }
}

impl Format {
    /// Whether [`stream_jobs`] streams this format (canonical, ITP, Philly); the others are
    /// read whole with [`crate::load`].
    pub fn streams(self) -> bool {
        matches!(self, Format::Canonical | Format::Itp | Format::Philly)
    }
}

impl JobStream {
    fn new(file: &str, format: Format, source: Source) -> JobStream {
        let check = format == Format::Canonical;
        JobStream { file: file.to_owned(), source, check, given: 0, done: false }
    }

    /// How many jobs the stream has given so far.
    pub fn jobs_given(&self) -> u64 {
        self.given
    }

    /// `job`, checked as every job is (`JobSpec::check`); the error worded as the
    /// whole-file reader words it (`itp::finish`).
    fn checked(&mut self, job: JobSpec) -> Result<JobSpec, TraceError> {
        if !self.check {
            debug_assert!(job.check().is_ok(), "a Philly or ITP job the simulator refuses");
            return Ok(job);
        }
        job.check().map_err(|e| TraceError::file(&self.file, e.0))?;
        Ok(job)
    }

    /// The next job from the source, unchecked; `None` at the end.
    fn next_job(&mut self) -> Option<Result<JobSpec, TraceError>> {
        match &mut self.source {
            Source::Rows(in_order) => in_order.next_job(&self.file),
            Source::Records(records) => {
                let Records { philly, parsed, order } = &mut **records;
                order.next().and_then(|i| parsed.get(i)).map(|p| Ok(philly.job(p)))
            }
            Source::Reread(reread) => reread.next_job(&self.file),
        }
    }
}

impl Iterator for JobStream {
    type Item = Result<JobSpec, TraceError>;

    fn next(&mut self) -> Option<Result<JobSpec, TraceError>> {
        if self.done {
            return None;
        }
        let item = match self.next_job() {
            Some(Ok(job)) => self.checked(job),
            Some(Err(e)) => Err(e),
            None => {
                self.done = true;
                return no_jobs(self.given == 0, &self.file).err().map(Err);
            }
        };
        self.done = item.is_err();
        self.given += u64::from(item.is_ok());
        Some(item)
    }
}

impl InOrder {
    fn next_job(&mut self, file: &str) -> Option<Result<JobSpec, TraceError>> {
        loop {
            if let Some(job) = self.ready.take() {
                return Some(Ok(job));
            }
            if let Some(e) = self.pending.take() {
                return Some(Err(e));
            }
            if self.ended {
                return None;
            }
            match self.rows.next_row() {
                None => {
                    self.ended = true;
                    match self.parser.finish(file) {
                        Ok(job) => self.ready = job,
                        Err(e) => self.pending = Some(e),
                    }
                }
                Some(Err(e)) => {
                    self.ended = true;
                    self.pending = Some(e);
                }
                Some(Ok(row)) => match self.parser.add(&row) {
                    Err(e) => {
                        self.ended = true;
                        self.pending = Some(e);
                    }
                    Ok((closed, started)) => {
                        self.ready = closed;
                        if let Some(submit) = started {
                            let text = row.text(self.parser.submit_column()).unwrap_or_default();
                            match &mut self.last {
                                Some((line, before, before_text)) if submit < *before => {
                                    self.ended = true;
                                    self.pending = Some(TraceError::row(
                                        file,
                                        row.line,
                                        format!(
                                            "submitted at {text}, before line {line}'s {before_text}: the trace is \
                                             not in submission order; sort it first (simulate --sort) or give it \
                                             sorted"
                                        ),
                                    ));
                                }
                                Some((line, before, before_text)) => {
                                    *line = row.line;
                                    *before = submit;
                                    before_text.clear();
                                    before_text.push_str(text);
                                }
                                None => self.last = Some((row.line, submit, text.to_owned())),
                            }
                        }
                    }
                },
            }
        }
    }
}

impl Reread {
    fn next_job(&mut self, file: &str) -> Option<Result<JobSpec, TraceError>> {
        let place = self.order.next()?;
        Some(self.job_at(place, file))
    }

    /// The job at `place` in the file, read from its rows: read on where the last job read
    /// ended, if this one is next in the file, else after a seek to its first row.
    fn job_at(&mut self, place: usize, file: &str) -> Result<JobSpec, TraceError> {
        let (offset, line) = self.index.get(place).copied().unwrap_or_default();
        let (mut rows, mut parser) = match self.reading.take() {
            Some((rows, parser, next)) if next == place => (rows, parser),
            _ => {
                // The reading before is dropped: it shares the file's cursor.
                let mut source = Arc::clone(&self.file);
                source.seek(SeekFrom::Start(offset)).map_err(|e| TraceError::io(file, e.to_string()))?;
                let rows = Rows::resume(Box::new(source) as Reader, file, self.header.clone(), line, REREAD_CHUNK);
                (rows, self.parser.rereading())
            }
        };
        let job = loop {
            match rows.next_row() {
                Some(row) => {
                    if let (Some(job), _) = parser.add(&row?)? {
                        break Some(job);
                    }
                }
                None => break parser.finish(file)?,
            }
        };
        let job = job.ok_or_else(|| TraceError::file(file, "the file changed while it was streamed"))?;
        self.reading = Some((rows, parser, place + 1));
        Ok(job)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_can_go_to_another_thread() {
        fn send_static<T: Send + 'static>() {}
        send_static::<JobStream>();
    }

    fn sorted(text: &'static str, format: Format) -> Vec<Result<JobSpec, String>> {
        match stream_sorted(text.as_bytes(), "t.csv", format) {
            Ok(stream) => stream.map(|j| j.map_err(|e| e.to_string())).collect(),
            Err(e) => vec![Err(e.to_string())],
        }
    }

    #[test]
    fn a_job_before_the_one_above_it_ends_the_stream_after_that_one() {
        let items = sorted(
            "job_id,task_id,submit_s,duration_s,gpus\na,0,1,5,1\nb,x,2.5,5,1\nb,y,2.500,5,1\nc,0,2,5,1\nd,0,9,5,1\n",
            Format::Canonical,
        );
        let names: Vec<&str> = items.iter().filter_map(|j| j.as_ref().ok()).map(|j| j.name.as_str()).collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(
            items.last().and_then(|j| j.as_ref().err()).map(String::as_str),
            Some(
                "t.csv:5: submitted at 2, before line 3's 2.5: the trace is not in submission order; sort it \
                 first (simulate --sort) or give it sorted"
            )
        );
        assert_eq!(items.len(), 3);
    }

    #[test]
    fn equal_times_keep_file_order_and_an_empty_file_has_no_jobs() {
        let items = sorted("job_id,submission_time,duration,num_gpu\nb,5,1,1\na,5,1,1\nc,6,1,1\n", Format::Itp);
        let names: Vec<String> = items.into_iter().map(|j| j.unwrap().name.to_string()).collect();
        assert_eq!(names, ["b", "a", "c"]);
        assert_eq!(
            sorted("job_id,submission_time,duration,num_gpu\n", Format::Itp),
            [Err("t.csv: no jobs: the file has a header but no rows".to_owned())]
        );
    }

    #[test]
    fn openb_and_sacct_are_read_whole() {
        for format in [Format::Openb, Format::Sacct(crate::sacct::SacctClock::Naive)] {
            let e = stream_jobs(Path::new("pods.csv"), format, Order::Sort).err().unwrap().to_string();
            assert!(
                e.starts_with(&format!("pods.csv: the {} format is read whole, not streamed", format.name())),
                "{e}"
            );
            assert!(!format.streams());
        }
    }
}
