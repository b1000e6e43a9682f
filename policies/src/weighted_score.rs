//! `weighted-score`: one score per waiting task,
//! `score = w_p x priority + w_d x locality + w_w x waiting`, highest first, non-preemptive
//! and strict: the top-scored task blocks those behind it until it fits (so nothing can
//! overtake it forever; see the bound below). `priority` is the job's `JobSpec.priority`,
//! `waiting` the seconds since the task last entered the queue (its job's arrival, or its
//! retry after a failure): aging, so a task that waited long rises above newer, more urgent
//! ones. Weights are whole numbers (`w_p=3600,w_w=1`: one priority level is worth an hour
//! of waiting).
//!
//! `locality` is 0 for every task for now: the view carries no dataset locality yet. The hook
//! is [`locality`]; when the view says where a task's dataset lives it should return 1 for a
//! task whose data is on a node of its eligible pools (0 otherwise), and placement should then
//! prefer those nodes.
//!
//! **Incremental.** All waiting tasks age at the same rate, so the order by score at any time
//! is the order by the fixed key `w_p x priority + w_d x locality - w_w x entered_at` (in
//! milli-units, exact integers), set once when a task enters the queue; ties go to the
//! earlier task id.
//!
//! **No starvation.** A task L with priority p_L that entered at s_L ranks above every task H
//! that enters at or after `s_L + 1000 x w_p x (p_max - p_L) / w_w` ms (w_w > 0; p_max the
//! highest priority that arrives; equal keys go to L, the earlier task). Strict order then
//! starts L after at most the tasks queued ahead of it by then, each of which starts within
//! one longest task duration of the one before (when the head does not fit, only running
//! tasks hold GPUs, and nothing starts past the head). With w_w = 0 it is plain strict
//! priority, and a stream of urgent tasks starves the rest.
//!
//! Decision cost: O((starts + 1) x log n) and O(changes x log n).

use crate::params::{AVOID_FAILED, PLACEMENT, ParamInfo, Params, SpecError};
use crate::placement::Placer;
use crate::tracking::{Placed, place_and_start, sync_waiting};
use crate::wait_queue::{Key, WaitQueue};
use sim::{ClusterView, Plan, Policy, TaskId};

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
        help: "weight of data locality (0 or 1; always 0 until the view gives dataset locality)",
    },
    ParamInfo {
        key: "w_w",
        values: "whole number 0..=1000000",
        default: "1",
        help: "weight of waiting, per second in the queue (aging; 0: strict priority, may starve)",
    },
    PLACEMENT,
    AVOID_FAILED,
];

const MAX_WEIGHT: u64 = 1_000_000;

/// Where keys sit: the static score (|score| < 2^62 with the weights bounded) is subtracted
/// from it, so higher scores get smaller keys.
const BIAS: i128 = 1 << 63;

/// Data locality of `task`, 0 or 1: the hook for when the view says where datasets live.
pub fn locality(_view: &ClusterView<'_>, _task: TaskId) -> i64 {
    0
}

pub struct WeightedScore {
    name: String,
    w_p: i128,
    w_d: i128,
    w_w: i128,
    placer: Placer,
    waiting: WaitQueue,
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
        let placer = Placer::from_params(params)?;
        Ok(WeightedScore {
            name: format!("weighted-score[w_p={w_p},w_d={w_d},w_w={w_w},{placer}]"),
            w_p: i128::from(w_p),
            w_d: i128::from(w_d),
            w_w: i128::from(w_w),
            placer,
            waiting: WaitQueue::default(),
        })
    }

    /// The task's key if it enters the queue now: BIAS less its score at time zero, in
    /// milli-units (its score at any later time t adds `w_w x t` to every task alike).
    fn key(&self, view: &ClusterView<'_>, task: TaskId) -> Key {
        let priority = i128::from(view.job_spec(view.task(task).job).priority);
        let locality = i128::from(locality(view, task));
        let entered_ms = i128::from(view.now().as_ms());
        let score = 1000 * self.w_p * priority + 1000 * self.w_d * locality - self.w_w * entered_ms;
        (BIAS - score).clamp(0, i128::from(u64::MAX)) as Key
    }
}

impl Policy for WeightedScore {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let mut waiting = std::mem::take(&mut self.waiting);
        sync_waiting(view, &mut waiting, |t| self.key(view, t));
        self.waiting = waiting;
        // Strict: the top-scored task waits for GPUs, and so does everyone behind it (a task
        // its queue's quota holds back is parked and does not block).
        while let Some((_, task)) = self.waiting.head() {
            if place_and_start(view, plan, self.placer, &mut self.waiting, task) == Placed::NoRoom {
                return;
            }
        }
    }
}
