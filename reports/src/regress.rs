//! CI regression of scheduling metrics: the committed baseline (one entry per run, keyed by
//! sweep, trace, policy and seed), per-metric tolerances and directions, and the comparison of
//! a fresh sweep with the baseline as a readable table of verdicts.
//!
//! Every numeric key of the run summary is a metric, except `seed` (part of the key) and
//! `wall_s` (not deterministic). The run digest is compared exactly: a run that made other
//! decisions is a change to look at, whatever its metrics say.
//!
//! Floats are compared as the baseline file stores them: the fresh sweep is written to JSON
//! and read back before it is compared, so JSON's decimal rounding never shows as a change.

use crate::Summary;
use crate::compare::Better;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::{self, Write};

/// The version of the baseline file format, written in the file.
pub const BASELINE_FORMAT: u32 = 1;

/// Which way `metric` gets better by default: the one table, `compare::METRICS`.
pub fn default_better(metric: &str) -> Better {
    crate::compare::direction(metric)
}

/// The summary keys that are not metrics: strings, the key's seed, the wall time.
const NOT_METRICS: &[&str] = &["policy", "seed", "digest", "wall_s"];

/// The metrics of a summary by name: every numeric key but `seed` and `wall_s`.
pub fn metrics_of(summary: &Summary) -> BTreeMap<String, Value> {
    let Ok(Value::Object(fields)) = serde_json::to_value(summary) else {
        unreachable!("a summary serialises to a JSON object")
    };
    fields.into_iter().filter(|(k, v)| !NOT_METRICS.contains(&k.as_str()) && (v.is_number() || v.is_null())).collect()
}

/// Identifies a run in a regression sweep. `policy` is the name the spec gives the policy
/// entry (its spec string unless renamed), so a baseline entry survives a change of spec.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RunKey {
    pub sweep: String,
    pub trace: String,
    pub policy: String,
    pub seed: u64,
}

impl fmt::Display for RunKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}/{}/{}", self.sweep, self.trace, self.policy, self.seed)
    }
}

/// One run of the baseline file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineRun {
    pub sweep: String,
    pub trace: String,
    pub policy: String,
    pub seed: u64,
    /// The policy's full name with every parameter, as the summary states it (not compared).
    pub policy_name: String,
    pub digest: String,
    pub metrics: BTreeMap<String, Value>,
}

impl BaselineRun {
    pub fn of(key: RunKey, summary: &Summary) -> BaselineRun {
        BaselineRun {
            sweep: key.sweep,
            trace: key.trace,
            policy: key.policy,
            seed: key.seed,
            policy_name: summary.policy.clone(),
            digest: summary.digest.clone(),
            metrics: metrics_of(summary),
        }
    }

    pub fn key(&self) -> RunKey {
        RunKey { sweep: self.sweep.clone(), trace: self.trace.clone(), policy: self.policy.clone(), seed: self.seed }
    }
}

/// The baseline file: runs in key order, metrics in name order, no wall times.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Baseline {
    pub schedlab_regress_baseline: u32,
    pub runs: Vec<BaselineRun>,
}

impl Baseline {
    /// A baseline of `runs`, sorted by key. Two runs with one key are a bug of the caller.
    pub fn new(mut runs: Vec<BaselineRun>) -> Baseline {
        runs.sort_by_key(BaselineRun::key);
        assert!(runs.windows(2).all(|w| w[0].key() != w[1].key()), "two runs with one key");
        Baseline { schedlab_regress_baseline: BASELINE_FORMAT, runs }
    }

    /// Pretty JSON, ending in a newline: the bytes `--bless` writes.
    pub fn to_json(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).expect("a baseline serialises");
        text.push('\n');
        text
    }

    /// Reads a baseline file's text; `Err` says what is wrong with it.
    pub fn parse(text: &str) -> Result<Baseline, String> {
        let baseline: Baseline = serde_json::from_str(text).map_err(|e| e.to_string())?;
        if baseline.schedlab_regress_baseline != BASELINE_FORMAT {
            return Err(format!(
                "baseline format {} is not the {BASELINE_FORMAT} this schedlab reads; bless again",
                baseline.schedlab_regress_baseline
            ));
        }
        let mut seen = BTreeSet::new();
        for run in &baseline.runs {
            if !seen.insert(run.key()) {
                return Err(format!("run {} appears twice", run.key()));
            }
        }
        Ok(baseline)
    }
}

