//! Release latency (`ControllerConfig::release_latency`): the GPUs a task lets go of when its
//! attempt ends (it succeeds, fails, is cancelled, or its hardware fails under it) return to
//! the free pool only this long after, as a Slurm node's GPUs do once the job's `COMPLETING`
//! state (its end reported, its epilogue run) is over, or a Kubernetes pod's once it has
//! terminated. Meanwhile nobody may use them: they are neither free nor held by a task, and the
//! scheduler sees them as busy. A preemption hands its victims' GPUs to the preempting plan at
//! once (the plan starts its task on them; what a restart costs is the restart overhead's).
//!
//! The latency is the same for every release, so releases fall due in the order they were
//! made: a queue, not a heap. The Controller asks for a `Timer::Release` at each due time and
//! returns everything due when it fires (`controller/release.rs`): [`Releases`] keeps the queue
//! and each GPU's milli-GPUs in it, the one always the sum of the other.

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

    /// Holds back `gpus` (whole, or `milli` of each) let go of at `now`. `None` (nothing held)
    /// when the run has no latency; otherwise when they fall due, and whether a timer must
    /// be asked for then (releases fall due in order: one timer serves all due at one time).
    pub(crate) fn hold_back(&mut self, now: SimTime, gpus: &[GpuId], milli: u32) -> Option<(SimTime, bool)> {
        if self.latency == SimDuration::ZERO {
            return None;
        }
        let at = now + self.latency;
        let timer_set = self.due.back().is_some_and(|&(due, ..)| due == at);
        for &gpu in gpus {
            self.pending[gpu.index()] += milli;
            self.due.push_back((at, gpu, milli));
        }
        Some((at, !gpus.is_empty() && !timer_set))
    }

    /// The next release due by `now`, taken off the queue: (GPU, milli-GPUs).
    pub(crate) fn pop_due(&mut self, now: SimTime) -> Option<(GpuId, u32)> {
        let &(_, gpu, milli) = self.due.front().filter(|(at, ..)| *at <= now)?;
        self.due.pop_front();
        self.pending[gpu.index()] -= milli;
        Some((gpu, milli))
    }

    /// Each GPU's pending milli-GPUs equal the sum of its releases queued, and the queue is
    /// in due order.
    pub(crate) fn check(&self) -> Result<(), String> {
        let mut pending = vec![0u32; self.pending.len()];
        for &(_, gpu, milli) in &self.due {
            pending[gpu.index()] += milli;
        }
        if pending != self.pending {
            return Err("GPUs' pending releases differ from the queue of releases".into());
        }
        if self.due.iter().zip(self.due.iter().skip(1)).any(|(a, b)| a.0 > b.0) {
            return Err("the queue of releases is out of due order".into());
        }
        Ok(())
    }
}
