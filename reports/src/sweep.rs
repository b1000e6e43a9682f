//! The files a sweep writes beside its run folders: `sweep.csv`, one row per run (its place in
//! the sweep, then every summary key but `wall_s`, in the order of `Summary`'s fields),
//! `sweep.json` (the settings and the run list: what `schedlab merge` checks) and `wall.csv`
//! (wall-clock seconds per run: the one file that differs between two identical sweeps).
//! The same functions write an unsharded sweep and a merge of its shards, so the two agree
//! byte for byte.

use crate::Summary;
use serde::{Deserialize, Serialize};
use std::io::{self, Write};

/// The columns of sweep.csv before the summary keys: the run's index in the sweep, the trace
/// as given (or `(built-in synthetic)`), the policy spec as given with the grid applied, and
/// the seed. The summary's own `policy` column that follows is the spec with every parameter.
pub const RUN_COLUMNS: [&str; 4] = ["run", "trace", "spec", "seed"];

/// What `trace` says for the built-in synthetic workload.
pub const SYNTHETIC_TRACE: &str = "(built-in synthetic)";

/// Summary keys left out of sweep.csv: `seed` (already a run column), `wall_s` (not
/// deterministic; it goes to wall.csv) and `jct_percentiles` (present only in runs whose
/// percentiles were sketched: a column of its own would change every sweep's table).
const LEFT_OUT: [&str; 3] = ["seed", "wall_s", "jct_percentiles"];

/// sweep.json: everything that defines a sweep, and the runs this folder holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepManifest {
    pub schedlab_version: String,
    pub settings: SweepSettings,
    /// Runs in the whole sweep, every shard together.
    pub runs_total: usize,
    /// Which slice this folder holds; absent for a whole sweep (or a merge of all its shards).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shard: Option<Shard>,
    /// The runs in this folder, by index.
    pub runs: Vec<SweepRun>,
}

/// The sweep's inputs. Two shards belong to one sweep exactly when these are equal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepSettings {
    /// Trace paths as given; empty for the built-in synthetic workload.
    pub traces: Vec<String>,
    /// Policy specs as given, before the grid.
    pub policies: Vec<String>,
    /// `KEY=v1|v2|...`, in the order given.
    pub grid: Vec<String>,
    pub seeds: Vec<u64>,
    /// Every other run setting (defaults included): the fields of the run's `RunSpec` (the
    /// `run` crate) but trace, policy, seed and outputs, as JSON: the cluster, failures,
    /// resilience settings, synthetic workload size and load, trace format.
    pub run: serde_json::Map<String, serde_json::Value>,
}

/// `--shard index/count`: the runs whose index % count == index.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

impl Shard {
    pub fn holds(&self, run: usize) -> bool {
        run % self.count == self.index
    }
}

impl std::fmt::Display for Shard {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.count)
    }
}

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SweepRun {
    pub run: usize,
    /// Its folder, relative to the sweep folder: `runs/<index>-<trace>-<policy>-s<seed>`.
    pub dir: String,
    pub trace: String,
    pub spec: String,
    /// Run settings a `--grid` varies (`checkpoint_s`, ...) with this run's values, in grid
    /// order; empty when the grid varies none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<(String, String)>,
    pub seed: u64,
}

impl SweepRun {
    /// What tells this run's group from the others: its policy spec, then its run settings
    /// (`fifo checkpoint_s=600`). sweep.csv's `spec` column and the report show it.
    pub fn label(&self) -> String {
        let mut label = self.spec.clone();
        for (key, value) in &self.settings {
            label.push_str(&format!(" {key}={value}"));
        }
        label
    }
}

/// The summary's keys and values as CSV fields, in field order, less the left-out keys.
/// Numbers are written as serde writes them (shortest form that reads back exactly).
fn summary_fields(summary: &Summary) -> (Vec<String>, Vec<String>) {
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.serialize(summary).expect("a summary is a flat record");
    let bytes = writer.into_inner().expect("writing to memory cannot fail");
    let mut reader = csv::Reader::from_reader(bytes.as_slice());
    let header = reader.headers().expect("the header just written").clone();
    let values = reader.records().next().expect("the row just written").expect("a valid row");
    header
        .iter()
        .zip(values.iter())
        .filter(|(key, _)| !LEFT_OUT.contains(key))
        .map(|(key, value)| (key.to_string(), value.to_string()))
        .unzip()
}

/// sweep.csv's header.
pub fn sweep_columns() -> Vec<String> {
    let mut columns: Vec<String> = RUN_COLUMNS.iter().map(|c| c.to_string()).collect();
    columns.extend(summary_fields(&Summary::default()).0);
    columns
}

/// One run's row of sweep.csv.
pub fn sweep_row(run: &SweepRun, summary: &Summary) -> Vec<String> {
    let mut row = vec![run.run.to_string(), run.trace.clone(), run.label(), run.seed.to_string()];
    row.extend(summary_fields(summary).1);
    row
}

/// sweep.csv: the header, then `rows` in the order given (the callers order them by run).
pub fn write_sweep_csv(rows: &[Vec<String>], out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(sweep_columns())?;
    for row in rows {
        w.write_record(row)?;
    }
    w.flush()
}

/// A sweep.csv read back: its header and rows, each as written.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepTable {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

