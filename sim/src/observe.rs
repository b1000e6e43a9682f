//! The virtual-time model of observation: when the scheduler learns of what broke, following
//! the rules in `failure.rs`. It turns ground-truth cluster events into Controller calls at the
//! right instants, scheduling future events as it goes, and costs O(failures) events, never
//! O(nodes x time): implicit heartbeats are never simulated one by one, only their deadlines.

use crate::controller::{Controller, RetireRule};
use crate::event::{Event, EventQueue, Part};
use crate::failure::{ClusterEvent, FailureConfig};
use crate::ids::{GpuId, NodeId};
use crate::time::{SimDuration, SimTime};

pub(crate) struct Observer {
    config: FailureConfig,
    /// Overlapping failures of one part count up: it is repaired when the count returns to 0.
    node_faults: Vec<u32>,
    gpu_faults: Vec<u32>,
    /// GPUs with a failure no repair will ever end (virtual clock, no repair time): their
    /// node is retired without waiting for them.
    gpu_broken_for_good: Vec<bool>,
    /// When the node's current run of missed heartbeats began (its failure, or an earlier one
    /// if no beat got out in between), and a counter that retires the pending observations of
    /// a down period once it ends.
    node_failed_at: Vec<SimTime>,
    node_epoch: Vec<u32>,
    /// When the node was last repaired (its next beat is the first at or after this).
    node_repaired_at: Vec<Option<SimTime>>,
    gpu_failed_at: Vec<SimTime>,
    /// For nodes whose heartbeats the trace gives explicitly, the first recorded beat: from
    /// then on only recorded beats count; before it the node beats implicitly.
    explicit_from: Vec<Option<SimTime>>,
    last_beat: Vec<Option<SimTime>>,
    /// Explicit nodes that were down since their last delivered beat.
    down_since_beat: Vec<bool>,
    retire: Retirement,
    /// Wall clock: GPU repairs are reported when they happen. The places (in the order of
    /// same-time events) of each GPU's repairs, taken when it failed.
    reported_repairs: Option<Vec<Vec<u64>>>,
}

/// The retirement rule at work: each node's failures within the rule's window, and the nodes
/// to retire at their next repair, and those retired (their hardware no longer matters).
struct Retirement {
    rule: Option<RetireRule>,
    recent: Vec<Vec<SimTime>>,
    due: Vec<bool>,
    retired: Vec<bool>,
}

impl Retirement {
    /// Counts a failure of `node` (or one of its GPUs) now.
    fn failed(&mut self, node: NodeId, now: SimTime) {
        let Some(rule) = self.rule else { return };
        let recent = &mut self.recent[node.index()];
        recent.retain(|&t| now.since(t) < rule.window);
        recent.push(now);
        if recent.len() >= rule.failures as usize {
            self.due[node.index()] = true;
        }
    }
}

impl Observer {
    pub(crate) fn new(
        controller: &Controller,
        events: &[ClusterEvent],
        config: FailureConfig,
        rule: Option<RetireRule>,
    ) -> Observer {
        let nodes = controller.cluster().nodes().len();
        let gpus = controller.cluster().gpu_count() as usize;
        let mut explicit_from: Vec<Option<SimTime>> = vec![None; nodes];
        for e in events {
            if let ClusterEvent::Heartbeat { node, time } = *e {
                let first = explicit_from[node.index()].get_or_insert(time);
                *first = (*first).min(time);
            }
        }
        Observer {
            config,
            node_faults: vec![0; nodes],
            gpu_faults: vec![0; gpus],
            gpu_broken_for_good: vec![false; gpus],
            node_failed_at: vec![SimTime::ZERO; nodes],
            node_epoch: vec![0; nodes],
            node_repaired_at: vec![None; nodes],
            gpu_failed_at: vec![SimTime::ZERO; gpus],
            explicit_from,
            last_beat: vec![None; nodes],
            down_since_beat: vec![false; nodes],
            retire: Retirement {
                rule,
                recent: vec![Vec::new(); nodes],
                due: vec![false; nodes],
                retired: vec![false; nodes],
            },
            reported_repairs: None,
        }
    }

    /// GPU failures without a repair time are repaired when reported (wall clock).
    pub(crate) fn with_reported_repairs(mut self) -> Observer {
        self.reported_repairs = Some(vec![Vec::new(); self.gpu_faults.len()]);
        self
    }

    /// The places taken for `gpu`'s repairs, now reported.
    pub(crate) fn take_reported_repairs(&mut self, gpu: GpuId) -> Vec<u64> {
        self.reported_repairs.as_mut().map(|r| std::mem::take(&mut r[gpu.index()])).unwrap_or_default()
    }

    /// `node` beats explicitly from `time` on (wall clock: its beats are pushed as they come).
    pub(crate) fn beats_from(&mut self, node: NodeId, time: SimTime) {
        let first = self.explicit_from[node.index()].get_or_insert(time);
        *first = (*first).min(time);
    }

