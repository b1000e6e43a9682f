//! `schedlab regress`: CI regression of scheduling metrics. Runs the fixed sweep a spec file
//! describes (runs in parallel, results in key order), compares every metric and the digest
//! of each run with a committed baseline under the spec's tolerances, prints the diff table,
//! and exits 1 on a regression (2 on bad input). `--bless` writes the baseline instead.
//!
//! A run here is exactly a `schedlab simulate` run: the spec's settings are the fields of the
//! same `RunSpec` that `simulate`'s flags fill (key `jobs = 300` is `--jobs 300`), run by the
//! same runner. So every setting `simulate` has, the spec has, with the same meaning.

use super::{CliResult, emit};
use clap::Args;
use reports::compare::{Better, METRICS};
use reports::regress::{self, Baseline, BaselineRun, Check, MetricRule, RunKey, Tolerance};
use run::RunSpec;
use run::many::Executor;
use serde::Deserialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::Instant;

#[derive(Args)]
pub struct RegressArgs {
    /// The sweep and its tolerances (TOML; see regress/regress.toml and docs/sweeps-and-regression.md).
    #[arg(long)]
    spec: PathBuf,
    /// The committed baseline (JSON) to compare with, or to write with --bless.
    #[arg(long)]
    baseline: PathBuf,
    /// Accept the current numbers: write them as the baseline, print what changed, exit 0.
    #[arg(long)]
    bless: bool,
    /// Print every metric of every run, not only those that moved.
    #[arg(long)]
    all: bool,
}

/// RunSpec fields that the spec's lists give per run (`out` and `decisions`: a regression
/// check writes no run files) rather than as a setting.
const PER_RUN: &[&str] = &["trace", "policy", "seed", "out", "decisions"];
/// The trace name of the built-in synthetic workload.
const BUILTIN: &str = "builtin";
/// The name of the run set the spec's top level describes.
const MAIN: &str = "main";

pub fn run(args: RegressArgs) -> CliResult {
    let runner = super::runner().keeping_traces();
    let spec_text =
        std::fs::read_to_string(&args.spec).map_err(|e| format!("cannot read {}: {e}", args.spec.display()))?;
    let spec = Spec::parse(&spec_text, &args.spec).map_err(|e| format!("spec {}: {e}", args.spec.display()))?;
    let baseline = read_baseline(&args.baseline, args.bless)?;

    let runs = spec.runs().map_err(|e| format!("spec {}: {e}", args.spec.display()))?;
    let started = Instant::now();
    let executor = Executor::new(None)?;
    eprintln!("regress: {} runs on {} threads", runs.len(), executor.threads());
    let done = executor
        .execute(&runner, runs.len(), |i| Ok(runs[i].1.clone()))
        .map_err(|failed| format!("spec {}: run {}: {}", args.spec.display(), runs[failed.index].0, failed.error))?;
    let fresh: Vec<BaselineRun> =
        runs.into_iter().zip(&done).map(|((key, _), done)| BaselineRun::of(key, &done.summary)).collect();
    eprintln!("regress: ran in {:.3} s", started.elapsed().as_secs_f64());
    // Compare what the baseline file will hold: written and read back, floats included.
    let text = Baseline::new(fresh).to_json();
    let now = Baseline::parse(&text).map_err(|e| format!("the fresh baseline does not read back: {e}"))?;

    let comparison = regress::compare(&baseline, &now, &spec.check);
    emit(comparison.table(args.all))?;
    if args.bless {
        if let Some(dir) = args.baseline.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        }
        std::fs::write(&args.baseline, &text).map_err(|e| format!("cannot write {}: {e}", args.baseline.display()))?;
        let changed = comparison.changed_runs().len();
        emit(format_args!(
            "blessed: wrote {} ({} runs; {changed} new, changed or removed)\n",
            args.baseline.display(),
            now.runs.len()
        ))?;
        return Ok(());
    }
    if comparison.failed() {
        emit(format_args!(
            "FAILED: the sweep differs from {}. If the new numbers are intended, accept them with\n  \
             schedlab regress --spec {} --baseline {} --bless\nand commit the baseline.\n",
            args.baseline.display(),
            args.spec.display(),
            args.baseline.display()
        ))?;
        use std::io::Write;
        let _ = std::io::stdout().flush();
        std::process::exit(1);
    }
    emit("PASSED\n")
}

