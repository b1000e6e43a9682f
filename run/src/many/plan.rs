//! A sweep planned: traces x policies (each expanded by the grid) x run-setting combinations x
//! seeds, numbered in that order, each with its folder name and its [`RunSpec`].

use super::expand::{expand_policies, grid_key, setting_combos};
use crate::{GRID_KEYS, RunSpec};
use policies::Registry;
use reports::sweep::{SYNTHETIC_TRACE, SweepRun, SweepSettings};
use std::path::{Path, PathBuf};

/// The most runs one sweep may plan (a typo such as `--seeds 0..1000000000` is refused).
pub const MAX_RUNS: usize = 1_000_000;

/// The fields of a RunSpec that each run sets (or that a sweep has as its own flags).
const PER_RUN: [&str; 5] = ["trace", "policy", "seed", "out", "decisions"];

/// A sweep's settings and every run they define, numbered: trace (as given), then policy (as
/// given, each expanded by the grid, first grid key outermost), then run-setting combination,
/// then seed. A pure function of the settings, so a merge plans the runs its shards ran.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// What defines the sweep (sweep.json's `settings`).
    pub settings: SweepSettings,
    /// Every run, in run order: `runs[i].run == i`.
    pub runs: Vec<SweepRun>,
}

impl Plan {
    /// Plans the sweep `settings` define, its policies built and checked by `registry`.
    pub fn new(settings: SweepSettings, registry: &Registry) -> Result<Plan, String> {
        let runs = plan_runs(&settings, registry)?;
        Ok(Plan { settings, runs })
    }

    /// The RunSpec of `run`: `base` (the settings every run shares) with the run's trace,
    /// policy, seed and grid settings; its files go to `folder`/`run.dir` when a folder is
    /// given (the decision log never: a sweep writes none).
    pub fn spec(&self, base: &RunSpec, run: &SweepRun, folder: Option<&Path>) -> Result<RunSpec, String> {
        let mut spec = base.clone();
        if !self.settings.traces.is_empty() {
            let (path, cluster) = trace_and_cluster(&run.trace);
            spec.trace = Some(PathBuf::from(path));
            if let Some(cluster) = cluster {
                if base.cluster.is_some() {
                    return Err(format!(
                        "--trace {}: its own cluster (after `@`) and --cluster: give one or the other",
                        run.trace
                    ));
                }
                spec.cluster = Some(cluster.to_string());
            }
        }
        spec.policy = run.spec.parse().map_err(|e| format!("run {}: {e}", run.run))?;
        spec.seed = run.seed;
        for (key, value) in &run.settings {
            spec.set(key, value)?;
        }
        spec.out = folder.map(|folder| folder.join(&run.dir));
        spec.decisions = false;
        Ok(spec)
    }
}

/// The settings every run of a sweep shares, for sweep.json: the fields of `base` but those
/// each run sets, and with traces (`traced`), but the built-in workload's (`jobs`, `load`),
/// which those runs do not use.
pub fn shared_settings(base: &RunSpec, traced: bool) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    const SYNTHETIC: [&str; 2] = ["jobs", "load"];
    match serde_json::to_value(base).map_err(|e| e.to_string())? {
        serde_json::Value::Object(mut fields) => {
            let unused = |key: &str| PER_RUN.contains(&key) || (traced && SYNTHETIC.contains(&key));
            fields.retain(|key, _| !unused(key));
            Ok(fields)
        }
        other => Err(format!("run settings are not a map: {other}")),
    }
}

/// Every run of the sweep `settings` define, numbered (see [`Plan`]).
fn plan_runs(settings: &SweepSettings, registry: &Registry) -> Result<Vec<SweepRun>, String> {
    if settings.seeds.is_empty() {
        return Err("--seeds: no seeds".to_string());
    }
    let (setting_grid, policy_grid): (Vec<String>, Vec<String>) =
        settings.grid.iter().cloned().partition(|g| GRID_KEYS.contains(&grid_key(g)));
    let specs = expand_policies(&settings.policies, &policy_grid, registry)?;
    let combos = setting_combos(&setting_grid)?;
    let traces = trace_slugs(&settings.traces);
    let total = traces.len() * specs.len() * combos.len() * settings.seeds.len();
    if total > MAX_RUNS {
        return Err(format!("the sweep has {total} runs, more than {MAX_RUNS}"));
    }
    let width = total.saturating_sub(1).to_string().len().max(3);
    let mut runs = Vec::with_capacity(total);
    for (trace, trace_slug) in &traces {
        for spec in &specs {
            for combo in &combos {
                for &seed in &settings.seeds {
                    let mut run = SweepRun {
                        run: runs.len(),
                        dir: String::new(),
                        trace: trace.to_string(),
                        spec: spec.to_string(),
                        settings: combo.clone(),
                        seed,
                    };
                    run.dir = format!("runs/{:0width$}-{trace_slug}-{}-s{seed}", run.run, slug(&run.label()));
                    runs.push(run);
                }
            }
        }
    }
    Ok(runs)
}

/// A sweep's trace as given: its path, and the cluster it runs on when it names its own
/// (`PATH@CLUSTER`, a shorthand or a cluster.csv: a sweep over traces of different
/// clusters). Split at the last `@`, unless the whole text is a file or folder that exists.
pub fn trace_and_cluster(trace: &str) -> (&str, Option<&str>) {
    match trace.rsplit_once('@') {
        Some((path, cluster)) if !path.is_empty() && !cluster.is_empty() && !Path::new(trace).exists() => {
            (path, Some(cluster))
        }
        _ => (trace, None),
    }
}

