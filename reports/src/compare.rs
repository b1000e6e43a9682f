//! Two runs, or two sweeps, side by side: each metric in A and in B, the change from A to B
//! (absolute and relative), and which of the two is better on it.
//!
//! Better means lower for times, lost GPU-time, failed or unfinished jobs, preemptions and
//! the Little's-law error; higher for utilisation, goodput, jobs per hour and finished jobs.
//! Finished jobs rank first, on every metric: a run that finished fewer jobs is never better
//! than one that finished more, whatever the metric says (its JCT is over fewer jobs, and a
//! run that finished none reads 0 s), and a run that finished none is never better at all
//! (see `rank`).
//! Metrics that describe the input rather than the policy (cluster size, jobs, hardware
//! failures, events, allocated GPU-hours) have no better side: a change there reads
//! `changed`. Text values (the digest, the policy spec) are `same` or `different`.
//! `wall_s` is never compared: it is the machine's speed, not the policy's.
//!
//! Sweeps (see `SweepRecord`) are compared run by run when both hold exactly the same
//! (trace, policy, seed) runs; otherwise per (trace, policy), each metric averaged over that
//! policy's seeds on each side.

use crate::sweep::{RUN_COLUMNS, SweepTable};
use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt::Write as _;

/// In which direction a metric is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Better {
    Lower,
    Higher,
    /// No better side: the input, or a count with no good direction.
    Neither,
    /// Compared for equality only: the digest, the policy spec, the seed.
    Identity,
}

/// Every summary key but `wall_s`, in the order of `Summary`'s fields, with its direction.
pub const METRICS: &[(&str, Better)] = &[
    ("policy", Better::Identity),
    ("seed", Better::Identity),
    ("cluster_gpus", Better::Neither),
    ("jobs", Better::Neither),
    ("jobs_finished", Better::Higher),
    ("jobs_unschedulable", Better::Lower),
    ("jobs_rejected", Better::Lower),
    // Cancelled by the user (the trace's `cancel_s`, `live cancel`), not the policy.
    ("jobs_cancelled", Better::Neither),
    ("jobs_failed", Better::Lower),
    ("jobs_unfinished", Better::Lower),
    ("mean_jct_s", Better::Lower),
    ("p50_jct_s", Better::Lower),
    ("p95_jct_s", Better::Lower),
    ("p99_jct_s", Better::Lower),
    ("mean_queue_s", Better::Lower),
    ("mean_wait_s", Better::Lower),
    ("makespan_s", Better::Lower),
    ("utilisation", Better::Higher),
    ("goodput", Better::Higher),
    ("jobs_per_hour", Better::Higher),
    ("gpu_hours", Better::Neither),
    ("preemptions", Better::Lower),
    ("lost_gpu_hours", Better::Lower),
    ("lost_redo_gpu_hours", Better::Lower),
    ("lost_detection_gpu_hours", Better::Lower),
    ("lost_overhead_gpu_hours", Better::Lower),
    ("lost_checkpoint_gpu_hours", Better::Lower),
    ("failures", Better::Neither),
    ("task_failures", Better::Lower),
    ("retries", Better::Lower),
    ("mean_detection_lag_s", Better::Lower),
    ("failed_gpu_hours", Better::Neither),
    ("failures_span_s", Better::Neither),
    ("ettr_mean", Better::Higher),
    ("ettr_gpu_weighted", Better::Higher),
    ("interruptions", Better::Lower),
    ("interruptions_per_day", Better::Lower),
    ("retired_nodes", Better::Neither),
    ("retired_gpu_hours", Better::Lower),
    ("spare_swaps", Better::Neither),
    ("restarts_without_spare", Better::Lower),
    ("no_spare_h", Better::Lower),
    ("reserved_gpu_hours", Better::Neither),
    ("horizon_stop_s", Better::Neither),
    ("queue_fairness_jain", Better::Higher),
    ("ftf_rho_mean", Better::Lower),
    ("ftf_rho_max", Better::Lower),
    ("dag_jobs", Better::Neither),
    ("dag_stretch_mean", Better::Lower),
    ("data_locality", Better::Higher),
    ("littles_law_error", Better::Lower),
    ("recorded_starts_jobs", Better::Neither),
    ("recorded_starts_within_5s", Better::Higher),
    ("recorded_start_p50_s", Better::Lower),
    ("recorded_start_p99_s", Better::Lower),
    ("events", Better::Neither),
    ("decision_points", Better::Neither),
    ("refused_decisions", Better::Lower),
    ("digest", Better::Identity),
];

impl Better {
    /// As written in a regression spec: `lower`, `higher`, `either` (no better side).
    pub fn as_str(self) -> &'static str {
        match self {
            Better::Lower => "lower",
            Better::Higher => "higher",
            Better::Neither => "either",
            Better::Identity => "identity",
        }
    }
}

impl std::str::FromStr for Better {
    type Err = String;
    fn from_str(s: &str) -> Result<Better, String> {
        match s {
            "lower" => Ok(Better::Lower),
            "higher" => Ok(Better::Higher),
            "either" => Ok(Better::Neither),
            _ => Err(format!("expected lower|higher|either, got `{s}`")),
        }
    }
}

