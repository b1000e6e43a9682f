//! One sched/backfill pass (`_attempt_backfill` in `backfill.c`): every pending job in
//! queue order, up to `bf_max_job_test`, gets the earliest start that the jobs before it
//! left: now (it starts) or later (it reserves whole nodes from then to its time limit).
//!
//! Its earliest start is Slurm's will-run test (`_will_run_test` in cons_common): first on
//! what is free now; else running jobs are taken away in groups by the end their time limit
//! gives (the first group up to the next multiple of 30 s after the first end plus 30 s, each
//! later group's window twice the last) until the job fits, and it starts at the end of the
//! last job taken. Estimates are as coarse as Slurm's.

use super::later::{EndingFrom, Later};
use super::node_set::NodeSet;
use super::nodes::{Ask, Nodes, Parts, TaskParts};
use super::qos::Over;
use super::space::{Space, SweepBuffers};
use super::{Candidate, EndKey, Slurm, select_all};
use sim::{ClusterView, NodeId, Plan, SimDuration, SimTime};
use std::collections::BTreeMap;

/// The first group of running jobs taken away ends within this of the next multiple of it.
const GROUP: u64 = 30_000;

/// What backfill keeps from one job's tries to the next, and from one pass to the next: the
/// sets of a one-task job ([`Fits`]), the sweep's buffers and the nodes a try may use. Made
/// anew for each job tried, they were allocations and frees for each (a tenth of a run's
/// instructions where backfill tries hundreds of jobs a pass).
#[derive(Default)]
pub(super) struct Scratch {
    fits: Option<Fits>,
    sweep: SweepBuffers,
    usable: NodeSet,
}

/// The running tasks as backfill plans with them: by the ends their limits give.
struct Ending<'a> {
    jobs: &'a BTreeMap<EndKey, Parts>,
    /// The nodes once every one has ended: a job with no room there never has any (most tries
    /// of a long queue), and is told so without a walk through the running tasks. A task
    /// started in the pass leaves it as it is (its nodes are taken from the pass's nodes and
    /// given back here).
    all_ended: &'a Nodes,
}

impl Slurm {
    pub(super) fn backfill_pass(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let now = view.now();
        let queue = self.queue(view, plan);
        let mut nodes = self.take_free(plan);
        let mut space = Space::new(now, self.config.bf_resolution, self.config.bf_window, nodes.len());
        let (mut tested, mut per_user, mut per_part) = (0, BTreeMap::new(), BTreeMap::new());
        let mut all_ended = self.all_ended(&mut nodes);
        let mut later = Later::default();
        let mut scratch = std::mem::take(&mut self.backfill_scratch);
        for candidate in queue.candidates.iter() {
            if tested >= self.config.bf_max_job_test {
                break;
            }
            if !super::waiting(view, plan, candidate) {
                continue;
            }
            let user = self.facts.get(candidate.job).map_or("", |f| f.assoc.1.as_str());
            if over(&mut per_user, user, self.config.bf_max_job_user)
                || over(&mut per_part, candidate.partition.as_str(), self.config.bf_max_job_part)
            {
                continue;
            }
            let qos = self.qos_over(candidate);
            if !candidate.tasks.iter().all(|&(t, _)| plan.quota_allows(t)) || qos == Over::Jobs {
                continue;
            }
            tested += 1;
            if qos == Over::Gpus {
                continue; // tested, but no start and no reservation: its start is unknown
            }
            let own = self.allowed.of(view, candidate);
            let (ended, later, scratch) = (&mut all_ended, &mut later, &mut scratch);
            self.plan_one(view, plan, &mut nodes, &mut space, candidate, &own, ended, later, scratch);
        }
        self.backfill_scratch = scratch;
        self.put_free(nodes, plan);
        self.put_all_ended(all_ended);
        self.keep(queue);
    }

    /// `nodes` as they will be once every running task has ended: the view kept from the last
    /// backfill pass, with the nodes changed since counted anew (a pass's starts change a few,
    /// where counting them all cost a walk over every node). Given back with
    /// [`Slurm::put_all_ended`].
    pub(super) fn all_ended(&mut self, nodes: &mut Nodes) -> Nodes {
        let mut all_ended = std::mem::take(&mut self.all_ended);
        let mut changed = nodes.take_changed();
        if all_ended.len() != nodes.len() {
            all_ended = nodes.clone();
            changed = NodeSet::full(nodes.len());
        }
        let held = |counts: &[u32], n: usize| counts.get(n).copied().unwrap_or(0);
        for n in changed.iter() {
            all_ended.set_gpus(n, nodes.gpus(n) + held(&self.held_gpus, n));
            all_ended.set_cpus(n, nodes.cpus(n) + held(&self.held_cpus, n));
        }
        all_ended
    }