impl SweepTable {
    /// Reads a sweep.csv. `what` names the file in errors.
    pub fn read(text: &str, what: &str) -> Result<SweepTable, String> {
        let mut reader = csv::Reader::from_reader(text.as_bytes());
        let header: Vec<String> =
            reader.headers().map_err(|e| format!("{what}: {e}"))?.iter().map(str::to_string).collect();
        if header.len() < RUN_COLUMNS.len() || header[..RUN_COLUMNS.len()] != RUN_COLUMNS {
            return Err(format!("{what}: not a sweep table (its columns should start with {})", RUN_COLUMNS.join(",")));
        }
        let mut rows = Vec::new();
        for record in reader.records() {
            let record = record.map_err(|e| format!("{what}: {e}"))?;
            rows.push(record.iter().map(str::to_string).collect());
        }
        Ok(SweepTable { header, rows })
    }

    /// The run index of each row (its first column).
    pub fn run_of(row: &[String]) -> Option<usize> {
        row.first()?.parse().ok()
    }
}

pub fn write_sweep_json(manifest: &SweepManifest, mut out: impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut out, manifest)?;
    writeln!(out)
}

pub fn read_sweep_json(text: &str) -> Result<SweepManifest, String> {
    serde_json::from_str(text).map_err(|e| e.to_string())
}

/// wall.csv: `run,wall_s`, one row per run in the order given.
pub fn write_wall_csv(rows: &[(usize, f64)], out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(["run", "wall_s"])?;
    for (run, wall_s) in rows {
        w.write_record([run.to_string(), format!("{wall_s:.6}")])?;
    }
    w.flush()
}

/// Reads a wall.csv back.
pub fn read_wall_csv(text: &str, what: &str) -> Result<Vec<(usize, f64)>, String> {
    let mut reader = csv::Reader::from_reader(text.as_bytes());
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| format!("{what}: {e}"))?;
        let parse = || Some((record.get(0)?.parse().ok()?, record.get(1)?.parse().ok()?));
        rows.push(parse().ok_or_else(|| {
            format!("{what}: expected run,wall_s rows, got `{}`", record.iter().collect::<Vec<_>>().join(","))
        })?);
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_follow_the_summary_fields_without_seed_and_wall_time() {
        let columns = sweep_columns();
        assert_eq!(&columns[..5], ["run", "trace", "spec", "seed", "policy"]);
        assert_eq!(columns.last().map(String::as_str), Some("digest"));
        assert!(!columns.iter().any(|c| c == "wall_s"));
        assert_eq!(columns.iter().filter(|c| *c == "seed").count(), 1);
        let json = serde_json::to_value(Summary::default()).unwrap();
        // Every summary key but wall_s is a column.
        assert_eq!(json.as_object().unwrap().len() - 1 + 3, columns.len());
    }

    #[test]
    fn a_sketched_runs_row_has_the_tables_columns() {
        let run = SweepRun {
            run: 0,
            dir: "runs/000-x".into(),
            trace: "t.csv".into(),
            spec: "fifo".into(),
            settings: Vec::new(),
            seed: 0,
        };
        let sketched = Summary { jct_percentiles: Some("sketch(0.1%)".into()), ..Summary::default() };
        assert_eq!(sweep_row(&run, &sketched), sweep_row(&run, &Summary::default()));
    }

    #[test]
    fn a_row_reads_back_as_written() {
        let summary = Summary {
            policy: "fifo[skip=false,placement=pack]".into(),
            seed: 7,
            utilisation: 0.1 + 0.2,
            littles_law_error: 1e-17,
            wall_s: Some(3.5),
            ..Summary::default()
        };
        let run = SweepRun {
            run: 3,
            dir: "runs/003-x".into(),
            trace: "t.csv".into(),
            spec: "fifo".into(),
            settings: Vec::new(),
            seed: 7,
        };
        let row = sweep_row(&run, &summary);
        assert_eq!(row.len(), sweep_columns().len());
        let mut bytes = Vec::new();
        write_sweep_csv(std::slice::from_ref(&row), &mut bytes).unwrap();
        let table = SweepTable::read(std::str::from_utf8(&bytes).unwrap(), "test").unwrap();
        assert_eq!(table.rows, vec![row]);
        let util = table.header.iter().position(|c| c == "utilisation").unwrap();
        assert_eq!(table.rows[0][util].parse::<f64>().unwrap(), 0.1 + 0.2);
        assert_eq!(SweepTable::run_of(&table.rows[0]), Some(3));
    }

    #[test]
    fn the_manifest_round_trips_and_a_whole_sweep_has_no_shard_key() {
        let manifest = SweepManifest {
            schedlab_version: "0.1.0".into(),
            settings: SweepSettings {
                traces: vec![],
                policies: vec!["fifo".into()],
                grid: vec!["placement=pack|spread".into()],
                seeds: vec![0, 1],
                run: serde_json::Map::from_iter([("jobs".to_string(), serde_json::json!(200))]),
            },
            runs_total: 4,
            shard: None,
            runs: vec![],
        };
        let mut bytes = Vec::new();
        write_sweep_json(&manifest, &mut bytes).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(!text.contains("shard"), "{text}");
        assert_eq!(read_sweep_json(&text).unwrap(), manifest);
        assert!(Shard { index: 1, count: 3 }.holds(4));
        assert!(!Shard { index: 1, count: 3 }.holds(3));
    }
}
