//! The statistics a report draws: empirical CDFs (thinned for drawing) and 95 % confidence
//! intervals of a mean across seeds (Student's t).

/// The empirical CDF of `values` as (value, fraction at or below) points, at most `max_points`
/// of them (evenly spaced ranks, the smallest and largest always kept). Sorted with
/// `total_cmp`, so the result never depends on the input order.
pub fn cdf(values: &[f64], max_points: usize) -> Vec<(f64, f64)> {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let n = sorted.len();
    if n == 0 {
        return Vec::new();
    }
    let points = max_points.max(2).min(n);
    let mut out = Vec::with_capacity(points + 1);
    for k in 0..points {
        // Ranks 1..=n, evenly spaced, first and last included.
        let rank = if points == 1 { n } else { 1 + k * (n - 1) / (points - 1) };
        out.push((sorted[rank - 1], rank as f64 / n as f64));
    }
    out
}

/// Mean, and the half-width of its 95 % confidence interval (None for fewer than 2 values).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    pub mean: f64,
    pub half_width: Option<f64>,
    pub n: usize,
}

/// The mean of `values` with a two-sided 95 % Student-t interval: mean +- t(0.975, n-1) s / sqrt(n),
/// with s the sample standard deviation.
pub fn estimate(values: &[f64]) -> Estimate {
    let n = values.len();
    if n == 0 {
        return Estimate { mean: f64::NAN, half_width: None, n };
    }
    if n >= 2 && values.iter().all(|v| *v == values[0]) {
        // Every seed gave the same value: exactly that value, with no spread at all (a sum
        // and a division could leave a rounding error that would read as a tiny interval).
        return Estimate { mean: values[0], half_width: Some(0.0), n };
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n < 2 {
        return Estimate { mean, half_width: None, n };
    }
    let variance = values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1) as f64;
    let half_width = t_975(n - 1) * (variance / n as f64).sqrt();
    Estimate { mean, half_width: Some(half_width), n }
}

/// t(0.975, df), the two-sided 95 % quantile of Student's t: exact to 3 decimals for df <= 30
/// (the usual table), then the Cornish-Fisher expansion around the normal quantile, which is
/// within 1e-3 there.
pub fn t_975(df: usize) -> f64 {
    const TABLE: [f64; 30] = [
        12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
    ];
    assert!(df >= 1, "t quantile needs at least one degree of freedom");
    if df <= TABLE.len() {
        return TABLE[df - 1];
    }
    let z: f64 = 1.959_963_984_540_054;
    let v = df as f64;
    let (z3, z5, z7) = (z.powi(3), z.powi(5), z.powi(7));
    z + (z3 + z) / (4.0 * v)
        + (5.0 * z5 + 16.0 * z3 + 3.0 * z) / (96.0 * v * v)
        + (3.0 * z7 + 19.0 * z5 + 17.0 * z3 - 15.0 * z) / (384.0 * v * v * v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cdf_keeps_ends_and_is_monotone() {
        let values: Vec<f64> = (0..10_000).rev().map(f64::from).collect();
        let points = cdf(&values, 100);
        assert_eq!(points.len(), 100);
        assert_eq!(points[0], (0.0, 1.0 / 10_000.0));
        assert_eq!(*points.last().unwrap(), (9999.0, 1.0));
        assert!(points.windows(2).all(|w| w[0].0 <= w[1].0 && w[0].1 < w[1].1));
        assert_eq!(cdf(&[3.0, 1.0, 2.0], 100), vec![(1.0, 1.0 / 3.0), (2.0, 2.0 / 3.0), (3.0, 1.0)]);
        assert!(cdf(&[], 10).is_empty());
    }

    #[test]
    fn interval_matches_a_hand_computation() {
        // mean 2, s = 1, n = 3: t(0.975, 2) = 4.303, half-width 4.303 / sqrt(3).
        let e = estimate(&[1.0, 2.0, 3.0]);
        assert_eq!(e.mean, 2.0);
        assert!((e.half_width.unwrap() - 4.303 / 3f64.sqrt()).abs() < 1e-12);
        assert_eq!(estimate(&[5.0]).half_width, None);
        assert_eq!(estimate(&[5.0, 5.0]).half_width, Some(0.0));
        assert_eq!(estimate(&[0.1, 0.1, 0.1]), Estimate { mean: 0.1, half_width: Some(0.0), n: 3 });
    }

    #[test]
    fn t_quantiles_join_the_table_smoothly() {
        assert_eq!(t_975(1), 12.706);
        assert!((t_975(31) - 2.040).abs() < 1e-3, "{}", t_975(31));
        assert!((t_975(60) - 2.000).abs() < 1e-3, "{}", t_975(60));
        assert!((t_975(120) - 1.980).abs() < 1e-3, "{}", t_975(120));
        assert!((t_975(100_000) - 1.960).abs() < 1e-3);
    }
}
