//! The settings a state directory keeps for its life (cluster, policy, heartbeats, retries,
//! ...): what `live serve` was given, and the check that a restart gives none that differs.
//! A restart may leave any of them out; one given with another value than the directory was
//! created with is refused, naming the setting and both values (changing them would make the
//! journal replay to other decisions).

use crate::driver::DriverConfig;
use std::path::Path;

/// The settings as given: None where the flag was not given.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Given {
    /// A `--cluster` spec (shorthand, or the text of a cluster.csv).
    pub cluster: Option<String>,
    pub policy: Option<String>,
    pub seed: Option<u64>,
    pub heartbeat_ms: Option<u64>,
    pub missed_beats: Option<u32>,
    pub max_retries: Option<u32>,
    pub default_work_ms: Option<u64>,
    /// The text of a queues.csv.
    pub queues: Option<String>,
    /// The text of a datasets.csv.
    pub datasets: Option<String>,
    pub checkpoint_ms: Option<u64>,
    pub restart_overhead_ms: Option<u64>,
}

fn seconds(ms: u64) -> String {
    traces::format_thousandths(ms)
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

impl Given {
    /// Every setting of `config` given (what a caller with a whole configuration means).
    pub fn all(config: &DriverConfig) -> Given {
        let c = config.clone();
        Given {
            cluster: Some(c.cluster),
            policy: Some(c.policy),
            seed: Some(c.seed),
            heartbeat_ms: Some(c.heartbeat_ms),
            missed_beats: Some(c.missed_beats),
            max_retries: Some(c.max_retries),
            default_work_ms: Some(c.default_work_ms),
            queues: Some(c.queues),
            datasets: Some(c.datasets),
            checkpoint_ms: Some(c.checkpoint_ms),
            restart_overhead_ms: Some(c.restart_overhead_ms),
        }
    }

    /// A new state directory's configuration: what was given, `live serve`'s defaults for the
    /// rest ([`DriverConfig::new`]'s, policy fifo). None without a cluster.
    pub fn new_config(&self) -> Option<DriverConfig> {
        let d = DriverConfig::new(self.cluster.as_deref()?, self.policy.as_deref().unwrap_or("fifo"));
        Some(DriverConfig {
            seed: self.seed.unwrap_or(d.seed),
            heartbeat_ms: self.heartbeat_ms.unwrap_or(d.heartbeat_ms),
            missed_beats: self.missed_beats.unwrap_or(d.missed_beats),
            max_retries: self.max_retries.unwrap_or(d.max_retries),
            default_work_ms: self.default_work_ms.unwrap_or(d.default_work_ms),
            queues: self.queues.clone().unwrap_or_default(),
            datasets: self.datasets.clone().unwrap_or_default(),
            checkpoint_ms: self.checkpoint_ms.unwrap_or(d.checkpoint_ms),
            restart_overhead_ms: self.restart_overhead_ms.unwrap_or(d.restart_overhead_ms),
            ..d
        })
    }

    /// Each setting given with another value than `stored`'s: (flag, stored, given).
    /// The policy is compared as the policy `registry` builds from each spelling (its full
    /// name, defaults included), so `fifo[skip=false]` is `fifo`.
    pub fn changes(&self, stored: &DriverConfig, registry: &policies::Registry) -> Vec<(&'static str, String, String)> {
        let mut out = Vec::new();
        if let Some(given) = &self.policy
            && !same_policy(registry, given, &stored.policy)
        {
            out.push(("--policy", stored.policy.clone(), given.clone()));
        }
        let mut text = |flag: &'static str, given: &Option<String>, stored: &str, file: &str| {
            if let Some(g) = given
                && g.trim() != stored.trim()
            {
                out.push((flag, value(stored, file), value(g, file)));
            }
        };
        text("--cluster", &self.cluster, &stored.cluster, "cluster.csv");
        text("--queues", &self.queues, &stored.queues, "queues.csv");
        text("--datasets", &self.datasets, &stored.datasets, "datasets.csv");
        let mut number = |flag: &'static str, given: Option<u64>, stored: u64, show: fn(u64) -> String| {
            if let Some(g) = given
                && g != stored
            {
                out.push((flag, show(stored), show(g)));
            }
        };
        number("--seed", self.seed, stored.seed, |n| n.to_string());
        number("--heartbeat-s", self.heartbeat_ms, stored.heartbeat_ms, seconds);
        number("--missed-beats", self.missed_beats.map(u64::from), stored.missed_beats.into(), |n| n.to_string());
        number("--max-retries", self.max_retries.map(u64::from), stored.max_retries.into(), |n| n.to_string());
        number("--default-work-s", self.default_work_ms, stored.default_work_ms, seconds);
        number("--checkpoint-s", self.checkpoint_ms, stored.checkpoint_ms, seconds);
        number("--restart-overhead-s", self.restart_overhead_ms, stored.restart_overhead_ms, seconds);
        out
    }

    /// Refuses a restart of `dir` (created with `stored`) that gives a setting another value.
    pub fn check_unchanged(
        &self,
        dir: &Path,
        stored: &DriverConfig,
        registry: &policies::Registry,
    ) -> Result<(), String> {
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
fn same_policy(registry: &policies::Registry, a: &str, b: &str) -> bool {
    let name = |spec: &str| {
        let spec: policies::PolicySpec = spec.parse().ok()?;
        Some(registry.build(&spec).ok()?.name().to_string())
    };
    match (name(a), name(b)) {
        (Some(a), Some(b)) => a == b,
        _ => a.trim() == b.trim(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_changed_setting_is_named_with_both_values_and_those_not_given_are_not_checked() {
        let stored = DriverConfig { heartbeat_ms: 200, ..DriverConfig::new("2x1:SIM", "fifo") };
        assert_eq!(Given::default().check_unchanged(Path::new("s"), &stored, &policies::Registry::builtin()), Ok(()));
        assert_eq!(
            Given::all(&stored).check_unchanged(Path::new("s"), &stored, &policies::Registry::builtin()),
            Ok(())
        );
        let given = Given {
            policy: Some("srtf".into()),
            heartbeat_ms: Some(1000),
            missed_beats: Some(3),
            max_retries: Some(5),
            ..Given::default()
        };
        let e = given.check_unchanged(Path::new("s"), &stored, &policies::Registry::builtin()).unwrap_err();
        assert_eq!(
            e,
            "s was created with --policy fifo (this start gives srtf), --heartbeat-s 0.2 (this start gives 1), \
             --max-retries 3 (this start gives 5): a state directory keeps its settings; start it with the same \
             ones (or without them), or use a new --state"
        );
        let csv = Given { cluster: Some("pool,nodes\na,1\nb,2\n".into()), ..Given::default() };
        assert!(
            csv.check_unchanged(Path::new("s"), &stored, &policies::Registry::builtin())
                .unwrap_err()
                .contains("--cluster 2x1:SIM (this start gives a cluster.csv of 3 lines)")
        );
        assert_eq!(Given { cluster: None, ..given }.new_config(), None);
    }

    /// The policy is compared as the policy it builds: `fifo[skip=false]` is `fifo` spelt
    /// with a default, not another policy.
    #[test]
    fn a_policy_spelt_with_its_defaults_is_the_same_policy() {
        let stored = DriverConfig::new("2x1:SIM", "fifo");
        let given = |policy: &str| Given { policy: Some(policy.into()), ..Given::default() };
        assert_eq!(
            given("fifo[skip=false]").check_unchanged(Path::new("s"), &stored, &policies::Registry::builtin()),
            Ok(())
        );
        assert_eq!(
            given(" fifo[ placement=pack ]").check_unchanged(Path::new("s"), &stored, &policies::Registry::builtin()),
            Ok(())
        );
        let e = given("fifo[skip=true]")
            .check_unchanged(Path::new("s"), &stored, &policies::Registry::builtin())
            .unwrap_err();
        assert!(e.contains("--policy fifo (this start gives fifo[skip=true])"), "{e}");
        assert!(given("nonesuch").check_unchanged(Path::new("s"), &stored, &policies::Registry::builtin()).is_err());
    }
}
