//! The settings a state directory keeps for its life ([`LiveConfig`]): what `live serve` was
//! given, and the check that a restart gives none that differs. A restart may leave any of
//! them out; one given with another value than the directory was created with is refused,
//! naming the setting and both values (changing them would make the journal replay to other
//! decisions). The check is a diff of two RunSpecs, field by field, so a setting added to
//! RunSpec is checked without a line here.

use crate::config::LiveConfig;
use run::RunSpec;
use std::collections::BTreeSet;
use std::path::Path;

/// The settings as given to one start.
#[derive(Debug, Clone, PartialEq)]
pub struct Given {
    /// The run settings: those given, `simulate`'s defaults for the rest. Its cluster, queues
    /// and datasets are unset (their texts are below).
    pub run: RunSpec,
    /// The RunSpec fields given (snake_case field names): only these are compared on restart.
    pub typed: BTreeSet<String>,
    /// `--cluster`: a shorthand, or the text of a cluster.csv.
    pub cluster: Option<String>,
    /// `--queues`: the text of a queues.csv.
    pub queues: Option<String>,
    /// `--datasets`: the text of a datasets.csv.
    pub datasets: Option<String>,
    /// `--default-work-s`, in milliseconds.
    pub default_work_ms: Option<u64>,
}

impl Default for Given {
    /// Nothing given.
    fn default() -> Given {
        Given {
            run: RunSpec::default(),
            typed: BTreeSet::new(),
            cluster: None,
            queues: None,
            datasets: None,
            default_work_ms: None,
        }
    }
}

/// A setting for a message: a one-line value as is, a file's text by what it is.
fn value(text: &str, file: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        "none".to_string()
    } else if text.contains('\n') || text.len() > 80 {
        format!("a {file} of {} lines", text.lines().count())
    } else {
        text.to_string()
    }
}

/// A RunSpec field's value as its flag takes it.
fn shown(spec: &RunSpec, field: &str) -> String {
    let value = serde_json::to_value(spec).ok().and_then(|v| v.get(field).cloned()).unwrap_or_default();
    match value {
        serde_json::Value::String(s) => s,
        serde_json::Value::Null => "none".into(),
        serde_json::Value::Object(per_queue) => {
            let pairs: Vec<String> = per_queue.iter().map(|(q, s)| format!("{q}={s}")).collect();
            if pairs.is_empty() { "none".into() } else { pairs.join(",") }
        }
        other => other.to_string(),
    }
}

impl Given {
    /// Every setting of `config` given (what a caller with a whole configuration means).
    pub fn all(config: &LiveConfig) -> Given {
        let fields = serde_json::to_value(&config.run).ok().and_then(|v| v.as_object().cloned()).unwrap_or_default();
        Given {
            run: config.run.clone(),
            typed: fields.keys().cloned().collect(),
            cluster: Some(config.cluster.clone()),
            queues: Some(config.queues.clone()),
            datasets: Some(config.datasets.clone()),
            default_work_ms: Some(config.default_work_ms),
        }
    }

    /// A new state directory's configuration: what was given, the defaults for the rest;
    /// checked as the driver will run it. None without a cluster.
    pub fn new_config(&self) -> Result<Option<LiveConfig>, String> {
        let Some(cluster) = &self.cluster else { return Ok(None) };
        let config = LiveConfig {
            run: self.run.clone(),
            default_work_ms: self.default_work_ms.unwrap_or(crate::config::DEFAULT_WORK_MS),
            cluster: cluster.clone(),
            queues: self.queues.clone().unwrap_or_default(),
            datasets: self.datasets.clone().unwrap_or_default(),
        };
        config.setup()?;
        Ok(Some(config))
    }

    /// Each setting given with another value than `stored`'s: (flag, stored, given).
    /// The policy is compared as the policy `registry` builds from each spelling (its full
    /// name, defaults included), so `fifo[skip=false]` is `fifo`.
    pub fn changes(&self, stored: &LiveConfig, registry: &policies::Registry) -> Vec<(String, String, String)> {
        let flag = |field: &str| format!("--{}", field.replace('_', "-"));
        let mut out = Vec::new();
        for field in self.run.differing_fields(&stored.run).into_iter().filter(|f| self.typed.contains(f)) {
            if field == "policy" && same_policy(registry, &self.run.policy, &stored.run.policy) {
                continue;
            }
            out.push((flag(&field), shown(&stored.run, &field), shown(&self.run, &field)));
        }
        let files = [
            ("cluster", &self.cluster, &stored.cluster, "cluster.csv"),
            ("queues", &self.queues, &stored.queues, "queues.csv"),
            ("datasets", &self.datasets, &stored.datasets, "datasets.csv"),
        ];
        for (field, given, stored, file) in files {
            if let Some(g) = given.as_deref().filter(|g| g.trim() != stored.trim()) {
                out.push((flag(field), value(stored, file), value(g, file)));
            }
        }
        if let Some(g) = self.default_work_ms.filter(|&g| g != stored.default_work_ms) {
            let s = traces::format_thousandths;
            out.push(("--default-work-s".into(), s(stored.default_work_ms), s(g)));
        }
        out
    }

