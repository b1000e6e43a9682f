//! sched/backfill's plan of the future (its "node space map", `backfill.c`): time slots from
//! now to the end of `bf_window`, each with the nodes not yet promised to a higher-priority
//! job. A reservation takes whole nodes, from its start to its end rounded down to
//! `bf_resolution`.

use sim::{NodeId, SimDuration, SimTime};

#[derive(Debug, Clone)]
struct Slot {
    begin: SimTime,
    end: SimTime,
    free: Vec<bool>,
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
        Space { slots: vec![Slot { begin: SimTime(begin), end: SimTime(end), free: vec![true; nodes] }], resolution }
    }

    pub fn end(&self) -> SimTime {
        self.slots.last().map_or(SimTime::ZERO, |s| s.end)
    }

    pub fn round_down(&self, t: SimTime) -> SimTime {
        SimTime(t.as_ms() / self.resolution * self.resolution)
    }

    /// Clears in `allowed` the nodes promised to others at some time of `[from, to]`, and
    /// returns the end of the first slot that overlaps it, a later start to try.
    pub fn restrict(&self, from: SimTime, to: SimTime, allowed: &mut [bool]) -> Option<SimTime> {
        let mut later = None;
        for slot in self.slots.iter().filter(|s| s.end > from && s.begin <= to) {
            later.get_or_insert(slot.end);
            for (a, &free) in allowed.iter_mut().zip(&slot.free) {
                *a &= free;
            }
        }
        later.filter(|&t| t < self.end())
    }

    /// Whether some node of `nodes` is promised to another job at some time of `[from, to)`.
    pub fn overlaps(&self, nodes: &[NodeId], from: SimTime, to: SimTime) -> bool {
        self.slots.iter().filter(|s| s.end > from && s.begin < to).any(|s| nodes.iter().any(|n| !s.free[n.index()]))
    }

    /// Promises `nodes` (whole) over `[from, to)`.
    pub fn reserve(&mut self, nodes: &[NodeId], from: SimTime, to: SimTime) {
        self.split_at(from);
        self.split_at(to);
        for slot in self.slots.iter_mut().filter(|s| s.begin >= from && s.end <= to) {
            for n in nodes {
                slot.free[n.index()] = false;
            }
        }
    }

    fn split_at(&mut self, at: SimTime) {
        if let Some(i) = self.slots.iter().position(|s| s.begin < at && at < s.end) {
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
        let mut allowed = [true; 3];
        // [125, 170] ends before the reservation: every node; the first slot ends at 180.
        assert_eq!(space.restrict(s(125), s(170), &mut allowed), Some(s(180)));
        assert_eq!(allowed, [true; 3]);
        // [125, 200] reaches into it: node 1 is taken.
        space.restrict(s(125), s(200), &mut allowed);
        assert_eq!(allowed, [true, false, true]);
        assert!(space.overlaps(&[NodeId(1)], s(250), s(400)));
        assert!(!space.overlaps(&[NodeId(1)], s(300), s(400)));
        assert!(!space.overlaps(&[NodeId(0), NodeId(2)], s(120), s(720)));
    }
}
