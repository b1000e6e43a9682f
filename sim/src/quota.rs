//! Queues with quotas, as Slurm partitions or Kueue ClusterQueues: each queue is bound to pools
//! and may cap the GPUs its tasks hold and the jobs it runs at once; priority and weight are
//! for the policies that share the cluster among queues. A queue that may `borrow` runs past
//! its GPU cap on GPUs nobody else uses; that capacity is reclaimed by preemption when a queue
//! within its own cap needs it (see `policies::quota`).
//!
//! A task starts only when both its queue's quota and its pool allow it: the Plan checks the
//! quota on every start, tentatively, like free GPUs.

use crate::cluster::{Cluster, ClusterError, PoolMask};
use crate::ids::{JobId, TaskId};
use crate::resident::Resident;
use crate::state::TaskState;
use crate::workload::{JobSpec, Workload};
use std::fmt;

/// One queue as the user describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSpec {
    pub name: String,
    /// Pools (by name) the queue's tasks may run in; empty: every pool.
    pub pools: Vec<String>,
    /// The most GPUs the queue's running tasks may hold (its nominal quota); `None`: no cap.
    pub max_gpus: Option<u32>,
    /// The most of its jobs that may run at once; `None`: no cap.
    pub max_running_jobs: Option<u32>,
    /// Higher is served first by priority-aware policies.
    pub priority: i32,
    /// Share of the cluster relative to other queues, for fair-share policies (>= 1).
    pub weight: u32,
    /// May run past `max_gpus` on idle GPUs, which are reclaimed by preemption when needed.
    pub borrow: bool,
}

impl QueueSpec {
    /// A queue with no caps, priority 0, weight 1, no borrowing.
    pub fn new(name: impl Into<String>) -> QueueSpec {
        QueueSpec {
            name: name.into(),
            pools: Vec::new(),
            max_gpus: None,
            max_running_jobs: None,
            priority: 0,
            weight: 1,
            borrow: false,
        }
    }
}

/// A queue's index in [`Queues`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueId(pub u32);

impl QueueId {
    pub fn index(self) -> usize {
        self.0 as usize
    }
}

/// A queue resolved against a cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Queue {
    pub name: String,
    pub pools: PoolMask,
    /// The GPU cap in milli-GPUs.
    pub max_mgpus: Option<u64>,
    pub max_running_jobs: Option<u32>,
    pub priority: i32,
    pub weight: u32,
    pub borrow: bool,
}

/// The cluster's queues (none: jobs run without quotas, their queue names only labels).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Queues {
    queues: Vec<Queue>,
}

impl Queues {
    pub fn new(specs: &[QueueSpec], cluster: &Cluster) -> Result<Queues, ClusterError> {
        let mut queues = Vec::with_capacity(specs.len());
        for (i, spec) in specs.iter().enumerate() {
            let err = |m: String| Err(ClusterError(format!("queue `{}`: {m}", spec.name)));
            if spec.name.is_empty() {
                return Err(ClusterError(format!("queue {i} has an empty name")));
            }
            if specs[..i].iter().any(|s| s.name == spec.name) {
                return err("defined twice".into());
            }
            if spec.weight == 0 {
                return err("weight must be at least 1".into());
            }
            let mut pools = PoolMask::default();
            for name in &spec.pools {
                let Some(pool) = cluster.pools().iter().find(|p| &p.name == name) else {
                    let names: Vec<&str> = cluster.pools().iter().map(|p| p.name.as_str()).collect();
                    return err(format!("no pool `{name}` in the cluster (it has {})", names.join(", ")));
                };
                pools = pools.with(pool.id);
            }
            if spec.pools.is_empty() {
                pools = cluster.eligible_pools(None);
            }
            queues.push(Queue {
                name: spec.name.clone(),
                pools,
                max_mgpus: spec.max_gpus.map(|g| u64::from(g) * 1000),
                max_running_jobs: spec.max_running_jobs,
                priority: spec.priority,
                weight: spec.weight,
                borrow: spec.borrow,
            });
        }
        Ok(Queues { queues })
    }

