//! Events and their total order. Every event has a key `(time, phase, seq)`: time first, then
//! the phase fixes same-time semantics, then `seq` (the order the event was scheduled) breaks
//! the remaining ties. So the order is total and never depends on heap internals.

use crate::deps::Timer;
use crate::ids::{GpuId, JobId, NodeId, TaskId};
use crate::quad_heap::QuadHeap;
use crate::time::SimTime;

/// What can happen. Phases, in the order they apply at one timestamp: hardware first (the
/// trace's failures and recorded beats, then repairs, then what the scheduler learns: beats
/// that reach it, deadlines, GPU failures seen), so a failure at `t` happens before a
/// completion or a placement at `t`, and what happens at `t` never depends on which event was
/// scheduled first (a part repaired at `t` is up for what is observed at `t`; a node rejoining
/// at `t` is a spare for one declared dead at `t`; a node declared dead at `t` under a task
/// draws a spare before a GPU failure seen at `t` fails the task); then completions free their
/// GPUs; then arrivals are queued; then users' cancels; then wake-ups the policy asked for.
/// The policy decides once after all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    /// Ground truth: a GPU or node is repaired.
    Repair(Part),
    /// Observation: a GPU failure that happened at `failed_at` is seen.
    GpuSeen {
        gpu: GpuId,
        failed_at: SimTime,
    },
    /// Observation (implicit heartbeats): the node's k-th missed beat, if it is still down in
    /// failure `epoch`.
    NodeMissedBeats {
        node: NodeId,
        epoch: u32,
    },
    /// Observation (implicit heartbeats): the node's first beat after its repair in `epoch`.
    NodeBeatsAgain {
        node: NodeId,
        epoch: u32,
    },
    /// Observation (explicit heartbeats): k intervals after the beat at `beat`; dead if no
    /// newer beat arrived.
    BeatDeadline {
        node: NodeId,
        beat: SimTime,
    },
    TaskFinished {
        task: TaskId,
        /// The task's job: the engine loads its state ahead (`prefetch.rs`).
        job: JobId,
        attempt: u32,
    },
    /// Wall clock: the attempt's process exited with `code` (its place among same-time
    /// completions is its start's, as a scheduled completion's would be).
    TaskExited {
        task: TaskId,
        attempt: u32,
        code: i32,
    },
    JobArrival(JobId),
    /// The user cancels the job (`JobSpec::cancel`), after the arrivals of the same instant, as
    /// live mode applies a batch.
    Cancel(JobId),
    /// A timer the Controller asked for (start windows, progress points of DAG dependencies).
    Timer(Timer),
    Wake,
    /// A scheduling pass falls due (`ControllerConfig::pass_interval`).
    Pass,
}

/// A piece of hardware that fails and is repaired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    Gpu(GpuId),
    Node(NodeId),
}

impl Event {
    pub fn phase(self) -> u8 {
        match self {
            Event::Repair(_) => PHASE_REPAIR,
            Event::NodeBeatsAgain { .. } => PHASE_BEAT,
            Event::NodeMissedBeats { .. } | Event::BeatDeadline { .. } => PHASE_OBSERVE,
            Event::GpuSeen { .. } => PHASE_GPU_SEEN,
            Event::TaskFinished { .. } | Event::TaskExited { .. } | Event::Timer(_) => PHASE_COMPLETION,
            Event::JobArrival(_) => PHASE_ARRIVAL,
            Event::Cancel(_) => PHASE_CANCEL,
            Event::Wake | Event::Pass => PHASE_WAKE,
        }
    }
}

/// Repairs (ground truth the heap holds; failures come from the trace before any phase).
pub const PHASE_REPAIR: u8 = 0;
/// What the scheduler learns of the hardware, in a fixed order whatever was scheduled first:
/// beats that reach it (a node rejoins, or reports its lost tasks; a recorded beat, from the
/// trace, applies earlier still), then deadlines (a node declared dead, a spare swapped in),
/// then GPU failures seen.
pub const PHASE_BEAT: u8 = 1;
pub const PHASE_OBSERVE: u8 = 2;
pub const PHASE_GPU_SEEN: u8 = 3;
pub const PHASE_COMPLETION: u8 = 4;
pub const PHASE_ARRIVAL: u8 = 5;
pub const PHASE_CANCEL: u8 = 6;
pub const PHASE_WAKE: u8 = 7;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct EventKey {
    pub time: SimTime,
    pub phase: u8,
    pub seq: u64,
}

