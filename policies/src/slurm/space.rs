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

    /// One job's tries over the plan, each later than the last ([`Sweep`]), in `buffers`.
    pub fn sweep<'a>(&'a self, buffers: &'a mut SweepBuffers) -> Sweep<'a> {
        let words = self.slots.first().map_or(0, |s| s.free.words().len());
        buffers.front.clear();
        buffers.back.fill(words * 64);
        Sweep { slots: &self.slots, end: self.end(), first: 0, mid: 0, last: 0, base: 0, buffers, words }
    }

    /// Whether some node of `nodes` is promised to another job at some time of `[from, to)`:
    /// the slots tile the plan in time order, so the first that ends after `from` is found by
    /// bisection.
    pub fn overlaps(&self, nodes: &[NodeId], from: SimTime, to: SimTime) -> bool {
        let first = self.slots.partition_point(|s| s.end <= from);
        self.slots[first..]
            .iter()
            .take_while(|s| s.begin < to)
            .any(|s| nodes.iter().any(|n| !s.free.contains(n.index())))
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

/// The nodes free over a job's tries, each from a later time than the last. A try from `from`
/// to `to` needs the nodes free in every slot that overlaps it; as the tries move later, the
/// slots they overlap only move forward, so their intersection is kept as a queue of two
/// stacks: the older slots' suffix intersections and one running intersection of the newer.
/// Each slot is intersected a few times a job, where intersecting every overlapped slot at
/// every try cost slots × tries (a long queue holds hundreds of reservations, each a slot
/// edge, and a job may try once per slot).
pub struct Sweep<'a> {
    slots: &'a [Slot],
    /// The plan's end: no later start is offered from there.
    end: SimTime,
    /// The slots overlapped by the last try: `first..last`.
    first: usize,
    last: usize,
    /// `base..mid`: slots whose suffix intersections `buffers.front` holds.
    base: usize,
    mid: usize,
    buffers: &'a mut SweepBuffers,
    words: usize,
}

/// A [`Sweep`]'s memory, kept from one job's sweep to the next (backfill sweeps for each job
/// it tries, and memory of a sweep's own was allocations and frees for each).
#[derive(Debug, Default)]
pub struct SweepBuffers {
    /// `base..mid`: slots whose suffix intersections `front` holds, `words` words each, the
    /// one from slot `i` to `mid` at row `i - base`.
    front: Vec<u64>,
    /// The intersection of slots `mid..last`.
    back: NodeSet,
    /// Where `front` is worked out.
    suffix: NodeSet,
}

impl Sweep<'_> {
    /// Clears in `allowed` the nodes promised to others at some time of `[from, to]`, and
    /// returns the end of the first slot that overlaps it, a later start to try. `from` and
    /// `to` are never earlier than the last try's.
    pub fn restrict(&mut self, from: SimTime, to: SimTime, allowed: &mut NodeSet) -> Option<SimTime> {
        let mut first = self.first;
        while self.slots.get(first).is_some_and(|s| s.end <= from) {
            first += 1;
        }
        if first >= self.last {
            self.restart_at(first);
        }
        while let Some(slot) = self.slots.get(self.last).filter(|s| s.begin <= to) {
            self.buffers.back.intersect(&slot.free);
            self.last += 1;
        }
        self.first = first;
        if first == self.last {
            return None;
        }
        if first >= self.mid {
            self.turn_over();
        }
        let row = (first - self.base) * self.words;
        allowed.intersect_words(&self.buffers.front[row..row + self.words]);
        if self.mid < self.last {
            allowed.intersect(&self.buffers.back);
        }
        let later = self.slots[first].end;
        (later < self.end).then_some(later)
    }

    /// Nothing overlapped yet from slot `at`.
    fn restart_at(&mut self, at: usize) {
        (self.first, self.last, self.base, self.mid) = (at, at, at, at);
        self.buffers.back.fill(self.words * 64);
        self.buffers.front.clear();
    }

    /// Moves every slot of `first..last` to the front stack, as suffix intersections.
    fn turn_over(&mut self) {
        let (first, last, words) = (self.first, self.last, self.words);
        let SweepBuffers { front, back, suffix } = &mut *self.buffers;
        front.clear();
        front.resize((last - first) * words, u64::MAX);
        suffix.fill(words * 64);
        for i in (first..last).rev() {
            suffix.intersect(&self.slots[i].free);
            front[(i - first) * words..(i - first + 1) * words].copy_from_slice(suffix.words());
        }
        (self.base, self.mid) = (first, last);
        back.fill(words * 64);
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
        assert_eq!(space.sweep(&mut SweepBuffers::default()).restrict(s(125), s(170), &mut allowed), Some(s(180)));
        assert_eq!(allowed, NodeSet::full(3));
        // [125, 200] reaches into it: node 1 is taken.
        space.sweep(&mut SweepBuffers::default()).restrict(s(125), s(200), &mut allowed);
        assert_eq!(allowed.iter().collect::<Vec<_>>(), [0, 2]);
        assert!(space.overlaps(&[NodeId(1)], s(250), s(400)));
        assert!(!space.overlaps(&[NodeId(1)], s(300), s(400)));
        assert!(!space.overlaps(&[NodeId(0), NodeId(2)], s(120), s(720)));
    }

    /// What a try from `from` to `to` may use: every slot that overlaps it, intersected one by
    /// one.
    fn by_every_slot(space: &Space, from: SimTime, to: SimTime, allowed: &mut NodeSet) -> Option<SimTime> {
        let overlapping: Vec<&Slot> = space.slots.iter().filter(|s| s.end > from && s.begin <= to).collect();
        overlapping.iter().for_each(|s| allowed.intersect(&s.free));
        overlapping.first().map(|s| s.end).filter(|&t| t < space.end())
    }

    #[test]
    fn a_sweep_of_later_and_later_tries_sees_what_every_slot_says() {
        let mut next = super::super::test_draws(0x9e37_79b9_7f4a_7c15_u64);
        // One set of buffers for every plan, as backfill keeps them: what one sweep left in
        // them (of another count of nodes, too) must not show in the next.
        let mut buffers = SweepBuffers::default();
        for _ in 0..200 {
            let nodes = 1 + next(150) as usize;
            let mut space = Space::new(s(0), SimDuration::from_secs(60), SimDuration::from_secs(6000), nodes);
            for _ in 0..next(40) {
                let begin = next(100) * 60;
                let taken: Vec<NodeId> = (0..1 + next(4)).map(|_| NodeId(next(nodes as u64) as u32)).collect();
                space.reserve(&taken, s(begin), s(begin + 60 * (1 + next(20))));
            }
            let limit = 60 * next(30);
            let (mut sweep, mut from) = (space.sweep(&mut buffers), 0);
            while from < 6100 {
                let (mut swept, mut each) = (NodeSet::full(nodes), NodeSet::full(nodes));
                let later = sweep.restrict(s(from), s(from + limit), &mut swept);
                assert_eq!(later, by_every_slot(&space, s(from), s(from + limit), &mut each), "from {from}");
                assert_eq!(swept, each, "from {from} to {}", from + limit);
                from += next(400);
            }
        }
    }
}
