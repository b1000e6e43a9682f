//! Ground-truth hardware events as the engine meets them: a fixed list (a trace's events.csv,
//! explicit heartbeats) merged with a [`HardwareFeed`] that produces failures as the run goes
//! (a failure model, a failure history replayed period after period).
//!
//! A feed is pulled in time order, one event at a time, for as long as the run lasts: so a run
//! of any length sees failures at the model's rate to its end, and nothing has to guess the
//! run's length beforehand. A feed holds O(parts) state (each part's next failure); nothing of
//! it goes on the engine's heap until it happens.

use crate::failure::ClusterEvent;
use crate::time::{SimTime, earliest};
use std::collections::VecDeque;

/// Ground-truth hardware events produced as the run goes, in time order (ties in a fixed
/// order of the feed's choosing: the same inputs give the same sequence).
///
/// Implementations convert whatever they sample to integer milliseconds themselves: what
/// reaches the engine is `ClusterEvent`s. The same seed must give the same history whatever
/// the run's length: a feed never looks at how far the run will go.
pub trait HardwareFeed: std::fmt::Debug {
    /// The time of the next event without taking it; `None`: the feed has ended for good.
    fn peek_time(&mut self) -> Option<SimTime>;
    /// Takes the next event (at [`Self::peek_time`]).
    fn pop(&mut self) -> Option<ClusterEvent>;
    /// The end of the span the feed covers, once it has ended (a history replayed once);
    /// `None` while it goes on (it covers the whole run).
    fn covered_until(&self) -> Option<SimTime> {
        None
    }
}

/// The fixed events (sorted by time, ties in the given order) and the feed, merged: at one
/// instant the fixed events come first, then the feed's, as a list of both sorted stably by
/// time would give them.
#[derive(Debug, Default)]
pub(crate) struct Hardware {
    fixed: VecDeque<ClusterEvent>,
    feed: Option<Box<dyn HardwareFeed>>,
    /// The feed's next event, taken to be looked at (by [`Self::drop_while`]) and kept.
    fed_next: Option<ClusterEvent>,
}

impl Hardware {
    pub(crate) fn new(fixed: Vec<ClusterEvent>, feed: Option<Box<dyn HardwareFeed>>) -> Hardware {
        Hardware { fixed: fixed.into(), feed, fed_next: None }
    }

    /// A fixed event learnt as it happens (wall clock), no earlier than those already given.
    pub(crate) fn push(&mut self, event: ClusterEvent) {
        debug_assert!(
            self.fixed.back().is_none_or(|last| last.time() <= event.time()),
            "hardware events in time order"
        );
        self.fixed.push_back(event);
    }

    /// The time of the next fixed event (all there is without a feed).
    pub(crate) fn peek_fixed_time(&self) -> Option<SimTime> {
        self.fixed.front().map(ClusterEvent::time)
    }

    /// The time of the next event, fixed or fed.
    pub(crate) fn peek_time(&mut self) -> Option<SimTime> {
        earliest(self.fixed.front().map(ClusterEvent::time), self.peek_fed_time())
    }

    fn peek_fed_time(&mut self) -> Option<SimTime> {
        match &self.fed_next {
            Some(event) => Some(event.time()),
            None => self.feed.as_mut().and_then(|f| f.peek_time()),
        }
    }

    fn pop_fed(&mut self) -> Option<ClusterEvent> {
        self.fed_next.take().or_else(|| self.feed.as_mut()?.pop())
    }

    /// Takes the next event if it happens at `now`.
    pub(crate) fn pop_at(&mut self, now: SimTime) -> Option<ClusterEvent> {
        if self.fixed.front().is_some_and(|e| e.time() == now) {
            return self.fixed.pop_front();
        }
        if self.peek_fed_time() == Some(now) { self.pop_fed() } else { None }
    }

