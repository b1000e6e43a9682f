//! A Slurm cluster's scheduling settings as the spec of schedlab's `slurm` policy (Slurm
//! 22.05's multifactor priority, main scheduler and backfill): `slurm[key=value,...]`, with
//! only the parameters whose value differs from the policy's default, sorted by key; `slurm`
//! alone when every one is the default.
//!
//! The settings come from slurm.conf's lines (read by [`super::slurm`]) and, where given, from
//! `scontrol show config` output ([`read_scontrol_config`]: `Key = Value` lines, what slurmctld
//! ran with; the only source of `BOOT_TIME`). The config's values are taken over slurm.conf's,
//! and a note names every parameter on which the two disagree. Keys match in any case, as in
//! Slurm.
//!
//! | Slurm | parameter |
//! |---|---|
//! | `SchedulerType` `sched/backfill`, `sched/builtin` | `sched` |
//! | `SchedulerParameters` `batch_sched_delay`, `sched_interval`, `default_queue_depth`, `bf_interval`, `bf_resolution`, `bf_window`, `bf_max_job_test`, `bf_max_job_user`, `bf_max_job_part` | the same names (the rest are named as not modelled) |
//! | `PriorityType` `priority/basic`, `priority/multifactor` | `priority` |
//! | `PriorityWeightAge`, `...Fairshare`, `...JobSize`, `...Partition`, `...QOS` | `weight_age`, `weight_fairshare`, `weight_jobsize`, `weight_partition`, `weight_qos` |
//! | `PriorityMaxAge`, `PriorityDecayHalfLife`, `PriorityCalcPeriod` (Slurm's time format) | `max_age`, `decay_half_life`, `calc_period` (seconds) |
//! | `PriorityFavorSmall` | `favor_small` |
//! | `PriorityFlags` `NO_FAIR_TREE` (or `DEPTH_OBLIVIOUS`) | `fair_tree=false` (other flags are named) |
//! | `BOOT_TIME` (scontrol only) | `started_s` (Unix seconds of the naive time, as sacct's times) |
//! | the partitions' `TRESBillingWeights` weighing `GRES/gpu` alone | `billing=gpu` |
//! | each partition's `PriorityJobFactor` | `partition_factors` |
//! | the QOS list's `Priority` | `qos_priorities` |
//! | the associations' `Share` ([`super::slurm_assoc`]) | `shares` |
//! | the GPU nodes' `CPUs` / `CPUTot`, when all alike | `node_cpus` |
//!
//! Whatever the spec cannot say is named in a note, never dropped silently.

use super::slurm_qos::QosLimits;
use crate::error::TraceError;
use crate::timeparse::parse_datetime_ms;
use std::collections::BTreeMap;

/// The policy's parameters and their defaults (Slurm 22.05's).
const DEFAULTS: [(&str, &str); 31] = [
    ("batch_sched_delay", "3"),
    ("bf_interval", "30"),
    ("bf_max_job_part", "0"),
    ("bf_max_job_test", "500"),
    ("bf_max_job_user", "0"),
    ("bf_resolution", "60"),
    ("bf_window", "1440"),
    ("billing", "cpu"),
    ("calc_period", "300"),
    ("decay_half_life", "604800"),
    ("default_queue_depth", "100"),
    ("fair_tree", "true"),
    ("favor_small", "false"),
    ("max_age", "604800"),
    ("node_cpus", "gpus"),
    ("partition_factors", ""),
    ("priority", "basic"),
    ("qos_grp_gpus", ""),
    ("qos_grp_jobs", ""),
    ("qos_max_gpus_per_user", ""),
    ("qos_max_jobs_per_user", ""),
    ("qos_priorities", ""),
    ("sched", "backfill"),
    ("sched_interval", "60"),
    ("shares", ""),
    ("started_s", "first"),
    ("weight_age", "0"),
    ("weight_fairshare", "0"),
    ("weight_jobsize", "0"),
    ("weight_partition", "0"),
    ("weight_qos", "0"),
];

/// The `SchedulerParameters` the policy models: Slurm's names are the parameters' names.
const SCHED_PARAMS: [&str; 9] = [
    "batch_sched_delay",
    "sched_interval",
    "default_queue_depth",
    "bf_interval",
    "bf_resolution",
    "bf_window",
    "bf_max_job_test",
    "bf_max_job_user",
    "bf_max_job_part",
];

/// The `PriorityWeight*` settings and their parameters.
const WEIGHTS: [(&str, &str); 5] = [
    ("PriorityWeightAge", "weight_age"),
    ("PriorityWeightFairshare", "weight_fairshare"),
    ("PriorityWeightJobSize", "weight_jobsize"),
    ("PriorityWeightPartition", "weight_partition"),
    ("PriorityWeightQOS", "weight_qos"),
];

/// Settings the policy does not model, with the values that leave scheduling as modelled;
/// another value is named in a note.
const NOT_MODELLED: [(&str, &[&str]); 7] = [
    ("PriorityUsageResetPeriod", &["NONE"]),
    ("FairShareDampeningFactor", &["1"]),
    ("PriorityWeightAssoc", &["0"]),
    ("PriorityWeightTRES", &["", "(null)"]),
    ("PriorityParameters", &["", "(null)"]),
    ("PrioritySiteFactorPlugin", &["", "(null)", "site_factor/none"]),
    ("PreemptType", &["preempt/none"]),
];

/// The characters a name in a list parameter may not hold (the spec's and the lists' syntax).
const SPEC_SYNTAX: &[char] = &['[', ']', '=', ',', ':', '/', ';'];

/// One `Key=Value` setting: a slurm.conf line's, or a `Key = Value` line of `scontrol show
/// config`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Setting {
    pub key: String,
    pub value: String,
    pub file: String,
    pub line: u64,
}

impl Setting {
    fn error(&self, expected: impl Into<String>) -> TraceError {
        TraceError::field(&self.file, self.line, &self.key, expected, &self.value)
    }

