//! [`map_onto`]: a real failure history replayed on a simulated cluster of another size, over
//! another period.
//!
//! The rule, for a trace of `P` nodes observed over a span of length `L`, a cluster, a window
//! `[W0, W1)`, a seed and a time scale `s`:
//!
//! 1. **Time.** A trace instant `t` becomes `W0 + round((t - span start) x s)`: the span start
//!    lands on the window start, and every trace duration (time between faults, repair) is
//!    multiplied by `s` (`s < 1` compresses history: more failures per simulated hour). The
//!    history is periodic with period `round(L x s)`, so any window length is covered.
//! 2. **Nodes.** Simulated nodes, in id order, draw trace nodes from a seeded random
//!    permutation of the whole population, nodes that never failed included; when the
//!    permutation is used up a fresh one starts (a *cycle*). Each simulated node replays the
//!    whole history of the trace node it drew, so the expected failure rate per node is the
//!    trace's, whatever the two sizes.
//! 3. **Phase.** Cycle 0 replays the history as recorded (offset 0), so a cluster no larger
//!    than the population sees the trace's own timeline, correlated failures included. Each
//!    later cycle is shifted by its own seeded offset, uniform in `[0, period)`, so replicas of
//!    one trace node do not fail in lockstep.
//! 4. **GPUs.** Node-level faults go to the node. For a trace with GPU-level faults and `g`
//!    GPUs per node, a simulated node of `G` GPUs draws `ceil(G / g)` trace nodes, one per
//!    block of `g` slots: trace slot `k` of block `b` becomes slot `b x g + k` (dropped when
//!    that is past `G`), and only block 0 brings node-level faults. This keeps the failure
//!    rate per GPU as well as per node: Titan's one-GPU nodes fill an 8-GPU node with eight
//!    histories. (When the trace does not say GPUs per node, slot `k` becomes `k mod G`.)
//! 5. **Repairs** keep their length, scaled. A fault the trace never saw repaired stays down
//!    until the end of the span (what was observed), then the period repeats. A zero-length
//!    repair becomes 1 ms (a blip still fails the running tasks). A fault that began before
//!    `W0` and is still down at `W0` in the replayed timeline is emitted at `W0` with the
//!    rest of its repair, so the window starts with the trace's share of broken hardware
//!    rather than all healthy.
//! 6. Events fall in `[W0, W1)` (repairs may end later), sorted by [`super::event_order`].
//!    A run pulls them period by period ([`MappedFeed`]), from `W0` for as long as it lasts, or
//!    for one period only (`past_end=stop`: the recorded history once, then no failures).
//!
//! Randomness: `sim::rng::stream(seed, "failures")`, ChaCha sub-stream `c` for cycle `c`: its
//! first draw is the offset (cycles >= 1), then one draw per position of the permutation
//! (lazy Fisher-Yates). Node `i`'s history depends only on the seed and the GPU counts of
//! nodes `0..=i`: growing the cluster or the window never changes what earlier nodes get.
//! Cost: O(events + population + nodes).

use super::model::check_rate;
use super::trace::FailureTrace;
use super::{MS_PER_HOUR, check_event_budget, round_ms, sort_events};
use crate::error::TraceError;
use rand::RngExt;
use sim::rng::StreamRng;
use sim::{Cluster, ClusterEvent, HardwareFeed, SimDuration, SimTime};

/// What a replayed history does past its end: it starts again (the period repeats, each
/// cycle of drawn nodes with its seeded offset: rule 1 and 3), or failures stop there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PastEnd {
    #[default]
    Repeat,
    Stop,
}

/// Replays `trace` on `cluster` within `window` (start inclusive, end exclusive) by the rule
/// in the module documentation: the first part of [`MappedFeed`] from the window start, as
/// a finite list. `time_scale` multiplies every trace duration and must be a positive number.
/// An empty window gives no events.
pub fn map_onto(
    trace: &FailureTrace,
    cluster: &Cluster,
    window: (SimTime, SimTime),
    seed: u64,
    time_scale: f64,
) -> Result<Vec<ClusterEvent>, TraceError> {
    if window.1 <= window.0 {
        check_scale(trace, time_scale)?;
        return Ok(Vec::new());
    }
    let mut feed = MappedFeed::new(trace, cluster, window.0, seed, time_scale, PastEnd::Repeat)?;
    let window_ms = window.1.as_ms() - window.0.as_ms();
    check_event_budget(&feed.what, feed.per_period as f64 * (window_ms as f64 / feed.period as f64 + 1.0))?;
    Ok(super::model::take_until(&mut feed, window.1))
}