    pub(super) fn put_all_ended(&mut self, all_ended: Nodes) {
        self.all_ended = all_ended;
    }

    /// Starts `candidate` now (true) or reserves its earliest start in `space`.
    #[allow(clippy::too_many_arguments)]
    fn plan_one(
        &mut self,
        view: &ClusterView<'_>,
        plan: &mut Plan<'_>,
        nodes: &mut Nodes,
        space: &mut Space,
        candidate: &Candidate,
        allowed: &NodeSet,
        all_ended: &mut Nodes,
        later: &mut Later,
        scratch: &mut Scratch,
    ) -> bool {
        let fits = Fits::of(&mut scratch.fits, nodes, all_ended, candidate);
        let ending = Ending { jobs: &self.by_end, all_ended };
        let mut ended = Ended { jobs: ending.jobs, later, fits };
        let (sweep, usable) = (&mut scratch.sweep, &mut scratch.usable);
        let earliest = self.earliest(view.now(), nodes, space, candidate, allowed, &ending, &mut ended, sweep, usable);
        if let Some(fits) = ended.fits.take() {
            scratch.fits = Some(fits);
        }
        let Some(parts) = earliest else {
            return false;
        };
        if !self.start(view, plan, nodes, candidate, parts) {
            return false;
        }
        for &(task, _) in &candidate.tasks {
            let run = self.running.get(task).expect("just started");
            later.started(run.end_key(task), &run.parts);
        }
        true
    }

    /// Tries `candidate` from now, one slot of the plan later each time, until it starts now
    /// (where, returned), reserves its start in `space`, or cannot (`None` both).
    #[allow(clippy::too_many_arguments)]
    fn earliest<'a>(
        &self,
        now: SimTime,
        nodes: &mut Nodes,
        space: &mut Space,
        candidate: &Candidate,
        allowed: &NodeSet,
        ending: &Ending<'a>,
        ended: &mut Ended<'a, '_>,
        sweep_buffers: &mut SweepBuffers,
        usable: &mut NodeSet,
    ) -> Option<TaskParts> {
        let limit = candidate.limit.unwrap_or(self.config.bf_window);
        let mut from = now;
        let mut lent = Vec::new();
        let mut sweep = space.sweep(sweep_buffers);
        // Each try starts later: at most one per slot of the plan.
        for _ in 0..1_000 {
            usable.copy_from(allowed);
            let later = sweep.restrict(from, from + limit, usable).filter(|&t| t > from);
            let tried = if !Room::any_in(ending.all_ended, candidate, usable, ended.fits.as_ref().map(|f| &f.ended)) {
                WillRun::Never
            } else if from > now && later.is_some_and(|t| ended.no_room_by(t, nodes, candidate, usable)) {
                // Every state this try plans on gives back only tasks that end by `later`.
                WillRun::Beyond
            } else {
                let (on, running, fits) = if from > now {
                    ended.at(from, nodes)
                } else {
                    (&mut *nodes, ended.jobs.range(..), ended.fits.as_ref().map(|f| &f.now))
                };
                let tried = will_run(now, from, later, on, running, candidate, usable, fits, &mut lent);
                lent.drain(..).for_each(|parts| on.take(parts));
                tried
            };
            let (start, parts) = match (tried, later) {
                (WillRun::At(start, parts), _) => (start, parts),
                (_, Some(t)) => {
                    from = t;
                    continue;
                }
                (_, None) => return None,
            };
            if start <= now {
                return Some(parts);
            }
            if let Some(t) = later.filter(|&t| start > t) {
                from = t;
                continue;
            }
            if start > now + self.config.bf_window {
                return None;
            }
            let whole: Vec<NodeId> = parts.iter().flatten().map(|&(n, _)| n).collect();
            let (begin, end) = (space.round_down(start), space.round_down(start + limit));
            let end = end.max(begin + self.config.bf_resolution);
            if space.overlaps(&whole, begin, end) {
                if start > from {
                    from = start;
                    continue;
                }
                return None;
            }
            space.reserve(&whole, begin, end);
            return None;
        }
        None
    }
}

/// One job's tries: from now on the pass's nodes, from later on `later`'s, and the nodes that
/// can take one share of it kept up to date with both.
struct Ended<'a, 'l> {
    jobs: &'a BTreeMap<EndKey, Parts>,
    later: &'l mut Later,
    fits: Option<Fits>,
}

