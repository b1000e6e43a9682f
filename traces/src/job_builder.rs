//! The one checked job builder behind both job readers: the canonical `jobs.csv` reader
//! ([`crate::canonical`]) and live mode's JSON job reader (`live::wire`). Each reader parses
//! its own syntax (CSV cells with their lines, JSON values) into raw field values; this module
//! decides, once for both, which values a job and its tasks may hold, and builds the
//! [`JobSpec`]. A refusal is a [`FieldError`]: the field (as the canonical trace and the JSON
//! API both name it), what was expected, and, where only part of the field is at fault, that
//! part; the reader adds where the value came from (file and line, or the task) and the
//! user's words.
//!
//! What stays with the simulator: the checks of a whole job ([`sim::Workload::new`] and
//! [`sim::dag::check_job`]: a cycle as its path, a data point past its upstream's work).

use crate::cluster_spec::MAX_CLUSTER_GPUS;
use crate::timeparse::MAX_SECONDS;
use sim::{DepKind, Dependency, Deps, JobSpec, Name, SimDuration, SimTime, TaskOptions, TaskSpec, Tasks, Window};
use std::collections::BTreeMap;
use std::num::{NonZeroU16, NonZeroU32};

/// The most GPUs one task may ask for: the most a cluster may have (a task asking more could
/// never run anywhere). Far above any trace's gang (the public traces' largest is 128 GPUs;
/// LLM pre-training gangs are 16,384).
pub const MAX_TASK_GPUS: u32 = MAX_CLUSTER_GPUS as u32;

/// What `gpus` must hold.
pub const GPUS_EXPECTED: &str = "a whole number of GPUs from 1 to 1000000 (the most a cluster may have)";

/// What `gpu_milli` must hold.
pub const GPU_MILLI_EXPECTED: &str =
    "a share of one GPU in milli-GPUs, a whole number from 1 to 999 (none: whole GPUs)";

/// What a duration that must be positive (`duration_s`, `estimate_s`, `deadline_s`) must hold.
pub const POSITIVE_SECONDS_EXPECTED: &str =
    "a positive number of seconds (at least 0.001 after rounding to the millisecond)";

/// The longest time anywhere in a trace, in milliseconds.
const MAX_MS: u64 = MAX_SECONDS * 1000;

/// A field refused by the builder.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// The field as `jobs.csv` and the JSON API name it (`gpus`, `not_after_s`, `depends_on`).
    pub field: &'static str,
    /// What the field must hold, phrased to follow "expected".
    pub expected: String,
    /// The part of the user's words at fault, when it is not the whole field (one item of
    /// `depends_on`); `None`: the whole field.
    pub found: Option<String>,
}

impl FieldError {
    fn new(field: &'static str, expected: impl Into<String>) -> FieldError {
        FieldError { field, expected: expected.into(), found: None }
    }
}

/// What `gpus_per_node` must hold on a task of `gpus` GPUs, whole or a share, single-node or
/// not; also what a reader says of a value it cannot read as a number.
pub fn gpus_per_node_expected(gpus: u32, share: bool, single_node: bool) -> String {
    if share {
        "no gpus_per_node for a share of one GPU".to_owned()
    } else if single_node {
        format!("{gpus} (all its GPUs: the task is single-node) or none")
    } else {
        format!("a whole number that divides the task's {gpus} GPUs (none: any split over nodes)")
    }
}

/// One task's fields as a reader found them, before any check. Times are milliseconds (the
/// reader parsed the seconds); start windows are trace times (a reader whose windows are
/// relative to submission adds the submit time).
#[derive(Debug, Clone, Default)]
pub struct TaskFields<'a> {
    pub name: Name,
    pub gpus: u32,
    pub gpu_milli: Option<u32>,
    pub gpu_type: Option<&'a str>,
    pub single_node: bool,
    pub gpus_per_node: Option<u32>,
    /// The true work (`duration_s`).
    pub work_ms: u64,
    pub estimate_ms: Option<u64>,
    pub checkpoint_ms: Option<u64>,
    pub restart_overhead_ms: Option<u64>,
    pub checkpoint_cost_ms: Option<u64>,
    pub not_before_ms: Option<u64>,
    pub not_after_ms: Option<u64>,
    pub dataset: Option<&'a str>,
    /// As the `speeds` column spells it (`A100=2.5;V100=1`).
    pub speeds: Option<&'a str>,
    pub exit_code: i32,
}