/// How far a metric may move before it counts: within `max(absolute, relative x |baseline|)`.
/// Both zero: exact.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Tolerance {
    pub relative: f64,
    pub absolute: f64,
}

impl Tolerance {
    fn allows(self, baseline: f64, change: f64) -> bool {
        change.abs() <= self.absolute.max(self.relative * baseline.abs())
    }
}

/// What the spec says about one metric; unset parts come from the default tolerance and the
/// metric's default direction.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct MetricRule {
    pub relative: Option<f64>,
    pub absolute: Option<f64>,
    pub better: Option<Better>,
}

/// The rules of a comparison: tolerances, directions, and whether improvements fail.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Check {
    pub default: Tolerance,
    pub metrics: BTreeMap<String, MetricRule>,
    /// Improvements beyond tolerance fail too (bless them to accept).
    pub strict: bool,
}

impl Check {
    fn rule(&self, metric: &str) -> (Tolerance, Better) {
        let rule = self.metrics.get(metric).copied().unwrap_or_default();
        let tolerance = if rule.relative.is_none() && rule.absolute.is_none() {
            self.default
        } else {
            Tolerance { relative: rule.relative.unwrap_or(0.0), absolute: rule.absolute.unwrap_or(0.0) }
        };
        (tolerance, rule.better.unwrap_or_else(|| default_better(metric)))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Verdict {
    Ok,
    Improved,
    Regressed,
    /// A metric that is neither better higher nor lower moved beyond its tolerance.
    Changed,
    DigestChanged,
    NewRun,
    MissingRun,
    /// A metric the baseline does not have (a newer schedlab): reported, not a failure.
    NewMetric,
    /// A metric of the baseline that the run no longer reports.
    MissingMetric,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Improved => "improved",
            Verdict::Regressed => "REGRESSED",
            Verdict::Changed => "CHANGED",
            Verdict::DigestChanged => "digest changed",
            Verdict::NewRun => "new run",
            Verdict::MissingRun => "missing run",
            Verdict::NewMetric => "new metric",
            Verdict::MissingMetric => "missing metric",
        }
    }

    fn fails(self, strict: bool) -> bool {
        match self {
            Verdict::Ok | Verdict::NewMetric => false,
            Verdict::Improved => strict,
            _ => true,
        }
    }
}

/// One line of the diff table.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub run: RunKey,
    pub metric: String,
    pub baseline: String,
    pub now: String,
    pub change: String,
    pub verdict: Verdict,
    /// The value differs from the baseline (within tolerance or not).
    pub moved: bool,
}

/// The outcome of comparing a sweep with its baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    pub rows: Vec<Row>,
    pub runs: usize,
    pub strict: bool,
}

impl Comparison {
    pub fn count(&self, verdict: Verdict) -> usize {
        self.rows.iter().filter(|r| r.verdict == verdict).count()
    }

    /// Any regression, change, digest change, missing or new run (and improvement if strict).
    pub fn failed(&self) -> bool {
        self.rows.iter().any(|r| r.verdict.fails(self.strict))
    }

    /// Runs whose digest or any metric moved, and new and missing runs.
    pub fn changed_runs(&self) -> BTreeSet<&RunKey> {
        self.rows.iter().filter(|r| r.moved || r.verdict != Verdict::Ok).map(|r| &r.run).collect()
    }

