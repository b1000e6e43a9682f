//! What users submit: jobs made of tasks. A task is a gang: it asks for `gpus` GPUs that must
//! all be granted at once, inside one pool (one GPU type), on one node when `single_node`, and
//! `gpus_per_node` on each of its nodes when that is set.

use crate::time::{OptDuration, OptTime, SimDuration, SimTime};
use std::collections::BTreeMap;
use std::fmt;
use std::num::{NonZeroU16, NonZeroU32};

/// A name from a trace (a job's, a task's, a queue's): kept inline, without an allocation of
/// its own, up to 24 bytes, which most are ("0", "job-123456", a Philly VC id). At a million
/// jobs the allocations of such names were a third of a trace's parse and 64 bytes a job.
pub type Name = compact_str::CompactString;

/// A job's tasks: the first one inline in its [`JobSpec`], as most jobs of every public trace
/// have one, so that such a job costs no allocation of its own (and 32 bytes less) beside
/// its spec. Built with `[task].into()` for one task and `.into()` from a `Vec` for several;
/// read as a slice.
pub type Tasks = smallvec::SmallVec<[TaskSpec; 1]>;

/// A task's dependencies: 8 bytes in its [`TaskSpec`] (a `Vec` takes 24), and no allocation
/// when empty, as most tasks of every public trace have none. Built with `collect()`, `push`,
/// or `.into()` from a `Vec`; read as a slice.
pub type Deps = thin_vec::ThinVec<Dependency>;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TaskSpec {
    /// The task's name within its job (`0` for single-task jobs).
    pub name: Name,
    pub gpus: u32,
    /// A share of one GPU, in milli-GPUs (1..=999), for a task that shares its GPU with other
    /// fractional tasks (as Alibaba's GPU-sharing pods do); `gpus` is then 1. `None`: whole GPUs.
    /// (Two bytes: a share is below 1000.)
    pub gpu_milli: Option<NonZeroU16>,
    /// Run only on this GPU type; `None` accepts any pool. (A `Box<str>`: 16 bytes, not a
    /// `String`'s 24.)
    pub gpu_type: Option<Box<str>>,
    /// All GPUs on one node (otherwise the gang may span nodes of one pool).
    pub single_node: bool,
    /// Exactly this many of its GPUs on each node it uses, so `gpus / gpus_per_node` nodes
    /// (Slurm's `--gpus-per-node`, or whole nodes of a multi-node gang); it divides `gpus`.
    /// `None`: as many on each node as placement chooses. (Not zero: 4 bytes, not 8, on
    /// every task of a million-job trace.)
    pub gpus_per_node: Option<NonZeroU32>,
    /// True work: how long the task runs on the reference GPU type, without interruption.
    pub work: SimDuration,
    /// What the user (or an estimator) said it would take; what non-oracle policies see.
    pub estimate: OptDuration,
    /// What the task waits for inside its job (a DAG; empty: nothing, it is ready on arrival).
    pub deps: Deps,
    /// How the task's program exits when its work is done: 0 succeeds; any other code fails
    /// the task for good (a program's own failure is not retried, as in live mode), and its
    /// job with it.
    pub exit_code: i32,
    /// What few tasks set (checkpoints, restart overhead, a start window, a dataset, speeds
    /// per GPU type): out of line, read with [`TaskSpec::options`] and set with
    /// [`TaskSpec::options_mut`].
    options: OutOfLine,
}

