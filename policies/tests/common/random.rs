//! Random clusters and task fields shared by the property tests.

#![allow(dead_code)]

use proptest::prelude::*;
use sim::{Cluster, ClusterSpec, PoolSpec};

#[derive(Debug, Clone)]
pub struct PoolDesc {
    pub nodes: u32,
    pub gpus_per_node: u32,
    pub gpu_type: &'static str,
}

/// 1..=`max_pools` pools of 1..=`max_nodes` nodes with 1..=8 GPUs, of type A or B.
pub fn arb_pools(max_nodes: u32, max_pools: usize) -> impl Strategy<Value = Vec<PoolDesc>> {
    let pool = (1u32..=max_nodes, 1u32..=8, prop::sample::select(&["A", "B"][..]))
        .prop_map(|(nodes, gpus_per_node, gpu_type)| PoolDesc { nodes, gpus_per_node, gpu_type });
    prop::collection::vec(pool, 1..=max_pools)
}

pub fn build_cluster(pools: &[PoolDesc]) -> Cluster {
    let pools = pools
        .iter()
        .enumerate()
        .map(|(i, p)| PoolSpec {
            name: format!("p{i}"),
            gpu_type: p.gpu_type.to_string(),
            nodes: p.nodes,
            gpus_per_node: p.gpus_per_node,
            nodes_per_rack: 0,
            speed_milli: 1000,
        })
        .collect();
    Cluster::new(&ClusterSpec { pools }).expect("valid random cluster")
}

/// GPU counts skewed to 1, as in the real traces.
pub fn arb_gpus() -> impl Strategy<Value = u32> {
    prop_oneof![10 => Just(1u32), 3 => Just(2), 1 => Just(3), 2 => Just(4), 2 => Just(8), 1 => Just(16)]
}

/// Mostly untyped; types compare case-insensitively (`b` is pool type `B`); `C` never exists.
pub fn arb_gpu_type() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        8 => Just(None),
        2 => Just(Some("A".to_string())),
        2 => Just(Some("b".to_string())),
        1 => Just(Some("C".to_string())),
    ]
}

/// Whole seconds from 1 s to `max_s`, plus ms-granular odd values (some below a second).
pub fn arb_work_ms(max_s: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        6 => (1u64..=max_s).prop_map(|s| s * 1000),
        2 => 1_000u64..=max_s * 1000,
        1 => 1u64..=999,
    ]
}

/// Many exact ties: a few fixed instants, a 30 s grid of `grid_steps` steps, some arbitrary ms.
pub fn arb_submit_ms(fixed: &'static [u64], grid_steps: u64) -> impl Strategy<Value = u64> {
    prop_oneof![
        3 => prop::sample::select(fixed),
        3 => (0u64..=grid_steps).prop_map(|k| k * 30_000),
        1 => 0u64..=7_200_000,
    ]
}
