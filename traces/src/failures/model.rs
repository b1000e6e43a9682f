//! [`FailureModel`]: failures drawn from distributions rather than replayed from a trace. Each
//! node (and each GPU) is an alternating renewal process: up for a Weibull time to failure,
//! counted from the end of its last repair (or from the start), then down for a lognormal
//! repair time. The processes are independent of each other, and drawn as the run goes
//! ([`ModelFeed`]), so a run of any length sees them to its end.

use super::numeric::weibull_mean_factor;
use super::{MS_PER_HOUR, check_event_budget, round_ms};
use crate::error::TraceError;
use rand_distr::Distribution;
use sim::{Cluster, ClusterEvent, HardwareFeed, NodeId, SimDuration, SimTime};
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Weibull time to failure: `P(T > t) = exp(-(t / scale)^shape)`. Shape 1 is the exponential
/// (memoryless); below 1 failures cluster early in a life (infant mortality), above 1 they
/// come with wear.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Weibull {
    pub shape: f64,
    /// Scale in hours (the 63rd percentile of the time to failure).
    pub scale_h: f64,
}

impl Weibull {
    /// The Weibull with mean `mean_h` hours and shape `shape`: scale = mean / Γ(1 + 1/shape).
    pub fn with_mean(mean_h: f64, shape: f64) -> Weibull {
        Weibull { shape, scale_h: mean_h / weibull_mean_factor(shape) }
    }

    /// The mean time to failure in hours: scale x Γ(1 + 1/shape).
    pub fn mean_h(&self) -> f64 {
        self.scale_h * weibull_mean_factor(self.shape)
    }

    fn sampler(&self, what: &str) -> Result<rand_distr::Weibull<f64>, TraceError> {
        let ok = |x: f64| x.is_finite() && x > 0.0;
        let scale_ms = self.scale_h * MS_PER_HOUR;
        if !ok(self.shape) || !ok(scale_ms) || !ok(self.mean_h()) {
            return Err(TraceError::value(
                "failure model",
                format!(
                    "{what}: shape and scale must be positive numbers, got shape {} scale {} h",
                    self.shape, self.scale_h
                ),
            ));
        }
        rand_distr::Weibull::new(scale_ms, self.shape).map_err(|e| TraceError::value("failure model", e.to_string()))
    }
}

/// Lognormal repair time: `ln T` is normal with mean `ln median` and standard deviation
/// `sigma`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogNormal {
    pub median_h: f64,
    pub sigma: f64,
}

impl LogNormal {
    /// The mean in hours: median x exp(sigma^2 / 2).
    pub fn mean_h(&self) -> f64 {
        self.median_h * (self.sigma * self.sigma / 2.0).exp()
    }

    fn sampler(&self) -> Result<rand_distr::LogNormal<f64>, TraceError> {
        let median_ms = self.median_h * MS_PER_HOUR;
        if !(median_ms.is_finite() && median_ms > 0.0 && self.sigma.is_finite() && self.sigma >= 0.0) {
            return Err(TraceError::value(
                "failure model",
                format!(
                    "repair: the median must be positive and sigma non-negative, got median {} h sigma {}",
                    self.median_h, self.sigma
                ),
            ));
        }
        rand_distr::LogNormal::new(median_ms.ln(), self.sigma)
            .map_err(|e| TraceError::value("failure model", e.to_string()))
    }
}

/// Seeded failures of whole nodes and of single GPUs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FailureModel {
    /// Time to failure of a node (all its GPUs and its heartbeats); `None`: nodes never fail.
    pub node: Option<Weibull>,
    /// Time to failure of one GPU; `None`: GPUs never fail on their own.
    pub gpu: Option<Weibull>,
    /// Repair time of nodes and GPUs alike.
    pub repair: LogNormal,
}

