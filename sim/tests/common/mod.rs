//! What the sim crate's integration tests share.

use sim::{Cluster, ClusterSpec, PoolSpec};

/// One node of two GPUs of type `A`, in pool `A`.
pub fn one_node_of_two_gpus() -> Cluster {
    let pool = PoolSpec {
        name: "A".into(),
        gpu_type: "A".into(),
        nodes: 1,
        gpus_per_node: 2,
        nodes_per_rack: 0,
        speed_milli: 1000,
    };
    Cluster::new(&ClusterSpec { pools: vec![pool] }).unwrap()
}
