//! A job's task DAG: validation at submission (references, a cycle printed as its path) and
//! the longest-path arithmetic behind critical paths and slack.
//!
//! Edges run upstream -> downstream. A dependency's *lag* is how long after its upstream
//! starts the downstream may start: the upstream's whole duration for `success`, `any` and
//! `failure`, its progress point for `data` and `checkpoint` edges.

use crate::workload::{DepKind, JobSpec, WorkloadError};
use petgraph::algo::toposort;
use petgraph::graph::{DiGraph, NodeIndex};

/// Refuses a job whose dependencies name no task, name the task itself, cannot be met by
/// construction, or form a cycle (printed as its path of task names).
pub fn check_job(job: &JobSpec) -> Result<(), WorkloadError> {
    let err = |message: String| Err(WorkloadError(format!("job `{}`: {message}", job.name)));
    for task in &job.tasks {
        let name = &task.name;
        for dep in &task.deps {
            let Some(upstream) = job.tasks.get(dep.upstream) else {
                return err(format!("task `{name}` depends on task {} of {}", dep.upstream, job.tasks.len()));
            };
            match dep.kind {
                DepKind::Data(work) if work > upstream.work || work.as_ms() == 0 => {
                    return err(format!(
                        "task `{name}` waits for `{}` to reach {} s of work, but it has {} s in all; a data \
                         point must be within (0, work]",
                        upstream.name,
                        work.as_secs_f64(),
                        upstream.work.as_secs_f64()
                    ));
                }
                DepKind::Checkpoint(0) => {
                    return err(format!(
                        "task `{name}` waits for checkpoint 0 of `{}`; checkpoints count from 1",
                        upstream.name
                    ));
                }
                _ => {}
            }
        }
        if let (Some(from), Some(to)) = (task.options().window.not_before, task.options().window.not_after)
            && from > to
        {
            return err(format!("task `{name}`: its window closes ({to}) before it opens ({from})"));
        }
    }
    if let Some(cycle) = find_cycle(job) {
        let path: Vec<&str> = cycle.iter().map(|&t| job.tasks[t].name.as_str()).collect();
        return err(format!("its tasks' dependencies form a cycle: {}", path.join(" -> ")));
    }
    Ok(())
}

fn graph(job: &JobSpec) -> DiGraph<usize, ()> {
    let mut g = DiGraph::with_capacity(job.tasks.len(), 0);
    let nodes: Vec<NodeIndex> = (0..job.tasks.len()).map(|t| g.add_node(t)).collect();
    for (t, task) in job.tasks.iter().enumerate() {
        for dep in &task.deps {
            g.add_edge(nodes[dep.upstream], nodes[t], ());
        }
    }
    g
}

/// A cycle as task indices, first task repeated at the end (`a -> b -> a`); `None` if acyclic.
pub(crate) fn find_cycle(job: &JobSpec) -> Option<Vec<usize>> {
    if job.tasks.iter().all(|t| t.deps.is_empty()) {
        return None; // no edges, no cycle: most jobs, checked without building a graph
    }
    let g = graph(job);
    let start = toposort(&g, None).err()?.node_id();
    // Depth-first from a node on a cycle, back to it, following downstream edges; the lowest
    // index first at every step, so the path printed is always the same.
    let mut path = vec![start];
    let mut visited = vec![false; g.node_count()];
    fn walk(
        g: &DiGraph<usize, ()>,
        at: NodeIndex,
        start: NodeIndex,
        path: &mut Vec<NodeIndex>,
        seen: &mut [bool],
    ) -> bool {
        let mut next: Vec<NodeIndex> = g.neighbors(at).collect();
        next.sort_unstable();
        for n in next {
            if n == start {
                path.push(n);
                return true;
            }
            if !seen[n.index()] {
                seen[n.index()] = true;
                path.push(n);
                if walk(g, n, start, path, seen) {
                    return true;
                }
                path.pop();
            }
        }
        false
    }
    if !walk(&g, start, start, &mut path, &mut visited) {
        return None;
    }
    // Printed from the task that comes first in the job, whichever task the search met first.
    let mut cycle: Vec<usize> = path[..path.len() - 1].iter().map(|n| g[*n]).collect();
    let first = cycle.iter().enumerate().min_by_key(|&(_, t)| *t).map_or(0, |(i, _)| i);
    cycle.rotate_left(first);
    cycle.push(cycle[0]);
    Some(cycle)
}

/// Earliest and latest start of every task of an acyclic job, and the critical path's length,
/// given each task's duration and each dependency's lag (all in ms). Latest starts are the
/// latest that do not lengthen the job; slack = latest - earliest; zero-slack tasks are on a
/// critical path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    pub earliest_start_ms: Vec<u64>,
    pub latest_start_ms: Vec<u64>,
    pub length_ms: u64,
}

impl Schedule {
    pub fn slack_ms(&self, task: usize) -> u64 {
        self.latest_start_ms[task] - self.earliest_start_ms[task]
    }
}