/// A task's rarely set fields: out of line, so that a task of a million-job trace that sets
/// none of them holds 8 bytes for them, not 150 (its spec is 128 bytes, not 248).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TaskOptions {
    /// Work between checkpoints (`None`: the run's default).
    pub checkpoint: Option<SimDuration>,
    /// Restart overhead after a preemption or failure (`None`: the run's default).
    pub restart_overhead: Option<SimDuration>,
    /// Wall time each checkpoint takes to write, progress paused; `None`: the run's default.
    pub checkpoint_cost: Option<SimDuration>,
    /// When the task may first start.
    pub window: Window,
    /// The dataset it reads (see `data.rs`); started away from it, it pays a transfer first.
    pub dataset: Option<String>,
    /// How fast this task's work runs on each GPU type it names, in thousandths of the
    /// reference type (as a pool's `speed_milli`), in place of that pool's speed: models differ
    /// in how much a faster GPU helps them (Gavel, OSDI 2020). Types not named, and every type
    /// when empty, run at their pool's speed.
    pub speeds: BTreeMap<String, u32>,
}

/// [`TaskOptions`] behind a pointer, allocated only when one is set. Two are equal when their
/// options are, allocated or not.
#[derive(Debug, Clone, Default)]
struct OutOfLine(Option<Box<TaskOptions>>);

/// What a task without options reads.
static NO_OPTIONS: TaskOptions = TaskOptions {
    checkpoint: None,
    restart_overhead: None,
    checkpoint_cost: None,
    window: Window { not_before: None, not_after: None },
    dataset: None,
    speeds: BTreeMap::new(),
};

impl OutOfLine {
    fn get(&self) -> &TaskOptions {
        self.0.as_deref().unwrap_or(&NO_OPTIONS)
    }
}

impl PartialEq for OutOfLine {
    fn eq(&self, other: &OutOfLine) -> bool {
        self.get() == other.get()
    }
}

impl Eq for OutOfLine {}

/// An edge of a job's task DAG: this task waits on `upstream` (an index into the job's tasks).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dependency {
    pub upstream: usize,
    pub kind: DepKind,
}

/// What a dependency waits for. When it can no longer be met (its upstream ended the other
/// way), the waiting task ends `Skipped`, and so do the tasks waiting on that one as they
/// would a failure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DepKind {
    /// The upstream succeeded (the default). Never met if it fails or is skipped.
    Success,
    /// The upstream ended, whatever happened (cleanup tasks).
    Any,
    /// The upstream failed (the other branch of a conditional; met only then).
    Failure,
    /// The upstream has done this much work (it wrote its artifact there), even if it later
    /// fails and loses that work.
    Data(SimDuration),
    /// The upstream passed its n-th checkpoint (n x its checkpoint interval of work saved).
    Checkpoint(u32),
}

impl DepKind {
    /// For `data` and `checkpoint`: the point of the upstream's work that meets the dependency,
    /// given the upstream's checkpoint interval and work (a checkpoint past its end is its end).
    /// `None` for the kinds that wait for the upstream's end.
    pub fn point(self, checkpoint: SimDuration, work: SimDuration) -> Option<SimDuration> {
        match self {
            DepKind::Data(at) => Some(at),
            DepKind::Checkpoint(n) => Some(SimDuration(u64::from(n).saturating_mul(checkpoint.as_ms())).min(work)),
            DepKind::Success | DepKind::Any | DepKind::Failure => None,
        }
    }
    /// As the canonical trace spells it after `task:` (`success` is also the bare name).
    pub fn spelling(self) -> String {
        match self {
            DepKind::Success => "success".into(),
            DepKind::Any => "any".into(),
            DepKind::Failure => "failure".into(),
            DepKind::Data(work) => format!("data={}.{:03}", work.as_ms() / 1000, work.as_ms() % 1000),
            DepKind::Checkpoint(n) => format!("checkpoint={n}"),
        }
    }
}

/// A task's start window, in trace time: it starts no earlier than `not_before`; if it has not
/// started by `not_after`, it ends `Failed` (its window closed).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Window {
    pub not_before: Option<SimTime>,
    pub not_after: Option<SimTime>,
}

