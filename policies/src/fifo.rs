//! `fifo`: first in, first out, in arrival order (ties in trace order).
//!
//! Strict by default: the head of the queue blocks everything behind it until it fits.
//! `fifo[skip=true]` lets later tasks that fit start past a blocked head, with no
//! reservation for the head (so a big head can starve; `easy-backfill` is the fix).
//!
//! `fifo-idle[every=N]` is a test aid, not a policy: fifo that, on every N-th decision point
//! where work waits, starts nothing and looks again a minute later, leaving free GPUs idle.
//! It exists so that CI regression (`schedlab regress`) can be shown to catch a worse policy
//! with the real registry and engine. The registry builds it but does not list it among the
//! policies (see `registry.rs`).
//!
//! Decision cost: O(starts x log n) strict; O((starts + 1) x shapes x log n) with skip.

use crate::params::{AVOID_FAILED, PLACEMENT, ParamInfo, Params, SpecError};
use crate::placement::Placer;
use crate::tracking::{Aside, Placed, pass_over, place_and_start, put_back, reclaim_for_head, sync_waiting};
use crate::wait_queue::WaitQueue;
use sim::{ClusterView, Plan, Policy, SimDuration, TaskId};

const SKIP: ParamInfo = ParamInfo {
    key: "skip",
    values: "true|false",
    default: "false",
    help: "let later tasks that fit start past a blocked head (no reservation)",
};

pub const PARAMS: &[ParamInfo] = &[SKIP, PLACEMENT, AVOID_FAILED];

/// `fifo-idle`'s parameters: fifo's and how often it idles.
pub const IDLE_PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "every",
        values: "whole number >= 1",
        default: "2",
        help: "idle on every N-th decision point (1: never start anything)",
    },
    SKIP,
    PLACEMENT,
    AVOID_FAILED,
];

/// How long `fifo-idle` leaves GPUs idle before it looks again.
const IDLE_FOR: SimDuration = SimDuration(60_000);

pub struct Fifo {
    name: String,
    skip: bool,
    placer: Placer,
    waiting: WaitQueue,
    /// Idle on every `idle_every`-th decision point; 0: never (plain fifo).
    idle_every: u64,
    decision_points: u64,
    /// The head that last found no room, and the free GPUs' generation then. Strict and
    /// without queues, its room depends on nothing else (no quota to wait for, no GPUs to
    /// reclaim), so while both hold it still finds none: a decision point that freed nothing
    /// (an arrival behind it) places nothing.
    blocked: Option<(TaskId, u64)>,
}

impl Fifo {
    pub fn new(params: &Params) -> Result<Fifo, SpecError> {
        let skip: bool = params.get("skip")?;
        let placer = Placer::from_params(params)?;
        Ok(Fifo {
            name: format!("fifo[skip={skip},{placer}]"),
            skip,
            placer,
            waiting: WaitQueue::default(),
            idle_every: 0,
            decision_points: 0,
            blocked: None,
        })
    }

    /// The `fifo-idle` test aid (see the module comment).
    pub fn idling(params: &Params) -> Result<Fifo, SpecError> {
        let every: u64 = params.get("every")?;
        if every == 0 {
            return Err(SpecError(format!("policy `{}`: `every=0`: must be at least 1", params.policy)));
        }
        let fifo = Fifo::new(params)?;
        let name = format!("fifo-idle[every={every},{}", fifo.name.trim_start_matches("fifo["));
        Ok(Fifo { name, idle_every: every, ..fifo })
    }
}

impl Policy for Fifo {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        // Every task has key 0, so the queue orders by task id: arrival order.
        sync_waiting(view, &mut self.waiting, |_| 0);
        if self.idle_every > 0 && self.waiting.head().is_some() {
            self.decision_points += 1;
            if self.decision_points.is_multiple_of(self.idle_every) {
                plan.wake_at(view.now() + IDLE_FOR).expect("a minute from now is in the future");
                return;
            }
        }
        let mut aside = Aside::new();
        loop {
            let next = if self.skip { self.waiting.first_fitting(plan.free()) } else { self.waiting.head() };
            let Some((_, task)) = next else {
                put_back(&mut self.waiting, aside);
                if self.skip {
                    reclaim_for_head(view, plan, self.placer, &mut self.waiting);
                }
                return;
            };
            let blocked = Some((task, plan.free().generation()));
            if !self.skip && view.queues().is_empty() && self.blocked == blocked {
                return; // the head still finds no room: nothing was freed since it looked
            }
            if place_and_start(view, plan, self.placer, &mut self.waiting, task) == Placed::NoRoom {
                if self.skip && pass_over(plan, &mut self.waiting, task, &mut aside) {
                    continue; // its job does not fit: the tasks behind it may
                }
                put_back(&mut self.waiting, aside);
                self.blocked = blocked;
                return; // strict: the head waits for GPUs, and so does everyone behind it
            }
        }
    }
}
