//! Importer for Slurm accounting: the output of
//! `sacct --allusers --parsable2 --duplicates --format=<fields>` (see traces/FORMAT.md,
//! "Slurm sacct", for the field list to ask for and the subsets accepted).
//!
//! The mapping:
//!
//! - **Jobs and steps**: a row whose `JobID` has a `.` (`12.batch`, `12.extern`, `12.0`) is a
//!   step; it is folded into its job (counted, not replayed). An array task keeps its `JobID`
//!   (`100_3`) as its name; a heterogeneous job (`200+0`, `200+1`) becomes one job named `200`
//!   with one task per component.
//! - **Attempts**: with `--duplicates`, a requeued job has one row per attempt (earlier ones
//!   `REQUEUED`, `NODE_FAIL` or `PREEMPTED`). The job is submitted at its first attempt's
//!   `Submit`, eligible at its first `Eligible`, and replayed as its last attempt's work; the
//!   earlier ones are counted in the notes. A `NODE_FAIL` attempt is a fault, and the replay
//!   gets it as a node failure ([`node_fail`]: `trace import --failures-out`), which fails
//!   whatever job the replay put on that node. `PREEMPTED` and `REQUEUED` are Slurm's (or an
//!   operator's) decisions, not faults: the replay's policy makes its own, so the job waits
//!   for no requeue.
//! - **Times** are Slurm's local time (`SLURM_TIME_FORMAT=standard`: `YYYY-MM-DDTHH:MM:SS`),
//!   taken as a naive clock exactly as written, like Philly's: only differences matter to a
//!   replay, so no time zone is assumed (a dump across a daylight-saving change should be
//!   made with `TZ=UTC`, as scripts/slurm-dump.sh does). `Unknown` and `None` are "not
//!   happened". Work is `End - Start` of the last attempt (at least 1 ms), or its `Elapsed`
//!   where the two differ by whole hours (a local clock's daylight-saving jump; noted); `Eligible` later
//!   than `Submit` (a dependency, `--begin`, a held job) becomes the task's start window, so a
//!   replay cannot start it before Slurm could.
//! - **Estimate** is `Timelimit` (what Slurm's backfill uses); `UNLIMITED` is none.
//! - **States**: `COMPLETED` exits 0; `FAILED`, `OUT_OF_MEMORY`, `TIMEOUT`, `NODE_FAIL`,
//!   `PREEMPTED`, `BOOT_FAIL` and `DEADLINE` as the last attempt exit non-zero (the `ExitCode`
//!   when it is not 0, else 1) after their work; `CANCELLED by N` after the start is a cancel at
//!   `End` (work: the time limit, what it would have run); cancelled before it started, the job
//!   is kept (never dropped), cancelled at `End`, and counted (Slurm writes such a job's `Start`
//!   as its cancel time; an empty `AllocTRES` or `NodeList` `None assigned` says it never ran). `RUNNING`, `PENDING` and other
//!   unfinished states cannot be replayed: the row is skipped and named (line, reason) in the
//!   notes, as are rows without GPUs.
//! - **GPUs** are `gres/gpu` of `AllocTRES` (of `ReqTRES` for a job that never started), or
//!   the sum of its `gres/gpu:TYPE` counts where it has no `gres/gpu` (typed GPUs only); a
//!   `gres/gpu:TYPE` in `ReqTRES` (the user asked for a type) is the task's GPU type. `NNodes`
//!   1 is a single-node task, more is a gang over nodes with an even share on each node
//!   (`gpus_per_node`, as Slurm gives each node the same `--gres`) when the total divides evenly. `Partition` is the queue; `Priority`
//!   (unsigned 32-bit) becomes the job's priority shifted down by 2^31, which keeps its order. `Account`, `User` and `QOS` are the job's owner ([`sim::Owner`]), read by the `slurm` policy only.

mod clock;
mod node_fail;
pub(crate) mod table;

use crate::error::{Sink, TraceError, first_error};
use crate::itp::finish;
use crate::stats::grouped;
use sim::{JobSpec, SimDuration, SimTime, TaskSpec, Window, Workload};
use std::collections::BTreeMap;
use std::io::Read;
use table::{Row, Table, tres_gpu_type, tres_gpu_types, tres_gpus};

