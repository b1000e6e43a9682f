//! The numerics behind fitting: the gamma function (Weibull means), Weibull maximum likelihood
//! with right-censored observations, lognormal maximum likelihood, and the Kolmogorov-Smirnov
//! distance against a Kaplan-Meier estimate with its approximate p-value. Reports only: nothing
//! here feeds the event loop.

pub(crate) use crate::synth::normal_cdf;

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; relative error about 1e-15).
pub(crate) fn ln_gamma(x: f64) -> f64 {
    const COEFFICIENTS: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection: Γ(x) Γ(1 - x) = π / sin(πx).
        return (std::f64::consts::PI / (std::f64::consts::PI * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut sum = COEFFICIENTS[0];
    for (i, c) in COEFFICIENTS.iter().enumerate().skip(1) {
        sum += c / (x + i as f64);
    }
    let t = x + 7.5;
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + sum.ln()
}

/// Γ(1 + 1/shape): a Weibull's mean over its scale.
pub(crate) fn weibull_mean_factor(shape: f64) -> f64 {
    ln_gamma(1.0 + 1.0 / shape).exp()
}

/// Weibull CDF at `t` for (shape, scale).
pub(crate) fn weibull_cdf(t: f64, shape: f64, scale: f64) -> f64 {
    if t <= 0.0 { 0.0 } else { 1.0 - (-(t / scale).powf(shape)).exp() }
}

/// Lognormal CDF at `x` for (mu, sigma) of the underlying normal.
pub(crate) fn lognormal_cdf(x: f64, mu: f64, sigma: f64) -> f64 {
    if x <= 0.0 {
        0.0
    } else if sigma == 0.0 {
        if x.ln() < mu { 0.0 } else { 1.0 }
    } else {
        normal_cdf((x.ln() - mu) / sigma)
    }
}

/// Weibull maximum likelihood (shape, scale) from failure times `observed` (all > 0) and
/// right-censored times `censored` (survived at least that long, all > 0).
///
/// The scale is profiled out (`scale^k = Σ t^k / d` over all times, d = failures) and the
/// shape solves `Σ t^k ln t / Σ t^k - 1/k - mean(ln x over failures) = 0`, whose left side
/// increases with k; bisection on ln k over [1e-3, 1e3]. `None` with fewer than 2 failures.
pub(crate) fn weibull_mle(observed: &[f64], censored: &[f64]) -> Option<(f64, f64)> {
    if observed.len() < 2 || observed.iter().chain(censored).any(|&t| !(t > 0.0 && t.is_finite())) {
        return None;
    }
    // Work in units of the largest time: every t^k is then in (0, 1] and the largest is 1.
    let m = observed.iter().chain(censored).fold(0.0f64, |a, &b| a.max(b));
    let ln_all: Vec<f64> = observed.iter().chain(censored).map(|t| (t / m).ln()).collect();
    let d = observed.len() as f64;
    let mean_ln_observed = observed.iter().map(|x| (x / m).ln()).sum::<f64>() / d;
    let sums = |k: f64| {
        let (mut weighted, mut total) = (0.0, 0.0);
        for &l in &ln_all {
            let w = (k * l).exp();
            weighted += w * l;
            total += w;
        }
        (weighted, total)
    };
    let score = |k: f64| {
        let (weighted, total) = sums(k);
        weighted / total - 1.0 / k - mean_ln_observed
    };
    let (mut lo, mut hi) = (1e-3f64.ln(), 1e3f64.ln());
    for _ in 0..200 {
        let mid = 0.5 * (lo + hi);
        if score(mid.exp()) < 0.0 {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    let shape = (0.5 * (lo + hi)).exp();
    let (_, total) = sums(shape);
    let scale = m * (total / d).powf(1.0 / shape);
    Some((shape, scale))
}

/// Lognormal maximum likelihood (mu, sigma) of positive `values`; `None` with fewer than 2.
pub(crate) fn lognormal_mle(values: &[f64]) -> Option<(f64, f64)> {
    if values.len() < 2 || values.iter().any(|&v| !(v > 0.0 && v.is_finite())) {
        return None;
    }
    let n = values.len() as f64;
    let mu = values.iter().map(|v| v.ln()).sum::<f64>() / n;
    let variance = values.iter().map(|v| (v.ln() - mu).powi(2)).sum::<f64>() / n;
    Some((mu, variance.sqrt()))
}

/// The Kolmogorov-Smirnov distance between `cdf` and the Kaplan-Meier estimate of the
/// distribution of `observed` failure times with right-censored `censored` times: the largest
/// gap at either side of each step, and at the largest time. Without censoring the estimate
/// is the empirical CDF and this is the usual KS statistic D.
pub(crate) fn ks_distance(observed: &[f64], censored: &[f64], cdf: impl Fn(f64) -> f64) -> f64 {
    // (time, failure?) with failures before censorings at one time, as Kaplan-Meier has it.
    let mut times: Vec<(f64, bool)> =
        observed.iter().map(|&t| (t, true)).chain(censored.iter().map(|&t| (t, false))).collect();
    times.sort_by(|a, b| a.0.total_cmp(&b.0).then(b.1.cmp(&a.1)));
    let mut at_risk = times.len() as f64;
    let mut survival = 1.0f64;
    let mut distance = 0.0f64;
    let mut i = 0;
    while i < times.len() {
        let t = times[i].0;
        let (mut failed, mut left) = (0.0, 0.0);
        while i < times.len() && times[i].0 == t {
            if times[i].1 {
                failed += 1.0;
            } else {
                left += 1.0;
            }
            i += 1;
        }
        if failed > 0.0 {
            let fitted = cdf(t);
            let before = 1.0 - survival;
            survival *= 1.0 - failed / at_risk;
            let after = 1.0 - survival;
            distance = distance.max((fitted - before).abs()).max((fitted - after).abs());
        }
        at_risk -= failed + left;
    }
    if let Some(&(last, _)) = times.last() {
        distance = distance.max((cdf(last) - (1.0 - survival)).abs());
    }
    distance
}

/// The asymptotic p-value of a KS distance `d` over `n` observations (Kolmogorov's
/// distribution with Stephens' small-sample correction, as in Numerical Recipes' `probks`).
pub(crate) fn ks_p_value(d: f64, n: usize) -> f64 {
    if n == 0 || !d.is_finite() {
        return 1.0;
    }
    let root = (n as f64).sqrt();
    let lambda = (root + 0.12 + 0.11 / root) * d;
    let mut sum = 0.0;
    let mut sign = 2.0;
    let mut previous = 0.0f64;
    for j in 1..=100 {
        let term = sign * (-2.0 * f64::from(j * j) * lambda * lambda).exp();
        sum += term;
        if term.abs() <= 1e-3 * previous || term.abs() <= 1e-10 * sum {
            return sum.clamp(0.0, 1.0);
        }
        sign = -sign;
        previous = term.abs();
    }
    // The series has not converged: lambda is tiny, so the fit cannot be rejected.
    1.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gamma_matches_known_values() {
        assert!((ln_gamma(1.0)).abs() < 1e-13);
        assert!((ln_gamma(5.0) - 24f64.ln()).abs() < 1e-12);
        assert!((ln_gamma(0.5) - std::f64::consts::PI.sqrt().ln()).abs() < 1e-12);
        // Γ(1 + 1/2) = sqrt(pi)/2; shape 1 is the exponential (mean = scale).
        assert!((weibull_mean_factor(2.0) - std::f64::consts::PI.sqrt() / 2.0).abs() < 1e-12);
        assert!((weibull_mean_factor(1.0) - 1.0).abs() < 1e-12);
    }

    #[test]
    fn ks_p_values_are_those_of_the_table() {
        // Critical values of the Kolmogorov distribution: lambda 1.36 -> 0.05, 1.63 -> 0.01.
        let n = 10_000;
        let d = |lambda: f64| lambda / ((n as f64).sqrt() + 0.12 + 0.11 / (n as f64).sqrt());
        assert!((ks_p_value(d(1.358), n) - 0.05).abs() < 0.002);
        assert!((ks_p_value(d(1.628), n) - 0.01).abs() < 0.001);
        assert_eq!(ks_p_value(0.0, n), 1.0);
        assert!(ks_p_value(0.5, n) < 1e-9);
    }

    #[test]
    fn kaplan_meier_distance_without_censoring_is_plain_ks() {
        // Four points of a uniform(0, 1): the empirical CDF steps by 1/4.
        let d = ks_distance(&[0.1, 0.4, 0.6, 0.9], &[], |t| t.clamp(0.0, 1.0));
        assert!((d - 0.15).abs() < 1e-12, "{d}");
        // With censoring the steps are Kaplan-Meier's: F = 1/3 from 0.2 on (3 at risk). Gaps:
        // 0.2 just before the step, 1/3 - 0.2 after it, 0.5 - 1/3 at the largest time.
        let d = ks_distance(&[0.2], &[0.5, 0.5], |t| t.clamp(0.0, 1.0));
        assert!((d - 0.2).abs() < 1e-12, "{d}");
        let d = ks_distance(&[0.4], &[0.9, 0.9], |t| t.clamp(0.0, 1.0));
        assert!((d - (0.9 - 1.0 / 3.0)).abs() < 1e-12, "{d}");
    }

    #[test]
    fn weibull_mle_of_a_closed_form_case() {
        // The score equation holds at the returned shape and the scale is the profile one.
        let observed = [0.5, 1.0, 2.0, 3.5, 0.2, 1.7];
        let censored = [4.0, 4.0];
        let (k, scale) = weibull_mle(&observed, &censored).unwrap();
        let all: Vec<f64> = observed.iter().chain(&censored).copied().collect();
        let a: f64 = all.iter().map(|t| t.powf(k) * t.ln()).sum();
        let b: f64 = all.iter().map(|t| t.powf(k)).sum();
        let mean_ln = observed.iter().map(|x| x.ln()).sum::<f64>() / 6.0;
        assert!((a / b - 1.0 / k - mean_ln).abs() < 1e-9);
        assert!((scale.powf(k) - b / 6.0).abs() / (b / 6.0) < 1e-9);
        assert!(weibull_mle(&[1.0], &[2.0]).is_none());
    }
}