    fn is(&self, key: &str) -> bool {
        self.key.eq_ignore_ascii_case(key)
    }
}

/// A partition as the spec needs it.
pub(super) struct PartitionSched<'a> {
    pub name: &'a str,
    /// `PriorityJobFactor`; `None`: Slurm's default 1.
    pub job_factor: Option<u32>,
    /// `TRESBillingWeights` as written.
    pub billing: Option<&'a str>,
    /// The partition has GPU nodes (it became a queue).
    pub has_gpus: bool,
}

/// A node with GPUs, with its CPUs where the file gives them.
pub(super) struct NodeCpus<'a> {
    pub name: &'a str,
    pub gpus: u32,
    pub cpus: Option<u32>,
}

/// What the spec is made from.
pub(super) struct SchedInput<'a> {
    /// slurm.conf's settings, then `scontrol show config`'s (the later wins).
    pub settings: &'a [Setting],
    pub partitions: &'a [PartitionSched<'a>],
    /// The partitions came from `PartitionName` lines (not from the nodes' `Partitions`).
    pub partition_lines: bool,
    pub nodes: &'a [NodeCpus<'a>],
    pub qos: Option<&'a [QosLimits]>,
    /// `account` and `account.user` keys with their raw shares; `None`: no association list.
    pub shares: Option<&'a [(String, u32)]>,
    /// The `scontrol show config` file's name, if one was given.
    pub config: Option<&'a str>,
}

/// Reads `scontrol show config` output: every `Key = Value` line (a slurm.conf's `Key=Value`
/// lines read the same); other lines (its title, `Slurmctld(primary) at ... is UP`, section
/// headings) are skipped. `file` names it in errors.
pub(super) fn read_scontrol_config(text: &str, file: &str) -> Result<Vec<Setting>, TraceError> {
    let mut settings = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else { continue };
        let key = key.trim();
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b"_[]".contains(&b)) {
            continue;
        }
        settings.push(Setting {
            key: key.to_owned(),
            value: value.trim().to_owned(),
            file: file.to_owned(),
            line: index as u64 + 1,
        });
    }
    if settings.is_empty() {
        return Err(TraceError::file(file, "no `Key = Value` lines: expected the output of `scontrol show config`"));
    }
    Ok(settings)
}

/// Seconds of Slurm's time format (`time_str2secs`): `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M` or
/// `D-H:M:S`; `None` for anything else (`INFINITE` included).
pub(super) fn slurm_time_s(text: &str) -> Option<u64> {
    let number = |s: &str| -> Option<u64> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        s.parse().ok()
    };
    let (days, clock) = match text.split_once('-') {
        Some((d, rest)) => (Some(number(d)?), rest),
        None => (None, text),
    };
    let parts: Vec<u64> = clock.split(':').map(number).collect::<Option<_>>()?;
    let (hours, minutes, seconds) = match (days, parts.as_slice()) {
        (Some(_), &[h]) => (h, 0, 0),
        (Some(_), &[h, m]) => (h, m, 0),
        (_, &[h, m, s]) => (h, m, s),
        (None, &[m]) => (0, m, 0),
        (None, &[m, s]) => (0, m, s),
        _ => return None,
    };
    let hours = hours.checked_add(days.unwrap_or(0).checked_mul(24)?)?;
    hours.checked_mul(3600)?.checked_add(minutes.checked_mul(60)?)?.checked_add(seconds)
}

/// The spec and the notes on what it cannot say; a malformed setting is an error naming its
/// file, line and key.
pub(super) fn policy_spec(input: &SchedInput<'_>) -> Result<(String, Vec<String>), TraceError> {
    let mut t = Translation::default();
    for setting in input.settings {
        t.setting(setting)?;
    }
    t.boot_time(input.config);
    t.partitions(input.partitions, input.partition_lines);
    t.node_cpus(input.nodes);
    t.qos(input.qos);
    t.qos_limits(input.qos);
    t.shares(input.shares);
    t.fair_share_accounting();
    Ok((t.spec(), t.notes))
}

/// Where a value came from: file and line.
#[derive(Clone)]
struct Source {
    file: String,
    line: u64,
}

#[derive(Default)]
struct Translation {
    values: BTreeMap<&'static str, (String, Option<Source>)>,
    notes: Vec<String>,
    /// `AccountingStorageEnforce`, as last given.
    enforce: Option<String>,
    /// `BOOT_TIME` was given.
    booted: bool,
}

impl Translation {
    /// The parameter's value: as set, else its default.
    fn get(&self, key: &str) -> &str {
        match self.values.get(key) {
            Some((value, _)) => value,
            None => DEFAULTS.iter().find(|(k, _)| *k == key).map_or("", |(_, v)| v),
        }
    }

    fn set(&mut self, key: &'static str, value: String, from: Option<&Setting>) {
        debug_assert!(DEFAULTS.iter().any(|(k, _)| *k == key), "{key} is not a parameter");
        let source = from.map(|s| Source { file: s.file.clone(), line: s.line });
        if let (Some((old, Some(was))), Some(now)) = (self.values.get(key), &source)
            && *old != value
            && was.file != now.file
        {
            self.notes.push(format!(
                "{key}: {}:{} gives {value}, {}:{} gives {old}; {}'s is taken (what slurmctld ran with)",
                now.file, now.line, was.file, was.line, now.file
            ));
        }
        self.values.insert(key, (value, source));
    }

