//! The Controller: owns the cluster and job state, applies events, calls the policy at each
//! decision point and commits its validated plan. It knows nothing of how time passes: the
//! virtual-time engine and the live coordinator both drive it, and both turn its [`Effect`]s
//! into what comes next (a future completion event, or a launched process).

mod config;
mod deps;
mod faults;
mod horizon;
mod invariants;
mod records;
mod release;
mod spares;

pub use config::{ControllerConfig, DEFAULT_HORIZON, RetireRule, SET_ASIDE_AFTER};

use crate::alloc::FreeGpus;
use crate::alloc::WHOLE_GPU_MILLI;
use crate::census::Census;
use crate::cluster::Cluster;
use crate::deps::{Dag, Timer};
use crate::digest::Digest;
use crate::faults::Faults;
use crate::health::Health;
use crate::ids::{GpuId, JobId, TaskId};
use crate::job_status::JobOutcome;
use crate::occupancy::Occupancy;
use crate::plan::{Decision, Mark, Plan};
use crate::policy::Policy;
use crate::quota::QueueId;
use crate::quota::{Queues, QuotaUsage};
use crate::record::{DecisionKind, DecisionRecord, RunStats};
use crate::resident::Resident;
use crate::rng::{StreamRng, stream};
use crate::series::{Levels, QueueDelta, Series};
use crate::speeds::SpeedProfiles;
use crate::state::{JobState, Losses, OptIndex, TaskState, TaskStatus};
use crate::time::{OptTime, SimDuration, SimTime};
use crate::view::{Change, ClusterView};
use crate::workload::{JobSpec, Workload, WorkloadShape};
use thin_vec::ThinVec;

/// What a committed plan asks the driver to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Run the task's attempt; undisturbed, it completes at `finish_at`.
    Started { task: TaskId, job: JobId, attempt: u32, finish_at: SimTime },
    /// Stop the task (preempted); its completion event, if any, is now stale.
    Stopped { task: TaskId },
    /// Call the policy again at this time.
    WakeAt(SimTime),
}

/// The run's state and what coordinates it. Its fields are private to this module (its
/// submodules are its parts: faults, DAGs, releases, spares, invariants); the rooms with
/// counters (`occupancy`, `census`, `releases`, `dag`, `spares`, `free`, `health`, `quota`)
/// change only through their own methods, and check themselves from scratch.
pub struct Controller {
    config: ControllerConfig,
    cluster: Cluster,
    /// What the run knows of its whole workload (which may still be arriving).
    shape: WorkloadShape,
    /// The jobs as submitted, their states and their tasks', from the oldest job a streamed
    /// run still holds to the newest admitted (see `resident.rs`).
    specs: Resident<JobSpec>,
    jobs: Resident<JobState>,
    tasks: Resident<TaskState>,
    free: FreeGpus,
    /// What is broken (truth) and what the scheduler knows is unusable.
    health: Health,
    /// Who holds each GPU; tasks running, milli-GPUs held and stalled.
    occupancy: Occupancy,
    /// Tasks waiting, jobs in the system.
    census: Census,
    marks: Resident<Mark>,
    /// The plan's decision list, kept between decision points so that deciding allocates
    /// nothing in steady state.
    decision_buf: Vec<Decision>,
    /// Empty GPU lists kept for the plan's starts (see [`Controller::recycle`]).
    spare_lists: Vec<ThinVec<GpuId>>,
    rng: StreamRng,
    policy_name: String,
    changes: Vec<Change>,
    now: SimTime,
    /// Each job's queue, as an index into the series' queue names.
    series_queue: Resident<u32>,
    /// Each job's queue with quotas (none held when the cluster defines no queues).
    job_queue: crate::quota::JobQueues,
    series: Series,
    dag: Dag,
    queues: Queues,
    quota: QuotaUsage,
    datasets: crate::data::Datasets,
    speed_profiles: SpeedProfiles,
    /// Timers asked for since the driver last took them (see `take_timers`).
    timers: Vec<(SimTime, Timer)>,
    stats: RunStats,
    digest: Digest,
    decision_log: Vec<DecisionRecord>,
    /// Failures learned of, retired nodes, health samples.
    faults: Faults,
    spares: crate::spares::Spares,
    /// GPUs let go of and not yet back in the free pool (the release latency).
    releases: crate::release::Releases,
    /// The GPU-time the tasks of jobs let go held (what the invariants' sum over the tasks
    /// held misses).
    gone_mgpu_ms: u128,
    /// Jobs ended and told, waiting to leave (see `records.rs`).
    leaving: records::Leaving,
}

impl Controller {
    /// A Controller with every job of `workload` admitted (live mode, and runs driven by
    /// hand); a streamed run starts from [`Controller::expecting`] and admits jobs as they come.
    pub fn new(cluster: Cluster, workload: Workload, policy_name: &str, config: ControllerConfig) -> Controller {
        let mut controller = Controller::expecting(cluster, workload.shape(), policy_name, config);
        for spec in workload.into_jobs() {
            controller.admit(spec, None, Vec::new());
        }
        controller
    }

