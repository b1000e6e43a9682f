//! What a report holds: sections of charts, tables and notes, built from the runs read by
//! `input`. Runs are grouped by trace (in run order), then by policy (in run order); each
//! (trace, policy) group holds that policy's seeds. Every iteration here follows run order or
//! a sorted key, so the same input gives the same report.

use super::charts::{Bar, Chart, Edge, Plot, Series, XAxis, time_unit};
use super::input::{Input, Run, Source};
use super::stats::{cdf, estimate};
use crate::compare::{self, Better, METRICS, Standing};
use crate::tables::human;
use std::collections::BTreeMap;

/// Points per CDF line: enough for a smooth curve, few enough for a small file.
const CDF_POINTS: usize = 400;
/// Points per time-series line: longer series are averaged in runs of adjacent buckets.
const SERIES_POINTS: usize = 600;
/// Queues shown by name in a share chart; the rest are summed as `other`.
const QUEUES_SHOWN: usize = 8;
/// What a metric over finished jobs reads where none finished (the summary writes 0).
pub const NO_JOB_FINISHED: &str = "no job finished";
/// Tasks drawn in a Gantt chart.
const GANTT_TASKS: usize = 40;

#[derive(Debug, Clone, PartialEq)]
pub enum Item {
    /// A chart and the sentence under it.
    Chart(Chart, String),
    Table(Table),
    /// Something left out, and why.
    Note(String),
    /// The verdict on one trace: a heading and its lines.
    Verdict(String, Vec<String>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Section {
    pub id: String,
    pub title: String,
    pub intro: String,
    pub items: Vec<Item>,
}

/// A table cell: its text, and where it shows a number from the input, the key and the exact
/// value (kept as data attributes, for readers and for tests).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Cell {
    pub text: String,
    pub key: Option<String>,
    pub value: Option<String>,
    /// The half-width of the value's 95 % confidence interval, exactly.
    pub half_width: Option<String>,
    pub numeric: bool,
    pub best: bool,
}

impl Cell {
    pub(super) fn text(text: impl Into<String>) -> Cell {
        Cell { text: text.into(), ..Cell::default() }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub id: String,
    pub caption: String,
    pub header: Vec<String>,
    pub rows: Vec<Vec<Cell>>,
    /// Below the table.
    pub foot: String,
    /// Columns shown only when the reader asks for all (a wide table stays readable).
    pub more: Vec<usize>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Report {
    pub title: String,
    pub subtitle: String,
    pub sections: Vec<Section>,
}

impl Report {
    /// Every chart, in page order.
    pub fn charts(&self) -> impl Iterator<Item = &Chart> {
        self.sections
            .iter()
            .flat_map(|s| &s.items)
            .filter_map(|i| if let Item::Chart(c, _) = i { Some(c) } else { None })
    }
}

/// The runs of one policy on one trace.
struct Group<'a> {
    spec: &'a str,
    runs: Vec<&'a Run>,
}

impl<'a> Group<'a> {
    /// The run its time-series charts show: the lowest seed (first in run order on ties).
    fn shown(&self) -> &'a Run {
        self.runs.iter().copied().min_by_key(|r| r.seed).expect("a group has a run")
    }

    /// The mean over its seeds of a summary key; None unless every run has it.
    fn mean(&self, key: &str) -> Option<f64> {
        let values: Option<Vec<f64>> = self.runs.iter().map(|r| r.metric(key)).collect();
        values.map(|v| v.iter().sum::<f64>() / v.len() as f64)
    }

    fn seeds(&self) -> String {
        let seeds: Vec<String> = self.runs.iter().map(|r| r.seed.to_string()).collect();
        seeds.join(", ")
    }
}

struct Trace<'a> {
    name: String,
    /// A lone run folder's "trace" (named by its folder), not a sweep's trace.
    lone: bool,
    /// Unique among the report's traces, for chart ids and file names.
    slug: String,
    groups: Vec<Group<'a>>,
}

impl Trace<'_> {
    /// What chart titles name: the trace, and for a lone run its policy too (a sweep's charts
    /// name their policies in their legends).
    fn title(&self) -> String {
        match (self.lone, self.groups.first()) {
            (true, Some(g)) => format!("{} · {}", self.name, g.spec),
            _ => self.name.clone(),
        }
    }
}

fn group(input: &Input) -> Vec<Trace<'_>> {
    let mut traces: Vec<Trace<'_>> = Vec::new();
    for run in &input.runs {
        let name = run.trace_name();
        let trace = match traces.iter().position(|t| t.name == name) {
            Some(i) => &mut traces[i],
            None => {
                let lone = input.source == Source::Run;
                traces.push(Trace { name: name.clone(), lone, slug: slug(&name), groups: Vec::new() });
                traces.last_mut().expect("just pushed")
            }
        };
        match trace.groups.iter_mut().find(|g| g.spec == run.spec) {
            Some(g) => g.runs.push(run),
            None => trace.groups.push(Group { spec: &run.spec, runs: vec![run] }),
        }
    }
    // Slugs unique: a repeated one gets the trace's position.
    let mut seen = BTreeMap::new();
    for t in &traces {
        *seen.entry(t.slug.clone()).or_insert(0) += 1;
    }
    for (i, t) in traces.iter_mut().enumerate() {
        if seen[&t.slug] > 1 {
            t.slug = format!("{}-{}", t.slug, i + 1);
        }
    }
    traces
}