    /// The diff table: every row that moved or is not ok (every row with `all`), then a line
    /// of counts. Columns: run, metric, baseline, now, change, verdict.
    pub fn table(&self, all: bool) -> String {
        let header = ["run", "metric", "baseline", "now", "change", "verdict"];
        let shown: Vec<[String; 6]> = self
            .rows
            .iter()
            .filter(|r| all || r.moved || r.verdict != Verdict::Ok)
            .map(|r| {
                let verdict = if r.verdict == Verdict::Improved && self.strict {
                    "IMPROVED (strict)".to_string()
                } else {
                    r.verdict.as_str().to_string()
                };
                [r.run.to_string(), r.metric.clone(), r.baseline.clone(), r.now.clone(), r.change.clone(), verdict]
            })
            .collect();
        let mut text = String::new();
        if !shown.is_empty() {
            let mut widths = header.map(str::len);
            for row in &shown {
                for (w, cell) in widths.iter_mut().zip(row) {
                    *w = (*w).max(cell.chars().count());
                }
            }
            let line = |text: &mut String, cells: [&str; 6]| {
                let mut out = String::new();
                for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
                    let pad = w - cell.chars().count();
                    match i {
                        2..=4 => out.push_str(&format!("{}{cell}  ", " ".repeat(pad))),
                        5 => out.push_str(cell),
                        _ => out.push_str(&format!("{cell}{}  ", " ".repeat(pad))),
                    }
                }
                text.push_str(out.trim_end());
                text.push('\n');
            };
            line(&mut text, header);
            line(&mut text, widths.map(|w| "-".repeat(w)).each_ref().map(String::as_str));
            for row in &shown {
                line(&mut text, row.each_ref().map(String::as_str));
            }
            text.push('\n');
        }
        let digests = self.rows.iter().filter(|r| r.metric == "digest").count();
        let metrics = self.rows.iter().filter(|r| r.metric != WHOLE_RUN).count() - digests;
        let _ = write!(
            text,
            "{} run(s); {digests} digests and {metrics} metrics compared: {} ok, {} improved, {} REGRESSED, {} CHANGED, \
             {} digest changed, {} new runs, {} missing runs",
            self.runs,
            self.count(Verdict::Ok),
            self.count(Verdict::Improved),
            self.count(Verdict::Regressed),
            self.count(Verdict::Changed),
            self.count(Verdict::DigestChanged),
            self.count(Verdict::NewRun),
            self.count(Verdict::MissingRun),
        );
        for (verdict, what) in [(Verdict::NewMetric, "new metrics"), (Verdict::MissingMetric, "missing metrics")] {
            if self.count(verdict) > 0 {
                let _ = write!(text, ", {} {what}", self.count(verdict));
            }
        }
        text.push('\n');
        text
    }
}

/// The metric column of a new or missing run's row (its digest is shown).
const WHOLE_RUN: &str = "-";

/// Compares the runs of `now` with those of `baseline` under `check`. Rows come in run key
/// order, metrics in name order, the digest first.
pub fn compare(baseline: &Baseline, now: &Baseline, check: &Check) -> Comparison {
    let before: BTreeMap<RunKey, &BaselineRun> = baseline.runs.iter().map(|r| (r.key(), r)).collect();
    let after: BTreeMap<RunKey, &BaselineRun> = now.runs.iter().map(|r| (r.key(), r)).collect();
    let keys: BTreeSet<&RunKey> = before.keys().chain(after.keys()).collect();
    let mut rows = Vec::new();
    for key in keys {
        let row = |metric: &str, baseline: String, now: String, change: String, verdict: Verdict, moved: bool| Row {
            run: key.clone(),
            metric: metric.to_string(),
            baseline,
            now,
            change,
            verdict,
            moved,
        };
        match (before.get(key), after.get(key)) {
            (None, Some(run)) => {
                rows.push(row(WHOLE_RUN, String::new(), run.digest.clone(), String::new(), Verdict::NewRun, true));
            }
            (Some(run), None) => {
                rows.push(row(WHOLE_RUN, run.digest.clone(), String::new(), String::new(), Verdict::MissingRun, true));
            }
            (Some(old), Some(new)) => {
                let same = old.digest == new.digest;
                let verdict = if same { Verdict::Ok } else { Verdict::DigestChanged };
                rows.push(row("digest", old.digest.clone(), new.digest.clone(), String::new(), verdict, !same));
                let names: BTreeSet<&String> = old.metrics.keys().chain(new.metrics.keys()).collect();
                for name in names {
                    let (b, n) = (old.metrics.get(name), new.metrics.get(name));
                    let (tolerance, better) = check.rule(name);
                    let (verdict, moved, change) = match (b, n) {
                        (Some(b), Some(n)) => judge(b, n, tolerance, better),
                        (None, Some(_)) => (Verdict::NewMetric, true, String::new()),
                        (Some(_), None) => (Verdict::MissingMetric, true, String::new()),
                        (None, None) => unreachable!("a name from one of the two"),
                    };
                    let (b, n) = show_pair(b, n);
                    rows.push(row(name, b, n, change, verdict, moved));
                }
            }
            (None, None) => unreachable!("a key from one of the two"),
        }
    }
    Comparison { rows, runs: now.runs.len(), strict: check.strict }
}

