//! schedlab's own job file, `jobs.csv` (specified for users in traces/FORMAT.md): one row per
//! task, tasks of a job on consecutive rows. Reading is strict (unknown columns and conflicting
//! rows are errors) so that nothing a user wrote is silently dropped; writing is exact, so
//! `read(write(w)) == w` for every workload the writer accepts.

use crate::error::{Sink, TraceError, first_error};
use crate::itp::finish;
use crate::job_builder::{
    DepResolver, FieldError, GPU_MILLI_EXPECTED, GPUS_EXPECTED, JobFields, MAX_TASK_GPUS, TaskFields, duplicate_task,
    gpus_per_node_expected,
};
use crate::names::{NameIndex, same_text};
use crate::rows::{Column, FieldResult, Row, Rows, Unknown, parse_u32};
use crate::timeparse::MAX_SECONDS;
use sim::{DepKind, JobSpec, SimDuration, SimTime, TaskSpec, Window, Workload};
use std::collections::BTreeMap;
use std::io::{Read, Write};

/// The columns of `jobs.csv`, in the order the writer puts them.
pub const JOB_COLUMNS: [&str; 27] = [
    "job_id",
    "task_id",
    "submit_s",
    "duration_s",
    "gpus",
    "gpu_milli",
    "gpu_type",
    "single_node",
    "gpus_per_node",
    "estimate_s",
    "queue",
    "checkpoint_s",
    "restart_overhead_s",
    "deadline_s",
    "priority",
    "depends_on",
    "not_before_s",
    "not_after_s",
    "dataset",
    "speeds",
    "cancel_s",
    "exit_code",
    "checkpoint_cost_s",
    "account",
    "user",
    "qos",
    "co_start",
];

const KNOWN: &[Column] = &[
    Column { name: "job_id", required: true },
    Column { name: "task_id", required: false },
    Column { name: "submit_s", required: true },
    Column { name: "duration_s", required: true },
    Column { name: "gpus", required: true },
    Column { name: "gpu_milli", required: false },
    Column { name: "gpu_type", required: false },
    Column { name: "single_node", required: false },
    Column { name: "gpus_per_node", required: false },
    Column { name: "estimate_s", required: false },
    Column { name: "queue", required: false },
    Column { name: "checkpoint_s", required: false },
    Column { name: "restart_overhead_s", required: false },
    Column { name: "deadline_s", required: false },
    Column { name: "priority", required: false },
    Column { name: "depends_on", required: false },
    Column { name: "not_before_s", required: false },
    Column { name: "not_after_s", required: false },
    Column { name: "dataset", required: false },
    Column { name: "speeds", required: false },
    Column { name: "cancel_s", required: false },
    Column { name: "exit_code", required: false },
    Column { name: "checkpoint_cost_s", required: false },
    Column { name: "account", required: false },
    Column { name: "user", required: false },
    Column { name: "qos", required: false },
    Column { name: "co_start", required: false },
];

/// Column indexes in the file at hand (`None`: the optional column is absent).
#[derive(Clone)]
struct Cols {
    job: usize,
    task: Option<usize>,
    submit: usize,
    duration: usize,
    gpus: usize,
    gpu_milli: Option<usize>,
    gpu_type: Option<usize>,
    single_node: Option<usize>,
    gpus_per_node: Option<usize>,
    estimate: Option<usize>,
    queue: Option<usize>,
    checkpoint: Option<usize>,
    restart_overhead: Option<usize>,
    deadline: Option<usize>,
    priority: Option<usize>,
    depends_on: Option<usize>,
    not_before: Option<usize>,
    not_after: Option<usize>,
    dataset: Option<usize>,
    speeds: Option<usize>,
    cancel: Option<usize>,
    exit_code: Option<usize>,
    checkpoint_cost: Option<usize>,
    account: Option<usize>,
    user: Option<usize>,
    qos: Option<usize>,
    co_start: Option<usize>,
}

/// Reads a canonical `jobs.csv` from `source`; `file` names it in errors.
pub fn read_jobs_csv<R: Read>(source: R, file: &str) -> Result<Workload, TraceError> {
    first_error(file, |sink| read_jobs_into(source, file, sink))
}

/// The reading path shared by `load` (first error) and `validate` (many errors): bad rows are
/// reported to `sink` and skipped; `None` when the file cannot be read on.
pub(crate) fn read_jobs_into<R: Read>(source: R, file: &str, sink: &mut Sink) -> Option<Workload> {
    let mut rows = sink.ok(Rows::open(source, file))?;
    let cols = sink.ok(Cols::of(&rows))?;
    let mut builder = Builder::default();
    let mut jobs = Vec::new();
    rows.parse_all(sink, |row| {
        jobs.extend(builder.add(row, &cols)?);
        Ok(())
    })?;
    match builder.finish(rows.file()) {
        Ok(last) => jobs.extend(last),
        Err(e) => {
            sink.push(e);
            return None;
        }
    }
    finish(jobs, rows.file(), sink)
}

impl Cols {
    /// The columns of the file `rows` reads, from its header; an error names a header that
    /// is another format's.
    fn of<R: Read>(rows: &Rows<R>) -> Result<Cols, TraceError> {
        let c = match rows.columns(KNOWN, Unknown::Refuse) {
            Ok(c) => c,
            Err(e) => {
                // Another format's header read as canonical (the default --format): name it.
                let hint = crate::format_of_header(rows.header()).map(|format| {
                    rows.header_error(format!(
                        "this header is {}'s, not the canonical format's: give --format {}",
                        format,
                        format.name()
                    ))
                });
                return Err(hint.unwrap_or(e));
            }
        };
        let required = |i: usize| c[i].ok_or_else(|| rows.header_error(format!("no column `{}`", KNOWN[i].name)));
        Ok(Cols {
            job: required(0)?,
            task: c[1],
            submit: required(2)?,
            duration: required(3)?,
            gpus: required(4)?,
            gpu_milli: c[5],
            gpu_type: c[6],
            single_node: c[7],
            gpus_per_node: c[8],
            estimate: c[9],
            queue: c[10],
            checkpoint: c[11],
            restart_overhead: c[12],
            deadline: c[13],
            priority: c[14],
            depends_on: c[15],
            not_before: c[16],
            not_after: c[17],
            dataset: c[18],
            speeds: c[19],
            cancel: c[20],
            exit_code: c[21],
            checkpoint_cost: c[22],
            account: c[23],
            user: c[24],
            qos: c[25],
            co_start: c[26],
        })
    }
}

/// The one parser of `jobs.csv` rows, for the whole-file reader and the stream: the header's
/// columns and the job the rows are building.
pub(crate) struct CanonicalRows {
    cols: Cols,
    builder: Builder,
}

impl CanonicalRows {
    /// The parser of the file `rows` reads, from its header.
    pub(crate) fn new<R: Read>(rows: &Rows<R>) -> Result<CanonicalRows, TraceError> {
        Ok(CanonicalRows { cols: Cols::of(rows)?, builder: Builder::default() })
    }

