//! The cluster's time series: fixed-width buckets of time-averaged levels (allocated, stalled and
//! unusable GPUs, waiting and running tasks, cluster-wide and per queue) and counts of what
//! happened in each bucket (arrivals, completions, failures, GPU-time lost).
//!
//! Levels are step functions; each is integrated exactly (integer level x milliseconds) over
//! the span it held, split at bucket edges. Cluster-wide levels are integrated whenever time
//! advances; per-queue levels only when one of them changes (and once at the end), so a run
//! with many queues pays O(1) per change, not O(queues) per event. The first bucket starts at
//! the first arrival; buckets are `[origin + k * width, origin + (k + 1) * width)`.

use crate::time::{SimDuration, SimTime};
use crate::workload::WorkloadShape;

/// Bucket widths a reader can take in at a glance, in seconds: 1 min up to 1 week.
const NICE_WIDTHS_S: [u64; 16] =
    [60, 120, 300, 600, 900, 1800, 3600, 7200, 10_800, 21_600, 43_200, 86_400, 172_800, 345_600, 604_800, 1_209_600];

/// The smallest nice width giving at most 500 buckets over the workload's submit span, so a
/// chart has enough points and a million-job run stays small.
pub fn auto_width(workload: &WorkloadShape) -> SimDuration {
    let span_ms = workload.submit_span().map_or(0, |(first, last)| last.since(first).as_ms());
    let width_s = NICE_WIDTHS_S.iter().copied().find(|w| span_ms / (w * 1000) < 500).unwrap_or(1_209_600);
    SimDuration::from_secs(width_s)
}

/// Cluster-wide integrals and counts of one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Bucket {
    /// Allocated GPUs, in milli-GPU-milliseconds.
    pub allocated_mgpu_ms: u64,
    /// GPUs held by tasks stalled on broken hardware (no progress), in milli-GPU-ms.
    pub stalled_mgpu_ms: u64,
    /// GPUs the scheduler knows are unusable (failed, on dead nodes), in GPU-ms.
    pub unusable_gpu_ms: u64,
    /// Tasks waiting for GPUs (ready, preempted, retrying), in task-ms.
    pub waiting_task_ms: u64,
    pub running_task_ms: u64,
    pub arrivals: u64,
    pub completions: u64,
    /// Hardware failures (GPU or node) that happened in the bucket.
    pub failures: u64,
    /// GPU-time lost (redone work, detection lag, restart overhead) by attempts that ended in
    /// the bucket, in milli-GPU-ms.
    pub lost_mgpu_ms: u64,
}

/// Per-queue integrals of one bucket.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueBucket {
    pub allocated_mgpu_ms: u64,
    pub waiting_task_ms: u64,
    pub running_task_ms: u64,
}

/// A queue's levels and the time since which they held.
#[derive(Debug, Clone, Copy, Default)]
struct QueueLevels {
    allocated_mgpus: u64,
    waiting: u64,
    running: u64,
    since: SimTime,
}

impl QueueLevels {
    /// A queue that holds all of the cluster's tasks (a lone queue): its levels are `cluster`'s.
    fn all_of(cluster: &Levels, since: SimTime) -> QueueLevels {
        QueueLevels {
            allocated_mgpus: cluster.allocated_mgpus,
            waiting: cluster.waiting,
            running: cluster.running,
            since,
        }
    }
    /// No task waiting or running, nothing allocated: nothing to integrate.
    fn idle(&self) -> bool {
        self.allocated_mgpus == 0 && self.waiting == 0 && self.running == 0
    }
}

/// A bucket's index and span `[start, end)`; empty (`start == end`) before the first lookup.
#[derive(Debug, Clone, Copy, Default)]
struct Current {
    index: usize,
    start: SimTime,
    end: SimTime,
}

impl Current {
    fn holds(&self, t: SimTime) -> bool {
        self.start <= t && t < self.end
    }

    /// Whether `[from, to)` lies within the bucket (`to` may be its end).
    fn spans(&self, from: SimTime, to: SimTime) -> bool {
        self.start <= from && to <= self.end
    }
}

/// Cluster-wide levels, set by the Controller as they change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Levels {
    pub allocated_mgpus: u64,
    pub stalled_mgpus: u64,
    pub unusable_gpus: u64,
    pub waiting: u64,
    pub running: u64,
}