/// The verdict on one metric, whether it moved, and the change as text.
fn judge(baseline: &Value, now: &Value, tolerance: Tolerance, better: Better) -> (Verdict, bool, String) {
    let (Some(b), Some(n)) = (baseline.as_f64(), now.as_f64()) else {
        // null (a value JSON cannot hold): equal or changed
        return if baseline == now {
            (Verdict::Ok, false, String::new())
        } else {
            (Verdict::Changed, true, String::new())
        };
    };
    if b == n {
        return (Verdict::Ok, false, String::new());
    }
    let change = n - b;
    let text = if b == 0.0 {
        signed(change, 4)
    } else {
        format!("{} ({} %)", signed(change, 4), signed(change / b.abs() * 100.0, 3))
    };
    let verdict = if tolerance.allows(b, change) {
        Verdict::Ok
    } else {
        match better {
            Better::Lower if change > 0.0 => Verdict::Regressed,
            Better::Higher if change < 0.0 => Verdict::Regressed,
            Better::Lower | Better::Higher => Verdict::Improved,
            Better::Neither | Better::Identity => Verdict::Changed,
        }
    };
    (verdict, true, text)
}

/// Baseline and current values as text, with just enough digits to tell them apart.
fn show_pair(baseline: Option<&Value>, now: Option<&Value>) -> (String, String) {
    let plain = |v: Option<&Value>| match v {
        None => String::new(),
        Some(Value::Number(n)) if n.is_u64() || n.is_i64() => n.to_string(),
        Some(Value::Number(n)) => sig(n.as_f64().unwrap_or(f64::NAN), 6, true),
        Some(other) => other.to_string(),
    };
    if let (Some(b), Some(n)) = (baseline.and_then(Value::as_f64), now.and_then(Value::as_f64))
        && b != n
        && !(baseline.is_some_and(|v| v.is_u64()) && now.is_some_and(|v| v.is_u64()))
    {
        for digits in 6..=17 {
            let (bt, nt) = (sig(b, digits, false), sig(n, digits, false));
            if bt != nt {
                return (bt, nt);
            }
        }
    }
    (plain(baseline), plain(now))
}

/// `x` with `digits` significant digits; trailing zeros trimmed with `trim`.
fn sig(x: f64, digits: usize, trim: bool) -> String {
    if x == 0.0 || !x.is_finite() {
        return format!("{x}");
    }
    let trimmed = |t: &str| {
        if trim && t.contains('.') { t.trim_end_matches('0').trim_end_matches('.').to_string() } else { t.to_string() }
    };
    let magnitude = x.abs().log10().floor() as i32;
    if (-4..15).contains(&magnitude) {
        let decimals = (digits as i32 - 1 - magnitude).max(0) as usize;
        trimmed(&format!("{x:.decimals$}"))
    } else {
        let text = format!("{x:.*e}", digits - 1);
        let (mantissa, exponent) = text.split_once('e').expect("scientific notation has an e");
        format!("{}e{exponent}", trimmed(mantissa))
    }
}

