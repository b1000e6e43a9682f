//! What a submission must pass beyond its own checks ([`crate::wire::JobRequest::to_spec`] and
//! the driver's): that it could ever run on the configured cluster, and that a queue it names
//! exists. Refused at once (400, with the reason), rather than accepted and then marked
//! unschedulable where only the log says why.

use crate::wire::{JobRequest, Refusal};

/// Why a task of `job` can never run on `cluster` (the Controller's own words for it), if one
/// cannot: a GPU type the cluster does not have, or more GPUs than the largest eligible pool
/// (node, for a single-node task) has.
pub fn never_fits(cluster: &sim::Cluster, job: &sim::JobSpec) -> Option<String> {
    job.tasks.iter().find_map(|t| {
        let why = cluster.never_fits(t, cluster.eligible_pools(t.gpu_type.as_deref()), 0)?;
        Some(format!("{why}: it can never run on this cluster"))
    })
}

/// A job naming a queue when the coordinator has none (`--queues`) is refused: the name would
/// be kept and mean nothing.
pub fn check_queue(job: &JobRequest, has_queues: bool) -> Result<(), Refusal> {
    match &job.queue {
        Some(q) if !has_queues => Err(Refusal::bad(format!(
            "queue `{q}`: this coordinator has no queues (they are set with --queues when its state directory is made)"
        ))),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::TaskRequest;

    fn spec(task: TaskRequest) -> sim::JobSpec {
        JobRequest::new("j", vec![task]).to_spec(sim::SimTime::ZERO, sim::SimDuration(1)).unwrap()
    }

    #[test]
    fn a_job_that_can_never_fit_is_named_with_the_reason() {
        let cluster = traces::parse_cluster_shorthand("2x4:A100").unwrap();
        let cluster = sim::Cluster::new(&cluster).unwrap();
        let task = |gpus, single_node, ty: Option<&str>| TaskRequest {
            gpus,
            single_node,
            gpu_type: ty.map(String::from),
            ..TaskRequest::new("0", "true")
        };
        assert_eq!(never_fits(&cluster, &spec(task(8, false, None))), None);
        assert_eq!(
            never_fits(&cluster, &spec(task(5, true, None))).unwrap(),
            "task `0` asks for 5 GPUs on one node; the largest node of an eligible pool (`A100`) has 4: it can never run on this cluster"
        );
        assert!(never_fits(&cluster, &spec(task(9, false, None))).unwrap().contains("9 GPUs; the largest an eligible"));
        let whole = |gpus, per_node| TaskRequest { gpus_per_node: Some(per_node), ..task(gpus, false, None) };
        assert_eq!(never_fits(&cluster, &spec(whole(8, 4))), None);
        assert!(never_fits(&cluster, &spec(whole(8, 8))).unwrap().contains("8 GPUs, 8 on each node it uses"));
        assert!(never_fits(&cluster, &spec(task(1, false, Some("H100")))).unwrap().contains("(it has A100)"));
        let queued = JobRequest { queue: Some("team".into()), ..JobRequest::new("j", vec![task(1, false, None)]) };
        assert_eq!(check_queue(&queued, true), Ok(()));
        assert!(check_queue(&queued, false).unwrap_err().reason.contains("this coordinator has no queues"));
    }
}