    /// The same parser for rows read again from a job's first row, after this one read them:
    /// without the check that each job id is new (each is, and the ids it holds would be
    /// the file's).
    pub(crate) fn rereading(&self) -> CanonicalRows {
        CanonicalRows { cols: self.cols.clone(), builder: Builder { seen: None, ..Builder::default() } }
    }

    /// The column of the submit time.
    pub(crate) fn submit_column(&self) -> usize {
        self.cols.submit
    }

    /// Reads one row: the job it closed, if it starts another (see [`Builder::add`]).
    pub(crate) fn add(&mut self, row: &Row<'_>) -> Result<Option<JobSpec>, TraceError> {
        self.builder.add(row, &self.cols)
    }

    /// The submit time of the job the rows are building, if its first row is `line`: the
    /// row read last started it.
    pub(crate) fn started_at(&self, line: u64) -> Option<u64> {
        self.builder.current.as_ref().filter(|_| self.builder.first_line == line).map(|job| job.submit.as_ms())
    }

    /// The last job, closed, at the end of the rows.
    pub(crate) fn finish(&mut self, file: &str) -> Result<Option<JobSpec>, TraceError> {
        self.builder.finish(file)
    }
}

/// Jobs as they are assembled from consecutive rows, one at a time.
struct Builder {
    /// The job the rows are building: the last one started.
    current: Option<JobSpec>,
    /// Line of its first row, to name it when a later row contradicts it.
    first_line: u64,
    /// Every job id seen so far with its first line, so a job that reappears after another
    /// job is caught. `None`: rows read again, checked the first time.
    seen: Option<NameIndex>,
    /// The current job's `depends_on` fields, resolved when its last row has been read (a
    /// task may name a task on a later row): (task index, line, column, text).
    deps: Vec<(usize, u64, usize, String)>,
    /// Whether the last job may have dependencies or a window: a task with a window was added
    /// to it, or `depends_on` names of it were resolved. False, it has none (what
    /// [`JobSpec::has_dependencies`] would answer, without asking it of every job as it closes).
    last_may_depend: bool,
}

impl Default for Builder {
    fn default() -> Builder {
        Builder { current: None, first_line: 0, seen: Some(NameIndex::new()), deps: Vec::new(), last_may_depend: false }
    }
}

impl Builder {
    /// Reads one row into the current job, or starts a new job with it: then the job before
    /// (closed, its dependencies resolved and checked) is returned. A row with an error
    /// changes nothing but what it says (see `dependency_errors_come_as_jobs_close`).
    fn add(&mut self, row: &Row<'_>, cols: &Cols) -> Result<Option<JobSpec>, TraceError> {
        // The cells' syntax here; which values a job may hold, the job builder's.
        let job_id = row.name_field(cols.job, "a job id")?;
        let submit_ms = row.seconds_ms(cols.submit)?;
        let work_ms = row.positive_seconds_ms(cols.duration)?;
        let gpus = parse_gpus(row, cols.gpus)?;
        let single_node = parse_flag(row, cols.single_node)?;
        let gpu_milli = parse_opt_u32(row, cols.gpu_milli, || GPU_MILLI_EXPECTED.to_owned())?;
        let gpus_per_node =
            parse_opt_u32(row, cols.gpus_per_node, || gpus_per_node_expected(gpus, gpu_milli.is_some(), single_node))?;
        let gpu_type = row.opt_text(cols.gpu_type)?;
        let estimate_ms = row.opt_positive_seconds_ms(cols.estimate)?;
        let queue = row.opt_text(cols.queue)?;
        let task_id = row.opt_text(cols.task)?;
        let checkpoint_ms = row.opt_seconds_ms(cols.checkpoint)?;
        let restart_overhead_ms = row.opt_seconds_ms(cols.restart_overhead)?;
        let checkpoint_cost_ms = row.opt_seconds_ms(cols.checkpoint_cost)?;
        let deadline_ms = row.opt_positive_seconds_ms(cols.deadline)?;
        let priority = parse_priority(row, cols.priority)?;
        let cancel_ms = row.opt_seconds_ms(cols.cancel)?;
        let exit_code = parse_exit_code(row, cols.exit_code)?;
        let depends_on = row.opt_text(cols.depends_on)?;
        let not_before_ms = row.opt_seconds_ms(cols.not_before)?;
        let not_after_ms = row.opt_seconds_ms(cols.not_after)?;
        let dataset = row.opt_text(cols.dataset)?;
        let speeds = row.opt_text(cols.speeds)?;
        let (account, user, qos) = (row.opt_text(cols.account)?, row.opt_text(cols.user)?, row.opt_text(cols.qos)?);
        let co_start = parse_flag(row, cols.co_start)?;
        let job = JobFields {
            name: job_id,
            submit_ms,
            queue: filled(queue),
            deadline_ms,
            priority,
            cancel_ms,
            account,
            user,
            qos,
        };
        job.check().map_err(|e| refused(row, cols, e))?;

        let continues = self.current.as_ref().is_some_and(|j| same_text(&j.name, job_id));
        // Hashed once, for the look-up here and the insertion of a new job below.
        let hash = self.seen.as_ref().filter(|_| !continues).map(|seen| seen.hash(job_id));
        if let (Some(hash), Some(seen)) = (hash, &self.seen)
            && let Some(first_line) = seen.get_hashed(hash, job_id)
        {
            return Err(TraceError::row(
                row.file(),
                row.line,
                format!(
                    "job `{job_id}` already appeared on lines starting at {first_line}, and another job came \
                     in between; all rows of a job must be consecutive"
                ),
            ));
        }
        if let (true, Some(job)) = (continues, &self.current) {
            let first = self.first_line;
            if job.submit.as_ms() != submit_ms {
                return Err(conflict(row, job_id, "submit_s", first));
            }
            if job.queue.as_deref().unwrap_or("") != queue {
                return Err(conflict(row, job_id, "queue", first));
            }
            if job.deadline.get().map(SimDuration::as_ms) != deadline_ms {
                return Err(conflict(row, job_id, "deadline_s", first));
            }
            if job.priority != priority {
                return Err(conflict(row, job_id, "priority", first));
            }
            if job.cancel.get().map(SimTime::as_ms) != cancel_ms {
                return Err(conflict(row, job_id, "cancel_s", first));
            }
            if job.co_start != co_start {
                return Err(conflict(row, job_id, "co_start", first));
            }
            let owner = job.owner.as_deref().cloned().unwrap_or_default();
            for (field, ours, theirs) in
                [("account", &owner.account, account), ("user", &owner.user, user), ("qos", &owner.qos, qos)]
            {
                if ours.as_str() != theirs {
                    return Err(conflict(row, job_id, field, first));
                }
            }
        }
        let position = if continues { self.current.as_ref().map_or(0, |j| j.tasks.len()) } else { 0 };
        // An empty task id is the task's 0-based position in its job: "0" for one-row jobs.
        // The writer writes that "0" out: made as a constant, not from the text.
        let task_name = match task_id {
            "" => position_name(position),
            "0" => position_name(0),
            text => text.into(),
        };
        let task = TaskFields {
            name: task_name,
            gpus,
            gpu_milli,
            gpu_type: filled(gpu_type),
            single_node,
            gpus_per_node,
            work_ms,
            estimate_ms,
            checkpoint_ms,
            restart_overhead_ms,
            checkpoint_cost_ms,
            not_before_ms,
            not_after_ms,
            dataset: filled(dataset),
            speeds: filled(speeds),
            exit_code,
        }
        .build(SimTime(submit_ms))
        .map_err(|e| refused(row, cols, e))?;
        let has_window = task.options().window != Window::default();
        if !continues {
            self.close_job(row.file())?;
        }
        if let (false, Some(column)) = (depends_on.is_empty(), cols.depends_on) {
            self.deps.push((position, row.line, column, depends_on.to_owned()));
        }
        match &mut self.current {
            Some(job) if continues => {
                if job.tasks.iter().any(|t| t.name == task.name) {
                    let e = duplicate_task(job_id);
                    return Err(row.error(cols.task.unwrap_or(cols.job), e.expected, &task.name));
                }
                job.tasks.push(task);
                self.last_may_depend |= has_window;
                Ok(None)
            }
            _ => {
                match (hash, &mut self.seen) {
                    (Some(hash), Some(seen)) => seen.insert_new(hash, job_id, row.line),
                    (None, Some(seen)) => seen.insert(job_id, row.line),
                    (_, None) => {}
                }
                self.first_line = row.line;
                self.last_may_depend = has_window;
                let mut spec = job.build([task].into()).map_err(|e| refused(row, cols, e))?;
                spec.co_start = co_start;
                Ok(self.current.replace(spec))
            }
        }
    }