fn check_scale(trace: &FailureTrace, time_scale: f64) -> Result<(), TraceError> {
    if time_scale.is_finite() && time_scale > 0.0 {
        return Ok(());
    }
    let what = format!("failures of {} mapped onto the cluster", trace.name());
    Err(TraceError::value(what, format!("the time scale must be a positive number, got {time_scale}")))
}

/// One simulated node's (or GPU block's) share of the history: the trace node it drew, the
/// cycle's offset, and where its faults go.
#[derive(Debug)]
struct Draw {
    node: sim::NodeId,
    gpus: u32,
    block: u32,
    source: u32,
    offset: u64,
}

/// `trace` replayed on a cluster from `start` on, one period at a time, for as long as the run
/// pulls it ([`PastEnd::Repeat`]) or for one period ([`PastEnd::Stop`]).
#[derive(Debug)]
pub struct MappedFeed {
    what: String,
    start: SimTime,
    period: u64,
    histories: Vec<Vec<Replayed>>,
    gpus_per_node: Option<u32>,
    /// Only the draws of trace nodes that have faults.
    draws: Vec<Draw>,
    /// Faults in one period, over every draw (the rate guard's numerator).
    per_period: u64,
    past_end: PastEnd,
    /// The next period to generate, and the generated events not yet taken.
    next_period: u64,
    ready: std::collections::VecDeque<ClusterEvent>,
}

impl MappedFeed {
    pub fn new(
        trace: &FailureTrace,
        cluster: &Cluster,
        start: SimTime,
        seed: u64,
        time_scale: f64,
        past_end: PastEnd,
    ) -> Result<MappedFeed, TraceError> {
        check_scale(trace, time_scale)?;
        let what = format!("failures of {} mapped onto the cluster", trace.name());
        let scaled = |ms: u64| round_ms(ms as f64 * time_scale);
        let period = scaled(trace.span_ms()).max(1);
        let histories = histories(trace, &scaled);
        let gpu_faults = trace.faults().iter().any(|f| f.gpu.is_some());
        let blocks = |gpus: u32| match (gpu_faults, trace.gpus_per_node()) {
            (true, Some(g)) => gpus.div_ceil(g),
            _ => 1,
        };
        let mut permutation = Permutation::new(seed, trace.population(), period);
        let mut draws = Vec::new();
        for node in cluster.nodes() {
            for block in 0..blocks(node.gpu_count) {
                let (source, offset) = permutation.draw();
                if !histories[source as usize].is_empty() {
                    draws.push(Draw { node: node.id, gpus: node.gpu_count, block, source, offset });
                }
            }
        }
        let per_period = draws.iter().map(|d| histories[d.source as usize].len() as u64).sum();
        check_rate(&what, per_period as f64 * MS_PER_HOUR / period as f64)?;
        let gpus_per_node = trace.gpus_per_node();
        Ok(MappedFeed {
            what,
            start,
            period,
            histories,
            gpus_per_node,
            draws,
            per_period,
            past_end,
            next_period: 0,
            ready: Default::default(),
        })
    }

    /// Generates the events of the next period, `[p x period, (p + 1) x period)` after the
    /// start, sorted by [`super::event_order`]; false when there are no more periods.
    fn generate_period(&mut self) -> bool {
        let p = self.next_period;
        if self.past_end == PastEnd::Stop && p > 0 {
            return false;
        }
        let from = p.saturating_mul(self.period);
        let to = from.saturating_add(self.period);
        self.next_period += 1;
        let mut events = Vec::new();
        for d in &self.draws {
            for f in &self.histories[d.source as usize] {
                let Some(gpu) = slot_of(f, d, self.gpus_per_node) else { continue };
                occurrences(f, d.offset, self.period, (from, to), |at, repair| {
                    let time = SimTime(self.start.as_ms().saturating_add(at));
                    let repair = Some(SimDuration(repair));
                    events.push(match gpu {
                        None => ClusterEvent::NodeFail { time, node: d.node, repair },
                        Some(gpu) => ClusterEvent::GpuFail { time, node: d.node, gpu, repair },
                    });
                });
            }
        }
        sort_events(&mut events);
        self.ready.extend(events);
        true
    }
}

