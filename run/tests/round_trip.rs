//! A RunSpec means the same in every form it takes: command-line flags, TOML (regress.toml),
//! JSON (sweep.json, live.json, Python). Each test sets every field away from its default,
//! and `every_field_is_set` fails when a new field is added without being set here.

use run::{Hours, QueueSeconds, RunSpec, Seconds};
use serde_json::Value;
use sim::SimDuration;
use std::path::PathBuf;

fn pairs(items: &[(&str, u64)]) -> Vec<QueueSeconds> {
    items.iter().map(|&(q, ms)| QueueSeconds { queue: q.into(), seconds: Seconds(SimDuration(ms)) }).collect()
}

/// Every field set, none to its default (queues in name order: they are a map).
fn every_field() -> RunSpec {
    RunSpec {
        trace: Some(PathBuf::from("traces/philly.csv")),
        format: traces::Format::Philly,
        cluster: Some("60x8:V100".into()),
        failures: Some("weibull:node_mtbf_h=50,repair_median_h=2".into()),
        queues: Some(PathBuf::from("q/queues.csv")),
        datasets: Some(PathBuf::from("d/datasets.csv")),
        policy: "sjf[duration=estimate]".parse().unwrap(),
        single_node_up_to: Some(8),
        whole_nodes: Some(8),
        seed: 7,
        jobs: 300,
        load: 1.25,
        heartbeat_s: Seconds(SimDuration(2_500)),
        missed_beats: 5,
        gpu_detect_s: Seconds(SimDuration(1)),
        max_retries: 9,
        checkpoint_s: Seconds::secs(1800),
        checkpoint_cost_s: Seconds(SimDuration(30_250)),
        restart_overhead_s: Seconds::secs(120),
        pass_interval_s: Seconds::secs(3),
        release_latency_s: Seconds(SimDuration(1_500)),
        queue_checkpoint_s: pairs(&[("a", 600_000), ("b", 1_500)]),
        queue_restart_overhead_s: pairs(&[("prod", 60_000)]),
        queue_checkpoint_cost_s: pairs(&[("prod", 5_000)]),
        spare_nodes: 2,
        retire_after: Some(3),
        retire_window_h: "0.5".parse::<Hours>().unwrap(),
        check_invariants: true,
        series_bucket_s: Some(60),
        horizon_days: 30,
        set_aside_after: 1_000,
        out: Some(PathBuf::from("out/run")),
        decisions: true,
    }
}

fn fields(spec: &RunSpec) -> serde_json::Map<String, Value> {
    match serde_json::to_value(spec).unwrap() {
        Value::Object(map) => map,
        other => panic!("not a map: {other}"),
    }
}

#[test]
fn every_field_is_set() {
    let (set, default) = (fields(&every_field()), fields(&RunSpec::default()));
    assert_eq!(set.keys().collect::<Vec<_>>(), default.keys().collect::<Vec<_>>());
    for (key, value) in &set {
        assert_ne!(Some(value), default.get(key), "`{key}` is left at its default in every_field()");
    }
}

#[test]
fn json_round_trip() {
    let spec = every_field();
    let text = serde_json::to_string_pretty(&spec).unwrap();
    assert_eq!(serde_json::from_str::<RunSpec>(&text).unwrap(), spec, "{text}");
}

#[test]
fn toml_round_trip() {
    let spec = every_field();
    let text = toml::to_string(&spec).unwrap();
    assert_eq!(toml::from_str::<RunSpec>(&text).unwrap(), spec, "{text}");
    assert!(text.contains("heartbeat_s = 2.5"), "seconds are numbers: {text}");
    assert!(text.contains("[queue_checkpoint_s]") && text.contains("b = 1.5"), "{text}");
}

#[test]
fn flags_round_trip() {
    // With a trace, the built-in workload's settings are not flags (simulate refuses them).
    let spec = RunSpec { out: None, decisions: false, ..every_field() };
    let flags = spec.to_flags();
    let unused = RunSpec { jobs: run::BUILTIN_JOBS, load: run::BUILTIN_LOAD, ..spec.clone() };
    assert_eq!(RunSpec::from_flags(&flags).unwrap(), unused, "{flags:?}");
    let synthetic = RunSpec { trace: None, ..spec.clone() };
    assert_eq!(RunSpec::from_flags(synthetic.to_flags()).unwrap(), synthetic);
    let text = flags.join(" ");
    for expected in ["--heartbeat-s 2.5", "--queue-checkpoint-s b=1.5", "--format philly", "--check-invariants"] {
        assert!(text.contains(expected), "{expected} in {text}");
    }
}

#[test]
fn defaults_are_the_flags_defaults_in_every_form() {
    let default = RunSpec::default();
    assert_eq!(RunSpec::from_flags(Vec::<String>::new()).unwrap(), default);
    assert_eq!(serde_json::from_str::<RunSpec>("{}").unwrap(), default);
    assert_eq!(toml::from_str::<RunSpec>("").unwrap(), default);
    assert_eq!(RunSpec::from_flags(default.to_flags()).unwrap(), default);
    let config = default.controller_config().unwrap();
    assert_eq!(config.failures, sim::FailureConfig::default());
    assert_eq!((default.policy.to_string().as_str(), default.seed, default.jobs), ("fifo", 0, run::BUILTIN_JOBS));
}

#[test]
fn settings_read_in_their_users_words() {
    let spec: RunSpec =
        toml::from_str("heartbeat_s = \"0.25\"\ncheckpoint_s = 1800\nqueue_restart_overhead_s = { prod = 0.5 }\n")
            .unwrap();
    assert_eq!(spec.heartbeat_s.0.as_ms(), 250);
    assert_eq!(spec.checkpoint_s.0.as_ms(), 1_800_000);
    assert_eq!(spec.queue_restart_overhead_s, pairs(&[("prod", 500)]));
}

#[test]
fn unknown_and_mistyped_settings_are_refused_by_name() {
    let e = serde_json::from_str::<RunSpec>(r#"{"heartbeat": 10}"#).unwrap_err().to_string();
    assert!(e.contains("unknown field `heartbeat`") && e.contains("heartbeat_s"), "{e}");
    let e = toml::from_str::<RunSpec>("format = \"slurm\"").unwrap_err().to_string();
    assert!(e.contains("unknown format `slurm`"), "{e}");
    let e = toml::from_str::<RunSpec>("checkpoint_s = -5").unwrap_err().to_string();
    assert!(e.contains("checkpoint_s"), "{e}");
    let e = RunSpec::from_flags(["--heartbeat-s", "1e3"]).unwrap_err();
    assert!(e.contains("exponent notation"), "{e}");
}