    /// The last job, closed, at the end of the rows.
    fn finish(&mut self, file: &str) -> Result<Option<JobSpec>, TraceError> {
        self.close_job(file)?;
        Ok(self.current.take())
    }
}

impl Builder {
    /// Resolves the last job's `depends_on` names once all its rows are read, and refuses a
    /// dangling name (with its line) or a cycle (with its path and the job's first line).
    /// Inlined for the common job, which names no dependency and has no window: nothing to do.
    #[inline(always)]
    fn close_job(&mut self, file: &str) -> Result<(), TraceError> {
        if self.deps.is_empty() && !self.last_may_depend {
            return Ok(());
        }
        self.close_dag_job(file)
    }

    /// [`Builder::close_job`] of a job with dependencies or windows.
    #[inline(never)]
    fn close_dag_job(&mut self, file: &str) -> Result<(), TraceError> {
        let deps = std::mem::take(&mut self.deps);
        self.last_may_depend |= !deps.is_empty();
        let first_line = self.first_line;
        let Some(job) = self.current.as_mut() else { return Ok(()) };
        if !deps.is_empty() {
            // Each task found by name once per job, whatever its size.
            let resolver = DepResolver::new(&job.tasks);
            let mut resolved = Vec::with_capacity(deps.len());
            for (task, line, _column, text) in deps {
                // The field's items, `;`-separated.
                let found = resolver.resolve(text.split(';')).map_err(|e| {
                    TraceError::field(file, line, "depends_on", e.expected, e.found.as_deref().unwrap_or(&text))
                })?;
                resolved.push((task, found));
            }
            for (task, found) in resolved {
                job.tasks[task].deps = found;
            }
        }
        // Without dependencies or windows there is nothing for the DAG check to refuse, and
        // it builds a graph per job: skip it for the common case.
        if !job.has_dependencies() {
            return Ok(());
        }
        sim::dag::check_job(job).map_err(|e| TraceError::row(file, first_line, e.0))
    }
}

/// An optional text field: empty (or absent) is none.
fn filled(text: &str) -> Option<&str> {
    (!text.is_empty()).then_some(text)
}

/// A field the job builder refused, at this row: in its column, with the cell's text (or the
/// part of it at fault).
#[cold]
#[inline(never)]
fn refused(row: &Row<'_>, cols: &Cols, e: FieldError) -> TraceError {
    let column = match e.field {
        "job_id" => Some(cols.job),
        "task_id" => cols.task,
        "submit_s" => Some(cols.submit),
        "duration_s" => Some(cols.duration),
        "gpus" => Some(cols.gpus),
        "gpu_milli" => cols.gpu_milli,
        "gpu_type" => cols.gpu_type,
        "single_node" => cols.single_node,
        "gpus_per_node" => cols.gpus_per_node,
        "estimate_s" => cols.estimate,
        "queue" => cols.queue,
        "checkpoint_s" => cols.checkpoint,
        "restart_overhead_s" => cols.restart_overhead,
        "deadline_s" => cols.deadline,
        "priority" => cols.priority,
        "depends_on" => cols.depends_on,
        "not_before_s" => cols.not_before,
        "not_after_s" => cols.not_after,
        "dataset" => cols.dataset,
        "speeds" => cols.speeds,
        "cancel_s" => cols.cancel,
        "exit_code" => cols.exit_code,
        "checkpoint_cost_s" => cols.checkpoint_cost,
        _ => None,
    };
    match column {
        Some(column) => {
            let text = row.text(column).map(str::to_owned).unwrap_or_default();
            row.error(column, e.expected, e.found.as_deref().unwrap_or(&text))
        }
        None => TraceError::row(row.file(), row.line, format!("field `{}`: expected {}", e.field, e.expected)),
    }
}

/// `gpus`: plain digits; which counts a task may ask for, the job builder says.
#[inline]
fn parse_gpus(row: &Row<'_>, column: usize) -> FieldResult<u32> {
    match parse_u32(row.bytes(column)) {
        Some(n) => Ok(n),
        None => Err(gpus_error(row, column)),
    }
}

#[cold]
#[inline(never)]
fn gpus_error(row: &Row<'_>, column: usize) -> Box<TraceError> {
    match row.text(column) {
        Ok(text) => row.field_error(column, GPUS_EXPECTED, text),
        Err(not_text) => not_text,
    }
}

/// An optional whole number (`gpu_milli`, `gpus_per_node`): empty or absent, `None`; what
/// else than digits holds, `expected` says.
#[inline]
fn parse_opt_u32(row: &Row<'_>, column: Option<usize>, expected: impl Fn() -> String) -> FieldResult<Option<u32>> {
    let Some(column) = row.filled(column) else { return Ok(None) };
    let text = row.text(column)?;
    match parse_u32(text) {
        Some(n) => Ok(Some(n)),
        None => Err(row.field_error(column, expected(), text)),
    }
}

/// A task's position as its name: `0` for most tasks, so without the formatting machinery.
fn position_name(position: usize) -> sim::Name {
    if position == 0 {
        return sim::Name::const_new("0");
    }
    compact_str::format_compact!("{position}")
}

fn conflict(row: &Row<'_>, job_id: &str, field: &str, first_line: u64) -> TraceError {
    TraceError::row(
        row.file(),
        row.line,
        format!(
            "job `{job_id}`: `{field}` differs from the job's first row (line {first_line}); \
             every row of a job must have the same {field}"
        ),
    )
}

