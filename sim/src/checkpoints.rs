//! The clock of one attempt: how its wall time turns into work when writing a checkpoint
//! costs time. Checkpoints are synchronous: each time the work reaches a multiple of the
//! task's interval (its end excepted) progress pauses for `checkpoint_cost` while the
//! checkpoint is written, and the checkpoint counts (survives a failure) only once written.
//! With no cost, or continuous checkpoints (interval 0), there is no pause and this is the
//! plain conversion at the pool's speed (`TaskState::wall_for`, `work_in`).

use crate::state::TaskState;
use crate::time::SimDuration;

/// Where an attempt is after some progress wall time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    /// Work done since the task began (all attempts), and of it the part checkpointed.
    pub done: SimDuration,
    pub saved: SimDuration,
    /// Wall time of this attempt spent writing checkpoints, the unfinished one included.
    pub checkpointing: SimDuration,
}

impl TaskState {
    /// Whether checkpoints of this task pause its progress.
    #[inline]
    pub(crate) fn pauses(&self) -> bool {
        self.checkpoint_cost > SimDuration::ZERO && self.checkpoint > SimDuration::ZERO
    }

    /// Work done when the current attempt started.
    fn attempt_start(&self) -> SimDuration {
        self.work - self.remaining
    }

    /// Of the work checkpointed at `at` (this task's progress now), what the current attempt
    /// saved: what preempting it would keep of the attempt.
    pub fn saved_this_attempt(&self, at: Progress) -> SimDuration {
        at.saved - self.attempt_start()
    }

    /// The current attempt's checkpoints before work point `x` (work since the task began,
    /// exclusive): interval multiples after where the attempt started, the task's end excepted.
    pub fn checkpoints_before(&self, x: SimDuration) -> u64 {
        if !self.pauses() {
            return 0;
        }
        let c = self.checkpoint.as_ms();
        let end = x.min(self.work).as_ms();
        end.div_ceil(c).saturating_sub(1).saturating_sub(self.attempt_start().as_ms() / c)
    }

    /// Progress wall time the current attempt takes to reach work point `x` (work since the
    /// task began), the checkpoints written on the way included.
    #[inline]
    pub fn wall_to(&self, x: SimDuration) -> SimDuration {
        let work = x.saturating_sub(self.attempt_start());
        self.wall_for(work) + SimDuration(self.checkpoints_before(x) * self.checkpoint_cost.as_ms())
    }

    /// Where the current attempt is after `wall` of progress (restart overhead and stalls
    /// excluded), at most its whole remaining work. O(log checkpoints); free checkpoints (the
    /// common case, on every policy's hot path) inline to the plain conversion.
    #[inline]
    pub fn progress_after(&self, wall: SimDuration) -> Progress {
        if !self.pauses() {
            let done = self.attempt_start() + self.work_in(wall);
            return Progress { done, saved: self.saved(done), checkpointing: SimDuration::ZERO };
        }
        self.progress_with_pauses(wall)
    }

    fn progress_with_pauses(&self, wall: SimDuration) -> Progress {
        let start = self.attempt_start();
        let (c, k) = (self.checkpoint.as_ms(), self.checkpoint_cost.as_ms());
        let first = start.as_ms() / c;
        let boundary = |j: u64| SimDuration((first + j) * c);
        let written_by = |j: u64| self.wall_for(boundary(j) - start) + SimDuration(j * k);
        // The checkpoints written by `wall`: the largest j with written_by(j) <= wall.
        let (mut lo, mut hi) = (0, self.checkpoints_before(self.work));
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if written_by(mid) <= wall { lo = mid } else { hi = mid - 1 }
        }
        let j = lo;
        let running = wall - SimDuration(j * k);
        let next = (j < self.checkpoints_before(self.work)).then(|| boundary(j + 1) - start);
        let work = next.map_or(self.work_in(running), |n| self.work_in(running).min(n));
        let writing = next.map_or(SimDuration::ZERO, |n| running.saturating_sub(self.wall_for(n)));
        let done = start + work;
        let saved = if done == self.work {
            done
        } else if j == 0 {
            start
        } else {
            boundary(j)
        };
        Progress { done, saved, checkpointing: SimDuration(j * k) + writing }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::ids::JobId;

    /// 10,000 s of work at speed 1, checkpoints every 1,000 s costing 60 s, from `done_s`.
    pub(crate) fn task(done_s: u64) -> TaskState {
        let cluster = crate::Cluster::new(&crate::ClusterSpec {
            pools: vec![crate::PoolSpec {
                name: "A".into(),
                gpu_type: "A".into(),
                nodes: 1,
                gpus_per_node: 8,
                nodes_per_rack: 0,
                speed_milli: 1000,
            }],
        })
        .expect("valid");
        let spec = crate::TaskSpec::new("t", 8, SimDuration::from_secs(10_000));
        let config = crate::ControllerConfig::default();
        let mut t = crate::controller::new_task_state(&spec, JobId(0), &cluster, &config, &mut Default::default());
        t.checkpoint = SimDuration::from_secs(1_000);
        t.checkpoint_cost = SimDuration::from_secs(60);
        t.remaining = SimDuration::from_secs(10_000 - done_s);
        t
    }

    fn s(secs: u64) -> SimDuration {
        SimDuration::from_secs(secs)
    }

    #[test]
    fn nine_checkpoints_pause_a_fresh_attempt() {
        let t = task(0);
        assert_eq!(t.checkpoints_before(t.work), 9);
        assert_eq!(t.wall_to(t.work), s(10_000 + 9 * 60));
        assert_eq!(t.wall_to(s(2_500)), s(2_500 + 2 * 60));
        // Before the first checkpoint, nothing is saved.
        assert_eq!(t.progress_after(s(999)), Progress { done: s(999), saved: s(0), checkpointing: s(0) });
        // Writing the first: work stands at 1,000 s, not yet saved.
        assert_eq!(t.progress_after(s(1_030)), Progress { done: s(1_000), saved: s(0), checkpointing: s(30) });
        // Written at 1,060 s.
        assert_eq!(t.progress_after(s(1_060)), Progress { done: s(1_000), saved: s(1_000), checkpointing: s(60) });
        assert_eq!(t.progress_after(s(2_620)), Progress { done: s(2_500), saved: s(2_000), checkpointing: s(120) });
        let end = t.progress_after(s(10_540));
        assert_eq!(end, Progress { done: s(10_000), saved: s(10_000), checkpointing: s(540) });
        assert_eq!(t.progress_after(s(99_999)), end);
    }

    #[test]
    fn a_resumed_attempt_counts_from_its_checkpoint() {
        let t = task(3_000);
        assert_eq!(t.checkpoints_before(t.work), 6);
        assert_eq!(t.progress_after(s(1_500)), Progress { done: s(4_440), saved: s(4_000), checkpointing: s(60) });
        let mut free = task(0);
        free.checkpoint_cost = SimDuration::ZERO;
        assert_eq!(free.progress_after(s(2_500)), Progress { done: s(2_500), saved: s(2_000), checkpointing: s(0) });
        assert_eq!(free.wall_to(free.work), s(10_000));
    }
}