impl<'a> Ended<'a, '_> {
    /// The nodes, the running tasks not given back and the nodes that take one share of a
    /// one-task job, as a try from `from` (later than now) plans on them.
    fn at(&mut self, from: SimTime, pass: &Nodes) -> (&mut Nodes, EndingFrom<'a>, Option<&Fitting>) {
        let fits = &mut self.fits;
        self.later.at(pass, from, self.jobs, |nodes, parts| recount(fits, nodes, parts));
        let running = self.later.rest(self.jobs);
        let nodes = self.later.nodes(pass, self.jobs);
        let fitting = self.fits.as_mut().map(|f| f.later_on(nodes));
        (nodes, running, fitting)
    }

    /// Whether a one-task job has no room even with every task that ends by `to` given back
    /// (and perhaps more: fewer tasks given never make room that more do not). A job of several
    /// tasks is always tried.
    fn no_room_by(&mut self, to: SimTime, pass: &Nodes, candidate: &Candidate, usable: &NodeSet) -> bool {
        if self.fits.is_none() {
            return false;
        }
        let fits = &mut self.fits;
        self.later.give_up_to(pass, to, self.jobs, |nodes, parts| recount(fits, nodes, parts));
        let nodes = self.later.nodes(pass, self.jobs);
        let fitting = self.fits.as_mut().map(|f| f.later_on(nodes));
        !Room::of(nodes, candidate, usable, fitting).any()
    }
}

/// `parts` changed `later`'s nodes: a one-task job's sets there follow, once made.
fn recount(fits: &mut Option<Fits>, nodes: &Nodes, parts: &Parts) {
    if let Some(Fits { ask, later, later_made: true, .. }) = fits.as_mut() {
        parts.iter().for_each(|&(node, _)| later.recount(nodes, node.index(), ask));
    }
}

/// What the will-run test found for a job.
enum WillRun {
    /// It starts then, there.
    At(SimTime, TaskParts),
    /// Not before the plan's next slot (`beyond`): the caller tries again from there, so
    /// where it would go is not worked out.
    Beyond,
    /// Not even once every running task on its nodes has ended.
    Never,
}

/// The earliest start at or after `from` of `candidate` on the `usable` nodes and where, by
/// Slurm's will-run test over the running tasks `ending` (by their limits' ends), or that it
/// starts after `beyond` or never. The tasks it takes away are given back to `nodes` and
/// listed in `given`, for the caller to take again (an undo costs what was given, where a copy
/// of the nodes at every try cost them all). `fits_now`: the nodes that can take one share of
/// a one-task job now ([`Fits`]).
#[allow(clippy::too_many_arguments)]
fn will_run<'a>(
    now: SimTime,
    from: SimTime,
    beyond: Option<SimTime>,
    nodes: &mut Nodes,
    ending: EndingFrom<'a>,
    candidate: &Candidate,
    usable: &NodeSet,
    fits_now: Option<&Fitting>,
    given: &mut Vec<&'a Parts>,
) -> WillRun {
    let on_usable = |parts: &Parts| parts.iter().any(|&(n, _)| usable.contains(n.index()));
    let mut ending = ending.map(|(&(end, ..), parts)| (end, parts)).filter(|(_, parts)| on_usable(parts)).peekable();
    // The tasks that end by a later try's start are already given back (`Ended`).
    let mut room = Room::of(nodes, candidate, usable, fits_now);
    if room.any()
        && let Some(parts) = select_all(nodes, &candidate.tasks, usable)
    {
        return WillRun::At(from, parts);
    }
    let Some(first) = ending.peek().map(|(end, _)| end.as_ms()) else { return WillRun::Never };
    let anchor = first + (GROUP - first % GROUP);
    let mut window = GROUP;
    loop {
        let mut last_end = None;
        while let Some((end, parts)) = ending.next_if(|(end, _)| end.as_ms() <= anchor.saturating_add(window)) {
            // Whatever group it fits after ends this late or later.
            if beyond.is_some_and(|b| end > b) {
                return WillRun::Beyond;
            }
            room.give(nodes, parts, usable);
            given.push(parts);
            last_end = Some(end);
        }
        window = window.saturating_mul(2);
        if let Some(end) = last_end
            && room.any()
        {
            let start = if end <= now { now + SimDuration::from_secs(1) } else { end }.max(from);
            // Room is needed for a choice to be found, so the choice could only start later.
            if beyond.is_some_and(|b| start > b) {
                return WillRun::Beyond;
            }
            if let Some(parts) = select_all(nodes, &candidate.tasks, usable) {
                return WillRun::At(start, parts);
            }
        }
        if ending.peek().is_none() {
            return WillRun::Never;
        }
    }
}