/// Metrics over finished jobs only: with none finished they mean nothing (a summary writes 0).
pub const OVER_FINISHED: &[&str] = &[
    "mean_jct_s",
    "p50_jct_s",
    "p95_jct_s",
    "p99_jct_s",
    "mean_queue_s",
    "mean_wait_s",
    "ftf_rho_mean",
    "ftf_rho_max",
    "dag_stretch_mean",
];

/// One run (or one policy's mean over seeds) on one metric, as ranked: its finished jobs
/// (None where its summary predates `jobs_finished`) and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Standing {
    pub finished: Option<f64>,
    pub value: f64,
}

/// The ranking rule, the one used by `compare`, the report's bold and its verdict: Greater
/// when `a` ranks above `b`. Jobs finished first, more is better, on every metric; then the
/// metric in its direction. Where neither finished a job, neither ranks above the other
/// (Equal). None for a metric with no better side, or a value that is not a number.
pub fn rank(better: Better, a: Standing, b: Standing) -> Option<Ordering> {
    if !matches!(better, Better::Lower | Better::Higher) {
        return None;
    }
    if let (Some(fa), Some(fb)) = (a.finished, b.finished) {
        if fa != fb {
            return fa.partial_cmp(&fb);
        }
        if fa == 0.0 {
            return Some(Ordering::Equal);
        }
    }
    let order = a.value.partial_cmp(&b.value)?;
    Some(if better == Better::Lower { order.reverse() } else { order })
}

/// The positions of the best of `standings` (None: no value) by `rank`: those no other ranks
/// above, several on a tie. Empty when nothing ranks (no better side), and a run that finished
/// no job is never among them.
pub fn best(better: Better, standings: &[Option<Standing>]) -> Vec<usize> {
    let present: Vec<(usize, Standing)> = standings.iter().enumerate().filter_map(|(i, s)| Some((i, (*s)?))).collect();
    present
        .iter()
        .filter(|(_, s)| s.finished != Some(0.0) && !s.value.is_nan())
        .filter(|(_, s)| present.iter().all(|(_, o)| rank(better, *o, *s).is_some_and(|r| r != Ordering::Greater)))
        .map(|(i, _)| *i)
        .collect()
}

/// Never compared: wall-clock time.
const SKIPPED: [&str; 1] = ["wall_s"];

/// The direction of `key`; `Neither` for a key this version does not know.
pub fn direction(key: &str) -> Better {
    METRICS.iter().find(|(k, _)| *k == key).map_or(Better::Neither, |(_, d)| *d)
}

#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Number(f64),
    Text(String),
    Absent,
}

impl Value {
    /// A CSV field as a value of `key`: text for identity keys, else a number where it reads as one.
    fn parse(key: &str, field: &str) -> Value {
        if field.is_empty() {
            return Value::Absent;
        }
        match field.parse::<f64>() {
            Ok(n) if direction(key) != Better::Identity => Value::Number(n),
            _ => Value::Text(field.to_string()),
        }
    }

    fn from_json(key: &str, value: &serde_json::Value) -> Value {
        match value {
            serde_json::Value::Null => Value::Absent,
            serde_json::Value::Number(n) if direction(key) != Better::Identity => {
                n.as_f64().map_or(Value::Text(n.to_string()), Value::Number)
            }
            serde_json::Value::String(s) => Value::Text(s.clone()),
            other => Value::Text(other.to_string()),
        }
    }

    fn show(&self) -> String {
        match self {
            Value::Number(n) => number(*n),
            Value::Text(t) => t.clone(),
            Value::Absent => "-".to_string(),
        }
    }
}

/// One run's (or one group's) metrics, in display order.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Metrics(pub Vec<(String, Value)>);

impl Metrics {
    /// From a summary.json object: the known keys in `METRICS` order, then any others by name.
    pub fn from_summary_json(object: &serde_json::Map<String, serde_json::Value>) -> Metrics {
        let known = METRICS.iter().filter_map(|(key, _)| Some((key.to_string(), object.get(*key)?)));
        let mut others: Vec<_> = object
            .iter()
            .filter(|(key, _)| !METRICS.iter().any(|(k, _)| k == key) && !SKIPPED.contains(&key.as_str()))
            .map(|(key, value)| (key.clone(), value))
            .collect();
        others.sort_by(|a, b| a.0.cmp(&b.0));
        Metrics(known.chain(others).map(|(key, value)| (key.clone(), Value::from_json(&key, value))).collect())
    }

    /// From (column, field) pairs of a table row, in column order.
    pub fn from_fields<'a>(fields: impl IntoIterator<Item = (&'a str, &'a str)>) -> Metrics {
        Metrics(
            fields
                .into_iter()
                .filter(|(key, _)| !SKIPPED.contains(key))
                .map(|(key, field)| (key.to_string(), Value::parse(key, field)))
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }
}