impl TaskSpec {
    /// GPUs on each node the task uses, when its shape fixes them: all of them for a
    /// single-node task, `gpus_per_node` when set.
    pub fn fixed_gpus_per_node(&self) -> Option<u32> {
        if self.single_node { Some(self.gpus) } else { self.gpus_per_node.map(NonZeroU32::get) }
    }
    /// A task of `gpus` GPUs and `work` true duration, with every option at its default.
    pub fn new(name: impl Into<Name>, gpus: u32, work: SimDuration) -> TaskSpec {
        TaskSpec {
            name: name.into(),
            gpus,
            gpu_milli: None,
            gpu_type: None,
            single_node: false,
            gpus_per_node: None,
            work,
            estimate: OptDuration::NONE,
            deps: Deps::new(),
            exit_code: 0,
            options: OutOfLine::default(),
        }
    }
    /// Its rarely set fields (every one at its default unless set).
    pub fn options(&self) -> &TaskOptions {
        self.options.get()
    }
    /// Its rarely set fields, to set one (allocated on first use).
    pub fn options_mut(&mut self) -> &mut TaskOptions {
        self.options.0.get_or_insert_default()
    }
    /// The same task with these options (nothing allocated when every one is at its default).
    pub fn with_options(mut self, options: TaskOptions) -> TaskSpec {
        self.options.0 = (options != NO_OPTIONS).then(|| Box::new(options));
        self
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSpec {
    /// The job's id in its trace (kept verbatim for reports).
    pub name: Name,
    pub submit: SimTime,
    /// The queue (virtual cluster, team) the job was submitted to, if the trace says.
    pub queue: Option<Name>,
    /// Time after submit by which the job should end; it shrinks the retry budget.
    pub deadline: OptDuration,
    /// Higher is more urgent; 0 unless the trace says. Priority policies read it; others
    /// ignore it.
    pub priority: i32,
    /// When the user cancels the job (at or after `submit`): whatever of it has not ended
    /// then stops, and it ends rejected with [`CANCELLED_BY_THE_USER`].
    pub cancel: OptTime,
    /// Who submitted the job, under which account and QOS, if the trace says: what Slurm's
    /// fair share and QOS limits are kept by. Boxed: most traces name none.
    pub owner: Option<Box<Owner>>,
    /// All its tasks start at the same instant, in one decision, or none does (Slurm's
    /// heterogeneous jobs: every component starts together). A policy starts them with
    /// `Plan::start_together`; so they wait on nothing inside the job (no DAG, and one start
    /// window shared by all of them or none).
    pub co_start: bool,
    pub tasks: Tasks,
}

/// A job's submitter as a batch scheduler accounts for it (Slurm's association and QOS). An
/// empty field is not given.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Owner {
    pub account: Name,
    pub user: Name,
    pub qos: Name,
}

/// The reason a cancelled job ends with, in simulation and in live mode alike.
pub const CANCELLED_BY_THE_USER: &str = "cancelled by the user";

impl JobSpec {
    /// A job of one task: the common case in every public trace.
    pub fn single(name: impl Into<Name>, submit: SimTime, gpus: u32, work: SimDuration) -> JobSpec {
        JobSpec {
            name: name.into(),
            submit,
            queue: None,
            deadline: OptDuration::NONE,
            cancel: OptTime::NONE,
            priority: 0,
            owner: None,
            co_start: false,
            tasks: [TaskSpec::new("0", gpus, work)].into(),
        }
    }
    pub fn gpus(&self) -> u64 {
        self.tasks.iter().map(|t| u64::from(t.gpus)).sum()
    }
    /// Whether any task waits on another (a DAG job) or on a start window.
    pub fn has_dependencies(&self) -> bool {
        self.tasks.iter().any(|t| !t.deps.is_empty() || t.options().window != Window::default())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkloadError(pub String);

impl fmt::Display for WorkloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for WorkloadError {}

/// Jobs in arrival order: sorted by submit time, ties kept in the order they were given
/// (file order), which fixes job ids and so every tie-break downstream.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Workload {
    jobs: Vec<JobSpec>,
    shape: WorkloadShape,
}

/// What a run must know of its whole workload before it starts, counted as jobs join, so that
/// a streamed run learns it in one pass without holding the jobs: how many jobs and tasks,
/// the span of submissions (the time series' bucket width), the queue names (its columns) and
/// what kinds of job there are. Each question asked of the specs instead is a pass over all of
/// them (at 20k jobs, 3.5 MB out of the core's cache), and a run's setup asked half a dozen.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkloadShape {
    jobs: usize,
    tasks: usize,
    /// Some task waits on another (a DAG job).
    dependencies: bool,
    /// Some job has a cancel time.
    cancels: bool,
    /// Some job has several tasks.
    several_tasks: bool,
    first_submit: Option<SimTime>,
    last_submit: Option<SimTime>,
    /// The queues jobs name, in name order.
    queues: std::collections::BTreeSet<Name>,
}

impl WorkloadShape {
    /// Counts `job`, the next in arrival order, after checking it as [`Workload::new`] checks
    /// each job; an error names a job submitted before the last one counted.
    pub fn add(&mut self, job: &JobSpec) -> Result<(), WorkloadError> {
        job.check()?;
        if let Some(last) = self.last_submit.filter(|&last| job.submit < last) {
            return Err(WorkloadError(format!(
                "job `{}` is submitted at {}, before the job before it at {last}: jobs join in submit order",
                job.name, job.submit
            )));
        }
        self.count(job);
        Ok(())
    }

