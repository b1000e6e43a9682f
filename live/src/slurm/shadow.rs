//! Shadow mode (`live serve --executor slurm --shadow`): Slurm schedules the partition itself
//! and schedlab changes nothing; it mirrors the partition's queue and nodes and answers two
//! questions under the session's policy P, both by a simulation from what Slurm reports:
//!
//! - **forecast**: when would each pending job start under P, from the state now, every job
//!   taking its time limit? The running jobs hold their GPUs (on their own nodes) until their
//!   limits end (their GPUs out, back at that time), nodes out of service stay out, and the
//!   pending jobs arrive at their submit times, none starting before now.
//! - **comparison**: since the shadow started, what did Slurm do, and what would P have done
//!   with the same jobs (their submit times, the run times Slurm's runs took, time limits for
//!   the runs not ended)? Mean waits, the GPU-hours each ran by now, and the jobs whose starts
//!   differ most.
//!
//! A simulation from a snapshot, not a replay of the session: its cost is that of the jobs
//! in the partition now (docs/performance.md, the forecast row).

use super::mapping::{job_name, node_ids, request};
use super::report::{Phase, SlurmJob};
use run::{Keep, RunSpec, Runner};
use serde::Serialize;
use sim::{ClusterEvent, ClusterSpec, JobSpec, NodeId, SimDuration, SimTime, Workload};
use std::collections::{BTreeMap, BTreeSet};

/// The work assumed for a job with no time limit, seconds.
const NO_LIMIT_S: u64 = 3600;

/// A pending job's forecast start under the policy (Unix seconds; None: never within the
/// simulation, e.g. it cannot fit while nodes stay out).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Forecast {
    pub policy: String,
    pub now_unix: u64,
    pub jobs: Vec<ForecastJob>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ForecastJob {
    pub job: u64,
    pub submit_unix: u64,
    pub start_unix: Option<u64>,
}

/// Slurm against the policy on the jobs since the shadow started.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Comparison {
    pub policy: String,
    pub since_unix: u64,
    pub now_unix: u64,
    /// Jobs submitted since, that Slurm or the policy started.
    pub jobs: usize,
    pub slurm_mean_wait_s: f64,
    pub policy_mean_wait_s: f64,
    pub slurm_gpu_hours: f64,
    pub policy_gpu_hours: f64,
    /// The jobs whose starts differ most (at most 20), the largest first.
    pub differ: Vec<Differ>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Differ {
    pub job: u64,
    pub slurm_start_unix: Option<u64>,
    pub policy_start_unix: Option<u64>,
}

/// What the shadow has seen: every job of the partition since it started, as last reported.
#[derive(Debug, Clone, Default)]
pub struct Mirror {
    pub since_unix: u64,
    pub jobs: BTreeMap<u64, SlurmJob>,
}

impl Mirror {
    pub fn new(since_unix: u64) -> Mirror {
        Mirror { since_unix, jobs: BTreeMap::new() }
    }

    /// The partition's jobs as Slurm reports them now (jobs slurmctld has forgotten keep
    /// their last report).
    pub fn update(&mut self, jobs: &[SlurmJob]) {
        for j in jobs {
            self.jobs.insert(j.job_id, j.clone());
        }
    }
}

