//! `schedlab merge`: the outputs of `sweep --shard I/N` back into the one sweep they slice.
//! The merged folder is, byte for byte, what the unsharded sweep writes (wall.csv aside: it
//! holds the shards' own wall times). Shards of different sweeps (any setting or the schedlab
//! version differs), a run held twice or a run missing are refused.

use super::sweep::{plan_runs, prepare_out, version, write_tables};
use super::{CliResult, emit};
use clap::Args;
use reports::sweep::{SweepManifest, SweepSettings, SweepTable, read_sweep_json, read_wall_csv, sweep_columns};
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

/// One shard folder, read and checked against itself.
struct ShardDir {
    dir: PathBuf,
    manifest: SweepManifest,
    /// sweep.csv rows by run.
    rows: BTreeMap<usize, Vec<String>>,
    walls: BTreeMap<usize, f64>,
}

impl ShardDir {
    fn name(&self) -> String {
        match self.manifest.shard {
            Some(s) => format!("{} (shard {s})", self.dir.display()),
            None => format!("{} (a whole sweep)", self.dir.display()),
        }
    }
}

fn read(dir: &Path, name: &str) -> Result<String, String> {
    let path = dir.join(name);
    fs::read_to_string(&path).map_err(|e| {
        format!("{}: cannot read {name} ({e}); is it the --out folder of `schedlab sweep`?", path.display())
    })
}

fn load(dir: &Path) -> Result<ShardDir, String> {
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
    Ok(ShardDir { dir: dir.to_path_buf(), manifest, rows, walls })
}

/// How the settings of two shards differ, one line per setting.
fn differences(a: &SweepSettings, b: &SweepSettings) -> Vec<String> {
    let mut out = Vec::new();
    let mut differ = |name: &str, x: String, y: String| {
        if x != y {
            out.push(format!("{name}: {x} vs {y}"));
        }
    };
    differ("--trace", format!("{:?}", a.traces), format!("{:?}", b.traces));
    differ("--policy", format!("{:?}", a.policies), format!("{:?}", b.policies));
    differ("--grid", format!("{:?}", a.grid), format!("{:?}", b.grid));
    differ("--seeds", format!("{:?}", a.seeds), format!("{:?}", b.seeds));
    let keys: std::collections::BTreeSet<&String> = a.run.keys().chain(b.run.keys()).collect();
    let value = |v: Option<&serde_json::Value>| v.map_or("(not given)".to_string(), |v| v.to_string());
    for key in keys {
        differ(&format!("--{}", key.replace('_', "-")), value(a.run.get(key)), value(b.run.get(key)));
    }
    out
}

/// Up to 10 numbers, then how many more.
fn list(runs: &[usize]) -> String {
    let shown: Vec<String> = runs.iter().take(10).map(usize::to_string).collect();
    let more = runs.len().saturating_sub(10);
    if more > 0 { format!("{} and {more} more", shown.join(", ")) } else { shown.join(", ") }
}

pub fn run(args: MergeArgs) -> CliResult {
    let shards: Vec<ShardDir> = args.shards.iter().map(|d| load(d)).collect::<Result<_, _>>()?;
    let first = &shards[0];
    for shard in &shards {
        let v = &shard.manifest.schedlab_version;
        if *v != first.manifest.schedlab_version || *v != version() {
            return Err(format!(
                "{} was written by schedlab {v}, {} by {}; this is {}: merge shards of one version, with that version",
                shard.name(),
                first.name(),
                first.manifest.schedlab_version,
                version()
            )
            .into());
        }
        let diff = differences(&first.manifest.settings, &shard.manifest.settings);
        if !diff.is_empty() || shard.manifest.runs_total != first.manifest.runs_total {
            return Err(format!(
                "{} and {} are not shards of one sweep; their settings differ:\n  {}",
                first.name(),
                shard.name(),
                if diff.is_empty() { "runs in the sweep".to_string() } else { diff.join("\n  ") }
            )
            .into());
        }
    }
    let settings = &first.manifest.settings;
    let planned = plan_runs(settings)?;
    if planned.len() != first.manifest.runs_total {
        return Err(format!(
            "{}: its settings plan {} runs, its sweep.json says {}",
            first.name(),
            planned.len(),
            first.manifest.runs_total
        )
        .into());
    }
    // Which shard holds each run; each run exactly once, as the settings plan it.
    let mut holder: BTreeMap<usize, usize> = BTreeMap::new();
    for (s, shard) in shards.iter().enumerate() {
        for run in &shard.manifest.runs {
            if planned.get(run.run) != Some(run) {
                return Err(format!("{}: run {} is not the run its settings plan", shard.name(), run.run).into());
            }
            if let Some(other) = holder.insert(run.run, s) {
                return Err(format!(
                    "overlapping shards: run {} ({}) is in both {} and {}",
                    run.run,
                    run.dir,
                    shards[other].name(),
                    shard.name()
                )
                .into());
            }
        }
    }
    let missing: Vec<usize> = (0..planned.len()).filter(|r| !holder.contains_key(r)).collect();
    if !missing.is_empty() {
        let mut message = format!(
            "incomplete: {} of the sweep's {} runs are in no shard given (runs {})",
            missing.len(),
            planned.len(),
            list(&missing)
        );
        let counts: Vec<usize> = shards.iter().filter_map(|s| s.manifest.shard.map(|s| s.count)).collect();
        if let Some(&count) = counts.first()
            && counts.len() == shards.len()
            && counts.iter().all(|&c| c == count)
        {
            let given: Vec<usize> = shards.iter().filter_map(|s| s.manifest.shard.map(|s| s.index)).collect();
            let absent: Vec<String> =
                (0..count).filter(|i| !given.contains(i)).map(|i| format!("{i}/{count}")).collect();
            message.push_str(&format!("; missing shard(s): {}", absent.join(", ")));
        }
        return Err(message.into());
    }
    prepare_out(&args.out)?;
    let mut rows = Vec::with_capacity(planned.len());
    let mut walls = Vec::with_capacity(planned.len());
    for run in &planned {
        let shard = &shards[holder[&run.run]];
        copy_dir(&shard.dir.join(&run.dir), &args.out.join(&run.dir))?;
        rows.push(shard.rows[&run.run].clone());
        walls.push((run.run, shard.walls[&run.run]));
    }
    let manifest = SweepManifest {
        schedlab_version: version(),
        settings: settings.clone(),
        runs_total: planned.len(),
        shard: None,
        runs: planned,
    };
    write_tables(&args.out, &manifest, &rows, &walls)?;
    emit(format_args!("merged {} shards: {} runs into {}\n", shards.len(), manifest.runs.len(), args.out.display()))
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