    /// The shape of a workload known by its kinds of job and its span rather than job by job
    /// (a drawn workload's, which learns them without building each job): `kinds` pairs a job
    /// with how many jobs are like it (the same tasks, queue and cancel, each submitted within
    /// `span`, the first and the last submission), each kind checked as [`WorkloadShape::add`]
    /// checks a job.
    pub fn of_kinds(
        kinds: &[(JobSpec, usize)],
        span: Option<(SimTime, SimTime)>,
    ) -> Result<WorkloadShape, WorkloadError> {
        let mut shape = WorkloadShape::default();
        for (job, like) in kinds.iter().filter(|(_, like)| *like > 0) {
            job.check()?;
            shape.count(job);
            shape.jobs += like - 1;
            shape.tasks += (like - 1) * job.tasks.len();
        }
        (shape.first_submit, shape.last_submit) = (span.map(|s| s.0), span.map(|s| s.1));
        Ok(shape)
    }

    fn count(&mut self, job: &JobSpec) {
        self.jobs += 1;
        self.tasks += job.tasks.len();
        self.dependencies |= job.tasks.iter().any(|t| !t.deps.is_empty());
        self.cancels |= job.cancel.is_some();
        self.several_tasks |= job.tasks.len() > 1;
        self.first_submit = self.first_submit.or(Some(job.submit));
        self.last_submit = Some(self.last_submit.map_or(job.submit, |last| last.max(job.submit)));
        if let Some(queue) = &job.queue
            && !self.queues.contains(queue)
        {
            self.queues.insert(queue.clone());
        }
    }

