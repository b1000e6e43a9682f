//! Who holds which GPU: each GPU's owner (a task holding it whole) or sharers (fractional
//! tasks), and the counts the run integrates (tasks running, milli-GPUs held, milli-GPUs held
//! by tasks stalled on broken hardware). A task's `placed` and `stalled_since` are written
//! only here, together with the counts they make up, so the counts cannot drift from them;
//! [`Occupancy::check`] recounts everything from the tasks.
//!
//! Whether a GPU is *free* is the free index's (`alloc.rs`), which also knows of health and
//! releases; the Controller keeps the two in step.

use crate::alloc::WHOLE_GPU_MILLI;
use crate::ids::{GpuId, TaskId};
use crate::resident::Resident;
use crate::state::{OptIndex, TaskState, TaskStatus};
use crate::time::SimTime;
use std::collections::BTreeMap;
use thin_vec::ThinVec;

#[derive(Debug)]
pub(crate) struct Occupancy {
    /// The task holding each GPU whole, by task index. 4 bytes a GPU (an `Option<TaskId>` takes
    /// 8): an end reads its gang's entries, random GPUs, a cache miss each at 100,000 GPUs.
    owner: Vec<OptIndex>,
    /// The fractional tasks sharing each shared GPU (a GPU has an owner or sharers, never both).
    sharers: BTreeMap<GpuId, Vec<TaskId>>,
    running_tasks: u32,
    /// Milli-GPUs held by running tasks.
    allocated_mgpus: u64,
    /// Milli-GPUs held by running tasks stalled on broken hardware.
    stalled_mgpus: u64,
}

impl Occupancy {
    pub(crate) fn new(gpus: u32) -> Occupancy {
        Occupancy {
            owner: vec![OptIndex::NONE; gpus as usize],
            sharers: BTreeMap::new(),
            running_tasks: 0,
            allocated_mgpus: 0,
            stalled_mgpus: 0,
        }
    }

    /// `task` (state `t`) starts running on `gpus` (whole, or a share of its one GPU), stalled
    /// from the start when `stalled` (its hardware is broken, not yet known to be).
    pub(crate) fn hold(&mut self, task: TaskId, t: &mut TaskState, gpus: ThinVec<GpuId>, stalled: Option<SimTime>) {
        let shares = t.milli < WHOLE_GPU_MILLI;
        for &gpu in &gpus {
            if shares {
                self.sharers.entry(gpu).or_default().push(task);
            } else {
                self.owner[gpu.index()] = OptIndex::from(Some(task.0));
            }
        }
        t.placed = gpus;
        if let Some(now) = stalled {
            self.stall(t, now);
        }
        self.allocated_mgpus += t.mgpus();
        self.running_tasks += 1;
    }

    /// The running task `t` stops making progress now (its hardware broke), unless it already
    /// had.
    pub(crate) fn stall(&mut self, t: &mut TaskState, now: SimTime) {
        stall(&mut self.stalled_mgpus, t, now);
    }

    /// The tasks on `gpu` (its broken hardware) stop making progress now.
    pub(crate) fn stall_holders(&mut self, gpu: GpuId, tasks: &mut Resident<TaskState>, now: SimTime) {
        let sharers = self.sharers.get(&gpu).into_iter().flatten();
        for &task in self.owner(gpu).iter().chain(sharers) {
            stall(&mut self.stalled_mgpus, &mut tasks[task.index()], now);
        }
    }

    /// `task` (state `t`) stops running: it lets go of its GPUs, which are returned (the free
    /// index is the caller's), and of its stall. Only shares are among the sharers: a gang of
    /// whole GPUs looks there for none of them.
    pub(crate) fn release(&mut self, task: TaskId, t: &mut TaskState) -> ThinVec<GpuId> {
        let gpus = std::mem::take(&mut t.placed);
        let mgpus = t.mgpus();
        if t.stalled_since.take().is_some() {
            self.stalled_mgpus -= mgpus;
        }
        self.allocated_mgpus -= mgpus;
        self.running_tasks -= 1;
        let shares = t.milli < WHOLE_GPU_MILLI;
        for &gpu in &gpus {
            if shares && let Some(sharing) = self.sharers.get_mut(&gpu) {
                sharing.retain(|&s| s != task);
                if sharing.is_empty() {
                    self.sharers.remove(&gpu);
                }
            }
            if self.owner(gpu) == Some(task) {
                self.owner[gpu.index()] = OptIndex::NONE;
            }
        }
        gpus
    }

    /// The task holding each GPU whole, by GPU index (what a policy's view reads).
    pub(crate) fn owners(&self) -> &[OptIndex] {
        &self.owner
    }

    /// The task holding `gpu` whole, if one does.
    pub(crate) fn owner(&self, gpu: GpuId) -> Option<TaskId> {
        self.owner[gpu.index()].get().map(TaskId)
    }

    /// The fractional tasks sharing `gpu`, if it is shared.
    pub(crate) fn sharers(&self, gpu: GpuId) -> Option<&[TaskId]> {
        self.sharers.get(&gpu).map(Vec::as_slice)
    }

