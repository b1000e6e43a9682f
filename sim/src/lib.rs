//! schedlab's scheduling core. Integer time, the cluster and job model, the one
//! [`Policy`] contract, the [`Controller`] that applies events and commits validated plans,
//! and the virtual-time engine. No IO, no clock, no threads: see ARCHITECTURE.md.

pub mod cluster;
pub mod digest;
pub mod ids;
pub mod rng;
pub mod time;
pub mod workload;

pub use cluster::{Cluster, ClusterError, ClusterSpec, Node, Pool, PoolSpec};
pub use ids::{GpuId, JobId, NodeId, PoolId, TaskId};
pub use time::{SimDuration, SimTime};
pub use workload::{JobSpec, TaskSpec, Workload, WorkloadError};