impl TaskFields<'_> {
    /// The task of a job submitted at `submit`, its fields checked, without dependencies (see
    /// [`DepResolver`]). Inlined for the common task, which sets no option.
    #[inline]
    pub fn build(self, submit: SimTime) -> Result<TaskSpec, FieldError> {
        if !(1..=MAX_TASK_GPUS).contains(&self.gpus) {
            return Err(FieldError::new("gpus", GPUS_EXPECTED));
        }
        let gpu_milli = match self.gpu_milli {
            None => None,
            Some(milli) => Some(gpu_share(milli, self.gpus)?),
        };
        let gpus_per_node = match self.gpus_per_node {
            None => None,
            Some(n) => Some(per_node(n, self.gpus, gpu_milli.is_some(), self.single_node)?),
        };
        positive("estimate_s", self.estimate_ms)?;
        positive("duration_s", Some(self.work_ms))?;
        let gpu_type = match self.gpu_type {
            None => None,
            Some(ty) => Some(named("gpu_type", ty, "a GPU type name (none: any type)")?),
        };
        // Most tasks set no option: the options are built (and found to be none) only for a
        // task that sets one.
        let any_option = self.checkpoint_ms.is_some()
            || self.restart_overhead_ms.is_some()
            || self.checkpoint_cost_ms.is_some()
            || self.not_before_ms.is_some()
            || self.not_after_ms.is_some()
            || self.dataset.is_some()
            || self.speeds.is_some();
        let options = if any_option { Some(options(&self, submit)?) } else { None };
        let mut task = TaskSpec::new(self.name, self.gpus, SimDuration(self.work_ms));
        task.gpu_milli = gpu_milli;
        task.gpus_per_node = gpus_per_node;
        task.gpu_type = gpu_type.map(Into::into);
        task.single_node = self.single_node;
        task.estimate = self.estimate_ms.map(SimDuration).into();
        task.exit_code = self.exit_code;
        if let Some(options) = options {
            task = task.with_options(options);
        }
        Ok(task)
    }
}

/// The options of a task that sets one, checked.
#[inline(never)]
fn options(t: &TaskFields<'_>, submit: SimTime) -> Result<TaskOptions, FieldError> {
    at_most_max("checkpoint_s", t.checkpoint_ms)?;
    at_most_max("restart_overhead_s", t.restart_overhead_ms)?;
    at_most_max("checkpoint_cost_s", t.checkpoint_cost_ms)?;
    Ok(TaskOptions {
        checkpoint: t.checkpoint_ms.map(SimDuration),
        restart_overhead: t.restart_overhead_ms.map(SimDuration),
        checkpoint_cost: t.checkpoint_cost_ms.map(SimDuration),
        window: window(t.not_before_ms, t.not_after_ms, submit)?,
        dataset: match t.dataset {
            None => None,
            Some(d) => Some(named("dataset", d, "a dataset name (none: the task reads no dataset)")?.to_owned()),
        },
        speeds: match t.speeds {
            None => BTreeMap::new(),
            Some(text) => crate::canonical::parse_speeds(text)
                .ok_or_else(|| FieldError::new("speeds", crate::canonical::SPEEDS_EXPECTED))?,
        },
    })
}

/// A start window in trace time: within the trace's times, closing at or after the job's
/// submission and at or after it opens.
fn window(not_before: Option<u64>, not_after: Option<u64>, submit: SimTime) -> Result<Window, FieldError> {
    let within = "a time at most 1000000000000 s into the trace";
    if not_before.is_some_and(|t| t > MAX_MS) {
        return Err(FieldError::new("not_before_s", within));
    }
    if let Some(end) = not_after {
        if end > MAX_MS {
            return Err(FieldError::new("not_after_s", within));
        }
        // A window closed before submission would let load decide the outcome: the task would
        // run when there is room at once and fail when it has to wait.
        if end < submit.as_ms() {
            return Err(FieldError::new(
                "not_after_s",
                format!(
                    "the end of the start window at or after the job's submit_s ({})",
                    crate::canonical::format_seconds(submit.as_ms())
                ),
            ));
        }
        if not_before.is_some_and(|start| end < start) {
            return Err(FieldError::new(
                "not_after_s",
                "the end of the start window at or after its start (not_before_s)",
            ));
        }
    }
    Ok(Window { not_before: not_before.map(SimTime), not_after: not_after.map(SimTime) })
}

