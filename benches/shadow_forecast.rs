//! What one forecast of shadow mode costs (issue 34: under 1 s for 10,000 pending jobs on
//! 2,000 nodes, under any built-in policy, cheap enough to refresh every scheduling cycle).
//!
//! `cargo bench --bench shadow_forecast` builds a partition's state as Slurm would report it
//! (`live::slurm::shadow::Mirror`): 2,000 nodes of 8 GPUs, 90 % of the GPUs held by running
//! jobs (1 to 8 GPUs on one node, or two whole nodes) with limits of 10 to 120 minutes, and
//! 10,000 pending jobs of the same shapes submitted over the last hour. Each sample is one
//! `shadow::forecast` from that state under one built-in policy: the simulation forward from
//! now (the running jobs pinned where they run, until their limits end; the pending ones run
//! for their limits). Building the state is outside the timed part.
//!
//! `SCHEDLAB_SHADOW_NODES` and `SCHEDLAB_SHADOW_PENDING` scale it down for a quicker look;
//! `cargo bench --bench shadow_forecast -- slurm` runs one policy.

use live::slurm::report::SlurmJob;
use live::slurm::shadow::{Mirror, forecast};
use run::RunSpec;
use std::collections::BTreeSet;

/// 2,000 nodes and 10,000 pending jobs unless the environment says otherwise.
fn scale() -> (u32, u64) {
    let read = |key: &str, default: u64| std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    (read("SCHEDLAB_SHADOW_NODES", 2000) as u32, read("SCHEDLAB_SHADOW_PENDING", 10_000))
}
const NOW: u64 = 1_800_000_000;

fn main() {
    divan::main();
}

/// A fixed stream of draws (splitmix64): the same state every run.
struct Draws(u64);

impl Draws {
    fn random_range(&mut self, range: impl std::ops::RangeBounds<u64>) -> u64 {
        use std::ops::Bound::*;
        let lo = match range.start_bound() {
            Included(&a) => a,
            Excluded(&a) => a + 1,
            Unbounded => 0,
        };
        let hi = match range.end_bound() {
            Included(&b) => b + 1,
            Excluded(&b) => b,
            Unbounded => u64::MAX,
        };
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        lo + (z ^ (z >> 31)) % (hi - lo)
    }
}

fn job(id: u64, gpus: u32, minutes: u64, submit: u64, on: Option<(String, u64)>) -> SlurmJob {
    let (nodes, per_node) = if gpus > 8 { (2, 8) } else { (1, gpus) };
    let (state, where_, start) = match on {
        Some((nodes, start)) => ("RUNNING", nodes, start),
        None => ("PENDING", String::new(), 0),
    };
    serde_json::from_value(serde_json::json!({
        "job_id": id, "job_state": state, "state_reason": "Priority", "priority": 1, "node_count": nodes,
        "tres_per_node": format!("gres:gpu:{per_node}"), "time_limit": minutes, "submit_time": submit,
        "start_time": start, "nodes": where_,
    }))
    .expect("a job")
}

/// The partition: running jobs packed onto the nodes in order until 90 % of the GPUs are
/// held, then the pending queue.
fn state() -> (Mirror, sim::ClusterSpec, Vec<String>) {
    let (nodes, pending) = scale();
    let mut rng = Draws(34);
    let shapes = [1, 1, 2, 4, 8, 8, 16];
    let names: Vec<String> = (1..=nodes).map(|n| format!("n{n}")).collect();
    let mut free = vec![8u32; nodes as usize];
    let mut jobs = Vec::new();
    let mut id = 1;
    let mut node = 0usize;
    let target = (nodes * 8) as f64 * 0.9;
    let mut held = 0.0;
    while held < target && node + 1 < nodes as usize {
        let gpus = shapes[rng.random_range(0..shapes.len() as u64) as usize];
        let minutes = rng.random_range(10..=120);
        let start = NOW - rng.random_range(0..minutes * 60);
        let on = if gpus > 8 {
            node += usize::from(free[node] < 8);
            let list = format!("{},{}", names[node], names[node + 1]);
            free[node] = 0;
            free[node + 1] = 0;
            node += 2;
            list
        } else {
            if free[node] < gpus {
                node += 1;
            }
            free[node] -= gpus;
            names[node].clone()
        };
        jobs.push(job(id, gpus, minutes, start - 60, Some((on, start))));
        held += gpus as f64;
        id += 1;
    }
    for _ in 0..pending {
        let gpus = shapes[rng.random_range(0..shapes.len() as u64) as usize];
        jobs.push(job(id, gpus, rng.random_range(10..=120), NOW - rng.random_range(0..3600), None));
        id += 1;
    }
    let mut mirror = Mirror::new(NOW - 3600);
    mirror.update(&jobs);
    let cluster = traces::parse_cluster_shorthand(&format!("{nodes}x8:gpu")).expect("a cluster");
    (mirror, cluster, names)
}

#[divan::bench(
    args = [
        "fifo",
        "sjf[duration=estimate]",
        "srtf[duration=estimate]",
        "easy-backfill[duration=estimate]",
        "slurm",
        "fair-share",
        "drf",
        "critical-path[duration=estimate]",
        "tiresias",
        "themis[duration=estimate]",
        "priority",
        "weighted-score",
    ],
    sample_count = 3,
    sample_size = 1
)]
fn forecast_10k_pending_2000_nodes(bencher: divan::Bencher, policy: &str) {
    let (mirror, cluster, names) = state();
    let run = RunSpec { policy: policy.parse().expect("a policy spec"), ..RunSpec::default() };
    let registry = policies::Registry::builtin();
    bencher.bench_local(|| {
        let f = forecast(&mirror, &cluster, &names, &BTreeSet::new(), NOW, &run, &registry).expect("a forecast");
        assert_eq!(f.jobs.len() as u64, scale().1);
        f
    });
}