impl FailureModel {
    /// The long-run number of failures on `cluster` over `window`: per unit (node or GPU)
    /// window / (mean time to failure + mean repair), the renewal-theory rate.
    pub fn expected_failures(&self, cluster: &Cluster, window: (SimTime, SimTime)) -> f64 {
        let hours = window.1.since(window.0).as_ms() as f64 / MS_PER_HOUR;
        let per_unit = |w: Option<Weibull>| w.map_or(0.0, |w| hours / (w.mean_h() + self.repair.mean_h()));
        cluster.nodes().len() as f64 * per_unit(self.node) + f64::from(cluster.gpu_count()) * per_unit(self.gpu)
    }

    /// The failures of `cluster` from `start` on, drawn as they are needed: a feed the engine
    /// pulls for as long as the run lasts. Every unit starts new (up, age 0) at `start`.
    ///
    /// Randomness: `sim::rng::stream(seed, "failures")`, one ChaCha sub-stream per unit
    /// (`set_stream`): node `i` uses sub-stream `i`, the GPU with cluster-wide index `g` uses
    /// `2^32 + g`. A unit draws its time to failure, then that failure's repair, then (once it
    /// is up again) its next time to failure, and so on: so its history does not depend on how
    /// long the run goes, on the other units, or on whether GPU failures are modelled at all.
    /// Samples are floats in milliseconds, rounded once to whole milliseconds (a repair is at
    /// least 1 ms). Memory O(units); each event costs O(log units).
    pub fn feed(&self, cluster: &Cluster, start: SimTime, seed: u64) -> Result<ModelFeed, TraceError> {
        let samplers = Samplers {
            node: self.node.map(|w| w.sampler("node time to failure")).transpose()?,
            gpu: self.gpu.map(|w| w.sampler("GPU time to failure")).transpose()?,
            repair: self.repair.sampler()?,
        };
        check_rate("failure model", self.expected_failures(cluster, (SimTime::ZERO, SimTime(HOUR_MS))))?;
        let key = super::failures_key(seed);
        let mut units = Vec::new();
        for node in cluster.nodes() {
            if samplers.node.is_some() {
                units.push(Unit { node: node.id, slot: None, rng: super::substream(key, u64::from(node.id.0)) });
            }
            if samplers.gpu.is_some() {
                for (slot, gpu) in node.gpus().enumerate() {
                    let rng = super::substream(key, (1u64 << 32) + u64::from(gpu.0));
                    units.push(Unit { node: node.id, slot: Some(slot as u32), rng });
                }
            }
        }
        let mut feed = ModelFeed { samplers, units, next: BinaryHeap::new() };
        for index in 0..feed.units.len() {
            feed.schedule(index, start.as_ms());
        }
        Ok(feed)
    }

    /// The failures of `cluster` within `window` (start inclusive, end exclusive; repairs may
    /// end after it), sorted by [`super::event_order`]: the first part of [`Self::feed`] from
    /// the window start, as a finite history (for tests and fits; a run pulls the feed).
    pub fn generate(
        &self,
        cluster: &Cluster,
        window: (SimTime, SimTime),
        seed: u64,
    ) -> Result<Vec<ClusterEvent>, TraceError> {
        let mut feed = self.feed(cluster, window.0, seed)?;
        check_event_budget("failure model", self.expected_failures(cluster, window))?;
        Ok(take_until(&mut feed, window.1))
    }
}

/// The events of `feed` before `end`.
pub(super) fn take_until(feed: &mut dyn HardwareFeed, end: SimTime) -> Vec<ClusterEvent> {
    let mut events = Vec::new();
    while feed.peek_time().is_some_and(|t| t < end) {
        events.extend(feed.pop());
    }
    events
}

/// An error when a failure source would produce more than one failure per simulated second
/// on average (`per_hour` expected): a guard against a typo such as `node_mtbf_h=0.00001`,
/// not a model limit.
pub(super) fn check_rate(what: &str, per_hour: f64) -> Result<(), TraceError> {
    if per_hour.is_finite() && per_hour <= 3_600.0 {
        return Ok(());
    }
    Err(TraceError::value(
        what,
        format!(
            "about {per_hour:.0} failures per simulated hour, more than one a second: \
             use longer times between failures or a smaller time scale factor"
        ),
    ))
}

