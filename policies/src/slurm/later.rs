//! The nodes as backfill's tries from later than now plan on them: the pass's nodes with every
//! running task that ends by the try's start given back.
//!
//! The jobs of a long queue try slot after slot of the plan, each later than the last, and
//! each job gave back every task that ends before its last try, then took them all again: a
//! quarter of a slurm run on a saturated cluster. The tries from now plan on the pass's own
//! nodes; these nodes are kept from one job's tries to the next's, so the tasks given back
//! change only as far as two jobs' tries differ.

use super::EndKey;
use super::nodes::{Nodes, Parts};
use sim::SimTime;
use std::collections::BTreeMap;
use std::collections::btree_map;
use std::ops::Bound;

/// The running tasks from some place in end order on.
pub type EndingFrom<'a> = btree_map::Range<'a, EndKey, Parts>;

/// The pass's nodes with the running tasks up to `last` in end order given back; the next
/// task's end is kept (`None`: none is left), as most tries give back nothing and a lookup
/// of the next task by `last` was a quarter of a long queue's pass. The nodes are copied from
/// the pass's at the first try from later than now: most passes of a cluster with room have
/// none.
#[derive(Default)]
pub struct Later {
    nodes: Option<Nodes>,
    last: Option<EndKey>,
    next_end: Option<SimTime>,
}

impl Later {
    /// The nodes as the last move left them, copied from the pass's `pass` (nothing given
    /// back) if there was none.
    pub fn nodes(&mut self, pass: &Nodes, jobs: &BTreeMap<EndKey, Parts>) -> &mut Nodes {
        if self.nodes.is_none() {
            (self.last, self.next_end) = (None, jobs.keys().next().map(|k| k.0));
        }
        self.nodes.get_or_insert_with(|| pass.clone())
    }

    /// The running tasks not given back, in end order.
    pub fn rest<'a>(&self, jobs: &'a BTreeMap<EndKey, Parts>) -> EndingFrom<'a> {
        match self.last {
            Some(last) => jobs.range((Bound::Excluded(last), Bound::Unbounded)),
            None => jobs.range(..),
        }
    }

    /// Gives back every task that ends by `to` (on nodes copied from `pass` if need be);
    /// `changed` hears of each.
    pub fn give_up_to(
        &mut self,
        pass: &Nodes,
        to: SimTime,
        jobs: &BTreeMap<EndKey, Parts>,
        mut changed: impl FnMut(&Nodes, &Parts),
    ) {
        self.nodes(pass, jobs);
        if self.next_end.is_none_or(|end| end > to) {
            return;
        }
        let rest = self.rest(jobs);
        let nodes = self.nodes.as_mut().expect("begun");
        self.next_end = None;
        for (&key, parts) in rest {
            if key.0 > to {
                self.next_end = Some(key.0);
                break;
            }
            nodes.give(parts);
            changed(nodes, parts);
            self.last = Some(key);
        }
    }

    /// Exactly the tasks that end by `to` given back: those that end later taken again, then
    /// those that end by then given; `changed` hears of each.
    pub fn at(
        &mut self,
        pass: &Nodes,
        to: SimTime,
        jobs: &BTreeMap<EndKey, Parts>,
        mut changed: impl FnMut(&Nodes, &Parts),
    ) {
        self.nodes(pass, jobs);
        let nodes = self.nodes.as_mut().expect("begun");
        if let Some(last) = self.last {
            self.last = None;
            for (&key, parts) in jobs.range(..=last).rev() {
                if key.0 <= to {
                    self.last = Some(key);
                    break;
                }
                nodes.take(parts);
                changed(nodes, parts);
                self.next_end = Some(key.0);
            }
        }
        self.give_up_to(pass, to, jobs, changed);
    }

    /// A task the pass started now, on `parts`, its place `key`: it holds them here too,
    /// unless it ends by the tasks given back (then it is one of them). Nodes not yet copied
    /// will be copied with it.
    pub fn started(&mut self, key: EndKey, parts: &Parts) {
        let Some(nodes) = self.nodes.as_mut() else { return };
        if self.last.is_none_or(|last| key > last) {
            nodes.take(parts);
            self.next_end = Some(self.next_end.map_or(key.0, |end| end.min(key.0)));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{NodeId, TaskId};

    fn s(secs: u64) -> SimTime {
        SimTime(secs * 1000)
    }

    /// Whatever the order of moves, the nodes are the pass's nodes with exactly the tasks that
    /// end by the last `at` given back; a task started meanwhile is counted as running until
    /// its end.
    #[test]
    fn the_nodes_are_the_passes_with_the_tasks_ended_by_then_given_back() {
        let mut next = super::super::test_draws(0x2545_f491_4f6c_dd1d_u64);
        for _ in 0..200 {
            let count = 1 + next(20) as usize;
            let mut jobs: BTreeMap<EndKey, Parts> = BTreeMap::new();
            let mut free = vec![8u32; count];
            for t in 0..next(30) {
                let node = next(count as u64) as usize;
                let gpus = 1 + next(2) as u32;
                if free[node] >= gpus {
                    free[node] -= gpus;
                    jobs.insert(
                        (s(1 + next(50)), Some(NodeId(node as u32)), TaskId(t as u32)),
                        smallvec::smallvec![(NodeId(node as u32), gpus)],
                    );
                }
            }
            let mut pass = Nodes::new(free.clone(), vec![4; count], vec![0; count]);
            let mut later = Later::default();
            for step in 0..20 {
                let to = s(next(60));
                match next(5) {
                    0 => later.give_up_to(&pass, to, &jobs, |_, _| ()),
                    1 => {} // not copied yet, or kept as it is
                    _ => {
                        later.at(&pass, to, &jobs, |_, _| ());
                        let mut expected = pass.clone();
                        jobs.iter().filter(|(k, _)| k.0 <= to).for_each(|(_, parts)| expected.give(parts));
                        assert_eq!(later.nodes(&pass, &jobs), &expected, "step {step}, to {to:?}");
                    }
                }
                // A task starts now on a node with room, ending some time later.
                let node = next(count as u64) as usize;
                if pass.gpus(node) >= 1 && pass.cpus(node) >= 1 {
                    let (key, parts) = (
                        (s(1 + next(50)), Some(NodeId(node as u32)), TaskId(100 + step)),
                        smallvec::smallvec![(NodeId(node as u32), 1)],
                    );
                    pass.take(&parts);
                    later.started(key, &parts);
                    jobs.insert(key, parts);
                }
            }
        }
    }
}