    /// A Controller for a workload of `shape`, with no job admitted yet.
    pub fn expecting(
        cluster: Cluster,
        shape: &WorkloadShape,
        policy_name: &str,
        config: ControllerConfig,
    ) -> Controller {
        let spare_nodes = config.spare_nodes;
        let mut controller = Controller::without_spares(cluster, shape, policy_name, config);
        if spare_nodes > 0 {
            controller.reserve_spares(spare_nodes);
        }
        controller
    }

    fn without_spares(
        cluster: Cluster,
        shape: &WorkloadShape,
        policy_name: &str,
        config: ControllerConfig,
    ) -> Controller {
        let stats = RunStats { cluster_gpus: cluster.gpu_count(), ..RunStats::default() };
        let queues = std::iter::once("-").chain(shape.queues()).map(str::to_string).collect();
        let width = config.series_bucket.unwrap_or_else(|| crate::series::auto_width(shape));
        let series = Series::new(width, queues);
        Controller {
            series: if config.record_series { series } else { series.off() },
            dag: Dag::default(),
            quota: QuotaUsage::new(&Queues::default()),
            queues: Queues::default(),
            datasets: crate::data::Datasets::default(),
            speed_profiles: SpeedProfiles::default(),
            timers: Vec::new(),
            series_queue: Resident::default(),
            job_queue: Default::default(),
            rng: stream(config.seed, &format!("policy:{policy_name}")),
            policy_name: policy_name.to_string(),
            free: FreeGpus::all_free(&cluster),
            health: Health::new(&cluster),
            occupancy: Occupancy::new(cluster.gpu_count()),
            census: Census::default(),
            marks: Resident::default(),
            decision_buf: Vec::new(),
            spare_lists: Vec::new(),
            changes: Vec::new(),
            now: SimTime::ZERO,
            stats,
            digest: Digest::new(),
            decision_log: Vec::new(),
            faults: Faults::default(),
            spares: Default::default(),
            releases: crate::release::Releases::new(config.release_latency, cluster.gpu_count()),
            config,
            cluster,
            shape: shape.clone(),
            specs: Resident::default(),
            jobs: Resident::default(),
            tasks: Resident::default(),
            gone_mgpu_ms: 0,
            leaving: Default::default(),
        }
    }

    /// Puts jobs in `queues` (resolved against this cluster): each task may then run only in
    /// its queue's pools, within its queue's quota. Call before anything arrives; jobs
    /// admitted later are resolved as they are ([`Controller::queue_of`]). An error names a
    /// job whose queue is not defined.
    pub fn with_queues(mut self, queues: Queues) -> Result<Controller, String> {
        assert!(self.stats.first_submit.is_none(), "queues are set before the run starts");
        self.quota = QuotaUsage::new(&queues);
        self.queues = queues;
        if self.queues.is_empty() {
            return Ok(self);
        }
        let queue_of = |spec| self.queues.queue_of(spec).map(|q| q.unwrap_or(QueueId(0)));
        let queues: Vec<QueueId> = self.specs.iter().map(|(_, spec)| queue_of(spec)).collect::<Result<_, _>>()?;
        for (index, q) in queues.into_iter().enumerate() {
            self.join_queue(JobId::from_index(index), q);
        }
        Ok(self)
    }

    /// The queue with quotas `spec` runs in; an error names a queue this run does not define.
    pub fn queue_of(&self, spec: &JobSpec) -> Result<Option<QueueId>, String> {
        self.queues.queue_of(spec)
    }

    /// Each task's dataset of `spec`; an error names a dataset this run does not define.
    pub fn datasets_of(&self, spec: &JobSpec) -> Result<Vec<Option<u32>>, String> {
        self.datasets.of_job(spec)
    }

    /// Admits `spec`, the next job in arrival order, already checked (its queue and its tasks'
    /// datasets resolved: `datasets` empty when the run has none); returns its id. Its arrival
    /// is the driver's to signal ([`Controller::job_arrived`]).
    pub(crate) fn admit(&mut self, spec: JobSpec, queue: Option<QueueId>, datasets: Vec<Option<u32>>) -> JobId {
        let job = JobId::from_index(self.jobs.end());
        let first = TaskId::from_index(self.tasks.end());
        self.jobs.push(new_job_state(&spec, first));
        for t in &spec.tasks {
            self.tasks.push(new_task_state(t, job, &self.cluster, &self.config, &mut self.speed_profiles));
            self.marks.push(Mark::None);
        }
        if let Some(q) = queue {
            self.join_queue(job, q);
        }
        self.set_datasets(job, datasets);
        let series_queue = match spec.queue.as_deref() {
            Some(q) => {
                let levels = self.levels();
                self.series.queue_index(q, &levels)
            }
            None => {
                self.series.note_job_without_queue();
                0
            }
        };
        self.series_queue.push(series_queue);
        if spec.tasks.iter().any(|t| !t.deps.is_empty()) {
            let tasks = &self.tasks;
            self.dag.add_job(&spec, first, |t| tasks[t.index()].checkpoint);
        }
        self.specs.push(spec);
        job
    }

