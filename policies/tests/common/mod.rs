//! The one test helper of the policies crate: tiny clusters and jobs written by hand, run to
//! the end, and the schedule read back as (job, start s, end s).

#![allow(dead_code)]

pub mod random;

use sim::{
    Cluster, ClusterSpec, ControllerConfig, JobSpec, PoolSpec, RunResult, Scenario, SimDuration, SimTime, Workload,
};

/// A cluster of pools given as (nodes, GPUs per node, GPU type); pool names are the types.
pub fn cluster(pools: &[(u32, u32, &str)]) -> Cluster {
    let pools = pools
        .iter()
        .map(|&(nodes, gpus_per_node, ty)| PoolSpec {
            name: ty.to_string(),
            gpu_type: ty.to_string(),
            nodes,
            gpus_per_node,
            nodes_per_rack: 0,
            speed_milli: 1000,
        })
        .collect();
    Cluster::new(&ClusterSpec { pools }).expect("valid test cluster")
}

/// A single-task job: name, submit (s), GPUs, true duration (s).
pub fn job(name: &str, submit_s: u64, gpus: u32, work_s: u64) -> JobSpec {
    JobSpec::single(name, SimTime::from_secs(submit_s), gpus, SimDuration::from_secs(work_s))
}

/// The same with a duration estimate (s).
pub fn job_est(name: &str, submit_s: u64, gpus: u32, work_s: u64, estimate_s: u64) -> JobSpec {
    let mut j = job(name, submit_s, gpus, work_s);
    j.tasks[0].estimate = SimDuration::from_secs(estimate_s).into();
    j
}

pub fn run_with(spec: &str, cluster: Cluster, jobs: Vec<JobSpec>, config: ControllerConfig) -> RunResult {
    let mut policy = policies::build(spec).expect("valid policy spec");
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..config };
    sim::simulate(Scenario::new(cluster, Workload::new(jobs).expect("valid workload")), policy.as_mut(), config)
        .expect("simulation runs")
}

pub fn run(spec: &str, cluster: Cluster, jobs: Vec<JobSpec>) -> RunResult {
    run_with(spec, cluster, jobs, ControllerConfig::default())
}

/// (job name, first start s, end s) in job order; times must be whole seconds.
pub fn schedule(result: &RunResult) -> Vec<(String, u64, u64)> {
    result
        .jobs
        .iter()
        .map(|j| {
            let start = j.first_start.expect("job started").as_ms();
            let end = j.end.expect("job ended").as_ms();
            assert!(start % 1000 == 0 && end % 1000 == 0, "test times are whole seconds");
            (j.name.to_string(), start / 1000, end / 1000)
        })
        .collect()
}

pub fn sched(rows: &[(&str, u64, u64)]) -> Vec<(String, u64, u64)> {
    rows.iter().map(|&(n, s, e)| (n.to_string(), s, e)).collect()
}

/// GPU ids each job's (single) task was started on, first start only.
pub fn first_gpus(result: &RunResult, job: &str) -> Vec<u32> {
    let id = result.jobs.iter().find(|j| j.name == job).expect("job exists").job;
    result
        .decisions
        .iter()
        .find(|d| d.job == id && d.kind == sim::DecisionKind::Start)
        .expect("job started")
        .gpus
        .iter()
        .map(|g| g.0)
        .collect()
}

/// Every policy with each value of each of its parameters somewhere in the list (defaults
/// included): the sweep that the property and determinism tests run. `properties.rs` checks
/// that it covers `Registry::builtin().policies()`, so a new policy or parameter value must be added here.
pub const ALL_SPECS: &[&str] = &[
    "fifo",
    "fifo[skip=true]",
    "fifo[placement=spread]",
    "fifo[avoid_failed_h=24]",
    "fifo[placement=fastest]",
    "fifo[placement=local]",
    "sjf",
    "sjf[duration=estimate]",
    "sjf[placement=spread,avoid_failed_h=1]",
    "sjf[placement=fastest]",
    "sjf[placement=local]",
    "srtf",
    "srtf[duration=estimate,placement=spread]",
    "srtf[avoid_failed_h=0.5]",
    "srtf[placement=fastest]",
    "srtf[placement=local]",
    "easy-backfill",
    "easy-backfill[duration=estimate,depth=3]",
    "easy-backfill[placement=spread,avoid_failed_h=2]",
    "easy-backfill[placement=fastest]",
    "easy-backfill[placement=local]",
    "fair-share",
    "fair-share[order=sjf,duration=estimate,placement=spread,avoid_failed_h=1]",
    "drf",
    "drf[order=sjf,duration=estimate,placement=spread,avoid_failed_h=2]",
    "critical-path",
    "critical-path[duration=estimate,placement=spread,avoid_failed_h=0.5]",
    "fair-share[placement=fastest]",
    "fair-share[order=sjf,placement=local]",
    "drf[placement=local]",
    "drf[placement=fastest]",
    "critical-path[placement=fastest]",
    "critical-path[placement=local]",
    "tiresias",
    "tiresias[mode=gittins,thresholds=60;600;3600]",
    "tiresias[thresholds=120,promote_after=2,placement=spread,avoid_failed_h=1]",
    "tiresias[mode=gittins,promote_after=1]",
    "themis",
    "themis[lease_s=60,t_id=share,duration=estimate,placement=spread]",
    "themis[lease_s=5,avoid_failed_h=3]",
    "priority",
    "priority[placement=spread,avoid_failed_h=1]",
    "weighted-score",
    "weighted-score[w_p=10,w_d=5,w_w=0,placement=spread,avoid_failed_h=2]",
    "tiresias[placement=fastest]",
    "tiresias[placement=local]",
    "themis[placement=fastest]",
    "themis[placement=local]",
    "priority[placement=fastest]",
    "priority[placement=local]",
    "weighted-score[placement=fastest]",
    "weighted-score[placement=local]",
    "weighted-score[w_d=600,local_wait_s=30,placement=local]",
    "slurm",
    "slurm[sched=builtin,batch_sched_delay=0]",
    "slurm[bf_interval=5,bf_max_job_test=3,default_queue_depth=2,bf_max_job_user=2,bf_max_job_part=2]",
    "slurm[priority=multifactor,started_s=5,sched_interval=20,bf_resolution=10,bf_window=10,max_age=100,weight_partition=50,weight_qos=10,partition_factors=q0:2/q1:1,qos_priorities=normal:1,shares=a:2/a.u:3,node_cpus=4]",
    "slurm[qos_grp_gpus=normal:8,qos_grp_jobs=normal:4,qos_max_gpus_per_user=normal:4,qos_max_jobs_per_user=normal:2]",
    "slurm[priority=multifactor,weight_fairshare=1000,weight_age=100,weight_jobsize=100,fair_tree=false,billing=gpu,favor_small=true,calc_period=30,decay_half_life=60]",
];

