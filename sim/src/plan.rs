//! A policy's decisions for one decision point, validated as they are made. Every accepted
//! decision is applied tentatively to the free-GPU index at once, so the policy's next query
//! sees it; a savepoint lets a policy try a combination (say, preemptions that would make room
//! for a gang) and discard it whole if it does not work out. The Controller commits the plan
//! after `decide` returns.

#![deny(missing_docs)]

use crate::alloc::{FreeGpus, GpuList, WHOLE_GPU_MILLI};
use crate::cluster::Cluster;
use crate::ids::{GpuId, JobId, PoolId, TaskId};
use crate::quota::{QueueId, Queues, QuotaUsage};
use crate::resident::Resident;
use crate::rng::StreamRng;
use crate::state::{JobState, TaskState, TaskStatus};
use crate::time::SimTime;
use std::fmt;

/// A decision the plan refused, with the rule it broke.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    /// A start for a task that is not waiting to start (running, finished, failed for good,
    /// not arrived, or waiting on its DAG).
    NotStartable {
        /// The task.
        task: TaskId,
        /// Its status now.
        status: TaskStatus,
    },
    /// A second decision for a task this plan already started, preempted or rejected.
    AlreadyDecided {
        /// The task.
        task: TaskId,
    },
    /// A start with more or fewer GPUs than the gang asks for: gangs are all-or-nothing.
    GangSize {
        /// The task.
        task: TaskId,
        /// The GPUs it asks for.
        asked: u32,
        /// The GPUs the plan gave.
        given: usize,
    },
    /// A GPU id past the cluster's GPUs.
    UnknownGpu {
        /// The GPU.
        gpu: GpuId,
    },
    /// A GPU held by another task, or not usable (failed, on a dead node, a spare in reserve),
    /// or (for a share) without room: no double allocation.
    GpuNotFree {
        /// The GPU.
        gpu: GpuId,
    },
    /// A GPU listed twice in one start.
    DuplicateGpu {
        /// The GPU.
        gpu: GpuId,
    },
    /// A gang spread over two pools: a gang lies inside one pool (one GPU type).
    MixedPools {
        /// The task.
        task: TaskId,
    },
    /// A start in a pool whose GPU type the task does not accept.
    WrongGpuType {
        /// The task.
        task: TaskId,
        /// The pool of the GPUs given.
        pool: PoolId,
    },
    /// A task whose shape fixes its GPUs on each node (all on one node, or `gpus_per_node`)
    /// given GPUs split otherwise.
    WrongNodeSplit {
        /// The task.
        task: TaskId,
        /// The GPUs it must have on each node it uses.
        gpus_per_node: u32,
        /// Its GPUs (all of them when it is single-node).
        gpus: u32,
    },
    /// A preemption of a task that is not running.
    NotRunning {
        /// The task.
        task: TaskId,
        /// Its status now.
        status: TaskStatus,
    },
    /// A rejection of a job that has ended, has not arrived, or has a task running.
    JobNotRejectable {
        /// The job.
        job: JobId,
    },
    /// A wake-up at or before now.
    WakeNotInFuture {
        /// The time asked for.
        at: SimTime,
        /// Now.
        now: SimTime,
    },
    /// A lone start of a task whose job starts its tasks together (`JobSpec::co_start`):
    /// they start in one [`Plan::start_together`], or none does.
    CoStart {
        /// The task.
        task: TaskId,
        /// Its job.
        job: JobId,
    },
    /// A [`Plan::start_together`] that leaves out a waiting task of its co-start job, or
    /// names a task of another job, or none at all.
    NotTogether {
        /// The job of the first task named.
        job: Option<JobId>,
        /// The task left out or of another job.
        task: Option<TaskId>,
    },
    /// A start its queue's quota does not allow.
    Quota {
        /// The task.
        task: TaskId,
        /// Which limit it would break.
        breach: crate::quota::QuotaBreach,
    },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::NotStartable { task, status } => {
                write!(f, "{task} cannot start: it is {}", status.as_str())
            }
            PlanError::AlreadyDecided { task } => {
                write!(f, "{task} already has a decision in this plan")
            }
            PlanError::GangSize { task, asked, given } => {
                write!(f, "gangs are all-or-nothing: {task} asks for {asked} GPUs, the plan gave {given}")
            }
            PlanError::UnknownGpu { gpu } => write!(f, "{gpu} does not exist"),
            PlanError::GpuNotFree { gpu } => write!(f, "{gpu} is not free (no double allocation)"),
            PlanError::DuplicateGpu { gpu } => write!(f, "{gpu} is listed twice"),
            PlanError::MixedPools { task } => {
                write!(f, "{task}: a gang must lie inside one pool (one GPU type)")
            }
            PlanError::WrongGpuType { task, pool } => {
                write!(f, "{task} excludes the GPU type of pool {pool}")
            }
            PlanError::WrongNodeSplit { task, gpus_per_node, gpus } if gpus_per_node == gpus => {
                write!(f, "{task} must run on a single node")
            }
            PlanError::WrongNodeSplit { task, gpus_per_node, .. } => {
                write!(f, "{task} must have exactly {gpus_per_node} of its GPUs on each node it uses")
            }
            PlanError::NotRunning { task, status } => {
                write!(f, "{task} cannot be preempted: it is {}", status.as_str())
            }
            PlanError::JobNotRejectable { job } => {
                write!(f, "{job} cannot be rejected: it has ended, has not arrived, or has a task running")
            }
            PlanError::WakeNotInFuture { at, now } => {
                write!(f, "wake_at({at}) is not after now ({now})")
            }
            PlanError::Quota { task, breach } => write!(f, "{task} cannot start: {breach}"),
            PlanError::CoStart { task, job } => {
                write!(f, "{task} cannot start alone: {job} starts all its tasks together (start_together)")
            }
            PlanError::NotTogether { job: None, .. } => write!(f, "start_together names no task"),
            PlanError::NotTogether { job: Some(job), task } => match task {
                Some(task) => write!(
                    f,
                    "start_together of {job} leaves out or adds {task}: a co-start job's waiting tasks start all at once"
                ),
                None => write!(f, "start_together of {job}: the tasks named are not its waiting tasks"),
            },
        }
    }
}