/// A job's priority: an integer (negative allowed), higher more urgent; empty or absent: 0.
fn parse_priority(row: &Row<'_>, column: Option<usize>) -> FieldResult<i32> {
    parse_integer(row, column, "an integer priority (higher runs first), e.g. 0, 10 or -5")
}

/// The exit code the task's program ends with: empty or absent, 0 (success).
fn parse_exit_code(row: &Row<'_>, column: Option<usize>) -> FieldResult<i32> {
    parse_integer(row, column, "an integer exit code (0: success), e.g. 0, 1 or 137")
}

/// An optional integer column: empty or absent, 0. Inlined for the common one digit; the
/// rest is parsed out of line.
#[inline(always)]
fn parse_integer(row: &Row<'_>, column: Option<usize>, expected: &str) -> FieldResult<i32> {
    let Some(column) = row.filled(column) else { return Ok(0) };
    match row.bytes(column) {
        // One digit (`0` nearly always) is what `parse` would make of it.
        &[digit @ b'0'..=b'9'] => Ok(i32::from(digit - b'0')),
        _ => parse_integer_text(row, column, expected),
    }
}

/// [`parse_integer`] of a field that is not one digit.
#[inline(never)]
fn parse_integer_text(row: &Row<'_>, column: usize, expected: &str) -> FieldResult<i32> {
    let text = row.text(column)?;
    text.parse().map_err(|_| row.field_error(column, expected, text))
}

/// `true`/`false` (any case), `1`/`0`, or empty (false): `single_node`, `co_start`.
fn parse_flag(row: &Row<'_>, column: Option<usize>) -> FieldResult<bool> {
    let Some(column) = column else {
        return Ok(false);
    };
    // Read as bytes (the words are ASCII); the text only for the error.
    let bytes = row.bytes(column);
    if bytes.is_empty() || bytes == b"0" || bytes.eq_ignore_ascii_case(b"false") {
        Ok(false)
    } else if bytes == b"1" || bytes.eq_ignore_ascii_case(b"true") {
        Ok(true)
    } else {
        let text = row.text(column)?;
        Err(row.field_error(column, "true, false, 1, 0 or an empty field", text))
    }
}

/// Seconds as the writer spells them: whole seconds as an integer (`600`), anything else with
/// exactly three decimals (`12.500`). Both parse back to the same milliseconds.
pub(crate) fn format_seconds(ms: u64) -> String {
    if ms.is_multiple_of(1000) { (ms / 1000).to_string() } else { format!("{}.{:03}", ms / 1000, ms % 1000) }
}

/// Writes `workload` as the canonical trace's input `jobs.csv` (all twenty-seven
/// [`JOB_COLUMNS`], one row per task, jobs in workload order); a run's per-job output table,
/// also named `jobs.csv`, is `reports::write_job_records_csv`'s. Refuses, before writing
/// anything, a workload that would not read back identically: duplicate or empty job/task
/// names, empty-but-present GPU type or queue, GPUs out of range, zero or out-of-range times (a
/// checkpoint interval or restart overhead of zero is fine).
pub fn write_trace_jobs_csv<W: Write>(workload: &Workload, out: W) -> Result<(), TraceError> {
    check_writable(workload)?;
    let io_error = |e: csv::Error| TraceError::io("jobs.csv output", e.to_string());
    let mut writer = csv::Writer::from_writer(out);
    writer.write_record(JOB_COLUMNS).map_err(io_error)?;
    for job in workload.jobs() {
        let submit = format_seconds(job.submit.as_ms());
        let owner = job.owner.as_deref().cloned().unwrap_or_default();
        for task in &job.tasks {
            let work = format_seconds(task.work.as_ms());
            let gpus = task.gpus.to_string();
            let gpu_milli = task.gpu_milli.map(|m| m.to_string()).unwrap_or_default();
            let seconds = |d: Option<SimDuration>| d.map(|d| format_seconds(d.as_ms())).unwrap_or_default();
            let estimate = seconds(task.estimate.get());
            writer
                .write_record([
                    job.name.as_str(),
                    task.name.as_str(),
                    &submit,
                    &work,
                    &gpus,
                    &gpu_milli,
                    task.gpu_type.as_deref().unwrap_or(""),
                    if task.single_node { "true" } else { "false" },
                    &task.gpus_per_node.map(|n| n.to_string()).unwrap_or_default(),
                    &estimate,
                    job.queue.as_deref().unwrap_or(""),
                    &seconds(task.options().checkpoint),
                    &seconds(task.options().restart_overhead),
                    &seconds(job.deadline.get()),
                    &job.priority.to_string(),
                    &depends_on_text(job, task),
                    &task.options().window.not_before.map(|t| format_seconds(t.as_ms())).unwrap_or_default(),
                    &task.options().window.not_after.map(|t| format_seconds(t.as_ms())).unwrap_or_default(),
                    task.options().dataset.as_deref().unwrap_or(""),
                    &speeds_text(&task.options().speeds),
                    &job.cancel.get().map(|t| format_seconds(t.as_ms())).unwrap_or_default(),
                    &task.exit_code.to_string(),
                    &seconds(task.options().checkpoint_cost),
                    owner.account.as_str(),
                    owner.user.as_str(),
                    owner.qos.as_str(),
                    if job.co_start { "true" } else { "false" },
                ])
                .map_err(io_error)?;
        }
    }
    writer.flush().map_err(|e| TraceError::io("jobs.csv output", e.to_string()))
}

/// What the `speeds` column (and live mode's `speeds` field) holds, for error messages.
pub const SPEEDS_EXPECTED: &str =
    "GPU types with this task's speed on each, TYPE=SPEED;... (speed > 0 with up to 3 decimals, each type once)";

/// `A100=2.5;V100=1` as types and speeds in thousandths (empty: none, the pools' speeds);
/// `None` if it is not that (see [`SPEEDS_EXPECTED`]).
pub fn parse_speeds(text: &str) -> Option<BTreeMap<String, u32>> {
    let mut speeds = BTreeMap::new();
    for item in text.split(';').map(str::trim).filter(|i| !i.is_empty()) {
        let (ty, speed) = item.split_once('=')?;
        let milli = crate::cluster_spec::parse_speed_milli(speed.trim())?;
        let ty = ty.trim();
        if ty.is_empty() || speeds.insert(ty.to_owned(), milli).is_some() {
            return None;
        }
    }
    Some(speeds)
}

/// `speeds` as the column spells it, types in order, speeds in shortest exact decimals.
fn speeds_text(speeds: &BTreeMap<String, u32>) -> String {
    speeds.iter().map(|(ty, &milli)| format!("{ty}={}", format_thousandths(milli.into()))).collect::<Vec<_>>().join(";")
}

/// `n` thousandths as the shortest decimal that reads back exactly: `2500` is `2.5`, `3000`
/// is `3`, `125` is `0.125` (the form the seconds and speed parsers take).
pub fn format_thousandths(n: u64) -> String {
    match n % 1000 {
        0 => (n / 1000).to_string(),
        frac => format!("{}.{frac:03}", n / 1000).trim_end_matches('0').to_string(),
    }
}

