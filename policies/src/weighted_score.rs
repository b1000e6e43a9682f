//! `weighted-score`: one score per waiting task,
//! `score = w_p x priority + w_d x locality + w_w x waiting`, highest first, non-preemptive
//! and strict: the top-scored task blocks those behind it until it fits (so nothing can
//! overtake it forever; see the bound below). `priority` is the job's `JobSpec.priority`,
//! `waiting` the seconds since the task last entered the queue (its job's arrival, or its
//! retry after a failure): aging, so a task that waited long rises above newer, more urgent
//! ones. Weights are whole numbers (`w_p=3600,w_w=1`: one priority level is worth an hour
//! of waiting). The weighted sum is the form of Slurm's multifactor priority plugin (age,
//! QOS/priority and other factors, each weighted); the locality factor and the wait for it
//! follow delay scheduling (Zaharia et al., "Delay Scheduling", EuroSys 2010).
//!
//! **Locality** of a task is 1 at a decision when it reads a dataset (`datasets.csv`) and a
//! node holding that dataset has room for it now, else 0. A task scored up by it starts on
//! those nodes (packed), so the bonus buys what it promises: no transfer. A task reading no
//! dataset has locality 0 (w_d ranks data-local starts ahead; it does not punish tasks
//! without data). Locality changes with the free GPUs, so it is computed at each pick for
//! the first task of each shape (tasks of one shape read one dataset and fit together).
//!
//! **Waiting for locality** (`local_wait_s=W`, 0 = off): a task that reads a dataset whose
//! nodes have no room for it, and that entered the queue less than W seconds ago, is passed
//! over (the tasks behind it may start) and the policy wakes itself when its W is up; after
//! W it is placed as `placement` says, paying the transfer if it lands away from its data.
//! That is delay scheduling's trade: up to W of waiting for a start without a transfer.
//!
//! **Incremental.** All waiting tasks age at the same rate, so the order by score at any time
//! is the order by the fixed key `w_p x priority - w_w x entered_at` (in milli-units, exact
//! integers), set once when a task enters the queue, less `w_d` for the shapes that are
//! data-local now; ties go to the earlier task id.
//!
//! **No starvation.** A task L with priority p_L that entered at s_L ranks above every task H
//! that enters at or after `s_L + 1000 x w_p x (p_max - p_L) / w_w` ms (w_w > 0; p_max the
//! highest priority that arrives; equal keys go to L, the earlier task). Strict order then
//! starts L after at most the tasks queued ahead of it by then, each of which starts within
//! one longest task duration of the one before (when the head does not fit, only running
//! tasks hold GPUs, and nothing starts past the head). With w_w = 0 it is plain strict
//! priority, and a stream of urgent tasks starves the rest. The locality bonus moves the
//! bound by `w_d / w_w` seconds, and waiting for locality by at most W.
//!
//! Decision cost: O((starts + 1) x log n) and O(changes x log n) with w_d = 0 and W = 0;
//! otherwise each pick also checks the first task of each dataset-reading shape for local
//! room (O(shapes x nodes of its pools)), and each task passed over for locality costs
//! O(log n) at every decision point during its W.

use crate::id_table::IdTable;
use crate::params::{AVOID_FAILED, PLACEMENT, ParamInfo, Params, SpecError};
use crate::placement::{GpuList, Placer, Shape};
use crate::tracking::{Placed, place_and_start, start_on, sync_waiting, tasks_of_ended_jobs};
use crate::wait_queue::{Key, WaitQueue};
use sim::{ClusterView, Plan, Policy, SimDuration, SimTime, TaskId};

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "w_p",
        values: "whole number 0..=1000000",
        default: "3600",
        help: "weight of the job's priority (score per priority level)",
    },
    ParamInfo {
        key: "w_d",
        values: "whole number 0..=1000000",
        default: "0",
        help: "weight of data locality (1 when a node holding the task's dataset has room for it now)",
    },
    ParamInfo {
        key: "w_w",
        values: "whole number 0..=1000000",
        default: "1",
        help: "weight of waiting, per second in the queue (aging; 0: strict priority, may starve)",
    },
    ParamInfo {
        key: "local_wait_s",
        values: "seconds >= 0",
        default: "0",
        help: "how long a task reading a dataset may be passed over while its data's nodes are full (delay scheduling)",
    },
    PLACEMENT,
    AVOID_FAILED,
];

const MAX_WEIGHT: u64 = 1_000_000;

/// Where keys sit: the static score (|score| < 2^62 with the weights bounded) is subtracted
/// from it, so higher scores get smaller keys.
const BIAS: i128 = 1 << 63;

/// Where a waiting task can go at this pick.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Locality {
    /// A node holding its dataset has room for it now: these GPUs there.
    Local(GpuList),
    /// It reads a dataset whose nodes are full, and may still wait for them.
    WaitForData,
    /// Anywhere its placement puts it.
    Anywhere,
}

pub struct WeightedScore {
    name: String,
    w_p: i128,
    w_d: i128,
    w_w: i128,
    local_wait: SimDuration,
    placer: Placer,
    waiting: WaitQueue,
    /// When each task last entered the queue (for `local_wait_s`), for the tasks in the system.
    entered: IdTable<SimTime>,
}

