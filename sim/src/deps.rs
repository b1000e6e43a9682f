//! Task DAGs' bookkeeping: each dependency's state (waiting, met, never), each upstream's
//! dependents, and the points of an upstream's work that progress dependencies wait for. The
//! rules that drive it are the Controller's (`controller/deps.rs`); the timers it asks for
//! ([`Timer`]) are its driver's to fire.

use crate::ids::TaskId;
use crate::state::TaskStatus;
use crate::time::SimDuration;
use crate::workload::{DepKind, JobSpec};
use std::collections::BTreeMap;

/// Something the Controller asked its driver to tell it about at a given time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Timer {
    /// The task's start window opens (`not_before`).
    Opens(TaskId),
    /// The task's start window closes (`not_after`).
    Closes(TaskId),
    /// The task's attempt `attempt` reaches the next progress point a dependent waits for.
    Progress { task: TaskId, attempt: u32 },
    /// GPUs let go of fall due to return to the free pool (the release latency).
    Release,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EdgeState {
    Waiting,
    Met,
    Never,
}

/// One dependency of a task, as the Controller tracks it.
#[derive(Debug, Clone, Copy)]
struct Edge {
    kind: DepKind,
    /// For `data` and `checkpoint`: the upstream's work (ms) that meets it.
    point_ms: u64,
    state: EdgeState,
}

/// The DAG bookkeeping of a run; empty (and free) for workloads without dependencies.
#[derive(Debug, Default)]
pub(crate) struct Dag {
    /// Every dependency of each task that has some.
    edges: BTreeMap<TaskId, Vec<Edge>>,
    /// Each upstream's dependents: (dependent, index into its edges).
    dependents: BTreeMap<TaskId, Vec<(TaskId, usize)>>,
    /// For upstreams with progress dependents: the points watched (ascending) and the most
    /// work reached so far.
    watched: BTreeMap<TaskId, Watch>,
}

#[derive(Debug)]
struct Watch {
    points_ms: Vec<u64>,
    reached_ms: u64,
}

impl Dag {
    /// Adds the edges of `job`, whose first task is `first` (a job's edges stay inside it).
    pub(crate) fn add_job(&mut self, job: &JobSpec, first: TaskId, checkpoint: impl Fn(TaskId) -> SimDuration) {
        let id = |index: usize| TaskId(first.0 + index as u32);
        let mut watched = Vec::new();
        for (t, task) in job.tasks.iter().enumerate() {
            if task.deps.is_empty() {
                continue;
            }
            let mut edges = Vec::with_capacity(task.deps.len());
            for (d, dep) in task.deps.iter().enumerate() {
                let upstream = id(dep.upstream);
                let point = dep.kind.point(checkpoint(upstream), job.tasks[dep.upstream].work);
                let point_ms = point.map_or(0, SimDuration::as_ms);
                if point.is_some() {
                    let watch = self.watched.entry(upstream).or_insert(Watch { points_ms: Vec::new(), reached_ms: 0 });
                    watch.points_ms.push(point_ms);
                    watched.push(upstream);
                }
                edges.push(Edge { kind: dep.kind, point_ms, state: EdgeState::Waiting });
                self.dependents.entry(upstream).or_default().push((id(t), d));
            }
            self.edges.insert(id(t), edges);
        }
        for upstream in watched {
            if let Some(watch) = self.watched.get_mut(&upstream) {
                watch.points_ms.sort_unstable();
                watch.points_ms.dedup();
            }
        }
    }

    /// Forgets `task` (its job has left a streamed run). A job's edges stay inside it, so
    /// with all of its tasks gone nothing names them.
    pub(crate) fn let_go(&mut self, task: TaskId) {
        if !self.edges.is_empty() || !self.dependents.is_empty() {
            self.edges.remove(&task);
            self.dependents.remove(&task);
            self.watched.remove(&task);
        }
    }

    /// Whether some dependency of `task` is not met (yet, or ever).
    pub(crate) fn blocked(&self, task: TaskId) -> bool {
        self.edges.get(&task).is_some_and(|edges| edges.iter().any(|e| e.state != EdgeState::Met))
    }

    /// Whether a dependent runs because `task` failed: its failure is handled.
    pub(crate) fn handles_failure(&self, task: TaskId) -> bool {
        self.dependent_kinds(task).any(|k| k == DepKind::Failure)
    }

    fn dependent_kinds(&self, task: TaskId) -> impl Iterator<Item = DepKind> + '_ {
        self.dependents.get(&task).into_iter().flatten().map(|&(d, i)| self.edges[&d][i].kind)
    }

    /// The dependents of `upstream`, as (dependent, index into its edges); `None` without.
    /// A copy: the caller changes the edges as it walks them.
    pub(crate) fn dependents(&self, upstream: TaskId) -> Option<Vec<(TaskId, usize)>> {
        self.dependents.get(&upstream).cloned()
    }

    /// The upstream of the edge `index` of `dependent` ended with `status`: a waiting edge is
    /// met, or never will be. `Some(met)` for an edge that was waiting, `None` otherwise.
    pub(crate) fn resolve(&mut self, dependent: TaskId, index: usize, status: TaskStatus) -> Option<bool> {
        let edge = &mut self.edges.get_mut(&dependent).expect("a dependent has edges")[index];
        if edge.state != EdgeState::Waiting {
            return None;
        }
        let met = match edge.kind {
            DepKind::Any => true,
            DepKind::Failure => status == TaskStatus::Failed,
            DepKind::Success | DepKind::Data(_) | DepKind::Checkpoint(_) => status == TaskStatus::Succeeded,
        };
        edge.state = if met { EdgeState::Met } else { EdgeState::Never };
        Some(met)
    }

    /// `task` has done `done_ms` of its work: past what it had reached, its dependents (to
    /// try with [`Dag::meet_progress`]); `None` when nothing new was reached.
    pub(crate) fn reach(&mut self, task: TaskId, done_ms: u64) -> Option<Vec<(TaskId, usize)>> {
        let watch = self.watched.get_mut(&task)?;
        if done_ms <= watch.reached_ms {
            return None;
        }
        watch.reached_ms = done_ms;
        Some(self.dependents.get(&task).cloned().unwrap_or_default())
    }

    /// Meets the edge `index` of `dependent` if it waits for a point of its upstream's work
    /// no later than `done_ms`, for good; whether it did.
    pub(crate) fn meet_progress(&mut self, dependent: TaskId, index: usize, done_ms: u64) -> bool {
        let edge = &mut self.edges.get_mut(&dependent).expect("a dependent has edges")[index];
        let progress = matches!(edge.kind, DepKind::Data(_) | DepKind::Checkpoint(_));
        if progress && edge.state == EdgeState::Waiting && edge.point_ms <= done_ms {
            edge.state = EdgeState::Met;
            return true;
        }
        false
    }

    /// The first watched point past what `task` has reached, if any.
    pub(crate) fn next_point(&self, task: TaskId) -> Option<u64> {
        let watch = self.watched.get(&task)?;
        watch.points_ms.iter().copied().find(|&p| p > watch.reached_ms)
    }
}
