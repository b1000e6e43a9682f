//! Slurm's view translated into the engine's: the partition's nodes as a cluster (pools of
//! nodes with the same GPU count and type; node ids in that order, kept with their Slurm
//! names) and each held job as a submission, or a refusal that says what schedlab cannot
//! model.

use super::report::{SlurmJob, SlurmNode, plain};
use crate::wire::{JobRequest, TaskRequest};
use sim::{ClusterSpec, PoolSpec};

/// The engine's name for Slurm job `id`.
pub fn job_name(id: u64) -> String {
    format!("slurm-{id}")
}

/// The Slurm job id of an engine job name made by [`job_name`].
pub fn job_id(name: &str) -> Option<u64> {
    name.strip_prefix("slurm-")?.parse().ok()
}

/// The node ids of a Slurm host list, given the nodes' names by id (names not among them
/// left out).
pub fn node_ids(list: &str, names: &[String]) -> Vec<u32> {
    let listed = traces::inventory::expand_hostlist(list).unwrap_or_default();
    listed.iter().filter_map(|n| names.iter().position(|m| m == n)).map(|i| i as u32).collect()
}

/// A job's time limit in seconds; None for none (a limit past a year is Slurm's "unlimited").
pub fn limit_s(job: &SlurmJob) -> Option<u64> {
    job.time_limit.filter(|&m| m > 0 && m < 525_600).map(|m| m * 60)
}

/// The partition's nodes as a cluster: one pool per (GPU type, GPUs per node), in order of
/// first appearance; the nodes' names by node id. Nodes without GPUs are left out (the
/// engine schedules GPUs); a partition with none is an error.
pub fn cluster(nodes: &[SlurmNode], partition: &str) -> Result<(ClusterSpec, Vec<String>), String> {
    let mut pools: Vec<(String, u32, Vec<String>)> = Vec::new();
    for n in nodes.iter().filter(|n| n.partitions.iter().any(|p| p == partition)) {
        plain("node name", &n.name)?;
        let Some((gpus, kind)) = n.gpus().filter(|(g, _)| *g > 0) else { continue };
        let kind = kind.unwrap_or_else(|| "gpu".to_string());
        plain("GPU type", &kind)?;
        match pools.iter_mut().find(|(k, g, _)| *k == kind && *g == gpus) {
            Some(pool) => pool.2.push(n.name.clone()),
            None => pools.push((kind, gpus, vec![n.name.clone()])),
        }
    }
    if pools.is_empty() {
        return Err(format!("partition `{partition}` has no node with GPUs (sinfo --json: gres gpu:N)"));
    }
    let mut names = Vec::new();
    let mut spec = ClusterSpec::default();
    for (kind, gpus, nodes) in pools {
        let mut pool = PoolSpec::of_type(&kind, nodes.len() as u32, gpus);
        if spec.pools.iter().any(|p| p.name == pool.name) {
            pool.name = format!("{kind}x{gpus}");
        }
        spec.pools.push(pool);
        names.extend(nodes);
    }
    Ok((spec, names))
}

/// The submission of a held Slurm job, or why the executor cannot run it.
pub fn request(job: &SlurmJob) -> Result<JobRequest, String> {
    if job.het_job_id != 0 {
        return Err("a heterogeneous job (its components would have to start together)".into());
    }
    if job.array_job_id != 0 {
        return Err("an array job (each element is released on its own; submit the elements as jobs)".into());
    }
    let nodes = job.node_count.max(1);
    let (per_node, gpu_type) = match (job.gpus_per_node(), per_job_gpus(job)) {
        (Some(g), _) => g,
        (None, Some(g)) if nodes == 1 => g,
        (None, Some(_)) => {
            return Err("--gpus on several nodes: Slurm would choose the split (ask --gres=gpu:N per node)".into());
        }
        (None, None) => return Err("it asks for no GPU (--gres=gpu:N)".into()),
    };
    if per_node == 0 {
        return Err("it asks for 0 GPUs per node".into());
    }
    for (what, name) in [("account", &job.account), ("user", &job.user_name), ("qos", &job.qos)] {
        if !name.is_empty() {
            plain(what, name)?;
        }
    }
    if let Some(t) = &gpu_type {
        plain("GPU type", t)?;
    }
    let estimate_s = limit_s(job).map(serde_json::Number::from);
    let task = TaskRequest {
        gpus: per_node * nodes,
        gpu_type,
        single_node: nodes == 1,
        gpus_per_node: (nodes > 1).then_some(per_node),
        estimate_s,
        ..TaskRequest::new("0", "slurm")
    };
    Ok(JobRequest {
        account: job.account.clone(),
        user: job.user_name.clone(),
        qos: job.qos.clone(),
        ..JobRequest::new(job_name(job.job_id), vec![task])
    })
}

