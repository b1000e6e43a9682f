//! `fifo`: first in, first out, in arrival order (ties in trace order).
//!
//! Strict by default: the head of the queue blocks everything behind it until it fits.
//! `fifo[skip=true]` lets later tasks that fit start past a blocked head, with no
//! reservation for the head (so a big head can starve; `easy-backfill` is the fix).
//!
//! Decision cost: O(starts x log n) strict; O((starts + 1) x shapes x log n) with skip.

use crate::params::{AVOID_FAILED, PLACEMENT, ParamInfo, Params, SpecError};
use crate::placement::Placer;
use crate::tracking::{place_and_start, sync_waiting};
use crate::wait_queue::WaitQueue;
use sim::{ClusterView, Plan, Policy};

pub const PARAMS: &[ParamInfo] = &[
    ParamInfo {
        key: "skip",
        values: "true|false",
        default: "false",
        help: "let later tasks that fit start past a blocked head (no reservation)",
    },
    PLACEMENT,
    AVOID_FAILED,
];

pub struct Fifo {
    name: String,
    skip: bool,
    placer: Placer,
    waiting: WaitQueue,
}

impl Fifo {
    pub fn new(params: &Params) -> Result<Fifo, SpecError> {
        let skip: bool = params.get("skip")?;
        let placer = Placer::from_params(params)?;
        Ok(Fifo { name: format!("fifo[skip={skip},{placer}]"), skip, placer, waiting: WaitQueue::default() })
    }
}

impl Policy for Fifo {
    fn name(&self) -> &str {
        &self.name
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        // Every task has key 0, so the queue orders by task id: arrival order.
        sync_waiting(view, &mut self.waiting, |_| 0);
        loop {
            let next = if self.skip { self.waiting.first_fitting(plan.free()) } else { self.waiting.head() };
            let Some((_, task)) = next else { return };
            if place_and_start(view, plan, self.placer, &mut self.waiting, task).is_none() {
                return; // strict: the head waits, and so does everyone behind it
            }
        }
    }
}