    pub fn jobs(&self) -> usize {
        self.jobs
    }
    pub fn tasks(&self) -> usize {
        self.tasks
    }
    pub fn has_jobs_of_several_tasks(&self) -> bool {
        self.several_tasks
    }
    /// The first and the last submission, if any job was counted.
    pub fn submit_span(&self) -> Option<(SimTime, SimTime)> {
        self.first_submit.zip(self.last_submit)
    }
    /// The queues jobs name, in name order.
    pub fn queues(&self) -> impl Iterator<Item = &str> {
        self.queues.iter().map(|q| q.as_str())
    }
}

impl Workload {
    pub fn new(mut jobs: Vec<JobSpec>) -> Result<Workload, WorkloadError> {
        for job in &jobs {
            job.check()?;
        }
        // Stable: equal submit times keep the caller's order.
        jobs.sort_by_key(|j| j.submit);
        let mut shape = WorkloadShape::default();
        for job in &jobs {
            shape.count(job);
        }
        Ok(Workload { jobs, shape })
    }
    /// Appends `job`, which is submitted no earlier than every job already here (live mode:
    /// a job submitted now), checked as [`Workload::new`] checks each job.
    pub fn push(&mut self, job: JobSpec) -> Result<(), WorkloadError> {
        job.check()?;
        if let Some(last) = self.jobs.last().filter(|last| job.submit < last.submit) {
            return Err(WorkloadError(format!(
                "job `{}` is submitted at {}, before job `{}` at {}: jobs join in submit order",
                job.name, job.submit, last.name, last.submit
            )));
        }
        self.shape.count(&job);
        self.jobs.push(job);
        Ok(())
    }
    /// What a run must know of the whole workload before it starts.
    pub fn shape(&self) -> &WorkloadShape {
        &self.shape
    }
    pub fn jobs(&self) -> &[JobSpec] {
        &self.jobs
    }
    /// The jobs back, in arrival order (to adjust them and build a new workload).
    pub fn into_jobs(self) -> Vec<JobSpec> {
        self.jobs
    }
    pub fn task_count(&self) -> usize {
        self.shape.tasks
    }
    /// Whether some task waits on another (some job is a DAG). Start windows are not counted,
    /// unlike [`JobSpec::has_dependencies`].
    pub fn has_dags(&self) -> bool {
        self.shape.dependencies
    }
    /// Whether some job has a cancel time.
    pub fn has_cancels(&self) -> bool {
        self.shape.cancels
    }
    /// Whether some job names a queue.
    pub fn has_queues(&self) -> bool {
        !self.shape.queues.is_empty()
    }
    /// Whether some job has several tasks.
    pub fn has_jobs_of_several_tasks(&self) -> bool {
        self.shape.several_tasks
    }
    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }
    pub fn len(&self) -> usize {
        self.jobs.len()
    }
}

/// `milli` milli-GPUs as [`TaskSpec::gpu_milli`] holds a share of one GPU: `None` unless it is
/// one (1..=999), so that an importer refuses any other value rather than truncating it.
pub fn gpu_share(milli: u32) -> Option<NonZeroU16> {
    u16::try_from(milli).ok().filter(|&m| m < 1000).and_then(NonZeroU16::new)
}

/// Whether `gpus_per_node` is set and cannot describe the task: not a divisor of its GPUs,
/// on a share of one GPU, or other than all of them on a single-node task.
fn bad_per_node(t: &TaskSpec) -> bool {
    t.gpus_per_node
        .map(NonZeroU32::get)
        .is_some_and(|n| !t.gpus.is_multiple_of(n) || t.gpu_milli.is_some() || (t.single_node && n != t.gpus))
}

impl JobSpec {
    /// What every job must be: tasks that ask for GPUs, shares of one GPU, GPUs per node that
    /// divide a gang, a cancel at or after its submit, and a valid DAG (what [`Workload::new`]
    /// checks of each job, and a trace read as a run goes checks as it reads).
    pub fn check(&self) -> Result<(), WorkloadError> {
        check_job(self)
    }
}