impl std::error::Error for PlanError {}

/// One accepted decision.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Start `task` on `gpus`.
    Start {
        /// The task.
        task: TaskId,
        /// Its GPUs, as many as its gang (one for a share of a GPU): a thin vector, as the
        /// task keeps it while it runs (`TaskState::placed`).
        gpus: thin_vec::ThinVec<GpuId>,
    },
    /// Preempt a running task; it waits to restart from its progress.
    Preempt {
        /// The task.
        task: TaskId,
        /// Why, in the decision log (empty: the policy's ordering).
        reason: String,
    },
    /// End a waiting job, rejected.
    Reject {
        /// The job.
        job: JobId,
        /// Why, shown in the job table.
        reason: String,
    },
    /// Call the policy again at this time even if nothing else happens.
    WakeAt(SimTime),
}

/// Per-task mark: what this plan has decided about it so far.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum Mark {
    #[default]
    None,
    Started,
    Preempted,
    Rejected,
}

/// A co-start job's waiting tasks, listed before they start (a Slurm het job has a few).
type TaskList = smallvec::SmallVec<[TaskId; 4]>;

/// A position in the plan to roll back to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Savepoint(usize);

/// A policy's decisions for one decision point, validated and applied tentatively as they
/// are made (see [`crate::Policy`] for what it refuses and why); committed by the Controller
/// after `decide` returns.
pub struct Plan<'a> {
    pub(crate) now: SimTime,
    pub(crate) cluster: &'a Cluster,
    pub(crate) jobs: &'a Resident<JobState>,
    pub(crate) tasks: &'a Resident<TaskState>,
    pub(crate) free: &'a mut FreeGpus,
    pub(crate) marks: &'a mut Resident<Mark>,
    pub(crate) queues: &'a Queues,
    /// Each job's queue (`None` without queues).
    pub(crate) job_queue: &'a crate::quota::JobQueues,
    pub(crate) quota: &'a mut QuotaUsage,
    pub(crate) rng: &'a mut StreamRng,
    pub(crate) decisions: Vec<Decision>,
    /// Emptied GPU lists of ended attempts (see `Controller::recycle`): a start fills one
    /// instead of allocating, as most decision points start what just finished made room for.
    pub(crate) spare_lists: &'a mut Vec<thin_vec::ThinVec<GpuId>>,
    pub(crate) refused: u64,
}