pub use clock::{Instant, SacctClock};
pub use node_fail::{NodeFailure, failure_events, load_failure_events};

/// The fields read, in this order, and whether every dump must have them.
const FIELDS: &[(&str, bool)] = &[
    ("JobID", true),
    ("Submit", true),
    ("Start", true),
    ("End", true),
    ("State", true),
    ("AllocTRES", false),
    ("ReqTRES", false),
    ("Eligible", false),
    ("Timelimit", false),
    ("ExitCode", false),
    ("NNodes", false),
    ("Partition", false),
    ("Priority", false),
    ("NodeList", false),
    ("Elapsed", false),
    ("Account", false),
    ("QOS", false),
    ("User", false),
];
/// The first of [`FIELDS`] that names the job's owner ([`sim::Owner`]).
const OWNER_FROM: usize = 15;

/// An imported sacct dump: the jobs, and what the import did to get them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SacctImport {
    pub workload: Workload,
    pub report: SacctReport,
    /// When Slurm first started each job that held GPUs (the earliest `Start` of any of its
    /// attempts and components), by job name, on the import's clock: what a replay's first
    /// starts compare with (a requeued job replays from its first attempt).
    pub recorded_starts: BTreeMap<String, SimTime>,
}

/// What a sacct import read, folded, kept specially or skipped.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SacctReport {
    /// Data rows read (jobs, steps and attempts).
    pub rows: u64,
    /// Step rows (`.batch`, `.extern`, `.0`) folded into their jobs.
    pub steps: u64,
    /// Jobs imported.
    pub jobs: u64,
    /// Imported jobs that were array tasks (`JobID` with `_`).
    pub array_tasks: u64,
    /// Imported heterogeneous jobs (several `+N` components).
    pub het_jobs: u64,
    /// Attempts before the last of requeued jobs, by the state they ended in.
    pub earlier_attempts: BTreeMap<String, u64>,
    /// Jobs cancelled before they started: kept, cancelled at `End`.
    pub cancelled_before_start: u64,
    /// Jobs cancelled while running: work = the time limit, cancelled at `End`.
    pub cancelled_running: u64,
    /// Jobs whose last attempt ended other than COMPLETED or CANCELLED, by state: exit non-zero.
    pub failed: BTreeMap<String, u64>,
    /// Jobs whose start window is their `Eligible` time (dependency, `--begin`).
    pub eligible_later: u64,
    /// Rows whose `ReqTRES` names GPUs of more than one type, which one task cannot ask for:
    /// (line, job, the types joined by `+`). Replayed on their GPU count of any type; the note
    /// names each job once.
    pub mixed_gpu_types: Vec<(u64, String, String)>,
    /// Times in the hour a change back from summer time repeats, read as its first pass
    /// (with `tz=` a time zone name; see [`SacctClock`]).
    pub ambiguous_times: u64,
    /// Rows whose `End - Start` differs from their `Elapsed` by whole hours (a local-time
    /// dump across a daylight-saving change): (line, job, span on the clock, Elapsed), in
    /// milliseconds. Their `End` is taken as `Start + Elapsed`.
    pub elapsed_mismatch: Vec<(u64, String, u64, u64)>,
    /// The clock the times were read on, for the notes.
    pub clock: SacctClock,
    /// Rows that could not be used: (line, reason).
    pub skipped: Vec<(u64, String)>,
    /// The owner fields present (`Account`, `QOS`, `User`): read into each job's owner, which
    /// only the `slurm` policy (fair share, QOS) reads.
    pub owner_fields: Vec<&'static str>,
    /// The node failures that `NODE_FAIL` attempts record, by time then node (see
    /// [`node_fail`]); [`failure_events`] numbers them on a cluster.
    pub node_failures: Vec<NodeFailure>,
}

