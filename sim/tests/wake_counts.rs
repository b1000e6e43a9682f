//! Wake-ups: a policy that asks for the same time at every decision (as `slurm` asks for its
//! next pass) is woken once then, and every asking still counts as an event applied.

use sim::{Cluster, ClusterSpec, GpuId, Plan, Policy, PoolSpec, Scenario, SimDuration, SimTime};

/// Starts task `i` on GPU `i` when it is ready; before `WAKE`, asks at every decision to be
/// woken then; notes the times it decides at.
#[derive(Default)]
struct AsksAgain {
    decided_at: Vec<SimTime>,
}

const WAKE: SimTime = SimTime(500_000);

impl Policy for AsksAgain {
    fn name(&self) -> &str {
        "asks-again"
    }

    fn decide(&mut self, view: &sim::ClusterView<'_>, plan: &mut Plan<'_>) {
        self.decided_at.push(view.now());
        for change in view.changes() {
            if let sim::Change::TaskReady(t) = *change {
                plan.start(t, &[GpuId(t.0)]).expect("its own GPU is free");
            }
        }
        if view.now() < WAKE {
            plan.wake_at(WAKE).expect("in the future");
        }
    }
}

/// Ten one-GPU jobs submitted at 1..=10 s, each running 1,000 s on its own GPU: the policy
/// asks ten times for 500 s, and is woken there once.
#[test]
fn a_time_asked_for_again_and_again_wakes_once_and_counts_each_asking() {
    let pool = PoolSpec {
        name: "A".into(),
        gpu_type: "A".into(),
        nodes: 10,
        gpus_per_node: 1,
        nodes_per_rack: 0,
        speed_milli: 1000,
    };
    let cluster = Cluster::new(&ClusterSpec { pools: vec![pool] }).unwrap();
    let jobs = (1..=10u64)
        .map(|i| sim::JobSpec::single(format!("j{i}"), SimTime::from_secs(i), 1, SimDuration::from_secs(1_000)))
        .collect();
    let scenario = Scenario::new(cluster, sim::Workload::new(jobs).unwrap());
    let mut policy = AsksAgain::default();
    let result = sim::simulate(scenario, &mut policy, sim::ControllerConfig::default()).unwrap();
    let secs = |s: &[u64]| s.iter().map(|&s| SimTime::from_secs(s)).collect::<Vec<_>>();
    let expected: Vec<SimTime> = secs(&(1..=10).collect::<Vec<_>>())
        .into_iter()
        .chain([WAKE])
        .chain(secs(&(1_001..=1_010).collect::<Vec<_>>()))
        .collect();
    assert_eq!(policy.decided_at, expected, "one decision at the time asked for, not one an asking");
    // 10 arrivals, 10 completions and the 10 askings for 500 s.
    assert_eq!(result.stats.events, 30);
    assert_eq!(result.stats.decision_points, 21);
}
