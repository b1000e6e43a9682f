//! `schedlab compare-starts` on the committed dump of a real Slurm: its figures are the
//! `simulate` summary line's for the same run, its CSV holds every compared job, its
//! distribution and worst jobs are what that CSV says, and it refuses a trace without starts.

mod common;

use common::{schedlab, scratch, stderr, stdout};
use serde_json::Value;
use std::collections::BTreeMap;

const SACCT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/traces/tests/data/slurm/builtin-fast/sacct.txt");

/// The run both commands make: `fifo` with a second of release latency on the four nodes.
const RUN: [&str; 10] =
    ["--trace", SACCT, "--format", "sacct", "--cluster", "4x8", "--policy", "fifo", "--release-latency-s", "1"];

fn json(command: &str, extra: &[&str]) -> Value {
    let args: Vec<&str> = [command].into_iter().chain(RUN).chain(extra.iter().copied()).collect();
    let out = schedlab(&args);
    assert!(out.status.success(), "{}", stderr(&out));
    serde_json::from_str(&stdout(&out)).unwrap_or_else(|e| panic!("{e}: {}", stdout(&out)))
}

/// The CSV's rows: (job, recorded start, replayed start, deviation).
fn csv_rows(path: &std::path::Path) -> Vec<(String, i64, i64, i64)> {
    let text = std::fs::read_to_string(path).expect("the CSV was written");
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("job,recorded_start_s,replay_start_s,deviation_s"));
    lines
        .map(|line| {
            let f: Vec<&str> = line.split(',').collect();
            let n = |i: usize| f[i].parse::<i64>().unwrap_or_else(|_| panic!("{line}"));
            (f[0].to_owned(), n(1), n(2), n(3))
        })
        .collect()
}

/// Nearest-rank percentile `p` of sorted values (the definition docs/slurm.md gives).
fn nearest_rank(sorted: &[u64], p: usize) -> u64 {
    let rank = (sorted.len() * p).div_ceil(100).max(1);
    sorted[rank - 1]
}

#[test]
fn compare_starts_agrees_with_simulates_summary_line_and_its_own_csv() {
    let dir = scratch("compare_starts", "agree");
    let csv = dir.join("starts.csv");
    let simulated = json("simulate", &["--json"]);
    let vs = &simulated["starts_vs_recorded"];
    let compared = json("compare-starts", &["--json", "--worst", "5", "--csv", csv.to_str().unwrap()]);
    let d = &compared["distribution"];
    // The summary line's figures, for the same run, are the same.
    for key in ["jobs", "exact", "within_5s", "p50_s", "p99_s", "max_s", "latest_s"] {
        assert!(vs[key].is_u64(), "simulate's {key}: {vs}");
        assert_eq!(d[key], vs[key], "{key}: {d} vs {vs}");
    }
    assert_eq!(compared["array_tasks_left_out"], 0);

    // The CSV: every compared job once, by name, each deviation its replayed minus recorded
    // start, the recorded start the importer's.
    let rows = csv_rows(&csv);
    assert_eq!(rows.len() as u64, d["jobs"].as_u64().unwrap());
    assert!(rows.windows(2).all(|w| w[0].0 < w[1].0), "sorted by job name, each once");
    let recorded = traces::load(SACCT.as_ref(), traces::Format::Sacct(Default::default())).unwrap().recorded_starts;
    for (job, theirs, ours, deviation) in &rows {
        assert_eq!(*deviation, ours - theirs, "{job}");
        assert_eq!(Some(*theirs), recorded.get(job).map(|t| (t.as_ms() / 1000) as i64), "{job}");
    }

    // The distribution, recomputed from the CSV.
    let mut abs: Vec<u64> = rows.iter().map(|r| r.3.unsigned_abs()).collect();
    abs.sort_unstable();
    let within = |s: u64| abs.iter().filter(|&&a| a <= s).count() as u64;
    let sign = |s: i64| rows.iter().filter(|r| r.3.signum() == s).count() as u64;
    let expected = BTreeMap::from([
        ("exact", within(0)),
        ("within_5s", within(5)),
        ("within_30s", within(30)),
        ("p50_s", nearest_rank(&abs, 50)),
        ("p90_s", nearest_rank(&abs, 90)),
        ("p99_s", nearest_rank(&abs, 99)),
        ("max_s", *abs.last().unwrap()),
        ("latest_s", rows.iter().map(|r| r.3).max().unwrap().max(0) as u64),
        ("earliest_s", rows.iter().map(|r| -r.3).max().unwrap().max(0) as u64),
        ("earlier", sign(-1)),
        ("same", sign(0)),
        ("later", sign(1)),
    ]);
    for (key, value) in &expected {
        assert_eq!(d[key].as_u64(), Some(*value), "{key}: {d}");
    }
    // This run has jobs on both sides, so each sign is exercised.
    assert!(expected["earlier"] > 0 && expected["later"] > 0 && expected["same"] > 0, "{d}");

    // The 5 worst: the largest |deviation|, ties by name, as the CSV rows say.
    let mut by_size: Vec<&(String, i64, i64, i64)> = rows.iter().collect();
    by_size.sort_by(|a, b| b.3.unsigned_abs().cmp(&a.3.unsigned_abs()).then(a.0.cmp(&b.0)));
    let worst = compared["worst"].as_array().expect("worst");
    assert_eq!(worst.len(), 5);
    for (shown, row) in worst.iter().zip(&by_size) {
        assert_eq!((shown["job"].as_str(), shown["deviation_s"].as_i64()), (Some(row.0.as_str()), Some(row.3)));
        assert!(shown["gpus"].as_u64().is_some_and(|g| g > 0) && shown["queue"].is_string(), "{shown}");
    }

    // The text form prints the same row of figures.
    let args: Vec<&str> = ["compare-starts"].into_iter().chain(RUN).collect();
    let text = stdout(&schedlab(&args));
    let header = text.lines().position(|l| l.starts_with("jobs  exact")).expect("the table's header");
    let figures: Vec<&str> = text.lines().nth(header + 1).unwrap().split_whitespace().filter(|w| *w != "s").collect();
    let keys =
        ["jobs", "exact", "within_5s", "within_30s", "p50_s", "p90_s", "p99_s", "max_s", "latest_s", "earliest_s"];
    let wanted: Vec<String> = keys.iter().map(|k| d[k].to_string()).collect();
    assert_eq!(figures, wanted, "{text}");
    let signs = format!("by sign: {} (", d["earlier"]);
    assert!(text.contains(&signs) && text.contains("the 10 largest |deviation|:"), "{text}");
}

