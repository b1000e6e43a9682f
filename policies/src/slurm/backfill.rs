//! One sched/backfill pass (`_attempt_backfill` in `backfill.c`): every pending job in
//! queue order, up to `bf_max_job_test`, gets the earliest start that the jobs before it
//! left: now (it starts) or later (it reserves whole nodes from then to its time limit).
//!
//! Its earliest start is Slurm's will-run test (`_will_run_test` in cons_common): first on
//! what is free now; else running jobs are taken away in groups by the end their time limit
//! gives (the first group up to the next multiple of 30 s after the first end plus 30 s, each
//! later group's window twice the last) until the job fits, and it starts at the end of the
//! last job taken. Estimates are as coarse as Slurm's.

use super::node_set::NodeSet;
use super::nodes::{Ask, Nodes, Parts};
use super::qos::Over;
use super::space::Space;
use super::{Candidate, Slurm, select_all};
use sim::{ClusterView, NodeId, Plan, SimDuration, SimTime};
use std::collections::BTreeMap;

/// The first group of running jobs taken away ends within this of the next multiple of it.
const GROUP: u64 = 30_000;

/// The running tasks as backfill plans with them: by the ends their limits give.
struct Ending {
    jobs: Vec<(SimTime, Parts)>,
    /// The nodes once every one has ended: a job with no room there never has any (most tries
    /// of a long queue), and is told so without a walk through the running tasks.
    all_ended: Nodes,
}

impl Slurm {
    pub(super) fn backfill_pass(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let now = view.now();
        let queue = self.queue(view, plan);
        let mut nodes = self.nodes(view, plan);
        let mut space = Space::new(now, self.config.bf_resolution, self.config.bf_window, nodes.gpus.len());
        let (mut tested, mut per_user, mut per_part) = (0, BTreeMap::new(), BTreeMap::new());
        let mut allowed = super::Allowed::default();
        let mut ending = self.ending(&nodes);
        for candidate in &queue {
            if tested >= self.config.bf_max_job_test {
                break;
            }
            let user = self.facts.get(&candidate.job).map(|f| f.assoc.1.clone()).unwrap_or_default();
            if over(&mut per_user, user, self.config.bf_max_job_user)
                || over(&mut per_part, candidate.partition.to_string(), self.config.bf_max_job_part)
            {
                continue;
            }
            let over = self.qos_over(candidate);
            if !candidate.tasks.iter().all(|&(t, _)| plan.quota_allows(t)) || over == Over::Jobs {
                continue;
            }
            tested += 1;
            if over == Over::Gpus {
                continue; // tested, but no start and no reservation: its start is unknown
            }
            let own = allowed.of(view, candidate);
            if self.plan_one(view, plan, &mut nodes, &mut space, candidate, &own, &ending) {
                ending = self.ending(&nodes);
            }
        }
    }

    /// The running tasks by the end their time limits give, with where they run, and `nodes`
    /// as they will be once all have ended.
    fn ending(&self, nodes: &Nodes) -> Ending {
        let mut jobs: Vec<(SimTime, Parts)> =
            self.running.values().map(|r| (r.expected_end, r.parts.clone())).collect();
        jobs.sort_by_key(|(end, parts)| (*end, parts.first().map(|p| p.0)));
        let mut all_ended = nodes.clone();
        jobs.iter().for_each(|(_, parts)| all_ended.give(parts));
        Ending { jobs, all_ended }
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
        ending: &Ending,
    ) -> bool {
        let now = view.now();
        let limit = candidate.limit.unwrap_or(self.config.bf_window);
        let mut from = now;
        let (mut usable, mut given) = (allowed.clone(), Vec::new());
        // Each try starts later: at most one per slot of the plan.
        for _ in 0..1_000 {
            usable.copy_from(allowed);
            let later = space.restrict(from, from + limit, &mut usable);
            let tried = if Room::of(&ending.all_ended, candidate, &usable).any() {
                will_run(now, from, nodes, &ending.jobs, candidate, &usable, &mut given)
            } else {
                None
            };
            given.drain(..).for_each(|i| nodes.take(&ending.jobs[i].1));
            let Some((start, parts)) = tried else {
                match later {
                    Some(t) if t > from => {
                        from = t;
                        continue;
                    }
                    _ => return false,
                }
            };
            if start <= now {
                return self.start(view, plan, nodes, candidate, parts);
            }
            if let Some(t) = later.filter(|&t| start > t && t > from) {
                from = t;
                continue;
            }
            if start > now + self.config.bf_window {
                return false;
            }
            let whole: Vec<NodeId> = parts.iter().flatten().map(|&(n, _)| n).collect();
            let (begin, end) = (space.round_down(start), space.round_down(start + limit));
            let end = end.max(begin + self.config.bf_resolution);
            if space.overlaps(&whole, begin, end) {
                if start > from {
                    from = start;
                    continue;
                }
                return false;
            }
            space.reserve(&whole, begin, end);
            return false;
        }
        false
    }
}