    fn note(&mut self, note: String) {
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    /// One setting of slurm.conf or scontrol show config.
    fn setting(&mut self, s: &Setting) -> Result<(), TraceError> {
        let value = s.value.as_str();
        let unset = value.is_empty() || value == "(null)";
        if s.is("SchedulerType") {
            match value {
                "sched/backfill" => self.set("sched", "backfill".into(), Some(s)),
                "sched/builtin" => self.set("sched", "builtin".into(), Some(s)),
                other => self.note(format!("SchedulerType={other} is not modelled: sched stays backfill")),
            }
        } else if s.is("SchedulerParameters") {
            self.scheduler_parameters(s, if unset { "" } else { value })?;
        } else if s.is("PriorityType") {
            match value {
                "priority/basic" => self.set("priority", "basic".into(), Some(s)),
                "priority/multifactor" => self.set("priority", "multifactor".into(), Some(s)),
                other => self.note(format!("PriorityType={other} is not modelled: priority stays basic")),
            }
        } else if let Some((_, key)) = WEIGHTS.iter().find(|(k, _)| s.is(k)) {
            let weight: u32 = value.parse().map_err(|_| s.error("a whole number from 0 to 4294967295"))?;
            self.set(key, weight.to_string(), Some(s));
        } else if s.is("PriorityMaxAge") {
            self.minutes("max_age", s, 0)?;
        } else if s.is("PriorityDecayHalfLife") {
            self.minutes("decay_half_life", s, 0)?;
        } else if s.is("PriorityCalcPeriod") {
            self.minutes("calc_period", s, 60)?;
        } else if s.is("PriorityFavorSmall") {
            let favor = match value.to_ascii_lowercase().as_str() {
                "yes" | "true" | "1" => "true",
                "no" | "false" | "0" => "false",
                _ => return Err(s.error("YES or NO")),
            };
            self.set("favor_small", favor.into(), Some(s));
        } else if s.is("PriorityFlags") {
            self.priority_flags(s, if unset { "" } else { value });
        } else if s.is("BOOT_TIME") {
            let ms = match value.split_once('T') {
                Some((date, time)) => parse_datetime_ms(&format!("{date} {time}")).ok(),
                None => None,
            };
            let ms = ms.ok_or_else(|| s.error("a time written YYYY-MM-DDTHH:MM:SS"))?;
            self.set("started_s", (ms / 1000).to_string(), Some(s));
            self.booted = true;
        } else if s.is("SLURM_VERSION") {
            if !value.starts_with("22.05.") {
                self.note(format!("{}:{}: Slurm {value}; the slurm policy models Slurm 22.05", s.file, s.line));
            }
        } else if s.is("AccountingStorageEnforce") {
            self.enforce = Some(value.to_owned());
        } else if s.is("SelectType") {
            if !["select/cons_tres", "select/cons_res"].contains(&value) {
                self.note(format!(
                    "SelectType={value}: not modelled (the policy places GPUs and CPUs as select/cons_tres)"
                ));
            }
        } else if s.is("SelectTypeParameters") {
            if value.to_ascii_uppercase().contains("MEMORY") {
                self.note(format!("SelectTypeParameters={value}: memory is not modelled"));
            }
        } else if s.is("Include") {
            self.note(format!("{}:{}: Include {value} is not read: its settings are not in the spec", s.file, s.line));
        } else if let Some((key, defaults)) = NOT_MODELLED.iter().find(|(k, _)| s.is(k))
            && !defaults.iter().any(|d| d.eq_ignore_ascii_case(value))
        {
            self.note(format!("{key}={value}: not modelled"));
        }
        Ok(())
    }

    /// A duration in Slurm's time format, kept as Slurm keeps it: whole minutes, rounded up.
    fn minutes(&mut self, key: &'static str, s: &Setting, least: u64) -> Result<(), TraceError> {
        let shape = "a time: minutes, M:S, H:M:S, D-H, D-H:M or D-H:M:S";
        let exact = slurm_time_s(&s.value).ok_or_else(|| s.error(shape))?;
        let kept = exact.div_ceil(60).checked_mul(60).ok_or_else(|| s.error(shape))?;
        if kept < least {
            return Err(s.error(format!("a time of at least {} minute", least / 60)));
        }
        if kept != exact {
            self.note(format!(
                "{}={} is {exact} s; Slurm keeps whole minutes, rounded up: {key}={kept}",
                s.key, s.value
            ));
        }
        self.set(key, kept.to_string(), Some(s));
        Ok(())
    }

    /// `SchedulerParameters`: every modelled key takes its value or, absent, its default; the
    /// others are named. A key given twice takes its first value (Slurm finds the first).
    fn scheduler_parameters(&mut self, s: &Setting, list: &str) -> Result<(), TraceError> {
        let mut given: BTreeMap<&'static str, u64> = BTreeMap::new();
        let mut other: Vec<String> = Vec::new();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let (name, value) = match item.split_once('=') {
                Some((n, v)) => (n.trim(), Some(v.trim())),
                None => (item, None),
            };
            match SCHED_PARAMS.iter().find(|p| p.eq_ignore_ascii_case(name)) {
                Some(param) => {
                    let n = value
                        .and_then(|v| v.parse::<u64>().ok())
                        .ok_or_else(|| s.error(format!("{param}=N with N a whole number")))?;
                    given.entry(param).or_insert(n);
                }
                None => other.push(name.to_owned()),
            }
        }
        for param in SCHED_PARAMS {
            let value = match given.get(param) {
                Some(n) => n.to_string(),
                None => DEFAULTS.iter().find(|(k, _)| *k == param).map_or(String::new(), |(_, v)| (*v).to_owned()),
            };
            self.set(param, value, Some(s));
        }
        if !other.is_empty() {
            self.note(format!("SchedulerParameters {}: not modelled", other.join(", ")));
        }
        Ok(())
    }

