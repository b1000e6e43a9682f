//! `schedlab report`: one self-contained HTML report of a run folder or a sweep folder, and
//! optionally each chart as an SVG or PNG file.

use super::{CliResult, emit};
use clap::Args;
use std::path::PathBuf;

#[derive(Args)]
pub struct ReportArgs {
    /// A run folder (`schedlab simulate --out`) or a sweep folder (`schedlab sweep --out`).
    dir: PathBuf,
    /// The HTML file to write (default: DIR/report.html). Everything is inline: it opens
    /// anywhere, with no network.
    #[arg(short, long, visible_alias = "output")]
    out: Option<PathBuf>,
    /// Also write each chart as a PNG (twice the on-page size) into this folder.
    #[arg(long, value_name = "DIR")]
    png: Option<PathBuf>,
    /// Also write each chart as an SVG into this folder.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
    /// Also write a sweep's table (DIR/sweep.csv) as Parquet to this file, typed as
    /// summary.json is (needs schedlab built with `--features polars`).
    #[arg(long, value_name = "FILE")]
    parquet: Option<PathBuf>,
}

pub fn run(args: ReportArgs) -> CliResult {
    if let Some(path) = &args.parquet {
        write_parquet(&args.dir, path)?;
    }
    let input = reports::report::load(&args.dir)?;
    let rendered = reports::report::render(&input)?;
    let output = args.out.unwrap_or_else(|| args.dir.join("report.html"));
    std::fs::write(&output, &rendered.html).map_err(|e| format!("cannot write {}: {e}", output.display()))?;
    let charts = rendered.svgs.len();
    emit(format_args!("wrote {} ({charts} chart{})\n", output.display(), if charts == 1 { "" } else { "s" }))?;
    if let Some(dir) = &args.svg {
        let written = rendered.write_svgs(dir)?;
        emit(format_args!("wrote {} SVG file(s) into {}\n", written.len(), dir.display()))?;
    }
    if let Some(dir) = &args.png {
        let written = rendered.write_pngs(dir)?;
        emit(format_args!("wrote {} PNG file(s) into {}\n", written.len(), dir.display()))?;
    }
    Ok(())
}

#[cfg(feature = "polars")]
fn write_parquet(dir: &std::path::Path, path: &std::path::Path) -> CliResult {
    let runs = sweep_parquet(dir, path)?;
    emit(format_args!("wrote {} ({runs} runs)\n", path.display()))
}

/// Writes the sweep table of sweep folder `dir` (its sweep.csv) as Parquet at `path`; the
/// number of runs. Also what `schedlab sweep` and `merge` call when built with polars.
#[cfg(feature = "polars")]
pub(super) fn sweep_parquet(dir: &std::path::Path, path: &std::path::Path) -> Result<usize, String> {
    let csv = dir.join("sweep.csv");
    let text = std::fs::read_to_string(&csv)
        .map_err(|e| format!("the Parquet sweep table: cannot read {}: {e}", csv.display()))?;
    let what = csv.display().to_string();
    let table = reports::sweep::SweepTable::read(&text, &what)?;
    reports::parquet::write_sweep_parquet(&table, &what, path)?;
    Ok(table.rows.len())
}

#[cfg(not(feature = "polars"))]
fn write_parquet(_dir: &std::path::Path, _path: &std::path::Path) -> CliResult {
    Err("--parquet needs schedlab built with the polars feature (cargo build --release --features polars)".into())
}