impl SacctReport {
    /// One line per thing the import folded, changed or skipped, for stderr ([`crate::Trace::notes`]).
    pub fn notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let jobs = |n: u64| format!("{} job{}", grouped(n), if n == 1 { "" } else { "s" });
        if self.steps > 0 {
            notes.push(format!("folded {} step rows (batch, extern, srun steps) into their jobs", grouped(self.steps)));
        }
        if !self.earlier_attempts.is_empty() {
            let by: Vec<String> = self.earlier_attempts.iter().map(|(s, n)| format!("{n} {s}")).collect();
            notes.push(format!(
                "requeued jobs replayed as their last attempt, submitted at the first; earlier attempts: {}",
                by.join(", ")
            ));
        }
        if !self.node_failures.is_empty() {
            notes.push(node_fail::note(&self.node_failures));
        }
        if self.cancelled_before_start > 0 {
            notes.push(format!(
                "{} cancelled before starting: kept, cancelled at the End time",
                jobs(self.cancelled_before_start)
            ));
        }
        if self.cancelled_running > 0 {
            notes.push(format!(
                "{} cancelled while running: work = the time limit, cancelled at the End time",
                jobs(self.cancelled_running)
            ));
        }
        if !self.failed.is_empty() {
            let by: Vec<String> = self.failed.iter().map(|(s, n)| format!("{n} {s}")).collect();
            notes.push(format!("jobs that did not complete exit non-zero after their work: {}", by.join(", ")));
        }
        if self.eligible_later > 0 {
            notes.push(format!(
                "{} eligible after submit (dependency, --begin, hold) start no earlier than their Eligible time",
                jobs(self.eligible_later)
            ));
        }
        if !self.mixed_gpu_types.is_empty() {
            notes.push(self.mixed_gpu_types_note());
        }
        if self.ambiguous_times > 0 {
            notes.push(format!(
                "{} times fell in the hour repeated by a change back from summer time: read as its first pass",
                grouped(self.ambiguous_times)
            ));
        }
        if !self.elapsed_mismatch.is_empty() {
            notes.push(self.elapsed_note());
        }
        for (line, reason) in &self.skipped {
            notes.push(format!("skipped line {line}: {reason}"));
        }
        if !self.owner_fields.is_empty() {
            notes.push(format!(
                "read for the `slurm` policy's fair share and QOS only (other policies ignore them): {}",
                self.owner_fields.join(", ")
            ));
        }
        notes
    }
}

impl SacctReport {
    /// The error of a dump whose every job row was skipped: why, row by row (the first few).
    fn nothing_left(&self) -> String {
        let shown: Vec<String> =
            self.skipped.iter().take(5).map(|(line, reason)| format!("line {line}: {reason}")).collect();
        let more = self.skipped.len().saturating_sub(shown.len());
        let more = if more > 0 { format!("; and {} more", grouped(more as u64)) } else { String::new() };
        let rows = match self.rows {
            1 => "its one row was".to_owned(),
            n => format!("every one of its {} rows was", grouped(n)),
        };
        format!("no jobs: {rows} skipped ({}{more})", shown.join("; "))
    }

    /// The note on [`SacctReport::mixed_gpu_types`]: which jobs, and what the replay gives them.
    fn mixed_gpu_types_note(&self) -> String {
        // A requeued job has a row per attempt: each job is named once, at its first row.
        let mut seen = std::collections::BTreeSet::new();
        let firsts: Vec<_> = self.mixed_gpu_types.iter().filter(|(_, job, _)| seen.insert(job.as_str())).collect();
        let n = firsts.len();
        let shown: Vec<String> =
            firsts.iter().take(3).map(|(line, job, types)| format!("line {line}: job {job}, {types}")).collect();
        let more = if n > 3 { format!(" and {} more", grouped(n as u64 - 3)) } else { String::new() };
        let (jobs, each) =
            if n == 1 { ("1 job".to_owned(), "it") } else { (format!("{} jobs", grouped(n as u64)), "each") };
        format!(
            "{jobs} asked for GPUs of more than one type in ReqTRES ({}{more}), and a schedlab task has one GPU \
             type: {each} is replayed on its GPU count of any type",
            shown.join("; ")
        )
    }