    /// The tasks holding `gpu`: its owner, or the fractional tasks sharing it.
    pub(crate) fn holders(&self, gpu: GpuId) -> impl Iterator<Item = TaskId> + '_ {
        self.owner(gpu).into_iter().chain(self.sharers.get(&gpu).into_iter().flatten().copied())
    }

    /// Whether some task holds `gpu`, whole or shared.
    pub(crate) fn held(&self, gpu: GpuId) -> bool {
        self.owner(gpu).is_some() || self.sharers.contains_key(&gpu)
    }

    pub(crate) fn running_tasks(&self) -> u32 {
        self.running_tasks
    }

    pub(crate) fn allocated_mgpus(&self) -> u64 {
        self.allocated_mgpus
    }

    pub(crate) fn stalled_mgpus(&self) -> u64 {
        self.stalled_mgpus
    }

    /// Recounts from `tasks`: the counts equal the running tasks' sums; a task holds GPUs
    /// exactly while it runs, and only then is stalled; every GPU a task holds names it, and
    /// every GPU naming a task is one it holds (whole for an owner, a share for a sharer).
    pub(crate) fn check(&self, tasks: &Resident<TaskState>) -> Result<(), String> {
        let (mut running, mut allocated, mut stalled) = (0u32, 0u64, 0u64);
        for (index, t) in tasks.iter() {
            let task = TaskId::from_index(index);
            let running_now = t.status == TaskStatus::Running;
            if t.stalled_since.is_some() {
                if !running_now {
                    return Err(format!("task t{index} is {} but marked stalled", t.status.as_str()));
                }
                stalled += t.mgpus();
            }
            if running_now == t.placed.is_empty() {
                return Err(format!("task t{index} is {} but holds {} GPUs", t.status.as_str(), t.placed.len()));
            }
            if !running_now {
                continue;
            }
            running += 1;
            allocated += t.mgpus();
            if let Some(&gpu) = t.placed.iter().find(|&&gpu| !self.holders(gpu).any(|h| h == task)) {
                return Err(format!("task t{index} holds {gpu}, whose holders disagree"));
            }
        }
        if (running, allocated, stalled) != (self.running_tasks, self.allocated_mgpus, self.stalled_mgpus) {
            return Err(format!(
                "{running} tasks hold {allocated} milli-GPUs ({stalled} stalled), but the counters say {}, {} and {}",
                self.running_tasks, self.allocated_mgpus, self.stalled_mgpus
            ));
        }
        self.check_names(tasks)
    }

    /// Each GPU naming a task as owner or sharer is one that task holds, whole or shared.
    /// O(GPUs + tasks): owned GPUs are counted per task, where asking each owner whether it
    /// holds the GPU would cost O(gang) per GPU; with `check`'s other half (each GPU a task
    /// holds names it), equal counts mean each GPU naming a task is one it holds.
    fn check_names(&self, tasks: &Resident<TaskState>) -> Result<(), String> {
        // Counted by task id from the oldest task held in order; those set aside apart.
        let base = tasks.first();
        let mut owned = vec![0usize; tasks.end() - base];
        let mut owned_aside = std::collections::BTreeMap::<usize, usize>::new();
        for index in 0..self.owner.len() {
            let gpu = GpuId::from_index(index);
            match (self.owner(gpu), self.sharers.get(&gpu)) {
                (Some(_), Some(_)) => return Err(format!("{gpu} has an owner and sharers")),
                (Some(task), None) => {
                    let t = &tasks[task.index()];
                    match task.index().checked_sub(base) {
                        Some(at) => owned[at] += 1,
                        None => *owned_aside.entry(task.index()).or_default() += 1,
                    }
                    if t.status != TaskStatus::Running || t.milli != WHOLE_GPU_MILLI {
                        return Err(format!("{gpu} names {task} as owner, which does not hold it whole"));
                    }
                }
                (None, Some(sharing)) => {
                    if let Some(t) = sharing.iter().find(|t| !tasks[t.index()].placed.contains(&gpu)) {
                        return Err(format!("{gpu} names {t} as a sharer, which does not hold it"));
                    }
                }
                (None, None) => {}
            }
        }
        let whole = |t: &TaskState| t.status == TaskStatus::Running && t.milli == WHOLE_GPU_MILLI;
        let named =
            |i: usize| i.checked_sub(base).map_or_else(|| owned_aside.get(&i).copied().unwrap_or(0), |at| owned[at]);
        if let Some((index, t)) = tasks.iter().find(|(i, t)| whole(t) && named(*i) != t.placed.len()) {
            return Err(format!("task t{index} holds {} GPUs but {} name it as owner", t.placed.len(), named(index)));
        }
        Ok(())
    }
}

/// Stalls `t` now unless it already is, counting its milli-GPUs in `stalled_mgpus`.
fn stall(stalled_mgpus: &mut u64, t: &mut TaskState, now: SimTime) {
    if t.stalled_since.is_none() {
        t.stalled_since = now.into();
        *stalled_mgpus += t.mgpus();
    }
}
