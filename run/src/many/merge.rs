//! Shards back into the one sweep they slice: which shard holds each run, every run exactly
//! once, all of one sweep and one version. Reading and copying the folders is the caller's.

use super::{Plan, VERSION};
use policies::Registry;
use reports::sweep::{SweepManifest, SweepSettings};
use std::collections::BTreeMap;
use std::path::PathBuf;

/// One shard to merge: its folder (to name it in errors) and its sweep.json.
#[derive(Debug, Clone)]
pub struct Part {
    /// The shard's folder, the `--out` of its sweep.
    pub folder: PathBuf,
    /// Its sweep.json.
    pub manifest: SweepManifest,
}

impl Part {
    /// The shard as errors name it: `out/1 (shard 1/4)`.
    pub fn name(&self) -> String {
        match self.manifest.shard {
            Some(s) => format!("{} (shard {s})", self.folder.display()),
            None => format!("{} (a whole sweep)", self.folder.display()),
        }
    }
}

/// The sweep the shards slice, and where each of its runs is.
#[derive(Debug, Clone, PartialEq)]
pub struct Merged {
    /// The whole sweep, planned from the shards' settings.
    pub plan: Plan,
    /// For each run, the index of the part holding it.
    pub holders: Vec<usize>,
}

/// Checks that `parts` are shards of one sweep, written by this version, holding every run it
/// plans exactly once, and says which part holds each run. `registry` plans the sweep.
pub fn merge(parts: &[Part], registry: &Registry) -> Result<Merged, String> {
    let first = parts.first().ok_or("no shards to merge")?;
    for part in parts {
        check_alike(first, part)?;
    }
    let plan = Plan::new(first.manifest.settings.clone(), registry)?;
    if plan.runs.len() != first.manifest.runs_total {
        return Err(format!(
            "{}: its settings plan {} runs, its sweep.json says {}",
            first.name(),
            plan.runs.len(),
            first.manifest.runs_total
        ));
    }
    let holders = holders(parts, &plan)?;
    Ok(Merged { plan, holders })
}

/// Refuses a part of another version or another sweep than `first`.
fn check_alike(first: &Part, part: &Part) -> Result<(), String> {
    let v = &part.manifest.schedlab_version;
    if *v != first.manifest.schedlab_version || v != VERSION {
        return Err(format!(
            "{} was written by schedlab {v}, {} by {}; this is {VERSION}: merge shards of one version, with that version",
            part.name(),
            first.name(),
            first.manifest.schedlab_version,
        ));
    }
    let diff = differences(&first.manifest.settings, &part.manifest.settings);
    if !diff.is_empty() || part.manifest.runs_total != first.manifest.runs_total {
        return Err(format!(
            "{} and {} are not shards of one sweep; their settings differ:\n  {}",
            first.name(),
            part.name(),
            if diff.is_empty() { "runs in the sweep".to_string() } else { diff.join("\n  ") }
        ));
    }
    Ok(())
}

/// Which part holds each run of `plan`; each run exactly once, as the plan has it.
fn holders(parts: &[Part], plan: &Plan) -> Result<Vec<usize>, String> {
    let mut holder: BTreeMap<usize, usize> = BTreeMap::new();
    for (p, part) in parts.iter().enumerate() {
        for run in &part.manifest.runs {
            if plan.runs.get(run.run) != Some(run) {
                return Err(format!("{}: run {} is not the run its settings plan", part.name(), run.run));
            }
            if let Some(other) = holder.insert(run.run, p) {
                return Err(format!(
                    "overlapping shards: run {} ({}) is in both {} and {}",
                    run.run,
                    run.dir,
                    parts[other].name(),
                    part.name()
                ));
            }
        }
    }
    let missing: Vec<usize> = (0..plan.runs.len()).filter(|r| !holder.contains_key(r)).collect();
    if !missing.is_empty() {
        return Err(incomplete(parts, &missing, plan.runs.len()));
    }
    Ok(holder.into_values().collect())
}

/// The error for runs no part holds; the shards missing when every part is one of N.
fn incomplete(parts: &[Part], missing: &[usize], total: usize) -> String {
    let mut message = format!(
        "incomplete: {} of the sweep's {total} runs are in no shard given (runs {})",
        missing.len(),
        list(missing)
    );
    let counts: Vec<usize> = parts.iter().filter_map(|p| p.manifest.shard.map(|s| s.count)).collect();
    if let Some(&count) = counts.first()
        && counts.len() == parts.len()
        && counts.iter().all(|&c| c == count)
    {
        let given: Vec<usize> = parts.iter().filter_map(|p| p.manifest.shard.map(|s| s.index)).collect();
        let absent: Vec<String> = (0..count).filter(|i| !given.contains(i)).map(|i| format!("{i}/{count}")).collect();
        message.push_str(&format!("; missing shard(s): {}", absent.join(", ")));
    }
    message
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
