//! `Shape::fits` tells exactly whether `Placer::place` finds GPUs: `place_and_start` tests the
//! fit first and skips a placement that could not succeed (a blocked gang is tried at every
//! decision), so the two must agree for every algorithm, with and without nodes to avoid, on
//! every free set a run goes through: whole GPUs, shares, gangs over nodes, fixed GPUs per
//! node, several pools, broken hardware.

mod common;

use common::random::{PoolDesc, arb_gpu_type, arb_gpus, arb_pools, build_cluster};
use common::{gpu_fail, node_fail};
use policies::tracking::{Placed, place_and_start, sync_waiting};
use policies::wait_queue::WaitQueue;
use policies::{Placement, Placer, Shape};
use proptest::prelude::*;
use sim::{ClusterView, ControllerConfig, JobSpec, Plan, Policy, Scenario, SimDuration, SimTime, Workload};
use std::num::NonZeroU32;

/// Starts waiting tasks in FIFO order where they fit (skipping those that do not), after
/// checking, for every waiting task, that each placer places it exactly when its shape fits.
struct Probe {
    waiting: WaitQueue,
    placers: Vec<Placer>,
    checked: usize,
}

impl Probe {
    fn new() -> Probe {
        let kinds = [Placement::Pack, Placement::Spread, Placement::Fastest, Placement::Local];
        let avoid = [SimDuration::ZERO, SimDuration::from_secs(3_600)];
        let placers =
            kinds.iter().flat_map(|&kind| avoid.iter().map(move |&avoid_failed_for| Placer { kind, avoid_failed_for }));
        Probe { waiting: WaitQueue::default(), placers: placers.collect(), checked: 0 }
    }

    fn check_all(&mut self, view: &ClusterView<'_>, plan: &Plan<'_>) {
        for (_, task) in self.waiting.iter() {
            let shape = Shape::of(view.task(task));
            let fits = shape.fits(plan.free());
            for placer in &self.placers {
                let placed = placer.place(shape, view, plan.free());
                assert_eq!(placed.is_some(), fits, "{placer} on t{}: {shape:?}", task.0);
                self.checked += 1;
            }
        }
    }
}

impl Policy for Probe {
    fn name(&self) -> &str {
        "probe"
    }

    fn decide(&mut self, view: &ClusterView<'_>, plan: &mut Plan<'_>) {
        sync_waiting(view, &mut self.waiting, |t| u64::from(t.0));
        self.check_all(view, plan);
        let order: Vec<_> = self.waiting.iter().map(|(_, t)| t).collect();
        for task in order {
            if place_and_start(view, plan, self.placers[0], &mut self.waiting, task) != Placed::NoRoom {
                self.check_all(view, plan);
            }
        }
    }
}

#[derive(Debug, Clone)]
struct TaskCase {
    submit_s: u64,
    gpus: u32,
    work_s: u64,
    gpu_type: Option<String>,
    /// A share of one GPU (`gpus` is then 1).
    milli: Option<u16>,
    /// Whole nodes of this many GPUs each.
    per_node: Option<u32>,
}

fn arb_task() -> impl Strategy<Value = TaskCase> {
    let shape = prop_oneof![
        6 => arb_gpus().prop_map(|g| (g, None, None)),
        2 => (1u16..=999).prop_map(|m| (1, Some(m), None)),
        2 => (1u32..=4, 1u32..=3).prop_map(|(per_node, nodes)| (per_node * nodes, None, Some(per_node))),
    ];
    (0u64..=600, shape, 1u64..=900, arb_gpu_type()).prop_map(|(submit_s, (gpus, milli, per_node), work_s, gpu_type)| {
        TaskCase { submit_s, gpus, work_s, gpu_type, milli, per_node }
    })
}

fn job_of(i: usize, t: &TaskCase) -> JobSpec {
    let mut j =
        JobSpec::single(format!("j{i}"), SimTime::from_secs(t.submit_s), t.gpus, SimDuration::from_secs(t.work_s));
    let spec = &mut j.tasks[0];
    spec.gpu_type = t.gpu_type.as_deref().map(Into::into);
    spec.gpu_milli = t.milli.and_then(|m| sim::gpu_share(u32::from(m)));
    spec.gpus_per_node = t.per_node.and_then(NonZeroU32::new);
    j
}

/// Runs the probe; returns how many placements it compared with the fit (0 if the random
/// workload is not one the simulator accepts, e.g. a task no pool can ever host).
fn run_probe(pools: &[PoolDesc], tasks: &[TaskCase], failures: &[(u32, Option<u32>, u64)]) -> usize {
    let cluster = build_cluster(pools);
    let nodes: u32 = pools.iter().map(|p| p.nodes).sum();
    let jobs: Vec<JobSpec> = tasks.iter().enumerate().map(|(i, t)| job_of(i, t)).collect();
    let Ok(workload) = Workload::new(jobs) else { return 0 };
    let events = failures
        .iter()
        .map(|&(node, slot, at_s)| match slot {
            None => node_fail(node % nodes, at_s, 300),
            Some(slot) => gpu_fail(node % nodes, slot % pools[0].gpus_per_node, at_s, 300),
        })
        .collect();
    let Ok(scenario) = Scenario::new(cluster, workload).with_events(events) else { return 0 };
    let mut probe = Probe::new();
    let config = ControllerConfig { check_invariants: true, ..ControllerConfig::default() };
    match sim::simulate(scenario, &mut probe, config) {
        Ok(_) => probe.checked,
        Err(_) => 0,
    }
}

/// A hand-written case that must compare many placements: the test is not vacuous.
#[test]
fn the_probe_compares_placements() {
    let pools = [
        PoolDesc { nodes: 2, gpus_per_node: 4, gpu_type: "A" },
        PoolDesc { nodes: 3, gpus_per_node: 2, gpu_type: "B" },
    ];
    let task =
        |submit_s, gpus, milli, per_node| TaskCase { submit_s, gpus, work_s: 100, gpu_type: None, milli, per_node };
    let tasks = [
        task(0, 4, None, None),
        task(0, 3, None, None),
        task(0, 1, Some(300), None),
        task(0, 4, None, Some(2)),
        task(5, 6, None, None),
        task(5, 1, Some(800), None),
        task(10, 2, None, Some(1)),
    ];
    assert!(run_probe(&pools, &tasks, &[(0, None, 50), (3, Some(1), 60)]) > 100);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_placement_exists_exactly_when_the_shape_fits(
        pools in arb_pools(4, 2),
        tasks in prop::collection::vec(arb_task(), 1..=24),
        failures in prop::collection::vec((0u32..16, prop::option::of(0u32..8), 0u64..=900), 0..=3),
    ) {
        run_probe(&pools, &tasks, &failures);
    }
}
