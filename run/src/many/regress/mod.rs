//! regress.toml, the spec of `schedlab regress`: run sets (the top level's, `main`, and each
//! `[[sweep]]`) of traces x policies x seeds under shared settings, planned into RunSpecs keyed
//! for the baseline, and the tolerances (reports::regress::Check) they are checked with.
//!
//! A run here is exactly a `schedlab simulate` run: the spec's settings are the fields of the
//! same `RunSpec` that `simulate`'s flags fill (key `jobs = 300` is `--jobs 300`). So every
//! setting `simulate` has, the spec has, with the same meaning.

mod lists;
mod tolerance;

use crate::RunSpec;
use lists::{Lists, Sweep};
use policies::Registry;
use reports::regress::{Check, RunKey};
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use tolerance::parse_tolerance;

/// RunSpec fields that the spec's lists give per run (`out` and `decisions`: a regression
/// check writes no run files) rather than as a setting.
const PER_RUN: &[&str] = &["trace", "policy", "seed", "out", "decisions"];
/// The trace name of the built-in synthetic workload.
const BUILTIN: &str = "builtin";
/// The name of the run set the spec's top level describes.
const MAIN: &str = "main";

/// A regression spec (regress.toml): run sets of traces x policies x seeds under shared
/// settings, and the tolerances their metrics are checked with.
#[derive(Debug)]
pub struct RegressSpec {
    sweeps: Vec<Sweep>,
    /// How each metric is compared with the baseline.
    pub check: Check,
    /// Where relative paths in the spec start: the spec file's folder.
    dir: PathBuf,
}

impl RegressSpec {
    /// Reads the spec `text` of the file at `path` (relative paths in it start at its folder);
    /// its policies are checked against `registry`.
    pub fn parse(text: &str, path: &Path, registry: &Registry) -> Result<RegressSpec, String> {
        let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
        let settings_valid = setting_keys();
        let mut shared = toml::Table::new();
        let mut lists = Lists::default();
        let mut check = Check::default();
        let mut strict = false;
        let mut sweep_tables = Vec::new();
        for (key, value) in &table {
            match key.as_str() {
                "tolerance" => check = parse_tolerance(value)?,
                "strict" => strict = value.as_bool().ok_or_else(|| expected("strict", "true or false", value))?,
                "sweep" => {
                    let array = value.as_array().ok_or_else(|| expected("sweep", "[[sweep]] tables", value))?;
                    for (i, item) in array.iter().enumerate() {
                        let item = item.as_table().ok_or_else(|| expected("sweep", "[[sweep]] tables", item))?;
                        sweep_tables.push((i + 1, item));
                    }
                }
                _ if lists.take(key, value)? => {}
                _ if settings_valid.contains(key) => {
                    check_setting(key, value)?;
                    shared.insert(key.clone(), value.clone());
                }
                _ => return Err(unknown_key(key, "the top level", &top_level_keys(&settings_valid))),
            }
        }
        check.strict = strict;
        let mut sweeps = Vec::new();
        if lists.policies.is_some() {
            sweeps.push(lists.clone().into_sweep(MAIN.to_string(), shared.clone(), registry)?);
        } else if sweep_tables.is_empty() {
            return Err(
                "`policies`: the spec runs nothing; give policies and seeds at the top level or in a [[sweep]]"
                    .to_string(),
            );
        }
        for (i, table) in sweep_tables {
            let (name, own, settings) = read_sweep_table(i, table, &lists, &shared, &settings_valid)?;
            if sweeps.iter().any(|s: &Sweep| s.name == name) {
                let why = if name == MAIN { " (`main` is the top level's run set)" } else { "" };
                return Err(format!("[[sweep]] #{i}: `name` = \"{name}\" is used twice{why}"));
            }
            sweeps.push(
                own.into_sweep(name.to_string(), settings, registry)
                    .map_err(|e| format!("[[sweep]] \"{name}\": {e}"))?,
            );
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(RegressSpec { sweeps, check, dir })
    }

    /// Every run with its key, in key order.
    pub fn runs(&self) -> Result<Vec<(RunKey, RunSpec)>, String> {
        let mut runs = Vec::new();
        for sweep in &self.sweeps {
            let shared = read_settings(&sweep.settings)?.relative_to(&self.dir);
            for trace in &sweep.traces {
                for policy in &sweep.policies {
                    for &seed in &sweep.seeds {
                        let key = RunKey {
                            sweep: sweep.name.clone(),
                            trace: trace.clone(),
                            policy: policy.name.clone(),
                            seed,
                        };
                        let run = RunSpec {
                            trace: (trace != BUILTIN).then(|| self.dir.join(trace)),
                            policy: policy.spec.parse().map_err(|e| format!("run {key}: {e}"))?,
                            seed,
                            ..shared.clone()
                        };
                        runs.push((key, run));
                    }
                }
            }
        }
        runs.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(runs)
    }
}

/// The `i`-th `[[sweep]]`: its name, and its lists and settings over the top level's.
fn read_sweep_table<'a>(
    i: usize,
    table: &'a toml::Table,
    top: &Lists,
    shared: &toml::Table,
    settings_valid: &BTreeSet<String>,
) -> Result<(&'a str, Lists, toml::Table), String> {
    let mut own = top.clone();
    let mut settings = shared.clone();
    let mut name = None;
    for (key, value) in table {
        if key == "name" {
            name = Some(value.as_str().ok_or_else(|| expected("[[sweep]] name", "a string", value))?);
        } else if own.take(key, value)? {
        } else if settings_valid.contains(key) {
            check_setting(key, value).map_err(|e| format!("[[sweep]] #{i}: {e}"))?;
            settings.insert(key.clone(), value.clone());
        } else {
            let mut valid = vec!["name".to_string()];
            valid.extend(
                top_level_keys(settings_valid)
                    .into_iter()
                    .filter(|k| !["tolerance", "strict", "sweep"].contains(&k.as_str())),
            );
            return Err(unknown_key(key, &format!("[[sweep]] #{i}"), &valid));
        }
    }
    let name = name.ok_or_else(|| format!("[[sweep]] #{i}: `name` is missing (it keys the baseline)"))?;
    if name.is_empty() || name.contains('/') {
        return Err(format!("[[sweep]] #{i}: `name` = \"{name}\": must be non-empty and without `/`"));
    }
    Ok((name, own, settings))
}

