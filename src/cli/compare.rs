//! `schedlab compare A B`: two runs, or two sweeps, side by side. The comparison itself
//! (directions, pairing, the table) is `reports::compare`; this reads the folders.

use super::{CliResult, emit};
use clap::Args;
use reports::compare::{self, Metrics, SweepRecord};
use reports::sweep::SweepTable;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct CompareArgs {
    /// A run (a folder with summary.json: `simulate --out`, or a sweep's runs/<run>/; or the
    /// file itself) or a sweep (a folder with sweep.csv, or the file itself).
    a: PathBuf,
    /// The other run or sweep; changes read from A to B.
    b: PathBuf,
    /// Print only the metrics that differ.
    #[arg(long)]
    only_changed: bool,
}

enum Side {
    Run(Metrics),
    Sweep(Vec<SweepRecord>),
}

fn read(path: &Path) -> Result<String, String> {
    fs::read_to_string(path).map_err(|e| format!("cannot read {}: {e}", path.display()))
}

fn load(path: &Path) -> Result<Side, String> {
    let file = if path.is_dir() {
        [path.join("sweep.csv"), path.join("summary.json")].into_iter().find(|p| p.is_file()).ok_or_else(|| {
            format!("{}: neither a run folder (summary.json) nor a sweep folder (sweep.csv)", path.display())
        })?
    } else {
        path.to_path_buf()
    };
    let text = read(&file)?;
    let what = file.display().to_string();
    if file.extension().is_some_and(|e| e == "csv") {
        let table = SweepTable::read(&text, &what)?;
        return Ok(Side::Sweep(SweepRecord::from_table(&table, &what)?));
    }
    let json: serde_json::Value = serde_json::from_str(&text).map_err(|e| format!("{what}: {e}"))?;
    match json.as_object() {
        Some(object) if object.contains_key("digest") => Ok(Side::Run(Metrics::from_summary_json(object))),
        _ => Err(format!("{what}: not a run summary (no `digest`)")),
    }
}

pub fn run(args: CompareArgs) -> CliResult {
    let (a, b) = (load(&args.a)?, load(&args.b)?);
    let mut out = format!("A: {}\nB: {}\n", args.a.display(), args.b.display());
    match (a, b) {
        (Side::Run(a), Side::Run(b)) => {
            let rows = compare::compare(&a, &b);
            if compare::unchanged(&rows) {
                out.push_str("no change: every metric and the digest are the same\n");
            }
            out.push('\n');
            out.push_str(&compare::render_rows(&rows, args.only_changed));
        }
        (Side::Sweep(a), Side::Sweep(b)) => {
            let cmp = compare::compare_sweeps(&a, &b)?;
            out.push_str(&compare::render_sweeps(&cmp, args.only_changed));
        }
        (Side::Run(_), Side::Sweep(_)) | (Side::Sweep(_), Side::Run(_)) => {
            return Err("one side is a run and the other a sweep: compare a run with a run (a sweep's runs are \
                        under its runs/ folder) or a sweep with a sweep"
                .into());
        }
    }
    out.push('\n');
    out.push_str(compare::LEGEND);
    out.push('\n');
    emit(out)
}
