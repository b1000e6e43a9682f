//! The JSON views of the session: `GET /v1/jobs`, `/v1/jobs/{job}`, `/v1/cluster` and
//! `/v1/decisions`, built from the Driver (what the journal says) and the agents' last reports.

use super::Coordinator;
use super::store::AgentRecord;
use serde_json::{Value, json};
use sim::{SimTime, TaskId, TaskStatus};
use std::collections::BTreeMap;

/// The most jobs one page of `GET /v1/jobs` lists.
pub(crate) const JOBS_PAGE: usize = 1000;

/// The most decisions one page of `GET /v1/decisions` lists.
pub(crate) const DECISIONS_PAGE: usize = 5000;

impl Coordinator {
    /// `GET /v1/jobs?after=ID&limit=N`: the jobs after id `after`, a [`Page`] of at most
    /// [`JOBS_PAGE`].
    pub(crate) fn jobs_json(&self, after: Option<u64>, limit: Option<u64>) -> Value {
        let page = Page::of(self.driver.submissions().len(), after, limit, JOBS_PAGE);
        let list: Vec<Value> = page
            .range()
            .map(|i| {
                let s = &self.driver.submissions()[i];
                json!({
                    "id": i,
                    "name": s.request.name,
                    "state": self.driver.job_state(i).as_str(),
                    "submit_s": seconds(s.submit),
                    "tasks": s.request.tasks.len(),
                })
            })
            .collect();
        json!({ "jobs": list, "next": page.next })
    }