/// What a level change is, for one queue.
#[derive(Debug, Clone, Copy)]
pub(crate) enum QueueDelta {
    Waiting(i64),
    Running { tasks: i64, mgpus: i64 },
}

#[derive(Debug, Clone)]
pub struct Series {
    width: SimDuration,
    origin: Option<SimTime>,
    /// Until when the cluster-wide levels are integrated.
    integrated_to: SimTime,
    /// Queue names (index 0 is "-": jobs without a queue), sorted after it; names that join
    /// later (`queue_index`) are appended.
    queues: Vec<String>,
    levels: Vec<QueueLevels>,
    buckets: Vec<Bucket>,
    /// `buckets.len() x queues.len()`, bucket-major.
    queue_buckets: Vec<QueueBucket>,
    /// The bucket of the latest time looked up (`locate`): time only moves forward, so
    /// nearly every lookup and every span integrated lands in it, with no division.
    current: Current,
    /// Off: nothing is integrated or counted (a run whose time series nobody writes; see
    /// `ControllerConfig::record_series`). Queue names are still kept. `advance`, `count` and
    /// `queue_change` test it inline, so that a run with the series off pays a branch per
    /// change (several per event), not a call.
    recording: bool,
    /// Some job of the run has no queue (its rows are the "-" queue's).
    unqueued: bool,
    /// One queue: every task is in it, so its levels are the cluster's (the Controller
    /// changes both together) and so are its integrals. They are copied from the cluster's
    /// when a second queue joins or the run ends, instead of integrated a change at a time
    /// (a fortieth of the engine bench's wall time), and its levels are taken from the
    /// cluster's then, instead of kept a change at a time (as much again).
    mirrored: bool,
    /// Mirrored: the lone queue held nothing (no task waiting or running) when time last
    /// moved, and has not changed since. Its next change makes the bucket of its time exist,
    /// as a queue kept a change at a time does (`flush_queue`), so that the buckets reach
    /// as far either way.
    idle_when_time_moved: bool,
}

impl Series {
    /// A series of `width`-wide buckets over `queues` (names, index 0 meaning no queue).
    /// A zero width is taken as one hour.
    pub fn new(width: SimDuration, queues: Vec<String>) -> Series {
        let width = if width == SimDuration::ZERO { SimDuration::from_secs(3600) } else { width };
        Series {
            width,
            origin: None,
            integrated_to: SimTime::ZERO,
            levels: vec![QueueLevels::default(); queues.len()],
            mirrored: queues.len() == 1,
            idle_when_time_moved: false,
            queues,
            buckets: Vec::new(),
            queue_buckets: Vec::new(),
            current: Current::default(),
            recording: true,
            unqueued: false,
        }
    }

    /// Some job of the run has no queue: written as the "-" queue's rows.
    pub fn has_jobs_without_queue(&self) -> bool {
        self.unqueued
    }
    pub(crate) fn note_job_without_queue(&mut self) {
        self.unqueued = true;
    }

    /// The same series, recording nothing: every bucket table stays empty.
    pub(crate) fn off(mut self) -> Series {
        self.recording = false;
        self
    }

    pub fn width(&self) -> SimDuration {
        self.width
    }
    pub fn queues(&self) -> &[String] {
        &self.queues
    }
    /// The start of the first bucket (the first arrival); `None` before it.
    pub fn origin(&self) -> Option<SimTime> {
        self.origin
    }
    pub fn buckets(&self) -> &[Bucket] {
        &self.buckets
    }
    /// The per-queue integrals of bucket `bucket`, one per queue in `queues()` order.
    pub fn queue_buckets(&self, bucket: usize) -> &[QueueBucket] {
        let q = self.queues.len();
        &self.queue_buckets[bucket * q..(bucket + 1) * q]
    }

    /// Starts the series at the first arrival.
    pub(crate) fn start(&mut self, now: SimTime) {
        if self.recording && self.origin.is_none() {
            self.origin = Some(now);
            self.integrated_to = now;
            for level in &mut self.levels {
                level.since = now;
            }
        }
    }

    /// Integrates the cluster-wide `levels`, which held since the last call, up to `now`.
    #[inline]
    pub(crate) fn advance(&mut self, levels: &Levels, now: SimTime) {
        if self.recording {
            self.integrate(levels, now);
        }
    }