fn check_job(job: &JobSpec) -> Result<(), WorkloadError> {
    // The common job, one whole-GPU task that waits on nothing, passes every check below:
    // said once, without the walks over its tasks (a trace of a million jobs makes this
    // call a million times).
    if let [task] = job.tasks.as_slice()
        && task.gpus != 0
        && task.gpu_milli.is_none()
        && task.gpus_per_node.is_none()
        && task.deps.is_empty()
        && task.options.0.is_none()
        && job.cancel.get().is_none_or(|cancel| cancel >= job.submit)
    {
        return Ok(());
    }
    if job.tasks.is_empty() {
        return Err(WorkloadError(format!("job `{}` has no tasks", job.name)));
    }
    if let Some(t) = job.tasks.iter().find(|t| t.gpus == 0) {
        return Err(WorkloadError(format!(
            "job `{}` task `{}` asks for 0 GPUs; a task needs at least 1",
            job.name, t.name
        )));
    }
    let bad_share = |t: &&TaskSpec| t.gpu_milli.is_some_and(|m| m.get() >= 1000 || t.gpus != 1);
    if let Some(t) = job.tasks.iter().find(bad_share) {
        return Err(WorkloadError(format!(
            "job `{}` task `{}`: a GPU share must be 1..=999 milli-GPUs of exactly 1 GPU \
                 (got {:?} of {} GPUs); a whole GPU is no share",
            job.name, t.name, t.gpu_milli, t.gpus
        )));
    }
    if let Some(t) = job.tasks.iter().find(|t| bad_per_node(t)) {
        return Err(WorkloadError(format!(
            "job `{}` task `{}`: gpus_per_node {} must divide its {} GPUs{}",
            job.name,
            t.name,
            t.gpus_per_node.map_or(0, NonZeroU32::get),
            t.gpus,
            if t.single_node { " and equal them, as it is single-node" } else { "" }
        )));
    }
    if let Some(cancel) = job.cancel.get().filter(|&c| c < job.submit) {
        return Err(WorkloadError(format!(
            "job `{}` is cancelled at {cancel}, before it is submitted at {}",
            job.name, job.submit
        )));
    }
    check_co_start(job)?;
    crate::dag::check_job(job)?;
    Ok(())
}