/// The outcome of one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Equal in A and B.
    Same,
    ABetter,
    BBetter,
    /// A number with no better side changed.
    Changed,
    /// A text value (digest, spec) differs.
    Different,
    /// Present on one side only.
    Missing,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Same => "same",
            Verdict::ABetter => "A",
            Verdict::BBetter => "B",
            Verdict::Changed => "changed",
            Verdict::Different => "different",
            Verdict::Missing => "missing",
        }
    }
}

/// One line of a comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub metric: String,
    pub a: Value,
    pub b: Value,
    pub verdict: Verdict,
}

impl Row {
    /// B - A, for numbers.
    pub fn change(&self) -> Option<f64> {
        match (&self.a, &self.b) {
            (Value::Number(a), Value::Number(b)) => Some(b - a),
            _ => None,
        }
    }

    /// (B - A) / |A| in percent; None where A is 0 and B is not, or for text.
    pub fn percent(&self) -> Option<f64> {
        match (&self.a, &self.b) {
            (Value::Number(a), Value::Number(b)) if a == b => Some(0.0),
            (Value::Number(a), Value::Number(b)) if *a != 0.0 => Some((b - a) / a.abs() * 100.0),
            _ => None,
        }
    }
}

/// `key` compared, A and B having finished `finished` jobs (see `rank`).
fn verdict(key: &str, a: &Value, b: &Value, finished: (Option<f64>, Option<f64>)) -> Verdict {
    match (a, b) {
        _ if a == b => Verdict::Same,
        (Value::Absent, _) | (_, Value::Absent) => Verdict::Missing,
        (Value::Number(x), Value::Number(y)) => match direction(key) {
            better @ (Better::Lower | Better::Higher) => {
                let (a, b) =
                    (Standing { finished: finished.0, value: *x }, Standing { finished: finished.1, value: *y });
                match rank(better, a, b) {
                    Some(Ordering::Greater) => Verdict::ABetter,
                    Some(Ordering::Less) => Verdict::BBetter,
                    _ => Verdict::Changed,
                }
            }
            Better::Neither => Verdict::Changed,
            Better::Identity => Verdict::Different,
        },
        _ => Verdict::Different,
    }
}

/// A number of `metrics`, if it has one under `key`.
fn number_of(metrics: &Metrics, key: &str) -> Option<f64> {
    match metrics.get(key) {
        Some(Value::Number(n)) => Some(*n),
        _ => None,
    }
}

/// Every metric of A, then those only B has, compared (finished jobs first, see `rank`).
pub fn compare(a: &Metrics, b: &Metrics) -> Vec<Row> {
    let finished = (number_of(a, "jobs_finished"), number_of(b, "jobs_finished"));
    let mut keys: Vec<&str> = a.0.iter().map(|(k, _)| k.as_str()).collect();
    keys.extend(b.0.iter().map(|(k, _)| k.as_str()).filter(|k| a.get(k).is_none()));
    keys.into_iter()
        .map(|key| {
            let a = a.get(key).cloned().unwrap_or(Value::Absent);
            let b = b.get(key).cloned().unwrap_or(Value::Absent);
            Row { metric: key.to_string(), verdict: verdict(key, &a, &b, finished), a, b }
        })
        .collect()
}

/// Whether every row is the same.
pub fn unchanged(rows: &[Row]) -> bool {
    rows.iter().all(|r| r.verdict == Verdict::Same)
}

/// A number as it reads best: integers whole, others to 6 significant digits, tiny ones in
/// scientific notation.
fn number(n: f64) -> String {
    if n == 0.0 {
        return "0".to_string();
    }
    if n.fract() == 0.0 && n.abs() < 1e15 {
        return format!("{n:.0}");
    }
    if n.abs() < 1e-3 {
        return format!("{n:.3e}");
    }
    let decimals = (5 - n.abs().log10().floor() as i32).clamp(0, 6) as usize;
    let text = format!("{n:.decimals$}");
    if text.contains('.') { text.trim_end_matches('0').trim_end_matches('.').to_string() } else { text }
}

/// The table: metric, A, B, change, change %, better. With `only_changed`, rows that are the
/// same on both sides are left out.
/// Where finished jobs differ, a first line says so: they decide every metric.
pub fn render_rows(rows: &[Row], only_changed: bool) -> String {
    let finished = rows.iter().find(|r| r.metric == "jobs_finished");
    let (done_a, done_b) = match finished {
        Some(Row { a: Value::Number(a), b: Value::Number(b), .. }) => (Some(*a), Some(*b)),
        _ => (None, None),
    };
    let mut out = String::new();
    if let (Some(a), Some(b)) = (done_a, done_b)
        && a != b
    {
        let _ = writeln!(
            out,
            "A finished {} jobs, B {}: jobs finished rank first, so {} is better on every metric with a better side.",
            number(a),
            number(b),
            if a > b { "A" } else { "B" }
        );
    }
    // A metric over finished jobs of a side that finished none is not a value.
    let shown = |value: &Value, done: Option<f64>, key: &str| {
        if done == Some(0.0) && OVER_FINISHED.contains(&key) { "no job finished".to_string() } else { value.show() }
    };
    let mut lines = vec![["metric", "A", "B", "change", "change %", "better"].map(str::to_string)];
    for row in rows.iter().filter(|r| !only_changed || r.verdict != Verdict::Same) {
        let change =
            row.change().map_or(String::new(), |c| if c > 0.0 { format!("+{}", number(c)) } else { number(c) });
        let percent = match (row.percent(), row.change()) {
            (Some(p), _) => format!("{p:+.2}%"),
            (None, Some(_)) => "n/a".to_string(),
            (None, None) => String::new(),
        };
        lines.push([
            row.metric.clone(),
            shown(&row.a, done_a, &row.metric),
            shown(&row.b, done_b, &row.metric),
            change,
            percent,
            row.verdict.as_str().to_string(),
        ]);
    }
    let widths: Vec<usize> = (0..6).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
    for line in &lines {
        // Names and text left, numbers right.
        let _ = writeln!(
            out,
            "{:<w0$}  {:>w1$}  {:>w2$}  {:>w3$}  {:>w4$}  {}",
            line[0],
            line[1],
            line[2],
            line[3],
            line[4],
            line[5],
            w0 = widths[0],
            w1 = widths[1],
            w2 = widths[2],
            w3 = widths[3],
            w4 = widths[4],
        );
    }
    out
}

