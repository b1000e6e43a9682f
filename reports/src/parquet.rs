//! With the `polars` feature: the sweep table as Parquet (`sweep.parquet`) and aggregation
//! of large sweeps, on eager polars (csv + parquet; no lazy engine, no cloud stack: see
//! DESIGN.md, "Dependencies and build time").
//!
//! Column types follow `Summary`: whole-number keys are UInt64, fractional ones Float64, text
//! (trace, spec, policy, digest) String, so a digest of digits stays text and nothing is
//! guessed from the data.

use crate::Summary;
use crate::sweep::{RUN_COLUMNS, SweepTable};
use polars::prelude::*;
use std::path::Path;

/// The polars type of each sweep.csv column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Whole,
    Fraction,
    Text,
}

fn kind(column: &str) -> Kind {
    match column {
        "run" | "seed" => return Kind::Whole,
        "trace" | "spec" => return Kind::Text,
        _ => {}
    }
    match serde_json::to_value(Summary::default()).ok().as_ref().and_then(|v| v.get(column)) {
        Some(serde_json::Value::Number(n)) if n.is_u64() => Kind::Whole,
        Some(serde_json::Value::Number(_)) => Kind::Fraction,
        _ => Kind::Text,
    }
}

/// The sweep table as a DataFrame, one column per sweep.csv column, typed as `Summary` is.
/// A field that does not read as its column's type is an error naming the row and column.
pub fn sweep_frame(table: &SweepTable, what: &str) -> Result<DataFrame, String> {
    let mut columns = Vec::with_capacity(table.header.len());
    for (c, name) in table.header.iter().enumerate() {
        let fields = table.rows.iter().enumerate().map(|(r, row)| {
            row.get(c).map(String::as_str).ok_or_else(|| format!("{what}:{}: no `{name}` field", r + 2))
        });
        let bad = |r: usize, expected: &str, got: &str| {
            format!("{what}:{}: field `{name}`: expected {expected}, got `{got}`", r + 2)
        };
        let column = match kind(name) {
            Kind::Whole => {
                let values = fields
                    .enumerate()
                    .map(|(r, f)| f.and_then(|f| f.parse::<u64>().map_err(|_| bad(r, "a whole number", f))))
                    .collect::<Result<Vec<u64>, _>>()?;
                Column::new(name.as_str().into(), values)
            }
            Kind::Fraction => {
                let values = fields
                    .enumerate()
                    .map(|(r, f)| f.and_then(|f| f.parse::<f64>().map_err(|_| bad(r, "a number", f))))
                    .collect::<Result<Vec<f64>, _>>()?;
                Column::new(name.as_str().into(), values)
            }
            Kind::Text => Column::new(name.as_str().into(), fields.collect::<Result<Vec<&str>, _>>()?),
        };
        columns.push(column);
    }
    DataFrame::new(table.rows.len(), columns).map_err(|e| format!("{what}: {e}"))
}

/// Writes the sweep table as Parquet to `path`.
pub fn write_sweep_parquet(table: &SweepTable, what: &str, path: &Path) -> Result<(), String> {
    let mut frame = sweep_frame(table, what)?;
    let file = std::fs::File::create(path).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    ParquetWriter::new(file).finish(&mut frame).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(())
}

/// Reads a Parquet file back (for checks and for users' own analysis).
pub fn read_parquet(path: &Path) -> Result<DataFrame, String> {
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    ParquetReader::new(file).finish().map_err(|e| format!("{}: {e}", path.display()))
}