/// What a one-task job can use, now and once every running task has ended: worked out once
/// per job, so that each try of it counts its usable nodes among them a word at a time.
struct Fits {
    ask: Ask,
    /// On the pass's nodes, on `later`'s (made at the job's first try from later than now:
    /// `later_made`), and once every running task has ended.
    now: Fitting,
    later: Fitting,
    later_made: bool,
    ended: Fitting,
}

/// The nodes that can take one share of a job ([`Nodes::takes_share`]), and for a task of no
/// fixed split those whose free GPUs count towards spreading it (a free CPU and a free GPU).
#[derive(Default)]
struct Fitting {
    share: NodeSet,
    /// Read only for a task of no fixed split (`spreads`), kept otherwise for the next job.
    spread_set: NodeSet,
    spreads: bool,
}

impl Fitting {
    #[cfg(test)]
    fn of(nodes: &mut Nodes, ask: &Ask) -> Fitting {
        let mut fitting = Fitting::default();
        fitting.fill(nodes, ask);
        fitting
    }

    /// Becomes the sets of `ask` on `nodes`, in its own sets' memory.
    fn fill(&mut self, nodes: &mut Nodes, ask: &Ask) {
        nodes.fitting_into(ask, &mut self.share);
        self.spreads = ask.spread;
        if ask.spread {
            nodes.spreading_into(&mut self.spread_set);
        }
    }

    fn spread(&self) -> Option<&NodeSet> {
        self.spreads.then_some(&self.spread_set)
    }

    /// `node` changed in `nodes`.
    fn recount(&mut self, nodes: &Nodes, node: usize, ask: &Ask) {
        set_to(&mut self.share, node, nodes.takes_share(node, ask));
        if self.spreads {
            set_to(&mut self.spread_set, node, nodes.spreads_on(node));
        }
    }
}

fn set_to(set: &mut NodeSet, node: usize, member: bool) {
    if member {
        set.insert(node);
    } else {
        set.remove(node);
    }
}

impl Fits {
    /// The sets of a one-task `candidate` (`None` for a job of several tasks), made in those
    /// of `spare` (the last job's) if there are any.
    fn of(spare: &mut Option<Fits>, nodes: &mut Nodes, all_ended: &mut Nodes, candidate: &Candidate) -> Option<Fits> {
        let [(_, ask)] = candidate.tasks[..] else { return None };
        let blank = || Fits {
            ask,
            now: Fitting::default(),
            later: Fitting::default(),
            later_made: false,
            ended: Fitting::default(),
        };
        let mut fits = spare.take().unwrap_or_else(blank);
        fits.ask = ask;
        fits.now.fill(nodes, &ask);
        fits.ended.fill(all_ended, &ask);
        fits.later_made = false;
        Some(fits)
    }

    /// The sets on `later`'s nodes, made if they were not.
    fn later_on(&mut self, later: &mut Nodes) -> &Fitting {
        if !self.later_made {
            self.later.fill(later, &self.ask);
            self.later_made = true;
        }
        &self.later
    }
}

/// Whether a one-task job can have room on the usable nodes (`Nodes::has_room`), kept up to
/// date as running tasks are taken away, so that the will-run test chooses nodes only once
/// they can hold it: the nodes that fit one share of it and (for a task of no fixed split)
/// their free GPUs, counted over the nodes that change. A job of several tasks is always
/// tried.
enum Room {
    One { ask: Ask, fitting: u32, gpus: u32 },
    Several,
}

impl Room {
    /// The room on `usable` nodes of `nodes`; `fits`: what of them the job can use, when
    /// known ([`Fits`]).
    fn of(nodes: &Nodes, candidate: &Candidate, usable: &NodeSet, fits: Option<&Fitting>) -> Room {
        let [(_, ask)] = candidate.tasks[..] else { return Room::Several };
        if let Some(fits) = fits {
            let gpus = fits.spread().map_or(0, |spread| spread_gpus(nodes, usable, spread));
            return Room::One { ask, fitting: usable.count_common(&fits.share), gpus };
        }
        let mut room = Room::One { ask, fitting: 0, gpus: 0 };
        usable.iter().for_each(|n| room.count(nodes, n, true));
        room
    }