    /// Refuses a restart of `dir` (created with `stored`) that gives a setting another value,
    /// or one live mode cannot honour.
    pub fn check_unchanged(
        &self,
        dir: &Path,
        stored: &LiveConfig,
        registry: &policies::Registry,
    ) -> Result<(), String> {
        LiveConfig { run: self.run.clone(), ..stored.clone() }.check()?;
        let changes = self.changes(stored, registry);
        if changes.is_empty() {
            return Ok(());
        }
        let list: Vec<String> =
            changes.iter().map(|(flag, was, now)| format!("{flag} {was} (this start gives {now})")).collect();
        Err(format!(
            "{} was created with {}: a state directory keeps its settings; start it with the same ones (or without them), or use a new --state",
            dir.display(),
            list.join(", ")
        ))
    }
}

/// Whether two policy specs build the same policy (the same full name); a spec that does not
/// build is the same only as the same text.
fn same_policy(registry: &policies::Registry, a: &policies::PolicySpec, b: &policies::PolicySpec) -> bool {
    let name = |spec: &policies::PolicySpec| Some(registry.build(spec).ok()?.name().to_string());
    match (name(a), name(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stored() -> LiveConfig {
        let mut config = LiveConfig::new("2x1:SIM", "fifo").unwrap();
        config.run.heartbeat_s = run::Seconds(sim::SimDuration(200));
        config
    }

    /// `given` with the flags `flags` typed, as `live serve` reads them.
    fn typed(flags: &[&str]) -> Given {
        let run = RunSpec::from_flags(flags.iter().copied()).unwrap();
        let typed = flags.iter().filter_map(|f| f.strip_prefix("--")).map(|f| f.replace('-', "_")).collect();
        Given { run, typed, ..Given::default() }
    }

    fn check(given: &Given) -> Result<(), String> {
        given.check_unchanged(Path::new("s"), &stored(), &policies::Registry::builtin())
    }

    #[test]
    fn every_changed_setting_is_named_with_both_values_and_those_not_given_are_not_checked() {
        assert_eq!(check(&Given::default()), Ok(()));
        assert_eq!(check(&Given::all(&stored())), Ok(()));
        let given = typed(&["--policy", "srtf", "--heartbeat-s", "1", "--missed-beats", "3", "--max-retries", "5"]);
        assert_eq!(
            check(&given).unwrap_err(),
            "s was created with --policy fifo (this start gives srtf), --heartbeat-s 0.2 (this start gives 1), \
             --max-retries 3 (this start gives 5): a state directory keeps its settings; start it with the same \
             ones (or without them), or use a new --state"
        );
        let csv = Given { cluster: Some("pool,nodes\na,1\nb,2\n".into()), ..Given::default() };
        assert!(check(&csv).unwrap_err().contains("--cluster 2x1:SIM (this start gives a cluster.csv of 3 lines)"));
        assert_eq!(Given { cluster: None, ..given }.new_config(), Ok(None));
    }

    /// Settings live mode took from `simulate` only now (consolidation, spares, passes, ...)
    /// are compared like the rest: the diff is over every RunSpec field.
    #[test]
    fn a_setting_live_mode_took_from_simulate_is_kept_too() {
        let given = typed(&["--whole-nodes", "8", "--queue-checkpoint-s", "prod=60", "--spare-nodes", "0"]);
        let e = check(&given).unwrap_err();
        assert!(
            e.contains("--whole-nodes none (this start gives 8), --queue-checkpoint-s none (this start gives prod=60)"),
            "{e}"
        );
        assert!(!e.contains("--spare-nodes"), "{e}");
    }

    /// What a wall clock cannot honour is refused by name at a restart too.
    #[test]
    fn a_setting_live_mode_cannot_honour_is_refused_by_name() {
        let e = check(&typed(&["--gpu-detect-s", "5", "--failures", "weibull:node_mtbf_h=100"])).unwrap_err();
        assert!(e.starts_with("live serve cannot honour --failures: "), "{e}");
        assert!(
            e.contains("; --gpu-detect-s: a live session learns of a GPU failure when its agent reports it"),
            "{e}"
        );
    }

    /// The policy is compared as the policy it builds: `fifo[skip=false]` is `fifo` spelt
    /// with a default, not another policy.
    #[test]
    fn a_policy_spelt_with_its_defaults_is_the_same_policy() {
        assert_eq!(check(&typed(&["--policy", "fifo[skip=false]"])), Ok(()));
        assert_eq!(check(&typed(&["--policy", " fifo[ placement=pack ]"])), Ok(()));
        let e = check(&typed(&["--policy", "fifo[skip=true]"])).unwrap_err();
        assert!(e.contains("--policy fifo (this start gives fifo[skip=true])"), "{e}");
        assert!(check(&typed(&["--policy", "nonesuch"])).is_err());
    }
}
