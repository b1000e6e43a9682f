//! [`fit()`]: the [`FailureModel`] that best explains a [`FailureTrace`], and how well it does.
//!
//! Method:
//! - **Up times.** Each node (for node-level faults) and each GPU (for GPU-level faults) is an
//!   alternating renewal process, as [`FailureModel::generate`] draws it. Its up times are the
//!   gaps from the end of one down period (the union of overlapping faults) to the next fault;
//!   the first is counted from the span start, as if every unit were renewed there. A fault
//!   that starts while its unit is already down is not a new failure of an up unit and adds no
//!   up time (it may lengthen the down period). Zero-length up times (a fault exactly when the
//!   last repair ended) cannot enter a Weibull likelihood and are counted, not fitted.
//! - **Censoring.** The time from a unit's last repair to the span end, and the whole span for
//!   units that never failed, are right-censored up times: they enter the likelihood as
//!   `P(T > c)`. Leaving them out would make failures look far more frequent than they are.
//!   A fault never repaired within the span ends its unit's observation.
//! - **Weibull** shape and scale by maximum likelihood over failures and censored times.
//! - **Repairs**: lognormal by maximum likelihood (mean and standard deviation of ln repair)
//!   over faults with a positive repair time, nodes and GPUs pooled; unrepaired and
//!   zero-length ones are counted, not fitted.
//! - **Goodness of fit**: the Kolmogorov-Smirnov distance D between the fitted CDF and the
//!   Kaplan-Meier estimate (the empirical CDF when nothing is censored), with the asymptotic
//!   Kolmogorov p-value for n = the number of failures (or repairs). Approximate twice over:
//!   censoring changes the null distribution, and the parameters come from the same data, which
//!   makes p optimistic (Lilliefors). A small p (< 0.05) says the family does not fit; a large
//!   one does not prove that it does.

use super::MS_PER_HOUR;
use super::model::{FailureModel, LogNormal, Weibull};
use super::numeric::{ks_distance, ks_p_value, lognormal_cdf, lognormal_mle, weibull_cdf, weibull_mle};
use super::trace::{FailureTrace, Fault};
use std::fmt;

/// The Kolmogorov-Smirnov check of one fit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GoodnessOfFit {
    /// Largest gap between the fitted CDF and the (Kaplan-Meier) empirical one.
    pub ks_d: f64,
    /// Approximate p-value of `ks_d` (see the module documentation).
    pub p_value: f64,
    /// Observations behind the p-value: failures, or repairs.
    pub n: usize,
}

/// A Weibull fit of times to failure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WeibullFit {
    pub weibull: Weibull,
    /// Units (nodes or GPUs) in the population.
    pub units: usize,
    /// Observed times to failure (failures of an up unit, zero-length ones excluded).
    pub failures: usize,
    /// Right-censored up times (one per unit still up at the span end).
    pub censored: usize,
    /// Failures at the very instant the unit came back (up time 0), not fitted.
    pub zero: usize,
    /// Faults that began while their unit was already down (no up time).
    pub overlapping: usize,
    pub fit: GoodnessOfFit,
}

/// A lognormal fit of repair times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogNormalFit {
    pub lognormal: LogNormal,
    /// Faults with a positive repair time: the sample.
    pub repairs: usize,
    /// Faults with a zero-length repair, not fitted.
    pub zero: usize,
    /// Faults not repaired within the span, not fitted.
    pub open: usize,
    pub fit: GoodnessOfFit,
}

/// What [`fit()`] found. `Display` prints a table and the `--failures` spec of the model.
#[derive(Debug, Clone, PartialEq)]
pub struct FitReport {
    /// The trace's summary line(s), as its `Display` prints them.
    pub trace: String,
    /// Node times to failure, when the trace has node-level faults (and at least two of them).
    pub node: Option<WeibullFit>,
    /// GPU times to failure, when the trace has GPU-level faults.
    pub gpu: Option<WeibullFit>,
    pub repair: Option<LogNormalFit>,
}

impl FitReport {
    /// The fitted model, when there is a repair fit and a fit of node or GPU failures.
    pub fn model(&self) -> Option<FailureModel> {
        let repair = self.repair?.lognormal;
        if self.node.is_none() && self.gpu.is_none() {
            return None;
        }
        Some(FailureModel { node: self.node.map(|f| f.weibull), gpu: self.gpu.map(|f| f.weibull), repair })
    }