    /// Drops the next events, in order, for as long as `drop` says so; returns how many.
    pub(crate) fn drop_while(&mut self, mut drop: impl FnMut(&ClusterEvent) -> bool) -> u64 {
        let mut dropped = 0;
        loop {
            let fixed_first = match (self.fixed.front().map(ClusterEvent::time), self.peek_fed_time()) {
                (Some(fixed), fed) => fed.is_none_or(|t| fixed <= t),
                (None, Some(_)) => false,
                (None, None) => return dropped,
            };
            if fixed_first {
                if !self.fixed.front().is_some_and(&mut drop) {
                    return dropped;
                }
                self.fixed.pop_front();
            } else {
                if self.fed_next.is_none() {
                    self.fed_next = self.feed.as_mut().and_then(|f| f.pop());
                }
                if !self.fed_next.as_ref().is_some_and(&mut drop) {
                    return dropped;
                }
                self.fed_next = None;
            }
            dropped += 1;
        }
    }

    /// With a feed: until when it covers (`None` inside: to the run's end). `None`: no feed.
    pub(crate) fn covered_until(&self) -> Option<Option<SimTime>> {
        self.feed.as_ref().map(|f| f.covered_until())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::NodeId;

    /// Node 0 fails every `every` ms, forever.
    #[derive(Debug)]
    struct Every {
        every: u64,
        next: u64,
    }

    impl HardwareFeed for Every {
        fn peek_time(&mut self) -> Option<SimTime> {
            Some(SimTime(self.next))
        }
        fn pop(&mut self) -> Option<ClusterEvent> {
            let time = SimTime(self.next);
            self.next += self.every;
            Some(ClusterEvent::NodeFail { time, node: NodeId(0), repair: None })
        }
    }

    #[test]
    fn fixed_events_come_first_at_one_instant_and_the_feed_goes_on() {
        let fixed = vec![
            ClusterEvent::Heartbeat { time: SimTime(10), node: NodeId(1) },
            ClusterEvent::Heartbeat { time: SimTime(25), node: NodeId(1) },
        ];
        let mut hw = Hardware::new(fixed, Some(Box::new(Every { every: 10, next: 10 })));
        let mut seen = Vec::new();
        while let Some(now) = hw.peek_time().filter(|t| t.as_ms() <= 40) {
            while let Some(e) = hw.pop_at(now) {
                seen.push((e.time().as_ms(), e.node().0));
            }
        }
        assert_eq!(seen, [(10, 1), (10, 0), (20, 0), (25, 1), (30, 0), (40, 0)]);
        assert_eq!(hw.peek_time(), Some(SimTime(50)));
        assert_eq!(Hardware::new(Vec::new(), None).peek_time(), None);
    }

    #[test]
    fn dropped_events_are_gone_and_the_first_kept_is_next_whichever_source_it_is_from() {
        let fixed = vec![
            ClusterEvent::Heartbeat { time: SimTime(10), node: NodeId(1) },
            ClusterEvent::Heartbeat { time: SimTime(20), node: NodeId(0) },
            ClusterEvent::Heartbeat { time: SimTime(25), node: NodeId(1) },
        ];
        let mut hw = Hardware::new(fixed, Some(Box::new(Every { every: 10, next: 10 })));
        let node0_before_40 = |e: &ClusterEvent| e.node() == NodeId(0) && e.time() < SimTime(40);
        let mut seen = Vec::new();
        let mut dropped = 0;
        loop {
            dropped += hw.drop_while(node0_before_40);
            let Some(now) = hw.peek_time().filter(|t| t.as_ms() <= 50) else { break };
            while let Some(e) = hw.pop_at(now) {
                seen.push((e.time().as_ms(), e.node().0));
            }
        }
        // Dropped: the fixed and fed 20 and the fed 30 (the fed 10 is taken with the fixed 10,
        // at the instant the fixed one makes).
        assert_eq!(seen, [(10, 1), (10, 0), (25, 1), (40, 0), (50, 0)]);
        assert_eq!(dropped, 3);
        assert_eq!(hw.peek_time(), Some(SimTime(60)));
    }
}