#[test]
fn exclude_arrays_leaves_out_the_array_tasks_the_importer_counted() {
    let all = json("compare-starts", &["--json"]);
    let without = json("compare-starts", &["--json", "--exclude-arrays"]);
    let import = traces::read_sacct(std::fs::File::open(SACCT).unwrap(), "sacct.txt").unwrap();
    // Every array task of this dump ran, so each is compared, and each is left out.
    let array_tasks = import.report.array_tasks;
    assert!(array_tasks > 0);
    assert_eq!(without["array_tasks_left_out"].as_u64(), Some(array_tasks));
    let jobs = |v: &Value| v["distribution"]["jobs"].as_u64().unwrap();
    assert_eq!(jobs(&without), jobs(&all) - array_tasks);
    assert!(without["worst"].as_array().unwrap().iter().all(|r| !r["job"].as_str().unwrap().contains('_')));
}

#[test]
fn a_trace_without_recorded_starts_is_refused_by_name() {
    let dir = scratch("compare_starts", "refused");
    // The same jobs written as a canonical trace: no starts.
    let imported = dir.join("imported");
    let out = schedlab(&["trace", "import", SACCT, "--format", "sacct", "--out", imported.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let out = schedlab(&["compare-starts", "--trace", imported.to_str().unwrap(), "--cluster", "4x8"]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(stdout(&out).is_empty(), "{}", stdout(&out));
    assert!(err.contains(&format!("error: {}: read with --format canonical", imported.display())), "{err}");
    assert!(err.contains("records no job starts") && err.contains("--format sacct"), "{err}");
    // The built-in workload records none either.
    let out = schedlab(&["compare-starts"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("compare-starts needs --trace") && stderr(&out).contains("--format sacct"));
    // A sacct dump none of whose jobs started.
    let never = dir.join("never.txt");
    std::fs::write(
        &never,
        "JobID|Submit|Start|End|State|AllocTRES|ReqTRES\n\
         5|2026-01-01T00:00:00|2026-01-01T00:01:00|2026-01-01T00:01:00|CANCELLED by 0||gres/gpu=1\n",
    )
    .unwrap();
    let out =
        schedlab(&["compare-starts", "--trace", never.to_str().unwrap(), "--format", "sacct", "--cluster", "1x8"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains(&format!("{}: none of its jobs started", never.display())), "{}", stderr(&out));
}