    /// Whether [`Room::of`] has room; the free GPUs of a task of no fixed split are summed
    /// only if no node takes it whole (once every task has ended, most nodes do).
    fn any_in(nodes: &Nodes, candidate: &Candidate, usable: &NodeSet, fits: Option<&Fitting>) -> bool {
        let ([(_, ask)], Some(fits)) = (&candidate.tasks[..], fits) else {
            return Room::of(nodes, candidate, usable, fits).any();
        };
        let fitting = usable.count_common(&fits.share);
        ask.has_room_in(fitting, 0)
            || fits.spread().is_some_and(|spread| ask.has_room_in(fitting, spread_gpus(nodes, usable, spread)))
    }

    fn any(&self) -> bool {
        match *self {
            Room::One { ask, fitting, gpus } => ask.has_room_in(fitting, gpus),
            Room::Several => true,
        }
    }

    /// Gives `parts` back to `nodes`, counting the usable nodes among them anew.
    fn give(&mut self, nodes: &mut Nodes, parts: &Parts, usable: &NodeSet) {
        for &part in parts {
            let node = part.0.index();
            let counted = usable.contains(node);
            if counted {
                self.count(nodes, node, false);
            }
            nodes.give(&[part]);
            if counted {
                self.count(nodes, node, true);
            }
        }
    }

    /// Adds (or takes away) what `node` offers the job.
    fn count(&mut self, nodes: &Nodes, node: usize, add: bool) {
        let Room::One { ask, fitting, gpus } = self else { return };
        let fits = u32::from(nodes.takes_share(node, ask));
        let free = if nodes.cpus(node) >= 1 && ask.spread { nodes.gpus(node) } else { 0 };
        if add {
            *fitting += fits;
            *gpus += free;
        } else {
            *fitting -= fits;
            *gpus -= free;
        }
    }
}

/// The free GPUs of the `usable` nodes among `spread` (those with a free CPU and free GPUs).
fn spread_gpus(nodes: &Nodes, usable: &NodeSet, spread: &NodeSet) -> u32 {
    usable.common(spread).map(|n| nodes.gpus(n)).sum()
}

/// Counts one more job of `key`; true when that passes `limit` (0: none).
fn over(counts: &mut BTreeMap<String, usize>, key: &str, limit: usize) -> bool {
    if limit == 0 {
        return false;
    }
    if !counts.contains_key(key) {
        counts.insert(key.to_string(), 0);
    }
    let count = counts.get_mut(key).expect("just counted");
    *count += 1;
    *count > limit
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::{JobId, TaskId};

    /// The room counted from the sets kept per job ([`Fitting`]), kept up to date as nodes
    /// change, is the room counted node by node.
    #[test]
    fn room_from_the_kept_sets_is_room_counted_node_by_node() {
        let mut next = super::super::test_draws(0x9e37_79b9_7f4a_7c15_u64);
        for _ in 0..500 {
            let count = 1 + next(140) as usize;
            let gpus = (0..count).map(|_| next(9) as u32).collect();
            let mut nodes = Nodes::new(gpus, (0..count).map(|_| next(3) as u32).collect(), vec![0; count]);
            let gpus = 1 + next(24) as u32;
            let ask = Ask::of(gpus, (next(2) == 0).then(|| 1 + next(8) as u32));
            let candidate = Candidate {
                job: JobId(0),
                tasks: smallvec::smallvec![(TaskId(0), ask)],
                partition: Default::default(),
                limit: None,
            };
            let mut usable = NodeSet::full(count);
            (0..count).filter(|_| next(4) == 0).for_each(|n| usable.remove(n));
            let mut fitting = Fitting::of(&mut nodes, &ask);
            for _ in 0..20 {
                let kept = Room::of(&nodes, &candidate, &usable, Some(&fitting));
                let counted = Room::of(&nodes, &candidate, &usable, None);
                let (Room::One { fitting: a, gpus: b, .. }, Room::One { fitting: c, gpus: d, .. }) = (&kept, &counted)
                else {
                    panic!("one task")
                };
                assert_eq!((a, b), (c, d));
                assert_eq!(Room::any_in(&nodes, &candidate, &usable, Some(&fitting)), counted.any());
                // A task ends or starts on a node.
                let node = next(count as u64) as usize;
                let part = [(NodeId(node as u32), 1 + next(4) as u32)];
                if nodes.gpus(node) >= part[0].1 && nodes.cpus(node) > 0 && next(2) == 0 {
                    nodes.take(&part);
                } else {
                    nodes.give(&part);
                }
                fitting.recount(&nodes, node, &ask);
            }
        }
    }
}