/// What `better` means, for the foot of a printed comparison.
pub const LEGEND: &str = "\
better: first more finished jobs, on every metric (fewer finished is never better; none finished never wins);
        then lower JCT, queueing, makespan, lost GPU-hours, failed or unfinished jobs, preemptions, Little's-law
        error; higher utilisation, goodput, jobs per hour; `changed`: no better side (the input: cluster, jobs,
        hardware failures, events; or neither side finished a job); `different`: text (digest, policy spec).
change = B - A; change % = (B - A) / |A|.";

/// One run of a sweep, as its sweep.csv row gives it.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepRecord {
    pub trace: String,
    /// The policy with every parameter (the summary's `policy`): `fifo` and `fifo[skip=false]` pair.
    pub policy: String,
    pub seed: u64,
    /// Every column from `policy` on.
    pub metrics: Metrics,
}

impl SweepRecord {
    /// The runs of a sweep.csv. `what` names it in errors.
    pub fn from_table(table: &SweepTable, what: &str) -> Result<Vec<SweepRecord>, String> {
        let column = |name: &str| {
            table.header.iter().position(|c| c == name).ok_or_else(|| format!("{what}: no `{name}` column"))
        };
        let (trace, seed, policy) = (column("trace")?, column("seed")?, column("policy")?);
        let metrics_from = RUN_COLUMNS.len();
        table
            .rows
            .iter()
            .enumerate()
            .map(|(i, row)| {
                if row.len() != table.header.len() {
                    return Err(format!(
                        "{what}: row {} has {} fields, the header {}",
                        i + 2,
                        row.len(),
                        table.header.len()
                    ));
                }
                Ok(SweepRecord {
                    trace: row[trace].clone(),
                    policy: row[policy].clone(),
                    seed: row[seed].parse().map_err(|_| format!("{what}: row {}: seed `{}`", i + 2, row[seed]))?,
                    metrics: Metrics::from_fields(
                        table.header[metrics_from..]
                            .iter()
                            .map(String::as_str)
                            .zip(row[metrics_from..].iter().map(String::as_str)),
                    ),
                })
            })
            .collect()
    }

    fn key(&self) -> (&str, &str, u64) {
        (&self.trace, &self.policy, self.seed)
    }
}

/// One side-by-side table of a sweep comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Pair {
    /// What was paired: `trace  policy  seed 3`, or for aggregates both sides' policies and seeds.
    pub label: String,
    pub rows: Vec<Row>,
}

/// How two sweeps were compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Pairing {
    /// Run by run: both sweeps hold the same (trace, policy, seed) runs.
    Runs,
    /// Per (trace, policy), means over each side's seeds; groups matched on (trace, policy).
    PolicyMeans,
    /// Per trace, means over seeds, each sweep holding one (different) policy per trace.
    TraceMeans,
    /// The one group of A against the one group of B.
    OneToOne,
}

#[derive(Debug, Clone, PartialEq)]
pub struct SweepComparison {
    pub pairing: Pairing,
    pub pairs: Vec<Pair>,
    /// (trace, policy) groups with no counterpart, described.
    pub only_a: Vec<String>,
    pub only_b: Vec<String>,
}

/// The runs of one (trace, policy) in a sweep.
struct Group<'a> {
    trace: &'a str,
    policy: &'a str,
    runs: Vec<&'a SweepRecord>,
}