    /// `GET /v1/jobs/{job}`: the job and each of its tasks.
    pub(crate) fn job_json(&self, i: usize) -> Value {
        let s = &self.driver.submissions()[i];
        let c = self.driver.controller();
        let tasks: Vec<Value> = s
            .request
            .tasks
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let id = s.task_ids[k];
                let state = id.map(|id| c.task(id));
                let status = match id {
                    None if s.cancelled_at.is_some() => "cancelled",
                    None => "blocked",
                    Some(id) => self.driver.task_status(id).as_str(),
                };
                json!({
                    "name": t.name,
                    "task_id": id.map(|t| t.0),
                    "status": status,
                    "gpus": t.gpus,
                    "depends_on": t.depends_on,
                    "attempt": state.filter(|_| id.is_some_and(|id| self.driver.task_status(id) != TaskStatus::Pending)).map(|s| s.attempt),
                    "exit_code": s.exit_codes[k],
                    "placed": self.placement(id),
                })
            })
            .collect();
        json!({
            "id": i,
            "name": s.request.name,
            "state": self.driver.job_state(i).as_str(),
            "submit_s": seconds(s.submit),
            "tasks": tasks,
        })
    }

    /// Where a running task is: `node:slot` with each GPU's UUID.
    fn placement(&self, task: Option<TaskId>) -> Vec<Value> {
        let Some(task) = task else { return Vec::new() };
        if self.driver.task_status(task) != TaskStatus::Running {
            return Vec::new();
        }
        let cluster = self.driver.cluster();
        self.driver
            .controller()
            .task(task)
            .placed
            .iter()
            .map(|&g| {
                let node = cluster.node_of(g);
                let slot = g.0 - cluster.node(node).first_gpu.0;
                json!({ "node": node.0, "slot": slot, "uuid": self.uuid_of(node.0, slot) })
            })
            .collect()
    }

    pub(super) fn agent_of(&self, node: u32) -> Option<&AgentRecord> {
        self.agents.values().find(|a| a.node == node)
    }

    fn uuid_of(&self, node: u32, slot: u32) -> Option<String> {
        self.agent_of(node).and_then(|a| a.gpus.get(slot as usize)).map(|g| g.uuid.clone())
    }

    /// `GET /v1/cluster`: each node, its agent and its GPUs (what `/metrics` counts too).
    pub(crate) fn cluster_json(&self) -> Value {
        let cluster = self.driver.cluster();
        let c = self.driver.controller();
        // Several tasks hold a GPU they share (`gpu_milli`): each is named, in task order.
        let mut holder: BTreeMap<u32, Vec<String>> = BTreeMap::new();
        for id in self.driver.running_tasks() {
            let Some((i, k)) = self.driver.task_origin(id) else { continue };
            let s = &self.driver.submissions()[i];
            for g in &c.task(id).placed {
                let name = format!("{}/{} (job {i})", s.request.name, s.request.tasks[k].name);
                holder.entry(g.0).or_default().push(name);
            }
        }
        let nodes: Vec<Value> = cluster
            .nodes()
            .iter()
            .map(|n| {
                let agent = self.agent_of(n.id.0);
                let state = if self.driver.node_dead(n.id.0) {
                    "dead"
                } else if agent.is_none() {
                    "no agent"
                } else {
                    "alive"
                };
                let gpus: Vec<Value> = n
                    .gpus()
                    .enumerate()
                    .map(|(slot, g)| {
                        let info = agent.and_then(|a| a.gpus.get(slot));
                        let processes: Vec<Value> = agent
                            .and_then(|a| self.processes.get(&a.name))
                            .into_iter()
                            .flatten()
                            .filter(|p| info.is_some_and(|i| i.uuid == p.uuid))
                            .map(|p| json!({ "pid": p.pid, "used_memory_mib": p.used_memory_mib }))
                            .collect();
                        let state = if self.driver.gpu_out(g) {
                            "out"
                        } else if holder.contains_key(&g.0) {
                            "busy"
                        } else {
                            "free"
                        };
                        json!({
                            "slot": slot,
                            "uuid": info.map(|i| i.uuid.clone()),
                            "name": info.map(|i| i.name.clone()),
                            "memory_total_mib": info.map(|i| i.memory_total_mib),
                            "memory_used_mib": info.map(|i| i.memory_used_mib),
                            "utilisation_pct": info.map(|i| i.utilisation_pct),
                            "temperature_c": info.map(|i| i.temperature_c),
                            "state": state,
                            "task": holder.get(&g.0).map(|names| names.join(", ")),
                            "processes": processes,
                        })
                    })
                    .collect();
                json!({
                    "node": n.id.0,
                    "pool": cluster.pool(n.pool).name,
                    "agent": agent.map(|a| a.name.clone()),
                    "addr": agent.map(|a| a.addr.clone()),
                    "state": state,
                    "last_beat_s": self.driver.last_beat(n.id.0).map(seconds),
                    "gpus": gpus,
                })
            })
            .collect();
        json!({
            "now_s": seconds(self.driver.now()),
            "policy": self.driver.policy_name(),
            "heartbeat_s": self.driver.config().run.heartbeat_s.duration().as_ms() as f64 / 1000.0,
            "missed_beats": self.driver.config().run.missed_beats,
            "nodes": nodes,
        })
    }

    /// `GET /v1/decisions`: the decision log, its digest and the policy that made it.
    /// `GET /v1/decisions?after=I&limit=N`: the decision log from entry `after + 1`, a
    /// [`Page`] of at most [`DECISIONS_PAGE`], with the policy and the digest of the whole log.
    pub(crate) fn decisions_json(&self, after: Option<u64>, limit: Option<u64>) -> Value {
        let log = self.driver.decisions();
        let page = Page::of(log.len(), after, limit, DECISIONS_PAGE);
        let list: Vec<Value> = log[page.range()]
            .iter()
            .map(|d| {
                json!({
                    "time_ms": d.time.as_ms(),
                    "kind": d.kind.as_str(),
                    "job": d.job.0,
                    "task": d.task.map(|t| t.0),
                    "gpus": d.gpus.iter().map(|g| g.0).collect::<Vec<_>>(),
                    "detail": d.detail,
                })
            })
            .collect();
        let policy = self.driver.config().run.policy.to_string();
        let digest = self.driver.controller().digest_hex();
        json!({ "policy": policy, "digest": digest, "decisions": list, "next": page.next })
    }
}

/// One page of a listing of `total` entries: those after index `after` (from the first
/// without it), at most `limit` and never more than the listing's bound, and `next`, the
/// `after` of the next page (None on the last). A page costs what it lists, whatever the
/// session's length: the coordinator's thread never writes megabytes for one call.
struct Page {
    from: usize,
    to: usize,
    next: Option<usize>,
}

impl Page {
    fn of(total: usize, after: Option<u64>, limit: Option<u64>, bound: usize) -> Page {
        let from = after.map_or(0, |a| usize::try_from(a).unwrap_or(usize::MAX).saturating_add(1)).min(total);
        let limit = limit.map_or(bound, |l| usize::try_from(l).unwrap_or(bound).clamp(1, bound));
        let to = from.saturating_add(limit).min(total);
        Page { from, to, next: (to < total).then(|| to - 1) }
    }

    fn range(&self) -> std::ops::Range<usize> {
        self.from..self.to
    }
}

pub(super) fn seconds(t: SimTime) -> f64 {
    t.as_ms() as f64 / 1000.0
}