/// The longest-path schedule of `job` (which `Workload::new` has checked is acyclic).
/// `duration(t)` is task t's duration; `lag(t, d)` the lag of task t's d-th dependency.
pub fn schedule(job: &JobSpec, duration: impl Fn(usize) -> u64, lag: impl Fn(usize, usize) -> u64) -> Schedule {
    let n = job.tasks.len();
    let order = topological_order(job);
    let mut earliest = vec![0u64; n];
    for &t in &order {
        for (d, dep) in job.tasks[t].deps.iter().enumerate() {
            earliest[t] = earliest[t].max(earliest[dep.upstream] + lag(t, d));
        }
    }
    let length = (0..n).map(|t| earliest[t] + duration(t)).max().unwrap_or(0);
    // Latest start: as late as the job's length allows, and early enough for each dependent.
    let mut latest: Vec<u64> = (0..n).map(|t| length - duration(t)).collect();
    for &t in order.iter().rev() {
        for (d, dep) in job.tasks[t].deps.iter().enumerate() {
            let u = dep.upstream;
            latest[u] = latest[u].min(latest[t].saturating_sub(lag(t, d)));
        }
    }
    Schedule { earliest_start_ms: earliest, latest_start_ms: latest, length_ms: length }
}

/// Task indices with every upstream before its dependents (ties: lower index first).
pub fn topological_order(job: &JobSpec) -> Vec<usize> {
    let n = job.tasks.len();
    let mut indegree: Vec<usize> = job.tasks.iter().map(|t| t.deps.len()).collect();
    let mut dependents: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (t, task) in job.tasks.iter().enumerate() {
        for dep in &task.deps {
            dependents[dep.upstream].push(t);
        }
    }
    let mut ready: std::collections::BTreeSet<usize> = (0..n).filter(|&t| indegree[t] == 0).collect();
    let mut order = Vec::with_capacity(n);
    while let Some(t) = ready.pop_first() {
        order.push(t);
        for &d in &dependents[t] {
            indegree[d] -= 1;
            if indegree[d] == 0 {
                ready.insert(d);
            }
        }
    }
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::{SimDuration, SimTime};
    use crate::workload::{Dependency, TaskSpec};

    /// (name, work s, dependencies as (upstream, kind)).
    type Task<'a> = (&'a str, u64, &'a [(usize, DepKind)]);

    fn job(tasks: &[Task<'_>]) -> JobSpec {
        let mut j = JobSpec::single("j", SimTime::ZERO, 1, SimDuration(1));
        j.tasks = tasks
            .iter()
            .map(|&(name, work_s, deps)| {
                let mut t = TaskSpec::new(name, 1, SimDuration::from_secs(work_s));
                t.deps = deps.iter().map(|&(upstream, kind)| Dependency { upstream, kind }).collect();
                t
            })
            .collect();
        j
    }

    #[test]
    fn a_cycle_is_refused_with_its_path() {
        // prep -> train -> eval -> train (eval feeds back), report after eval.
        let j = job(&[
            ("prep", 10, &[]),
            ("train", 10, &[(0, DepKind::Success), (2, DepKind::Success)]),
            ("eval", 10, &[(1, DepKind::Success)]),
            ("report", 10, &[(2, DepKind::Any)]),
        ]);
        let e = check_job(&j).unwrap_err().0;
        assert_eq!(e, "job `j`: its tasks' dependencies form a cycle: train -> eval -> train");
        let self_loop = job(&[("a", 1, &[(0, DepKind::Any)])]);
        assert_eq!(check_job(&self_loop).unwrap_err().0, "job `j`: its tasks' dependencies form a cycle: a -> a");
    }

    #[test]
    fn impossible_dependencies_are_refused() {
        let j = job(&[("a", 10, &[]), ("b", 1, &[(0, DepKind::Data(SimDuration::from_secs(11)))])]);
        assert!(check_job(&j).unwrap_err().0.contains("a data point must be within (0, work]"));
        let j = job(&[("a", 10, &[]), ("b", 1, &[(0, DepKind::Checkpoint(0))])]);
        assert!(check_job(&j).unwrap_err().0.contains("checkpoints count from 1"));
        let j = job(&[("a", 10, &[(5, DepKind::Success)])]);
        assert!(check_job(&j).unwrap_err().0.contains("depends on task 5 of 1"));
    }

    /// prep (10) -> pretrain (100) -> finetune (30) -> eval (5); export (20) after pretrain's
    /// data point at 60; cleanup (1) after eval, whatever happened.
    /// Earliest: prep 0, pretrain 10, finetune 110, eval 140, export 70, cleanup 145; length 146.
    /// Latest: cleanup 145, eval 140, finetune 110, pretrain 10, prep 0; export 146 - 20 = 126.
    #[test]
    fn critical_path_and_slack_of_a_known_dag() {
        let j = job(&[
            ("prep", 10, &[]),
            ("pretrain", 100, &[(0, DepKind::Success)]),
            ("finetune", 30, &[(1, DepKind::Success)]),
            ("eval", 5, &[(2, DepKind::Success)]),
            ("export", 20, &[(1, DepKind::Data(SimDuration::from_secs(60)))]),
            ("cleanup", 1, &[(3, DepKind::Any)]),
        ]);
        check_job(&j).unwrap();
        let secs = |t: usize| j.tasks[t].work.as_ms() / 1000;
        let lag = |t: usize, d: usize| {
            let dep = j.tasks[t].deps[d];
            match dep.kind {
                DepKind::Data(w) => w.as_ms() / 1000,
                _ => secs(dep.upstream),
            }
        };
        let s = schedule(&j, secs, lag);
        assert_eq!(s.earliest_start_ms, [0, 10, 110, 140, 70, 145]);
        assert_eq!(s.latest_start_ms, [0, 10, 110, 140, 126, 145]);
        assert_eq!(s.length_ms, 146);
        let slack: Vec<u64> = (0..6).map(|t| s.slack_ms(t)).collect();
        assert_eq!(slack, [0, 0, 0, 0, 56, 0]);
        assert_eq!(topological_order(&j), [0, 1, 2, 3, 4, 5]);
    }
}
