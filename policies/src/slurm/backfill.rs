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
        let mut allowed = super::Allowed::default();
        let mut ending = self.ending();
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
            if !candidate.tasks.iter().all(|&(t, _)| plan.quota_allows(t)) {
                continue;
            }
            tested += 1;
            let own = allowed.of(view, candidate);
            if self.plan_one(view, plan, &mut nodes, &mut space, candidate, &own, &ending) {
                ending = self.ending();
            }
        }
    }

    /// The running tasks by the end their time limits give, with where they run.
    fn ending(&self) -> Vec<(SimTime, Parts)> {
        let mut ending: Vec<(SimTime, Parts)> =
            self.running.values().map(|r| (r.expected_end, r.parts.clone())).collect();
        ending.sort_by_key(|(end, parts)| (*end, parts.first().map(|p| p.0)));
        ending
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
        allowed: &[bool],
        ending: &[(SimTime, Parts)],
    ) -> bool {
        let now = view.now();
        let limit = candidate.limit.unwrap_or(self.config.bf_window);
        let mut from = now;
        // Each try starts later: at most one per slot of the plan.
        for _ in 0..1_000 {
            let mut usable = allowed.to_vec();
            let later = space.restrict(from, from + limit, &mut usable);
            let Some((start, parts)) = will_run(now, from, nodes, ending, candidate, &usable) else {
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
/// even once every running task there has ended.
fn will_run(
    now: SimTime,
    from: SimTime,
    nodes: &Nodes,
    ending: &[(SimTime, Parts)],
    candidate: &Candidate,
    usable: &[bool],
) -> Option<(SimTime, Vec<Parts>)> {
    let on_usable = |parts: &Parts| parts.iter().any(|&(n, _)| usable[n.index()]);
    let mut ending = ending.iter().filter(|(_, parts)| on_usable(parts)).peekable();
    // A later try sees the jobs that end by then gone.
    let mut freed = nodes.clone();
    while let Some((_, parts)) = ending.next_if(|(end, _)| from > now && *end <= from) {
        freed.give(parts);
    }
    if let Some(parts) = select_all(&freed, &candidate.tasks, usable) {
        return Some((from, parts));
    }
    let first = ending.peek()?.0.as_ms();
    let anchor = first + (GROUP - first % GROUP);
    let mut window = GROUP;
    loop {
        let mut last_end = None;
        while let Some((end, parts)) = ending.next_if(|(end, _)| end.as_ms() <= anchor.saturating_add(window)) {
            freed.give(parts);
            last_end = Some(*end);
        }
        window = window.saturating_mul(2);
        if let Some(end) = last_end
            && let Some(parts) = select_all(&freed, &candidate.tasks, usable)
        {
            let start = if end <= now { now + SimDuration::from_secs(1) } else { end };
            return Some((start.max(from), parts));
        }
        ending.peek()?;
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