/// Per (trace, spec), in order of first appearance: `runs`, then each numeric metric's mean
/// (`<metric>_mean`) and sample standard deviation (`<metric>_std`, null for one run) over
/// the seeds.
pub fn aggregate(frame: &DataFrame) -> Result<DataFrame, String> {
    let metrics: Vec<&str> = frame
        .columns()
        .iter()
        .filter(|c| !RUN_COLUMNS.contains(&c.name().as_str()) && c.dtype().is_primitive_numeric())
        .map(|c| c.name().as_str())
        .collect();
    let error = |e: PolarsError| format!("aggregating the sweep: {e}");
    // The eager group-by aggregations are marked deprecated in favour of the lazy engine,
    // which this crate leaves out on purpose (it brings the cloud stack); they are kept,
    // tested here, in the pinned polars version.
    #[allow(deprecated)]
    let (means, stds, counts) = {
        let groups = frame.group_by_stable(["trace", "spec"]).map_err(error)?;
        (
            groups.clone().select(metrics.iter().copied()).mean().map_err(error)?,
            groups.clone().select(metrics.iter().copied()).std(1).map_err(error)?,
            groups.select(["run"]).count().map_err(error)?,
        )
    };
    let mut out: Vec<Column> = means.columns()[..2].to_vec();
    let mut runs = counts.column("run_count").map_err(error)?.clone();
    runs.rename("runs".into());
    out.push(runs);
    for metric in &metrics {
        out.push(means.column(&format!("{metric}_mean")).map_err(error)?.clone());
        let mut std = stds.column(&format!("{metric}_agg_std")).map_err(error)?.clone();
        std.rename(format!("{metric}_std").into());
        out.push(std);
    }
    DataFrame::new(means.height(), out).map_err(error)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::stats::estimate;
    use crate::sweep::{SweepRun, sweep_row};

    fn table() -> SweepTable {
        let rows: Vec<Vec<String>> = [("fifo", 0, 100.0, 0.5), ("fifo", 1, 140.0, 0.7), ("sjf", 0, 90.0, 0.6)]
            .iter()
            .enumerate()
            .map(|(i, (spec, seed, jct, util))| {
                let run = SweepRun {
                    run: i,
                    dir: format!("runs/{i}"),
                    trace: "t.csv".into(),
                    spec: spec.to_string(),
                    settings: Vec::new(),
                    seed: *seed,
                };
                let summary = Summary {
                    policy: spec.to_string(),
                    seed: *seed,
                    jobs: 10,
                    mean_jct_s: *jct,
                    utilisation: *util,
                    digest: "0123456789012345".into(),
                    ..Summary::default()
                };
                sweep_row(&run, &summary)
            })
            .collect();
        let mut bytes = Vec::new();
        crate::sweep::write_sweep_csv(&rows, &mut bytes).unwrap();
        SweepTable::read(std::str::from_utf8(&bytes).unwrap(), "sweep.csv").unwrap()
    }

    #[test]
    fn parquet_round_trips_with_summary_types() {
        let path = std::env::temp_dir().join(format!("schedlab-sweep-{}.parquet", std::process::id()));
        write_sweep_parquet(&table(), "sweep.csv", &path).unwrap();
        let frame = read_parquet(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        assert_eq!(frame.height(), 3);
        assert_eq!(frame.column("seed").unwrap().dtype(), &DataType::UInt64);
        assert_eq!(frame.column("mean_jct_s").unwrap().dtype(), &DataType::Float64);
        // A digest of digits stays text, leading zero and all.
        let digest = frame.column("digest").unwrap();
        assert_eq!(digest.dtype(), &DataType::String);
        assert_eq!(digest.str().unwrap().get(0), Some("0123456789012345"));
        let jct = frame.column("mean_jct_s").unwrap().f64().unwrap().clone();
        let jct: Vec<Option<f64>> = (0..jct.len()).map(|i| jct.get(i)).collect();
        assert_eq!(jct, [Some(100.0), Some(140.0), Some(90.0)]);
    }

    #[test]
    fn aggregates_match_the_report_statistics() {
        let frame = sweep_frame(&table(), "sweep.csv").unwrap();
        let agg = aggregate(&frame).unwrap();
        assert_eq!(agg.height(), 2);
        let spec = agg.column("spec").unwrap().str().unwrap().clone();
        let spec: Vec<Option<&str>> = (0..spec.len()).map(|i| spec.get(i)).collect();
        assert_eq!(spec, [Some("fifo"), Some("sjf")]);
        let runs = agg.column("runs").unwrap().cast(&DataType::UInt32).unwrap();
        let runs = runs.u32().unwrap();
        let runs: Vec<Option<u32>> = (0..runs.len()).map(|i| runs.get(i)).collect();
        assert_eq!(runs, [Some(2), Some(1)]);
        let mean = agg.column("mean_jct_s_mean").unwrap().f64().unwrap().get(0).unwrap();
        assert_eq!(mean, estimate(&[100.0, 140.0]).mean);
        let std = agg.column("mean_jct_s_std").unwrap().f64().unwrap().get(0).unwrap();
        assert!((std - 40f64 / 2f64.sqrt()).abs() < 1e-9);
        assert_eq!(agg.column("mean_jct_s_std").unwrap().f64().unwrap().get(1), None);
    }

    #[test]
    fn a_bad_field_names_row_and_column() {
        let mut t = table();
        let c = t.header.iter().position(|h| h == "jobs").unwrap();
        t.rows[1][c] = "ten".into();
        let err = sweep_frame(&t, "sweep.csv").unwrap_err();
        assert_eq!(err, "sweep.csv:3: field `jobs`: expected a whole number, got `ten`");
    }
}
