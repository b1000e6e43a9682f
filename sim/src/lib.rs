//! schedlab's scheduling core. Integer time, the cluster and job model, the one
//! [`Policy`] contract, the [`Controller`] that applies events and commits validated plans,
//! and the virtual-time engine. No IO, no clock, no threads: see ARCHITECTURE.md.

pub mod alloc;
mod arrivals;
mod census;
mod checkpoints;
pub mod cluster;
pub mod controller;
pub mod dag;
pub mod data;
mod deps;
pub mod digest;
pub mod engine;
pub mod event;
pub mod failure;
mod faults;
pub mod gpu_layout;
pub mod hardware;
pub mod health;
pub mod ids;
pub mod job_status;
mod node_bits;
mod observe;
mod occupancy;
pub mod passes;
mod plan;
pub mod policy;
pub mod prefetch;
pub mod quad_heap;
pub mod quota;
pub mod record;
mod release;
pub mod resident;
pub mod rng;
mod scenario;
pub mod series;
pub mod sink;
mod spares;
pub mod speeds;
pub mod state;
pub mod time;
pub mod view;
mod wall;
pub mod workload;

pub use alloc::{FreeGpus, GpuList, WHOLE_GPU_MILLI};
pub use arrivals::{FEED_BATCH, JobFeed};
pub use checkpoints::Progress;
pub use cluster::{Cluster, ClusterError, ClusterSpec, Node, Pool, PoolMask, PoolSpec};
pub use controller::{Controller, ControllerConfig, Effect, RetireRule, SET_ASIDE_AFTER};
pub use data::{Dataset, DatasetSpec, Datasets};
pub use deps::Timer;
pub use engine::{Engine, PROGRESS_EVERY, RunProgress, simulate};
pub use failure::{ClusterEvent, FailureConfig};
pub use hardware::HardwareFeed;
pub use ids::{GpuId, JobId, NodeId, PoolId, TaskId};
pub use job_status::{JobOutcome, JobStatus};
pub use plan::{Decision, Plan, PlanError, Savepoint};
pub use policy::Policy;
pub use quota::{Queue, QueueId, QueueSpec, Queues, QuotaUsage};
pub use record::{DecisionKind, DecisionRecord, HealthSample, JobRecord, RunResult, RunStats, TaskRecord};
pub use scenario::{Scenario, SimError, check_job_checkpoints};
pub use series::{Bucket, QueueBucket, Series};
pub use sink::{Collect, RecordSink};
pub use speeds::SpeedProfiles;
pub use state::{JobState, Losses, OptIndex, TaskState, TaskStatus};
pub use time::{OptDuration, OptMs, OptTime, SimDuration, SimTime};
pub use view::{Change, ClusterView, DurationSource};
pub use workload::{
    CANCELLED_BY_THE_USER, DepKind, Dependency, Deps, JobSpec, Name, Owner, TaskOptions, TaskSpec, Tasks, Window,
    Workload, WorkloadError, WorkloadShape, gpu_share,
};