const HOUR_MS: u64 = 3_600_000;

#[derive(Debug)]
struct Samplers {
    node: Option<rand_distr::Weibull<f64>>,
    gpu: Option<rand_distr::Weibull<f64>>,
    repair: rand_distr::LogNormal<f64>,
}

/// One node or GPU: where it is and its own random stream.
#[derive(Debug)]
struct Unit {
    node: NodeId,
    /// `None`: the whole node; `Some(k)`: its GPU in slot `k`.
    slot: Option<u32>,
    rng: sim::rng::StreamRng,
}

/// A unit's next failure, ordered as [`super::event_order`] orders events: time, node, node
/// before GPU, slot (unique per unit, so no tie is left).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Next {
    at: u64,
    node: u32,
    is_gpu: bool,
    slot: u32,
    repair: u64,
    unit: u32,
}

/// [`FailureModel::feed`]: each unit's next failure, soonest first.
#[derive(Debug)]
pub struct ModelFeed {
    samplers: Samplers,
    units: Vec<Unit>,
    next: BinaryHeap<Reverse<Next>>,
}

impl ModelFeed {
    /// Draws unit `index`'s next failure, up from `up_from` (ms), and its repair.
    fn schedule(&mut self, index: usize, up_from: u64) {
        let unit = &mut self.units[index];
        let ttf = match unit.slot {
            None => self.samplers.node.as_ref(),
            Some(_) => self.samplers.gpu.as_ref(),
        };
        let Some(ttf) = ttf else { return };
        let at = up_from.saturating_add(round_ms(ttf.sample(&mut unit.rng)));
        let repair = round_ms(self.samplers.repair.sample(&mut unit.rng)).max(1);
        let (is_gpu, slot) = (unit.slot.is_some(), unit.slot.unwrap_or(0));
        self.next.push(Reverse(Next { at, node: unit.node.0, is_gpu, slot, repair, unit: index as u32 }));
    }
}

impl HardwareFeed for ModelFeed {
    fn peek_time(&mut self) -> Option<SimTime> {
        self.next.peek().map(|n| SimTime(n.0.at))
    }