    /// `job` (the first without a queue entry: jobs join queues in job order) runs in `queue`:
    /// its tasks only in the queue's pools, counted against its quota.
    fn join_queue(&mut self, job: JobId, queue: QueueId) {
        let pools = self.queues.get(queue).pools;
        for t in self.jobs[job.index()].tasks() {
            let task = &mut self.tasks[t.index()];
            task.pools = task.pools.and(pools);
        }
        self.job_queue.push(queue);
        self.quota.add_job();
    }

    /// `job`'s tasks read `datasets`, in task order (empty: the run has none).
    fn set_datasets(&mut self, job: JobId, datasets: Vec<Option<u32>>) {
        if datasets.is_empty() {
            return;
        }
        for (t, dataset) in self.jobs[job.index()].tasks().zip(datasets) {
            self.tasks[t.index()].dataset = dataset.into();
        }
    }

    /// Live mode: `spec`, submitted now or later (after every job already here), joins the run
    /// without a new Controller: what building the Controller with it from the start and
    /// applying the same events would give, at the cost of one job instead of the whole
    /// history. Its id is returned; its arrival is still the driver's to signal
    /// (`job_arrived`). An error (and nothing changed) for a job that is invalid, submitted
    /// before now or before the last job, or naming a queue or dataset this run lacks.
    pub fn add_job(&mut self, spec: JobSpec) -> Result<JobId, String> {
        if spec.submit < self.now {
            return Err(format!("job `{}` is submitted at {}, before now ({})", spec.name, spec.submit, self.now));
        }
        let newest = self.specs.end().checked_sub(1).and_then(|id| self.specs.get(id));
        if let Some(last) = newest.filter(|last| spec.submit < last.submit) {
            return Err(format!(
                "job `{}` is submitted at {}, before job `{}` at {}: jobs join in submit order",
                spec.name, spec.submit, last.name, last.submit
            ));
        }
        let mut shape = self.shape.clone();
        shape.add(&spec).map_err(|e| e.to_string())?;
        let queue = self.queue_of(&spec)?;
        let datasets = self.datasets_of(&spec)?;
        self.shape = shape;
        Ok(self.admit(spec, queue, datasets))
    }

    /// Puts datasets on nodes: a task reading one and started away from it pays its transfer.
    /// Call before anything arrives. An error names a task reading a dataset not defined.
    pub fn with_datasets(mut self, datasets: crate::data::Datasets) -> Result<Controller, String> {
        assert!(self.stats.first_submit.is_none(), "datasets are set before the run starts");
        if datasets.is_empty() && self.datasets.is_empty() {
            return Ok(self); // dataset names are only labels: every task's stays unset
        }
        let of_jobs: Vec<_> = self.specs.iter().map(|(_, spec)| datasets.of_job(spec)).collect::<Result<_, _>>()?;
        for (index, of_job) in of_jobs.into_iter().enumerate() {
            self.set_datasets(JobId::from_index(index), of_job);
        }
        self.datasets = datasets;
        Ok(self)
    }

