//! The Controller's side of the release latency (the queue of releases is `release.rs`'s):
//! GPUs held back when a task lets go of them, and returned to the free pool when due, if
//! the scheduler may use them then.

use super::Controller;
use crate::alloc::WHOLE_GPU_MILLI;
use crate::deps::Timer;
use crate::ids::GpuId;

impl Controller {
    /// Holds back `gpus` (whole, or `milli` of each) that a task let go of now, when the run
    /// has a release latency. False (nothing held) when it has none: they return at once.
    pub(crate) fn hold_back(&mut self, gpus: &[GpuId], milli: u32) -> bool {
        let Some((at, ask)) = self.releases.hold_back(self.now, gpus, milli) else { return false };
        if ask {
            self.timers.push((at, Timer::Release));
        }
        true
    }

    /// Returns every GPU (or share) whose release is due, those the scheduler may use to the
    /// free pool. Whether anything came back.
    pub(crate) fn release_due(&mut self) -> bool {
        let mut changed = false;
        while let Some((gpu, milli)) = self.releases.pop_due(self.now) {
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