    fn integrate(&mut self, levels: &Levels, now: SimTime) {
        if self.origin.is_none() || now <= self.integrated_to {
            return;
        }
        let from = self.integrated_to;
        self.integrated_to = now;
        self.idle_when_time_moved = QueueLevels::all_of(levels, now).idle();
        self.spread(from, now, |b, ms| {
            b.allocated_mgpu_ms += levels.allocated_mgpus * ms;
            b.stalled_mgpu_ms += levels.stalled_mgpus * ms;
            b.unusable_gpu_ms += levels.unusable_gpus * ms;
            b.waiting_task_ms += levels.waiting * ms;
            b.running_task_ms += levels.running * ms;
        });
    }

    /// Counts something that happened at `now` in its bucket.
    #[inline]
    pub(crate) fn count(&mut self, now: SimTime, add: impl FnOnce(&mut Bucket)) {
        if !self.recording {
            return;
        }
        if let Some(index) = self.locate(now) {
            self.ensure(index);
            add(&mut self.buckets[index]);
        }
    }

    /// Changes one of `queue`'s levels at `now`, integrating the old levels first. Mirrored,
    /// the cluster's levels are the queue's: nothing to keep but the reach of the buckets.
    #[inline]
    pub(crate) fn queue_change(&mut self, queue: usize, now: SimTime, delta: QueueDelta) {
        if !self.recording {
            return;
        }
        if !self.mirrored {
            self.change_queue(queue, now, delta);
        } else if std::mem::take(&mut self.idle_when_time_moved) {
            self.reach(now);
        }
    }

    #[inline]
    fn change_queue(&mut self, queue: usize, now: SimTime, delta: QueueDelta) {
        self.flush_queue(queue, now);
        let level = &mut self.levels[queue];
        let apply = |value: &mut u64, by: i64| *value = value.checked_add_signed(by).expect("queue level below zero");
        match delta {
            QueueDelta::Waiting(by) => apply(&mut level.waiting, by),
            QueueDelta::Running { tasks, mgpus } => {
                apply(&mut level.running, tasks);
                apply(&mut level.allocated_mgpus, mgpus);
            }
        }
    }

    /// Integrates every queue's levels up to `now` (at the end of the run); `cluster`: the
    /// cluster's levels now.
    pub(crate) fn finish(&mut self, cluster: &Levels, now: SimTime) {
        self.unmirror(cluster);
        for queue in 0..self.queues.len() {
            self.flush_queue(queue, now);
        }
    }

    /// Integrates `queue`'s levels, which held since its last change, up to `now`.
    #[inline]
    fn flush_queue(&mut self, queue: usize, now: SimTime) {
        let level = self.levels[queue];
        if self.origin.is_none() || now <= level.since {
            return;
        }
        self.levels[queue].since = now;
        if level.idle() {
            self.reach(now); // nothing to add
            return;
        }
        self.integrate_queue(queue, level, now);
    }

    /// Makes the bucket of `now` exist (see `ensure`).
    fn reach(&mut self, now: SimTime) {
        if let Some(index) = self.locate(now) {
            self.ensure(index);
        }
    }

    fn integrate_queue(&mut self, queue: usize, level: QueueLevels, now: SimTime) {
        let q = self.queues.len();
        self.spread_over(level.since, now, |s, index, ms| {
            let b = &mut s.queue_buckets[index * q + queue];
            b.allocated_mgpu_ms += level.allocated_mgpus * ms;
            b.waiting_task_ms += level.waiting * ms;
            b.running_task_ms += level.running * ms;
        });
    }

    /// Adds `add(bucket, milliseconds of overlap)` to every bucket `[from, to)` overlaps.
    fn spread(&mut self, from: SimTime, to: SimTime, add: impl Fn(&mut Bucket, u64)) {
        self.spread_over(from, to, |s, index, ms| add(&mut s.buckets[index], ms));
    }

    /// Calls `add(self, bucket index, milliseconds of overlap)` for every bucket `[from, to)`
    /// overlaps, each made to exist first (`ensure`). Nothing before the series starts.
    #[inline]
    fn spread_over(&mut self, from: SimTime, to: SimTime, mut add: impl FnMut(&mut Series, usize, u64)) {
        if self.current.spans(from, to) {
            // The common case: both ends in the current bucket.
            let index = self.current.index;
            self.ensure(index);
            add(self, index, to.since(from).as_ms());
            return;
        }
        let Some(mut index) = self.bucket_of(from) else { return };
        let mut start = from;
        while start < to {
            let end = self.bucket_end(index).min(to);
            self.ensure(index);
            add(self, index, end.since(start).as_ms());
            start = end;
            index += 1;
        }
        self.locate(to);
    }