pub(super) fn expected(key: &str, what: &str, got: &toml::Value) -> String {
    format!("`{key}`: expected {what}, got {got}")
}

pub(super) fn unknown_key(key: &str, place: &str, valid: &[String]) -> String {
    format!("unknown key `{key}` in {place}; valid keys: {}", valid.join(", "))
}

fn top_level_keys(settings: &BTreeSet<String>) -> Vec<String> {
    let mut keys: Vec<String> =
        ["traces", "policies", "seeds", "tolerance", "strict", "sweep"].iter().map(|k| k.to_string()).collect();
    keys.extend(settings.iter().cloned());
    keys
}

/// The settings a spec may give: every RunSpec field but the per-run ones.
fn setting_keys() -> BTreeSet<String> {
    match serde_json::to_value(RunSpec::default()) {
        Ok(serde_json::Value::Object(fields)) => {
            fields.keys().filter(|k| !PER_RUN.contains(&k.as_str())).cloned().collect()
        }
        _ => unreachable!("a RunSpec serializes as a map"),
    }
}

/// The RunSpec the settings describe (per-run fields at their defaults).
fn read_settings(settings: &toml::Table) -> Result<RunSpec, String> {
    RunSpec::deserialize(toml::Value::Table(settings.clone())).map_err(|e| e.to_string())
}

/// Checks that one setting's value reads as its RunSpec field, so the error names the key.
fn check_setting(key: &str, value: &toml::Value) -> Result<(), String> {
    let one = toml::Table::from_iter([(key.to_string(), value.clone())]);
    let spec = read_settings(&one).map_err(|e| {
        // toml's message ends with a line naming the key again: the first line says it all.
        format!("`{key}` = {value}: {}", e.lines().next().unwrap_or_default())
    })?;
    spec.controller_config().map(drop).map_err(|e| format!("`{key}` = {value}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: &str = r#"
jobs = 40
cluster = "4x8:V100"
policies = ["sjf", { name = "ours", spec = "fifo[skip=true]" }]
seeds = [2, 1]

[tolerance]
default = { relative = 0.01 }

[[sweep]]
name = "traced"
traces = ["t/jobs.csv"]
policies = ["fifo"]
checkpoint_s = 600
"#;

    #[test]
    fn a_spec_plans_its_run_sets_in_key_order_with_inherited_settings() {
        let spec = RegressSpec::parse(SPEC, Path::new("specs/regress.toml"), &Registry::builtin()).unwrap();
        assert_eq!(spec.check.default.relative, 0.01);
        let runs = spec.runs().unwrap();
        let keys: Vec<String> = runs.iter().map(|(key, _)| key.to_string()).collect();
        let expected = [
            "main/builtin/ours/1",
            "main/builtin/ours/2",
            "main/builtin/sjf/1",
            "main/builtin/sjf/2",
            "traced/t/jobs.csv/fifo/1",
            "traced/t/jobs.csv/fifo/2",
        ];
        assert_eq!(keys, expected);
        let base = RunSpec { jobs: 40, cluster: Some("4x8:V100".into()), ..RunSpec::default() };
        let ours = RunSpec { policy: "fifo[skip=true]".parse().unwrap(), seed: 1, ..base.clone() };
        assert_eq!(runs[0].1, ours);
        let traced = RunSpec {
            trace: Some(Path::new("specs").join("t/jobs.csv")),
            policy: "fifo".parse().unwrap(),
            seed: 2,
            checkpoint_s: "600".parse().unwrap(),
            ..base
        };
        assert_eq!(runs[5].1, traced);
    }

    #[test]
    fn errors_name_the_key_and_the_run_set() {
        let registry = Registry::builtin();
        let error = |text: &str| RegressSpec::parse(text, Path::new("r.toml"), &registry).unwrap_err();
        assert!(
            error("policies = [\"fifo\"]\nseeds = [1]\nnosuch = 1")
                .starts_with("unknown key `nosuch` in the top level")
        );
        let twice = format!("{SPEC}\n[[sweep]]\nname = \"traced\"\npolicies = [\"sjf\"]\n");
        assert_eq!(error(&twice), "[[sweep]] #2: `name` = \"traced\" is used twice");
        assert!(error("policies = [\"nosuch\"]\nseeds = [1]").starts_with("`policies`: "));
    }
}
