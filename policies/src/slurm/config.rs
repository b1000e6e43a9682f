//! The `slurm` policy's parameters: Slurm 22.05's own names (slurm.conf's `PriorityWeight*`,
//! `SchedulerParameters`), each with Slurm's default, so that a spec reads like the
//! configuration it stands for. `schedlab cluster import --format slurm` prints the spec of a
//! slurm.conf.

use super::qos::QosLimits;
use crate::params::{ParamInfo, Params, SpecError};
use sim::SimDuration;
use std::collections::BTreeMap;

/// `PriorityType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PriorityType {
    /// priority/basic: submission order.
    Basic,
    /// priority/multifactor: the weighted sum of age, fair share, job size, partition and QOS.
    Multifactor,
}

/// What a job's usage is counted in for fair share (Slurm's billing TRES).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Billing {
    /// The CPUs it holds (Slurm's default): one per node here.
    Cpu,
    /// Its GPUs (`TRESBillingWeights=GRES/gpu=1`).
    Gpu,
}

/// Every setting of the policy, read from its parameters.
#[derive(Debug, Clone)]
pub struct SlurmConfig {
    pub priority: PriorityType,
    /// sched/backfill (true) or sched/builtin.
    pub backfill: bool,
    /// When slurmctld started, in trace seconds: its periodic passes count from it. `None`:
    /// at the first job.
    pub started: Option<u64>,
    pub batch_sched_delay: SimDuration,
    pub sched_interval: SimDuration,
    pub default_queue_depth: usize,
    pub bf_interval: SimDuration,
    pub bf_resolution: SimDuration,
    pub bf_window: SimDuration,
    pub bf_max_job_test: usize,
    pub bf_max_job_user: usize,
    pub bf_max_job_part: usize,
    pub weights: Weights,
    pub max_age: SimDuration,
    pub favor_small: bool,
    /// Zero: usage never decays.
    pub decay_half_life: SimDuration,
    pub calc_period: SimDuration,
    pub fair_tree: bool,
    pub billing: Billing,
    pub partition_factors: BTreeMap<String, u32>,
    pub qos_priorities: BTreeMap<String, u32>,
    /// The limits of each QOS on the jobs that name it.
    pub qos_limits: BTreeMap<String, QosLimits>,
    /// Fairshare of accounts (`account`) and user associations (`account.user`).
    pub shares: BTreeMap<String, u32>,
    /// CPUs of each node; `None`: as many as it has GPUs.
    pub node_cpus: Option<u32>,
}

/// `PriorityWeight*`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Weights {
    pub age: u32,
    pub fairshare: u32,
    pub jobsize: u32,
    pub partition: u32,
    pub qos: u32,
}

const fn param(key: &'static str, values: &'static str, default: &'static str, help: &'static str) -> ParamInfo {
    ParamInfo { key, values, default, help }
}

const SECONDS: &str = "whole seconds >= 0";
const NAMED: &str = "name:number/name:number... (empty: none)";