    pub fn is_empty(&self) -> bool {
        self.queues.is_empty()
    }
    pub fn len(&self) -> usize {
        self.queues.len()
    }
    pub fn get(&self, queue: QueueId) -> &Queue {
        &self.queues[queue.index()]
    }
    pub fn iter(&self) -> impl Iterator<Item = (QueueId, &Queue)> {
        self.queues.iter().enumerate().map(|(i, q)| (QueueId(i as u32), q))
    }
    pub fn find(&self, name: &str) -> Option<QueueId> {
        self.queues.iter().position(|q| q.name == name).map(|i| QueueId(i as u32))
    }

    /// Each job's queue: the one it names; a job that names none goes to the first queue (the
    /// default, as Slurm's default partition). `None` for every job when there are no queues.
    /// A job naming a queue that does not exist is an error.
    pub(crate) fn assign(&self, workload: &Workload) -> Result<(), String> {
        workload.jobs().iter().try_for_each(|job| self.queue_of(job).map(drop))
    }

    /// [`Queues::assign`] for one job.
    pub fn queue_of(&self, job: &JobSpec) -> Result<Option<QueueId>, String> {
        if self.is_empty() {
            return Ok(None);
        }
        match job.queue.as_deref() {
            None => Ok(Some(QueueId(0))),
            Some(name) => self.find(name).map(Some).ok_or_else(|| {
                let names: Vec<&str> = self.queues.iter().map(|q| q.name.as_str()).collect();
                format!(
                    "job `{}` is in queue `{name}`, which the cluster does not define (it has {})",
                    job.name,
                    names.join(", ")
                )
            }),
        }
    }
}

/// Each job's queue, as [`Queues::queue_of`] gives them: nothing held when there are no queues
/// (every job's is then `None`), and every resident job's otherwise.
#[derive(Debug, Clone, Default)]
pub(crate) struct JobQueues(Resident<QueueId>);

impl JobQueues {
    pub(crate) fn of(&self, job: JobId) -> Option<QueueId> {
        self.0.get(job.index()).copied()
    }
    /// The next job's.
    pub(crate) fn push(&mut self, queue: QueueId) {
        self.0.push(queue);
    }
    /// Lets `job`'s go (a streamed run letting the job go).
    pub(crate) fn let_go(&mut self, job: JobId) {
        if self.0.held() > 0 {
            self.0.let_go(job.index());
        }
    }
    /// Sets the oldest job's aside (see [`Resident::set_aside_front`]).
    pub(crate) fn set_aside_front(&mut self) {
        if self.0.held() > 0 {
            self.0.set_aside_front();
        }
    }
}

/// Which quota a start would break.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuotaBreach {
    Gpus { queue: String, used_mgpus: u64, asked_mgpus: u64, max_mgpus: u64 },
    RunningJobs { queue: String, max: u32 },
}

impl fmt::Display for QuotaBreach {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let gpus = |mgpus: u64| mgpus as f64 / 1000.0;
        match self {
            QuotaBreach::Gpus { queue, used_mgpus, asked_mgpus, max_mgpus } => write!(
                f,
                "queue `{queue}` holds {} GPUs of its {}; {} more would exceed its quota",
                gpus(*used_mgpus),
                gpus(*max_mgpus),
                gpus(*asked_mgpus)
            ),
            QuotaBreach::RunningJobs { queue, max } => {
                write!(f, "queue `{queue}` already runs {max} jobs, its most")
            }
        }
    }
}

/// What each queue uses now: milli-GPUs held and jobs running (a job runs while any of its
/// tasks does). Plans change it tentatively, as they change free GPUs.
///
/// Each job's queue is fixed at the start (`Queues::assign`) and passed in as `queue`.
#[derive(Debug, Clone, Default)]
pub struct QuotaUsage {
    /// Each job's running tasks; empty when there are no queues (nothing reads it then).
    job_running_tasks: Resident<u32>,
    used_mgpus: Vec<u64>,
    running_jobs: Vec<u32>,
}

impl QuotaUsage {
    /// Room for one more job's count (live mode: a job joins the run), as for every job when
    /// it has a queue: the same condition as `JobQueues::push`.
    pub(crate) fn add_job(&mut self) {
        self.job_running_tasks.push(0);
    }
    /// Lets `job`'s count go (a streamed run letting the job go).
    pub(crate) fn let_go(&mut self, job: JobId) {
        if self.job_running_tasks.held() > 0 {
            self.job_running_tasks.let_go(job.index());
        }
    }
    /// Sets the oldest job's count aside (see [`Resident::set_aside_front`]).
    pub(crate) fn set_aside_front(&mut self) {
        if self.job_running_tasks.held() > 0 {
            self.job_running_tasks.set_aside_front();
        }
    }