impl EventKey {
    /// The key as one integer with the same order: time, then phase, then seq (below 2^56),
    /// so that the heap compares one `u128` per step.
    fn packed(self) -> u128 {
        debug_assert!(self.seq < 1 << 56, "more than 2^56 events scheduled");
        (u128::from(self.time.as_ms()) << 64) | (u128::from(self.phase) << 56) | u128::from(self.seq)
    }
    fn unpacked(packed: u128) -> EventKey {
        let low = packed as u64;
        EventKey { time: SimTime((packed >> 64) as u64), phase: (low >> 56) as u8, seq: low & ((1 << 56) - 1) }
    }
}

/// An event on the heap, ordered by its packed key alone (keys are unique: their sequence
/// numbers are).
#[derive(Debug, Clone, Copy)]
struct Scheduled {
    key: u128,
    event: Event,
}

impl PartialEq for Scheduled {
    fn eq(&self, other: &Scheduled) -> bool {
        self.key == other.key
    }
}
impl Eq for Scheduled {}
impl PartialOrd for Scheduled {
    fn partial_cmp(&self, other: &Scheduled) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Scheduled {
    fn cmp(&self, other: &Scheduled) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

#[derive(Debug, Default)]
pub struct EventQueue {
    heap: QuadHeap<Scheduled>,
    next_seq: u64,
}

impl EventQueue {
    pub fn push(&mut self, time: SimTime, event: Event) {
        let seq = self.reserve_seq();
        self.push_reserved(time, seq, event);
    }
    /// Takes the next place in the schedule order for an event whose time is not known yet
    /// (wall clock: a process's exit, a GPU's repair): pushed later with
    /// [`EventQueue::push_reserved`], it pops where it would have, had it been pushed now.
    pub fn reserve_seq(&mut self) -> u64 {
        self.next_seq += 1;
        self.next_seq - 1
    }
    /// Pushes `event` with a place taken earlier by [`EventQueue::reserve_seq`].
    pub fn push_reserved(&mut self, time: SimTime, seq: u64, event: Event) {
        let key = EventKey { time, phase: event.phase(), seq };
        self.heap.push(Scheduled { key: key.packed(), event });
    }
    /// The next event, without its key.
    pub fn peek_event(&self) -> Option<&Event> {
        self.heap.peek().map(|s| &s.event)
    }
    /// The event that pops after the next one, as things stand (what is pushed meanwhile may
    /// come first): for loading what it will read ahead of time.
    pub fn peek_second_event(&self) -> Option<&Event> {
        self.heap.second().map(|s| &s.event)
    }
    pub fn peek_key(&self) -> Option<EventKey> {
        self.heap.peek().map(|s| EventKey::unpacked(s.key))
    }
    pub fn pop(&mut self) -> Option<(EventKey, Event)> {
        self.heap.pop().map(|s| (EventKey::unpacked(s.key), s.event))
    }
    /// Pops the next event if its key is below `bound`.
    pub fn pop_before(&mut self, bound: EventKey) -> Option<(EventKey, Event)> {
        if self.heap.peek()?.key < bound.packed() { self.pop() } else { None }
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    /// Keeps only the events `keep` accepts (their keys, and so the order, unchanged).
    pub fn retain(&mut self, mut keep: impl FnMut(EventKey, &Event) -> bool) {
        self.heap.retain(|s| keep(EventKey::unpacked(s.key), &s.event));
    }
    pub fn is_empty(&self) -> bool {
        self.heap.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_time_events_pop_in_phase_then_schedule_order() {
        let mut q = EventQueue::default();
        let t = SimTime(5);
        q.push(t, Event::Wake);
        q.push(t, Event::JobArrival(JobId(1)));
        q.push(t, Event::TaskFinished { task: TaskId(9), job: JobId(3), attempt: 1 });
        q.push(t, Event::JobArrival(JobId(0)));
        q.push(SimTime(4), Event::Wake);
        let order: Vec<Event> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(
            order,
            vec![
                Event::Wake,
                Event::TaskFinished { task: TaskId(9), job: JobId(3), attempt: 1 },
                Event::JobArrival(JobId(1)),
                Event::JobArrival(JobId(0)),
                Event::Wake,
            ]
        );
    }

    #[test]
    fn packed_keys_keep_the_order_and_unpack_exactly() {
        let keys = [
            EventKey { time: SimTime(0), phase: 0, seq: 0 },
            EventKey { time: SimTime(0), phase: 0, seq: (1 << 56) - 1 },
            EventKey { time: SimTime(0), phase: 1, seq: 0 },
            EventKey { time: SimTime(0), phase: u8::MAX, seq: 7 },
            EventKey { time: SimTime(1), phase: 0, seq: 0 },
            EventKey { time: SimTime(u64::MAX), phase: 4, seq: 3 },
        ];
        for pair in keys.windows(2) {
            assert!(pair[0] < pair[1] && pair[0].packed() < pair[1].packed(), "{pair:?}");
        }
        for k in keys {
            assert_eq!(EventKey::unpacked(k.packed()), k);
        }
    }
}