/// The parameters in the order `schedlab policies` lists them.
pub const PARAMS: &[ParamInfo] = &[
    param(
        "priority",
        "basic|multifactor",
        "basic",
        "PriorityType: priority/basic (submission order) or priority/multifactor",
    ),
    param(
        "sched",
        "backfill|builtin",
        "backfill",
        "SchedulerType: sched/backfill or sched/builtin (main scheduler only)",
    ),
    param(
        "started_s",
        "seconds >= 0 in trace time, or first",
        "first",
        "when slurmctld started: its 1 s, sched_interval, bf_interval and PriorityCalcPeriod clocks count from it (first: the first job's submission)",
    ),
    param(
        "batch_sched_delay",
        SECONDS,
        "3",
        "a submission or a job's end asks for a main pass, run at most this often",
    ),
    param("sched_interval", SECONDS, "60", "a main pass over the whole queue this often"),
    param(
        "default_queue_depth",
        "whole number",
        "100",
        "jobs a main pass looks at (one more than this, as Slurm does), except the sched_interval pass",
    ),
    param("bf_interval", SECONDS, "30", "a backfill pass this often"),
    param("bf_resolution", SECONDS, "60", "backfill reservations are rounded to this"),
    param("bf_window", "whole minutes", "1440", "how far ahead backfill plans; no reservation starts later"),
    param("bf_max_job_test", "whole number", "500", "jobs one backfill pass tests"),
    param("bf_max_job_user", "whole number (0: no limit)", "0", "jobs of one user one backfill pass tests"),
    param("bf_max_job_part", "whole number (0: no limit)", "0", "jobs of one partition one backfill pass tests"),
    param("weight_age", "whole number", "0", "PriorityWeightAge"),
    param("weight_fairshare", "whole number", "0", "PriorityWeightFairshare"),
    param("weight_jobsize", "whole number", "0", "PriorityWeightJobSize"),
    param("weight_partition", "whole number", "0", "PriorityWeightPartition"),
    param("weight_qos", "whole number", "0", "PriorityWeightQOS"),
    param("max_age", SECONDS, "604800", "PriorityMaxAge: the age at which the age factor reaches 1"),
    param("favor_small", "true|false", "false", "PriorityFavorSmall: smaller jobs get the larger job-size factor"),
    param("decay_half_life", SECONDS, "604800", "PriorityDecayHalfLife of past usage (0: no decay)"),
    param(
        "calc_period",
        "whole seconds >= 1",
        "300",
        "PriorityCalcPeriod: usage is decayed and priorities recomputed this often",
    ),
    param(
        "fair_tree",
        "true|false",
        "true",
        "the Fair Tree algorithm (false: classic fair share, PriorityFlags=NO_FAIR_TREE)",
    ),
    param(
        "billing",
        "cpu|gpu",
        "cpu",
        "what usage is counted in: CPUs (one per node of a job) or GPUs (TRESBillingWeights=GRES/gpu=1)",
    ),
    param("partition_factors", NAMED, "", "PriorityJobFactor of each partition (queue); others 1"),
    param("qos_priorities", NAMED, "", "Priority of each QOS; others 0"),
    param(
        "qos_grp_gpus",
        NAMED,
        "",
        "GrpTRES gres/gpu of each QOS: GPUs all running jobs that name it may hold, across partitions",
    ),
    param("qos_grp_jobs", NAMED, "", "GrpJobs of each QOS: jobs that name it running at once, across partitions"),
    param(
        "qos_max_gpus_per_user",
        NAMED,
        "",
        "MaxTRESPU gres/gpu of each QOS: GPUs one user's running jobs that name it may hold",
    ),
    param("qos_max_jobs_per_user", NAMED, "", "MaxJobsPU of each QOS: one user's jobs that name it running at once"),
    param(
        "shares",
        "account:N/account.user:N/... (empty: none)",
        "",
        "Fairshare of each account and user association (sacctmgr; users of account root sit beside the accounts); others 1",
    ),
    param(
        "node_cpus",
        "whole number >= 1, or gpus",
        "gpus",
        "CPUs of each node (node choice is best fit on free CPUs)",
    ),
];