    /// The `simulate --failures` spec of [`FitReport::model`]: `weibull:...` with means in
    /// hours (the spec takes the mean, see `FailureSpec`) and 6 significant digits.
    pub fn spec(&self) -> Option<String> {
        let model = self.model()?;
        let mut parts = Vec::new();
        if let Some(node) = model.node {
            parts.push(format!("node_mtbf_h={},shape={}", sig(node.mean_h()), sig(node.shape)));
        }
        if let Some(gpu) = model.gpu {
            let shape_key = if model.node.is_some() { "gpu_shape" } else { "shape" };
            parts.push(format!("gpu_mtbf_h={},{shape_key}={}", sig(gpu.mean_h()), sig(gpu.shape)));
        }
        parts.push(format!("repair_median_h={},repair_sigma={}", sig(model.repair.median_h), sig(model.repair.sigma)));
        Some(format!("weibull:{}", parts.join(",")))
    }
}

/// `x` with 6 significant digits, without exponent notation or trailing zeros.
fn sig(x: f64) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let decimals = (5 - x.abs().log10().floor() as i32).clamp(0, 12) as usize;
    let text = format!("{x:.decimals$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_owned() } else { text }
}

/// Fits `trace` by the method in the module documentation.
pub fn fit(trace: &FailureTrace) -> FitReport {
    let population = trace.population() as usize;
    let node_faults: Vec<&Fault> = trace.faults().iter().filter(|f| f.gpu.is_none()).collect();
    let gpu_faults: Vec<&Fault> = trace.faults().iter().filter(|f| f.gpu.is_some()).collect();
    let node = (!node_faults.is_empty()).then(|| {
        let mut units: Vec<Vec<&Fault>> = vec![Vec::new(); population];
        for f in &node_faults {
            units[f.node as usize].push(f);
        }
        fit_weibull(trace, &units)
    });
    let gpu = (!gpu_faults.is_empty()).then(|| {
        // Every GPU of the population when the trace says how many a node has; else the GPUs
        // that appear (those that never failed cannot be counted then).
        let mut slots: Vec<(u32, u32)> = match trace.gpus_per_node() {
            Some(g) => (0..trace.population()).flat_map(|n| (0..g).map(move |s| (n, s))).collect(),
            None => gpu_faults.iter().map(|f| (f.node, f.gpu.unwrap_or(0))).collect(),
        };
        slots.sort_unstable();
        slots.dedup();
        let mut units: Vec<Vec<&Fault>> = vec![Vec::new(); slots.len()];
        for f in &gpu_faults {
            if let Ok(i) = slots.binary_search(&(f.node, f.gpu.unwrap_or(0))) {
                units[i].push(f);
            }
        }
        fit_weibull(trace, &units)
    });
    FitReport { trace: trace.to_string(), node: node.flatten(), gpu: gpu.flatten(), repair: fit_repairs(trace) }
}

/// Up times in hours of every unit (faults sorted by start), then the Weibull fit.
fn fit_weibull(trace: &FailureTrace, units: &[Vec<&Fault>]) -> Option<WeibullFit> {
    let (start, end) = trace.span();
    let (mut observed, mut censored) = (Vec::new(), Vec::new());
    let (mut zero, mut overlapping) = (0, 0);
    for faults in units {
        // The end of the current down period; `None` once a fault is never repaired.
        let mut up_from = Some(start);
        for f in faults {
            match up_from {
                Some(up) if f.start >= up => {
                    let up_ms = f.start.since(up).as_ms();
                    if up_ms == 0 {
                        zero += 1;
                    } else {
                        observed.push(up_ms as f64 / MS_PER_HOUR);
                    }
                    up_from = f.end();
                }
                Some(up) => {
                    overlapping += 1;
                    up_from = f.end().map(|e| e.max(up));
                }
                None => overlapping += 1,
            }
        }
        if let Some(up) = up_from.filter(|&up| up < end) {
            censored.push(end.since(up).as_ms() as f64 / MS_PER_HOUR);
        }
    }
    let (shape, scale_h) = weibull_mle(&observed, &censored)?;
    let ks_d = ks_distance(&observed, &censored, |t| weibull_cdf(t, shape, scale_h));
    Some(WeibullFit {
        weibull: Weibull { shape, scale_h },
        units: units.len(),
        failures: observed.len(),
        censored: censored.len(),
        zero,
        overlapping,
        fit: GoodnessOfFit { ks_d, p_value: ks_p_value(ks_d, observed.len()), n: observed.len() },
    })
}

