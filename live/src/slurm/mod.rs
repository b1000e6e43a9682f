//! The Slurm executor (`live serve --executor slurm`): Slurm launches, schedlab decides.
//!
//! Jobs of one partition enter Slurm held (`live/slurm/job_submit.lua`). The coordinator runs
//! the same engine, Controller and policy as with its own agents; instead of agents, this
//! executor reads Slurm every poll (`squeue --json`, `sinfo --json`) into the batch's inputs
//! and carries out the engine's decisions with `scontrol` (a start: pin the job to the chosen
//! nodes and release it; a preemption: requeue it held). See docs/slurm-executor.md.
//!
//! Here: [`report`] (what Slurm reports, checked), [`mapping`] (nodes as a cluster, jobs as
//! submissions), [`ctl`] (the commands, behind a trait) and [`executor`] (the two steps
//! around each batch, and the run records that fence them).

pub mod ctl;
pub mod executor;
pub mod forecaster;
pub mod mapping;
pub mod report;
pub mod shadow;

pub use ctl::{Commands, Slurm};
pub use executor::{SlurmExecutor, SlurmOptions};

#[cfg(test)]
mod tests;