impl SlurmConfig {
    pub fn from_params(params: &Params) -> Result<SlurmConfig, SpecError> {
        let bad = |key: &str, what: &str| SpecError(format!("policy `{}`: `{key}`: {what}", params.policy));
        let seconds =
            |key: &str| -> Result<SimDuration, SpecError> { Ok(SimDuration::from_secs(params.get::<u64>(key)?)) };
        let priority = match params.get::<String>("priority")?.as_str() {
            "basic" => PriorityType::Basic,
            "multifactor" => PriorityType::Multifactor,
            other => return Err(bad("priority", &format!("`{other}`: expected basic or multifactor"))),
        };
        let backfill = match params.get::<String>("sched")?.as_str() {
            "backfill" => true,
            "builtin" => false,
            other => return Err(bad("sched", &format!("`{other}`: expected backfill or builtin"))),
        };
        let started = match params.get::<String>("started_s")?.as_str() {
            "first" => None,
            text => Some(
                text.parse::<u64>()
                    .map_err(|_| bad("started_s", &format!("`{text}`: expected whole seconds or first")))?,
            ),
        };
        let billing = match params.get::<String>("billing")?.as_str() {
            "cpu" => Billing::Cpu,
            "gpu" => Billing::Gpu,
            other => return Err(bad("billing", &format!("`{other}`: expected cpu or gpu"))),
        };
        let node_cpus = match params.get::<String>("node_cpus")?.as_str() {
            "gpus" => None,
            text => Some(
                text.parse::<u32>()
                    .ok()
                    .filter(|&n| n >= 1)
                    .ok_or_else(|| bad("node_cpus", &format!("`{text}`: expected a whole number >= 1 or gpus")))?,
            ),
        };
        let calc_period = seconds("calc_period")?;
        if calc_period == SimDuration::ZERO {
            return Err(bad("calc_period", "must be at least 1 second"));
        }
        let named = |key: &str| named_numbers(&params.get::<String>(key)?).map_err(|e| bad(key, &e));
        Ok(SlurmConfig {
            priority,
            backfill,
            started,
            batch_sched_delay: seconds("batch_sched_delay")?,
            sched_interval: seconds("sched_interval")?,
            default_queue_depth: params.get("default_queue_depth")?,
            bf_interval: seconds("bf_interval")?,
            bf_resolution: seconds("bf_resolution")?.max(SimDuration::from_secs(1)),
            bf_window: SimDuration::from_secs(params.get::<u64>("bf_window")?.saturating_mul(60)),
            bf_max_job_test: params.get("bf_max_job_test")?,
            bf_max_job_user: params.get("bf_max_job_user")?,
            bf_max_job_part: params.get("bf_max_job_part")?,
            weights: Weights {
                age: params.get("weight_age")?,
                fairshare: params.get("weight_fairshare")?,
                jobsize: params.get("weight_jobsize")?,
                partition: params.get("weight_partition")?,
                qos: params.get("weight_qos")?,
            },
            max_age: seconds("max_age")?,
            favor_small: params.get("favor_small")?,
            decay_half_life: seconds("decay_half_life")?,
            calc_period,
            fair_tree: params.get("fair_tree")?,
            billing,
            partition_factors: named("partition_factors")?,
            qos_priorities: named("qos_priorities")?,
            qos_limits: QosLimits::of_each(
                named("qos_grp_gpus")?,
                named("qos_grp_jobs")?,
                named("qos_max_gpus_per_user")?,
                named("qos_max_jobs_per_user")?,
            ),
            shares: named("shares")?,
            node_cpus,
        })
    }
}

/// `a:1/b:4` as a map; empty text: an empty map.
fn named_numbers(text: &str) -> Result<BTreeMap<String, u32>, String> {
    let mut map = BTreeMap::new();
    for item in text.split('/').filter(|s| !s.is_empty()) {
        let (name, number) = item.rsplit_once(':').ok_or_else(|| format!("`{item}`: expected name:number"))?;
        let number = number.parse().map_err(|_| format!("`{item}`: `{number}` is not a whole number"))?;
        if name.is_empty() || map.insert(name.to_string(), number).is_some() {
            return Err(format!("`{item}`: an empty or repeated name"));
        }
    }
    Ok(map)
}

/// The spec's name: `slurm` with every parameter given a value other than its default, in
/// key order, so that two specs of one configuration have one name.
pub fn canonical_name(params: &Params) -> String {
    let mut given: Vec<String> = PARAMS
        .iter()
        .filter_map(|p| {
            let value = params.get::<String>(p.key).ok()?;
            (value != p.default).then(|| format!("{}={value}", p.key))
        })
        .collect();
    given.sort();
    if given.is_empty() { "slurm".to_string() } else { format!("slurm[{}]", given.join(",")) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_numbers_are_read_and_bad_ones_named() {
        let map = named_numbers("main:1/urgent:4").unwrap();
        assert_eq!(map.into_iter().collect::<Vec<_>>(), [("main".to_string(), 1), ("urgent".to_string(), 4)]);
        assert!(named_numbers("").unwrap().is_empty());
        assert_eq!(named_numbers("main").unwrap_err(), "`main`: expected name:number");
        assert_eq!(named_numbers("main:x").unwrap_err(), "`main:x`: `x` is not a whole number");
        assert_eq!(named_numbers("a:1/a:2").unwrap_err(), "`a:2`: an empty or repeated name");
    }
}