    /// The index of the bucket `t` falls in (`None` before the series starts); a bucket past
    /// the current one becomes current. Existence is the caller's (`ensure`): a span ending
    /// on an edge must not make the bucket after it.
    #[inline]
    fn locate(&mut self, t: SimTime) -> Option<usize> {
        if self.current.holds(t) {
            return Some(self.current.index);
        }
        let index = self.bucket_of(t)?;
        if t >= self.current.end {
            self.current = Current { index, start: self.bucket_start(index), end: self.bucket_end(index) };
        }
        Some(index)
    }

    fn bucket_of(&self, t: SimTime) -> Option<usize> {
        let origin = self.origin?;
        usize::try_from(t.since(origin).as_ms() / self.width.as_ms()).ok()
    }

    fn bucket_start(&self, index: usize) -> SimTime {
        let origin = self.origin.unwrap_or(SimTime::ZERO);
        origin + SimDuration(self.width.as_ms().saturating_mul(index as u64))
    }

    fn bucket_end(&self, index: usize) -> SimTime {
        self.bucket_start(index + 1)
    }

    /// The index of queue `name`, added if no job named it before (live mode: jobs join the
    /// run). A new queue goes last, its past buckets zero: O(buckets x queues), once a name.
    /// `cluster`: the cluster's levels now.
    pub(crate) fn queue_index(&mut self, name: &str, cluster: &Levels) -> u32 {
        if let Some(i) = self.queues.iter().position(|q| q == name) {
            return i as u32;
        }
        self.unmirror(cluster);
        let old = self.queues.len();
        let mut grown = Vec::with_capacity(self.buckets.len() * (old + 1));
        for bucket in self.queue_buckets.chunks(old) {
            grown.extend_from_slice(bucket);
            grown.push(QueueBucket::default());
        }
        self.queue_buckets = grown;
        self.queues.push(name.to_string());
        self.levels.push(QueueLevels::default());
        old as u32
    }

    /// The one queue's integrals and levels so far, copied from the cluster's (see
    /// `mirrored`; `cluster`: its levels now); from here on, kept a change at a time. The
    /// cluster's levels are integrated to the Controller's now (every change happens at the
    /// time of the last `advance`), and the queue's from there.
    fn unmirror(&mut self, cluster: &Levels) {
        if !self.mirrored {
            return;
        }
        self.mirrored = false;
        for (queue, cluster) in self.queue_buckets.iter_mut().zip(&self.buckets) {
            *queue = QueueBucket {
                allocated_mgpu_ms: cluster.allocated_mgpu_ms,
                waiting_task_ms: cluster.waiting_task_ms,
                running_task_ms: cluster.running_task_ms,
            };
        }
        let since = if self.origin.is_some() { self.integrated_to } else { self.levels[0].since };
        self.levels[0] = QueueLevels::all_of(cluster, since);
    }

    /// Grows the bucket tables so that bucket `index` exists.
    #[inline]
    fn ensure(&mut self, index: usize) {
        if index >= self.buckets.len() {
            self.grow(index);
        }
    }