/// `milli` as a share of the one GPU of a task of `gpus` GPUs.
fn gpu_share(milli: u32, gpus: u32) -> Result<NonZeroU16, FieldError> {
    match milli {
        1000 => Err(FieldError::new(
            "gpu_milli",
            "a share of one GPU in milli-GPUs, 1 to 999; 1000 is a whole GPU: give no gpu_milli for whole GPUs",
        )),
        1..=999 if gpus != 1 => Err(FieldError::new(
            "gpu_milli",
            format!(
                "no gpu_milli for a task of {gpus} GPUs: a GPU share is a share of exactly one GPU (`gpus` = 1); \
                 multi-GPU tasks take whole GPUs"
            ),
        )),
        milli => sim::gpu_share(milli).ok_or_else(|| FieldError::new("gpu_milli", GPU_MILLI_EXPECTED)),
    }
}

/// `n` GPUs on each node of a task of `gpus` GPUs: a divisor of them, of whole GPUs, all of
/// them on a single-node task.
fn per_node(n: u32, gpus: u32, share: bool, single_node: bool) -> Result<NonZeroU32, FieldError> {
    let fits = !share && n > 0 && gpus.is_multiple_of(n) && (!single_node || n == gpus);
    match NonZeroU32::new(n).filter(|_| fits) {
        Some(n) => Ok(n),
        None => Err(FieldError::new("gpus_per_node", gpus_per_node_expected(gpus, share, single_node))),
    }
}

/// A duration that must be at least 1 ms, and within the trace's times.
#[inline]
fn positive(field: &'static str, ms: Option<u64>) -> Result<(), FieldError> {
    match ms {
        Some(0) => Err(FieldError::new(field, POSITIVE_SECONDS_EXPECTED)),
        _ => at_most_max(field, ms),
    }
}

#[inline]
fn at_most_max(field: &'static str, ms: Option<u64>) -> Result<(), FieldError> {
    match ms {
        Some(ms) if ms > MAX_MS => Err(FieldError::new(field, crate::timeparse::SecondsError::TooLarge.expected())),
        _ => Ok(()),
    }
}

/// A name that, given, must not be empty (an empty one is no name: leave the field out).
fn named<'t>(field: &'static str, text: &'t str, expected: &str) -> Result<&'t str, FieldError> {
    if text.is_empty() { Err(FieldError::new(field, expected)) } else { Ok(text) }
}

/// A job's own fields as a reader found them, before any check (times in milliseconds).
#[derive(Debug, Clone, Default)]
pub struct JobFields<'a> {
    /// The job's id (`job_id` in a trace, `name` in the JSON API).
    pub name: &'a str,
    pub submit_ms: u64,
    pub queue: Option<&'a str>,
    /// After submission.
    pub deadline_ms: Option<u64>,
    pub priority: i32,
    /// In trace time.
    pub cancel_ms: Option<u64>,
    /// The submitter's account, user and QOS; empty: not given.
    pub account: &'a str,
    pub user: &'a str,
    pub qos: &'a str,
}

impl JobFields<'_> {
    /// Checks the job's own fields (a reader of rows checks every row's, and compares them).
    #[inline]
    pub fn check(&self) -> Result<(), FieldError> {
        if self.name.is_empty() {
            return Err(FieldError::new("job_id", "a job id (the field must not be empty)"));
        }
        if self.submit_ms > MAX_MS {
            return Err(FieldError::new("submit_s", crate::timeparse::SecondsError::TooLarge.expected()));
        }
        if let Some(queue) = self.queue {
            named("queue", queue, "a queue name (none: the job names no queue)")?;
        }
        positive("deadline_s", self.deadline_ms)?;
        if self.cancel_ms.is_some_and(|c| c < self.submit_ms) {
            return Err(FieldError::new("cancel_s", "a cancel time at or after the job's submit_s"));
        }
        at_most_max("cancel_s", self.cancel_ms)
    }

    /// The job of `tasks` (built by [`TaskFields::build`], dependencies resolved by
    /// [`DepResolver`]), its own fields checked. The checks of a whole job (its DAG) are the
    /// simulator's: [`sim::Workload::new`].
    #[inline]
    pub fn build(&self, tasks: Tasks) -> Result<JobSpec, FieldError> {
        self.check()?;
        Ok(JobSpec {
            name: self.name.into(),
            submit: SimTime(self.submit_ms),
            queue: self.queue.map(Into::into),
            deadline: self.deadline_ms.map(SimDuration).into(),
            priority: self.priority,
            cancel: self.cancel_ms.map(SimTime).into(),
            owner: self.owner(),
            // A job-level rule a reader sets after building (canonical's `co_start` column).
            co_start: false,
            tasks,
        })
    }
}