/// The forecast under `run`'s policy, from the partition's state `now_unix`.
///
/// The simulation starts a second before the earliest pending submission (time 0; or before
/// now if none is earlier). At time 0 the running jobs start on the very GPUs Slurm gave them ([`Pinned`]:
/// before the policy's first decision, so it sees them as running tasks that end when their
/// limits do); the pending jobs arrive at their submit times and start no earlier than now; nodes out of service keep their other GPUs out.
pub fn forecast(
    mirror: &Mirror,
    cluster: &ClusterSpec,
    names: &[String],
    out: &BTreeSet<u32>,
    now_unix: u64,
    run: &RunSpec,
    registry: &policies::Registry,
) -> Result<Forecast, String> {
    let mut pending: Vec<&SlurmJob> = mirror.jobs.values().filter(|j| is_pending(j)).collect();
    pending.sort_by_key(|j| (j.submit_time, j.job_id));
    // A second before the first submission: the running jobs start alone at time 0.
    let origin = pending.first().map_or(now_unix, |j| j.submit_time).min(now_unix) - 1;
    let at = |unix: u64| SimTime(unix.saturating_sub(origin) * 1000);
    let now = at(now_unix);
    let layout = gpu_layout(cluster);
    let mut used = vec![0u32; names.len()];
    let mut specs = Vec::new();
    let mut pins = Vec::new();
    for j in mirror.jobs.values().filter(|j| j.phase() == Phase::Running && request(j).is_ok()) {
        let per_node = j.gpus_per_node().map_or(0, |(g, _)| g);
        let nodes = node_ids(&j.nodes, names);
        if nodes.len() as u32 != j.node_count.max(1) {
            continue; // nodes schedlab does not know: not in the partition
        }
        let mut gpus = Vec::new();
        for &node in &nodes {
            for _ in 0..per_node {
                gpus.push(sim::GpuId(layout[node as usize].0 + used[node as usize]));
                used[node as usize] += 1;
            }
        }
        let end = at(j.start_time + limit_s(j)).max(now + SimDuration(1000));
        let mut spec = job_spec(j, SimTime::ZERO, None)?;
        spec.tasks[0].work = end.since(SimTime::ZERO);
        spec.tasks[0].estimate = Some(spec.tasks[0].work).into();
        pins.push((sim::TaskId::from_index(specs.len()), gpus));
        specs.push(spec);
    }
    let mut events = Vec::new();
    for &node in out {
        for gpu in used[node as usize]..layout[node as usize].1 {
            events.push(ClusterEvent::GpuFail { time: SimTime::ZERO, node: NodeId(node), gpu, repair: None });
        }
    }
    for j in &pending {
        let not_before_s = now_unix.saturating_sub(j.submit_time);
        specs.push(job_spec(j, at(j.submit_time), Some(not_before_s))?);
    }
    let mut policy = Pinned { inner: run.build_policy(registry).map_err(|e| e.to_string())?, pins, pinned: false };
    let result = simulate(specs, cluster, events, run, registry, &mut policy)?;
    let starts: BTreeMap<&str, Option<SimTime>> = result.jobs.iter().map(|r| (&*r.name, r.first_start)).collect();
    let jobs = pending
        .iter()
        .map(|j| ForecastJob {
            job: j.job_id,
            submit_unix: j.submit_time,
            start_unix: starts.get(job_name(j.job_id).as_str()).copied().flatten().map(|t| origin + t.as_ms() / 1000),
        })
        .collect();
    Ok(Forecast { policy: result.policy, now_unix, jobs })
}

/// The policy of a forecast, after the running jobs are started where they run: its first
/// decision (time 0, where only they have arrived) starts them on their GPUs, and the policy
/// decides from the next on. It sees them as tasks started by an earlier plan.
struct Pinned {
    inner: Box<dyn sim::Policy>,
    pins: Vec<(sim::TaskId, Vec<sim::GpuId>)>,
    pinned: bool,
}

impl sim::Policy for Pinned {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn decide(&mut self, view: &sim::ClusterView<'_>, plan: &mut sim::Plan<'_>) {
        if self.pinned {
            return self.inner.decide(view, plan);
        }
        self.pinned = true;
        for (task, gpus) in &self.pins {
            // Two of Slurm's runs on one GPU cannot be: the first keeps it.
            let _ = plan.start(*task, gpus);
        }
        if self.pins.is_empty() {
            self.inner.decide(view, plan);
        }
    }

    fn needs_estimates(&self) -> bool {
        self.inner.needs_estimates()
    }
}

/// Each node's first GPU id and GPU count (nodes in pool order, as `sim::Cluster` numbers
/// them).
fn gpu_layout(cluster: &ClusterSpec) -> Vec<(u32, u32)> {
    let mut layout = Vec::new();
    let mut next = 0;
    for p in &cluster.pools {
        for _ in 0..p.nodes {
            layout.push((next, p.gpus_per_node));
            next += p.gpus_per_node;
        }
    }
    layout
}

