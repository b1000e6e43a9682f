//! A run set's lists (traces, policies, seeds) and the run set they make.

use super::{BUILTIN, expected, unknown_key};
use policies::Registry;
use std::collections::BTreeSet;

/// A policy entry: the name that keys the baseline and the spec that builds the policy.
#[derive(Debug, Clone)]
pub(super) struct PolicyEntry {
    pub(super) name: String,
    pub(super) spec: String,
}

/// One set of runs: traces x policies x seeds under one set of settings.
#[derive(Debug, Clone)]
pub(super) struct Sweep {
    pub(super) name: String,
    pub(super) traces: Vec<String>,
    pub(super) policies: Vec<PolicyEntry>,
    pub(super) seeds: Vec<u64>,
    /// RunSpec fields (`simulate` flags without their dashes, `heartbeat_s`) and their TOML
    /// values.
    pub(super) settings: toml::Table,
}

/// The keys of a run set that are not settings.
#[derive(Default, Clone)]
pub(super) struct Lists {
    traces: Option<Vec<String>>,
    pub(super) policies: Option<Vec<PolicyEntry>>,
    seeds: Option<Vec<u64>>,
}

impl Lists {
    /// Takes `key` if it is one of the lists; `Ok(false)` if it is not.
    pub(super) fn take(&mut self, key: &str, value: &toml::Value) -> Result<bool, String> {
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

    pub(super) fn into_sweep(self, name: String, settings: toml::Table, registry: &Registry) -> Result<Sweep, String> {
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
            registry.check(&spec).map_err(|e| format!("`policies`: {e}"))?;
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