    /// When `node`'s last explicit heartbeat was delivered.
    pub(crate) fn last_beat(&self, node: NodeId) -> Option<SimTime> {
        self.last_beat.get(node.index()).copied().flatten()
    }

    /// Whether `event` is about a node retired for good (it changes nothing).
    pub(crate) fn is_about_a_retired_node(&self, event: &ClusterEvent) -> bool {
        self.retire.retired[event.node().index()]
    }

    /// Whether heap event `event` is about a retired node and so changes nothing: a repair (a
    /// node is retired only when every failure of its that has a repair is over: what is left
    /// to repair is a GPU also broken for good, whose count never returns to 0) or a heartbeat
    /// observation (retirement voided its epoch, and a retired node is dead). Not a GPU failure
    /// seen: that one is counted as detected.
    pub(crate) fn voided_by_retirement(&self, event: &Event, c: &Controller) -> bool {
        let node = match *event {
            Event::Repair(Part::Gpu(gpu)) => c.cluster().node_of(gpu),
            Event::Repair(Part::Node(node))
            | Event::NodeMissedBeats { node, .. }
            | Event::NodeBeatsAgain { node, .. }
            | Event::BeatDeadline { node, .. } => node,
            _ => return false,
        };
        self.retire.retired[node.index()]
    }

    /// Applies one ground-truth cluster event at the controller's current time; whether it
    /// changed anything (a failure of a part already down, a record about a retired node or a
    /// beat from a node the scheduler already counts up changes nothing, and is no reason to
    /// decide: the same history in other records must give the same schedule).
    pub(crate) fn apply_truth(&mut self, event: &ClusterEvent, c: &mut Controller, queue: &mut EventQueue) -> bool {
        if self.is_about_a_retired_node(event) {
            return false; // out of the fleet: what its hardware does no longer matters
        }
        match *event {
            ClusterEvent::GpuFail { node, gpu, repair, .. } => {
                let gpu = c.cluster().node(node).gpu_at(gpu);
                self.gpu_failed(gpu, repair, c, queue)
            }
            ClusterEvent::NodeFail { node, repair, .. } => self.node_failed(node, repair, c, queue),
            ClusterEvent::Heartbeat { node, .. } => self.beat(node, c, queue),
        }
    }

    /// Applies one hardware-phase event of the heap at the controller's current time; whether
    /// it changed anything (a repair of one of overlapping failures, or an observation its
    /// part outlived, does not).
    pub(crate) fn apply(&mut self, event: Event, c: &mut Controller, queue: &mut EventQueue) -> bool {
        let now = c.now();
        match event {
            Event::Repair(Part::Gpu(gpu)) => {
                self.gpu_faults[gpu.index()] -= 1;
                if self.gpu_faults[gpu.index()] > 0 {
                    return false;
                }
                c.gpu_repaired(gpu);
                let node = c.cluster().node_of(gpu);
                self.retire_if_due(node, c);
                true
            }
            Event::Repair(Part::Node(node)) => {
                self.node_faults[node.index()] -= 1;
                if self.node_faults[node.index()] > 0 {
                    return false;
                }
                c.node_repaired(node);
                if self.retire_if_due(node, c) {
                    return true;
                }
                // Pending detections of this down period are retired; beats resume.
                self.node_epoch[node.index()] += 1;
                self.node_repaired_at[node.index()] = Some(now);
                if !self.explicit_at(node, now) {
                    let epoch = self.node_epoch[node.index()];
                    queue.push(self.config.next_beat_at(now), Event::NodeBeatsAgain { node, epoch });
                }
                true
            }
            Event::GpuSeen { gpu, failed_at } => {
                // Only the failure that began at `failed_at`, if it is still going on, takes the
                // GPU out: not a later one (seen in its own time), not the node being down.
                let still_down = self.gpu_faults[gpu.index()] > 0 && self.gpu_failed_at[gpu.index()] == failed_at;
                c.gpu_failure_seen(gpu, failed_at, still_down);
                true
            }
            Event::NodeMissedBeats { node, epoch } => {
                let dies = self.node_epoch[node.index()] == epoch && !c.health().node_dead(node);
                if dies {
                    c.node_declared_dead(node, Some(self.node_failed_at[node.index()]));
                }
                dies
            }
            Event::NodeBeatsAgain { node, epoch } => self.node_epoch[node.index()] == epoch && self.back(node, c),
            Event::BeatDeadline { node, beat } => {
                let dies = self.last_beat[node.index()] == Some(beat) && !c.health().node_dead(node);
                if dies {
                    // Down since its last delivered beat (repaired at this very instant, or in a
                    // gap of the records): that failure is what the deadline detects.
                    let failed_at = self.down_since_beat[node.index()].then(|| self.node_failed_at[node.index()]);
                    c.node_declared_dead(node, failed_at);
                }
                dies
            }
            Event::TaskFinished { .. }
            | Event::TaskExited { .. }
            | Event::JobArrival(_)
            | Event::Cancel(_)
            | Event::Timer(_)
            | Event::Wake
            | Event::Pass => {
                unreachable!("not a hardware event: {event:?}")
            }
        }
    }