/// Lower-case letters, digits and dashes.
pub fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() { "run".to_string() } else { out }
}

/// The report of `input`.
pub fn build(input: &Input) -> Report {
    let traces = group(input);
    let policies: Vec<&str> = {
        let mut seen: Vec<&str> = Vec::new();
        for t in &traces {
            for g in &t.groups {
                if !seen.contains(&g.spec) {
                    seen.push(g.spec);
                }
            }
        }
        seen
    };
    let seeds: std::collections::BTreeSet<u64> = input.runs.iter().map(|r| r.seed).collect();
    let title = match input.source {
        Source::Run => format!("schedlab report: {}", input.name),
        Source::Sweep => format!("schedlab sweep report: {}", input.name),
    };
    let subtitle = format!(
        "{} run{} · {} trace{} · {} polic{} · {} seed{}",
        input.runs.len(),
        plural(input.runs.len()),
        traces.len(),
        plural(traces.len()),
        policies.len(),
        if policies.len() == 1 { "y" } else { "ies" },
        seeds.len(),
        plural(seeds.len())
    );
    let mut sections = vec![verdict_section(&traces), summary_section(&traces)];
    sections.push(cdf_section(&traces, "jct", "Job completion time", |j| j.jct_s));
    sections.push(cdf_section(&traces, "queueing", "Queueing delay", |j| j.jct_s.and(j.queue_s)));
    sections.push(time_section(&traces));
    sections.push(queue_share_section(&traces));
    if let Some(section) = failure_section(&traces) {
        sections.push(section);
    }
    if let Some(section) = gantt_section(&traces) {
        sections.push(section);
    }
    sections.push(runs_section(input));
    Report { title, subtitle, sections }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A summary key in words, for headers and row names; the unit is in the cells.
pub fn label(key: &str) -> String {
    let known = match key {
        "jobs_finished" => "jobs finished",
        "mean_jct_s" => "mean JCT",
        "p50_jct_s" => "median JCT",
        "p95_jct_s" => "p95 JCT",
        "p99_jct_s" => "p99 JCT",
        "mean_queue_s" => "mean queueing delay",
        "mean_wait_s" => "mean wait",
        "makespan_s" => "makespan",
        "lost_gpu_hours" => "lost GPU-hours",
        "ftf_rho_mean" => "finish-time fairness, mean rho",
        "ftf_rho_max" => "finish-time fairness, max rho",
        "queue_fairness_jain" => "queue fairness (Jain)",
        "ettr_mean" => "ETTR, mean",
        "ettr_gpu_weighted" => "ETTR, GPU-weighted",
        "littles_law_error" => "Little's-law error",
        _ => "",
    };
    if !known.is_empty() {
        return known.to_string();
    }
    let stem = key.strip_suffix("_s").unwrap_or(key);
    let words: Vec<String> = stem
        .split('_')
        .map(|w| match w {
            "gpu" => "GPU".to_string(),
            "jct" => "JCT".to_string(),
            "dag" => "DAG".to_string(),
            "h" => "(h)".to_string(),
            w => w.to_string(),
        })
        .collect();
    words.join(" ").replace("GPU hours", "GPU-hours")
}

/// A summary value for display, by its key's unit: times in s, min, h or d; shares in %;
/// GPU-time in GPU-h; counts with thousands separators; ratios (rho, stretch) past 10,000 in
/// scientific notation (3.17e9).
fn show(key: &str, v: f64) -> String {
    if key == "utilisation" || key == "goodput" || key == "data_locality" {
        format!("{:.2} %", v * 100.0)
    } else if key.ends_with("_s") {
        human(v)
    } else if key.ends_with("_hours") {
        format!("{v:.1} GPU-h")
    } else if key.ends_with("_h") {
        format!("{v:.1} h")
    } else if key == "littles_law_error" || v.abs() >= 1e4 && (key.contains("rho") || key.contains("stretch")) {
        format!("{v:.2e}")
    } else if v.fract() == 0.0 && v.abs() < 1e15 {
        super::verdict::count(v)
    } else {
        format!("{v:.2}")
    }
}

/// `mean ± half-width` in the key's unit (the half-width of a percentage in points); the
/// value alone, said to be one, when every seed gave it.
fn show_interval(key: &str, mean: f64, half_width: Option<f64>) -> String {
    match half_width {
        None => show(key, mean),
        Some(0.0) => format!("{} (deterministic: one value)", show(key, mean)),
        Some(hw) if key == "utilisation" || key == "goodput" => format!("{:.2} ± {:.2} %", mean * 100.0, hw * 100.0),
        Some(hw) => format!("{} ± {}", show(key, mean), show(key, hw)),
    }
}

fn verdict_section(traces: &[Trace<'_>]) -> Section {
    let items = traces
        .iter()
        .map(|t| {
            let policies: Vec<(&str, Vec<&Run>)> = t.groups.iter().map(|g| (g.spec, g.runs.clone())).collect();
            Item::Verdict(t.title(), super::verdict::lines(&policies))
        })
        .collect();
    Section {
        id: "verdict".into(),
        title: "Verdict".into(),
        intro: format!(
            "For each question, the best policy (means over its seeds), its margin over the runner-up, and what \
             it costs. Policies are ranked first by jobs finished, then by the metric. A caveat names a cost \
             where the winner has at least {}x the p99 JCT, mean JCT or fairness rho of another policy that \
             finished jobs, or at least twice its preemptions and {} more.",
            super::verdict::WORSE_RATIO,
            super::verdict::MORE_PREEMPTIONS
        ),
        items,
    }
}

fn summary_section(traces: &[Trace<'_>]) -> Section {
    let mut items = Vec::new();
    for t in traces {
        // The metrics with a better side (compare.rs's one table), in its order.
        let keys: Vec<(&str, Better)> =
            METRICS.iter().filter(|(_, b)| matches!(b, Better::Lower | Better::Higher)).copied().collect();
        let mut header = vec!["metric".to_string()];
        header.extend(t.groups.iter().map(|g| format!("{} (n={})", g.spec, g.runs.len())));
        let mut rows = Vec::new();
        let mut all_zero = Vec::new();
        // Each policy's jobs finished, mean over its seeds: ranked first on every metric.
        let finished: Vec<Option<f64>> = t.groups.iter().map(|g| g.mean("jobs_finished")).collect();
        for (key, better) in keys {
            let estimates: Vec<_> = t
                .groups
                .iter()
                .map(|g| {
                    let values: Option<Vec<f64>> = g.runs.iter().map(|r| r.metric(key)).collect();
                    values.map(|v| estimate(&v))
                })
                .collect();
            if estimates.iter().all(Option::is_none) {
                continue;
            }
            if estimates.iter().flatten().all(|e| e.mean == 0.0) {
                all_zero.push(key);
                continue;
            }
            // Bold: the best by the ranking rule (finished jobs first, then the metric).
            let standings: Vec<Option<Standing>> = estimates
                .iter()
                .zip(&finished)
                .map(|(e, f)| e.map(|e| Standing { finished: *f, value: e.mean }))
                .collect();
            let best = compare::best(better, &standings);
            let mut row = vec![Cell::text(format!("{} ({})", label(key), better.as_str()))];
            for (i, e) in estimates.iter().enumerate() {
                row.push(match e {
                    None => Cell::text("-"),
                    Some(e) => Cell {
                        text: if finished[i] == Some(0.0) && compare::OVER_FINISHED.contains(&key) {
                            NO_JOB_FINISHED.to_string()
                        } else {
                            show_interval(key, e.mean, e.half_width)
                        },
                        key: Some(key.to_string()),
                        value: Some(format!("{}", e.mean)),
                        half_width: e.half_width.map(|h| format!("{h}")),
                        numeric: true,
                        best: t.groups.len() > 1 && best.contains(&i),
                    },
                });
            }
            rows.push(row);
        }
        let mut foot = "Mean over seeds ± the half-width of its 95 % confidence interval (Student's t, n - 1 \
                        degrees of freedom); n = 1 shows the value alone, and so does a value that every \
                        seed gave alike, marked deterministic. Bold: the best policy on that metric: \
                        first the one that finished the most jobs, then lower or higher as the metric name \
                        says; a policy that finished fewer jobs is never bold, nor one that finished none."
            .to_string();
        if !all_zero.is_empty() {
            foot.push_str(&format!(" Zero for every policy: {}.", all_zero.join(", ")));
        }
        items.push(Item::Table(Table {
            id: format!("summary-{}", t.slug),
            caption: if t.lone {
                format!("{}: the run's metrics", t.title())
            } else {
                format!("{}: policies across seeds", t.name)
            },
            header,
            rows,
            foot,
            more: Vec::new(),
        }));
    }
    Section {
        id: "summary".into(),
        title: "Summary".into(),
        intro: if traces.iter().all(|t| t.lone) {
            "The run's metrics, each with the side that is better.".into()
        } else {
            "Each policy's metrics on each trace, averaged over its seeds.".into()
        },
        items,
    }
}

fn cdf_section(traces: &[Trace<'_>], id: &str, title: &str, value: fn(&super::input::Job) -> Option<f64>) -> Section {
    let what = if id == "jct" { "JCT" } else { "queueing delay" };
    let mut items = Vec::new();
    for t in traces {
        let series: Vec<Series> = t
            .groups
            .iter()
            .map(|g| {
                let values: Vec<f64> = g.runs.iter().flat_map(|r| r.jobs.iter().filter_map(value)).collect();
                Series { name: g.spec.to_string(), points: cdf(&values, CDF_POINTS) }
            })
            .filter(|s| !s.points.is_empty())
            .collect();
        if series.is_empty() {
            items.push(Item::Note(format!("{}: no finished jobs, so no {what} CDF.", t.name)));
            continue;
        }
        let chart = Chart {
            id: format!("{id}-cdf-{}", t.slug),
            title: format!("{title} CDF · {}", t.title()),
            x_label: format!("{what} (log scale)"),
            y_label: "fraction of finished jobs".into(),
            plot: Plot::Lines { x: XAxis::LogDuration, y_max: Some(1.0), counts: false, series },
        };
        let caption = format!(
            "Empirical CDF of {what} over finished jobs, one line per policy, all seeds pooled ({}). \
             Values under 1 s are drawn at 1 s.",
            t.groups.iter().map(|g| format!("{}: seeds {}", g.spec, g.seeds())).collect::<Vec<_>>().join("; ")
        );
        items.push(Item::Chart(chart, caption));
    }
    Section {
        id: id.into(),
        title: title.into(),
        intro: if id == "jct" {
            "JCT = end - submit of each finished job.".into()
        } else {
            "Queueing delay = first start - submit of each finished job.".into()
        },
        items,
    }
}

/// Where a trace's time axes start: the earliest bucket start of the runs shown (every run of a
/// trace starts its buckets at the trace's first submission).
fn origin<'a>(runs: impl Iterator<Item = &'a [super::input::Bucket]>) -> f64 {
    let earliest = runs.filter_map(|b| b.first()).map(|b| b.start_s).fold(f64::INFINITY, f64::min);
    if earliest.is_finite() { earliest } else { 0.0 }
}

/// Points at bucket midpoints, averaged in runs of adjacent buckets when there are too many.
fn thin(points: Vec<(f64, f64)>) -> Vec<(f64, f64)> {
    let per = points.len().div_ceil(SERIES_POINTS).max(1);
    if per == 1 {
        return points;
    }
    points
        .chunks(per)
        .map(|c| {
            let n = c.len() as f64;
            (c.iter().map(|p| p.0).sum::<f64>() / n, c.iter().map(|p| p.1).sum::<f64>() / n)
        })
        .collect()
}

fn time_label(series: &[Series]) -> String {
    let (lo, hi) = series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), x| (a.min(x), b.max(x)));
    let span = if hi > lo { hi - lo } else { 0.0 };
    format!("time since the first submission ({})", time_unit(span).1)
}

fn missing_note(t: &Trace<'_>, file: &str, what: &str) -> Option<Item> {
    let missing: Vec<&str> = t
        .groups
        .iter()
        .map(|g| g.shown())
        .filter(|r| match file {
            "timeseries.csv" => r.timeseries.is_none(),
            "queue_timeseries.csv" => r.queue_timeseries.is_none(),
            _ => r.tasks.is_none(),
        })
        .map(|r| r.dir.as_str())
        .collect();
    (!missing.is_empty()).then(|| {
        Item::Note(format!(
            "{}: {what} left out: no {file} in the run folder {} (written by `schedlab simulate --out` and \
             `schedlab sweep` from this version on; re-run to get it).",
            t.name,
            missing.join(", ")
        ))
    })
}

fn time_section(traces: &[Trace<'_>]) -> Section {
    let mut items = Vec::new();
    for t in traces {
        if let Some(note) = missing_note(t, "timeseries.csv", "utilisation and queue length over time") {
            items.push(note);
        }
        let shown: Vec<(&Group<'_>, &[super::input::Bucket])> =
            t.groups.iter().filter_map(|g| Some((g, g.shown().timeseries.as_deref()?))).collect();
        if shown.is_empty() {
            continue;
        }
        let origin = origin(shown.iter().map(|(_, b)| *b));
        let line = |f: fn(&super::input::Bucket) -> Option<f64>| -> Vec<Series> {
            shown
                .iter()
                .map(|(g, buckets)| Series {
                    name: g.spec.to_string(),
                    points: thin(
                        buckets.iter().filter_map(|b| Some(((b.start_s + b.end_s) / 2.0 - origin, f(b)?))).collect(),
                    ),
                })
                .collect()
        };
        let seeds =
            shown.iter().map(|(g, _)| format!("{}: seed {}", g.spec, g.shown().seed)).collect::<Vec<_>>().join("; ");
        let util = line(|b| (b.capacity_gpus > 0.0).then(|| 100.0 * b.allocated_gpus / b.capacity_gpus));
        let queue = line(|b| Some(b.waiting_tasks));
        items.push(Item::Chart(
            Chart {
                id: format!("utilisation-{}", t.slug),
                title: format!("GPU utilisation over time · {}", t.title()),
                x_label: time_label(&util),
                y_label: "allocated GPUs (% of cluster)".into(),
                plot: Plot::Lines { x: XAxis::Time, y_max: Some(100.0), counts: false, series: util },
            },
            format!(
                "Time-average per bucket of allocated GPUs (stalled ones on broken hardware included) as a share of \
                 the cluster's GPUs, one line per policy ({seeds})."
            ),
        ));
        items.push(Item::Chart(
            Chart {
                id: format!("queue-length-{}", t.slug),
                title: format!("Queue length over time · {}", t.title()),
                x_label: time_label(&queue),
                y_label: "waiting tasks".into(),
                plot: Plot::Lines { x: XAxis::Time, y_max: None, counts: false, series: queue },
            },
            format!("Time-average per bucket of tasks waiting to start, one line per policy ({seeds})."),
        ));
    }
    Section {
        id: "over-time".into(),
        title: "Utilisation and queue length over time".into(),
        intro: "From each run's timeseries.csv; each policy's run with its lowest seed.".into(),
        items,
    }
}

fn queue_share_section(traces: &[Trace<'_>]) -> Section {
    let mut items = Vec::new();
    for t in traces {
        if let Some(note) = missing_note(t, "queue_timeseries.csv", "GPU share per queue") {
            items.push(note);
        }
        for g in &t.groups {
            let run = g.shown();
            let Some(rows) = &run.queue_timeseries else { continue };
            if let Some(item) = share_chart(t, g, run, rows) {
                items.push(item);
            }
        }
    }
    Section {
        id: "queues".into(),
        title: "GPU share per queue".into(),
        intro: "From each run's queue_timeseries.csv; each policy's run with its lowest seed.".into(),
        items,
    }
}

fn share_chart(t: &Trace<'_>, g: &Group<'_>, run: &Run, rows: &[super::input::QueueBucket]) -> Option<Item> {
    // Bucket times in ms as keys: exact, ordered.
    let key = |s: f64| (s * 1000.0).round() as i64;
    let mut totals: BTreeMap<&str, f64> = BTreeMap::new();
    let mut buckets: BTreeMap<i64, f64> = BTreeMap::new();
    for r in rows {
        *totals.entry(&r.queue).or_default() += r.allocated_gpus * (r.end_s - r.start_s);
        buckets.insert(key(r.start_s), (r.start_s + r.end_s) / 2.0);
    }
    if totals.len() < 2 {
        return Some(Item::Note(format!(
            "{} · {} (seed {}): every job is in one queue ({}), so there is no share to chart.",
            t.name,
            g.spec,
            run.seed,
            totals.keys().next().copied().unwrap_or("-")
        )));
    }
    // Largest queues first (ties by name); the rest summed as `other`.
    let mut order: Vec<(&str, f64)> = totals.into_iter().collect();
    order.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(b.0)));
    let named: Vec<&str> = order.iter().take(QUEUES_SHOWN).map(|(q, _)| *q).collect();
    let has_other = order.len() > QUEUES_SHOWN;
    let capacity: Option<BTreeMap<i64, f64>> =
        run.timeseries.as_ref().map(|ts| ts.iter().map(|b| (key(b.start_s), b.capacity_gpus)).collect());
    let index: BTreeMap<i64, usize> = buckets.keys().enumerate().map(|(i, k)| (*k, i)).collect();
    let layers = named.len() + usize::from(has_other);
    let mut values = vec![vec![0.0; buckets.len()]; layers];
    for r in rows {
        let layer = named.iter().position(|q| *q == r.queue).unwrap_or(layers - 1);
        let k = key(r.start_s);
        let share = match &capacity {
            Some(c) => match c.get(&k) {
                Some(cap) if *cap > 0.0 => 100.0 * r.allocated_gpus / cap,
                _ => 0.0,
            },
            None => r.allocated_gpus,
        };
        values[layer][index[&k]] += share;
    }
    let origin = rows.iter().map(|r| r.start_s).fold(f64::INFINITY, f64::min);
    let origin = match &run.timeseries {
        Some(ts) => ts.first().map_or(origin, |b| b.start_s.min(origin)),
        None => origin,
    };
    let xs: Vec<f64> = buckets.values().map(|x| x - origin).collect();
    let series: Vec<Series> = values
        .into_iter()
        .enumerate()
        .map(|(i, v)| Series {
            name: named.get(i).map_or("other".to_string(), |q| q.to_string()),
            points: thin(xs.iter().copied().zip(v).collect()),
        })
        .collect();
    let y_label = if capacity.is_some() { "share of cluster GPUs (%)" } else { "allocated GPUs" };
    Some(Item::Chart(
        Chart {
            id: format!("queue-share-{}-{}", t.slug, slug(g.spec)),
            title: format!("GPU share per queue · {} · {}", t.name, g.spec),
            x_label: time_label(&series),
            y_label: y_label.into(),
            plot: Plot::Stacked { y_max: capacity.is_some().then_some(100.0), series },
        },
        format!(
            "Time-average allocated GPUs per queue, stacked{}; seed {}.{}",
            if capacity.is_some() {
                ", as a share of the cluster's GPUs"
            } else {
                " (no timeseries.csv for the cluster size)"
            },
            run.seed,
            if has_other {
                format!(" The {} largest queues by GPU-time are named; the rest are `other`.", QUEUES_SHOWN)
            } else {
                String::new()
            }
        ),
    ))
}

fn failure_section(traces: &[Trace<'_>]) -> Option<Section> {
    let failed = |r: &Run| r.metric("failures").unwrap_or(0.0) > 0.0;
    if !traces.iter().any(|t| t.groups.iter().any(|g| g.runs.iter().any(|r| failed(r)))) {
        return None;
    }
    let mut items = Vec::new();
    for t in traces {
        if !t.groups.iter().any(|g| g.runs.iter().any(|r| failed(r))) {
            items.push(Item::Note(format!("{}: no hardware failures in any run.", t.name)));
            continue;
        }
        if let Some(note) = missing_note(t, "timeseries.csv", "failures and lost GPU-hours over time") {
            items.push(note);
        }
        let shown: Vec<(&Group<'_>, &[super::input::Bucket])> =
            t.groups.iter().filter_map(|g| Some((g, g.shown().timeseries.as_deref()?))).collect();
        let Some((first, buckets)) = shown.first() else { continue };
        let origin = origin(shown.iter().map(|(_, b)| *b));
        let failures = vec![Series {
            name: "failures".into(),
            points: thin(buckets.iter().map(|b| ((b.start_s + b.end_s) / 2.0 - origin, b.failures)).collect()),
        }];
        items.push(Item::Chart(
            Chart {
                id: format!("failures-{}", t.slug),
                title: format!("Hardware failures over time · {}", t.title()),
                x_label: time_label(&failures),
                y_label: "failures per bucket".into(),
                plot: Plot::Lines { x: XAxis::Time, y_max: None, counts: true, series: failures },
            },
            format!(
                "GPU and node failures starting in each bucket (ground truth, the same for every policy at one seed), \
                 from {} seed {}.",
                first.spec,
                first.shown().seed
            ),
        ));
        let lost: Vec<Series> = shown
            .iter()
            .map(|(g, buckets)| {
                let mut total = 0.0;
                Series {
                    name: g.spec.to_string(),
                    points: thin(
                        buckets
                            .iter()
                            .map(|b| {
                                total += b.lost_gpu_h;
                                (b.end_s - origin, total)
                            })
                            .collect(),
                    ),
                }
            })
            .collect();
        items.push(Item::Chart(
            Chart {
                id: format!("lost-gpu-hours-{}", t.slug),
                title: format!("Lost GPU-hours over time · {}", t.title()),
                x_label: time_label(&lost),
                y_label: "lost GPU-hours (cumulative)".into(),
                plot: Plot::Lines { x: XAxis::Time, y_max: None, counts: false, series: lost },
            },
            "GPU-hours lost by attempts that ended (work redone since the last checkpoint, detection lag, restart \
             overhead, checkpoint writing), summed up to each time, one line per policy (lowest seed)."
                .into(),
        ));
        let runs: Vec<(&str, &[super::input::Job])> =
            t.groups.iter().map(|g| (g.spec, g.shown().jobs.as_slice())).collect();
        items.extend(super::interruptions::table(&t.slug, &t.name, &runs));
    }
    Some(Section {
        id: "failures".into(),
        title: "Failures and lost GPU-hours over time".into(),
        intro: "Shown because hardware failed in at least one run.".into(),
        items,
    })
}

/// The DAG section: only where a trace has DAG jobs (or may have: a folder without tasks.csv
/// whose summary.json does not say `dag_jobs` is 0).
fn gantt_section(traces: &[Trace<'_>]) -> Option<Section> {
    let mut items = Vec::new();
    for t in traces {
        let Some(g) = t.groups.first() else { continue };
        let run = g.shown();
        let Some(tasks) = &run.tasks else {
            // `simulate` writes tasks.csv only when some job has several tasks, so a missing
            // file is normal for a run without DAG jobs: summary.json's `dag_jobs` tells that
            // case (nothing to show) from a folder written before tasks.csv existed.
            if run.metric("dag_jobs") != Some(0.0) {
                items.push(Item::Note(format!(
                    "{}: the Gantt chart of a DAG job left out: no tasks.csv in the run folder {} (written by \
                     `schedlab simulate --out` and `schedlab sweep` from this version on; re-run to get it).",
                    t.name, run.dir
                )));
            }
            continue;
        };
        // None: no job with dependent tasks; nothing to show.
        items.extend(gantt_chart(t, g, run, tasks));
    }
    if items.is_empty() {
        return None;
    }
    Some(Section {
        id: "dag".into(),
        title: "DAG jobs".into(),
        intro: "The tasks of the largest DAG job of each trace, from the first policy's run with its lowest seed."
            .into(),
        items,
    })
}

fn gantt_chart(t: &Trace<'_>, g: &Group<'_>, run: &Run, tasks: &[super::input::Task]) -> Option<Item> {
    // Jobs in file order (a job's rows are consecutive in tasks.csv, but do not rely on it).
    let mut by_job: Vec<(&str, Vec<&super::input::Task>)> = Vec::new();
    let mut index: BTreeMap<&str, usize> = BTreeMap::new();
    for task in tasks {
        let i = *index.entry(&task.job).or_insert_with(|| {
            by_job.push((&task.job, Vec::new()));
            by_job.len() - 1
        });
        by_job[i].1.push(task);
    }
    // The DAG job with the most tasks; the first in the file on ties.
    let (job, mut job_tasks) = by_job
        .into_iter()
        .filter(|(_, ts)| ts.len() > 1 && ts.iter().any(|t| !t.depends_on.is_empty()))
        .fold(None, |best: Option<(&str, Vec<&super::input::Task>)>, (job, ts)| match &best {
            Some((_, b)) if b.len() >= ts.len() => best,
            _ => Some((job, ts)),
        })?;
    job_tasks.sort_by(|a, b| {
        let start = |t: &super::input::Task| t.first_start_s.unwrap_or(f64::INFINITY);
        start(a).total_cmp(&start(b)).then(a.task.cmp(&b.task))
    });
    let total = job_tasks.len();
    job_tasks.truncate(GANTT_TASKS);
    let mut states: Vec<String> = job_tasks.iter().map(|t| t.state.clone()).collect();
    states.sort();
    states.dedup();
    let first_start = job_tasks.iter().filter_map(|t| t.first_start_s).fold(f64::INFINITY, f64::min);
    let bars: Vec<Bar> = job_tasks
        .iter()
        .map(|task| Bar {
            label: format!("{} ({} GPU{})", task.name, task.gpus, if task.gpus == 1.0 { "" } else { "s" }),
            span: match (task.first_start_s, task.finish_s) {
                (Some(s), Some(e)) => Some((s - first_start, e.max(s) - first_start)),
                _ => None,
            },
            state: states.iter().position(|s| *s == task.state).unwrap_or(0),
        })
        .collect();
    let mut edges = Vec::new();
    for (to, task) in job_tasks.iter().enumerate() {
        for dep in &task.depends_on {
            let Some(from) = job_tasks.iter().position(|t| t.name == dep.task) else { continue };
            if let Some(leaves_s) = departure(job_tasks[from], task, dep.kind.as_deref()) {
                edges.push(Edge { from, to, leaves_s: leaves_s - first_start });
            }
        }
    }
    let span = bars
        .iter()
        .filter_map(|b| b.span)
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), (s, e)| (a.min(s), b.max(e)));
    let unit = time_unit(if span.1 > span.0 { span.1 - span.0 } else { 0.0 }).1;
    let not_run = bars.iter().filter(|b| b.span.is_none()).count();
    Some(Item::Chart(
        Chart {
            id: format!("gantt-{}", t.slug),
            title: format!("DAG job {job} · {} · {}", t.name, g.spec),
            x_label: format!("time since the job's first task started ({unit})"),
            y_label: "task (GPUs)".into(),
            plot: Plot::Gantt { bars, edges, states },
        },
        format!(
            "Each task from its first start to its finish, coloured by final state (at least a few pixels wide, \
             however short); grey lines join a task to those it depends on, from the point it waited for: the \
             upstream's end, S seconds of its work for data=S, and for checkpoint=N the latest that checkpoint can \
             have been written. Job {job} of {}, seed {}: {total} tasks{}{}.",
            run.dir,
            run.seed,
            if total > GANTT_TASKS { format!(", the first {GANTT_TASKS} by start shown") } else { String::new() },
            if not_run > 0 { format!("; {not_run} never ran (no bar)") } else { String::new() }
        ),
    ))
}

/// Where on its upstream's bar a dependency's line leaves (seconds, the runs' clock): the end
/// for success, any and failure; `S` seconds after the upstream's start for `data=S` (work at
/// the reference speed); for `checkpoint=N`, whose interval tasks.csv does not give, the
/// downstream's start, the latest the checkpoint can have been written. Always within the
/// upstream's span, and never after the downstream started. None when either never ran.
fn departure(upstream: &super::input::Task, downstream: &super::input::Task, kind: Option<&str>) -> Option<f64> {
    let start = upstream.first_start_s?;
    let end = upstream.finish_s.unwrap_or(start).max(start);
    let started = downstream.first_start_s?;
    let point = match kind.and_then(|k| k.split_once('=')) {
        Some(("data", seconds)) => start + seconds.parse::<f64>().ok()?,
        Some(("checkpoint", _)) => started,
        _ => end,
    };
    Some(point.min(end).min(started.max(start)).max(start))
}

/// The per-run table: each run's headline numbers exactly as summary.json has them.
fn runs_section(input: &Input) -> Section {
    const KEYS: [&str; 9] = [
        "jobs_finished",
        "mean_jct_s",
        "p99_jct_s",
        "mean_queue_s",
        "utilisation",
        "goodput",
        "lost_gpu_hours",
        "makespan_s",
        "digest",
    ];
    let mut header: Vec<String> = ["run", "trace", "policy", "seed"].map(str::to_string).to_vec();
    header.extend(KEYS.iter().map(|k| label(k)));
    let rows = input
        .runs
        .iter()
        .map(|r| {
            let mut row = vec![
                Cell::text(&r.dir),
                Cell::text(r.trace_name()),
                Cell::text(&r.spec),
                Cell { text: r.seed.to_string(), numeric: true, ..Cell::default() },
            ];
            for key in KEYS {
                let raw = r.summary.get(key);
                row.push(match raw {
                    Some(serde_json::Value::Number(n)) => Cell {
                        text: if r.metric("jobs_finished") == Some(0.0) && compare::OVER_FINISHED.contains(&key) {
                            NO_JOB_FINISHED.to_string()
                        } else {
                            n.as_f64().map_or(n.to_string(), |v| show(key, v))
                        },
                        key: Some(key.to_string()),
                        value: Some(n.to_string()),
                        numeric: true,
                        ..Cell::default()
                    },
                    Some(serde_json::Value::String(s)) => {
                        Cell { text: s.clone(), key: Some(key.to_string()), value: Some(s.clone()), ..Cell::default() }
                    }
                    _ => Cell::text("-"),
                });
            }
            row
        })
        .collect();
    Section {
        id: "runs".into(),
        title: "Runs".into(),
        intro: "Every run, with its numbers as its summary.json holds them (hover a cell for the exact value).".into(),
        items: vec![Item::Table(Table {
            id: "runs".into(),
            caption: "Runs".into(),
            header,
            rows,
            foot: String::new(),
            // Shown: run, policy, seed, mean and p99 JCT, utilisation; the rest on demand.
            more: vec![1, 4, 7, 9, 10, 11, 12],
        })],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs() {
        assert_eq!(slug("philly.csv"), "philly-csv");
        assert_eq!(slug("fifo[skip=true]"), "fifo-skip-true");
        assert_eq!(slug("(built-in synthetic)"), "built-in-synthetic");
        assert_eq!(slug("///"), "run");
    }

    /// A run folder with summary.json's `dag_jobs` as given and no tasks.csv.
    fn run_without_tasks_csv(dag_jobs: Option<u64>) -> Input {
        let mut summary = serde_json::Map::new();
        if let Some(n) = dag_jobs {
            summary.insert("dag_jobs".into(), n.into());
        }
        let run = Run {
            dir: "run".into(),
            trace: "run".into(),
            spec: "fifo".into(),
            seed: 0,
            summary,
            jobs: Vec::new(),
            timeseries: None,
            queue_timeseries: None,
            tasks: None,
        };
        Input { source: Source::Run, name: "run".into(), runs: vec![run] }
    }

    fn notes(section: &Section) -> Vec<&str> {
        section.items.iter().filter_map(|i| if let Item::Note(n) = i { Some(n.as_str()) } else { None }).collect()
    }

    #[test]
    fn no_tasks_csv_without_dag_jobs_is_not_a_reason_to_re_run() {
        // simulate writes no tasks.csv when no job has several tasks: no section then, and
        // no note that the folder is old.
        let input = run_without_tasks_csv(Some(0));
        assert_eq!(gantt_section(&group(&input)), None, "no DAG jobs: no DAG section");
        // DAG jobs counted but no tasks.csv (an older folder, or the file removed), or a
        // summary.json older than `dag_jobs`: the file is missing, and re-running writes it.
        for dag_jobs in [Some(2), None] {
            let input = run_without_tasks_csv(dag_jobs);
            let section = gantt_section(&group(&input)).expect("a section for the note");
            let notes = notes(&section);
            assert_eq!(notes.len(), 1, "{dag_jobs:?}");
            assert!(
                notes[0].contains("no tasks.csv in the run folder run") && notes[0].contains("re-run"),
                "{notes:?}"
            );
        }
    }

    /// Dependency lines leave from the point waited for: prep runs 0..100; train (data=30)
    /// starts at 30, eval (checkpoint=2) at 50, report (success on eval) at eval's end, 80.
    #[test]
    fn edges_leave_from_the_point_waited_for() {
        let task = |start: f64, end: f64| super::super::input::Task {
            job: "p".into(),
            task: 0,
            name: "t".into(),
            state: "succeeded".into(),
            first_start_s: Some(start),
            finish_s: Some(end),
            gpus: 1.0,
            depends_on: Vec::new(),
        };
        let (prep, train, eval, report) = (task(0.0, 100.0), task(30.0, 90.0), task(50.0, 80.0), task(80.0, 95.0));
        assert_eq!(departure(&prep, &train, Some("data=30")), Some(30.0));
        assert_eq!(departure(&prep, &eval, Some("checkpoint=2")), Some(50.0));
        assert_eq!(departure(&eval, &report, None), Some(80.0));
        assert_eq!(departure(&prep, &report, Some("any")), Some(80.0), "never after the downstream started");
        let never = super::super::input::Task { first_start_s: None, ..task(0.0, 0.0) };
        assert_eq!(departure(&never, &report, None), None);
    }

    /// A sweep-like input: one run per (spec, summary), on one trace.
    fn policies(runs: &[(&str, &[(&str, f64)])]) -> Input {
        let runs = runs
            .iter()
            .map(|(spec, values)| Run {
                dir: spec.to_string(),
                trace: "t".into(),
                spec: spec.to_string(),
                seed: 0,
                summary: values.iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect(),
                jobs: Vec::new(),
                timeseries: None,
                queue_timeseries: None,
                tasks: None,
            })
            .collect();
        Input { source: Source::Sweep, name: "s".into(), runs }
    }

    /// (text, bold) of each policy's cell in the summary row of `key`.
    fn summary_cells(section: &Section, key: &str) -> Vec<(String, bool)> {
        let Some(Item::Table(table)) = section.items.first() else { panic!("no table") };
        let row = table.rows.iter().find(|r| r[1..].iter().any(|c| c.key.as_deref() == Some(key))).expect("a row");
        row[1..].iter().map(|c| (c.text.clone(), c.best)).collect()
    }

    #[test]
    fn a_run_that_finished_fewer_jobs_is_never_bold() {
        let input = policies(&[
            ("nop", &[("jobs_finished", 0.0), ("mean_jct_s", 0.0), ("preemptions", 0.0)]),
            ("fast", &[("jobs_finished", 99.0), ("mean_jct_s", 10.0), ("preemptions", 0.0)]),
            ("all", &[("jobs_finished", 100.0), ("mean_jct_s", 50.0), ("preemptions", 80_590.0)]),
        ]);
        let section = summary_section(&group(&input));
        assert_eq!(
            summary_cells(&section, "mean_jct_s"),
            [("no job finished".to_string(), false), ("10.0 s".into(), false), ("50.0 s".into(), true)]
        );
        assert!(summary_cells(&section, "preemptions")[2].1, "finished jobs rank first, on every metric");
        assert_eq!(summary_cells(&section, "jobs_finished")[2], ("100".to_string(), true));
    }

    #[test]
    fn intervals_read_in_units() {
        assert_eq!(show_interval("utilisation", 0.5, Some(0.01)), "50.00 ± 1.00 %");
        assert_eq!(show_interval("mean_jct_s", 60.0, None), "60.0 s");
        assert_eq!(show_interval("preemptions", 3.0, Some(0.5)), "3 ± 0.50");
        assert_eq!(show_interval("preemptions", 3.0, Some(0.0)), "3 (deterministic: one value)");
        assert_eq!(show("preemptions", 80_590.0), "80,590");
        assert_eq!(show("ftf_rho_max", 3_172_668_001.0), "3.17e9");
        assert_eq!(show("ftf_rho_max", 12.5), "12.50");
        assert_eq!(show("lost_gpu_hours", 12.26), "12.3 GPU-h");
        assert_eq!(label("mean_jct_s"), "mean JCT");
        assert_eq!(label("lost_redo_gpu_hours"), "lost redo GPU-hours");
        assert_eq!(label("no_spare_h"), "no spare (h)");
    }
}