    /// The note on [`SacctReport::elapsed_mismatch`]: which rows, and which time was trusted.
    fn elapsed_note(&self) -> String {
        let n = self.elapsed_mismatch.len();
        let (whose, its) =
            if n == 1 { ("1 job's", "its") } else { (&*format!("{} jobs'", grouped(n as u64)), "their") };
        let hours = |ms: u64| {
            let h = ms as f64 / 3_600_000.0;
            if h.fract() == 0.0 { format!("{h} h") } else { format!("{h:.2} h") }
        };
        let shown: Vec<String> = self
            .elapsed_mismatch
            .iter()
            .take(3)
            .map(|(line, job, span, elapsed)| {
                format!("line {line}: job {job}, {} on the clock, Elapsed {}", hours(*span), hours(*elapsed))
            })
            .collect();
        let more = if n > 3 { format!(" and {} more", grouped(n as u64 - 3)) } else { String::new() };
        let fix = match self.clock {
            SacctClock::Naive => "the dump's times are local and cross a daylight-saving change: give its zone \
                 (--format sacct[tz=Europe/Berlin]) or dump with TZ=UTC, so submit times are right too"
                .to_owned(),
            clock => format!("is tz={clock} the zone sacct ran in?"),
        };
        format!(
            "{whose} End - Start differs from {its} Elapsed by whole hours ({}{more}): work = Elapsed, \
             Slurm's own count (End read as Start + Elapsed); {fix}",
            shown.join("; ")
        )
    }
}

/// Reads a sacct dump with its times as written (naive); `file` names it in errors.
pub fn read_sacct(source: impl Read, file: &str) -> Result<SacctImport, TraceError> {
    read_sacct_on(source, file, SacctClock::Naive)
}

/// [`read_sacct`] with the times on `clock` (`--format sacct[tz=...]`).
pub fn read_sacct_on(source: impl Read, file: &str, clock: SacctClock) -> Result<SacctImport, TraceError> {
    first_error(file, |sink| read_sacct_into(source, file, clock, sink))
}

/// The columns of [`FIELDS`] in the file at hand.
struct Cols(Vec<Option<usize>>);

impl Cols {
    fn at(&self, name: &str) -> Option<usize> {
        FIELDS.iter().position(|f| f.0 == name).and_then(|i| self.0[i])
    }
}

/// One job row (an attempt of a job or of a het component), parsed.
struct Attempt {
    /// The row's line, for notes.
    line: u64,
    /// `JobID` without a het suffix: the job's name.
    name: String,
    component: u32,
    submit: u64,
    eligible: Option<u64>,
    start: Option<u64>,
    end: Option<u64>,
    state: String,
    exit_code: i32,
    limit: Option<u64>,
    gpus: u64,
    gpu_type: Option<Box<str>>,
    nodes: u64,
    partition: String,
    priority: i32,
    owner: Option<Box<sim::Owner>>,
    /// `NodeList` expanded; empty when it held no node (or the field is absent).
    hosts: Vec<String>,
}

pub(crate) fn read_sacct_into(
    mut source: impl Read,
    file: &str,
    clock: SacctClock,
    sink: &mut Sink,
) -> Option<SacctImport> {
    let mut text = String::new();
    sink.ok(source.read_to_string(&mut text).map_err(|e| TraceError::io(file, e.to_string())))?;
    let table = match Table::split(&text, file) {
        Ok(table) => table,
        Err(errors) => {
            errors.into_iter().for_each(|e| sink.push(e));
            return None;
        }
    };
    let cols = Cols(sink.ok(table.columns(file, FIELDS, "sacct --format"))?);
    let mut report = SacctReport { rows: table.rows.len() as u64, clock, ..SacctReport::default() };
    report.owner_fields =
        FIELDS[OWNER_FROM..].iter().zip(&cols.0[OWNER_FROM..]).filter(|(_, c)| c.is_some()).map(|(f, _)| f.0).collect();
    // Attempts by (job, component), in file order: the last is the one replayed.
    let mut jobs: BTreeMap<(String, u32), Vec<Attempt>> = BTreeMap::new();
    let mut order: Vec<(String, u32)> = Vec::new();
    for (line, fields) in &table.rows {
        let row = Row { file, line: *line, header: &table.header, fields };
        match read_row(&row, &cols, clock, &mut report) {
            Ok(Some(attempt)) => {
                let key = (attempt.name.clone(), attempt.component);
                let attempts = jobs.entry(key.clone()).or_default();
                if attempts.is_empty() {
                    order.push(key);
                }
                attempts.push(attempt);
            }
            Ok(None) => {}
            Err(e) => {
                sink.push(e);
                if sink.is_full() {
                    return None;
                }
            }
        }
    }
    report.node_failures = node_fail::node_failures(jobs.values().flatten());
    let recorded_starts = recorded_starts(&jobs);
    let specs = assemble(&order, jobs, &mut report);
    if specs.is_empty() && !report.skipped.is_empty() && sink.is_empty() {
        sink.push(TraceError::file(file, report.nothing_left()));
        return None;
    }
    let workload = finish(specs, file, sink)?;
    Some(SacctImport { workload, report, recorded_starts })
}