    /// Whether the GPU broke now (it was not already down).
    fn gpu_failed(
        &mut self,
        gpu: GpuId,
        repair: Option<SimDuration>,
        c: &mut Controller,
        queue: &mut EventQueue,
    ) -> bool {
        let now = c.now();
        self.gpu_faults[gpu.index()] += 1;
        if let Some(repair) = repair {
            queue.push(now + repair, Event::Repair(Part::Gpu(gpu)));
        } else if let Some(reported) = &mut self.reported_repairs {
            reported[gpu.index()].push(queue.reserve_seq());
        } else {
            self.gpu_broken_for_good[gpu.index()] = true;
        }
        if self.gpu_faults[gpu.index()] > 1 {
            return false; // already broken: nothing new happens, nothing new is seen
        }
        self.retire.failed(c.cluster().node_of(gpu), now);
        self.gpu_failed_at[gpu.index()] = now;
        c.gpu_broke(gpu);
        queue.push(now + self.config.gpu_detect_delay, Event::GpuSeen { gpu, failed_at: now });
        true
    }

    /// Whether the node went down now (it was not already down).
    fn node_failed(
        &mut self,
        node: NodeId,
        repair: Option<SimDuration>,
        c: &mut Controller,
        queue: &mut EventQueue,
    ) -> bool {
        let now = c.now();
        self.node_faults[node.index()] += 1;
        if let Some(repair) = repair {
            queue.push(now + repair, Event::Repair(Part::Node(node)));
        }
        if self.node_faults[node.index()] > 1 {
            return false; // one down period, one failure (for the retirement rule too)
        }
        self.retire.failed(node, now);
        // Missed beats run on from the earlier failure when no beat got out since its repair
        // (a beat at the very instant of a failure is not sent; a node with recorded beats
        // sent one if one was delivered since it went down).
        let beat_since_repair = if self.explicit_at(node, now) {
            !self.down_since_beat[node.index()]
        } else {
            self.node_repaired_at[node.index()].is_none_or(|r| self.config.next_beat_at(r) < now)
        };
        if beat_since_repair {
            self.node_failed_at[node.index()] = now;
        }
        self.node_epoch[node.index()] += 1;
        self.down_since_beat[node.index()] = true;
        c.node_broke(node);
        if !self.explicit_at(node, now) {
            let epoch = self.node_epoch[node.index()];
            let dead_at = self.config.declared_dead_at(self.node_failed_at[node.index()]).max(now);
            queue.push(dead_at, Event::NodeMissedBeats { node, epoch });
        }
        true
    }

    /// Whether only recorded beats count for `node` at `at` (it has records, the first of them
    /// no later than `at`).
    fn explicit_at(&self, node: NodeId, at: SimTime) -> bool {
        self.explicit_from[node.index()].is_some_and(|first| first <= at)
    }

    /// Retires `node` if its failures reached the rule (at the repair of the last of them);
    /// whether it did.
    fn retire_if_due(&mut self, node: NodeId, c: &mut Controller) -> bool {
        if !self.retire.due[node.index()] || self.retire.retired[node.index()] {
            return false;
        }
        let first = c.cluster().node(node).first_gpu.index();
        let gpus = first..first + c.cluster().node(node).gpu_count as usize;
        let repair_due = |g: usize| self.gpu_faults[g] > 0 && !self.gpu_broken_for_good[g];
        if self.node_faults[node.index()] > 0 || gpus.into_iter().any(repair_due) {
            return false; // retired at the repair of the last of its failures (that has one)
        }
        self.retire.retired[node.index()] = true;
        // Its pending observations (a first beat after a repair) are void: it never rejoins.
        self.node_epoch[node.index()] += 1;
        c.retire_node(node);
        true
    }

    /// An explicit heartbeat record: delivered unless the node is down. Whether the scheduler
    /// learnt anything from it (see [`Observer::back`]).
    fn beat(&mut self, node: NodeId, c: &mut Controller, queue: &mut EventQueue) -> bool {
        if c.health().node_down(node) {
            return false;
        }
        let now = c.now();
        let news = self.back(node, c);
        self.last_beat[node.index()] = Some(now);
        let k = u64::from(self.config.missed_beats.max(1));
        let deadline = now + SimDuration(self.config.heartbeat_interval.as_ms() * k);
        queue.push(deadline, Event::BeatDeadline { node, beat: now });
        news
    }

    /// The node's beats reach the scheduler again: it rejoins if it was declared dead, and
    /// otherwise reports the tasks it lost while it was down. Whether it did either.
    fn back(&mut self, node: NodeId, c: &mut Controller) -> bool {
        let was_down = std::mem::take(&mut self.down_since_beat[node.index()]);
        if c.health().node_dead(node) {
            c.node_rejoined(node);
            return true;
        }
        if was_down {
            c.node_lost_tasks(node, self.node_failed_at[node.index()]);
        }
        was_down
    }
}