/// `--gpus=N` (tres_per_job `gres:gpu:N`).
fn per_job_gpus(job: &SlurmJob) -> Option<(u32, Option<String>)> {
    let probe = SlurmJob { tres_per_node: job.tres_per_job.clone(), ..job.clone() };
    probe.gpus_per_node()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(extra: &str) -> SlurmJob {
        let json = format!(
            r#"{{"jobs":[{{"job_id":12,"job_state":"PENDING","node_count":2,"tres_per_node":"gres:gpu:4",
            "time_limit":5,"account":"alpha","user_name":"ann","qos":"normal"{extra}}}]}}"#
        );
        super::super::report::jobs(&json).unwrap().remove(0)
    }

    #[test]
    fn a_two_node_gang_becomes_one_task_of_whole_node_shares() {
        let r = request(&job("")).unwrap();
        assert_eq!(r.name, "slurm-12");
        assert_eq!((r.account.as_str(), r.user.as_str(), r.qos.as_str()), ("alpha", "ann", "normal"));
        let t = &r.tasks[0];
        assert_eq!((t.gpus, t.gpus_per_node, t.single_node), (8, Some(4), false));
        assert_eq!(t.estimate_s, Some(serde_json::Number::from(300)));
        assert_eq!(job_id(&r.name), Some(12));
    }

    #[test]
    fn what_cannot_be_modelled_is_refused_with_its_reason() {
        let refused = |change: &dyn Fn(&mut SlurmJob)| {
            let mut j = job("");
            change(&mut j);
            request(&j).unwrap_err()
        };
        assert!(refused(&|j| j.het_job_id = 3).starts_with("a heterogeneous job"));
        assert!(refused(&|j| j.array_job_id = 3).starts_with("an array job"));
        assert!(refused(&|j| j.tres_per_node.clear()).starts_with("it asks for no GPU"));
        let per_job = |j: &mut SlurmJob| {
            j.tres_per_node.clear();
            j.tres_per_job = "gres:gpu:8".into();
        };
        assert!(refused(&per_job).starts_with("--gpus on several"));
        assert!(refused(&|j| j.account = "a b".into()).contains("account `a b`"));
    }

    #[test]
    fn nodes_group_into_pools_by_gpus_and_type() {
        let node = |name: &str, gres: &str, part: &str| SlurmNode {
            name: name.into(),
            state: "idle".into(),
            state_flags: vec![],
            gres: gres.into(),
            partitions: vec![part.into()],
            reason: String::new(),
        };
        let nodes = [
            node("a1", "gpu:a100:8", "gpu"),
            node("v1", "gpu:v100:4", "gpu"),
            node("a2", "gpu:a100:8", "gpu"),
            node("c1", "", "gpu"),
            node("o1", "gpu:a100:8", "other"),
        ];
        let (spec, names) = cluster(&nodes, "gpu").unwrap();
        assert_eq!(names, ["a1", "a2", "v1"]);
        let pools: Vec<_> = spec.pools.iter().map(|p| (p.gpu_type.as_str(), p.nodes, p.gpus_per_node)).collect();
        assert_eq!(pools, [("a100", 2, 8), ("v100", 1, 4)]);
        assert!(cluster(&nodes, "none").unwrap_err().contains("no node with GPUs"));
    }
}