/// The baseline file; none yet (or unreadable) is fine with --bless, which writes it.
fn read_baseline(path: &Path, bless: bool) -> Result<Baseline, String> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && bless => return Ok(Baseline::new(Vec::new())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(format!("baseline {} does not exist; write it with --bless", path.display()));
        }
        Err(e) => return Err(format!("cannot read {}: {e}", path.display())),
    };
    match Baseline::parse(&text) {
        Ok(baseline) => Ok(baseline),
        Err(e) if bless => {
            eprintln!("note: baseline {}: {e}; --bless replaces it", path.display());
            Ok(Baseline::new(Vec::new()))
        }
        Err(e) => Err(format!("baseline {}: {e}", path.display())),
    }
}

/// A policy entry: the name that keys the baseline and the spec that builds the policy.
#[derive(Debug, Clone)]
struct PolicyEntry {
    name: String,
    spec: String,
}

/// One set of runs: traces x policies x seeds under one set of settings.
#[derive(Debug, Clone)]
struct Sweep {
    name: String,
    traces: Vec<String>,
    policies: Vec<PolicyEntry>,
    seeds: Vec<u64>,
    /// RunSpec fields (`simulate` flags without their dashes, `heartbeat_s`) and their TOML
    /// values.
    settings: toml::Table,
}

#[derive(Debug)]
struct Spec {
    sweeps: Vec<Sweep>,
    check: Check,
    /// Where relative paths in the spec start: the spec file's folder.
    dir: PathBuf,
}

/// The keys of a run set that are not settings.
#[derive(Default, Clone)]
struct Lists {
    traces: Option<Vec<String>>,
    policies: Option<Vec<PolicyEntry>>,
    seeds: Option<Vec<u64>>,
}