/// The earliest start of each job over its attempts and components, by job name.
fn recorded_starts(jobs: &BTreeMap<(String, u32), Vec<Attempt>>) -> BTreeMap<String, SimTime> {
    let mut starts: BTreeMap<String, SimTime> = BTreeMap::new();
    for ((name, _), attempts) in jobs {
        for start in attempts.iter().filter_map(|a| a.start).map(SimTime) {
            starts.entry(name.clone()).and_modify(|s| *s = (*s).min(start)).or_insert(start);
        }
    }
    starts
}

/// A job row as an [`Attempt`]; `None` for a step (counted) or a row that cannot be replayed
/// (named in the report).
fn read_row(
    row: &Row<'_, '_>,
    cols: &Cols,
    clock: SacctClock,
    report: &mut SacctReport,
) -> Result<Option<Attempt>, TraceError> {
    let id_col = cols.at("JobID");
    let id = row.get(id_col);
    if id.is_empty() {
        return Err(row.error(id_col, "a job id such as 12, 12_3, 12+1 or 12.batch"));
    }
    if id.contains('.') {
        report.steps += 1;
        return Ok(None);
    }
    let state_col = cols.at("State");
    let state = row.get(state_col).split_whitespace().next().unwrap_or("").trim_end_matches('+').to_owned();
    if !KNOWN_STATES.contains(&state.as_str()) {
        return Err(row.error(state_col, format!("a Slurm job state ({})", KNOWN_STATES.join(", "))));
    }
    if UNFINISHED.contains(&state.as_str()) {
        report.skipped.push((row.line, format!("job {id} is {state}: it had not ended when sacct ran")));
        return Ok(None);
    }
    if id.contains('[') {
        report.skipped.push((row.line, format!("array tasks {id} ({state}) never became jobs of their own")));
        return Ok(None);
    }
    let (name, component) = match id.split_once('+') {
        Some((base, c)) => (base, c.parse::<u32>().map_err(|_| row.error(id_col, "a het job component N after +"))?),
        None => (id, 0),
    };
    // Slurm writes a job cancelled while pending with Start = End = the cancel time; it never
    // held anything, which its empty AllocTRES (or NodeList `None assigned`) tells.
    let alloc_col = cols.at("AllocTRES");
    let never_held =
        (alloc_col.is_some() && row.get(alloc_col).is_empty()) || row.get(cols.at("NodeList")) == "None assigned";
    let ambiguous = std::cell::Cell::new(0);
    let time = |name: &str| -> Result<Option<u64>, TraceError> {
        let column = cols.at(name);
        let Some(naive) = row.time(column)? else { return Ok(None) };
        match clock.to_utc(naive).map_err(|why| row.error(column, format!("a time on the clock tz={clock} ({why})")))? {
            Instant::Exact(utc) => Ok(Some(utc)),
            Instant::Ambiguous(utc) => {
                ambiguous.set(ambiguous.get() + 1);
                Ok(Some(utc))
            }
        }
    };
    let start = if never_held { None } else { time("Start")? };
    let tres_col = if start.is_some() && alloc_col.is_some() { alloc_col } else { cols.at("ReqTRES") };
    let tres = row.get(tres_col);
    let gpus = tres_gpus(tres);
    if gpus == 0 {
        report.skipped.push((row.line, format!("job {id} has no gres/gpu in its TRES: schedlab schedules GPUs")));
        return Ok(None);
    }
    if let types @ [_, _, ..] = &tres_gpu_types(row.get(cols.at("ReqTRES")))[..] {
        report.mixed_gpu_types.push((row.line, id.to_owned(), types.join("+")));
    }
    let submit_col = cols.at("Submit");
    let submit = time("Submit")?.ok_or_else(|| row.error(submit_col, "the time the job was submitted"))?;
    let priority_col = cols.at("Priority");
    let priority = row.number(priority_col)?.unwrap_or(0);
    let hosts = if never_held { Vec::new() } else { row.hosts(cols.at("NodeList"))? };
    let mut end = time("End")?;
    // Slurm counts Elapsed in its own (UTC) seconds; a local clock that jumped an hour
    // between Start and End makes the span disagree by exactly that: Elapsed is trusted.
    if let (Some(s), Some(e), Some(elapsed)) = (start, end, row.duration(cols.at("Elapsed"))?) {
        let off = e.saturating_sub(s).abs_diff(elapsed);
        if e >= s && off > 0 && off.is_multiple_of(3_600_000) {
            report.elapsed_mismatch.push((row.line, id.to_owned(), e - s, elapsed));
            end = Some(s + elapsed);
        }
    }
    let attempt = Attempt {
        line: row.line,
        name: name.to_owned(),
        component,
        submit,
        eligible: time("Eligible")?,
        start,
        end,
        exit_code: exit_code(row, cols.at("ExitCode"))?,
        state,
        limit: row.duration(cols.at("Timelimit"))?,
        gpus,
        gpu_type: tres_gpu_type(row.get(cols.at("ReqTRES"))).map(Into::into),
        nodes: row.number(cols.at("NNodes"))?.unwrap_or(1),
        partition: row.get(cols.at("Partition")).to_owned(),
        priority: slurm_priority(priority).ok_or_else(|| row.error(priority_col, "a priority up to 4294967295"))?,
        owner: owner_of(row, cols),
        hosts,
    };
    report.ambiguous_times += ambiguous.get();
    Ok(Some(attempt))
}

