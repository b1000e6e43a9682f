//! sched/backfill's plan of the future (its "node space map", `backfill.c`): time slots from
//! now to the end of `bf_window`, each with the nodes not yet promised to a higher-priority
//! job. A reservation takes whole nodes, from its start to its end rounded down to
//! `bf_resolution`.

use super::node_set::NodeSet;
use sim::{NodeId, SimDuration, SimTime};

#[derive(Debug, Clone)]
struct Slot {
    begin: SimTime,
    end: SimTime,
    free: NodeSet,
}

#[derive(Debug, Clone)]
pub struct Space {
    slots: Vec<Slot>,
    resolution: u64,
}

impl Space {
    /// One slot, every node free, from `now` rounded down to the resolution to `now + window`
    /// rounded down.
    pub fn new(now: SimTime, resolution: SimDuration, window: SimDuration, nodes: usize) -> Space {
        let resolution = resolution.as_ms().max(1);
        let floor = |t: u64| t / resolution * resolution;
        let (begin, end) = (floor(now.as_ms()), floor(now.as_ms().saturating_add(window.as_ms())));
        let end = end.max(begin + resolution);
        Space { slots: vec![Slot { begin: SimTime(begin), end: SimTime(end), free: NodeSet::full(nodes) }], resolution }
    }

    pub fn end(&self) -> SimTime {
        self.slots.last().map_or(SimTime::ZERO, |s| s.end)
    }

    pub fn round_down(&self, t: SimTime) -> SimTime {
        SimTime(t.as_ms() / self.resolution * self.resolution)
    }

    /// Clears in `allowed` the nodes promised to others at some time of `[from, to]`, and
    /// returns the end of the first slot that overlaps it, a later start to try.
    pub fn restrict(&self, from: SimTime, to: SimTime, allowed: &mut NodeSet) -> Option<SimTime> {
        let overlapping = self.overlapping(from, |s| s.begin <= to);
        let later = overlapping.clone().next().map(|s| s.end);
        overlapping.for_each(|slot| allowed.intersect(&slot.free));
        later.filter(|&t| t < self.end())
    }

    /// Whether some node of `nodes` is promised to another job at some time of `[from, to)`.
    pub fn overlaps(&self, nodes: &[NodeId], from: SimTime, to: SimTime) -> bool {
        self.overlapping(from, |s| s.begin < to).any(|s| nodes.iter().any(|n| !s.free.contains(n.index())))
    }

    /// The slots that end after `from` and begin as `before` says, in order: the slots tile
    /// the plan in time order, so the first is found by bisection.
    fn overlapping(
        &self,
        from: SimTime,
        before: impl Fn(&Slot) -> bool + Clone,
    ) -> impl Iterator<Item = &Slot> + Clone {
        let first = self.slots.partition_point(|s| s.end <= from);
        self.slots[first..].iter().take_while(move |s| before(s))
    }

    /// Promises `nodes` (whole) over `[from, to)`.
    pub fn reserve(&mut self, nodes: &[NodeId], from: SimTime, to: SimTime) {
        self.split_at(from);
        self.split_at(to);
        let first = self.slots.partition_point(|s| s.begin < from);
        for slot in self.slots[first..].iter_mut().take_while(|s| s.end <= to) {
            nodes.iter().for_each(|n| slot.free.remove(n.index()));
        }
    }

    fn split_at(&mut self, at: SimTime) {
        let i = self.slots.partition_point(|s| s.end <= at);
        if self.slots.get(i).is_some_and(|s| s.begin < at && at < s.end) {
            let mut tail = self.slots[i].clone();
            tail.begin = at;
            self.slots[i].end = at;
            self.slots.insert(i + 1, tail);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(secs: u64) -> SimTime {
        SimTime(secs * 1000)
    }

    #[test]
    fn a_reservation_takes_whole_nodes_over_its_slots_only() {
        let mut space = Space::new(s(125), SimDuration::from_secs(60), SimDuration::from_secs(600), 3);
        assert_eq!((space.slots[0].begin, space.end()), (s(120), s(720)));
        space.reserve(&[NodeId(1)], s(180), s(300));
        let mut allowed = NodeSet::full(3);
        // [125, 170] ends before the reservation: every node; the first slot ends at 180.
        assert_eq!(space.restrict(s(125), s(170), &mut allowed), Some(s(180)));
        assert_eq!(allowed, NodeSet::full(3));
        // [125, 200] reaches into it: node 1 is taken.
        space.restrict(s(125), s(200), &mut allowed);
        assert_eq!(allowed.iter().collect::<Vec<_>>(), [0, 2]);
        assert!(space.overlaps(&[NodeId(1)], s(250), s(400)));
        assert!(!space.overlaps(&[NodeId(1)], s(300), s(400)));
        assert!(!space.overlaps(&[NodeId(0), NodeId(2)], s(120), s(720)));
    }
}
