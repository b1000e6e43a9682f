//! schedlab's scheduling policies, one file each, the kit they are written with, and the
//! registry that builds them from `name[key=value,...]`. Every policy implements
//! `sim::Policy` and nothing else: it cannot tell simulation from live mode.
//!
//! A policy outside this crate is written with the same kit the built-ins use (see
//! `docs/writing-a-policy.md`):
//! - [`tracking`]: follow the view's changes into a waiting queue, start a task where its
//!   placement puts it, within its queue's quota;
//! - [`wait_queue`]: waiting tasks in the policy's order, indexed by shape;
//! - [`running`]: running tasks per pool by expected end (for preemption and reservations);
//! - [`placement`]: which GPUs a gang gets (`pack`, `spread`, `fastest`, `local`);
//! - [`quota`]: reclaiming GPUs other queues borrowed;
//! - [`params`]: reading a policy's parameters strictly;
//! - [`PolicySpec`] and [`Registry`]: specs and the policies a program can run.

#![deny(missing_docs)]

mod critical_path;
mod drf;
mod easy_backfill;
mod fair_share;
mod fifo;
mod heads;
mod id_list;
mod id_set;
mod id_table;
mod lazy_heap;
mod lazy_sorted;
pub mod params;
pub mod placement;
mod priority;
pub mod queue_share;
pub mod quota;
mod ranked_queue;
mod reason;
mod registry;
pub mod running;
mod shape_tasks;
mod sjf;
mod slurm;
mod spec;
mod srtf;
mod themis;
mod tiresias;
pub mod tracking;
pub mod wait_queue;
mod weighted_score;

/// Numbers for the unit tests that check a structure against the naive order on random input:
/// a small linear congruential generator from `seed`, so the tests need no crate and draw the
/// same numbers on every machine.
#[cfg(test)]
pub(crate) fn test_numbers(mut seed: u64) -> impl FnMut() -> u64 {
    move || {
        seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        seed >> 33
    }
}

pub use params::{ParamInfo, Params, SpecError};
pub use placement::{GpuList, Placement, Placer, Shape};
pub use registry::{Constructor, POLICIES, PolicyInfo, Registry, build};
pub use spec::PolicySpec;

/// The parameters of `spec` (`name[key=value,...]`) as the registry reads them, defaults
/// included: what a unit test gives a policy's constructor.
#[cfg(test)]
pub(crate) fn params_of(spec: &str) -> params::Params {
    let spec: spec::PolicySpec = spec.parse().expect("a valid policy spec");
    let registry = Registry::builtin();
    let info = registry.find(spec.name()).expect("a built-in policy");
    params::Params::new(&info.name, spec.params().clone(), info.declared.then_some(info.params))
        .expect("valid parameters")
}

/// A small run whose jobs all end, for tests of what a policy holds once they have: 60 jobs of
/// 1 to 4 GPUs on 8 GPUs, arriving faster than they run, some a hundred times longer than the
/// others (so that they wait, run, are preempted and are promoted), some of two dependent
/// tasks. Returns the policy after the run.
#[cfg(test)]
pub(crate) fn run_to_the_end<P: sim::Policy>(mut policy: P) -> P {
    use sim::{
        Cluster, ClusterSpec, ControllerConfig, DepKind, Dependency, JobSpec, PoolSpec, Scenario, SimDuration, SimTime,
        Workload,
    };
    let pool = PoolSpec {
        name: "V100".into(),
        gpu_type: "V100".into(),
        nodes: 2,
        gpus_per_node: 4,
        nodes_per_rack: 0,
        speed_milli: 1000,
    };
    let cluster = Cluster::new(&ClusterSpec { pools: vec![pool] }).expect("a valid cluster");
    let jobs = (0..60u64)
        .map(|i| {
            let work = SimDuration::from_secs(if i % 7 == 0 { 30_000 } else { 300 + 10 * i });
            let mut job = JobSpec::single(format!("j{i}"), SimTime::from_secs(60 * i), 1 + (i % 4) as u32, work);
            job.tasks[0].estimate = work.into();
            if i % 5 == 0 {
                let mut second = job.tasks[0].clone();
                second.name = "1".into();
                second.deps = [Dependency { upstream: 0, kind: DepKind::Success }].into_iter().collect();
                job.tasks.push(second);
            }
            job
        })
        .collect();
    let scenario = Scenario::new(cluster, Workload::new(jobs).expect("a valid workload"));
    let result = sim::simulate(scenario, &mut policy, ControllerConfig::default()).expect("the run");
    assert!(result.jobs.iter().all(|j| j.end.is_some()), "every job ended");
    policy
}