impl<'a> Plan<'a> {
    /// The time of this decision point.
    pub fn now(&self) -> SimTime {
        self.now
    }
    /// Free GPUs as of now, after this plan's decisions so far.
    pub fn free(&self) -> &FreeGpus {
        self.free
    }
    /// The policy's own random stream (`policy:<name>` under the run seed).
    pub fn rng(&mut self) -> &mut StreamRng {
        self.rng
    }
    /// The decisions accepted so far, in order.
    pub fn decisions(&self) -> &[Decision] {
        &self.decisions
    }
    /// Queue usage as of now, after this plan's decisions so far.
    pub fn quota(&self) -> &QuotaUsage {
        self.quota
    }
    /// Whether `task` may start now as far as its queue's quota goes (GPUs aside).
    pub fn quota_allows(&self, task: TaskId) -> bool {
        if self.queues.is_empty() {
            return true; // no queues, no quotas: and the task's state stays unread
        }
        let t = &self.tasks[task.index()];
        self.quota.check(self.queues, self.job_queue.of(t.job), t).is_ok()
    }
    /// Whether `task` fits its queue's GPU cap without borrowing: what entitles it to reclaim
    /// GPUs other queues borrowed.
    pub fn within_cap(&self, task: TaskId) -> bool {
        let t = &self.tasks[task.index()];
        self.quota.within_cap(self.queues, self.job_queue.of(t.job), t)
    }
    /// Whether `queue` holds more GPUs than its cap now (it is borrowing).
    pub fn borrowing(&self, queue: QueueId) -> bool {
        self.quota.borrowing(self.queues, queue)
    }
    /// The queue of `task`'s job, if the cluster has queues.
    pub fn queue_of_task(&self, task: TaskId) -> Option<QueueId> {
        self.job_queue.of(self.tasks[task.index()].job)
    }
    /// Tells the quota that `task` starts (`+`) or stops (`-`), tentatively.
    fn count(&mut self, task: TaskId, starts: bool) {
        let t = &self.tasks[task.index()];
        let queue = self.job_queue.of(t.job);
        if starts { self.quota.start(queue, t) } else { self.quota.stop(queue, t) }
    }
    /// Whether this plan already started, preempted or rejected `task`.
    pub fn is_decided(&self, task: TaskId) -> bool {
        self.marks[task.index()] != Mark::None
    }

    /// Starts `task` on exactly `gpus`: all of them free, one pool of an allowed type, one node
    /// if the task asks for it. All or nothing.
    ///
    /// A task of a co-start job is refused: its job's tasks start in one
    /// [`Plan::start_together`].
    pub fn start(&mut self, task: TaskId, gpus: &[GpuId]) -> Result<(), PlanError> {
        if self.co_starts(task) {
            self.refused += 1;
            return Err(PlanError::CoStart { task, job: self.tasks[task.index()].job });
        }
        self.start_part(task, gpus).inspect_err(|_| self.refused += 1)
    }

    /// A start checked, taken and recorded, without the co-start rule (a part of a
    /// together-start, or a lone task); nothing changes when it is refused.
    fn start_part(&mut self, task: TaskId, gpus: &[GpuId]) -> Result<(), PlanError> {
        self.check_and_take(task, gpus)?;
        self.count(task, true);
        self.marks[task.index()] = Mark::Started;
        let mut list = self.spare_lists.pop().unwrap_or_default();
        list.extend(gpus.iter().copied());
        self.decisions.push(Decision::Start { task, gpus: list });
        Ok(())
    }

    /// Whether `task` waits to start as of this plan: startable and undecided, or preempted
    /// by this plan (a co-start job's preempted tasks restart together).
    fn waits_here(&self, task: TaskId) -> bool {
        match self.marks[task.index()] {
            Mark::None => self.tasks[task.index()].status.is_startable(),
            Mark::Preempted => true,
            Mark::Started | Mark::Rejected => false,
        }
    }