/// Slurm against `run`'s policy on the jobs submitted since the shadow started.
pub fn compare(
    mirror: &Mirror,
    cluster: &ClusterSpec,
    now_unix: u64,
    run: &RunSpec,
    registry: &policies::Registry,
) -> Result<Comparison, String> {
    let origin = mirror.since_unix;
    let jobs: Vec<&SlurmJob> = mirror.jobs.values().filter(|j| j.submit_time >= origin && counts(j)).collect();
    let mut specs = Vec::new();
    for j in &jobs {
        let mut spec = job_spec(j, SimTime((j.submit_time - origin) * 1000), None)?;
        // What the run took where it ended; its limit where it did not.
        if j.start_time != 0 && j.end_time >= j.start_time && matches!(j.phase(), Phase::Ended(_)) {
            spec.tasks[0].work = SimDuration((j.end_time - j.start_time).max(1) * 1000);
        }
        specs.push(spec);
    }
    let mut policy = run.build_policy(registry).map_err(|e| e.to_string())?;
    let result = simulate(specs, cluster, Vec::new(), run, registry, policy.as_mut())?;
    let now_s = now_unix.saturating_sub(origin);
    let mut slurm = Stats::default();
    let mut policy = Stats::default();
    let mut differ = Vec::new();
    // By name: the run's records follow submit order (and a job it set aside comes when it
    // ends), not the mirror's order of Slurm job ids.
    let records: BTreeMap<&str, &sim::JobRecord> = result.jobs.iter().map(|r| (r.name.as_str(), r)).collect();
    for j in &jobs {
        let r = records.get(job_name(j.job_id).as_str()).ok_or_else(|| format!("job {} has no record", j.job_id))?;
        let gpus = r.gpus as f64;
        let slurm_start = (j.start_time != 0).then_some(j.start_time);
        let slurm_end = if matches!(j.phase(), Phase::Ended(_)) { j.end_time } else { now_unix };
        slurm.add(j.submit_time, slurm_start, slurm_end.min(now_unix), gpus);
        let policy_start = r.first_start.map(|t| origin + t.as_ms() / 1000).filter(|&s| s - origin <= now_s);
        let policy_end = r.end.map_or(now_unix, |t| origin + t.as_ms() / 1000).min(now_unix);
        policy.add(j.submit_time, policy_start, policy_end, gpus);
        differ.push(Differ { job: j.job_id, slurm_start_unix: slurm_start, policy_start_unix: policy_start });
    }
    let gap = |d: &Differ| match (d.slurm_start_unix, d.policy_start_unix) {
        (Some(a), Some(b)) => a.abs_diff(b),
        (None, None) => 0,
        (Some(s), None) | (None, Some(s)) => now_unix.saturating_sub(s),
    };
    differ.retain(|d| gap(d) > 0);
    differ.sort_by_key(|d| (std::cmp::Reverse(gap(d)), d.job));
    differ.truncate(20);
    Ok(Comparison {
        policy: result.policy,
        since_unix: origin,
        now_unix,
        jobs: jobs.len(),
        slurm_mean_wait_s: slurm.mean_wait(now_unix),
        policy_mean_wait_s: policy.mean_wait(now_unix),
        slurm_gpu_hours: slurm.gpu_s / 3600.0,
        policy_gpu_hours: policy.gpu_s / 3600.0,
        differ,
    })
}

/// Waits (a job not started by now waits until now) and GPU-seconds run by now.
#[derive(Default)]
struct Stats {
    waits: Vec<(u64, Option<u64>)>,
    gpu_s: f64,
}

impl Stats {
    fn add(&mut self, submit: u64, start: Option<u64>, end: u64, gpus: f64) {
        self.waits.push((submit, start));
        if let Some(s) = start {
            self.gpu_s += end.saturating_sub(s) as f64 * gpus;
        }
    }

    fn mean_wait(&self, now: u64) -> f64 {
        if self.waits.is_empty() {
            return 0.0;
        }
        let total: u64 = self.waits.iter().map(|&(submit, start)| start.unwrap_or(now).saturating_sub(submit)).sum();
        total as f64 / self.waits.len() as f64
    }
}

fn is_pending(j: &SlurmJob) -> bool {
    matches!(j.phase(), Phase::Held | Phase::Released) && j.dependency.is_empty() && request(j).is_ok()
}

