//! Scaling curves (docs/scaling.md): wall time and peak memory of whole runs against the number
//! of jobs and against the number of GPUs, one line per policy, on log-log axes, from the table
//! scripts/scaling.sh measures. Drawn by `cargo run -p schedlab-reports --example
//! scaling_charts`: the charts are the docs' own, not part of a run's report, so they get no
//! `schedlab` subcommand.
//!
//! - `table`: reading the table (errors name file, line and field);
//! - `chart`: drawing one log-log chart.

pub mod chart;
pub mod table;

use std::path::{Path, PathBuf};

use super::charts::Series;
use chart::LogLog;
use table::{Axis, Point};

/// What a chart shows of each point.
struct Metric {
    id: &'static str,
    what: &'static str,
    y_label: &'static str,
    value: fn(&Point) -> f64,
}

const METRICS: [Metric; 2] = [
    Metric { id: "time", what: "Wall time", y_label: "wall time (s)", value: |p| p.seconds },
    Metric { id: "memory", what: "Peak memory", y_label: "peak resident memory (MiB)", value: |p| p.peak_mib },
];

/// The charts of some points: for each axis measured, time then memory.
pub fn charts(points: &[Point]) -> Vec<LogLog> {
    let mut charts = Vec::new();
    for (axis, size) in [(Axis::Jobs, "jobs"), (Axis::Gpus, "GPUs")] {
        let on_axis: Vec<&Point> = points.iter().filter(|p| p.axis == axis).collect();
        if on_axis.is_empty() {
            continue;
        }
        let context = fixed(&on_axis);
        for m in METRICS {
            charts.push(LogLog {
                id: format!("{}-vs-{}", m.id, size.to_lowercase()),
                title: format!("{} against {size} ({context})", m.what),
                x_label: size.to_string(),
                y_label: m.y_label.to_string(),
                series: by_policy(&on_axis, m.value),
            });
        }
    }
    charts
}

/// One series per policy, in the table's order of first appearance, points in order of size.
fn by_policy(points: &[&Point], y: fn(&Point) -> f64) -> Vec<Series> {
    let mut series: Vec<Series> = Vec::new();
    for p in points {
        let point = (p.x() as f64, y(p));
        match series.iter_mut().find(|s| s.name == p.policy) {
            Some(s) => s.points.push(point),
            None => series.push(Series { name: p.policy.clone(), points: vec![point] }),
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    series
}

/// What the other quantity was along an axis: `1M jobs`, or `96 to 100k GPUs` where it grew.
fn fixed(points: &[&Point]) -> String {
    let (name, other): (&str, fn(&Point) -> u64) = match points[0].axis {
        Axis::Jobs => ("GPUs", |p| p.gpus),
        Axis::Gpus => ("jobs", |p| p.jobs),
    };
    let lo = points.iter().map(|p| other(p)).min().unwrap_or(0);
    let hi = points.iter().map(|p| other(p)).max().unwrap_or(0);
    if lo == hi { format!("{} {name}", count(lo)) } else { format!("{} to {} {name}", count(lo), count(hi)) }
}

/// 96, 1000, 10k, 1M, 12.5M.
fn count(n: u64) -> String {
    let (scaled, suffix) = match n {
        n if n >= 1_000_000 => (n as f64 / 1e6, "M"),
        n if n >= 10_000 => (n as f64 / 1e3, "k"),
        n => (n as f64, ""),
    };
    let text = format!("{scaled:.1}");
    format!("{}{suffix}", text.trim_end_matches('0').trim_end_matches('.'))
}

/// Reads the table at `csv` and writes each chart as `<id>.svg` into `dir`; returns the paths.
pub fn write_svgs(csv: &Path, dir: &Path) -> Result<Vec<PathBuf>, String> {
    let points = table::read(csv)?;
    let files = charts(&points).into_iter().map(|c| (format!("{}.svg", c.id), c.svg().map(String::into_bytes)));
    super::write_each(dir, files)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn point(axis: Axis, policy: &str, jobs: u64, gpus: u64) -> Point {
        Point {
            axis,
            policy: policy.into(),
            jobs,
            gpus,
            seconds: jobs as f64 / 1e6,
            peak_mib: gpus as f64 / 100.0,
            commit: "abc".into(),
        }
    }

    #[test]
    fn four_charts_one_series_per_policy_in_order_of_size() {
        let points = [
            point(Axis::Jobs, "fifo", 100_000, 1000),
            point(Axis::Jobs, "fifo", 10_000, 96),
            point(Axis::Jobs, "tiresias", 10_000, 96),
            point(Axis::Gpus, "fifo", 1_000_000, 1000),
            point(Axis::Gpus, "fifo", 1_000_000, 10_000),
        ];
        let charts = charts(&points);
        let ids: Vec<&str> = charts.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["time-vs-jobs", "memory-vs-jobs", "time-vs-gpus", "memory-vs-gpus"]);
        let names: Vec<&str> = charts[0].series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["fifo", "tiresias"]);
        assert_eq!(charts[0].series[0].points, [(10_000.0, 0.01), (100_000.0, 0.1)]);
        assert_eq!(charts[3].series[0].points, [(1000.0, 10.0), (10_000.0, 100.0)]);
        assert_eq!(charts[0].title, "Wall time against jobs (96 to 1000 GPUs)");
        assert_eq!(charts[3].title, "Peak memory against GPUs (1M jobs)");
    }

    #[test]
    fn an_axis_without_rows_gets_no_charts() {
        let charts = charts(&[point(Axis::Gpus, "fifo", 1_000_000, 1000)]);
        assert_eq!(charts.iter().map(|c| c.id.as_str()).collect::<Vec<_>>(), ["time-vs-gpus", "memory-vs-gpus"]);
    }

    #[test]
    fn counts() {
        assert_eq!(count(96), "96");
        assert_eq!(count(100_000), "100k");
        assert_eq!(count(12_500_000), "12.5M");
    }

    #[test]
    fn a_bad_table_writes_nothing() {
        let dir = std::env::temp_dir().join(format!("schedlab-scaling-svgs-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let csv = dir.join("scaling.csv");
        std::fs::write(&csv, "axis,policy,jobs,gpus,seconds,peak_mib,commit\njobs,fifo,10,8,-1,9,abc\n").unwrap();
        let error = write_svgs(&csv, &dir.join("img")).unwrap_err();
        assert!(error.contains("scaling.csv:2: field `seconds`"), "{error}");
        assert!(!dir.join("img").exists());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
