//! The agent protocol: an agent registers (a node of the cluster and its GPUs), heartbeats
//! (exits, health events, readings) and asks for its assignments, each for the coordinator
//! generation it registered with.

use super::Coordinator;
use super::store::AgentRecord;
use crate::driver::Input;
use crate::wire::{
    Assignment, AssignmentsReply, HealthEvent, HeartbeatReply, HeartbeatRequest, Refusal, RegisterReply,
    RegisterRequest, STALE_GENERATION,
};
use serde_json::Value;
use sim::{TaskId, TaskStatus};

impl Coordinator {
    /// `POST /v1/agents/register`: the agent gets a node of the cluster (the one it held, if it
    /// registers again), or a refusal naming what it claimed wrongly.
    pub(crate) fn register(&mut self, r: RegisterRequest) -> Result<(u16, Value), Refusal> {
        self.check_registration(&r)?;
        // An agent registering again under its name keeps its node and its GPU slots; it may
        // bring fewer GPUs (a lost one stays out), never others.
        let node = match self.agents.get(&r.name).cloned() {
            Some(known) if r.node.is_none_or(|n| n == known.node) => self.register_again(r, known)?,
            _ => self.register_new(r)?,
        };
        let reply = RegisterReply {
            node,
            heartbeat_ms: self.driver.config().run.heartbeat_s.duration().as_ms(),
            generation: self.generation,
        };
        Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)))
    }

    /// What any registration must be: a plain name, readings that make sense, GPUs with
    /// distinct UUIDs, none of them another agent's.
    fn check_registration(&self, r: &RegisterRequest) -> Result<(), Refusal> {
        crate::wire::check_name("agent name", &r.name)?;
        check_readings(&r.gpus)?;
        if r.gpus.is_empty() {
            return Err(Refusal::bad("an agent must bring at least one GPU"));
        }
        let mut uuids: Vec<&str> = r.gpus.iter().map(|g| g.uuid.as_str()).collect();
        uuids.sort_unstable();
        if uuids.windows(2).any(|w| w[0] == w[1]) || uuids.iter().any(|u| u.is_empty()) {
            return Err(Refusal::bad("the GPU list repeats a UUID or has an empty one"));
        }
        for g in &r.gpus {
            if let Some(other) =
                self.agents.values().find(|a| a.name != r.name && a.gpus.iter().any(|h| h.uuid == g.uuid))
            {
                return Err(self.refuse(
                    &r.name,
                    format!("GPU {} is held by agent `{}` (node {}); refused", g.uuid, other.name, other.node),
                ));
            }
        }
        Ok(())
    }

    /// Agent `known` registers again: the same node, its GPUs' readings refreshed; started
    /// afresh (`fresh`), its node restarted and the GPUs it brings back in service. Its node.
    fn register_again(&mut self, r: RegisterRequest, known: AgentRecord) -> Result<u32, Refusal> {
        if let Some(g) = r.gpus.iter().find(|g| !known.gpus.iter().any(|k| k.uuid == g.uuid)) {
            return Err(self.refuse(
                &r.name,
                format!("registers again with GPU {}, which it did not have (it holds node {})", g.uuid, known.node),
            ));
        }
        let node = known.node;
        let mut record = known;
        record.addr = r.addr;
        // A fresh agent process runs nothing of what its node ran: the node went down and
        // is back (its tasks fail at its next beat, as the simulator has it).
        let mut inputs = if r.fresh {
            self.log(format!("node {node}: agent `{}` restarted; what ran there is lost", r.name));
            vec![Input::NodeRestarted { node }, Input::Beat { node }]
        } else {
            vec![Input::Beat { node }]
        };
        for (slot, g) in record.gpus.iter_mut().enumerate() {
            if let Some(now) = r.gpus.iter().find(|n| n.uuid == g.uuid) {
                *g = now.clone();
                // Only an agent started afresh may have had its GPUs reset: one registering
                // again (after a coordinator restart, to learn its generation) brings back
                // nothing taken out.
                if r.fresh
                    && let Some(repair) = self.gpu_repair(node, slot as u32)
                {
                    self.log(format!("node {node}: GPU {} is back (its agent registered again with it)", g.uuid));
                    inputs.push(repair);
                }
            }
        }
        self.store.put_agent(&record).map_err(Self::internal)?;
        self.agents.insert(r.name.clone(), record);
        self.commit(inputs).map_err(Self::internal)?;
        self.log(format!("agent `{}` registered again as node {node}", r.name));
        Ok(node)
    }

    /// A new agent: the node it asks for, or the first free one with as many GPUs. Its node.
    fn register_new(&mut self, r: RegisterRequest) -> Result<u32, Refusal> {
        let cluster = self.driver.cluster();
        let fits = |node: u32| cluster.nodes().get(node as usize).is_some_and(|n| n.gpu_count as usize == r.gpus.len());
        let taken = |node: u32| self.agents.values().any(|a| a.node == node && a.name != r.name);
        let node = match r.node {
            Some(n) if !fits(n) => {
                return Err(
                    self.refuse(&r.name, format!("node {n} does not exist or does not have {} GPUs", r.gpus.len()))
                );
            }
            Some(n) if taken(n) => return Err(self.refuse(&r.name, format!("node {n} is held by another agent"))),
            Some(n) => n,
            None => match (0..cluster.nodes().len() as u32).find(|&n| fits(n) && !taken(n)) {
                Some(n) => n,
                None => {
                    return Err(self.refuse(&r.name, format!("no free node of the cluster has {} GPUs", r.gpus.len())));
                }
            },
        };
        let record = AgentRecord { name: r.name.clone(), node, addr: r.addr, gpus: r.gpus };
        self.store.put_agent(&record).map_err(Self::internal)?;
        self.agents.insert(r.name.clone(), record);
        self.commit(vec![Input::Beat { node }]).map_err(Self::internal)?;
        self.log(format!("agent `{}` registered as node {node}", r.name));
        Ok(node)
    }

    /// Refuses (409) a report or request made for another coordinator generation than this
    /// one: the agent registers again and learns it. What it carried (exits, health events)
    /// is sent again after that, to this coordinator, which checks it against its own state.
    fn check_generation(&self, theirs: u64) -> Result<(), Refusal> {
        let mine = self.generation;
        if theirs == mine {
            return Ok(());
        }
        let why = if theirs > mine {
            format!(
                "the agent registered with generation {theirs}, newer than this coordinator's {mine}: this coordinator is not the current one"
            )
        } else {
            format!("it is for generation {theirs}, this coordinator is generation {mine}; register again")
        };
        Err(Refusal::new(409, format!("{STALE_GENERATION}: {why}")))
    }

    /// `POST /v1/agents/heartbeat`: the node is alive; its exits and health events journaled;
    /// the answer lists what the node must run.
    pub(crate) fn heartbeat(&mut self, h: HeartbeatRequest) -> Result<(u16, Value), Refusal> {
        let Some(agent) = self.agents.get(&h.name).cloned() else {
            return Err(Refusal::new(404, format!("no agent `{}`: register first", h.name)));
        };
        self.check_generation(h.generation)?;
        check_readings(&h.gpus)?;
        let node = agent.node;
        let slot_of = |uuid: &str| agent.gpus.iter().position(|g| g.uuid == uuid);
        for e in &h.health {
            if slot_of(e.uuid()).is_none() {
                return Err(
                    self.refuse(&h.name, format!("health event for unknown GPU {} (not this agent's)", e.uuid()))
                );
            }
        }
        if let Some(g) = h.gpus.iter().find(|g| slot_of(&g.uuid).is_none()) {
            return Err(self.refuse(&h.name, format!("reports unknown GPU {}", g.uuid)));
        }
        if let Some(p) = h.processes.iter().find(|p| slot_of(&p.uuid).is_none()) {
            return Err(self.refuse(&h.name, format!("reports a process on unknown GPU {}", p.uuid)));
        }
        self.processes.insert(h.name.clone(), h.processes.clone());
        let mut inputs = vec![Input::Beat { node }];
        for e in &h.health {
            let slot = slot_of(e.uuid()).unwrap_or(0) as u32;
            if let HealthEvent::Xid { code, uuid } = e
                && self.app_xids.binary_search(code).is_ok()
            {
                // The user's program broke, not the GPU: taking the GPU out would drain the
                // cluster one buggy job at a time. The program's process exits non-zero by
                // itself, which fails its task. No GpuFail is journaled; the event is still
                // acknowledged: the agent forgets the health events of a heartbeat answered 200.
                self.log(format!("node {node}: XID {code} on {uuid}: an application error, the GPU stays in service"));
                continue;
            }
            self.log(format!("node {node}: {e}"));
            let what = match e {
                HealthEvent::Xid { code, .. } => format!("xid {code}"),
                HealthEvent::Ecc { count, .. } => format!("ecc {count}"),
                HealthEvent::Lost { .. } => "lost".to_string(),
                HealthEvent::WorkDir { .. } => "workdir".to_string(),
            };
            inputs.push(Input::GpuFail { node, slot, what });
        }
        let c = self.driver.controller();
        for x in &h.exits {
            let task = TaskId(x.task);
            let current = (x.task as usize) < self.driver.task_count()
                && self.driver.task_status(task) == TaskStatus::Running
                && c.task(task).attempt == x.attempt;
            // A gang spanning nodes ends when its rank 0 (its first node) exits.
            let rank0 =
                current && c.task(task).placed.iter().map(|&g| self.driver.cluster().node_of(g).0).min() == Some(node);
            if rank0 {
                inputs.push(Input::Exit { task: x.task, attempt: x.attempt, code: x.code });
                self.log(format!("node {node}: task {} attempt {} exited {}", x.task, x.attempt, x.code));
            }
        }
        // Refresh what the agent says of its GPUs (utilisation, temperature) for the cluster view.
        if !h.gpus.is_empty()
            && let Some(a) = self.agents.get_mut(&h.name)
        {
            for g in &h.gpus {
                if let Some(mine) = a.gpus.iter_mut().find(|m| m.uuid == g.uuid) {
                    *mine = g.clone();
                }
            }
        }
        self.commit(inputs).map_err(Self::internal)?;
        let assignments = self.assignments_of(&agent);
        let heartbeat_ms = self.driver.config().run.heartbeat_s.duration().as_ms();
        let reply = HeartbeatReply { assignments, acked: h.exits, heartbeat_ms, generation: self.generation };
        Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)))
    }

    /// `GET /v1/agents/{name}/assignments?generation=G`: what agent `name`'s node must run,
    /// for the coordinator of generation G (see [`Coordinator::check_generation`]).
    pub(crate) fn assignments(&self, name: &str, generation: u64) -> Result<(u16, Value), Refusal> {
        let agent =
            self.agents.get(name).ok_or_else(|| Refusal::new(404, format!("no agent `{name}`: register first")))?;
        self.check_generation(generation)?;
        let reply = AssignmentsReply { generation: self.generation, assignments: self.assignments_of(agent) };
        Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)))
    }

    /// What `agent`'s node must run, with its GPUs' UUIDs.
    fn assignments_of(&self, agent: &AgentRecord) -> Vec<Assignment> {
        let addr_of = |n: u32| self.agent_of(n).map(|a| a.addr.clone()).unwrap_or_default();
        let mut assignments = self.driver.assignments(agent.node, addr_of);
        for a in &mut assignments {
            a.gpus = a
                .gpus
                .iter()
                .map(|slot| {
                    slot.parse::<usize>()
                        .ok()
                        .and_then(|s| agent.gpus.get(s))
                        .map(|g| g.uuid.clone())
                        .unwrap_or_default()
                })
                .collect();
        }
        assignments
    }
}

/// What an agent reports of its GPUs goes to `/metrics` and `GET /v1/cluster` as is: a
/// utilisation that is no percentage is refused (400), not shown.
fn check_readings(gpus: &[crate::wire::GpuInfo]) -> Result<(), Refusal> {
    match gpus.iter().find(|g| g.utilisation_pct > 100) {
        Some(g) => Err(Refusal::bad(format!(
            "GPU {}: utilisation_pct {} is not a percentage (0 to 100)",
            crate::wire::shown(&g.uuid),
            g.utilisation_pct
        ))),
        None => Ok(()),
    }
}