impl JobFields<'_> {
    /// The job's [`sim::Owner`], when any of its fields is given.
    fn owner(&self) -> Option<Box<sim::Owner>> {
        let given = !(self.account.is_empty() && self.user.is_empty() && self.qos.is_empty());
        given.then(|| {
            Box::new(sim::Owner { account: self.account.into(), user: self.user.into(), qos: self.qos.into() })
        })
    }
}

/// The error for a task name used twice in job `job`.
pub fn duplicate_task(job: &str) -> FieldError {
    FieldError::new("task_id", format!("a name not used before by a task of job `{job}`"))
}

/// The most task names an error about `depends_on` lists.
const NAMES_LISTED: usize = 20;

/// Resolves `depends_on` items (`task[:kind]`, kind `success` by default, `any`, `failure`,
/// `data=SECONDS` or `checkpoint=N`) against a job's tasks, found by name in O(log n).
pub struct DepResolver<'t> {
    tasks: &'t [TaskSpec],
    index: BTreeMap<&'t str, usize>,
}

impl<'t> DepResolver<'t> {
    /// Over `tasks`, a job's tasks in order (the first of two with one name is the one found).
    pub fn new(tasks: &'t [TaskSpec]) -> DepResolver<'t> {
        let mut index = BTreeMap::new();
        for (i, t) in tasks.iter().enumerate() {
            index.entry(t.name.as_str()).or_insert(i);
        }
        DepResolver { tasks, index }
    }

    /// `items` as dependencies; the error names the item at fault.
    pub fn resolve<'i>(&self, items: impl IntoIterator<Item = &'i str>) -> Result<Deps, FieldError> {
        let mut deps = Deps::new();
        for item in items {
            let (name, kind) = match item.rsplit_once(':') {
                Some((name, kind)) => (name, parse_dep_kind(kind).map_err(|e| dep_error(e, item))?),
                None => (item, DepKind::Success),
            };
            let Some(&upstream) = self.index.get(name) else {
                return Err(dep_error(self.names_expected(), name));
            };
            deps.push(Dependency { upstream, kind });
        }
        Ok(deps)
    }

    /// What a dependency must name: the job's tasks, the first [`NAMES_LISTED`] of them.
    fn names_expected(&self) -> String {
        let mut names: Vec<&str> = self.tasks.iter().take(NAMES_LISTED).map(|t| t.name.as_str()).collect();
        if self.tasks.len() > NAMES_LISTED {
            names.push("...");
        }
        format!("task names of this job ({}), each with an optional :kind", names.join(", "))
    }
}

fn dep_error(expected: String, found: &str) -> FieldError {
    FieldError { field: "depends_on", expected, found: Some(found.to_owned()) }
}