    /// `PriorityFlags`: `NO_FAIR_TREE` (or `DEPTH_OBLIVIOUS`, which implies it) turns Fair Tree
    /// off; every other flag but `FAIR_TREE` is named.
    fn priority_flags(&mut self, s: &Setting, list: &str) {
        let mut fair_tree = true;
        let mut other: Vec<&str> = Vec::new();
        for flag in list.split(',').map(str::trim).filter(|f| !f.is_empty()) {
            match flag.to_ascii_uppercase().as_str() {
                "NO_FAIR_TREE" => fair_tree = false,
                "FAIR_TREE" => {}
                "DEPTH_OBLIVIOUS" => {
                    fair_tree = false;
                    other.push(flag);
                }
                _ => other.push(flag),
            }
        }
        self.set("fair_tree", fair_tree.to_string(), Some(s));
        if !other.is_empty() {
            self.note(format!("PriorityFlags {}: not modelled", other.join(", ")));
        }
    }

    /// Without `BOOT_TIME`, the note that `started_s` stays at the first submission.
    fn boot_time(&mut self, config: Option<&str>) {
        if self.booted {
            return;
        }
        let why = match config {
            Some(config) => format!("{config} has no BOOT_TIME"),
            None => "slurmctld's start (BOOT_TIME) is in `scontrol show config` output only (--config)".to_owned(),
        };
        self.notes.push(format!("{why}: started_s stays first (the first submission)"));
    }