    fn pop(&mut self) -> Option<ClusterEvent> {
        let Reverse(n) = self.next.pop()?;
        self.schedule(n.unit as usize, n.at.saturating_add(n.repair));
        let (time, node, repair) = (SimTime(n.at), NodeId(n.node), Some(SimDuration(n.repair)));
        Some(match n.is_gpu {
            false => ClusterEvent::NodeFail { time, node, repair },
            true => ClusterEvent::GpuFail { time, node, gpu: n.slot, repair },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sim::ClusterSpec;

    fn cluster(nodes: u32, gpus: u32) -> Cluster {
        Cluster::new(&ClusterSpec {
            pools: vec![sim::PoolSpec {
                name: "A".into(),
                gpu_type: "A".into(),
                nodes,
                gpus_per_node: gpus,
                nodes_per_rack: 0,
                speed_milli: 1000,
            }],
        })
        .unwrap()
    }

    fn model() -> FailureModel {
        FailureModel {
            node: Some(Weibull::with_mean(500.0, 0.8)),
            gpu: Some(Weibull::with_mean(4_000.0, 1.3)),
            repair: LogNormal { median_h: 6.0, sigma: 1.0 },
        }
    }

    const YEAR: (SimTime, SimTime) = (SimTime(0), SimTime(365 * 86_400_000));

    #[test]
    fn same_seed_same_events_other_seed_other_events() {
        let c = cluster(50, 8);
        let a = model().generate(&c, YEAR, 7).unwrap();
        assert_eq!(a, model().generate(&c, YEAR, 7).unwrap());
        assert_ne!(a, model().generate(&c, YEAR, 8).unwrap());
        assert!(a.windows(2).all(|w| super::super::event_order(&w[0]) <= super::super::event_order(&w[1])));
        assert!(a.iter().all(|e| e.time() < YEAR.1));
    }

    #[test]
    fn a_longer_window_extends_and_gpus_do_not_shift_nodes() {
        let c = cluster(20, 8);
        let half = (SimTime(0), SimTime(YEAR.1.as_ms() / 2));
        let long = model().generate(&c, YEAR, 1).unwrap();
        let short = model().generate(&c, half, 1).unwrap();
        let cut: Vec<ClusterEvent> = long.iter().copied().filter(|e| e.time() < half.1).collect();
        assert_eq!(short, cut);
        let nodes_only = FailureModel { gpu: None, ..model() }.generate(&c, YEAR, 1).unwrap();
        let node_events: Vec<ClusterEvent> =
            long.iter().copied().filter(|e| matches!(e, ClusterEvent::NodeFail { .. })).collect();
        assert_eq!(nodes_only, node_events);
    }

    #[test]
    fn long_run_rate_is_window_over_mttf_plus_mean_repair() {
        let c = cluster(400, 4);
        let window = (SimTime(0), SimTime(5 * 365 * 86_400_000));
        let m = model();
        let events = m.generate(&c, window, 3).unwrap();
        let hours = window.1.as_ms() as f64 / MS_PER_HOUR;
        let nodes = events.iter().filter(|e| matches!(e, ClusterEvent::NodeFail { .. })).count() as f64;
        let gpus = events.len() as f64 - nodes;
        let expected_node = 400.0 * hours / (500.0 + m.repair.mean_h());
        let expected_gpu = 1_600.0 * hours / (4_000.0 + m.repair.mean_h());
        assert!((nodes / expected_node - 1.0).abs() < 0.03, "node failures {nodes} vs {expected_node}");
        assert!((gpus / expected_gpu - 1.0).abs() < 0.05, "GPU failures {gpus} vs {expected_gpu}");
        // Repairs: lognormal median 6 h.
        let mut repairs: Vec<u64> = events
            .iter()
            .map(|e| match e {
                ClusterEvent::NodeFail { repair, .. } | ClusterEvent::GpuFail { repair, .. } => repair.unwrap().as_ms(),
                ClusterEvent::Heartbeat { .. } => 0,
            })
            .collect();
        repairs.sort_unstable();
        let median_h = repairs[repairs.len() / 2] as f64 / MS_PER_HOUR;
        assert!((median_h / 6.0 - 1.0).abs() < 0.05, "median repair {median_h} h");
    }

    #[test]
    fn bad_parameters_and_runaway_counts_are_errors() {
        let c = cluster(2, 2);
        let bad = |m: FailureModel| m.generate(&c, YEAR, 0).unwrap_err().to_string();
        assert!(bad(FailureModel { node: Some(Weibull { shape: 0.0, scale_h: 1.0 }), ..model() }).contains("shape"));
        assert!(bad(FailureModel { repair: LogNormal { median_h: -1.0, sigma: 1.0 }, ..model() }).contains("median"));
        let tiny = LogNormal { median_h: 1e-6, sigma: 0.0 };
        let e = bad(FailureModel { node: Some(Weibull::with_mean(1e-6, 1.0)), gpu: None, repair: tiny });
        assert!(e.contains("more than one a second"), "{e}");
        let none = FailureModel { node: None, gpu: None, ..model() };
        assert_eq!(none.generate(&c, YEAR, 0).unwrap(), []);
    }

    #[test]
    fn weibull_mean_and_scale_agree() {
        let w = Weibull::with_mean(100.0, 2.0);
        assert!((w.mean_h() - 100.0).abs() < 1e-9);
        assert!((w.scale_h - 100.0 / (std::f64::consts::PI.sqrt() / 2.0)).abs() < 1e-9);
        assert!((LogNormal { median_h: 2.0, sigma: 0.0 }.mean_h() - 2.0).abs() < 1e-12);
    }
}