fn fit_repairs(trace: &FailureTrace) -> Option<LogNormalFit> {
    let repairs: Vec<f64> = trace
        .faults()
        .iter()
        .filter_map(|f| f.repair)
        .filter(|r| r.as_ms() > 0)
        .map(|r| r.as_ms() as f64 / MS_PER_HOUR)
        .collect();
    let zero = trace.faults().iter().filter(|f| f.repair.is_some_and(|r| r.as_ms() == 0)).count();
    let open = trace.faults().iter().filter(|f| f.repair.is_none()).count();
    let (mu, sigma) = lognormal_mle(&repairs)?;
    // All repairs equal (an assumed constant, as Alibaba's): the degenerate lognormal is exact.
    let ks_d = if sigma == 0.0 { 0.0 } else { ks_distance(&repairs, &[], |x| lognormal_cdf(x, mu, sigma)) };
    Some(LogNormalFit {
        lognormal: LogNormal { median_h: mu.exp(), sigma },
        repairs: repairs.len(),
        zero,
        open,
        fit: GoodnessOfFit { ks_d, p_value: ks_p_value(ks_d, repairs.len()), n: repairs.len() },
    })
}

impl fmt::Display for FitReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.trace)?;
        writeln!(f)?;
        writeln!(
            f,
            "{:<14} {:>7} {:>9} {:>9} {:>8} {:>11} {:>11} {:>7} {:>8}",
            "time to fail", "units", "failures", "censored", "shape", "scale_h", "mean_h", "KS D", "p"
        )?;
        for (name, fit) in [("node", self.node), ("gpu", self.gpu)] {
            let Some(w) = fit else { continue };
            writeln!(
                f,
                "{name:<14} {:>7} {:>9} {:>9} {:>8.4} {:>11.1} {:>11.1} {:>7.4} {:>8.4}",
                w.units,
                w.failures,
                w.censored,
                w.weibull.shape,
                w.weibull.scale_h,
                w.weibull.mean_h(),
                w.fit.ks_d,
                w.fit.p_value
            )?;
            if w.zero + w.overlapping > 0 {
                writeln!(
                    f,
                    "{:<14} not fitted: {} failures at the instant of a repair, {} during another fault",
                    "", w.zero, w.overlapping
                )?;
            }
        }
        if self.node.is_none() && self.gpu.is_none() {
            writeln!(f, "(no time-to-failure fit: fewer than two failures of an up node or GPU)")?;
        }
        writeln!(f)?;
        match self.repair {
            Some(r) => {
                writeln!(
                    f,
                    "{:<14} {:>7} {:>9} {:>9} {:>8} {:>11} {:>11} {:>7} {:>8}",
                    "repair", "", "repairs", "", "sigma", "median_h", "mean_h", "KS D", "p"
                )?;
                writeln!(
                    f,
                    "{:<14} {:>7} {:>9} {:>9} {:>8.4} {:>11.2} {:>11.2} {:>7.4} {:>8.4}",
                    "lognormal",
                    "",
                    r.repairs,
                    "",
                    r.lognormal.sigma,
                    r.lognormal.median_h,
                    r.lognormal.mean_h(),
                    r.fit.ks_d,
                    r.fit.p_value
                )?;
                if r.lognormal.sigma == 0.0 {
                    writeln!(f, "{:<14} every repair time is the same: a constant, not a fitted spread", "")?;
                }
                if r.zero + r.open > 0 {
                    writeln!(
                        f,
                        "{:<14} not fitted: {} zero-length, {} not repaired within the span",
                        "", r.zero, r.open
                    )?;
                }
            }
            None => writeln!(f, "(no repair fit: fewer than two positive repair times)")?,
        }
        writeln!(f)?;
        writeln!(f, "p is approximate: KS against Kaplan-Meier with censoring, parameters fitted on the same data.")?;
        match self.spec() {
            Some(spec) => writeln!(f, "--failures {spec}"),
            None => writeln!(f, "(no --failures model: nothing to fit)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::failures::FailureSpec;
    use sim::{Cluster, ClusterSpec, PoolSpec, SimDuration, SimTime};

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

    fn close(actual: f64, expected: f64, tolerance: f64, what: &str) {
        assert!((actual / expected - 1.0).abs() < tolerance, "{what}: fitted {actual}, true {expected}");
    }

    #[test]
    fn fitting_generated_failures_recovers_the_parameters() {
        // Means well below the window so that most units fail several times, and some never
        // (censoring matters for the estimate).
        let truth = FailureModel {
            node: Some(Weibull { shape: 0.75, scale_h: 900.0 }),
            gpu: Some(Weibull { shape: 1.4, scale_h: 6_000.0 }),
            repair: LogNormal { median_h: 8.0, sigma: 1.2 },
        };
        let c = cluster(300, 4);
        let window = (SimTime(0), SimTime(2 * 365 * 86_400_000));
        let events = truth.generate(&c, window, 5).unwrap();
        let trace = FailureTrace::from_events(&c, window, &events).unwrap();
        let report = fit(&trace);
        let node = report.node.unwrap();
        close(node.weibull.shape, 0.75, 0.05, "node shape");
        close(node.weibull.scale_h, 900.0, 0.06, "node scale");
        assert!(node.censored > 290 && node.fit.p_value > 0.01, "{node:?}");
        let gpu = report.gpu.unwrap();
        close(gpu.weibull.shape, 1.4, 0.08, "GPU shape");
        close(gpu.weibull.scale_h, 6_000.0, 0.06, "GPU scale");
        assert_eq!(gpu.units, 1_200);
        let repair = report.repair.unwrap();
        close(repair.lognormal.median_h, 8.0, 0.05, "repair median");
        close(repair.lognormal.sigma, 1.2, 0.05, "repair sigma");
        assert!(repair.fit.p_value > 0.01, "{repair:?}");

        // The printed spec rebuilds the fitted model.
        let spec: FailureSpec = report.spec().unwrap().parse().unwrap();
        let FailureSpec::Model(rebuilt) = spec else { panic!("{spec:?}") };
        let fitted = report.model().unwrap();
        close(rebuilt.node.unwrap().scale_h, fitted.node.unwrap().scale_h, 1e-4, "spec node scale");
        close(rebuilt.gpu.unwrap().shape, fitted.gpu.unwrap().shape, 1e-4, "spec GPU shape");
        close(rebuilt.repair.sigma, fitted.repair.sigma, 1e-4, "spec repair sigma");
        let text = report.to_string();
        assert!(text.contains("--failures weibull:node_mtbf_h="), "{text}");
    }

    #[test]
    fn a_wrong_family_is_rejected() {
        // Repairs of exactly 1 h or 100 h: no lognormal fits that.
        let faults: Vec<Fault> = (0..200u32)
            .map(|i| Fault {
                node: i,
                gpu: None,
                start: SimTime(1_000),
                repair: Some(SimDuration(if i % 2 == 0 { 3_600_000 } else { 360_000_000 })),
                class: "x".into(),
            })
            .collect();
        let trace = FailureTrace::new("t", 400, None, (SimTime(0), SimTime(1_000_000_000)), faults).unwrap();
        let repair = fit(&trace).repair.unwrap();
        assert!(repair.fit.p_value < 1e-6, "{repair:?}");
    }

    #[test]
    fn up_times_skip_overlaps_and_censor_the_tail() {
        let h = 3_600_000;
        let fault = |node, start_h: u64, repair_h: Option<u64>| Fault {
            node,
            gpu: None,
            start: SimTime(start_h * h),
            repair: repair_h.map(|r| SimDuration(r * h)),
            class: "x".into(),
        };
        // Node 0: up 10 h, down 5 h (with an overlapping fault inside), up 20 h, down until
        // 40 h, censored 60 h. Node 1: up 50 h, never repaired. Node 2: never fails (100 h).
        let faults = vec![
            fault(0, 10, Some(5)),
            fault(0, 12, Some(1)),
            fault(0, 35, Some(5)),
            fault(1, 50, None),
            fault(1, 60, Some(1)),
        ];
        let trace = FailureTrace::new("t", 3, None, (SimTime(0), SimTime(100 * h)), faults).unwrap();
        let node = fit(&trace).node.unwrap();
        assert_eq!((node.failures, node.censored, node.overlapping, node.zero), (3, 2, 2, 0));
        // Exponential-ish check of the MLE: with shape near 1, scale ~ total time / failures.
        let total = 10.0 + 20.0 + 50.0 + 60.0 + 100.0;
        assert!(node.weibull.scale_h > 0.3 * total / 3.0 && node.weibull.scale_h < 3.0 * total / 3.0);
    }

    #[test]
    fn six_significant_digits() {
        assert_eq!(sig(1234.56789), "1234.57");
        assert_eq!(sig(0.000123456789), "0.000123457");
        assert_eq!(sig(5.0), "5");
        assert_eq!(sig(1234567.0), "1234567");
    }
}