/// Where fault `f` of draw `d` goes: `Some(None)` the node, `Some(Some(slot))` a GPU, `None`
/// nowhere (a node fault of a block past the first, a slot past the node's GPUs).
fn slot_of(f: &Replayed, d: &Draw, gpus_per_node: Option<u32>) -> Option<Option<u32>> {
    match (f.gpu, gpus_per_node) {
        (None, _) if d.block == 0 => Some(None),
        (None, _) => None,
        (Some(k), Some(g)) => (d.block * g).checked_add(k).filter(|&slot| slot < d.gpus).map(Some),
        (Some(k), None) => Some(Some(k % d.gpus)),
    }
}

impl HardwareFeed for MappedFeed {
    fn peek_time(&mut self) -> Option<SimTime> {
        // A period may hold no event at all: go on to the next (bounded: draws with faults
        // have at least one occurrence per period).
        while self.ready.is_empty() {
            if self.draws.is_empty() || !self.generate_period() {
                return None;
            }
        }
        self.ready.front().map(ClusterEvent::time)
    }

    fn pop(&mut self) -> Option<ClusterEvent> {
        self.peek_time()?;
        self.ready.pop_front()
    }

    fn covered_until(&self) -> Option<SimTime> {
        (self.past_end == PastEnd::Stop).then(|| self.start.saturating_add(SimDuration(self.period)))
    }
}

/// One trace fault in simulated milliseconds from the span start.
#[derive(Debug)]
struct Replayed {
    at: u64,
    /// At least 1 ms; an unrepaired fault lasts to the end of the span.
    repair: u64,
    gpu: Option<u32>,
}

/// Each trace node's faults, scaled.
fn histories(trace: &FailureTrace, scaled: &impl Fn(u64) -> u64) -> Vec<Vec<Replayed>> {
    let (start, end) = trace.span();
    let mut histories: Vec<Vec<Replayed>> = (0..trace.population()).map(|_| Vec::new()).collect();
    for f in trace.faults() {
        let repair = f.repair.map_or(end.since(f.start).as_ms(), SimDuration::as_ms);
        histories[f.node as usize].push(Replayed {
            at: scaled(f.start.since(start).as_ms()),
            repair: scaled(repair).max(1),
            gpu: f.gpu,
        });
    }
    histories
}

/// The occurrences of `f` in the periodic history shifted by `offset`, relative to the start:
/// at `f.at - offset + r x period` for every whole `r`, those in `[from, to)`; with `from` 0
/// also one still down at 0 (it began earlier: reported at 0 with the rest of its repair).
fn occurrences(f: &Replayed, offset: u64, period: u64, (from, to): (u64, u64), mut emit: impl FnMut(u64, u64)) {
    let (period, repair) = (i128::from(period), i128::from(f.repair));
    let first = i128::from(f.at) - i128::from(offset);
    let mut at = if from == 0 {
        // The first r with first + r x period + repair > 0.
        first + ((-first - repair).div_euclid(period) + 1) * period
    } else {
        // The first r with first + r x period >= from.
        let gap = i128::from(from) - first;
        first + (gap.div_euclid(period) + i128::from(gap.rem_euclid(period) > 0)) * period
    };
    while at < i128::from(to) {
        if at < 0 {
            emit(0, (at + repair) as u64);
        } else {
            emit(at as u64, f.repair);
        }
        at += period;
    }
}

/// Trace nodes drawn without replacement, a fresh permutation per cycle (lazy Fisher-Yates).
struct Permutation {
    key: [u8; 32],
    population: u32,
    period: u64,
    cycle: u64,
    order: Vec<u32>,
    next: u32,
    rng: StreamRng,
    offset: u64,
}

impl Permutation {
    fn new(seed: u64, population: u32, period: u64) -> Permutation {
        let key = super::failures_key(seed);
        let mut p = Permutation {
            key,
            population,
            period,
            cycle: 0,
            order: Vec::new(),
            next: 0,
            rng: super::substream(key, 0),
            offset: 0,
        };
        p.start_cycle(0);
        p
    }

    fn start_cycle(&mut self, cycle: u64) {
        self.cycle = cycle;
        self.rng = super::substream(self.key, cycle);
        self.offset = if cycle == 0 { 0 } else { self.rng.random_range(0..self.period) };
        self.order.clear();
        self.order.extend(0..self.population);
        self.next = 0;
    }