/// A co-start job's tasks all become startable together: one waiting on another (a DAG), or
/// on a start window the others do not share, would never start with the rest.
fn check_co_start(job: &JobSpec) -> Result<(), WorkloadError> {
    if !job.co_start {
        return Ok(());
    }
    let window = job.tasks[0].options().window;
    if let Some(t) = job.tasks.iter().find(|t| !t.deps.is_empty() || t.options().window != window) {
        return Err(WorkloadError(format!(
            "job `{}` starts its tasks together (co_start), so its task `{}` may not wait on another task \
             of it, nor have a start window of its own (all its tasks share one window or none)",
            job.name, t.name
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_task_spec_keeps_its_rare_fields_out_of_line() {
        // 248 bytes with them inline: at a million jobs, 120 MB more. 128 with them out of line
        // while its estimate was an `Option` (16 bytes), its share a `u32`, its GPU type a
        // `String` and its dependencies a `Vec`.
        assert!(std::mem::size_of::<TaskSpec>() <= 88, "{}", std::mem::size_of::<TaskSpec>());
        assert_eq!(std::mem::size_of::<Deps>(), 8);
        assert_eq!(std::mem::size_of::<Option<Box<str>>>(), 16);
        let plain = TaskSpec::new("0", 1, SimDuration(1000));
        assert!(plain.clone().with_options(TaskOptions::default()).options.0.is_none());
        let checkpointed =
            plain.clone().with_options(TaskOptions { checkpoint: Some(SimDuration(60)), ..TaskOptions::default() });
        assert_eq!(checkpointed.options().checkpoint, Some(SimDuration(60)));
        assert_ne!(checkpointed, plain);
    }

    #[test]
    fn a_job_of_one_task_holds_it_inline() {
        // 120 bytes and a 144-byte allocation for its task before; then 232 bytes while its
        // deadline and cancel were `Option`s (16 bytes each) and its task 128 bytes; 176
        // before its owner (8 bytes: a box, absent in most traces).
        assert!(std::mem::size_of::<JobSpec>() <= 184, "{}", std::mem::size_of::<JobSpec>());
        let mut job = JobSpec::single("j", SimTime(0), 1, SimDuration(1000));
        assert!(!job.tasks.spilled());
        job.tasks.push(TaskSpec::new("1", 2, SimDuration(1000)));
        assert!(job.tasks.spilled());
        assert_eq!(job.gpus(), 3);
    }

    /// What the census answers, asked of the specs one by one.
    fn asked_of_every_spec(w: &Workload) -> (usize, bool, bool, bool, bool) {
        let jobs = w.jobs();
        (
            jobs.iter().map(|j| j.tasks.len()).sum(),
            jobs.iter().any(|j| j.tasks.iter().any(|t| !t.deps.is_empty())),
            jobs.iter().any(|j| j.cancel.get().is_some()),
            jobs.iter().any(|j| j.queue.is_some()),
            jobs.iter().any(|j| j.tasks.len() > 1),
        )
    }

    fn census_of(w: &Workload) -> (usize, bool, bool, bool, bool) {
        (w.task_count(), w.has_dags(), w.has_cancels(), w.has_queues(), w.has_jobs_of_several_tasks())
    }

    #[test]
    fn the_census_answers_as_the_specs_do_whether_built_at_once_or_pushed() {
        let plain = |i: u64| JobSpec::single(format!("j{i}"), SimTime(i), 1, SimDuration(1000));
        let mut dag = plain(1);
        dag.tasks.push(TaskSpec::new("1", 1, SimDuration(1000)));
        dag.tasks[1].deps.push(Dependency { upstream: 0, kind: DepKind::Success });
        let mut gang = plain(2);
        gang.tasks.push(TaskSpec::new("1", 2, SimDuration(1000)));
        let queued = JobSpec { queue: Some("q".into()), ..plain(3) };
        let cancelled = JobSpec { cancel: OptTime::some(SimTime(10)), ..plain(4) };
        let jobs = [plain(0), dag, gang, queued, cancelled];
        for n in 0..=jobs.len() {
            let at_once = Workload::new(jobs[..n].to_vec()).expect("valid jobs");
            let mut pushed = Workload::default();
            jobs[..n].iter().for_each(|j| pushed.push(j.clone()).expect("in submit order"));
            assert_eq!(census_of(&at_once), asked_of_every_spec(&at_once), "{n} jobs at once");
            assert_eq!(census_of(&pushed), asked_of_every_spec(&pushed), "{n} jobs pushed");
            assert_eq!(at_once, pushed);
        }
        assert_eq!(census_of(&Workload::new(jobs.to_vec()).expect("valid")), (7, true, true, true, true));
    }

    #[test]
    fn a_shape_of_kinds_is_the_shape_of_the_jobs_it_stands_for() {
        let plain = |i: u64| JobSpec::single(format!("j{i}"), SimTime(i), 1, SimDuration(1000));
        let mut gang = plain(1);
        gang.tasks.push(TaskSpec::new("1", 2, SimDuration(1000)));
        let queued = |i: u64| JobSpec { queue: Some("q".into()), ..plain(i) };
        let jobs = vec![plain(0), gang.clone(), queued(2), plain(3), gang.clone(), queued(5), plain(6)];
        let kinds = [(plain(0), 3), (gang, 2), (queued(2), 2), (queued(9), 0)];
        let shape = WorkloadShape::of_kinds(&kinds, Some((SimTime(0), SimTime(6)))).expect("valid kinds");
        assert_eq!(&shape, Workload::new(jobs).expect("valid jobs").shape());
        assert_eq!(WorkloadShape::of_kinds(&[], None), Ok(WorkloadShape::default()));
        let no_tasks = JobSpec { tasks: Tasks::new(), ..plain(0) };
        assert!(WorkloadShape::of_kinds(&[(no_tasks, 1)], Some((SimTime(0), SimTime(0)))).is_err());
    }

    #[test]
    fn options_allocated_at_their_defaults_equal_none() {
        let plain = TaskSpec::new("0", 1, SimDuration(1000));
        let mut touched = plain.clone();
        touched.options_mut().dataset = None;
        assert!(touched.options.0.is_some());
        assert_eq!(touched, plain);
        touched.options_mut().dataset = Some("imagenet".into());
        assert_ne!(touched, plain);
    }
}