/// A dependency's `kind` (after the `:` in `depends_on`); the error says what was expected.
pub fn parse_dep_kind(kind: &str) -> Result<DepKind, String> {
    let expected = || {
        "a dependency kind after `:`: success, any, failure, data=SECONDS (the upstream's progress point) or \
         checkpoint=N (its n-th checkpoint)"
            .to_string()
    };
    Ok(match kind.split_once('=') {
        None => match kind {
            "success" => DepKind::Success,
            "any" => DepKind::Any,
            "failure" => DepKind::Failure,
            _ => return Err(expected()),
        },
        Some(("data", seconds)) => {
            let ms = crate::timeparse::parse_seconds_ms(seconds).map_err(|_| expected())?;
            DepKind::Data(SimDuration(ms))
        }
        Some(("checkpoint", n)) => DepKind::Checkpoint(n.parse().map_err(|_| expected())?),
        Some(_) => return Err(expected()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn task(gpus: u32) -> TaskFields<'static> {
        TaskFields { name: "0".into(), gpus, work_ms: 1000, ..TaskFields::default() }
    }

    fn refused(t: TaskFields<'_>) -> (&'static str, String) {
        let e = t.build(SimTime(10_000)).expect_err("should be refused");
        (e.field, e.expected)
    }

    #[test]
    fn gpus_are_1_to_the_largest_cluster() {
        assert!(task(1).build(SimTime::ZERO).is_ok());
        assert_eq!(task(MAX_TASK_GPUS).build(SimTime::ZERO).unwrap().gpus, 1_000_000);
        assert!(GPUS_EXPECTED.contains(&format!("from 1 to {MAX_TASK_GPUS} ")));
        for gpus in [0, MAX_TASK_GPUS + 1, u32::MAX] {
            assert_eq!(refused(task(gpus)), ("gpus", GPUS_EXPECTED.to_owned()), "{gpus}");
        }
    }

    #[test]
    fn shares_and_gpus_per_node_fit_the_gang() {
        let share = |milli, gpus| TaskFields { gpu_milli: Some(milli), ..task(gpus) };
        assert_eq!(share(250, 1).build(SimTime::ZERO).unwrap().gpu_milli.map(NonZeroU16::get), Some(250));
        assert!(refused(share(1000, 1)).1.contains("1000 is a whole GPU"));
        assert!(refused(share(500, 2)).1.starts_with("no gpu_milli for a task of 2 GPUs"));
        for milli in [0, 1001, 65_536] {
            assert_eq!(refused(share(milli, 1)), ("gpu_milli", GPU_MILLI_EXPECTED.to_owned()));
        }
        let split = |n, gpus, single_node| TaskFields { gpus_per_node: Some(n), single_node, ..task(gpus) };
        assert_eq!(split(8, 16, false).build(SimTime::ZERO).unwrap().fixed_gpus_per_node(), Some(8));
        assert_eq!(refused(split(3, 4, false)).1, gpus_per_node_expected(4, false, false));
        assert_eq!(refused(split(0, 4, false)).0, "gpus_per_node");
        assert_eq!(refused(split(4, 8, true)).1, "8 (all its GPUs: the task is single-node) or none");
        let shared = TaskFields { gpu_milli: Some(5), gpus_per_node: Some(1), ..task(1) };
        assert_eq!(refused(shared).1, "no gpus_per_node for a share of one GPU");
    }

    #[test]
    fn windows_open_before_they_close_and_close_after_submission() {
        let window = |b, a| TaskFields { not_before_ms: b, not_after_ms: a, ..task(1) };
        let w = window(Some(12_000), Some(20_000)).build(SimTime(10_000)).unwrap();
        assert_eq!(w.options().window.not_after, Some(SimTime(20_000)));
        assert_eq!(
            refused(window(None, Some(9_500))).1,
            "the end of the start window at or after the job's submit_s (10)"
        );
        assert_eq!(
            refused(window(Some(30_000), Some(20_000))),
            ("not_after_s", "the end of the start window at or after its start (not_before_s)".to_owned())
        );
        assert_eq!(refused(window(Some(MAX_MS + 1), None)).0, "not_before_s");
    }

    #[test]
    fn dependencies_name_tasks_of_the_job() {
        let tasks: Vec<TaskSpec> = ["a", "b"].iter().map(|n| TaskSpec::new(*n, 1, SimDuration(1))).collect();
        let r = DepResolver::new(&tasks);
        let deps = r.resolve(["a", "b:any", "a:data=2.5"]).unwrap();
        let kinds: Vec<(usize, DepKind)> = deps.iter().map(|d| (d.upstream, d.kind)).collect();
        assert_eq!(kinds, [(0, DepKind::Success), (1, DepKind::Any), (0, DepKind::Data(SimDuration(2500)))]);
        let e = r.resolve(["zz"]).unwrap_err();
        assert_eq!(
            (e.field, e.expected.as_str(), e.found.as_deref()),
            ("depends_on", "task names of this job (a, b), each with an optional :kind", Some("zz"))
        );
        assert!(r.resolve(["a:sometimes"]).unwrap_err().expected.starts_with("a dependency kind"));
        let many: Vec<TaskSpec> = (0..30).map(|i| TaskSpec::new(i.to_string(), 1, SimDuration(1))).collect();
        assert!(DepResolver::new(&many).resolve(["x"]).unwrap_err().expected.contains("18, 19, ...)"));
    }

    #[test]
    fn job_fields_are_checked() {
        let job = JobFields { name: "j", submit_ms: 10, ..JobFields::default() };
        assert!(job.build([TaskSpec::new("0", 1, SimDuration(1))].into()).is_ok());
        assert_eq!(JobFields { deadline_ms: Some(0), ..job.clone() }.check().unwrap_err().field, "deadline_s");
        assert_eq!(JobFields { cancel_ms: Some(9), ..job.clone() }.check().unwrap_err().field, "cancel_s");
        assert_eq!(JobFields { queue: Some(""), ..job.clone() }.check().unwrap_err().field, "queue");
        assert_eq!(JobFields { name: "", ..job }.check().unwrap_err().field, "job_id");
    }
}
