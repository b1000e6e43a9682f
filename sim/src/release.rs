//! Release latency (`ControllerConfig::release_latency`): the GPUs a task lets go of when its
//! attempt ends (it succeeds, fails, is cancelled, or its hardware fails under it) return to
//! the free pool only this long after, as a Slurm node's GPUs do once the job's `COMPLETING`
//! state (its end reported, its epilogue run) is over, or a Kubernetes pod's once it has
//! terminated. Meanwhile nobody may use them: they are neither free nor held by a task, and the
//! scheduler sees them as busy. A preemption hands its victims' GPUs to the preempting plan at
//! once (the plan starts its task on them; what a restart costs is the restart overhead's).
//!
//! The latency is the same for every release, so releases fall due in the order they were
//! made: a queue, not a heap. The Controller asks for a [`Timer::Release`] at each due time and
//! returns everything due when it fires.

use crate::alloc::WHOLE_GPU_MILLI;
use crate::controller::Controller;
use crate::deps::Timer;
use crate::ids::GpuId;
use crate::time::{SimDuration, SimTime};
use std::collections::VecDeque;

/// GPUs let go of and not yet back in the free pool.
#[derive(Debug, Default)]
pub(crate) struct Releases {
    latency: SimDuration,
    /// Milli-GPUs waiting to return on each GPU (empty when the latency is zero).
    pending: Vec<u32>,
    /// (when, GPU, milli-GPUs) in the order they were let go of, so in due order.
    due: VecDeque<(SimTime, GpuId, u32)>,
}

impl Releases {
    pub(crate) fn new(latency: SimDuration, gpus: u32) -> Releases {
        let pending = if latency == SimDuration::ZERO { Vec::new() } else { vec![0; gpus as usize] };
        Releases { latency, pending, due: VecDeque::new() }
    }

    /// Milli-GPUs of `gpu` let go of and not yet returned.
    pub(crate) fn pending(&self, gpu: GpuId) -> u32 {
        self.pending.get(gpu.index()).copied().unwrap_or(0)
    }

    pub(crate) fn latency(&self) -> SimDuration {
        self.latency
    }

    /// What returns when: (when, GPU, milli-GPUs), soonest first.
    pub(crate) fn due(&self) -> impl Iterator<Item = (SimTime, GpuId, u32)> + '_ {
        self.due.iter().copied()
    }
}

impl Controller {
    /// Holds back `gpus` (whole, or `milli` of each) that a task let go of now, when the run
    /// has a release latency. False (nothing held) when it has none: they return at once.
    pub(crate) fn hold_back(&mut self, gpus: &[GpuId], milli: u32) -> bool {
        let releases = &mut self.releases;
        if releases.latency == SimDuration::ZERO {
            return false;
        }
        let at = self.now + releases.latency;
        // Releases fall due in order: one timer serves all that fall due at `at`.
        let timer_set = releases.due.back().is_some_and(|&(due, ..)| due == at);
        for &gpu in gpus {
            releases.pending[gpu.index()] += milli;
            releases.due.push_back((at, gpu, milli));
        }
        if !gpus.is_empty() && !timer_set {
            self.timers.push((at, Timer::Release));
        }
        true
    }

    /// Returns every GPU (or share) whose release is due, those the scheduler may use to the
    /// free pool. Whether anything came back.
    pub(crate) fn release_due(&mut self) -> bool {
        let mut changed = false;
        while let Some(&(_, gpu, milli)) = self.releases.due.front().filter(|(at, ..)| *at <= self.now) {
            self.releases.due.pop_front();
            self.releases.pending[gpu.index()] -= milli;
            let usable = self.health.usable(gpu);
            if milli < WHOLE_GPU_MILLI {
                self.free.release_share(gpu, milli, usable);
            } else if usable && self.idle(gpu) {
                self.free.release(self.cluster.node_of(gpu), gpu);
            }
            changed = true;
        }
        changed
    }
}
