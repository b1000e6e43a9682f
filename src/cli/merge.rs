//! `schedlab merge`: the outputs of `sweep --shard I/N` back into the one sweep they slice.
//! The merged folder is, byte for byte, what the unsharded sweep writes (wall.csv aside: it
//! holds the shards' own wall times). Shards of different sweeps (any setting or the schedlab
//! version differs), a run held twice or a run missing are refused (by `run::many::merge`);
//! here the folders are read, checked against themselves, and copied.

use super::sweep::{prepare_out, write_tables};
use super::{CliResult, emit};
use clap::Args;
use reports::sweep::{SweepTable, read_sweep_json, read_wall_csv, sweep_columns};
use run::many::Part;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

#[derive(Args)]
pub struct MergeArgs {
    /// Shard folders: the --out of each `schedlab sweep --shard I/N`, in any order.
    #[arg(required = true, value_name = "SHARD_DIR")]
    shards: Vec<PathBuf>,
    /// Where the merged sweep goes: a new or empty folder.
    #[arg(long, short)]
    out: PathBuf,
}

/// One shard folder's tables, read and checked against its sweep.json.
struct ShardTables {
    /// sweep.csv rows by run.
    rows: BTreeMap<usize, Vec<String>>,
    walls: BTreeMap<usize, f64>,
}

fn read(dir: &Path, name: &str) -> Result<String, String> {
    let path = dir.join(name);
    fs::read_to_string(&path).map_err(|e| {
        format!("{}: cannot read {name} ({e}); is it the --out folder of `schedlab sweep`?", path.display())
    })
}

fn load(dir: &Path) -> Result<(Part, ShardTables), String> {
    let manifest =
        read_sweep_json(&read(dir, "sweep.json")?).map_err(|e| format!("{}: {e}", dir.join("sweep.json").display()))?;
    let what = dir.join("sweep.csv").display().to_string();
    let table = SweepTable::read(&read(dir, "sweep.csv")?, &what)?;
    if table.header != sweep_columns() {
        return Err(format!("{what}: its columns are not the ones this schedlab writes"));
    }
    let mut rows = BTreeMap::new();
    for row in table.rows {
        let run = SweepTable::run_of(&row).ok_or_else(|| format!("{what}: a row with no run number"))?;
        if rows.insert(run, row).is_some() {
            return Err(format!("{what}: run {run} twice"));
        }
    }
    let wall_what = dir.join("wall.csv").display().to_string();
    let walls: BTreeMap<usize, f64> = read_wall_csv(&read(dir, "wall.csv")?, &wall_what)?.into_iter().collect();
    let listed: Vec<usize> = manifest.runs.iter().map(|r| r.run).collect();
    if !rows.keys().copied().eq(listed.iter().copied()) || !walls.keys().copied().eq(listed.iter().copied()) {
        return Err(format!("{}: sweep.json, sweep.csv and wall.csv do not list the same runs", dir.display()));
    }
    for run in &manifest.runs {
        if !dir.join(&run.dir).is_dir() {
            return Err(format!("{}: run {} has no folder {}", dir.display(), run.run, run.dir));
        }
    }
    Ok((Part { folder: dir.to_path_buf(), manifest }, ShardTables { rows, walls }))
}

pub fn run(args: MergeArgs) -> CliResult {
    let (parts, tables): (Vec<Part>, Vec<ShardTables>) =
        args.shards.iter().map(|d| load(d)).collect::<Result<Vec<_>, _>>()?.into_iter().unzip();
    let merged = run::many::merge(&parts, super::registry())?;
    // New or empty: --out could be one of the shards, which a reuse would remove.
    if let Ok(mut entries) = fs::read_dir(&args.out)
        && entries.next().is_some()
    {
        return Err(format!(
            "--out {} is not empty: a merge writes into a new or empty folder (remove it, or choose another)",
            args.out.display()
        )
        .into());
    }
    prepare_out(&args.out, false)?;
    let planned = &merged.plan.runs;
    let mut rows = Vec::with_capacity(planned.len());
    let mut walls = Vec::with_capacity(planned.len());
    for (run, &holder) in planned.iter().zip(&merged.holders) {
        copy_dir(&parts[holder].folder.join(&run.dir), &args.out.join(&run.dir))?;
        rows.push(tables[holder].rows[&run.run].clone());
        walls.push((run.run, tables[holder].walls[&run.run]));
    }
    let manifest = merged.plan.manifest(None);
    write_tables(&args.out, &manifest, &rows, &walls)?;
    emit(format_args!("merged {} shards: {} runs into {}\n", parts.len(), manifest.runs.len(), args.out.display()))
}

/// Copies a run folder (files only: a run writes no subfolders).
fn copy_dir(from: &Path, to: &Path) -> Result<(), String> {
    fs::create_dir_all(to).map_err(|e| format!("cannot create {}: {e}", to.display()))?;
    let entries = fs::read_dir(from).map_err(|e| format!("cannot read {}: {e}", from.display()))?;
    for entry in entries {
        let entry = entry.map_err(|e| format!("cannot read {}: {e}", from.display()))?;
        let path = entry.path();
        if !path.is_file() {
            return Err(format!("{}: a run folder holds only files", path.display()));
        }
        fs::copy(&path, to.join(entry.file_name())).map_err(|e| format!("cannot copy {}: {e}", path.display()))?;
    }
    Ok(())
}
