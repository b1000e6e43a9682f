//! The user's requests that change the session: submit a job, cancel one, return a GPU to
//! service.

use super::Coordinator;
use crate::driver::Input;
use crate::wire::{GpuReturned, JobRequest, Refusal};
use serde_json::{Value, json};

impl Coordinator {
    /// `POST /v1/jobs`: a job admitted (or refused, 400, with the reason) and journaled.
    pub(crate) fn submit(&mut self, job: JobRequest) -> Result<(u16, Value), Refusal> {
        if let Some(executor) = &self.executor {
            return Err(Refusal::new(
                409,
                format!(
                    "this coordinator schedules Slurm partition `{}`: submit with sbatch there",
                    executor.options.partition
                ),
            ));
        }
        let spec = self.driver.check_submission(&job)?;
        super::admission::check_queue(&job, !self.driver.config().queues.trim().is_empty())?;
        if let Some(reason) = super::admission::never_fits(self.driver.cluster(), &spec) {
            return Err(Refusal::bad(format!("job `{}`: {reason}", job.name)));
        }
        let name = job.name.clone();
        self.commit(vec![Input::submit(job)]).map_err(Self::internal)?;
        let id = self.driver.submissions().len() - 1;
        self.log(format!("submitted job {id} `{name}`"));
        Ok((201, json!({ "id": id, "name": name })))
    }

    /// The job a path names: the job of that name, else the job of that id (a name is what
    /// the user chose, so a job named `1` is not shadowed by job id 1).
    pub(crate) fn find_job(&self, key: &str) -> Result<usize, Refusal> {
        let subs = self.driver.submissions();
        let found = self.driver.find(key).or_else(|| key.parse::<usize>().ok().filter(|&i| i < subs.len()));
        found.ok_or_else(|| Refusal::new(404, format!("no job `{key}`")))
    }

    /// `POST /v1/jobs/{job}/cancel`: its tasks stop; a job already ended is 409.
    pub(crate) fn cancel(&mut self, key: &str) -> Result<(u16, Value), Refusal> {
        let job = self.find_job(key)?;
        let state = self.driver.job_state(job);
        if state.is_final() {
            return Err(Refusal::new(409, format!("job `{key}` has already ended ({state})")));
        }
        self.commit(vec![Input::Cancel { job: job as u32 }]).map_err(Self::internal)?;
        Ok((200, self.job_json(job)))
    }

    /// The input that returns the GPU at `node`'s `slot` to service, if it is out (None if it
    /// is in service). Both ways a GPU comes back, its agent registering again with it and an
    /// operator's `POST /v1/gpus/{uuid}/return`, journal this one input, which ends every
    /// failure the GPU has open and sets their `repair_s` in the trace: a replay sees the same
    /// repair whichever way it came.
    pub(super) fn gpu_repair(&self, node: u32, slot: u32) -> Option<Input> {
        let gpu = self.driver.cluster().nodes().get(node as usize)?.gpu_at(slot);
        self.driver.gpu_out(gpu).then_some(Input::GpuRepair { node, slot })
    }

    /// `POST /v1/gpus/{uuid}/return`: an operator who has reset or checked a GPU taken out (XID,
    /// uncorrected ECC error, lost) puts it back without restarting its agent, which would stop
    /// every task on the node. The coordinator takes the operator's word; the agent is not asked.
    pub(crate) fn return_gpu(&mut self, uuid: &str) -> Result<(u16, Value), Refusal> {
        let found = self
            .agents
            .values()
            .find_map(|a| a.gpus.iter().position(|g| g.uuid == uuid).map(|slot| (a.name.clone(), a.node, slot as u32)));
        let Some((agent, node, slot)) = found else {
            return Err(Refusal::new(404, format!("no GPU `{uuid}`: no agent has registered a GPU with that UUID")));
        };
        let Some(repair) = self.gpu_repair(node, slot) else {
            return Err(Refusal::new(409, format!("GPU {uuid} is in service; nothing to return")));
        };
        // A dead node's tasks have failed and nothing can start there until it beats again; a
        // GPU returned now could not be used, and whatever killed the node may be what broke
        // the GPU. The node rejoins at its agent's next heartbeat (its GPUs taken out stay out);
        // return the GPU then.
        if self.driver.node_dead(node) {
            return Err(Refusal::new(
                409,
                format!(
                    "GPU {uuid} is on node {node}, whose agent `{agent}` is declared dead: the node must come back first (at its agent's next heartbeat), then return the GPU"
                ),
            ));
        }
        self.commit(vec![repair]).map_err(Self::internal)?;
        // After the commit: the policy has run, so the answer says who holds the GPU now.
        let gpu = &self.cluster_json()["nodes"][node as usize]["gpus"][slot as usize];
        let reply = GpuReturned {
            uuid: uuid.to_string(),
            node,
            slot,
            agent,
            state: gpu["state"].as_str().unwrap_or("").to_string(),
            task: gpu["task"].as_str().map(str::to_string),
        };
        let holder = reply.task.as_ref().map(|t| format!("; {t} runs on it")).unwrap_or_default();
        self.log(format!("node {node}: GPU {uuid} returned to service by the operator{holder}"));
        Ok((200, serde_json::to_value(reply).unwrap_or(Value::Null)))
    }
}
