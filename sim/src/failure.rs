//! Ground truth about hardware, and how the scheduler comes to know it.
//!
//! A [`ClusterEvent`] is what *happened*: a GPU or a whole node broke at some instant (and was
//! repaired some time later), or a node sent a heartbeat. The scheduler does not see failures
//! directly. It sees:
//! - for a node: missed heartbeats. Nodes beat at every multiple of `heartbeat_interval`; a
//!   node that fails at `t` misses the beats at and after `t`, and is declared dead at its
//!   `missed_beats`-th missed beat: `(ceil(t / h) + k - 1) x h`. So the detection lag is in
//!   `[(k-1) h, k h)`. If the node is repaired first, it beats again at the first beat at or
//!   after the repair and its agent reports the tasks it lost then; it is never declared dead.
//!   A node declared dead rejoins at its first beat at or after its repair.
//! - for a GPU: its own event (as NVML reports an XID error) `gpu_detect_delay` after the
//!   failure. The GPU returns to service when it is repaired.
//!
//! Between a failure and its detection, tasks on the broken hardware keep their GPUs and make
//! no progress. On detection they lose the work done since their last checkpoint and retry
//! (paying the restart overhead) while their retry budget lasts.

use crate::ids::NodeId;
use crate::time::{SimDuration, SimTime};

/// Something that happened to the hardware. Nodes are numbered as [`crate::Cluster`] numbers
/// them; a GPU is its 0-based slot within its node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClusterEvent {
    /// One GPU stops working at `time`; `repair` is how long until it works again (`None`:
    /// not within the run).
    GpuFail { time: SimTime, node: NodeId, gpu: u32, repair: Option<SimDuration> },
    /// A whole node (all its GPUs, and its heartbeats) stops at `time`.
    NodeFail { time: SimTime, node: NodeId, repair: Option<SimDuration> },
    /// The node reported alive at `time` (explicit heartbeats, e.g. from a live journal). From
    /// its first recorded beat on, a node with explicit heartbeats is declared dead
    /// `missed_beats x heartbeat_interval` after its last delivered one, failure or not, and
    /// rejoins at the next; beats recorded while it is down are not delivered. Before its first
    /// record it beats implicitly, like every other node.
    Heartbeat { time: SimTime, node: NodeId },
}

impl ClusterEvent {
    pub fn time(&self) -> SimTime {
        match self {
            ClusterEvent::GpuFail { time, .. }
            | ClusterEvent::NodeFail { time, .. }
            | ClusterEvent::Heartbeat { time, .. } => *time,
        }
    }

    pub fn node(&self) -> NodeId {
        match self {
            ClusterEvent::GpuFail { node, .. }
            | ClusterEvent::NodeFail { node, .. }
            | ClusterEvent::Heartbeat { node, .. } => *node,
        }
    }
}

/// How failures are detected and survived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FailureConfig {
    /// Nodes heartbeat every this long (10 s).
    pub heartbeat_interval: SimDuration,
    /// A node is declared dead at this many consecutive missed beats (3).
    pub missed_beats: u32,
    /// A GPU failure is observed this long after it happens (0: at once, as an XID event).
    pub gpu_detect_delay: SimDuration,
    /// Retries a task gets at most (`R_max`, 3). With a deadline the budget is
    /// `min(R_max, max(1, floor((deadline - elapsed) / mean attempt time)))`.
    pub max_retries: u32,
}

impl Default for FailureConfig {
    fn default() -> Self {
        FailureConfig {
            heartbeat_interval: SimDuration::from_secs(10),
            missed_beats: 3,
            gpu_detect_delay: SimDuration::ZERO,
            max_retries: 3,
        }
    }
}

impl FailureConfig {
    /// When a node that fails at `at` misses its `missed_beats`-th beat.
    pub fn declared_dead_at(&self, at: SimTime) -> SimTime {
        let h = self.heartbeat_interval.as_ms().max(1);
        let first_missed = at.as_ms().div_ceil(h);
        SimTime((first_missed + u64::from(self.missed_beats.max(1)) - 1) * h)
    }

    /// The first heartbeat at or after `at`.
    pub fn next_beat_at(&self, at: SimTime) -> SimTime {
        let h = self.heartbeat_interval.as_ms().max(1);
        SimTime(at.as_ms().div_ceil(h) * h)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detection_is_at_the_kth_missed_beat() {
        let c = FailureConfig::default(); // h = 10 s, k = 3
        // Fails at 25 s: misses 30, 40, 50: dead at 50 s.
        assert_eq!(c.declared_dead_at(SimTime::from_secs(25)), SimTime::from_secs(50));
        // Fails exactly on a beat (20 s): that beat is missed too: 20, 30, 40.
        assert_eq!(c.declared_dead_at(SimTime::from_secs(20)), SimTime::from_secs(40));
        assert_eq!(c.next_beat_at(SimTime(20_001)), SimTime::from_secs(30));
        assert_eq!(c.next_beat_at(SimTime::from_secs(30)), SimTime::from_secs(30));
    }
}