    /// The tasks of `job` waiting to start as of this plan, in id order: what a
    /// [`Plan::start_together`] of a co-start job must name.
    pub fn waiting_tasks(&self, job: JobId) -> impl Iterator<Item = TaskId> + '_ {
        self.jobs[job.index()].tasks().filter(move |&t| self.waits_here(t))
    }

    /// Whether `task`'s job starts its tasks together (`JobSpec::co_start`).
    pub fn co_starts(&self, task: TaskId) -> bool {
        self.tasks.get(task.index()).is_some_and(|t| self.jobs[t.job.index()].co_start)
    }

    /// Starts several tasks of one job at once, each on its GPUs and each checked as
    /// [`Plan::start`] checks it: all of them or none (a refusal leaves the plan as it was).
    /// For a co-start job it must name every task of the job waiting to start
    /// ([`Plan::waiting_tasks`]), in any order; for another job, any of its tasks.
    pub fn start_together(&mut self, starts: &[(TaskId, &[GpuId])]) -> Result<(), PlanError> {
        let result = self.check_together(starts).and_then(|()| {
            let savepoint = self.savepoint();
            starts
                .iter()
                .try_for_each(|&(task, gpus)| self.start_part(task, gpus))
                .inspect_err(|_| self.rollback(savepoint))
        });
        result.inspect_err(|_| self.refused += 1)
    }

    /// The tasks of a together-start: one job's, and for a co-start job exactly its waiting
    /// ones (each once: a second start of one is refused as decided).
    fn check_together(&self, starts: &[(TaskId, &[GpuId])]) -> Result<(), PlanError> {
        let &(first, _) = starts.first().ok_or(PlanError::NotTogether { job: None, task: None })?;
        let t = self
            .tasks
            .get(first.index())
            .ok_or(PlanError::NotStartable { task: first, status: TaskStatus::Pending })?;
        let job = t.job;
        let stranger = starts.iter().find(|&&(task, _)| self.tasks.get(task.index()).is_none_or(|t| t.job != job));
        if let Some(&(task, _)) = stranger {
            return Err(PlanError::NotTogether { job: Some(job), task: Some(task) });
        }
        if !self.jobs[job.index()].co_start {
            return Ok(());
        }
        let left_out = self.waiting_tasks(job).find(|w| !starts.iter().any(|&(task, _)| task == *w));
        if let Some(task) = left_out {
            return Err(PlanError::NotTogether { job: Some(job), task: Some(task) });
        }
        Ok(())
    }

    /// Starts every task of `job` waiting to start ([`Plan::waiting_tasks`], in id order),
    /// each on the GPUs `place` puts in the list it is given (empty), seeing the free GPUs
    /// after the tasks before it took theirs: all of them or none. `Ok(false)`: `place` found
    /// no room for one (nothing started); `Err`: a start was refused (nothing started).
    /// What a policy that places task by task calls for a co-start job.
    pub fn start_together_with(
        &mut self,
        job: JobId,
        mut place: impl FnMut(TaskId, &FreeGpus, &mut GpuList) -> bool,
    ) -> Result<bool, PlanError> {
        let tasks: TaskList = self.waiting_tasks(job).collect();
        if tasks.is_empty() {
            self.refused += 1;
            return Err(PlanError::NotTogether { job: Some(job), task: None });
        }
        let savepoint = self.savepoint();
        let mut gpus = GpuList::new();
        for task in tasks {
            gpus.clear();
            if !place(task, self.free, &mut gpus) {
                self.rollback(savepoint);
                return Ok(false);
            }
            if let Err(refused) = self.start_part(task, &gpus) {
                self.rollback(savepoint);
                self.refused += 1;
                return Err(refused);
            }
        }
        Ok(true)
    }

    /// Checks a start and takes its GPUs (a share of each, for a share of one GPU); nothing is
    /// taken when it is refused.
    fn check_and_take(&mut self, task: TaskId, gpus: &[GpuId]) -> Result<(), PlanError> {
        let (t, pool) = self.check_task(task, gpus)?;
        let (milli, per_node) = (t.milli, t.per_node());
        let split = |plan: &Self| per_node.is_none_or(|n| plan.cluster.splits_as(gpus, n));
        if milli >= WHOLE_GPU_MILLI && split(self) && self.free.take_gang_in(gpus, pool) {
            return Ok(()); // the common case: every GPU checked and taken in one pass
        }
        // Refused (or a share): the checks one by one, for the rule broken first.
        self.check_gpus(task, gpus, pool)?;
        if milli < WHOLE_GPU_MILLI {
            for &gpu in gpus {
                self.free.take_share(gpu, milli);
            }
        } else if let Err(gpu) = self.free.take_gang(gpus) {
            // Every GPU was free when checked: one that is not is listed twice.
            return Err(PlanError::DuplicateGpu { gpu });
        }
        Ok(())
    }

    /// The checks of a start that look at the task and the gang's first GPU: the task's state
    /// and quota, the gang's size, the first GPU's pool (the gang's pool, returned).
    fn check_task(&self, task: TaskId, gpus: &[GpuId]) -> Result<(&'a TaskState, PoolId), PlanError> {
        let tasks: &'a Resident<TaskState> = self.tasks;
        let t = tasks.get(task.index()).ok_or(PlanError::NotStartable { task, status: TaskStatus::Pending })?;
        // A task preempted by this very plan may start again elsewhere (a migration): it
        // restarts from its progress and pays the restart overhead, as after any preemption.
        let preempted_here = self.marks[task.index()] == Mark::Preempted;
        if self.marks[task.index()] != Mark::None && !preempted_here {
            return Err(PlanError::AlreadyDecided { task });
        }
        if !t.status.is_startable() && !preempted_here {
            return Err(PlanError::NotStartable { task, status: t.status });
        }
        // A task this plan preempted no longer counts against its queue (`preempt` said so).
        let queue = self.job_queue.of(t.job);
        self.quota.check(self.queues, queue, t).map_err(|breach| PlanError::Quota { task, breach })?;
        if gpus.len() != t.gpus as usize {
            return Err(PlanError::GangSize { task, asked: t.gpus, given: gpus.len() });
        }
        let first = *gpus.first().ok_or(PlanError::GangSize { task, asked: t.gpus, given: 0 })?;
        if first.0 >= self.cluster.gpu_count() {
            return Err(PlanError::UnknownGpu { gpu: first });
        }
        let pool = self.cluster.pool_of(first);
        if !t.pools.contains(pool) {
            return Err(PlanError::WrongGpuType { task, pool });
        }
        Ok((t, pool))
    }

    /// The checks of a start GPU by GPU (each exists, is free or has room for the share, and
    /// lies in `pool`), then the node split its shape fixes. Duplicates are found as the GPUs
    /// are taken (one pass, not a pass per GPU).
    fn check_gpus(&self, task: TaskId, gpus: &[GpuId], pool: PoolId) -> Result<(), PlanError> {
        let t = &self.tasks[task.index()];
        for &gpu in gpus {
            if gpu.0 >= self.cluster.gpu_count() {
                return Err(PlanError::UnknownGpu { gpu });
            }
            let gpu_node = self.cluster.node_of(gpu);
            let free = if t.milli < WHOLE_GPU_MILLI {
                self.free.can_share(gpu, t.milli)
            } else {
                self.free.is_free(gpu_node, gpu)
            };
            if !free {
                return Err(PlanError::GpuNotFree { gpu });
            }
            if self.cluster.pool_of(gpu) != pool {
                return Err(PlanError::MixedPools { task });
            }
        }
        if let Some(per_node) = t.per_node()
            && !self.cluster.splits_as(gpus, per_node)
        {
            return Err(PlanError::WrongNodeSplit { task, gpus_per_node: per_node, gpus: t.gpus });
        }
        Ok(())
    }

    /// Preempts a running task: its GPUs are free for the rest of this plan, and it waits to
    /// restart from where it was (paying the restart overhead when it does, which may be later
    /// in this same plan, on other GPUs). A task of a co-start job takes its job's other
    /// running tasks with it (before it, in the decision log), as Slurm requeues a
    /// heterogeneous job whole; they restart together.
    pub fn preempt(&mut self, task: TaskId) -> Result<(), PlanError> {
        self.preempt_for(task, String::new())
    }

    /// Preempts a running task, saying why in the decision log (say, which queue reclaims
    /// its GPUs and how little work the choice loses).
    pub fn preempt_for(&mut self, task: TaskId, reason: impl Into<String>) -> Result<(), PlanError> {
        let status = self.tasks[task.index()].status;
        if self.marks[task.index()] != Mark::None {
            self.refused += 1;
            return Err(PlanError::AlreadyDecided { task });
        }
        if status != TaskStatus::Running {
            self.refused += 1;
            return Err(PlanError::NotRunning { task, status });
        }
        let reason = reason.into();
        let job = self.tasks[task.index()].job;
        if self.jobs[job.index()].co_start {
            // Slurm requeues a heterogeneous job whole: its other running tasks stop with it,
            // and all of them restart together.
            let siblings = self.jobs[job.index()].tasks().filter(|&t| {
                t != task && self.marks[t.index()] == Mark::None && self.tasks[t.index()].status == TaskStatus::Running
            });
            for sibling in siblings.collect::<TaskList>() {
                self.take_back(sibling, reason.clone());
            }
        }
        self.take_back(task, reason);
        Ok(())
    }

    /// Preempts a running task this plan has not decided on.
    fn take_back(&mut self, task: TaskId, reason: String) {
        // A running task's GPUs are usable (an invariant), so they go back to the free set.
        self.give_back(task, &self.tasks[task.index()].placed);
        self.count(task, false);
        self.marks[task.index()] = Mark::Preempted;
        self.decisions.push(Decision::Preempt { task, reason });
    }

    /// Rejects a waiting job: it ends `rejected` with `reason`, shown in the job table.
    pub fn reject(&mut self, job: JobId, reason: impl Into<String>) -> Result<(), PlanError> {
        let j = &self.jobs[job.index()];
        let rejectable = j.in_system()
            && j.tasks()
                .all(|t| self.tasks[t.index()].status != TaskStatus::Running && self.marks[t.index()] == Mark::None);
        if !rejectable {
            self.refused += 1;
            return Err(PlanError::JobNotRejectable { job });
        }
        for t in j.tasks() {
            self.marks[t.index()] = Mark::Rejected;
        }
        self.decisions.push(Decision::Reject { job, reason: reason.into() });
        Ok(())
    }

    /// Asks for a decision point at `at` even if nothing else happens then.
    pub fn wake_at(&mut self, at: SimTime) -> Result<(), PlanError> {
        if at <= self.now {
            self.refused += 1;
            return Err(PlanError::WakeNotInFuture { at, now: self.now });
        }
        self.decisions.push(Decision::WakeAt(at));
        Ok(())
    }

    /// Returns `task`'s hold on `gpus` (whole, or its share) to the free set.
    fn give_back(&mut self, task: TaskId, gpus: &[GpuId]) {
        let milli = self.tasks[task.index()].milli;
        if milli < WHOLE_GPU_MILLI {
            for &gpu in gpus {
                self.free.release_share(gpu, milli, true);
            }
        } else {
            self.free.release_gang(gpus);
        }
    }

    /// The plan as it stands, to [`Plan::rollback`] to.
    pub fn savepoint(&self) -> Savepoint {
        Savepoint(self.decisions.len())
    }

    /// Undoes every decision made after `savepoint`, newest first.
    pub fn rollback(&mut self, savepoint: Savepoint) {
        while self.decisions.len() > savepoint.0 {
            match self.decisions.pop().expect("len checked") {
                Decision::Start { task, gpus } => {
                    self.give_back(task, &gpus);
                    self.count(task, false);
                    // Running in the committed state means this plan preempted it first.
                    let running = self.tasks[task.index()].status == TaskStatus::Running;
                    self.marks[task.index()] = if running { Mark::Preempted } else { Mark::None };
                }
                Decision::Preempt { task, .. } => {
                    self.count(task, true);
                    let t = &self.tasks[task.index()];
                    if t.milli < WHOLE_GPU_MILLI {
                        for &gpu in &t.placed {
                            self.free.take_share(gpu, t.milli);
                        }
                    } else {
                        let retaken = self.free.take_gang(&t.placed);
                        debug_assert!(retaken.is_ok(), "a rolled-back preemption's GPUs were free");
                    }
                    self.marks[task.index()] = Mark::None;
                }
                Decision::Reject { job, .. } => {
                    for t in self.jobs[job.index()].tasks() {
                        self.marks[t.index()] = Mark::None;
                    }
                }
                Decision::WakeAt(_) => {}
            }
        }
    }
}