/// The job's account, user and QOS, when the dump has any of them.
fn owner_of(row: &Row<'_, '_>, cols: &Cols) -> Option<Box<sim::Owner>> {
    let [account, qos, user] = ["Account", "QOS", "User"].map(|f| row.get(cols.at(f)));
    let given = !(account.is_empty() && user.is_empty() && qos.is_empty());
    given.then(|| Box::new(sim::Owner { account: account.into(), user: user.into(), qos: qos.into() }))
}

/// Slurm's unsigned 32-bit priority shifted down by 2^31 into schedlab's signed one: the
/// order, which is all a priority policy reads, is kept exactly.
fn slurm_priority(priority: u64) -> Option<i32> {
    let shifted = i64::try_from(priority).ok()? - (1i64 << 31);
    i32::try_from(shifted).ok()
}

const KNOWN_STATES: &[&str] = &[
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PENDING",
    "PREEMPTED",
    "RUNNING",
    "REQUEUED",
    "RESIZING",
    "REVOKED",
    "SUSPENDED",
    "TIMEOUT",
];
const UNFINISHED: &[&str] = &["PENDING", "RUNNING", "RESIZING", "REVOKED", "SUSPENDED"];

/// `ExitCode` (`code:signal`) as one exit status: the code, else 128 + the signal.
fn exit_code(row: &Row<'_, '_>, column: Option<usize>) -> Result<i32, TraceError> {
    let text = row.get(column);
    if text.is_empty() {
        return Ok(0);
    }
    let parsed = text.split_once(':').and_then(|(c, s)| Some((c.parse::<u8>().ok()?, s.parse::<u8>().ok()?)));
    match parsed {
        Some((0, signal)) if signal > 0 => Ok(128 + i32::from(signal)),
        Some((code, _)) => Ok(i32::from(code)),
        None => Err(row.error(column, "an exit code written CODE:SIGNAL, such as 0:0 or 1:0")),
    }
}

