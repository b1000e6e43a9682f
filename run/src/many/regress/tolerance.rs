//! `[tolerance]`: how far each metric may move from the baseline, and which way is better.

use super::{expected, unknown_key};
use reports::compare::{Better, METRICS};
use reports::regress::{Check, MetricRule, Tolerance};
use std::collections::BTreeSet;

/// `[tolerance]`: `default = { relative = R, absolute = A }` and per metric the same, plus
/// `better = "lower" | "higher" | "either"`.
pub(super) fn parse_tolerance(value: &toml::Value) -> Result<Check, String> {
    let table = value.as_table().ok_or_else(|| expected("tolerance", "a table ([tolerance])", value))?;
    let mut check = Check::default();
    let metrics: BTreeSet<&str> = METRICS.iter().filter(|(_, b)| *b != Better::Identity).map(|(m, _)| *m).collect();
    for (metric, rule) in table {
        let place = format!("tolerance.{metric}");
        if metric != "default" && !metrics.contains(metric.as_str()) {
            let valid: Vec<String> =
                std::iter::once("default").chain(metrics.iter().copied()).map(String::from).collect();
            return Err(format!("unknown metric `{metric}` in [tolerance]; valid keys: {}", valid.join(", ")));
        }
        let rule_table = rule
            .as_table()
            .ok_or_else(|| expected(&place, "a table such as { relative = 0.02 } or { absolute = 1e-9 }", rule))?;
        let mut parsed = MetricRule::default();
        for (key, v) in rule_table {
            let number = || {
                v.as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| expected(&format!("{place}.{key}"), "a number >= 0", v))
            };
            match key.as_str() {
                "relative" => parsed.relative = Some(number()?),
                "absolute" => parsed.absolute = Some(number()?),
                "better" if metric != "default" => {
                    let text = v.as_str().ok_or_else(|| expected(&format!("{place}.better"), "a string", v))?;
                    let better: Better = text.parse().map_err(|e| format!("`{place}.better`: {e}"))?;
                    parsed.better = Some(better);
                }
                _ => {
                    let mut valid = vec!["relative".to_string(), "absolute".to_string()];
                    if metric != "default" {
                        valid.push("better".into());
                    }
                    return Err(unknown_key(key, &format!("[tolerance] {metric}"), &valid));
                }
            }
        }
        if metric == "default" {
            check.default =
                Tolerance { relative: parsed.relative.unwrap_or(0.0), absolute: parsed.absolute.unwrap_or(0.0) };
        } else {
            check.metrics.insert(metric.clone(), parsed);
        }
    }
    Ok(check)
}