/// A signed change: `+1.5`, `-0.25`.
fn signed(x: f64, digits: usize) -> String {
    let text = sig(x, digits, true);
    if x > 0.0 { format!("+{text}") } else { text }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary() -> Summary {
        Summary {
            policy: "fifo".into(),
            seed: 1,
            cluster_gpus: 8,
            jobs: 10,
            jobs_finished: 10,
            mean_jct_s: 100.5,
            p50_jct_s: 90.0,
            p95_jct_s: 200.0,
            p99_jct_s: 210.0,
            mean_queue_s: 10.25,
            makespan_s: 1000.0,
            utilisation: 0.6172839506172839,
            goodput: 0.6172839506172839,
            jobs_per_hour: 36.0,
            gpu_hours: 1.5,
            events: 20,
            decision_points: 15,
            digest: "0123456789abcdef".into(),
            wall_s: Some(0.25),
            ..Summary::default()
        }
    }

    fn key() -> RunKey {
        RunKey { sweep: "main".into(), trace: "builtin".into(), policy: "fifo".into(), seed: 1 }
    }

    fn baseline(s: &Summary) -> Baseline {
        Baseline::parse(&Baseline::new(vec![BaselineRun::of(key(), s)]).to_json()).expect("round trip")
    }

    #[test]
    fn every_summary_metric_has_a_direction_and_nothing_else_does() {
        let metrics = metrics_of(&summary());
        let known: BTreeSet<&str> =
            crate::compare::METRICS.iter().filter(|(_, b)| *b != Better::Identity).map(|(m, _)| *m).collect();
        let found: BTreeSet<&str> = metrics.keys().map(String::as_str).collect();
        assert_eq!(known, found, "METRICS and Summary's numeric keys differ");
        assert!(!metrics.contains_key("wall_s") && !metrics.contains_key("seed"));
    }

    #[test]
    fn the_baseline_has_no_wall_time_and_reads_back_equal() {
        let b = baseline(&summary());
        let text = b.to_json();
        assert!(!text.contains("wall_s"), "{text}");
        assert_eq!(Baseline::parse(&text).expect("parses"), b);
        assert!(compare(&b, &b, &Check::default()).rows.iter().all(|r| r.verdict == Verdict::Ok));
    }

    #[test]
    fn direction_tolerance_and_strictness_decide_the_verdict() {
        let old = baseline(&summary());
        let worse = baseline(&Summary { mean_jct_s: 101.5, utilisation: 0.5, ..summary() });
        let verdict = |c: &Comparison, m: &str| c.rows.iter().find(|r| r.metric == m).expect("row").verdict;
        let exact = compare(&old, &worse, &Check::default());
        assert_eq!(verdict(&exact, "mean_jct_s"), Verdict::Regressed);
        assert_eq!(verdict(&exact, "utilisation"), Verdict::Regressed);
        assert!(exact.failed());
        let loose = Check {
            default: Tolerance { relative: 0.25, absolute: 0.0 },
            metrics: BTreeMap::from([(
                "utilisation".into(),
                MetricRule { absolute: Some(0.2), ..MetricRule::default() },
            )]),
            strict: false,
        };
        let ok = compare(&old, &worse, &loose);
        assert!(!ok.failed(), "{}", ok.table(false));
        assert!(ok.table(false).contains("mean_jct_s"), "a moved metric is shown even when ok");
        // The other way round it is an improvement: fine unless strict.
        let better = compare(&worse, &old, &Check::default());
        assert_eq!(verdict(&better, "mean_jct_s"), Verdict::Improved);
        assert!(!better.failed());
        assert!(compare(&worse, &old, &Check { strict: true, ..Check::default() }).failed());
    }

    #[test]
    fn digests_runs_and_either_way_metrics() {
        let old = baseline(&summary());
        let other = baseline(&Summary { digest: "fedcba9876543210".into(), events: 21, ..summary() });
        let c = compare(&old, &other, &Check::default());
        assert_eq!(c.count(Verdict::DigestChanged), 1);
        assert_eq!(c.count(Verdict::Changed), 1, "events moved: neither better nor worse");
        let moved = Baseline::new(vec![BaselineRun::of(RunKey { seed: 2, ..key() }, &summary())]);
        let c = compare(&old, &moved, &Check::default());
        assert_eq!((c.count(Verdict::NewRun), c.count(Verdict::MissingRun)), (1, 1));
        assert!(c.failed());
    }

    #[test]
    fn values_show_enough_digits_to_differ() {
        let (b, n) = show_pair(Some(&Value::from(0.61728394)), Some(&Value::from(0.61728395)));
        assert_eq!((b.as_str(), n.as_str()), ("0.6172839", "0.6172840"));
        assert_eq!(sig(6612.3456, 6, true), "6612.35");
        assert_eq!(sig(90.0, 6, true), "90");
        assert_eq!(signed(-1.5, 4), "-1.5");
        assert_eq!(signed(2.0e-12, 3), "+2e-12");
    }
}