    /// The next trace node and its cycle's offset.
    fn draw(&mut self) -> (u32, u64) {
        if self.next == self.population {
            self.start_cycle(self.cycle + 1);
        }
        let pick = self.rng.random_range(self.next..self.population);
        self.order.swap(self.next as usize, pick as usize);
        let node = self.order[self.next as usize];
        self.next += 1;
        (node, self.offset)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failures::model::{FailureModel, LogNormal, Weibull};
    use crate::failures::trace::Fault;
    use sim::{ClusterSpec, PoolSpec};

    const DAY: u64 = 86_400_000;

    fn cluster(nodes: u32, gpus: u32) -> Cluster {
        let pool = PoolSpec {
            name: "A".into(),
            gpu_type: "A".into(),
            nodes,
            gpus_per_node: gpus,
            nodes_per_rack: 0,
            speed_milli: 1000,
        };
        Cluster::new(&ClusterSpec { pools: vec![pool] }).unwrap()
    }

    /// A 200-node trace over 300 days: heterogeneous nodes (a quarter fail often, the rest
    /// rarely, some never), node-level faults.
    fn trace() -> FailureTrace {
        let span = (SimTime(0), SimTime(300 * DAY));
        let often = FailureModel {
            node: Some(Weibull::with_mean(24.0 * 30.0, 0.7)),
            gpu: None,
            repair: LogNormal { median_h: 20.0, sigma: 1.5 },
        };
        let rarely = FailureModel { node: Some(Weibull::with_mean(24.0 * 400.0, 1.0)), ..often };
        let mut faults = Vec::new();
        for (model, first, nodes) in [(often, 0, 50), (rarely, 50, 150)] {
            for e in model.generate(&cluster(nodes, 8), span, 11).unwrap() {
                if let ClusterEvent::NodeFail { time, node, repair } = e {
                    faults.push(Fault { node: node.0 + first, gpu: None, start: time, repair, class: "x".into() });
                }
            }
        }
        FailureTrace::new("test", 200, Some(8), span, faults).unwrap()
    }

    fn per_node_day(events: &[ClusterEvent], nodes: usize, window: (SimTime, SimTime)) -> f64 {
        // Faults carried over from before the window are not new failures.
        let inside = events.iter().filter(|e| e.time() > window.0).count();
        inside as f64 / nodes as f64 / (window.1.since(window.0).as_ms() as f64 / DAY as f64)
    }

    #[test]
    fn same_inputs_same_events_other_seed_other_events() {
        let t = trace();
        let c = cluster(64, 8);
        let w = (SimTime(5_000), SimTime(5_000 + 100 * DAY));
        let a = map_onto(&t, &c, w, 1, 1.0).unwrap();
        assert!(!a.is_empty());
        assert_eq!(a, map_onto(&t, &c, w, 1, 1.0).unwrap());
        assert_ne!(a, map_onto(&t, &c, w, 2, 1.0).unwrap());
        assert!(a.windows(2).all(|p| crate::failures::event_order(&p[0]) <= crate::failures::event_order(&p[1])));
    }

    #[test]
    fn nothing_falls_outside_the_window_or_the_cluster() {
        let t = trace();
        let c = cluster(300, 4);
        for (w, scale) in [((SimTime(7), SimTime(7 + 1_000 * DAY)), 1.0), ((SimTime(DAY), SimTime(DAY + 3)), 0.001)] {
            for e in map_onto(&t, &c, w, 5, scale).unwrap() {
                assert!(e.time() >= w.0 && e.time() < w.1, "{e:?} outside {w:?}");
                assert!(e.node().index() < 300);
                if let ClusterEvent::NodeFail { repair, .. } = e {
                    assert!(repair.is_some_and(|r| r.as_ms() >= 1));
                }
            }
        }
        assert_eq!(map_onto(&t, &c, (SimTime(5), SimTime(5)), 0, 1.0).unwrap(), []);
        assert!(map_onto(&t, &c, (SimTime(0), SimTime(1)), 0, 0.0).is_err());
        assert!(map_onto(&t, &c, (SimTime(0), SimTime(1)), 0, f64::NAN).is_err());
        // A typo-sized scale is refused rather than generating billions of events.
        let e = map_onto(&t, &c, (SimTime(0), SimTime(1_000 * DAY)), 0, 1e-9).unwrap_err().to_string();
        assert!(e.contains("more than one a second"), "{e}");
    }

    #[test]
    fn the_failure_rate_per_node_is_the_traces_for_bigger_and_smaller_clusters() {
        let t = trace();
        let trace_rate = t.faults().len() as f64 / 200.0 / 300.0;
        // Bigger: 5 cycles of the population in one run, over one span.
        let w = (SimTime(0), SimTime(300 * DAY));
        let big = per_node_day(&map_onto(&t, &cluster(1_000, 8), w, 3, 1.0).unwrap(), 1_000, w);
        assert!((big / trace_rate - 1.0).abs() < 0.03, "1,000 nodes: {big} vs trace {trace_rate}");
        // Smaller, over a longer window than the span: 20 nodes, 4 spans, averaged over seeds
        // (20 draws of heterogeneous nodes vary a lot from seed to seed).
        let w = (SimTime(0), SimTime(1_200 * DAY));
        let small: f64 = (0..100)
            .map(|seed| per_node_day(&map_onto(&t, &cluster(20, 8), w, seed, 1.0).unwrap(), 20, w))
            .sum::<f64>()
            / 100.0;
        assert!((small / trace_rate - 1.0).abs() < 0.1, "20 nodes: {small} vs trace {trace_rate}");
        // Time scale 0.5: twice the failures per simulated day, repairs half as long.
        let w = (SimTime(0), SimTime(150 * DAY));
        let fast = per_node_day(&map_onto(&t, &cluster(200, 8), w, 3, 0.5).unwrap(), 200, w);
        assert!((fast / trace_rate - 2.0).abs() < 0.1, "scale 0.5: {fast} vs 2 x {trace_rate}");
    }

    #[test]
    fn a_cluster_of_the_population_size_replays_the_trace_as_recorded() {
        let t = trace();
        let w = (SimTime(1_000), SimTime(1_000 + t.span_ms()));
        let events = map_onto(&t, &cluster(200, 8), w, 9, 1.0).unwrap();
        let mut replayed: Vec<(u64, u64)> = events
            .iter()
            .filter(|e| e.time() > w.0)
            .map(|e| match e {
                ClusterEvent::NodeFail { time, repair, .. } => (time.as_ms() - 1_000, repair.unwrap().as_ms()),
                other => panic!("unexpected {other:?}"),
            })
            .collect();
        let mut recorded: Vec<(u64, u64)> = t
            .faults()
            .iter()
            .filter(|f| f.start > SimTime(0) && f.start < t.span().1)
            .map(|f| (f.start.as_ms(), f.repair.map_or(t.span().1.since(f.start).as_ms(), |r| r.as_ms()).max(1)))
            .collect();
        replayed.sort_unstable();
        recorded.sort_unstable();
        assert_eq!(replayed, recorded);
    }

    #[test]
    fn gpu_faults_of_one_gpu_nodes_fill_every_slot_at_the_per_gpu_rate() {
        let span = (SimTime(0), SimTime(1_000 * DAY));
        let faults: Vec<Fault> = (0..400u32)
            .map(|i| Fault {
                node: i,
                gpu: Some(0),
                start: SimTime(u64::from(i) * 2 * DAY + 1),
                repair: Some(SimDuration(DAY)),
                class: "DBE".into(),
            })
            .collect();
        // 400 faults over 800 one-GPU nodes in 1,000 days: 1/2,000 per GPU-day.
        let t = FailureTrace::new("titan-like", 800, Some(1), span, faults).unwrap();
        let c = cluster(100, 8);
        let events = map_onto(&t, &c, span, 4, 1.0).unwrap();
        let mut per_slot = [0u32; 8];
        for e in &events {
            match e {
                ClusterEvent::GpuFail { gpu, .. } => per_slot[*gpu as usize] += 1,
                other => panic!("unexpected {other:?}"),
            }
        }
        assert!(per_slot.iter().all(|&n| n > 20), "{per_slot:?}");
        let per_gpu_day = events.len() as f64 / 800.0 / 1_000.0;
        assert!((per_gpu_day * 2_000.0 - 1.0).abs() < 0.15, "{per_gpu_day}");
    }

    #[test]
    fn growing_the_cluster_or_the_window_keeps_what_earlier_nodes_get() {
        let t = trace();
        let w = (SimTime(0), SimTime(500 * DAY));
        let small = map_onto(&t, &cluster(150, 8), w, 8, 1.0).unwrap();
        let big = map_onto(&t, &cluster(450, 8), (w.0, SimTime(900 * DAY)), 8, 1.0).unwrap();
        let cut: Vec<ClusterEvent> = big.into_iter().filter(|e| e.node().index() < 150 && e.time() < w.1).collect();
        assert_eq!(small, cut);
    }
}