impl Group<'_> {
    fn seeds(&self) -> String {
        self.runs.iter().map(|r| r.seed.to_string()).collect::<Vec<_>>().join(",")
    }

    /// `runs`, `seeds`, then each metric's mean over the runs. The digest (one per run) is left
    /// out; other text is kept where every run has the same (the policy).
    fn means(&self) -> Metrics {
        let mut out = vec![
            ("runs".to_string(), Value::Number(self.runs.len() as f64)),
            ("seeds".to_string(), Value::Text(self.seeds())),
        ];
        let Some(first) = self.runs.first() else { return Metrics(out) };
        for (key, value) in &first.metrics.0 {
            if key == "seed" || key == "digest" {
                continue;
            }
            let values: Vec<Option<&Value>> = self.runs.iter().map(|r| r.metrics.get(key)).collect();
            match value {
                Value::Number(_) => {
                    let numbers: Option<Vec<f64>> =
                        values.iter().map(|v| if let Some(Value::Number(n)) = v { Some(*n) } else { None }).collect();
                    if let Some(numbers) = numbers {
                        out.push((key.clone(), Value::Number(numbers.iter().sum::<f64>() / numbers.len() as f64)));
                    }
                }
                _ if values.iter().all(|v| *v == Some(value)) => out.push((key.clone(), value.clone())),
                _ => {}
            }
        }
        Metrics(out)
    }

    fn describe(&self) -> String {
        format!("{}  {}  seeds {}", self.trace, self.policy, self.seeds())
    }
}

fn groups(records: &[SweepRecord]) -> Vec<Group<'_>> {
    let mut groups: Vec<Group<'_>> = Vec::new();
    for r in records {
        match groups.iter_mut().find(|g| g.trace == r.trace && g.policy == r.policy) {
            Some(g) => g.runs.push(r),
            None => groups.push(Group { trace: &r.trace, policy: &r.policy, runs: vec![r] }),
        }
    }
    groups
}

fn unique_keys(records: &[SweepRecord]) -> Option<BTreeSet<(&str, &str, u64)>> {
    let keys: BTreeSet<_> = records.iter().map(SweepRecord::key).collect();
    (keys.len() == records.len()).then_some(keys)
}

fn aggregate_pair(a: &Group<'_>, b: &Group<'_>) -> Pair {
    let label = if a.trace == b.trace && a.policy == b.policy {
        format!("{}  {}  mean over seeds (A: {}; B: {})", a.trace, a.policy, a.seeds(), b.seeds())
    } else if a.trace == b.trace {
        format!(
            "{}  mean over seeds  (A: {} seeds {}; B: {} seeds {})",
            a.trace,
            a.policy,
            a.seeds(),
            b.policy,
            b.seeds()
        )
    } else {
        format!("mean over seeds  (A: {}; B: {})", a.describe(), b.describe())
    };
    Pair { label, rows: compare(&a.means(), &b.means()) }
}

/// The records with each trace named by its file name (`philly.csv`), so that one sweep run
/// from two working directories pairs; kept whole where two traces of the sweep share a name.
fn short_traces(records: &[SweepRecord]) -> Vec<SweepRecord> {
    let short =
        |t: &str| std::path::Path::new(t).file_name().map_or(t.to_string(), |n| n.to_string_lossy().into_owned());
    let full: BTreeSet<&str> = records.iter().map(|r| r.trace.as_str()).collect();
    let names: BTreeSet<String> = full.iter().map(|t| short(t)).collect();
    let injective = names.len() == full.len();
    records
        .iter()
        .map(|r| SweepRecord { trace: if injective { short(&r.trace) } else { r.trace.clone() }, ..r.clone() })
        .collect()
}

/// Compares two sweeps (traces by file name where that is unambiguous): run by run when they hold the same (trace, policy, seed) runs, each
/// once; otherwise by the means over seeds, pairing (trace, policy) groups that both hold
/// (the others listed as unpaired), or, when the sweeps share no (trace, policy), pairing
/// per trace when each holds one policy per trace, or the one group of each.
pub fn compare_sweeps(a: &[SweepRecord], b: &[SweepRecord]) -> Result<SweepComparison, String> {
    let (a, b) = (&short_traces(a), &short_traces(b));
    if let (Some(keys_a), Some(keys_b)) = (unique_keys(a), unique_keys(b))
        && !keys_a.is_empty()
        && keys_a == keys_b
    {
        let pairs = a
            .iter()
            .map(|ra| {
                let rb = b.iter().find(|rb| rb.key() == ra.key()).expect("same key sets");
                Pair {
                    label: format!("{}  {}  seed {}", ra.trace, ra.policy, ra.seed),
                    rows: compare(&ra.metrics, &rb.metrics),
                }
            })
            .collect();
        return Ok(SweepComparison { pairing: Pairing::Runs, pairs, only_a: vec![], only_b: vec![] });
    }
    let (groups_a, groups_b) = (groups(a), groups(b));
    if groups_a.is_empty() || groups_b.is_empty() {
        return Err(format!("nothing to compare: A has {} runs, B has {}", a.len(), b.len()));
    }
    let common =
        |g: &Group<'_>, others: &[Group<'_>]| others.iter().any(|o| o.trace == g.trace && o.policy == g.policy);
    if groups_a.iter().any(|g| common(g, &groups_b)) {
        let pairs = groups_a
            .iter()
            .filter_map(|ga| {
                let gb = groups_b.iter().find(|gb| gb.trace == ga.trace && gb.policy == ga.policy)?;
                Some(aggregate_pair(ga, gb))
            })
            .collect();
        let unpaired = |gs: &[Group<'_>], others: &[Group<'_>]| {
            gs.iter().filter(|g| !common(g, others)).map(Group::describe).collect()
        };
        return Ok(SweepComparison {
            pairing: Pairing::PolicyMeans,
            pairs,
            only_a: unpaired(&groups_a, &groups_b),
            only_b: unpaired(&groups_b, &groups_a),
        });
    }
    fn traces<'a>(gs: &[Group<'a>]) -> BTreeSet<&'a str> {
        gs.iter().map(|g| g.trace).collect()
    }
    let (traces_a, traces_b) = (traces(&groups_a), traces(&groups_b));
    if traces_a.len() == groups_a.len() && traces_b.len() == groups_b.len() && traces_a == traces_b {
        let pairs = groups_a
            .iter()
            .map(|ga| aggregate_pair(ga, groups_b.iter().find(|gb| gb.trace == ga.trace).expect("same traces")))
            .collect();
        return Ok(SweepComparison { pairing: Pairing::TraceMeans, pairs, only_a: vec![], only_b: vec![] });
    }
    if let ([ga], [gb]) = (groups_a.as_slice(), groups_b.as_slice()) {
        return Ok(SweepComparison {
            pairing: Pairing::OneToOne,
            pairs: vec![aggregate_pair(ga, gb)],
            only_a: vec![],
            only_b: vec![],
        });
    }
    let list = |gs: &[Group<'_>]| gs.iter().map(|g| format!("{} {}", g.trace, g.policy)).collect::<Vec<_>>().join("; ");
    Err(format!(
        "cannot pair these sweeps: they share no (trace, policy), and neither holds one policy per trace of the \
         same traces nor a single policy. A has: {}. B has: {}",
        list(&groups_a),
        list(&groups_b)
    ))
}