    pub fn now(&self) -> SimTime {
        self.now
    }
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }
    /// What the run knows of its whole workload.
    pub fn shape(&self) -> &WorkloadShape {
        &self.shape
    }
    /// A resident job as submitted.
    pub fn job_spec(&self, job: JobId) -> &JobSpec {
        &self.specs[job.index()]
    }
    /// One past the newest job admitted: job ids are `0..jobs_admitted()`.
    pub fn jobs_admitted(&self) -> usize {
        self.specs.end()
    }
    /// The jobs whose state the Controller holds: from the oldest a streamed run has not let
    /// go to the newest admitted, and those set aside before them (what its memory follows).
    pub fn jobs_held(&self) -> usize {
        self.specs.held()
    }
    /// What is broken (truth) and what the scheduler may use (what it knows).
    pub fn health(&self) -> &Health {
        &self.health
    }
    pub fn task(&self, task: TaskId) -> &TaskState {
        &self.tasks[task.index()]
    }
    /// The task's state, unless a streamed run has let its job go.
    pub fn resident_task(&self, task: TaskId) -> Option<&TaskState> {
        self.tasks.get(task.index())
    }
    /// Starts loading the state of `task` and of its `job`, which a completion soon applied
    /// reads ([`crate::prefetch`]).
    pub(crate) fn prefetch_task(&self, task: TaskId, job: JobId) {
        if let Some(t) = self.tasks.get(task.index()) {
            crate::prefetch::prefetch(t);
        }
        if let Some(j) = self.jobs.get(job.index()) {
            crate::prefetch::prefetch(j);
        }
    }
    /// Starts loading the GPU list of `task`, whose state [`Controller::prefetch_task`] asked
    /// for an event earlier (by now in the cache, so reading where the list lies costs little):
    /// the list is a block of its own, a miss of its own at the task's end.
    pub(crate) fn prefetch_gpus(&self, task: TaskId) {
        if let Some(t) = self.tasks.get(task.index()) {
            // The list's address, not its length: reading the length would wait for the very
            // line asked for. Its header (16 bytes) lies just before it, maybe a line earlier.
            let gpus = t.placed.as_ptr().cast::<u8>();
            crate::prefetch::prefetch_line(gpus.wrapping_sub(16));
            crate::prefetch::prefetch_line(gpus);
        }
    }
    pub fn running_tasks(&self) -> u32 {
        self.occupancy.running_tasks()
    }
    pub fn stats(&self) -> &RunStats {
        &self.stats
    }
    pub(crate) fn config(&self) -> &ControllerConfig {
        &self.config
    }
    /// Counts an event the driver applied that the Controller does not see itself (a hardware
    /// event, a pass).
    pub(crate) fn count_event(&mut self) {
        self.stats.events += 1;
    }

    pub(crate) fn count_events(&mut self, events: u64) {
        self.stats.events += events;
    }

    /// Moves time forward to `now`, integrating allocated GPUs and jobs in the system.
    pub fn advance_to(&mut self, now: SimTime) {
        assert!(now >= self.now, "time went backwards: {} -> {} (seed {})", self.now, now, self.config.seed);
        if self.stats.first_submit.is_some() {
            let dt = now.since(self.now).as_ms();
            self.stats.allocated_mgpu_ms += u128::from(dt) * u128::from(self.occupancy.allocated_mgpus());
            self.stats.in_system_job_ms += u128::from(dt) * u128::from(self.census.in_system());
            self.stats.broken_gpu_ms += dt * u64::from(self.health.broken_gpus());
            self.stats.retired_gpu_ms += dt * u64::from(self.faults.retired_gpus());
            if self.config.spare_nodes > 0 {
                let cluster = &self.cluster;
                self.stats.reserved_gpu_ms += dt * self.spares.gpus(|n| cluster.node(n).gpu_count);
                let health = &self.health;
                if self.spares.exhausted(|n| !health.node_dead(n)) {
                    self.stats.no_spare_ms += dt;
                }
            }
        }
        let levels = self.levels();
        self.series.advance(&levels, now);
        self.now = now;
    }

    /// The cluster's levels now, as the time series integrates them.
    fn levels(&self) -> Levels {
        Levels {
            allocated_mgpus: self.occupancy.allocated_mgpus(),
            stalled_mgpus: self.occupancy.stalled_mgpus(),
            unusable_gpus: u64::from(self.health.unusable_gpus()),
            waiting: self.census.waiting_tasks(),
            running: u64::from(self.occupancy.running_tasks()),
        }
    }

    /// Applies the arrival of `job` at the current time.
    pub fn job_arrived(&mut self, job: JobId) {
        self.stats.events += 1;
        if self.stats.first_submit.is_none() {
            self.stats.first_submit = Some(self.now);
            self.series.start(self.now);
        }
        self.series.count(self.now, |b| b.arrivals += 1);
        let j = &mut self.jobs[job.index()];
        assert!(!j.arrived, "{job} arrived twice (seed {})", self.config.seed);
        self.census.arrive(j);
        if let Some(reason) = self.unschedulable_reason(job) {
            for t in self.jobs[job.index()].tasks() {
                self.set_status(t, TaskStatus::Unschedulable);
            }
            let j = &mut self.jobs[job.index()];
            j.open_tasks = 0;
            self.log(DecisionKind::Unschedulable, job, None, &[], &reason);
            self.end_job(job, JobOutcome::Unschedulable(reason.into()));
            return;
        }
        self.arrive_tasks(job);
    }

    /// Why `job` can never run on this cluster, if it cannot.
    fn unschedulable_reason(&self, job: JobId) -> Option<String> {
        let spec = &self.specs[job.index()];
        for (t, task_spec) in self.jobs[job.index()].tasks().zip(&spec.tasks) {
            let task = &self.tasks[t.index()];
            if let Some(q) = self.job_queue.of(job) {
                let queue = self.queues.get(q);
                let over_cap = queue.max_mgpus.is_some_and(|max| task.mgpus() > max) && !queue.borrow;
                if over_cap || queue.max_running_jobs == Some(0) {
                    return Some(format!(
                        "task `{}` asks for {} GPUs; its queue `{}` allows {} GPUs and {} running jobs",
                        task_spec.name,
                        task.gpus,
                        queue.name,
                        queue.max_mgpus.map_or("any number of".into(), |m| format!("{}", m / 1000)),
                        queue.max_running_jobs.map_or("any number of".into(), |m| m.to_string())
                    ));
                }
                if task.pools.is_empty() {
                    return Some(format!(
                        "task `{}` asks for GPU type `{}`, which no pool of its queue `{}` has",
                        task_spec.name,
                        task_spec.gpu_type.as_deref().unwrap_or(""),
                        queue.name
                    ));
                }
            }
            let why = self.cluster.never_fits(task_spec, task.pools, self.config.spare_nodes);
            if why.is_some() {
                return why;
            }
        }
        None
    }

    /// Applies the completion of `task`'s attempt `attempt`. Returns false (and changes nothing)
    /// when the event is stale: the attempt was preempted after the event was scheduled.
    pub fn task_finished(&mut self, task: TaskId, attempt: u32) -> bool {
        let Some(t) = self.tasks.get(task.index()) else { return false }; // its job has gone
        // Stale: preempted or failed since, or stalled on broken hardware (no progress).
        if t.status != TaskStatus::Running || t.attempt != attempt || t.stalled_since.is_some() {
            return false;
        }
        let exit_code = t.exit_code;
        if exit_code != 0 {
            // The trace says its program fails when its work is done (a replayed live exit).
            self.program_failed(task, &exited_with(exit_code));
            return true;
        }
        self.stats.events += 1;
        let gpus = self.end_attempt(task);
        self.release_to_free(task, &gpus);
        self.set_status(task, TaskStatus::Succeeded);
        let t = &self.tasks[task.index()];
        debug_assert_eq!(t.remaining, SimDuration::ZERO, "{task} completed with work left");
        let job = t.job;
        self.log(DecisionKind::Finish, job, Some(task), &gpus, "");
        self.recycle(gpus);
        self.changes.push(Change::TaskFinished(task));
        self.task_ended(task, None);
        true
    }

    /// Counts a wake-up the policy asked for `asked` times.
    pub fn wake(&mut self, asked: u64) {
        self.stats.events += asked;
    }

    /// Ends `job`, in the system, with `outcome` now.
    fn end_job(&mut self, job: JobId, outcome: JobOutcome) {
        self.census.end(&mut self.jobs[job.index()], outcome, self.now);
        self.stats.last_end = Some(self.now);
        self.series.count(self.now, |b| b.completions += 1);
        self.changes.push(Change::JobEnded(job));
    }

    /// Ends a running task's attempt now: takes it off its GPUs, keeps the work up to its last
    /// checkpoint (all of it on completion, or with checkpoints at every instant) and splits the
    /// GPU-time it held into productive work, redone work, detection lag and restart overhead.
    /// The free index is the caller's: a completion or failure frees usable GPUs with
    /// [`Controller::release_to_free`]; a preemption's plan already freed them.
    pub(crate) fn end_attempt(&mut self, task: TaskId) -> ThinVec<GpuId> {
        let now = self.now;
        let t = &mut self.tasks[task.index()];
        // Wall time (what GPU-time is counted in) splits into overhead, progress and stall;
        // work (what checkpoints and `remaining` count) is progress at the pool's speed.
        let held = now.since(t.run_start);
        let active = t.progress_until(now).since(t.run_start);
        let overhead_paid = t.overhead.min(active);
        let progress = t.progress_wall_at(now);
        let stalled = held - overhead_paid - progress;
        let done_before = t.work - t.remaining;
        let at = t.progress_after(progress);
        let (done_now, saved, checkpointing) = (at.done, at.saved, at.checkpointing);
        // The wall time that produced the work kept, and that wrote checkpoints; the rest of
        // the progress is lost.
        let kept = t.wall_for(saved - done_before).min(progress - checkpointing);
        let lost = progress - checkpointing - kept;
        let gpus = t.mgpus();
        t.remaining = t.work - saved;
        // `held` is exactly `kept + lost + stalled + overhead_paid + checkpointing`: what the
        // task held over its ended attempts is the sum of the two counts.
        t.close_attempt(
            kept.as_ms() * gpus,
            Losses {
                redo_mgpu_ms: lost.as_ms() * gpus,
                lag_mgpu_ms: stalled.as_ms() * gpus,
                overhead_mgpu_ms: overhead_paid.as_ms() * gpus,
                checkpoint_mgpu_ms: checkpointing.as_ms() * gpus,
            },
        );
        self.reached(task, done_now);
        let lost_mgpu_ms = (lost + stalled + overhead_paid + checkpointing).as_ms() * gpus;
        self.series.count(now, |b| b.lost_mgpu_ms += lost_mgpu_ms);
        self.running_changed(task, -1);
        self.occupancy.release(task, &mut self.tasks[task.index()])
    }

    /// Returns `task`'s `gpus` (or its share of them) to the free index, GPUs the scheduler
    /// may no longer use (on a node known dead, known failed) excepted, and its GPUs to its
    /// queue's quota. With a release latency the GPUs come back later (`release.rs`); the
    /// quota, at once: the task no longer runs.
    pub(crate) fn release_to_free(&mut self, task: TaskId, gpus: &[GpuId]) {
        let t = &self.tasks[task.index()];
        self.quota.stop(self.job_queue.of(t.job), t);
        let milli = self.tasks[task.index()].milli;
        if self.hold_back(gpus, milli) {
            return; // they return later, when usable then (see `release.rs`)
        }
        if milli < WHOLE_GPU_MILLI {
            for &gpu in gpus {
                self.free.release_share(gpu, milli, self.health.usable(gpu));
            }
        } else if self.health.unusable_gpus() == 0 || gpus.iter().all(|&g| self.health.usable(g)) {
            self.free.release_gang(gpus);
        } else {
            let usable: Vec<GpuId> = gpus.iter().copied().filter(|&g| self.health.usable(g)).collect();
            self.free.release_gang(&usable);
        }
    }

    /// Keeps the emptied GPU list of an ended attempt for a later start to fill: a start and a
    /// completion per job would otherwise allocate and free one list each. The spares never
    /// outnumber the tasks that ran at once.
    fn recycle(&mut self, mut gpus: ThinVec<GpuId>) {
        gpus.clear();
        self.spare_lists.push(gpus);
    }

    /// The tasks holding `gpu`: its owner, or the fractional tasks sharing it.
    fn holders(&self, gpu: GpuId) -> impl Iterator<Item = TaskId> + '_ {
        self.occupancy.holders(gpu)
    }

    /// Nobody holds `gpu`, whole or shared, and nothing of it waits to be released.
    pub(crate) fn idle(&self, gpu: GpuId) -> bool {
        !self.occupancy.held(gpu) && self.releases.pending(gpu) == 0
    }

    /// Whether any job has arrived and not ended.
    pub fn has_jobs_in_system(&self) -> bool {
        self.census.in_system() > 0
    }

    /// Calls the policy and commits its plan; pushes what the driver must do onto `effects`.
    /// Returns the number of starts, preemptions and rejections committed.
    pub fn decide(&mut self, policy: &mut dyn Policy, effects: &mut Vec<Effect>) -> usize {
        self.stats.decision_points += 1;
        let view = ClusterView {
            now: self.now,
            changes: &self.changes,
            cluster: &self.cluster,
            specs: &self.specs,
            jobs: &self.jobs,
            tasks: &self.tasks,
            health: &self.health,
            failures_seen: self.faults.seen_log(),
            queues: &self.queues,
            job_queue: &self.job_queue,
            owner: self.occupancy.owners(),
            datasets: &self.datasets,
            speed_profiles: &self.speed_profiles,
            releases: &self.releases,
        };
        let mut plan = Plan {
            now: self.now,
            cluster: &self.cluster,
            jobs: &self.jobs,
            tasks: &self.tasks,
            free: &mut self.free,
            marks: &mut self.marks,
            queues: &self.queues,
            job_queue: &self.job_queue,
            quota: &mut self.quota,
            rng: &mut self.rng,
            decisions: std::mem::take(&mut self.decision_buf),
            spare_lists: &mut self.spare_lists,
            refused: 0,
        };
        policy.decide(&view, &mut plan);
        let mut decisions = std::mem::take(&mut plan.decisions);
        self.stats.refused += plan.refused;
        for i in 0..self.changes.len() {
            if let Change::JobEnded(job) = self.changes[i] {
                self.told_ended(job);
            }
        }
        self.changes.clear();
        let mut committed = 0;
        for decision in decisions.drain(..) {
            match decision {
                Decision::Start { task, gpus } => self.commit_start(task, gpus, effects),
                Decision::Preempt { task, reason } => self.commit_preempt(task, &reason, effects),
                Decision::Reject { job, reason } => self.commit_reject(job, reason),
                Decision::WakeAt(at) => {
                    effects.push(Effect::WakeAt(at));
                    continue;
                }
            }
            committed += 1;
        }
        self.decision_buf = decisions;
        if self.config.check_invariants {
            self.assert_invariants();
        }
        committed
    }

    fn commit_start(&mut self, task: TaskId, gpus: ThinVec<GpuId>, effects: &mut Vec<Effect>) {
        self.marks[task.index()] = Mark::None;
        self.set_status(task, TaskStatus::Running);
        self.running_changed(task, 1);
        self.begin_attempt(task, &gpus);
        // Started on hardware that is broken but not yet known to be: no progress from the start.
        let broken = self.health.broken_gpus() > 0 && gpus.iter().any(|&g| self.health.broken(g));
        let job = self.tasks[task.index()].job;
        self.stats.starts += 1;
        self.log(DecisionKind::Start, job, Some(task), &gpus, "");
        let t = &mut self.tasks[task.index()];
        self.occupancy.hold(task, t, gpus, broken.then_some(self.now));
        let (attempt, finish_at) = (t.attempt, t.finish_if_undisturbed());
        self.changes.push(Change::TaskStarted(task));
        self.watch_progress(task);
        effects.push(Effect::Started { task, job, attempt, finish_at });
    }

    /// A new attempt of `task` starts now on `gpus`: its speed there, and the overhead it pays
    /// before progress (a restart's, a dataset's transfer to a node without it).
    fn begin_attempt(&mut self, task: TaskId, gpus: &[GpuId]) {
        let t = &mut self.tasks[task.index()];
        let restart = t.attempt > 0;
        t.attempt += 1;
        t.run_start = self.now;
        t.speed_milli =
            self.speed_profiles.speed(t.speed_profile.get(), self.cluster.pool(self.cluster.pool_of(gpus[0])));
        t.overhead = if restart { t.restart_overhead } else { SimDuration::ZERO };
        if let Some(d) = t.dataset.get() {
            let dataset = self.datasets.get(d);
            if gpus.iter().all(|&g| dataset.nodes.contains(&self.cluster.node_of(g))) {
                self.stats.local_starts += 1;
            } else {
                t.overhead += dataset.transfer;
                self.stats.remote_starts += 1;
            }
        }
        t.first_start.get_or_insert(self.now);
    }

    fn commit_preempt(&mut self, task: TaskId, reason: &str, effects: &mut Vec<Effect>) {
        self.marks[task.index()] = Mark::None;
        let gpus = self.end_attempt(task);
        self.set_status(task, TaskStatus::Preempted);
        let t = &mut self.tasks[task.index()];
        t.preemptions += 1;
        let job = t.job;
        self.stats.preemptions += 1;
        self.log(DecisionKind::Preempt, job, Some(task), &gpus, reason);
        self.recycle(gpus);
        self.changes.push(Change::TaskPreempted(task));
        effects.push(Effect::Stopped { task });
    }

    fn commit_reject(&mut self, job: JobId, reason: String) {
        for t in self.jobs[job.index()].tasks() {
            self.marks[t.index()] = Mark::None;
            if !self.tasks[t.index()].status.is_final() {
                self.set_status(t, TaskStatus::Failed);
                self.tasks[t.index()].finish = self.now.into();
            }
        }
        self.jobs[job.index()].open_tasks = 0;
        self.stats.rejects += 1;
        self.log(DecisionKind::Reject, job, None, &[], &reason);
        self.end_job(job, JobOutcome::Rejected(reason.into()));
    }

    pub(crate) fn log(&mut self, kind: DecisionKind, job: JobId, task: Option<TaskId>, gpus: &[GpuId], detail: &str) {
        // Hashed in a local, whose state can stay in a register through the entry: through
        // `self`, each byte's hash was stored and loaded back, lengthening the serial chain.
        let mut digest = self.digest;
        digest.u64(self.now.as_ms()).u32(kind.code()).u32(job.0);
        digest.u32(task.map_or(u32::MAX, |t| t.0)).u32(gpus.len() as u32);
        for g in gpus {
            digest.u32(g.0);
        }
        digest.str(detail);
        self.digest = digest;
        if self.config.record_decisions {
            self.decision_log.push(DecisionRecord {
                time: self.now,
                kind,
                job,
                task,
                gpus: gpus.to_vec(),
                detail: detail.to_string(),
            });
        }
    }

    fn assert_invariants(&self) {
        if let Err(broken) = self.check_invariants() {
            panic!(
                "invariant broken at {} under policy {} (seed {}): {broken}",
                self.now, self.policy_name, self.config.seed
            );
        }
    }

    /// Live mode: a task's work is an assumption until its process exits. An attempt still
    /// running past its assumed end has done more than assumed, so its work grows to what its
    /// wall time has done by `now` (at its pool's speed). A failure or preemption now then
    /// counts all of the attempt's progress, as a replay that knows the real work counts it;
    /// without this, an attempt that overran and then failed would count only the assumed
    /// work, and the replay of the session would end the next attempt earlier.
    pub fn extend_overrun(&mut self, task: TaskId, now: SimTime) {
        let t = &mut self.tasks[task.index()];
        if t.status != TaskStatus::Running {
            return;
        }
        let wall = t.progress_until(now).since(t.run_start).saturating_sub(t.overhead);
        let overrun = wall.saturating_sub(t.wall_to(t.work));
        let extra = t.work_at_speed(overrun);
        t.work += extra;
        t.remaining += extra;
    }

    /// Live mode: `task`'s attempt `attempt` ended on its own (its process exited), so its work
    /// was exactly what it did: the work is set to that. With `failure` (a non-zero exit) the
    /// task fails for good with that reason, as a task past its retries does (a program's own
    /// failure is not retried); otherwise the attempt completes now, as
    /// [`Controller::task_finished`] would complete it. False (nothing changed) when stale.
    pub fn task_exited(&mut self, task: TaskId, attempt: u32, failure: Option<&str>) -> bool {
        let now = self.now;
        let t = &mut self.tasks[task.index()];
        if t.status != TaskStatus::Running || t.attempt != attempt || t.stalled_since.is_some() {
            return false;
        }
        let done_before = t.work - t.remaining;
        // The work its wall time did at its pool's speed (not capped: it ran as long as it ran).
        let wall = now.since(t.run_start).saturating_sub(t.overhead);
        let progress = t.work_at_speed(wall);
        t.work = done_before + progress;
        t.remaining = progress;
        let Some(why) = failure else { return self.task_finished(task, attempt) };
        self.program_failed(task, why);
        true
    }

    /// The running `task`'s program failed (a non-zero exit): the attempt ends now and the
    /// task fails for good with `why`, as a task past its retries does.
    fn program_failed(&mut self, task: TaskId, why: &str) {
        self.stats.events += 1;
        let gpus = self.end_attempt(task);
        self.release_to_free(task, &gpus);
        let t = &mut self.tasks[task.index()];
        t.failures += 1;
        let job = t.job;
        self.stats.task_failures += 1;
        self.changes.push(Change::TaskFailed(task));
        self.log(DecisionKind::Fail, job, Some(task), &gpus, why);
        self.task_failed_for_good(task, why.to_string());
    }

    /// The user cancelled `job` (a trace's `cancel_s`, live mode's `live cancel`). Its running
    /// attempts end now (their GPUs return), its waiting tasks never run, and it ends
    /// cancelled. False (nothing changed) when the job has not arrived or has already ended.
    pub fn cancel_job(&mut self, job: JobId) -> bool {
        let Some(j) = self.jobs.get(job.index()) else { return false }; // ended and gone
        if !j.arrived || j.outcome.is_some() {
            return false;
        }
        self.stats.events += 1;
        self.stop_job(job);
        self.stats.cancels += 1;
        self.log(DecisionKind::Cancel, job, None, &[], crate::workload::CANCELLED_BY_THE_USER);
        self.end_job(job, JobOutcome::Cancelled);
        true
    }

    /// The job's run-time state.
    pub fn job(&self, job: JobId) -> &JobState {
        &self.jobs[job.index()]
    }

    /// The decision log so far (empty unless `record_decisions`).
    pub fn decision_log(&self) -> &[DecisionRecord] {
        &self.decision_log
    }

    /// The digest of the decisions so far (what [`Controller::finish`] reports).
    pub fn digest_hex(&self) -> String {
        self.digest.hex()
    }

    /// Moves `task` to `status`, keeping the waiting-task counts (cluster and queue) true.
    fn set_status(&mut self, task: TaskId, status: TaskStatus) {
        let t = &mut self.tasks[task.index()];
        let delta = self.census.set_status(t, &mut self.jobs[t.job.index()], status, self.now);
        if delta != 0 {
            let queue = self.series_queue[t.job.index()] as usize;
            self.series.queue_change(queue, self.now, QueueDelta::Waiting(delta));
        }
    }

    /// `task` started (`+1`) or stopped (`-1`) running: its queue's running levels change.
    fn running_changed(&mut self, task: TaskId, sign: i64) {
        let t = &self.tasks[task.index()];
        let queue = self.series_queue[t.job.index()] as usize;
        let mgpus = sign * i64::try_from(t.mgpus()).unwrap_or(i64::MAX);
        self.series.queue_change(queue, self.now, QueueDelta::Running { tasks: sign, mgpus });
    }
}

