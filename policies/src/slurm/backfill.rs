//! One sched/backfill pass (`_attempt_backfill` in `backfill.c`): every pending job in
//! queue order, up to `bf_max_job_test`, gets the earliest start that the jobs before it
//! left: now (it starts) or later (it reserves whole nodes from then to its time limit).
//!
//! Its earliest start is Slurm's will-run test (`_will_run_test` in cons_common): first on
//! what is free now; else running jobs are taken away in groups by the end their time limit
//! gives (the first group up to the next multiple of 30 s after the first end plus 30 s, each
//! later group's window twice the last) until the job fits, and it starts at the end of the
//! last job taken. Estimates are as coarse as Slurm's.

use super::nodes::{Nodes, Parts};
use super::space::Space;
use super::{Candidate, Slurm, select_all};
use sim::{ClusterView, NodeId, Plan, SimDuration, SimTime};
use std::collections::BTreeMap;

/// The first group of running jobs taken away ends within this of the next multiple of it.
const GROUP: u64 = 30_000;

impl Slurm {
    pub(super) fn backfill_pass(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        let now = view.now();
        let queue = self.queue(view, plan);
        let mut nodes = self.nodes(view, plan);
        let mut space = Space::new(now, self.config.bf_resolution, self.config.bf_window, nodes.gpus.len());
        let (mut tested, mut per_user, mut per_part) = (0, BTreeMap::new(), BTreeMap::new());
        for candidate in &queue {
            if tested >= self.config.bf_max_job_test {
                break;
            }
            let user = self.facts.get(&candidate.job).map(|f| f.assoc.1.clone()).unwrap_or_default();
            if over(&mut per_user, user, self.config.bf_max_job_user)
                || over(&mut per_part, candidate.partition.clone(), self.config.bf_max_job_part)
            {
                continue;
            }
            if !candidate.tasks.iter().all(|&(t, _)| plan.quota_allows(t)) {
                continue;
            }
            tested += 1;
            self.plan_one(view, plan, &mut nodes, &mut space, candidate);
        }
    }

    /// Starts `candidate` now or reserves its earliest start in `space`.
    fn plan_one(
        &mut self,
        view: &ClusterView<'_>,
        plan: &mut Plan<'_>,
        nodes: &mut Nodes,
        space: &mut Space,
        candidate: &Candidate,
    ) {
        let now = view.now();
        let limit = candidate.limit.unwrap_or(self.config.bf_window);
        let allowed = Self::allowed(view, candidate);
        let mut from = now;
        // Each try starts later: at most one per slot of the plan.
        for _ in 0..1_000 {
            let mut usable = allowed.clone();
            let later = space.restrict(from, from + limit, &mut usable);
            let Some((start, parts)) = self.will_run(now, from, nodes, candidate, &usable) else {
                match later {
                    Some(t) if t > from => {
                        from = t;
                        continue;
                    }
                    _ => return,
                }
            };
            if start <= now {
                self.start(view, plan, nodes, candidate, parts);
                return;
            }
            if let Some(t) = later.filter(|&t| start > t && t > from) {
                from = t;
                continue;
            }
            if start > now + self.config.bf_window {
                return;
            }
            let whole: Vec<NodeId> = parts.iter().flatten().map(|&(n, _)| n).collect();
            let (begin, end) = (space.round_down(start), space.round_down(start + limit));
            let end = end.max(begin + self.config.bf_resolution);
            if space.overlaps(&whole, begin, end) {
                if start > from {
                    from = start;
                    continue;
                }
                return;
            }
            space.reserve(&whole, begin, end);
            return;
        }
    }

    /// The earliest start at or after `from` of `candidate` on the `usable` nodes and where,
    /// by Slurm's will-run test; `None`: not even once every running job there has ended.
    fn will_run(
        &self,
        now: SimTime,
        from: SimTime,
        nodes: &Nodes,
        candidate: &Candidate,
        usable: &[bool],
    ) -> Option<(SimTime, Vec<Parts>)> {
        let mut ending: Vec<(SimTime, &[(NodeId, u32)])> = self
            .running
            .values()
            .filter(|r| r.parts.iter().any(|&(n, _)| usable[n.index()]))
            .map(|r| (r.expected_end, r.parts.as_slice()))
            .collect();
        ending.sort_by_key(|&(end, parts)| (end, parts.first().map(|p| p.0)));
        // A later try sees the jobs that end by then gone.
        let mut freed = nodes.clone();
        let mut next = 0;
        while from > now && next < ending.len() && ending[next].0 <= from {
            freed.give(ending[next].1);
            next += 1;
        }
        if let Some(parts) = select_all(&freed, &candidate.tasks, usable) {
            return Some((from, parts));
        }
        let first = ending.get(next)?.0.as_ms();
        let anchor = first + (GROUP - first % GROUP);
        let mut window = GROUP;
        while next < ending.len() {
            let mut last_end = None;
            while next < ending.len() && ending[next].0.as_ms() <= anchor.saturating_add(window) {
                freed.give(ending[next].1);
                last_end = Some(ending[next].0);
                next += 1;
            }
            window = window.saturating_mul(2);
            let Some(end) = last_end else { continue };
            if let Some(parts) = select_all(&freed, &candidate.tasks, usable) {
                let start = if end <= now { now + SimDuration::from_secs(1) } else { end };
                return Some((start.max(from), parts));
            }
        }
        None
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