/// Each trace as given and the slug of its file stem; the built-in workload without traces.
fn trace_slugs(traces: &[String]) -> Vec<(&str, String)> {
    if traces.is_empty() {
        return vec![(SYNTHETIC_TRACE, "synthetic".to_string())];
    }
    traces
        .iter()
        .map(|t| {
            let path = trace_and_cluster(t).0;
            (t.as_str(), slug(&Path::new(path).file_stem().map_or(path.into(), |s| s.to_string_lossy())))
        })
        .collect()
}

/// Keeps what a file name may hold: letters, digits, `-` and `.`; any run of anything else
/// becomes one `_` (`fifo[skip=true]` -> `fifo_skip_true`).
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches(['_', '.']);
    if out.is_empty() { "x".to_string() } else { out.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Seconds;

    fn settings(traces: &[&str], policies: &[&str], grid: &[&str], seeds: &[u64]) -> SweepSettings {
        let strings = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
        SweepSettings {
            traces: strings(traces),
            policies: strings(policies),
            grid: strings(grid),
            seeds: seeds.to_vec(),
            run: serde_json::Map::new(),
        }
    }

    #[test]
    fn runs_are_numbered_trace_then_policy_then_seed() {
        let settings = settings(&["a/philly.csv", "b/trace-dir/"], &["fifo[skip=true]", "sjf"], &[], &[3, 4]);
        let runs = Plan::new(settings, &Registry::builtin()).unwrap().runs;
        assert_eq!(runs.len(), 8);
        assert_eq!(runs[1].dir, "runs/001-philly-fifo_skip_true-s4");
        assert_eq!((runs[2].spec.as_str(), runs[2].seed), ("sjf", 3));
        assert_eq!(runs[7].dir, "runs/007-trace-dir-sjf-s4");
    }

    /// A sweep over traces of different clusters: each trace names its own after `@`.
    #[test]
    fn each_trace_may_name_its_own_cluster() {
        let traces = ["a/philly.csv@60x8:V100", "b/cluster04.csv@clusters/itp.csv", "c/trace-dir"];
        let plan = Plan::new(settings(&traces, &["fifo"], &[], &[0]), &Registry::builtin()).unwrap();
        let specs: Vec<RunSpec> = plan.runs.iter().map(|r| plan.spec(&RunSpec::default(), r, None).unwrap()).collect();
        let got: Vec<(String, Option<String>)> =
            specs.iter().map(|s| (s.trace.as_ref().unwrap().display().to_string(), s.cluster.clone())).collect();
        assert_eq!(
            got,
            [
                ("a/philly.csv".to_string(), Some("60x8:V100".to_string())),
                ("b/cluster04.csv".to_string(), Some("clusters/itp.csv".to_string())),
                ("c/trace-dir".to_string(), None),
            ]
        );
        let dirs: Vec<&str> = plan.runs.iter().map(|r| r.dir.as_str()).collect();
        assert_eq!(dirs, ["runs/000-philly-fifo-s0", "runs/001-cluster04-fifo-s0", "runs/002-trace-dir-fifo-s0"]);
        let both = RunSpec { cluster: Some("4x8".into()), ..RunSpec::default() };
        let e = plan.spec(&both, &plan.runs[0], None).unwrap_err();
        assert!(e.contains("its own cluster (after `@`) and --cluster"), "{e}");
        assert_eq!(plan.spec(&both, &plan.runs[2], None).unwrap().cluster.as_deref(), Some("4x8"));
    }

    #[test]
    fn a_small_grid_plans_these_run_specs_in_this_order() {
        let settings = settings(&[], &["fifo", "sjf"], &["placement=pack|spread", "checkpoint_s=60|120"], &[0, 1]);
        let plan = Plan::new(settings, &Registry::builtin()).unwrap();
        let base = RunSpec { jobs: 50, ..RunSpec::default() };
        let folder = Path::new("out");
        let specs: Vec<RunSpec> = plan.runs.iter().map(|r| plan.spec(&base, r, Some(folder)).unwrap()).collect();
        let mut expected = Vec::new();
        for policy in ["fifo[placement=pack]", "fifo[placement=spread]", "sjf[placement=pack]", "sjf[placement=spread]"]
        {
            for checkpoint_s in ["60", "120"] {
                for seed in [0, 1] {
                    expected.push((policy, checkpoint_s, seed));
                }
            }
        }
        assert_eq!(specs.len(), expected.len());
        for (i, (spec, (policy, checkpoint_s, seed))) in specs.iter().zip(expected).enumerate() {
            let dir = format!("runs/{i:03}-synthetic-{}_checkpoint_s_{checkpoint_s}-s{seed}", slug(policy));
            let want = RunSpec {
                policy: policy.parse().unwrap(),
                checkpoint_s: checkpoint_s.parse::<Seconds>().unwrap(),
                seed,
                out: Some(folder.join(&dir)),
                ..base.clone()
            };
            assert_eq!(*spec, want, "run {i}");
            assert_eq!(plan.runs[i].dir, dir);
        }
    }

    #[test]
    fn a_plan_past_the_limit_or_without_seeds_is_refused() {
        let many: Vec<u64> = (0..MAX_RUNS as u64 / 2 + 1).collect();
        let error = Plan::new(settings(&[], &["fifo", "sjf"], &[], &many), &Registry::builtin()).unwrap_err();
        assert!(error.contains("more than 1000000"), "{error}");
        assert!(Plan::new(settings(&[], &["fifo"], &[], &[]), &Registry::builtin()).is_err());
    }

    #[test]
    fn shared_settings_leave_out_what_each_run_sets() {
        let fields = shared_settings(&RunSpec::default(), true).unwrap();
        for key in PER_RUN.iter().chain(&["jobs", "load"]) {
            assert!(!fields.contains_key(*key), "{key}");
        }
        assert!(shared_settings(&RunSpec::default(), false).unwrap().contains_key("jobs"));
    }
}