/// Runs `jobs` with ground-truth cluster `events` (failures, repairs, heartbeats).
pub fn run_with_events(
    spec: &str,
    cluster: Cluster,
    jobs: Vec<JobSpec>,
    events: Vec<sim::ClusterEvent>,
    config: ControllerConfig,
) -> RunResult {
    let mut policy = policies::build(spec).expect("valid policy spec");
    let config = ControllerConfig { check_invariants: true, record_decisions: true, ..config };
    let scenario =
        Scenario::new(cluster, Workload::new(jobs).expect("valid workload")).with_events(events).expect("valid events");
    sim::simulate(scenario, policy.as_mut(), config).expect("simulation runs")
}

/// A node failure at `at_s` seconds, repaired `repair_s` later.
pub fn node_fail(node: u32, at_s: u64, repair_s: u64) -> sim::ClusterEvent {
    sim::ClusterEvent::NodeFail {
        time: SimTime::from_secs(at_s),
        node: sim::NodeId(node),
        repair: Some(SimDuration::from_secs(repair_s)),
    }
}

/// A failure of GPU `slot` of `node` at `at_s` seconds, repaired `repair_s` later.
pub fn gpu_fail(node: u32, slot: u32, at_s: u64, repair_s: u64) -> sim::ClusterEvent {
    sim::ClusterEvent::GpuFail {
        time: SimTime::from_secs(at_s),
        node: sim::NodeId(node),
        gpu: slot,
        repair: Some(SimDuration::from_secs(repair_s)),
    }
}

/// Heartbeat records of `node` at each of `secs` seconds.
pub fn heartbeats(node: u32, secs: impl IntoIterator<Item = u64>) -> Vec<sim::ClusterEvent> {
    secs.into_iter()
        .map(|s| sim::ClusterEvent::Heartbeat { time: SimTime::from_secs(s), node: sim::NodeId(node) })
        .collect()
}

/// The time series conserves what the run's counters integrate: its buckets sum to the run's
/// allocated GPU-time, the queues' buckets sum to the cluster's, every arrival and job end is
/// counted once, and lost GPU-time adds up to the jobs'.
pub fn check_series(r: &RunResult) -> Result<(), String> {
    let s = &r.series;
    let buckets = s.buckets();
    let allocated: u128 = buckets.iter().map(|b| u128::from(b.allocated_mgpu_ms)).sum();
    if allocated != r.stats.allocated_mgpu_ms {
        return Err(format!("series allocated {allocated} mGPU-ms, run {}", r.stats.allocated_mgpu_ms));
    }
    for (i, b) in buckets.iter().enumerate() {
        let q = s.queue_buckets(i);
        let sum = |f: fn(&sim::QueueBucket) -> u64| q.iter().map(f).sum::<u64>();
        let by_queue = (sum(|q| q.allocated_mgpu_ms), sum(|q| q.waiting_task_ms), sum(|q| q.running_task_ms));
        if by_queue != (b.allocated_mgpu_ms, b.waiting_task_ms, b.running_task_ms) {
            return Err(format!("bucket {i}: queues sum to {by_queue:?}, the cluster has {b:?}"));
        }
        if b.allocated_mgpu_ms > u64::from(r.stats.cluster_gpus) * 1000 * s.width().as_ms() {
            return Err(format!("bucket {i} holds more GPU-time than the cluster has"));
        }
    }
    let arrivals: u64 = buckets.iter().map(|b| b.arrivals).sum();
    let ended: u64 = buckets.iter().map(|b| b.completions).sum();
    let jobs_ended = r.jobs.iter().filter(|j| j.end.is_some()).count() as u64;
    if (arrivals, ended) != (r.jobs.len() as u64, jobs_ended) {
        return Err(format!(
            "series counts {arrivals} arrivals and {ended} ends; the run has {} and {jobs_ended}",
            r.jobs.len()
        ));
    }
    let lost: u64 = buckets.iter().map(|b| b.lost_mgpu_ms).sum();
    let jobs_lost: u64 =
        r.jobs.iter().map(|j| j.lost_redo_mgpu_ms + j.lost_lag_mgpu_ms + j.lost_overhead_mgpu_ms).sum();
    if lost != jobs_lost {
        return Err(format!("series lost {lost} mGPU-ms, jobs {jobs_lost}"));
    }
    Ok(())
}