/// The jobs from their attempts, in the order their first rows came.
fn assemble(
    order: &[(String, u32)],
    mut attempts: BTreeMap<(String, u32), Vec<Attempt>>,
    report: &mut SacctReport,
) -> Vec<JobSpec> {
    let mut specs: Vec<JobSpec> = Vec::new();
    let mut by_name: BTreeMap<String, usize> = BTreeMap::new();
    for key in order {
        let Some(mut tries) = attempts.remove(key) else { continue };
        let Some(last) = tries.pop() else { continue };
        for earlier in &tries {
            *report.earlier_attempts.entry(earlier.state.clone()).or_default() += 1;
        }
        let (first_submit, first_eligible) =
            tries.first().map_or((last.submit, last.eligible), |a| (a.submit, a.eligible));
        let (task, cancel) = task_of(&last, first_submit, first_eligible, report);
        if let Some(&index) = by_name.get(&last.name) {
            let job = &mut specs[index];
            job.tasks.push(task);
            // The later cancel of the job's components (none before any).
            job.cancel = job.cancel.get().max(cancel).into();
            if job.tasks.len() == 2 {
                report.het_jobs += 1;
            }
            // Slurm starts a het job's components together, once all of them are eligible.
            job.co_start = true;
            share_window(job);
            continue;
        }
        let mut job = JobSpec::single(last.name.clone(), SimTime(first_submit), 1, SimDuration(1));
        job.tasks = [task].into();
        job.cancel = cancel.into();
        job.queue = (!last.partition.is_empty()).then(|| last.partition.as_str().into());
        job.priority = last.priority;
        job.owner = last.owner.clone();
        report.jobs += 1;
        report.array_tasks += u64::from(last.name.contains('_'));
        by_name.insert(last.name.clone(), specs.len());
        specs.push(job);
    }
    specs
}

/// Gives every task of a het job the latest of its components' eligibility times (as Slurm
/// waits for every component's), so that they become startable together.
fn share_window(job: &mut JobSpec) {
    let latest = job.tasks.iter().filter_map(|t| t.options().window.not_before).max();
    if latest.is_none() {
        return; // none waits: no options to allocate
    }
    for task in job.tasks.iter_mut() {
        task.options_mut().window = Window { not_before: latest, not_after: None };
    }
}

/// GPUs on each node of a gang over `nodes` nodes: Slurm gives each node the same `--gres`
/// (`--gpus-per-node`), so an even split is what it ran; an uneven total (`--gpus` spread as
/// Slurm chose) is left to placement.
fn gpus_on_each_node(gpus: u64, nodes: u64) -> Option<std::num::NonZeroU32> {
    let even = nodes > 1 && gpus.is_multiple_of(nodes);
    even.then(|| u32::try_from(gpus / nodes).ok().and_then(std::num::NonZeroU32::new)).flatten()
}

/// The task an attempt replays as, and the job's cancel time if it was cancelled. `submit`
/// and `eligible` are the first attempt's: a requeue is replayed by its cause (a node failure
/// event) or left to the replay's policy (a preemption, a requeue), never as a later start.
fn task_of(
    last: &Attempt,
    submit: u64,
    eligible: Option<u64>,
    report: &mut SacctReport,
) -> (TaskSpec, Option<SimTime>) {
    let gpus = u32::try_from(last.gpus).unwrap_or(u32::MAX);
    let ran = match (last.start, last.end) {
        (Some(start), Some(end)) => Some(end.saturating_sub(start).max(1)),
        _ => None,
    };
    let mut cancel = None;
    let work = match (&*last.state, ran) {
        ("CANCELLED", None) => {
            report.cancelled_before_start += 1;
            cancel = Some(SimTime(last.end.unwrap_or(submit).max(submit)));
            last.limit.unwrap_or(1).max(1)
        }
        ("CANCELLED", Some(ran)) => {
            report.cancelled_running += 1;
            cancel = last.end.map(SimTime);
            last.limit.unwrap_or(ran).max(ran)
        }
        (_, ran) => ran.unwrap_or(1),
    };
    let mut task = TaskSpec::new(last.component.to_string(), gpus, SimDuration(work));
    task.estimate = last.limit.filter(|&l| l > 0).map(SimDuration).into();
    task.single_node = last.nodes <= 1;
    task.gpus_per_node = gpus_on_each_node(u64::from(gpus), last.nodes);
    task.gpu_type = last.gpu_type.clone();
    if !matches!(&*last.state, "COMPLETED" | "CANCELLED") {
        *report.failed.entry(last.state.clone()).or_default() += 1;
        task.exit_code = if last.exit_code == 0 { 1 } else { last.exit_code };
    }
    if let Some(eligible) = eligible.filter(|&e| e > submit) {
        report.eligible_later += 1;
        task.options_mut().window = Window { not_before: Some(SimTime(eligible)), not_after: None };
    }
    (task, cancel)
}