/// A job the comparison counts: one the policy could run (a GPU job schedlab models), not
/// cancelled before it ever started.
fn counts(j: &SlurmJob) -> bool {
    request(j).is_ok() && !(j.phase() == Phase::Ended(super::report::End::Cancelled) && j.start_time == 0)
}

/// The run time a forecast gives a job: its time limit, or [`NO_LIMIT_S`].
fn limit_s(j: &SlurmJob) -> u64 {
    super::mapping::limit_s(j).unwrap_or(NO_LIMIT_S)
}

/// The job as the simulator's, its work its time limit (its estimate too), starting no
/// earlier than `not_before_s` after its submission.
fn job_spec(j: &SlurmJob, submit: SimTime, not_before_s: Option<u64>) -> Result<JobSpec, String> {
    let mut r = request(j)?;
    r.tasks[0].estimate_s = Some(serde_json::Number::from(limit_s(j)));
    r.tasks[0].not_before_s = not_before_s.filter(|&s| s > 0).map(serde_json::Number::from);
    r.to_spec(submit, SimDuration(limit_s(j) * 1000)).map_err(|e| e.reason)
}

/// One simulation of `jobs` (in order: their ids are their positions) on the cluster.
fn simulate(
    jobs: Vec<JobSpec>,
    cluster: &ClusterSpec,
    events: Vec<ClusterEvent>,
    run: &RunSpec,
    registry: &policies::Registry,
    policy: &mut dyn sim::Policy,
) -> Result<sim::RunResult, String> {
    let mut events = events;
    events.sort_by_key(|e| e.time());
    let trace = traces::Trace {
        workload: Workload::new(jobs).map_err(|e| e.to_string())?,
        cluster: Some(cluster.clone()),
        events,
        queues: Vec::new(),
        datasets: Vec::new(),
        notes: Vec::new(),
        recorded_starts: BTreeMap::new(),
    };
    let spec = RunSpec { cluster: None, trace: None, queues: None, datasets: None, ..run.clone() };
    let outcome = Runner::new(registry.clone())
        .run_trace_with_policy(&spec, trace, policy, Keep::SUMMARY)
        .map_err(|e| e.to_string())?;
    Ok(outcome.result)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A job of `nodes` x `per_node` GPUs, limit `minutes`, submitted at `submit`; running on
    /// `on` since `start` when `on` is not empty.
    fn job(id: u64, nodes: u32, per_node: u32, minutes: u64, submit: u64, on: &str, start: u64) -> SlurmJob {
        let (state, reason, priority) = if on.is_empty() { ("PENDING", "Priority", 1) } else { ("RUNNING", "None", 1) };
        let json = format!(
            r#"{{"jobs":[{{"job_id":{id},"job_state":"{state}","state_reason":"{reason}","priority":{priority},
            "node_count":{nodes},"tres_per_node":"gres:gpu:{per_node}","time_limit":{minutes},"submit_time":{submit},
            "start_time":{start},"nodes":"{on}"}}]}}"#
        );
        super::super::report::jobs(&json).unwrap().remove(0)
    }

    fn starts(policy: &str) -> Vec<(u64, Option<u64>)> {
        // A: n1's 8 GPUs since 1000, limit 3 min (to 1180). B: a node, 1 min. C: both nodes,
        // 1 min. D: 4 GPUs, 1 min. Now 1030.
        forecast_at_1030(
            policy,
            &[
                job(1, 1, 8, 3, 990, "n1", 1000),
                job(2, 1, 8, 1, 1010, "", 0),
                job(3, 2, 8, 1, 1020, "", 0),
                job(4, 1, 4, 1, 1025, "", 0),
            ],
        )
    }

    /// The forecast at 1030 under `policy` of `jobs` on two nodes of 8 GPUs, n1 and n2.
    fn forecast_at_1030(policy: &str, jobs: &[SlurmJob]) -> Vec<(u64, Option<u64>)> {
        let mut mirror = Mirror::new(900);
        mirror.update(jobs);
        let cluster = traces::parse_cluster_shorthand("2x8:gpu").unwrap();
        let names = vec!["n1".to_string(), "n2".to_string()];
        let run = RunSpec { policy: policy.parse().unwrap(), ..RunSpec::default() };
        let f =
            forecast(&mirror, &cluster, &names, &BTreeSet::new(), 1030, &run, &policies::Registry::builtin()).unwrap();
        f.jobs.iter().map(|j| (j.job, j.start_unix)).collect()
    }

    #[test]
    fn the_forecast_runs_the_queue_forward_from_now_with_time_limits() {
        // fifo: B at once on n2; C when A's limit frees n1 (1180); D after C (1240).
        assert_eq!(starts("fifo"), [(2, Some(1030)), (3, Some(1180)), (4, Some(1240))]);
        // easy-backfill: D fits before C's reservation, on n2 once B ends (1090 + 60 <= 1180).
        assert_eq!(starts("easy-backfill[duration=estimate]"), [(2, Some(1030)), (3, Some(1180)), (4, Some(1090))]);
    }

    /// The `slurm` policy plans with the ends of the jobs Slurm runs, which it did not start
    /// itself. R holds 4 of n1's GPUs until 1180; on n2, S holds 4 until 2200 and T 4 until
    /// 1120. A (a whole node, 2 min) can only have n1, at 1180: backfill reserves it there.
    /// When T ends, B (4 GPUs, 10 min) fits on n1 or n2; n1 would still hold it at 1180, so it
    /// takes n2. Blind to R's end, A had no reservation, B took n1 (the lower of two equal
    /// nodes), and A waited for B's end.
    #[test]
    fn the_slurm_policy_reserves_behind_the_jobs_slurm_runs() {
        let jobs = [
            job(1, 1, 4, 3, 990, "n1", 1000),
            job(2, 1, 4, 20, 990, "n2", 1000),
            job(5, 1, 4, 2, 990, "n2", 1000),
            job(3, 1, 8, 2, 1010, "", 0),
            job(4, 1, 4, 10, 1020, "", 0),
        ];
        assert_eq!(forecast_at_1030("slurm", &jobs), [(3, Some(1180)), (4, Some(1120))]);
    }

    /// Slurm ran X (a node, 100 s of its 2 min) at 1000 and Y (a node) only at 1100; both
    /// nodes were free, so fifo starts Y at once (1010). `ids`: X's and Y's job ids. The
    /// comparison at 1200 under fifo on two nodes of 8 GPUs.
    fn compare_x_and_y(ids: (u64, u64)) -> Comparison {
        let ended = |id, submit, on, start, end| SlurmJob {
            job_state: "COMPLETED".into(),
            end_time: end,
            ..job(id, 1, 8, 2, submit, on, start)
        };
        let mut mirror = Mirror::new(1000);
        mirror.update(&[ended(ids.0, 1000, "n1", 1000, 1100), ended(ids.1, 1010, "n2", 1100, 1150)]);
        let cluster = traces::parse_cluster_shorthand("2x8:gpu").unwrap();
        let run = RunSpec { policy: "fifo".parse().unwrap(), ..RunSpec::default() };
        compare(&mirror, &cluster, 1200, &run, &policies::Registry::builtin()).unwrap()
    }

    #[test]
    fn the_comparison_puts_slurms_starts_beside_the_policys() {
        let c = compare_x_and_y((1, 2));
        assert_eq!(c.jobs, 2);
        assert_eq!((c.slurm_mean_wait_s, c.policy_mean_wait_s), (45.0, 0.0));
        assert_eq!(c.differ, [Differ { job: 2, slurm_start_unix: Some(1100), policy_start_unix: Some(1010) }]);
        // Slurm: 8 GPUs x (100 + 50) s; fifo: the same run times.
        assert_eq!((c.slurm_gpu_hours * 3600.0, c.policy_gpu_hours * 3600.0), (1200.0, 1200.0));
    }

    /// Slurm's job ids need not follow submit order (a requeued job is submitted again under
    /// its old id): each job is put beside its own simulated record, not the one at its place.
    #[test]
    fn the_comparison_matches_jobs_by_id_not_by_place() {
        let c = compare_x_and_y((7, 3));
        assert_eq!(c.differ, [Differ { job: 3, slurm_start_unix: Some(1100), policy_start_unix: Some(1010) }]);
    }
}