    /// `billing` from the GPU partitions' `TRESBillingWeights`, `partition_factors` from every
    /// partition's `PriorityJobFactor`.
    fn partitions(&mut self, partitions: &[PartitionSched<'_>], from_lines: bool) {
        let multifactor = self.get("priority") == "multifactor";
        if !from_lines {
            if multifactor && self.get("weight_partition") != "0" {
                self.notes.push(
                    "no PartitionName lines: the partitions' PriorityJobFactor is unknown, partition_factors stays \
                     1 for all (give a slurm.conf, or scontrol show partitions after the nodes)"
                        .to_owned(),
                );
            }
            return;
        }
        // Billing: GPUs when every GPU partition weighs GRES/gpu and nothing else.
        let gpu_parts: Vec<&PartitionSched<'_>> = partitions.iter().filter(|p| p.has_gpus).collect();
        let weights: Vec<Option<&str>> = gpu_parts.iter().map(|p| gpu_billing_weight(p.billing)).collect();
        if !gpu_parts.is_empty() && weights.iter().all(Option::is_some) {
            self.set("billing", "gpu".into(), None);
            let first = weights[0];
            if weights.iter().any(|w| w.and_then(weight_value) != first.and_then(weight_value)) {
                let each: Vec<String> = gpu_parts
                    .iter()
                    .zip(&weights)
                    .map(|(p, w)| format!("{} {}", p.name, w.unwrap_or_default()))
                    .collect();
                self.notes.push(format!(
                    "the partitions weigh a GPU differently ({}): billing=gpu counts every GPU alike",
                    each.join(", ")
                ));
            }
        } else {
            for (p, w) in gpu_parts.iter().zip(&weights) {
                if let (Some(billing), None) = (p.billing, w) {
                    self.notes.push(format!(
                        "partition {}'s TRESBillingWeights={billing}: not expressible, billing=cpu (every partition's \
                         jobs are billed their CPUs)",
                        p.name
                    ));
                } else if w.is_some() {
                    self.notes
                        .push(format!("partition {} bills GPUs, other partitions CPUs: billing=cpu for all", p.name));
                }
            }
        }
        // Partition factors: all partitions (Slurm divides by the largest), when one is not 1.
        if partitions.iter().any(|p| p.job_factor.unwrap_or(1) != 1) {
            let mut factors: Vec<(&str, u32)> = Vec::new();
            for p in partitions {
                if p.name.contains(SPEC_SYNTAX) || p.name.contains(char::is_whitespace) {
                    self.notes.push(format!("partition {}: its name cannot be written in partition_factors", p.name));
                } else {
                    factors.push((p.name, p.job_factor.unwrap_or(1)));
                }
            }
            self.set("partition_factors", name_list(factors), None);
        }
    }

    /// `node_cpus`: the GPU nodes' one CPU count, unless each has as many CPUs as GPUs.
    fn node_cpus(&mut self, nodes: &[NodeCpus<'_>]) {
        if let Some(node) = nodes.iter().find(|n| n.cpus.is_none()) {
            let count = nodes.iter().filter(|n| n.cpus.is_none()).count();
            self.notes.push(format!(
                "{count} GPU node{} ({} first) give{} no CPUs= (CPUTot=): node_cpus stays gpus",
                if count == 1 { "" } else { "s" },
                node.name,
                if count == 1 { "s" } else { "" }
            ));
            return;
        }
        if nodes.iter().all(|n| n.cpus == Some(n.gpus)) {
            return;
        }
        let least = nodes.iter().filter_map(|n| n.cpus).min();
        let most = nodes.iter().filter_map(|n| n.cpus).max();
        match (least, most) {
            (Some(least), Some(most)) if least == most => self.set("node_cpus", least.to_string(), None),
            (Some(least), Some(most)) => self.notes.push(format!(
                "the GPU nodes have {least} to {most} CPUs: node_cpus is one count for all nodes, so it stays gpus"
            )),
            _ => {}
        }
    }

    /// `qos_priorities` when a QOS's priority is not 0 (every QOS then listed); `UsageFactor`
    /// other than 1 named.
    fn qos(&mut self, qos: Option<&[QosLimits]>) {
        let Some(qos) = qos else {
            if self.get("priority") == "multifactor" && self.get("weight_qos") != "0" {
                self.notes.push(
                    "no QOS list (--qos, sacctmgr show qos --parsable2): qos_priorities unknown, every QOS has \
                     priority 0"
                        .to_owned(),
                );
            }
            return;
        };
        for q in qos {
            if let Some(factor) = &q.usage_factor
                && factor.parse::<f64>().ok() != Some(1.0)
            {
                self.notes.push(format!("QOS {}'s UsageFactor {factor}: not modelled (usage counts once)", q.name));
            }
        }
        if qos.iter().all(|q| q.priority == 0) {
            return;
        }
        let mut list: Vec<(&str, u32)> = Vec::new();
        for q in qos {
            if q.name.contains(SPEC_SYNTAX) || q.name.contains(char::is_whitespace) {
                self.notes.push(format!("QOS {}: its name cannot be written in qos_priorities", q.name));
            } else {
                list.push((&q.name, q.priority));
            }
        }
        self.set("qos_priorities", name_list(list), None);
    }

    /// The limits each QOS puts on the jobs that name it, across partitions: Slurm enforces
    /// them only when `AccountingStorageEnforce` has `limits` (or `safe`, `all`).
    fn qos_limits(&mut self, qos: Option<&[QosLimits]>) {
        let Some(qos) = qos else { return };
        type Field = fn(&QosLimits) -> Option<u32>;
        let keys: [(&'static str, Field); 4] = [
            ("qos_grp_gpus", |q| q.max_gpus),
            ("qos_grp_jobs", |q| q.max_running_jobs),
            ("qos_max_gpus_per_user", |q| q.max_gpus_per_user),
            ("qos_max_jobs_per_user", |q| q.max_jobs_per_user),
        ];
        let limited: Vec<&QosLimits> = qos.iter().filter(|q| keys.iter().any(|(_, f)| f(q).is_some())).collect();
        if limited.is_empty() {
            return;
        }
        if !self.enforces_limits() {
            let names: Vec<&str> = limited.iter().map(|q| q.name.as_str()).collect();
            self.notes.push(format!(
                "QOS {}: limits left out, as this Slurm does not enforce them (AccountingStorageEnforce has no `limits`)",
                names.join(", ")
            ));
            return;
        }
        for (key, field) in keys {
            let mut list: Vec<(&str, u32)> = Vec::new();
            for q in &limited {
                match field(q) {
                    Some(_) if q.name.contains(SPEC_SYNTAX) || q.name.contains(char::is_whitespace) => self
                        .notes
                        .push(format!("QOS {}: its name cannot be written in {key}; its limit is left out", q.name)),
                    Some(limit) => list.push((&q.name, limit)),
                    None => {}
                }
            }
            if !list.is_empty() {
                self.set(key, name_list(list), None);
            }
        }
    }

    /// Whether `AccountingStorageEnforce` has `limits` (or `safe`, `all`), which makes Slurm
    /// count usage whole and enforce association and QOS limits.
    fn enforces_limits(&self) -> bool {
        let enforce = self.enforce.as_deref().unwrap_or_default();
        enforce.split(',').any(|e| ["limits", "safe", "all"].iter().any(|l| e.trim().eq_ignore_ascii_case(l)))
    }

    /// `shares`: every association, sorted.
    fn shares(&mut self, shares: Option<&[(String, u32)]>) {
        match shares {
            Some(shares) if !shares.is_empty() => {
                let list: Vec<(&str, u32)> = shares.iter().map(|(key, n)| (key.as_str(), *n)).collect();
                self.set("shares", name_list(list), None);
            }
            _ if self.get("priority") == "multifactor" && self.get("weight_fairshare") != "0" => {
                self.notes.push(
                    "no associations (--assoc, sacctmgr show assoc --parsable2): every account and user has share 1"
                        .to_owned(),
                );
            }
            _ => {}
        }
    }

    /// Fair share weighs usage, which Slurm 22.05 counts whole only with
    /// `AccountingStorageEnforce` including `limits` (or `safe`, `all`).
    fn fair_share_accounting(&mut self) {
        if self.get("priority") != "multifactor" || self.get("weight_fairshare") == "0" {
            return;
        }
        if !self.enforces_limits() {
            let enforce = self.enforce.clone().unwrap_or_default();
            let given = if enforce.is_empty() { "(none)" } else { enforce.as_str() };
            self.notes.push(format!(
                "AccountingStorageEnforce={given} has no `limits`: Slurm 22.05 then counts a job's usage only up \
                 to its last decay pass, the spec all of it (traces/tests/data/slurm/README.md)"
            ));
        }
    }

    /// `slurm[key=value,...]` of the values that differ from their defaults.
    fn spec(&self) -> String {
        let params: Vec<String> = self
            .values
            .iter()
            .filter(|(key, (value, _))| DEFAULTS.iter().all(|(k, d)| k != *key || d != value))
            .map(|(key, (value, _))| format!("{key}={value}"))
            .collect();
        if params.is_empty() { "slurm".to_owned() } else { format!("slurm[{}]", params.join(",")) }
    }
}

/// `name:N/name:N/...`, sorted by name (byte order: `alpha` before `alpha.al`).
fn name_list<N: AsRef<str>>(mut list: Vec<(N, u32)>) -> String {
    list.sort_by(|a, b| a.0.as_ref().cmp(b.0.as_ref()));
    let items: Vec<String> = list.iter().map(|(name, n)| format!("{}:{n}", name.as_ref())).collect();
    items.join("/")
}

/// `GRES/gpu`'s weight when a `TRESBillingWeights` weighs GPUs and nothing else (weights of 0
/// bill nothing and are passed over); `None` otherwise.
fn gpu_billing_weight(weights: Option<&str>) -> Option<&str> {
    let mut gpu = None;
    for item in weights?.split(',').map(str::trim).filter(|i| !i.is_empty()) {
        let (key, weight) = item.split_once('=')?;
        if weight_value(weight)? == 0.0 {
            continue;
        }
        if !key.trim().eq_ignore_ascii_case("gres/gpu") {
            return None;
        }
        gpu = Some(weight.trim());
    }
    gpu
}

/// A billing weight as a number (Slurm's `K`, `M`, `G`, `T` suffixes are for memory, which
/// this does not weigh).
fn weight_value(text: &str) -> Option<f64> {
    text.trim().parse::<f64>().ok().filter(|w| w.is_finite() && *w >= 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(conf: &str) -> Vec<Setting> {
        read_scontrol_config(conf, "slurm.conf").unwrap()
    }

    /// The spec and notes of slurm.conf-style lines alone (no partitions, nodes or lists).
    fn translate(conf: &str) -> Result<(String, Vec<String>), TraceError> {
        let settings = settings(conf);
        let input = SchedInput {
            settings: &settings,
            partitions: &[],
            partition_lines: true,
            nodes: &[],
            qos: None,
            shares: None,
            config: None,
        };
        policy_spec(&input)
    }

    fn spec(conf: &str) -> String {
        translate(conf).unwrap().0
    }

    fn error(conf: &str) -> String {
        translate(conf).unwrap_err().to_string()
    }

    #[test]
    fn defaults_give_the_bare_name() {
        assert_eq!(spec("ClusterName=c\n"), "slurm");
        // Slurm's defaults written out are still defaults.
        assert_eq!(
            spec(
                "SchedulerType=sched/backfill\nPriorityType=priority/basic\nSchedulerParameters=bf_interval=30\n\
                 PriorityMaxAge=7-0\nPriorityDecayHalfLife=7-00:00:00\nPriorityCalcPeriod=5\nPriorityFlags=\n\
                 PriorityFavorSmall=NO\nPriorityWeightAge=0\n"
            ),
            "slurm"
        );
    }

    #[test]
    fn each_key_translates() {
        let cases = [
            ("SchedulerType=sched/builtin", "sched=builtin"),
            ("PriorityType=priority/multifactor", "priority=multifactor"),
            ("PriorityWeightAge=10", "weight_age=10"),
            ("priorityweightfairshare=100000", "weight_fairshare=100000"),
            ("PriorityWeightFairShare = 7", "weight_fairshare=7"),
            ("PriorityWeightJobSize=3", "weight_jobsize=3"),
            ("PriorityWeightPartition=4", "weight_partition=4"),
            ("PriorityWeightQOS=5", "weight_qos=5"),
            ("PriorityMaxAge=0:20:00", "max_age=1200"),
            ("PriorityDecayHalfLife=0", "decay_half_life=0"),
            ("PriorityCalcPeriod=1", "calc_period=60"),
            ("PriorityFavorSmall=YES", "favor_small=true"),
            ("PriorityFlags=NO_FAIR_TREE", "fair_tree=false"),
            ("BOOT_TIME = 2026-12-05T06:49:10", "started_s=1796453350"),
            ("SchedulerParameters=batch_sched_delay=0", "batch_sched_delay=0"),
            ("SchedulerParameters=sched_interval=20", "sched_interval=20"),
            ("SchedulerParameters=default_queue_depth=7", "default_queue_depth=7"),
            ("SchedulerParameters=bf_interval=10", "bf_interval=10"),
            ("SchedulerParameters=bf_resolution=600", "bf_resolution=600"),
            ("SchedulerParameters=bf_window=60", "bf_window=60"),
            ("SchedulerParameters=bf_max_job_test=50", "bf_max_job_test=50"),
            ("SchedulerParameters=bf_max_job_user=2", "bf_max_job_user=2"),
            ("SchedulerParameters=BF_MAX_JOB_PART=3", "bf_max_job_part=3"),
        ];
        for (line, param) in cases {
            assert_eq!(spec(&format!("{line}\n")), format!("slurm[{param}]"), "{line}");
        }
        // Sorted by key, one entry each.
        assert_eq!(
            spec("SchedulerType=sched/builtin\nSchedulerParameters=batch_sched_delay=0,bf_window=5\n"),
            "slurm[batch_sched_delay=0,bf_window=5,sched=builtin]"
        );
    }

    #[test]
    fn slurm_time_formats() {
        let cases = [
            ("20", Some(1200)),
            ("0", Some(0)),
            ("10:30", Some(630)),
            ("0:20:00", Some(1200)),
            ("00:01:00", Some(60)),
            ("7-0", Some(604_800)),
            ("1-2:3", Some(93_780)),
            ("7-00:00:00", Some(604_800)),
            ("2-01:00:05", Some(176_405)),
            ("", None),
            ("INFINITE", None),
            ("1:2:3:4", None),
            ("-5", None),
            ("1-", None),
            ("1h", None),
            ("99999999999999999999", None),
        ];
        for (text, seconds) in cases {
            assert_eq!(slurm_time_s(text), seconds, "{text}");
        }
        // Kept as whole minutes, rounded up, with a note; bare numbers are minutes.
        let (spec, notes) = translate("PriorityMaxAge=10:30\nPriorityDecayHalfLife=1\n").unwrap();
        assert_eq!(spec, "slurm[decay_half_life=60,max_age=660]");
        assert!(
            notes.contains(&"PriorityMaxAge=10:30 is 630 s; Slurm keeps whole minutes, rounded up: max_age=660".into())
        );
        assert!(error("PriorityMaxAge=forever\n").starts_with("slurm.conf:1: field `PriorityMaxAge`: expected a time"));
        assert_eq!(
            error("PriorityCalcPeriod=0\n"),
            "slurm.conf:1: field `PriorityCalcPeriod`: expected a time of at least 1 minute, got \"0\""
        );
    }

    #[test]
    fn priority_flags_no_fair_tree_and_the_others() {
        let (s, notes) = translate("PriorityFlags=NO_FAIR_TREE,MAX_TRES,ACCRUE_ALWAYS\n").unwrap();
        assert_eq!(s, "slurm[fair_tree=false]");
        assert!(notes.contains(&"PriorityFlags MAX_TRES, ACCRUE_ALWAYS: not modelled".into()), "{notes:?}");
        let (s, notes) = translate("PriorityFlags=DEPTH_OBLIVIOUS\n").unwrap();
        assert_eq!(s, "slurm[fair_tree=false]");
        assert!(notes.contains(&"PriorityFlags DEPTH_OBLIVIOUS: not modelled".into()));
        assert_eq!(spec_of_config("PriorityFlags           = \n"), "slurm");
        assert_eq!(spec("PriorityFlags=FAIR_TREE\n"), "slurm");
    }

    fn spec_of_config(text: &str) -> String {
        let settings = read_scontrol_config(text, "config.txt").unwrap();
        let input = SchedInput {
            settings: &settings,
            partitions: &[],
            partition_lines: true,
            nodes: &[],
            qos: None,
            shares: None,
            config: Some("config.txt"),
        };
        policy_spec(&input).unwrap().0
    }

    #[test]
    fn unknown_scheduler_parameters_are_named() {
        let (spec, notes) =
            translate("SchedulerParameters=bf_continue,bf_interval=10,defer,max_rpc_cnt=150,bf_interval=20\n").unwrap();
        // The first of a key given twice, as Slurm's search finds it.
        assert_eq!(spec, "slurm[bf_interval=10]");
        assert!(
            notes.contains(&"SchedulerParameters bf_continue, defer, max_rpc_cnt: not modelled".into()),
            "{notes:?}"
        );
        assert_eq!(
            error("SchedulerParameters=bf_interval\n"),
            "slurm.conf:1: field `SchedulerParameters`: expected bf_interval=N with N a whole number, got \
             \"bf_interval\""
        );
        assert!(error("SchedulerParameters=bf_window=-1\n").contains("expected bf_window=N"));
        assert_eq!(spec_of_config("SchedulerParameters     = (null)\n"), "slurm");
    }

    #[test]
    fn other_settings_are_named_or_refused() {
        let (spec, notes) = translate(
            "SchedulerType=sched/gang\nPriorityType=priority/other\nPreemptType=preempt/qos\n\
             PriorityWeightTRES=CPU=1\nPriorityUsageResetPeriod=NONE\nInclude /etc/slurm/more.conf\n\
             Include=/etc/more.conf\nSelectType=select/linear\nSelectTypeParameters=CR_Core_Memory\n\
             SelectType=select/cons_tres\n",
        )
        .unwrap();
        assert_eq!(spec, "slurm");
        for note in [
            "SchedulerType=sched/gang is not modelled: sched stays backfill",
            "PriorityType=priority/other is not modelled: priority stays basic",
            "PreemptType=preempt/qos: not modelled",
            "PriorityWeightTRES=CPU=1: not modelled",
            "slurm.conf:7: Include /etc/more.conf is not read: its settings are not in the spec",
            "SelectType=select/linear: not modelled (the policy places GPUs and CPUs as select/cons_tres)",
            "SelectTypeParameters=CR_Core_Memory: memory is not modelled",
        ] {
            assert!(notes.contains(&note.to_owned()), "{note} in {notes:?}");
        }
        assert!(!notes.iter().any(|n| n.contains("PriorityUsageResetPeriod") || n.contains("cons_tres:")));
        assert_eq!(notes.len(), 8, "{notes:?}");
        assert_eq!(
            error("PriorityWeightAge=-1\n"),
            "slurm.conf:1: field `PriorityWeightAge`: expected a whole number from 0 to 4294967295, got \"-1\""
        );
        assert!(error("PriorityFavorSmall=maybe\n").contains("expected YES or NO"));
        assert!(error("BOOT_TIME = yesterday\n").contains("expected a time written YYYY-MM-DDTHH:MM:SS"));
        let e = read_scontrol_config("just words\n", "config.txt").unwrap_err().to_string();
        assert_eq!(e, "config.txt: no `Key = Value` lines: expected the output of `scontrol show config`");
    }

    #[test]
    fn the_config_wins_and_disagreements_are_named() {
        let mut all = settings("SchedulerParameters=bf_interval=10\nPriorityCalcPeriod=1\nPriorityWeightAge=5\n");
        all.extend(
            read_scontrol_config(
                "Configuration data as of 2026-12-05T07:15:47\nSchedulerParameters     = (null)\n\
                 PriorityCalcPeriod      = 00:01:00\nSLURM_VERSION           = 23.02.1\n\
                 Slurmctld(primary) at HOST is UP\n",
                "config.txt",
            )
            .unwrap(),
        );
        let input = SchedInput {
            settings: &all,
            partitions: &[],
            partition_lines: true,
            nodes: &[],
            qos: None,
            shares: None,
            config: Some("config.txt"),
        };
        let (spec, notes) = policy_spec(&input).unwrap();
        // bf_interval back to its default (the config's null list), the same calc period.
        assert_eq!(spec, "slurm[calc_period=60,weight_age=5]");
        assert_eq!(
            notes,
            [
                "bf_interval: config.txt:2 gives 30, slurm.conf:1 gives 10; config.txt's is taken (what slurmctld ran \
                 with)",
                "config.txt:4: Slurm 23.02.1; the slurm policy models Slurm 22.05",
                "config.txt has no BOOT_TIME: started_s stays first (the first submission)",
            ]
        );
    }

    fn with_partitions(partitions: &[PartitionSched<'_>], nodes: &[NodeCpus<'_>]) -> (String, Vec<String>) {
        let input = SchedInput {
            settings: &[],
            partitions,
            partition_lines: true,
            nodes,
            qos: None,
            shares: None,
            config: None,
        };
        policy_spec(&input).unwrap()
    }

    fn part<'a>(name: &'a str, job_factor: Option<u32>, billing: Option<&'a str>) -> PartitionSched<'a> {
        PartitionSched { name, job_factor, billing, has_gpus: true }
    }

    #[test]
    fn billing_weighs_gpus_or_cpus() {
        let gpu = Some("GRES/gpu=1.0");
        assert_eq!(
            with_partitions(&[part("a", None, gpu), part("b", None, Some("gres/gpu=1"))], &[]).0,
            "slurm[billing=gpu]"
        );
        // A weight of 0 bills nothing; a CPU-only partition does not count.
        let cpu_part = PartitionSched { has_gpus: false, ..part("cpu", None, None) };
        assert_eq!(
            with_partitions(&[part("a", None, Some("CPU=0,GRES/gpu=2")), cpu_part], &[]).0,
            "slurm[billing=gpu]"
        );
        let (spec, notes) = with_partitions(&[part("a", None, gpu), part("b", None, Some("GRES/gpu=2.5"))], &[]);
        assert_eq!(spec, "slurm[billing=gpu]");
        assert_eq!(
            notes[1],
            "the partitions weigh a GPU differently (a 1.0, b 2.5): billing=gpu counts every GPU alike"
        );
        let (spec, notes) =
            with_partitions(&[part("a", None, Some("CPU=1.0,GRES/gpu=4.0")), part("b", None, gpu)], &[]);
        assert_eq!(spec, "slurm");
        assert_eq!(
            notes[1..],
            [
                "partition a's TRESBillingWeights=CPU=1.0,GRES/gpu=4.0: not expressible, billing=cpu (every \
                 partition's jobs are billed their CPUs)",
                "partition b bills GPUs, other partitions CPUs: billing=cpu for all",
            ]
        );
        assert_eq!(with_partitions(&[part("a", None, Some("GRES/gpu:a100=2"))], &[]).0, "slurm");
        assert_eq!(with_partitions(&[part("a", None, None)], &[]).0, "slurm");
    }

    #[test]
    fn partition_factors_list_every_partition() {
        assert_eq!(with_partitions(&[part("main", Some(1), None), part("b", None, None)], &[]).0, "slurm");
        let (spec, _) = with_partitions(
            &[
                part("urgent", Some(4), None),
                part("main", None, None),
                PartitionSched { has_gpus: false, ..part("cpu", Some(1), None) },
            ],
            &[],
        );
        assert_eq!(spec, "slurm[partition_factors=cpu:1/main:1/urgent:4]");
    }

    #[test]
    fn node_cpus_when_alike() {
        let node = |name, gpus, cpus| NodeCpus { name, gpus, cpus };
        let spec = |nodes: &[NodeCpus<'_>]| with_partitions(&[], nodes);
        assert_eq!(spec(&[node("a", 8, Some(16)), node("b", 4, Some(16))]).0, "slurm[node_cpus=16]");
        assert_eq!(spec(&[node("a", 8, Some(8)), node("b", 4, Some(4))]).0, "slurm");
        let (s, notes) = spec(&[node("a", 8, Some(16)), node("b", 8, Some(32))]);
        assert_eq!(s, "slurm");
        assert!(notes.contains(
            &"the GPU nodes have 16 to 32 CPUs: node_cpus is one count for all nodes, so it stays gpus".into()
        ));
        let (s, notes) = spec(&[node("a", 8, Some(16)), node("b", 8, None), node("c", 8, None)]);
        assert_eq!(s, "slurm");
        assert!(notes.contains(&"2 GPU nodes (b first) give no CPUs= (CPUTot=): node_cpus stays gpus".into()));
    }

    #[test]
    fn qos_priorities_and_shares() {
        let qos = [
            QosLimits { priority: 10, ..QosLimits::new("high") },
            QosLimits { usage_factor: Some("2.000000".into()), ..QosLimits::new("normal") },
        ];
        let shares = [("beta".to_owned(), 30), ("alpha.al".to_owned(), 1), ("alpha".to_owned(), 50)];
        let settings = settings("PriorityType=priority/multifactor\nPriorityWeightFairshare=1\n");
        let input = SchedInput {
            settings: &settings,
            partitions: &[],
            partition_lines: true,
            nodes: &[],
            qos: Some(&qos),
            shares: Some(&shares),
            config: None,
        };
        let (spec, notes) = policy_spec(&input).unwrap();
        assert_eq!(
            spec,
            "slurm[priority=multifactor,qos_priorities=high:10/normal:0,shares=alpha:50/alpha.al:1/beta:30,\
             weight_fairshare=1]"
        );
        assert!(notes.contains(&"QOS normal's UsageFactor 2.000000: not modelled (usage counts once)".into()));
        assert!(notes.iter().any(|n| n.starts_with("AccountingStorageEnforce=(none) has no `limits`")), "{notes:?}");
        // All QOS at priority 0: nothing to say. No association list: a note.
        let zero = [QosLimits::new("normal")];
        let (spec, notes) = policy_spec(&SchedInput { qos: Some(&zero), shares: None, ..input }).unwrap();
        assert_eq!(spec, "slurm[priority=multifactor,weight_fairshare=1]");
        assert!(notes.iter().any(|n| n.starts_with("no associations (--assoc")));
    }

    /// A QOS's limits on the jobs that name it reach the spec when Slurm enforces them, and
    /// are named and left out when it does not.
    #[test]
    fn qos_limits_across_partitions() {
        let qos = [
            QosLimits { max_gpus: Some(16), max_jobs_per_user: Some(2), ..QosLimits::new("small") },
            QosLimits { max_running_jobs: Some(4), max_gpus_per_user: Some(8), ..QosLimits::new("big") },
            QosLimits::new("normal"),
        ];
        let enforced = settings("AccountingStorageEnforce=associations,limits\n");
        let input = SchedInput {
            settings: &enforced,
            partitions: &[],
            partition_lines: true,
            nodes: &[],
            qos: Some(&qos),
            shares: None,
            config: None,
        };
        let (spec, _) = policy_spec(&input).unwrap();
        assert_eq!(
            spec,
            "slurm[qos_grp_gpus=small:16,qos_grp_jobs=big:4,qos_max_gpus_per_user=big:8,qos_max_jobs_per_user=small:2]"
        );
        let none = settings("AccountingStorageEnforce=associations\n");
        let (spec, notes) = policy_spec(&SchedInput { settings: &none, ..input }).unwrap();
        assert_eq!(spec, "slurm");
        assert!(notes.iter().any(|n| n.starts_with("QOS small, big: limits left out")), "{notes:?}");
    }
}