/// The earliest start at or after `from` of `candidate` on the `usable` nodes and where, by
/// Slurm's will-run test over the running tasks `ending` (by their limits' ends); `None`: not
/// even once every running task there has ended. The tasks it takes away are given back to
/// `nodes` and their places in `ending` listed in `given`, for the caller to take again (an
/// undo costs what was given, where a copy of the nodes at every try cost them all).
fn will_run(
    now: SimTime,
    from: SimTime,
    nodes: &mut Nodes,
    ending: &[(SimTime, Parts)],
    candidate: &Candidate,
    usable: &NodeSet,
    given: &mut Vec<usize>,
) -> Option<(SimTime, Vec<Parts>)> {
    let on_usable = |parts: &Parts| parts.iter().any(|&(n, _)| usable.contains(n.index()));
    let mut ending = ending.iter().enumerate().filter(|(_, (_, parts))| on_usable(parts)).peekable();
    // A later try sees the jobs that end by then gone.
    while let Some((i, (_, parts))) = ending.next_if(|(_, (end, _))| from > now && *end <= from) {
        nodes.give(parts);
        given.push(i);
    }
    let mut room = Room::of(nodes, candidate, usable);
    if room.any()
        && let Some(parts) = select_all(nodes, &candidate.tasks, usable)
    {
        return Some((from, parts));
    }
    let first = ending.peek()?.1.0.as_ms();
    let anchor = first + (GROUP - first % GROUP);
    let mut window = GROUP;
    loop {
        let mut last_end = None;
        while let Some((i, (end, parts))) = ending.next_if(|(_, (end, _))| end.as_ms() <= anchor.saturating_add(window))
        {
            room.give(nodes, parts, usable);
            given.push(i);
            last_end = Some(*end);
        }
        window = window.saturating_mul(2);
        if let Some(end) = last_end
            && room.any()
            && let Some(parts) = select_all(nodes, &candidate.tasks, usable)
        {
            let start = if end <= now { now + SimDuration::from_secs(1) } else { end };
            return Some((start.max(from), parts));
        }
        ending.peek()?;
    }
}

/// Whether a one-task job can have room on the usable nodes (`Nodes::has_room`), kept up to
/// date as running tasks are taken away, so that the will-run test chooses nodes only once
/// they can hold it: the nodes that fit one share of it and their free GPUs, counted over the
/// nodes that change. A job of several tasks is always tried.
enum Room {
    One { ask: Ask, fitting: u32, gpus: u32 },
    Several,
}

impl Room {
    fn of(nodes: &Nodes, candidate: &Candidate, usable: &NodeSet) -> Room {
        let [(_, ask)] = candidate.tasks[..] else { return Room::Several };
        let mut room = Room::One { ask, fitting: 0, gpus: 0 };
        usable.iter().for_each(|n| room.count(nodes, n, true));
        room
    }

    fn any(&self) -> bool {
        match *self {
            Room::One { ask, fitting, gpus } => fitting >= ask.nodes || (ask.spread && gpus >= ask.per_node),
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
        let (fits, free) = if nodes.cpus[node] >= 1 {
            (u32::from(nodes.gpus[node] >= ask.per_node), nodes.gpus[node])
        } else {
            (0, 0)
        };
        if add {
            *fitting += fits;
            *gpus += free;
        } else {
            *fitting -= fits;
            *gpus -= free;
        }
    }
}

/// Counts one more job of `key`; true when that passes `limit` (0: none).
fn over(counts: &mut BTreeMap<String, usize>, key: String, limit: usize) -> bool {
    if limit == 0 {
        return false;
    }
    let count = counts.entry(key).or_default();
    *count += 1;
    *count > limit
}