impl WeightedScore {
    pub fn new(params: &Params) -> Result<WeightedScore, SpecError> {
        let mut weights = [0u64; 3];
        for (slot, key) in weights.iter_mut().zip(["w_p", "w_d", "w_w"]) {
            *slot = params.get(key)?;
            if *slot > MAX_WEIGHT {
                return Err(SpecError(format!("policy `weighted-score`: {key} must be 0..=1000000")));
            }
        }
        let [w_p, w_d, w_w] = weights;
        let local_wait_s: u64 = params.get("local_wait_s")?;
        let placer = Placer::from_params(params)?;
        Ok(WeightedScore {
            name: format!("weighted-score[w_p={w_p},w_d={w_d},w_w={w_w},local_wait_s={local_wait_s},{placer}]"),
            w_p: i128::from(w_p),
            w_d: i128::from(w_d),
            w_w: i128::from(w_w),
            local_wait: SimDuration::from_secs(local_wait_s),
            placer,
            waiting: WaitQueue::default(),
            entered: IdTable::default(),
        })
    }

    /// The task's key if it enters the queue now: BIAS less its static score at time zero, in
    /// milli-units (its score at any later time t adds `w_w x t` to every task alike).
    fn key(&self, view: &ClusterView<'_>, task: TaskId) -> Key {
        let priority = i128::from(view.job_spec(view.task(task).job).priority);
        let entered_ms = i128::from(view.now().as_ms());
        let score = 1000 * self.w_p * priority - self.w_w * entered_ms;
        (BIAS - score).clamp(0, i128::from(u64::MAX)) as Key
    }

    /// Whether locality changes anything for this policy (else the static order is the order).
    fn locality_matters(&self, view: &ClusterView<'_>) -> bool {
        (self.w_d > 0 || self.local_wait > SimDuration::ZERO) && !view.datasets().is_empty()
    }

    /// The top-scored waiting task now and where it may go. With locality in play, each
    /// shape's first task is scored with its locality (a shape reads one dataset).
    fn pick(&self, view: &ClusterView<'_>, plan: &Plan<'_>) -> Option<(Key, Shape, TaskId, Locality)> {
        if !self.locality_matters(view) {
            let (key, task) = self.waiting.head()?;
            return Some((key, Shape::of(view.task(task)), task, Locality::Anywhere));
        }
        let bonus = 1000 * self.w_d;
        self.waiting
            .shape_heads()
            .map(|(shape, key, task)| {
                let local = shape.dataset.and_then(|_| self.placer.place_local(shape, view, plan.free()));
                let effective = i128::from(key) - if local.is_some() { bonus } else { 0 };
                let locality = match local {
                    Some(gpus) => Locality::Local(gpus),
                    None if shape.dataset.is_some() && self.still_waits_for_data(view, task) => Locality::WaitForData,
                    None => Locality::Anywhere,
                };
                (effective, task, key, shape, locality)
            })
            .min_by_key(|(effective, task, ..)| (*effective, *task))
            .map(|(_, task, key, shape, locality)| (key, shape, task, locality))
    }

    /// When waiting `task` entered the queue (every waiting task has entered it).
    fn entered_at(&self, task: TaskId) -> SimTime {
        self.entered.get(task.index()).unwrap_or(SimTime::ZERO)
    }

    fn still_waits_for_data(&self, view: &ClusterView<'_>, task: TaskId) -> bool {
        view.now() < self.entered_at(task) + self.local_wait
    }
}

impl Policy for WeightedScore {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let mut waiting = std::mem::take(&mut self.waiting);
        let mut entered = std::mem::take(&mut self.entered);
        sync_waiting(view, &mut waiting, |t| {
            entered.insert(t.index(), view.now());
            self.key(view, t)
        });
        tasks_of_ended_jobs(view).for_each(|t| _ = entered.remove(t.index()));
        (self.waiting, self.entered) = (waiting, entered);
        // Tasks passed over while they wait for their data: out of the order for this decision.
        let mut passed_over: Vec<(TaskId, Key, Shape)> = Vec::new();
        // Strict: the top-scored task waits for GPUs, and so does everyone behind it (a task
        // its queue's quota holds back is parked and does not block).
        while let Some((key, shape, task, locality)) = self.pick(view, plan) {
            let placed = match locality {
                Locality::Local(gpus) if !plan.co_starts(task) => start_on(plan, &mut self.waiting, task, gpus),
                // A co-start job's tasks are placed together, each where the placer puts it.
                Locality::Local(_) | Locality::Anywhere => {
                    place_and_start(view, plan, self.placer, &mut self.waiting, task)
                }
                Locality::WaitForData => {
                    self.waiting.remove(task);
                    passed_over.push((task, key, shape));
                    let until = self.entered_at(task) + self.local_wait;
                    plan.wake_at(until).expect("a task still waiting for its data waits until later");
                    continue;
                }
            };
            if placed == Placed::NoRoom {
                break;
            }
        }
        for (task, key, shape) in passed_over {
            self.waiting.insert(task, key, shape);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// When each task entered the queue is held for the tasks in the system: none is left once
    /// every job has ended.
    #[test]
    fn ended_jobs_leave_no_entry_time() {
        let policy = crate::run_to_the_end(WeightedScore::new(&crate::params_of("weighted-score")).expect("builds"));
        assert!(policy.entered.is_empty(), "entry times left for ended jobs' tasks");
    }
}