    pub(crate) fn new(queues: &Queues) -> QuotaUsage {
        QuotaUsage {
            job_running_tasks: Resident::default(),
            used_mgpus: vec![0; queues.len()],
            running_jobs: vec![0; queues.len()],
        }
    }
    pub fn used_mgpus(&self, queue: QueueId) -> u64 {
        self.used_mgpus[queue.index()]
    }
    pub fn running_jobs(&self, queue: QueueId) -> u32 {
        self.running_jobs[queue.index()]
    }
    /// Whether `queue` holds more than its GPU cap (it is borrowing).
    pub fn borrowing(&self, queues: &Queues, queue: QueueId) -> bool {
        queues.get(queue).max_mgpus.is_some_and(|max| self.used_mgpus(queue) > max)
    }

    /// Whether starting `task` now keeps its queue within quota; borrowing queues may pass
    /// their GPU cap (never their running-jobs cap).
    pub fn check(&self, queues: &Queues, queue: Option<QueueId>, task: &TaskState) -> Result<(), QuotaBreach> {
        let Some(q) = queue else { return Ok(()) };
        let queue = queues.get(q);
        let asked = task.mgpus();
        if let Some(max) = queue.max_mgpus
            && !queue.borrow
            && self.used_mgpus(q) + asked > max
        {
            return Err(QuotaBreach::Gpus {
                queue: queue.name.clone(),
                used_mgpus: self.used_mgpus(q),
                asked_mgpus: asked,
                max_mgpus: max,
            });
        }
        if let Some(max) = queue.max_running_jobs
            && self.job_running_tasks[task.job.index()] == 0
            && self.running_jobs(q) >= max
        {
            return Err(QuotaBreach::RunningJobs { queue: queue.name.clone(), max });
        }
        Ok(())
    }

    /// Whether `task` fits its queue's GPU cap without borrowing (what entitles it to reclaim).
    pub fn within_cap(&self, queues: &Queues, queue: Option<QueueId>, task: &TaskState) -> bool {
        let Some(q) = queue else { return false };
        queues.get(q).max_mgpus.is_some_and(|max| self.used_mgpus(q) + task.mgpus() <= max)
    }

    pub(crate) fn start(&mut self, queue: Option<QueueId>, task: &TaskState) {
        let Some(q) = queue else { return };
        let job = task.job.index();
        self.job_running_tasks[job] += 1;
        self.used_mgpus[q.index()] += task.mgpus();
        if self.job_running_tasks[job] == 1 {
            self.running_jobs[q.index()] += 1;
        }
    }

    pub(crate) fn stop(&mut self, queue: Option<QueueId>, task: &TaskState) {
        let Some(q) = queue else { return };
        let job = task.job.index();
        self.job_running_tasks[job] -= 1;
        self.used_mgpus[q.index()] -= task.mgpus();
        if self.job_running_tasks[job] == 0 {
            self.running_jobs[q.index()] -= 1;
        }
    }

    /// Recounts usage from the running tasks: `None` when it agrees, else what differs.
    pub(crate) fn recount_differs(
        &self,
        tasks: &Resident<TaskState>,
        job_queue: &JobQueues,
        running: impl Fn(TaskId) -> bool,
    ) -> Option<String> {
        let mut again = QuotaUsage {
            job_running_tasks: self.job_running_tasks.clone(),
            used_mgpus: vec![0; self.used_mgpus.len()],
            running_jobs: vec![0; self.running_jobs.len()],
        };
        again.job_running_tasks.values_mut().for_each(|n| *n = 0);
        for (i, t) in tasks.iter() {
            if running(TaskId::from_index(i)) {
                again.start(job_queue.of(t.job), t);
            }
        }
        let same = again.job_running_tasks == self.job_running_tasks
            && again.used_mgpus == self.used_mgpus
            && again.running_jobs == self.running_jobs;
        (!same).then(|| {
            format!(
                "queue usage {:?} / {:?}, recounted {:?} / {:?}",
                self.used_mgpus, self.running_jobs, again.used_mgpus, again.running_jobs
            )
        })
    }
}