    #[cold]
    fn grow(&mut self, index: usize) {
        self.buckets.resize(index + 1, Bucket::default());
        self.queue_buckets.resize((index + 1) * self.queues.len(), QueueBucket::default());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn series() -> Series {
        Series::new(SimDuration(10), vec!["-".into(), "a".into()])
    }

    #[test]
    fn levels_are_split_exactly_at_bucket_edges() {
        let mut s = series();
        s.start(SimTime(5));
        let two = Levels { allocated_mgpus: 2000, running: 1, ..Levels::default() };
        // [5, 28): 2000 mGPU over 23 ms -> buckets [5,15): 10 ms, [15,25): 10 ms, [25,35): 3 ms.
        s.advance(&two, SimTime(28));
        let alloc: Vec<u64> = s.buckets().iter().map(|b| b.allocated_mgpu_ms).collect();
        assert_eq!(alloc, [20_000, 20_000, 6_000]);
        let running: Vec<u64> = s.buckets().iter().map(|b| b.running_task_ms).collect();
        assert_eq!(running, [10, 10, 3]);
        // Going nowhere adds nothing.
        s.advance(&two, SimTime(28));
        assert_eq!(s.buckets()[2].allocated_mgpu_ms, 6_000);
    }

    #[test]
    fn queue_levels_integrate_lazily_and_on_finish() {
        let mut s = series();
        s.start(SimTime(0));
        s.queue_change(1, SimTime(0), QueueDelta::Waiting(2));
        s.queue_change(1, SimTime(4), QueueDelta::Waiting(-1));
        s.queue_change(1, SimTime(4), QueueDelta::Running { tasks: 1, mgpus: 500 });
        s.count(SimTime(19), |b| b.arrivals += 1);
        s.finish(&Levels::default(), SimTime(12));
        // Queue a: 2 waiting over [0,4), then 1 waiting + 1 running (500 mGPU) over [4,12).
        assert_eq!(
            s.queue_buckets(0)[1],
            QueueBucket { allocated_mgpu_ms: 3_000, waiting_task_ms: 14, running_task_ms: 6 }
        );
        assert_eq!(
            s.queue_buckets(1)[1],
            QueueBucket { allocated_mgpu_ms: 1_000, waiting_task_ms: 2, running_task_ms: 2 }
        );
        assert_eq!(s.queue_buckets(1)[0], QueueBucket::default());
        assert_eq!(s.buckets()[1].arrivals, 1);
    }

    #[test]
    fn nothing_is_recorded_before_the_first_arrival() {
        let mut s = series();
        s.advance(&Levels { waiting: 3, ..Levels::default() }, SimTime(50));
        s.count(SimTime(50), |b| b.failures += 1);
        assert!(s.buckets().is_empty());
    }

    /// One step of a run as the series sees it: time moves on by `dt`, then one call.
    #[derive(Debug, Clone)]
    enum Step {
        Advance { dt: u64, allocated: u64, waiting: u64 },
        Queue { dt: u64, queue: usize, waiting: i64, running: i64 },
        Count { dt: u64 },
    }

    fn step() -> impl proptest::strategy::Strategy<Value = Step> {
        use proptest::prelude::*;
        prop_oneof![
            (0..25u64, 0..5u64, 0..5u64).prop_map(|(dt, allocated, waiting)| Step::Advance { dt, allocated, waiting }),
            (0..25u64, 0..2usize, 0..3i64, 0..3i64).prop_map(|(dt, queue, waiting, running)| Step::Queue {
                dt,
                queue,
                waiting,
                running
            }),
            (0..25u64).prop_map(|dt| Step::Count { dt }),
        ]
    }

    /// A run as the Controller drives it: time moves on by `dt` (the cluster's levels are
    /// integrated to then), and one queue's levels change, the cluster's with them; at step
    /// `joins`, a second queue joins (live mode). A change that would take a queue's level
    /// below zero takes it to zero: levels fall back to nothing (idle) as often as they rise.
    fn drive(s: &mut Series, steps: &[(u64, bool, i64, i64)], joins: usize) -> SimTime {
        let (mut now, mut cluster, mut queues) = (SimTime(0), Levels::default(), [(0u64, 0u64); 2]);
        s.start(now);
        for (i, &(dt, second, waiting, running)) in steps.iter().enumerate() {
            if i == joins {
                s.queue_index("late", &cluster);
            }
            now += SimDuration(dt);
            s.advance(&cluster, now);
            let queue = usize::from(second && i >= joins);
            let (queued, ran) = &mut queues[queue];
            let waiting = waiting.max(-(*queued as i64));
            let running = running.max(-(*ran as i64));
            *queued = queued.saturating_add_signed(waiting);
            *ran = ran.saturating_add_signed(running);
            s.queue_change(queue, now, QueueDelta::Waiting(waiting));
            s.queue_change(queue, now, QueueDelta::Running { tasks: running, mgpus: 500 * running });
            cluster.waiting = cluster.waiting.saturating_add_signed(waiting);
            cluster.running = cluster.running.saturating_add_signed(running);
            cluster.allocated_mgpus = cluster.allocated_mgpus.saturating_add_signed(500 * running);
        }
        s.advance(&cluster, now);
        s.finish(&cluster, now);
        now
    }

    proptest::proptest! {
        // More cases than the default: a bucket edge must meet an idle level and a change.
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 4096, failure_persistence: None, ..proptest::prelude::ProptestConfig::default() })]
        /// A lone queue's integrals copied from the cluster's are those integrated a change at
        /// a time (the path the proptest below holds to the levels summed per millisecond),
        /// whether it stays alone or a second queue joins.
        #[test]
        fn a_lone_queue_mirrors_the_cluster_exactly(
            steps in proptest::collection::vec((0..25u64, proptest::prelude::any::<bool>(), -2..3i64, -2..3i64), 1..60),
            joins in 0..80usize,
        ) {
            let mut mirrored = Series::new(SimDuration(10), vec!["-".into()]);
            let mut kept = Series { mirrored: false, ..mirrored.clone() };
            proptest::prop_assert!(mirrored.mirrored);
            drive(&mut mirrored, &steps, joins);
            drive(&mut kept, &steps, joins);
            proptest::prop_assert_eq!(&mirrored.queue_buckets, &kept.queue_buckets);
            proptest::prop_assert_eq!(&mirrored.buckets, &kept.buckets);
            proptest::prop_assert_eq!(mirrored.queues(), kept.queues());
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { failure_persistence: None, ..proptest::prelude::ProptestConfig::default() })]
        /// The integrals (kept through the current-bucket shortcut) against the levels summed
        /// millisecond by millisecond into `t / width`, spans landing on bucket edges included.
        #[test]
        fn integrals_match_levels_summed_per_millisecond(steps in proptest::collection::vec(step(), 1..60)) {
            let width = 10;
            let mut s = series();
            s.start(SimTime(0));
            let (mut now, mut cluster, mut queues) = (0u64, Levels::default(), [QueueLevels::default(); 2]);
            let mut expected = vec![(0u64, 0u64, [QueueBucket::default(); 2]); 200];
            let hold = |expected: &mut Vec<_>, from: u64, until: u64, cluster: &Levels, queues: &[QueueLevels; 2]| {
                for ms in from..until {
                    let (alloc, waiting, per_queue): &mut (u64, u64, [QueueBucket; 2]) = &mut expected[(ms / width) as usize];
                    *alloc += cluster.allocated_mgpus;
                    *waiting += cluster.waiting;
                    for (b, level) in per_queue.iter_mut().zip(queues) {
                        b.allocated_mgpu_ms += level.allocated_mgpus;
                        b.waiting_task_ms += level.waiting;
                        b.running_task_ms += level.running;
                    }
                }
            };
            for step in steps {
                match step {
                    Step::Advance { dt, allocated, waiting } => {
                        hold(&mut expected, now, now + dt, &cluster, &queues);
                        now += dt;
                        s.advance(&cluster, SimTime(now));
                        cluster = Levels { allocated_mgpus: allocated, waiting, ..Levels::default() };
                    }
                    Step::Queue { dt, queue, waiting, running } => {
                        hold(&mut expected, now, now + dt, &cluster, &queues);
                        now += dt;
                        // Only ever up: a level below zero is refused (tested apart).
                        s.queue_change(queue, SimTime(now), QueueDelta::Waiting(waiting));
                        s.queue_change(queue, SimTime(now), QueueDelta::Running { tasks: running, mgpus: 500 * running });
                        let level = &mut queues[queue];
                        level.waiting += waiting as u64;
                        level.running += running as u64;
                        level.allocated_mgpus += 500 * running as u64;
                    }
                    Step::Count { dt } => {
                        hold(&mut expected, now, now + dt, &cluster, &queues);
                        now += dt;
                        s.count(SimTime(now), |b| b.arrivals += 1);
                    }
                }
            }
            s.advance(&cluster, SimTime(now));
            s.finish(&Levels::default(), SimTime(now));
            let last_ms_bucket = now.checked_sub(1).map(|ms| (ms / width) as usize);
            proptest::prop_assert!(last_ms_bucket.is_none_or(|b| b < s.buckets().len()));
            for (index, (alloc, waiting, per_queue)) in expected.iter().enumerate() {
                let (got, got_queues) = match s.buckets().get(index) {
                    Some(b) => (*b, s.queue_buckets(index).to_vec()),
                    None => (Bucket::default(), vec![QueueBucket::default(); 2]),
                };
                proptest::prop_assert_eq!((got.allocated_mgpu_ms, got.waiting_task_ms), (*alloc, *waiting), "bucket {}", index);
                proptest::prop_assert_eq!(&got_queues[..], &per_queue[..], "queue bucket {}", index);
            }
        }
    }
}
