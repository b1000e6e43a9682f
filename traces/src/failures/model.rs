//! [`FailureModel`]: failures drawn from distributions rather than replayed from a trace. Each
//! node (and each GPU) is an alternating renewal process: up for a Weibull time to failure,
//! counted from the end of its last repair (or from the window start), then down for a
//! lognormal repair time. The processes are independent of each other.

use super::numeric::weibull_mean_factor;
use super::{MS_PER_HOUR, check_event_budget, round_ms, sort_events};
use crate::error::TraceError;
use rand_distr::Distribution;
use sim::{Cluster, ClusterEvent, NodeId, SimDuration, SimTime};

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

    /// Draws the failures of `cluster` within `window` (start inclusive, end exclusive;
    /// repairs may end after it), sorted by [`super::event_order`]. Every unit starts new (up,
    /// age 0) at the window start.
    ///
    /// Randomness: `sim::rng::stream(seed, "failures")`, one ChaCha sub-stream per unit
    /// (`set_stream`): node `i` uses sub-stream `i`, the GPU with cluster-wide index `g` uses
    /// `2^32 + g`. So a unit's failures do not depend on the window end (a longer window
    /// extends them), on the other units, or on whether GPU failures are modelled at all.
    /// Each failure draws its time to failure then its repair, as floats in milliseconds,
    /// rounded once to whole milliseconds (a repair is at least 1 ms). Cost: O(units +
    /// failures).
    pub fn generate(
        &self,
        cluster: &Cluster,
        window: (SimTime, SimTime),
        seed: u64,
    ) -> Result<Vec<ClusterEvent>, TraceError> {
        let node_ttf = self.node.map(|w| w.sampler("node time to failure")).transpose()?;
        let gpu_ttf = self.gpu.map(|w| w.sampler("GPU time to failure")).transpose()?;
        let repair = self.repair.sampler()?;
        check_event_budget("failure model", self.expected_failures(cluster, window))?;
        let key = super::failures_key(seed);
        let mut events = Vec::new();
        let mut budget = super::MAX_FAILURE_EVENTS;
        for node in cluster.nodes() {
            if let Some(ttf) = &node_ttf {
                let mut rng = super::substream(key, u64::from(node.id.0));
                renewals(&mut rng, ttf, &repair, window, &mut budget, |time, repair| {
                    events.push(ClusterEvent::NodeFail { time, node: node.id, repair: Some(repair) });
                })?;
            }
            if let Some(ttf) = &gpu_ttf {
                for (slot, gpu) in node.gpus().enumerate() {
                    let mut rng = super::substream(key, (1u64 << 32) + u64::from(gpu.0));
                    let id: NodeId = node.id;
                    let slot = slot as u32;
                    renewals(&mut rng, ttf, &repair, window, &mut budget, |time, repair| {
                        events.push(ClusterEvent::GpuFail { time, node: id, gpu: slot, repair: Some(repair) });
                    })?;
                }
            }
        }
        sort_events(&mut events);
        Ok(events)
    }
}

/// One unit's alternating up (`ttf`) and down (`repair`) times from the window start; calls
/// `emit(failure time, repair)` for each failure inside the window.
fn renewals(
    rng: &mut sim::rng::StreamRng,
    ttf: &rand_distr::Weibull<f64>,
    repair: &rand_distr::LogNormal<f64>,
    window: (SimTime, SimTime),
    budget: &mut usize,
    mut emit: impl FnMut(SimTime, SimDuration),
) -> Result<(), TraceError> {
    let mut up_from = window.0.as_ms();
    loop {
        let at = up_from.saturating_add(round_ms(ttf.sample(rng)));
        if at >= window.1.as_ms() {
            return Ok(());
        }
        let repair_ms = round_ms(repair.sample(rng)).max(1);
        if *budget == 0 {
            return check_event_budget("failure model", f64::INFINITY);
        }
        *budget -= 1;
        emit(SimTime(at), SimDuration(repair_ms));
        up_from = at.saturating_add(repair_ms);
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
        assert!(e.contains("limit"), "{e}");
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
