//! Builds a policy from its spec, `name[key=value,...]`, and lists what exists.

use crate::params::{ParamInfo, Params, SpecError, split_spec};
use crate::{
    critical_path, drf, easy_backfill, fair_share, fifo, priority, sjf, srtf, themis, tiresias, weighted_score,
};
use sim::Policy;

/// One policy as `schedlab policies` lists it.
#[derive(Debug, Clone, Copy)]
pub struct PolicyInfo {
    pub name: &'static str,
    pub summary: &'static str,
    pub params: &'static [ParamInfo],
    build: fn(&Params) -> Result<Box<dyn Policy + Send>, SpecError>,
}

pub const POLICIES: &[PolicyInfo] = &[
    PolicyInfo {
        name: "fifo",
        summary: "first in, first out; strict head-of-line unless skip=true",
        params: fifo::PARAMS,
        build: |p| Ok(Box::new(fifo::Fifo::new(p)?)),
    },
    PolicyInfo {
        name: "sjf",
        summary: "shortest job first, non-preemptive",
        params: sjf::PARAMS,
        build: |p| Ok(Box::new(sjf::Sjf::new(p)?)),
    },
    PolicyInfo {
        name: "srtf",
        summary: "shortest remaining time first, preemptive",
        params: srtf::PARAMS,
        build: |p| Ok(Box::new(srtf::Srtf::new(p)?)),
    },
    PolicyInfo {
        name: "easy-backfill",
        summary: "fifo with a reservation for the blocked head; later tasks start if they do not delay it",
        params: easy_backfill::PARAMS,
        build: |p| Ok(Box::new(easy_backfill::EasyBackfill::new(p)?)),
    },
    PolicyInfo {
        name: "fair-share",
        summary: "weighted fair share across queues: the queue with the fewest allocated GPUs per weight starts next",
        params: fair_share::PARAMS,
        build: |p| Ok(Box::new(fair_share::FairShare::new(p)?)),
    },
    PolicyInfo {
        name: "drf",
        summary: "dominant resource fairness across queues, GPUs of each pool as resources (Ghodsi et al. 2011)",
        params: drf::PARAMS,
        build: |p| Ok(Box::new(drf::Drf::new(p)?)),
    },
    PolicyInfo {
        name: "critical-path",
        summary: "DAG-aware: zero-slack tasks first, then the longest remaining path; non-preemptive",
        params: critical_path::PARAMS,
        build: |p| Ok(Box::new(critical_path::CriticalPath::new(p)?)),
    },
    PolicyInfo {
        name: "tiresias",
        summary: "Tiresias (NSDI'19): discretised 2D least attained service (or Gittins), preemptive",
        params: tiresias::PARAMS,
        build: |p| Ok(Box::new(tiresias::Tiresias::new(p)?)),
    },
    PolicyInfo {
        name: "themis",
        summary: "Themis (NSDI'20) finish-time fairness: largest rho = T_shared / T_id first, preempting per lease",
        params: themis::PARAMS,
        build: |p| Ok(Box::new(themis::Themis::new(p)?)),
    },
    PolicyInfo {
        name: "priority",
        summary: "strict job priority; a waiting task preempts lower-priority tasks, least work lost first",
        params: priority::PARAMS,
        build: |p| Ok(Box::new(priority::Priority::new(p)?)),
    },
    PolicyInfo {
        name: "weighted-score",
        summary: "score = w_p x priority + w_d x locality + w_w x waiting s (aging), strict, non-preemptive",
        params: weighted_score::PARAMS,
        build: |p| Ok(Box::new(weighted_score::WeightedScore::new(p)?)),
    },
];

/// Deliberately bad variants that `build` accepts but `POLICIES` (and so `schedlab policies`
/// and the policy property tests) leave out: test aids, not policies anyone should run.
const TEST_AIDS: &[PolicyInfo] = &[PolicyInfo {
    name: "fifo-idle",
    summary: "test aid for CI regression: fifo that leaves GPUs idle on every N-th decision point",
    params: fifo::IDLE_PARAMS,
    build: |p| Ok(Box::new(fifo::Fifo::idling(p)?)),
}];

/// Builds the policy `spec` names, e.g. `sjf[duration=estimate,placement=spread]`.
pub fn build(spec: &str) -> Result<Box<dyn Policy + Send>, SpecError> {
    let (name, values) = split_spec(spec)?;
    let info = POLICIES.iter().chain(TEST_AIDS).find(|p| p.name == name).ok_or_else(|| {
        let valid: Vec<&str> = POLICIES.iter().map(|p| p.name).collect();
        let aids: Vec<&str> = TEST_AIDS.iter().map(|p| p.name).collect();
        SpecError(format!(
            "unknown policy `{name}`; valid policies: {} (test aids: {})",
            valid.join(", "),
            aids.join(", ")
        ))
    })?;
    (info.build)(&Params::new(info.name, values, info.params)?)
}