/// `task`'s dependencies as `depends_on` spells them (a bare name for `success`).
fn depends_on_text(job: &JobSpec, task: &TaskSpec) -> String {
    let items: Vec<String> = task
        .deps
        .iter()
        .map(|d| {
            let name = &job.tasks[d.upstream].name;
            match d.kind {
                DepKind::Success => name.to_string(),
                kind => format!("{name}:{}", kind.spelling()),
            }
        })
        .collect();
    items.join(";")
}

fn check_writable(workload: &Workload) -> Result<(), TraceError> {
    let refuse = |message: String| Err(TraceError::value("workload to write as jobs.csv", message));
    let max_ms = MAX_SECONDS * 1000;
    let mut names = BTreeMap::new();
    for (index, job) in workload.jobs().iter().enumerate() {
        let name = &job.name;
        if name.is_empty() {
            return refuse(format!("job {index} has an empty name"));
        }
        if let Some(other) = names.insert(name.as_str(), index) {
            return refuse(format!("jobs {other} and {index} are both named `{name}`; job ids must be unique"));
        }
        if job.submit.as_ms() > max_ms {
            return refuse(format!("job `{name}` is submitted after {MAX_SECONDS} s"));
        }
        if !job.deadline.get().is_none_or(|d| (1..=max_ms).contains(&d.as_ms())) {
            return refuse(format!("job `{name}`: the deadline must be 0.001..={MAX_SECONDS} s after submission"));
        }
        if job.queue.as_deref() == Some("") {
            return refuse(format!("job `{name}` has an empty queue name (use no queue instead)"));
        }
        for (t, task) in job.tasks.iter().enumerate() {
            let tname = &task.name;
            if tname.is_empty() {
                return refuse(format!("job `{name}` task {t} has an empty name"));
            }
            if job.tasks[..t].iter().any(|o| o.name == *tname) {
                return refuse(format!("job `{name}` has two tasks named `{tname}`"));
            }
            if !(1..=MAX_TASK_GPUS).contains(&task.gpus) {
                return refuse(format!("job `{name}` task `{tname}`: gpus must be 1..={MAX_TASK_GPUS}"));
            }
            // Workload::new refuses these; checked again so the file can never hold one.
            if task.gpu_milli.is_some_and(|m| !(1..=999).contains(&m.get()) || task.gpus != 1) {
                return refuse(format!("job `{name}` task `{tname}`: a GPU share must be 1..=999 milli-GPUs of 1 GPU"));
            }
            if task.gpus_per_node.is_some_and(|n| !task.gpus.is_multiple_of(n.get()) || task.gpu_milli.is_some()) {
                return refuse(format!("job `{name}` task `{tname}`: gpus_per_node must divide its whole GPUs"));
            }
            if task.gpu_type.as_deref() == Some("") {
                return refuse(format!("job `{name}` task `{tname}` has an empty GPU type (use none instead)"));
            }
            let in_range = |d: SimDuration| (1..=max_ms).contains(&d.as_ms());
            if !in_range(task.work) || !task.estimate.get().is_none_or(in_range) {
                return refuse(format!(
                    "job `{name}` task `{tname}`: duration and estimate must be 0.001..={MAX_SECONDS} s"
                ));
            }
            let at_most_max = |d: Option<SimDuration>| d.is_none_or(|d| d.as_ms() <= max_ms);
            if !at_most_max(task.options().checkpoint)
                || !at_most_max(task.options().restart_overhead)
                || !at_most_max(task.options().checkpoint_cost)
            {
                return refuse(format!(
                    "job `{name}` task `{tname}`: checkpoint interval, checkpoint cost and restart overhead must be \
                     0..={MAX_SECONDS} s"
                ));
            }
            if task.options().dataset.as_deref() == Some("") {
                return refuse(format!("job `{name}` task `{tname}` has an empty dataset name (use none instead)"));
            }
            let window = [task.options().window.not_before, task.options().window.not_after];
            if window.iter().flatten().any(|t| t.as_ms() > max_ms) {
                return refuse(format!("job `{name}` task `{tname}`: its window must lie within {MAX_SECONDS} s"));
            }
            if task.options().window.not_after.is_some_and(|t| t < job.submit) {
                return refuse(format!(
                    "job `{name}` task `{tname}`: its start window closes before the job's submission"
                ));
            }
            let referenced = job.tasks.iter().any(|o| o.deps.iter().any(|d| d.upstream == t));
            if referenced && tname.contains([':', ';']) {
                return refuse(format!(
                    "job `{name}` task `{tname}`: a task other tasks depend on cannot have `:` or `;` in its name \
                     (depends_on could not name it)"
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::num::NonZeroU16;

    fn read(text: &str) -> Result<Workload, TraceError> {
        read_jobs_csv(text.as_bytes(), "jobs.csv")
    }

    fn err(text: &str) -> String {
        read(text).expect_err("should be refused").to_string()
    }

    #[test]
    fn the_owner_columns_are_read_kept_per_job_and_written_back() {
        let text = "job_id,task_id,submit_s,duration_s,gpus,account,user,qos\n\
                    a,0,0,1,1,physics,ann,normal\na,1,0,1,1,physics,ann,normal\nb,0,1,1,1,,bob,\nc,0,2,1,1,,,\n";
        let w = read(text).unwrap();
        let owner = |i: usize| w.jobs()[i].owner.as_deref().cloned();
        let ann = sim::Owner { account: "physics".into(), user: "ann".into(), qos: "normal".into() };
        assert_eq!(owner(0), Some(ann));
        assert_eq!(owner(1), Some(sim::Owner { user: "bob".into(), ..sim::Owner::default() }));
        assert_eq!(owner(2), None, "no owner field given: no owner");
        let mut out = Vec::new();
        write_trace_jobs_csv(&w, &mut out).unwrap();
        assert_eq!(read_jobs_csv(out.as_slice(), "out.csv").unwrap(), w);
        let e = err("job_id,submit_s,duration_s,gpus,user\nj,0,1,1,ann\nj,0,1,1,bob\n");
        assert!(e.starts_with("jobs.csv:3: job `j`: `user` differs"), "{e}");
    }

    #[test]
    fn minimal_file_gives_single_task_jobs() {
        let w = read("job_id,submit_s,duration_s,gpus\nb,10,60.5,2\na,5,1,1\n").unwrap();
        assert_eq!(w.len(), 2);
        let a = &w.jobs()[0];
        assert_eq!((a.name.as_str(), a.submit, a.tasks[0].work), ("a", SimTime(5_000), SimDuration(1_000)));
        let b = &w.jobs()[1];
        assert_eq!(b.tasks[0].name, "0");
        assert_eq!(b.tasks[0].work, SimDuration(60_500));
        assert_eq!(b.tasks[0].gpus, 2);
        assert_eq!(b.queue, None);
        assert_eq!(b.tasks[0].estimate.get(), None);
        assert!(!b.tasks[0].single_node);
    }

    #[test]
    fn multi_task_jobs_group_consecutive_rows() {
        let text = "job_id,task_id,submit_s,duration_s,gpus,gpu_type,single_node,estimate_s,queue\n\
                    j,ps,0,100,1,,true,,q\n\
                    j,worker,0,100,8,V100,0,120,q\n\
                    k,,3,5,1,,,,\n";
        let w = read(text).unwrap();
        assert_eq!(w.len(), 2);
        let j = &w.jobs()[0];
        assert_eq!(j.tasks.len(), 2);
        assert_eq!(j.gpus(), 9);
        assert_eq!(j.queue.as_deref(), Some("q"));
        assert!(j.tasks[0].single_node);
        assert_eq!(j.tasks[1].gpu_type.as_deref(), Some("V100"));
        assert_eq!(j.tasks[1].estimate.get(), Some(SimDuration(120_000)));
        assert_eq!(w.task_count(), 3);
    }

    #[test]
    fn empty_task_ids_are_positions() {
        let w = read("job_id,task_id,submit_s,duration_s,gpus\nj,,0,1,1\nj,,0,1,1\n").unwrap();
        let names: Vec<_> = w.jobs()[0].tasks.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["0", "1"]);
    }

    #[test]
    fn field_errors_name_line_and_column() {
        assert_eq!(
            err("job_id,submit_s,duration_s,gpus\na,0,1,1\nb,0,abc,1\n"),
            "jobs.csv:3: field `duration_s`: expected a positive number of seconds (decimal digits, like 66 or 0.25), got \"abc\""
        );
        assert_eq!(
            err("job_id,submit_s,duration_s,gpus\na,1e3,1,1\n"),
            "jobs.csv:2: field `submit_s`: expected a plain decimal number of seconds (exponent notation such as 1e3 is not accepted; write 1000), got \"1e3\""
        );
        assert_eq!(
            err("job_id,submit_s,duration_s,gpus\na,0,1,0\n"),
            "jobs.csv:2: field `gpus`: expected a whole number of GPUs from 1 to 1000000 (the most a cluster may have), \
             got \"0\""
        );
        assert!(
            err("job_id,submit_s,duration_s,gpus\na,0,0,1\n")
                .starts_with("jobs.csv:2: field `duration_s`: expected a positive")
        );
        assert!(
            err("job_id,submit_s,duration_s,gpus\n,0,1,1\n")
                .starts_with("jobs.csv:2: field `job_id`: expected a job id")
        );
        assert!(
            err("job_id,submit_s,duration_s,gpus,single_node\na,0,1,1,yes\n")
                .starts_with("jobs.csv:2: field `single_node`")
        );
        assert!(
            err("job_id,submit_s,duration_s,gpus,estimate_s\na,0,1,1,-4\n")
                .starts_with("jobs.csv:2: field `estimate_s`")
        );
    }

    #[test]
    fn multi_task_conflicts_name_both_lines() {
        let e = err("job_id,submit_s,duration_s,gpus\nj,0,1,1\nj,5,1,1\n");
        assert!(e.starts_with("jobs.csv:3: job `j`: `submit_s` differs from the job's first row (line 2)"), "{e}");
        let e = err("job_id,submit_s,duration_s,gpus,queue\nj,0,1,1,a\nj,0,1,1,b\n");
        assert!(e.starts_with("jobs.csv:3: job `j`: `queue` differs"), "{e}");
        let e = err("job_id,task_id,submit_s,duration_s,gpus\nj,w,0,1,1\nj,w,0,1,1\n");
        assert_eq!(e, "jobs.csv:3: field `task_id`: expected a name not used before by a task of job `j`, got \"w\"");
        let e = err("job_id,submit_s,duration_s,gpus\nj,0,1,1\nk,0,1,1\nj,0,1,1\n");
        assert!(e.starts_with("jobs.csv:4: job `j` already appeared on lines starting at 2"), "{e}");
        // Equal submit times in different spellings are the same time.
        assert!(read("job_id,submit_s,duration_s,gpus\nj,5,1,1\nj,5.000,1,1\n").is_ok());
    }

    #[test]
    fn header_and_shape_errors() {
        let e = err("job_id,submit_s,duration_s,gpus,gpu\na,0,1,1,x\n");
        assert!(e.starts_with("jobs.csv:1: unknown column `gpu`"), "{e}");
        let e = err("job_id,submit_s,gpus\na,0,1\n");
        assert!(e.starts_with("jobs.csv:1: the header has no column `duration_s`"), "{e}");
        assert_eq!(err("job_id,submit_s,duration_s,gpus\n"), "jobs.csv: no jobs: the file has a header but no rows");
        assert_eq!(
            err("job_id,submit_s,duration_s,gpus\na,0,1\n"),
            "jobs.csv:2: expected 4 fields as in the header, got 3"
        );
    }

    #[test]
    fn writer_output_is_readable_and_exact() {
        let text = "job_id,task_id,submit_s,duration_s,gpus,gpu_milli,gpu_type,single_node,gpus_per_node,estimate_s,\
                    queue,checkpoint_s,restart_overhead_s,deadline_s,priority,depends_on,not_before_s,not_after_s,dataset,\
                    speeds,cancel_s,exit_code,checkpoint_cost_s,account,user,qos,co_start\n\
                    \"a,b\",0,0.5,600,1,,,false,,,,,,,0,,,,,,,0,,,,,false\n\
                    j,ps,1,0.001,1,250,A100,true,,7.250,q,0,30,86400,-3,w:failure,5,,imagenet,A100=2.5,90,0,0,lab,ann,,false\n\
                    j,w,1,2,8,,,false,4,,q,1800.500,0,86400,-3,,,100.250,,A100=3;V100=0.125,90,-9,45.500,lab,ann,,false\n\
                    k,a,2,10,1,,,false,,,,,,,0,,,,,,,137,,,,high,false\n\
                    k,b,2,10,4,,,true,4,,,,,,0,a;a:any;a:data=2.500;a:checkpoint=3,,,,,,0,,,,high,false\n";
        let w = read(text).unwrap();
        let mut out = Vec::new();
        write_trace_jobs_csv(&w, &mut out).unwrap();
        assert_eq!(String::from_utf8(out.clone()).unwrap(), text.replace("0.5,", "0.500,"));
        assert_eq!(read_jobs_csv(out.as_slice(), "again.csv").unwrap(), w);
    }

    #[test]
    fn gpus_per_node_divides_the_gang_and_agrees_with_single_node() {
        let head = "job_id,submit_s,duration_s,gpus,gpu_milli,single_node,gpus_per_node\n";
        let w = read(&format!("{head}a,0,1,16,,,8\nb,0,1,4,,true,4\nc,0,1,4,,,\n")).unwrap();
        let split: Vec<Option<u32>> = w.jobs().iter().map(|j| j.tasks[0].fixed_gpus_per_node()).collect();
        assert_eq!(split, [Some(8), Some(4), None]);
        assert_eq!(
            err(&format!("{head}a,0,1,12,,,8\n")),
            "jobs.csv:2: field `gpus_per_node`: expected a whole number that divides the task's 12 GPUs \
             (none: any split over nodes), got \"8\""
        );
        assert_eq!(
            err(&format!("{head}a,0,1,8,,true,4\n")),
            "jobs.csv:2: field `gpus_per_node`: expected 8 (all its GPUs: the task is single-node) or none, got \"4\""
        );
        assert!(err(&format!("{head}a,0,1,1,250,,1\n")).contains("expected no gpus_per_node for a share of one GPU"));
        assert!(err(&format!("{head}a,0,1,8,,,0\n")).contains("divides the task's 8 GPUs"));
    }

    #[test]
    fn cancels_are_job_times_and_exit_codes_task_integers() {
        let head = "job_id,task_id,submit_s,duration_s,gpus,cancel_s,exit_code\n";
        let w = read(&format!("{head}j,a,10,5,1,12.5,\nj,b,10,5,1,12.5,1\nk,,10,5,1,,\n")).unwrap();
        let cancels: Vec<Option<u64>> = w.jobs().iter().map(|j| j.cancel.get().map(SimTime::as_ms)).collect();
        assert_eq!(cancels, [Some(12_500), None]);
        let codes: Vec<i32> = w.jobs().iter().flat_map(|j| j.tasks.iter().map(|t| t.exit_code)).collect();
        assert_eq!(codes, [0, 1, 0]);
        assert_eq!(
            err(&format!("{head}j,a,10,5,1,9,\n")),
            "jobs.csv:2: field `cancel_s`: expected a cancel time at or after the job's submit_s, got \"9\""
        );
        assert!(err(&format!("{head}j,a,10,5,1,12,\nj,b,10,5,1,13,\n")).contains("`cancel_s` differs"));
        assert_eq!(
            err(&format!("{head}j,a,10,5,1,,oops\n")),
            "jobs.csv:2: field `exit_code`: expected an integer exit code (0: success), e.g. 0, 1 or 137, got \"oops\""
        );
    }

    /// A window that closed before its job was submitted would make the result depend on load
    /// (the task runs when there is room at once, fails when it waits): refused at load.
    #[test]
    fn a_start_window_closing_before_submission_is_refused() {
        let head = "job_id,task_id,submit_s,duration_s,gpus,not_before_s,not_after_s\n";
        assert_eq!(
            err(&format!("{head}j,a,10,5,1,,20\nj,b,10,5,1,,9.5\n")),
            "jobs.csv:3: field `not_after_s`: expected the end of the start window at or after the job's \
             submit_s (10), got \"9.5\""
        );
        let w = read(&format!("{head}j,a,10,5,1,,10\n")).unwrap();
        assert_eq!(w.jobs()[0].tasks[0].options().window.not_after, Some(SimTime(10_000)));
    }

    #[test]
    fn speeds_are_types_with_exact_decimals() {
        let head = "job_id,submit_s,duration_s,gpus,speeds\n";
        let w = read(&format!("{head}j,0,10,1,A100=2.5; V100 = 1.25\nk,0,10,1,\n")).unwrap();
        let speeds: Vec<Vec<(String, u32)>> = w
            .jobs()
            .iter()
            .map(|j| j.tasks[0].options().speeds.iter().map(|(t, &s)| (t.clone(), s)).collect())
            .collect();
        assert_eq!(speeds, [vec![("A100".into(), 2500), ("V100".into(), 1250)], vec![]]);
        for bad in ["A100", "A100=0", "A100=fast", "=2", "A100=2;A100=3"] {
            assert_eq!(
                err(&format!("{head}j,0,10,1,{bad}\n")),
                format!("jobs.csv:2: field `speeds`: expected {SPEEDS_EXPECTED}, got {bad:?}"),
                "{bad}"
            );
        }
    }

    #[test]
    fn priority_is_a_job_level_integer() {
        let head = "job_id,task_id,submit_s,duration_s,gpus,priority\n";
        let w = read(&format!("{head}j,a,0,10,1,7\nj,b,0,10,1,7\nk,,1,10,1,\nl,,2,10,1,-2\n")).unwrap();
        let priorities: Vec<i32> = w.jobs().iter().map(|j| j.priority).collect();
        assert_eq!(priorities, [7, 0, -2]);
        assert_eq!(
            err(&format!("{head}j,a,0,10,1,high\n")),
            "jobs.csv:2: field `priority`: expected an integer priority (higher runs first), e.g. 0, 10 or -5, \
             got \"high\""
        );
        assert!(err(&format!("{head}j,a,0,10,1,1\nj,b,0,10,1,2\n")).contains("`priority` differs"));
    }

    #[test]
    fn gpu_shares_are_one_gpu_and_999_milli_at_most() {
        let head = "job_id,task_id,submit_s,duration_s,gpus,gpu_milli\n";
        let w = read(&format!("{head}j,a,0,10,1,500\nj,b,0,10,4,\nk,,1,10,1,1\nl,,2,10,1,999\n")).unwrap();
        let milli: Vec<Option<u16>> =
            w.jobs().iter().flat_map(|j| j.tasks.iter().map(|t| t.gpu_milli.map(NonZeroU16::get))).collect();
        assert_eq!(milli, [Some(500), None, Some(1), Some(999)]);
        // Without the column every task takes whole GPUs.
        let w = read("job_id,submit_s,duration_s,gpus\na,0,1,1\n").unwrap();
        assert_eq!(w.jobs()[0].tasks[0].gpu_milli, None);

        assert_eq!(
            err(&format!("{head}j,a,0,10,1,1000\n")),
            "jobs.csv:2: field `gpu_milli`: expected a share of one GPU in milli-GPUs, 1 to 999; 1000 is a whole GPU: \
             give no gpu_milli for whole GPUs, got \"1000\""
        );
        assert_eq!(
            err(&format!("{head}j,a,0,10,1,10\nj,b,0,10,2,500\n")),
            "jobs.csv:3: field `gpu_milli`: expected no gpu_milli for a task of 2 GPUs: a GPU share is a share of \
             exactly one GPU (`gpus` = 1); multi-GPU tasks take whole GPUs, got \"500\""
        );
        // Past what a task holds (two bytes) too: refused, never truncated.
        for bad in ["0", "1001", "65535", "65536", "66036", "4294967296", "-5", "0.5", " 5", "x"] {
            let e = err(&format!("{head}j,a,0,10,1,{bad}\n"));
            assert!(e.starts_with("jobs.csv:2: field `gpu_milli`: expected a share of one GPU"), "{bad}: {e}");
        }
    }

    #[test]
    fn resilience_columns_are_optional_and_zero_means_none() {
        let head = "job_id,task_id,submit_s,duration_s,gpus,checkpoint_s,restart_overhead_s,deadline_s\n";
        let w = read(&format!("{head}j,a,5,100,1,600,30.5,7200\nj,b,5,100,1,0,0,7200\nk,,6,1,1,,,\n")).unwrap();
        let j = &w.jobs()[0];
        assert_eq!(j.deadline.get(), Some(SimDuration(7_200_000)));
        assert_eq!(
            (j.tasks[0].options().checkpoint, j.tasks[0].options().restart_overhead),
            (Some(SimDuration(600_000)), Some(SimDuration(30_500)))
        );
        // Zero is a value: checkpoint at every instant, no restart overhead; not the run default.
        assert_eq!(
            (j.tasks[1].options().checkpoint, j.tasks[1].options().restart_overhead),
            (Some(SimDuration(0)), Some(SimDuration(0)))
        );
        let k = &w.jobs()[1];
        assert_eq!(
            (k.deadline.get(), k.tasks[0].options().checkpoint, k.tasks[0].options().restart_overhead),
            (None, None, None)
        );

        let e = err(&format!("{head}j,a,5,100,1,,,7200\nj,b,5,100,1,,,3600\n"));
        assert!(e.starts_with("jobs.csv:3: job `j`: `deadline_s` differs from the job's first row (line 2)"), "{e}");
        let e = err(&format!("{head}j,a,5,100,1,,,7200\nj,b,5,100,1,,,\n"));
        assert!(e.contains("`deadline_s` differs"), "{e}");
        let e = err(&format!("{head}j,a,5,100,1,,,0\n"));
        assert!(e.starts_with("jobs.csv:2: field `deadline_s`: expected a positive"), "{e}");
        let e = err(&format!("{head}j,a,5,100,1,-1,,\n"));
        assert!(e.starts_with("jobs.csv:2: field `checkpoint_s`: expected a non-negative"), "{e}");
        let e = err(&format!("{head}j,a,5,100,1,,x,\n"));
        assert!(e.starts_with("jobs.csv:2: field `restart_overhead_s`"), "{e}");
    }

    #[test]
    fn writer_refuses_what_would_not_read_back() {
        let job = |name: &str| JobSpec::single(name, SimTime(0), 1, SimDuration(1_000));
        let w = Workload::new(vec![job("a"), job("a")]).unwrap();
        let e = write_trace_jobs_csv(&w, Vec::new()).unwrap_err().to_string();
        assert!(e.contains("both named `a`"), "{e}");
        let mut j = job("a");
        j.tasks[0].work = SimDuration(0);
        let w = Workload::new(vec![j]).unwrap();
        assert!(write_trace_jobs_csv(&w, Vec::new()).is_err());
        let mut j = job("a");
        j.queue = Some(Default::default());
        let w = Workload::new(vec![j]).unwrap();
        assert!(write_trace_jobs_csv(&w, Vec::new()).is_err());
        let mut j = job("a");
        j.deadline = SimDuration(0).into();
        let w = Workload::new(vec![j]).unwrap();
        assert!(write_trace_jobs_csv(&w, Vec::new()).unwrap_err().to_string().contains("deadline"));
        let mut j = job("a");
        j.tasks[0].options_mut().checkpoint = Some(SimDuration(u64::MAX));
        let w = Workload::new(vec![j]).unwrap();
        assert!(write_trace_jobs_csv(&w, Vec::new()).unwrap_err().to_string().contains("checkpoint"));
    }

    /// Every error of a file with dependency problems, as `validate` reports them.
    fn all_errors(text: &str) -> Vec<String> {
        let mut sink = Sink::new(100);
        let workload = read_jobs_into(text.as_bytes(), "jobs.csv", &mut sink);
        let mut seen: Vec<String> = sink.into_errors().iter().map(ToString::to_string).collect();
        seen.extend(workload.map(|w| format!("{} jobs", w.len())));
        seen
    }

    /// Dependencies are resolved and checked as each job closes, windows and all; a job that
    /// failed to close is checked again (with what was resolved of it) when the next job's
    /// row comes, and the rows that could not close it are skipped.
    #[test]
    fn dependency_errors_come_as_jobs_close() {
        let head = "job_id,task_id,submit_s,duration_s,gpus,depends_on,not_before_s\n";
        let text = format!(
            "{head}a,x,0,1,1,y,\na,y,0,1,1,zz,\nc,0,1,1,1,,\nc,1,1,1,1,,\n\
             d,p,2,1,1,q,\nd,q,2,1,1,p,\ne,0,3,1,1,,5\nf,0,4,1,1,,\ng,0,5,1,1,,\n"
        );
        assert_eq!(all_errors(&text), EXPECTED_DEPENDENCY_ERRORS);
        // A window that closes before it opens is refused at its row, by the job builder, and
        // the row skipped; a window alone still makes its job's close check it.
        let head = "job_id,task_id,submit_s,duration_s,gpus,depends_on,not_before_s,not_after_s\n";
        let text = format!("{head}i,0,1,1,1,,,\nj,a,2,1,1,,,\nj,b,2,1,1,a,3,4\nh,0,3,1,1,,9,8\nk,0,4,1,1,,,\n");
        let window = "jobs.csv:5: field `not_after_s`: expected the end of the start window at or after its start \
                      (not_before_s), got \"8\"";
        assert_eq!(all_errors(&text), [window, "3 jobs"]);
        assert_eq!(all_errors(&text.replace(",9,8", ",,")), ["4 jobs"]);
    }

    /// As the reader gave them before jobs tracked whether they may have dependencies.
    const EXPECTED_DEPENDENCY_ERRORS: [&str; 5] = [
        "jobs.csv:3: field `depends_on`: expected task names of this job (x, y), each with an optional \
         :kind, got \"zz\"",
        "jobs.csv:6: job `d`: its tasks' dependencies form a cycle: p -> q -> p",
        "jobs.csv:6: job `d`: its tasks' dependencies form a cycle: p -> q -> p",
        "jobs.csv:6: job `d`: its tasks' dependencies form a cycle: p -> q -> p",
        "jobs.csv:6: job `d`: its tasks' dependencies form a cycle: p -> q -> p",
    ];

    /// Numbers and flags are read from a field's bytes; one that is not UTF-8 is still
    /// refused as that, before its value is judged.
    #[test]
    fn fields_that_are_not_utf8_are_refused_as_such() {
        let head = "job_id,submit_s,duration_s,gpus,single_node,priority,exit_code\n";
        let good = ["j", "0", "1", "1", "true", "0", "0"];
        for column in 1..good.len() {
            for bad in [&b"\xff"[..], b"1\xff", b"\xc3"] {
                let mut data = head.as_bytes().to_vec();
                for (i, field) in good.iter().enumerate() {
                    data.extend_from_slice(if i == column { bad } else { field.as_bytes() });
                    data.push(if i + 1 == good.len() { b'\n' } else { b',' });
                }
                let e = read_jobs_csv(data.as_slice(), "jobs.csv").expect_err("should be refused").to_string();
                let name = head.trim_end().split(',').nth(column).unwrap_or_default();
                assert!(e.starts_with(&format!("jobs.csv:2: field `{name}`: expected UTF-8 text")), "{e}");
            }
        }
    }

    #[test]
    fn seconds_format_is_integer_or_three_decimals() {
        assert_eq!(format_seconds(600_000), "600");
        assert_eq!(format_seconds(12_500), "12.500");
        assert_eq!(format_seconds(1), "0.001");
        assert_eq!(format_seconds(0), "0");
    }
}
