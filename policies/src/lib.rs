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