impl Spec {
    fn parse(text: &str, path: &Path) -> Result<Spec, String> {
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
            sweeps.push(lists.clone().into_sweep(MAIN.to_string(), shared.clone())?);
        } else if sweep_tables.is_empty() {
            return Err(
                "`policies`: the spec runs nothing; give policies and seeds at the top level or in a [[sweep]]"
                    .to_string(),
            );
        }
        for (i, table) in sweep_tables {
            let mut own = lists.clone();
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
                        top_level_keys(&settings_valid)
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
            if sweeps.iter().any(|s: &Sweep| s.name == name) {
                let why = if name == MAIN { " (`main` is the top level's run set)" } else { "" };
                return Err(format!("[[sweep]] #{i}: `name` = \"{name}\" is used twice{why}"));
            }
            sweeps.push(own.into_sweep(name.to_string(), settings).map_err(|e| format!("[[sweep]] \"{name}\": {e}"))?);
        }
        let dir = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Ok(Spec { sweeps, check, dir })
    }

    /// Every run with its key, in key order.
    fn runs(&self) -> Result<Vec<(RunKey, RunSpec)>, String> {
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

impl Lists {
    /// Takes `key` if it is one of the lists; `Ok(false)` if it is not.
    fn take(&mut self, key: &str, value: &toml::Value) -> Result<bool, String> {
        match key {
            "traces" => self.traces = Some(strings(key, value)?),
            "seeds" => {
                let items = value.as_array().ok_or_else(|| expected(key, "an array of whole numbers >= 0", value))?;
                let seeds = items
                    .iter()
                    .map(|v| {
                        v.as_integer()
                            .and_then(|i| u64::try_from(i).ok())
                            .ok_or_else(|| expected(key, "an array of whole numbers >= 0", v))
                    })
                    .collect::<Result<Vec<u64>, String>>()?;
                self.seeds = Some(seeds);
            }
            "policies" => {
                let items = value.as_array().ok_or_else(|| expected(key, "an array of policy specs", value))?;
                let policies = items.iter().map(policy_entry).collect::<Result<Vec<_>, String>>()?;
                self.policies = Some(policies);
            }
            _ => return Ok(false),
        }
        Ok(true)
    }

    fn into_sweep(self, name: String, settings: toml::Table) -> Result<Sweep, String> {
        let traces = self.traces.unwrap_or_else(|| vec![BUILTIN.to_string()]);
        let policies = self.policies.unwrap_or_default();
        let seeds = self.seeds.unwrap_or_default();
        for (key, empty) in
            [("traces", traces.is_empty()), ("policies", policies.is_empty()), ("seeds", seeds.is_empty())]
        {
            if empty {
                return Err(format!("`{key}` is missing or empty"));
            }
        }
        unique("traces", traces.iter())?;
        unique("policies", policies.iter().map(|p| &p.name))?;
        unique("seeds", seeds.iter())?;
        for p in &policies {
            if p.name.contains('/') {
                return Err(format!("`policies`: name `{}` must not contain `/`", p.name));
            }
            let spec = p.spec.parse().map_err(|e| format!("`policies`: {e}"))?;
            super::registry().check(&spec).map_err(|e| format!("`policies`: {e}"))?;
        }
        Ok(Sweep { name, traces, policies, seeds, settings })
    }
}

/// A policy entry: `"sjf[duration=estimate]"`, or `{ name = "ours", spec = "..." }` to key the
/// baseline by a name of your own.
fn policy_entry(value: &toml::Value) -> Result<PolicyEntry, String> {
    if let Some(spec) = value.as_str() {
        return Ok(PolicyEntry { name: spec.to_string(), spec: spec.to_string() });
    }
    let shape = "a policy spec string or { name = \"...\", spec = \"...\" }";
    let table = value.as_table().ok_or_else(|| expected("policies", shape, value))?;
    let mut entry = PolicyEntry { name: String::new(), spec: String::new() };
    for (key, v) in table {
        let text = v.as_str().ok_or_else(|| expected(&format!("policies: {key}"), "a string", v))?.to_string();
        match key.as_str() {
            "name" => entry.name = text,
            "spec" => entry.spec = text,
            _ => return Err(unknown_key(key, "a policy entry", &["name".into(), "spec".into()])),
        }
    }
    if entry.name.is_empty() || entry.spec.is_empty() {
        return Err(format!("`policies`: {value} needs both `name` and `spec`"));
    }
    Ok(entry)
}

fn strings(key: &str, value: &toml::Value) -> Result<Vec<String>, String> {
    let items = value.as_array().ok_or_else(|| expected(key, "an array of strings", value))?;
    items
        .iter()
        .map(|v| v.as_str().map(str::to_string).ok_or_else(|| expected(key, "an array of strings", v)))
        .collect()
}

fn unique<T: Ord + std::fmt::Display>(key: &str, items: impl Iterator<Item = T>) -> Result<(), String> {
    let mut seen = BTreeSet::new();
    for item in items {
        if let Some(twice) = seen.replace(item) {
            return Err(format!("`{key}`: `{twice}` is given twice"));
        }
    }
    Ok(())
}

fn expected(key: &str, what: &str, got: &toml::Value) -> String {
    format!("`{key}`: expected {what}, got {got}")
}

fn unknown_key(key: &str, place: &str, valid: &[String]) -> String {
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

/// `[tolerance]`: `default = { relative = R, absolute = A }` and per metric the same, plus
/// `better = "lower" | "higher" | "either"`.
fn parse_tolerance(value: &toml::Value) -> Result<Check, String> {
    let table = value.as_table().ok_or_else(|| expected("tolerance", "a table ([tolerance])", value))?;
    let mut check = Check::default();
    let metrics: BTreeSet<&str> = METRICS.iter().filter(|(_, b)| *b != Better::Identity).map(|(m, _)| *m).collect();
    for (metric, rule) in table {
        let place = format!("tolerance.{metric}");
        if metric != "default" && !metrics.contains(metric.as_str()) {
            let valid: Vec<String> =
                std::iter::once("default").chain(metrics.iter().copied()).map(String::from).collect();
            return Err(format!("unknown metric `{metric}` in [tolerance]; valid keys: {}", valid.join(", ")));
        }
        let rule_table = rule
            .as_table()
            .ok_or_else(|| expected(&place, "a table such as { relative = 0.02 } or { absolute = 1e-9 }", rule))?;
        let mut parsed = MetricRule::default();
        for (key, v) in rule_table {
            let number = || {
                v.as_float()
                    .or_else(|| v.as_integer().map(|i| i as f64))
                    .filter(|x| x.is_finite() && *x >= 0.0)
                    .ok_or_else(|| expected(&format!("{place}.{key}"), "a number >= 0", v))
            };
            match key.as_str() {
                "relative" => parsed.relative = Some(number()?),
                "absolute" => parsed.absolute = Some(number()?),
                "better" if metric != "default" => {
                    let text = v.as_str().ok_or_else(|| expected(&format!("{place}.better"), "a string", v))?;
                    let better: Better = text.parse().map_err(|e| format!("`{place}.better`: {e}"))?;
                    parsed.better = Some(better);
                }
                _ => {
                    let mut valid = vec!["relative".to_string(), "absolute".to_string()];
                    if metric != "default" {
                        valid.push("better".into());
                    }
                    return Err(unknown_key(key, &format!("[tolerance] {metric}"), &valid));
                }
            }
        }
        if metric == "default" {
            check.default =
                Tolerance { relative: parsed.relative.unwrap_or(0.0), absolute: parsed.absolute.unwrap_or(0.0) };
        } else {
            check.metrics.insert(metric.clone(), parsed);
        }
    }
    Ok(check)
}