/// Why a task whose program exited with `code` failed, in live mode and in its replay alike.
pub fn exited_with(code: i32) -> String {
    format!("its process exited with code {code}")
}

/// A job's run-time state before it arrives.
fn new_job_state(spec: &crate::workload::JobSpec, first_task: TaskId) -> JobState {
    JobState {
        first_task,
        task_count: spec.tasks.len() as u32,
        arrived: false,
        co_start: spec.co_start,
        open_tasks: spec.tasks.len() as u32,
        failure: None,
        outcome: None,
        end: OptTime::NONE,
        waiting_tasks: 0,
        wait_mark: 0,
        told_ended: false,
    }
}

/// A task's run-time state before its job arrives (no queue or dataset applied yet).
pub(crate) fn new_task_state(
    t: &crate::workload::TaskSpec,
    job: JobId,
    cluster: &Cluster,
    config: &ControllerConfig,
    speed_profiles: &mut SpeedProfiles,
) -> TaskState {
    TaskState {
        job,
        gpus: t.gpus,
        milli: t.gpu_milli.map_or(WHOLE_GPU_MILLI, |m| u32::from(m.get())),
        gpus_per_node: t.fixed_gpus_per_node().and_then(|n| std::num::NonZeroU8::new(n.min(255) as u8)),
        pools: cluster.eligible_pools(t.gpu_type.as_deref()),
        work: t.work,
        estimate: t.estimate,
        checkpoint: t.options().checkpoint.unwrap_or(config.checkpoint),
        checkpoint_cost: t.options().checkpoint_cost.unwrap_or(config.checkpoint_cost),
        restart_overhead: t.options().restart_overhead.unwrap_or(config.restart_overhead),
        status: TaskStatus::Pending,
        remaining: t.work,
        attempt: 0,
        run_start: SimTime::ZERO,
        overhead: SimDuration::ZERO,
        first_start: OptTime::NONE,
        finish: OptTime::NONE,
        preemptions: 0,
        failures: 0,
        retries: 0,
        stalled_since: OptTime::NONE,
        productive_mgpu_ms: 0,
        losses: None,
        placed: ThinVec::new(),
        speed_milli: 1000,
        dataset: OptIndex::NONE,
        speed_profile: speed_profiles.profile_of(t, cluster).into(),
        exit_code: t.exit_code,
    }
}