/// The printed form of a sweep comparison.
pub fn render_sweeps(cmp: &SweepComparison, only_changed: bool) -> String {
    let mut out = String::new();
    let how = match cmp.pairing {
        Pairing::Runs => "run by run: both sweeps hold the same (trace, policy, seed) runs",
        Pairing::PolicyMeans => "per (trace, policy), means over each side's seeds (the runs do not pair one to one)",
        Pairing::TraceMeans => "per trace, means over seeds: the sweeps hold different policies, one per trace",
        Pairing::OneToOne => "one policy against the other, means over seeds",
    };
    let _ = writeln!(out, "compared {how}");
    let same = cmp.pairs.iter().filter(|p| unchanged(&p.rows)).count();
    if cmp.pairing == Pairing::Runs {
        let _ = writeln!(out, "identical (every metric and the digest): {same} of {} runs", cmp.pairs.len());
    }
    for pair in &cmp.pairs {
        if cmp.pairing == Pairing::Runs && unchanged(&pair.rows) {
            continue;
        }
        let _ = writeln!(out, "\n{}", pair.label);
        if unchanged(&pair.rows) {
            let _ = writeln!(out, "no change");
        }
        out.push_str(&render_rows(&pair.rows, only_changed));
    }
    for (side, list) in [("A", &cmp.only_a), ("B", &cmp.only_b)] {
        for group in list {
            let _ = writeln!(out, "\nonly in {side} (not compared): {group}");
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn metrics(pairs: &[(&str, Value)]) -> Metrics {
        Metrics(pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect())
    }

    fn n(x: f64) -> Value {
        Value::Number(x)
    }

    fn t(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    fn row<'a>(rows: &'a [Row], key: &str) -> &'a Row {
        rows.iter().find(|r| r.metric == key).unwrap_or_else(|| panic!("no row {key}"))
    }

    #[test]
    fn every_summary_key_has_a_direction_in_field_order() {
        let columns = crate::sweep::sweep_columns();
        let summary_keys: Vec<&str> =
            columns[RUN_COLUMNS.len()..].iter().map(String::as_str).filter(|k| *k != "seed").collect();
        let listed: Vec<&str> = METRICS.iter().map(|(k, _)| *k).filter(|k| *k != "seed").collect();
        assert_eq!(summary_keys, listed, "METRICS must list every summary key, in order");
    }

    #[test]
    fn a_run_against_itself_is_the_same_everywhere() {
        let m = metrics(&[("mean_jct_s", n(10.0)), ("utilisation", n(0.5)), ("digest", t("abc"))]);
        let rows = compare(&m, &m);
        assert!(unchanged(&rows));
        assert_eq!(row(&rows, "mean_jct_s").change(), Some(0.0));
        assert_eq!(row(&rows, "mean_jct_s").percent(), Some(0.0));
    }

    #[test]
    fn lower_and_higher_directions_name_the_better_side() {
        let a = metrics(&[
            ("mean_jct_s", n(100.0)),
            ("p99_jct_s", n(50.0)),
            ("utilisation", n(0.5)),
            ("goodput", n(0.7)),
            ("jobs_per_hour", n(3.0)),
            ("lost_gpu_hours", n(1.0)),
            ("littles_law_error", n(0.0)),
            ("events", n(10.0)),
            ("digest", t("aaaa")),
            ("policy", t("fifo")),
        ]);
        let b = metrics(&[
            ("mean_jct_s", n(80.0)),
            ("p99_jct_s", n(60.0)),
            ("utilisation", n(0.6)),
            ("goodput", n(0.6)),
            ("jobs_per_hour", n(3.0)),
            ("lost_gpu_hours", n(2.0)),
            ("littles_law_error", n(1e-3)),
            ("events", n(12.0)),
            ("digest", t("bbbb")),
            ("policy", t("fifo")),
        ]);
        let rows = compare(&a, &b);
        let verdicts: Vec<(&str, Verdict)> = rows.iter().map(|r| (r.metric.as_str(), r.verdict)).collect();
        assert_eq!(
            verdicts,
            [
                ("mean_jct_s", Verdict::BBetter),
                ("p99_jct_s", Verdict::ABetter),
                ("utilisation", Verdict::BBetter),
                ("goodput", Verdict::ABetter),
                ("jobs_per_hour", Verdict::Same),
                ("lost_gpu_hours", Verdict::ABetter),
                ("littles_law_error", Verdict::ABetter),
                ("events", Verdict::Changed),
                ("digest", Verdict::Different),
                ("policy", Verdict::Same),
            ]
        );
        assert_eq!(row(&rows, "mean_jct_s").change(), Some(-20.0));
        assert_eq!(row(&rows, "mean_jct_s").percent(), Some(-20.0));
        assert_eq!(row(&rows, "littles_law_error").percent(), None, "from zero: no percentage");
        let table = render_rows(&rows, true);
        assert!(!table.contains("jobs_per_hour"), "{table}");
        assert!(
            table.lines().any(|l| l.starts_with("mean_jct_s") && l.contains("-20.00%") && l.ends_with(" B")),
            "{table}"
        );
    }

    #[test]
    fn jobs_finished_rank_first_on_every_metric() {
        // B finished nothing, so its JCT and queueing read 0: it is still never better.
        let a = metrics(&[("jobs_finished", n(100.0)), ("mean_jct_s", n(500.0)), ("preemptions", n(9000.0))]);
        let b = metrics(&[("jobs_finished", n(0.0)), ("mean_jct_s", n(0.0)), ("preemptions", n(0.0))]);
        let rows = compare(&a, &b);
        let verdicts: Vec<Verdict> = rows.iter().map(|r| r.verdict).collect();
        assert_eq!(verdicts, [Verdict::ABetter, Verdict::ABetter, Verdict::ABetter]);
        let table = render_rows(&rows, false);
        assert!(table.contains("no job finished"), "{table}");
        assert!(table.starts_with("A finished 100 jobs, B 0"), "{table}");
        // Fewer finished but better on the metric: still ranked below.
        let c = metrics(&[("jobs_finished", n(99.0)), ("mean_jct_s", n(10.0))]);
        assert_eq!(row(&compare(&a, &c), "mean_jct_s").verdict, Verdict::ABetter);
        // Equal finished: the metric decides; none finished on either side: neither wins.
        let d = metrics(&[("jobs_finished", n(100.0)), ("mean_jct_s", n(10.0))]);
        assert_eq!(row(&compare(&a, &d), "mean_jct_s").verdict, Verdict::BBetter);
        let e = metrics(&[("jobs_finished", n(0.0)), ("mean_jct_s", n(5.0))]);
        assert_eq!(row(&compare(&b, &e), "mean_jct_s").verdict, Verdict::Changed);
    }

    #[test]
    fn the_best_of_several_never_finished_fewer_jobs() {
        let s = |finished: f64, value: f64| Some(Standing { finished: Some(finished), value });
        // The run that started nothing (0 finished, JCT 0) and the one with fewer finished lose.
        assert_eq!(best(Better::Lower, &[s(0.0, 0.0), s(90.0, 1.0), s(100.0, 50.0), s(100.0, 60.0)]), [2]);
        assert_eq!(best(Better::Higher, &[s(100.0, 0.5), None, s(100.0, 0.5)]), [0, 2], "ties share it");
        assert!(best(Better::Lower, &[s(0.0, 0.0), s(0.0, 0.0)]).is_empty(), "nothing finished: no winner");
        assert!(best(Better::Neither, &[s(1.0, 0.0), s(2.0, 0.0)]).is_empty());
        let old = |value: f64| Some(Standing { finished: None, value });
        assert_eq!(best(Better::Lower, &[old(3.0), old(2.0)]), [1], "no jobs_finished: the metric alone");
    }

    #[test]
    fn a_key_on_one_side_only_is_missing() {
        let rows = compare(&metrics(&[("mean_jct_s", n(1.0))]), &metrics(&[("new_metric", n(2.0))]));
        assert_eq!(rows.iter().map(|r| r.verdict).collect::<Vec<_>>(), [Verdict::Missing, Verdict::Missing]);
    }

    #[test]
    fn summary_json_keeps_field_order_types_and_leaves_out_wall_time() {
        let json: serde_json::Value = serde_json::json!({
            "digest": "0123456789012345", "mean_jct_s": 5.0, "seed": 3, "wall_s": 0.2, "zzz": 1, "policy": "sjf"
        });
        let m = Metrics::from_summary_json(json.as_object().unwrap());
        assert_eq!(
            m.0,
            [
                ("policy".to_string(), t("sjf")),
                ("seed".to_string(), t("3")),
                ("mean_jct_s".to_string(), n(5.0)),
                ("digest".to_string(), t("0123456789012345")),
                ("zzz".to_string(), n(1.0)),
            ]
        );
    }

    #[test]
    fn numbers_read_well() {
        assert_eq!(number(6606.123456), "6606.12");
        assert_eq!(number(0.617), "0.617");
        assert_eq!(number(42.0), "42");
        assert_eq!(number(1.5e-17), "1.500e-17");
        assert_eq!(number(-20.0), "-20");
    }

    fn record(trace: &str, policy: &str, seed: u64, jct: f64) -> SweepRecord {
        SweepRecord {
            trace: trace.into(),
            policy: policy.into(),
            seed,
            metrics: metrics(&[
                ("policy", t(policy)),
                ("mean_jct_s", n(jct)),
                ("digest", t(&format!("{policy}{seed}{jct}"))),
            ]),
        }
    }

    #[test]
    fn sweeps_with_the_same_runs_pair_run_by_run() {
        let a = vec![record("t", "fifo", 0, 10.0), record("t", "fifo", 1, 20.0)];
        let mut b = a.clone();
        b.reverse();
        let cmp = compare_sweeps(&a, &b).unwrap();
        assert_eq!(cmp.pairing, Pairing::Runs);
        assert!(cmp.pairs.iter().all(|p| unchanged(&p.rows)));
        assert!(render_sweeps(&cmp, false).contains("identical (every metric and the digest): 2 of 2 runs"));
        b[0] = record("t", "fifo", 1, 15.0);
        let cmp = compare_sweeps(&a, &b).unwrap();
        let changed: Vec<_> = cmp.pairs.iter().filter(|p| !unchanged(&p.rows)).collect();
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].label, "t  fifo  seed 1");
        assert_eq!(row(&changed[0].rows, "mean_jct_s").verdict, Verdict::BBetter);
    }

    #[test]
    fn traces_pair_by_file_name_unless_two_share_one() {
        let a = vec![record("/x/philly.csv", "fifo", 0, 10.0)];
        let b = vec![record("../y/philly.csv", "fifo", 0, 10.0)];
        let cmp = compare_sweeps(&a, &b).unwrap();
        assert_eq!((cmp.pairing, cmp.pairs[0].label.as_str()), (Pairing::Runs, "philly.csv  fifo  seed 0"));
        let two = vec![record("/x/philly.csv", "fifo", 0, 10.0), record("/z/philly.csv", "fifo", 0, 10.0)];
        let kept: Vec<String> = short_traces(&two).into_iter().map(|r| r.trace).collect();
        assert_eq!(kept, ["/x/philly.csv", "/z/philly.csv"]);
    }

    #[test]
    fn different_seeds_compare_means_per_policy() {
        let a = vec![record("t", "fifo", 0, 10.0), record("t", "fifo", 1, 20.0), record("t", "sjf", 0, 1.0)];
        let b = vec![record("t", "fifo", 5, 30.0), record("t", "srtf", 5, 1.0)];
        let cmp = compare_sweeps(&a, &b).unwrap();
        assert_eq!(cmp.pairing, Pairing::PolicyMeans);
        assert_eq!(cmp.pairs.len(), 1);
        let rows = &cmp.pairs[0].rows;
        assert_eq!((row(rows, "mean_jct_s").a.clone(), row(rows, "mean_jct_s").b.clone()), (n(15.0), n(30.0)));
        assert_eq!(row(rows, "mean_jct_s").verdict, Verdict::ABetter);
        assert_eq!(row(rows, "runs").verdict, Verdict::Changed);
        assert!(rows.iter().all(|r| r.metric != "digest"), "digests vary by seed: not averaged");
        assert_eq!(cmp.only_a, ["t  sjf  seeds 0"]);
        assert_eq!(cmp.only_b, ["t  srtf  seeds 5"]);
    }

    #[test]
    fn different_policies_pair_per_trace_or_one_to_one() {
        let a = vec![record("x", "fifo", 0, 10.0), record("y", "fifo", 0, 10.0)];
        let b = vec![record("y", "sjf", 0, 5.0), record("x", "sjf", 0, 50.0)];
        let cmp = compare_sweeps(&a, &b).unwrap();
        assert_eq!(cmp.pairing, Pairing::TraceMeans);
        assert_eq!(row(&cmp.pairs[0].rows, "mean_jct_s").verdict, Verdict::ABetter, "x: 10 vs 50");
        assert_eq!(row(&cmp.pairs[1].rows, "mean_jct_s").verdict, Verdict::BBetter, "y: 10 vs 5");
        assert_eq!(row(&cmp.pairs[0].rows, "policy").verdict, Verdict::Different);
        let one = compare_sweeps(&a[..1], &b[..1]).unwrap();
        assert_eq!(one.pairing, Pairing::OneToOne);
        let two_each = vec![record("x", "srtf", 0, 1.0), record("x", "sjf", 0, 1.0)];
        let err = compare_sweeps(&a, &two_each).unwrap_err();
        assert!(err.contains("cannot pair"), "{err}");
    }
}
