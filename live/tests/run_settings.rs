//! Every RunSpec field walked through live mode: each setting `simulate` takes is either
//! honoured by a live session (it reaches the Controller, the session's jobs or both; the
//! exported live.json carries it to the replay; the replay decides as the session did) or
//! refused by name with the reason. A field added to RunSpec fails the first test until it is
//! given its place here.

use run::RunSpec;
use schedlab_live::config::{LiveConfig, REFUSED};
use schedlab_live::coordinator::write_journal;
use schedlab_live::driver::{Batch, Driver, Input};
use schedlab_live::wire::{JobRequest, TaskRequest};
use std::collections::BTreeSet;

/// What live mode does with a RunSpec field.
enum Fate {
    /// Honoured: these flags set it to a value other than its default.
    Honoured(&'static [&'static str]),
    /// Refused by name: these flags set it.
    Refused(&'static [&'static str]),
    /// Given as a file whose text the state directory keeps (`LiveConfig`'s own fields).
    Text,
}

const FIELDS: [(&str, Fate); 31] = [
    ("trace", Fate::Refused(&["--trace", "jobs.csv"])),
    ("format", Fate::Refused(&["--format", "philly"])),
    ("cluster", Fate::Text),
    ("failures", Fate::Refused(&["--failures", "weibull:node_mtbf_h=100"])),
    ("queues", Fate::Text),
    ("datasets", Fate::Text),
    ("policy", Fate::Honoured(&["--policy", "priority"])),
    ("single_node_up_to", Fate::Honoured(&["--single-node-up-to", "4"])),
    ("whole_nodes", Fate::Honoured(&["--whole-nodes", "2"])),
    ("seed", Fate::Honoured(&["--seed", "9"])),
    ("jobs", Fate::Refused(&["--jobs", "10"])),
    ("load", Fate::Refused(&["--load", "0.5"])),
    ("heartbeat_s", Fate::Honoured(&["--heartbeat-s", "0.5"])),
    ("missed_beats", Fate::Honoured(&["--missed-beats", "2"])),
    ("gpu_detect_s", Fate::Refused(&["--gpu-detect-s", "5"])),
    ("max_retries", Fate::Honoured(&["--max-retries", "0"])),
    ("checkpoint_s", Fate::Honoured(&["--checkpoint-s", "0.4"])),
    ("checkpoint_cost_s", Fate::Refused(&["--checkpoint-cost-s", "0.1"])),
    ("restart_overhead_s", Fate::Honoured(&["--restart-overhead-s", "0.05"])),
    ("pass_interval_s", Fate::Honoured(&["--pass-interval-s", "0.3"])),
    ("release_latency_s", Fate::Honoured(&["--release-latency-s", "0.2"])),
    ("queue_checkpoint_s", Fate::Honoured(&["--queue-checkpoint-s", "prod=0.3"])),
    ("queue_restart_overhead_s", Fate::Honoured(&["--queue-restart-overhead-s", "prod=0.07"])),
    ("queue_checkpoint_cost_s", Fate::Refused(&["--queue-checkpoint-cost-s", "prod=0.1"])),
    ("spare_nodes", Fate::Honoured(&["--spare-nodes", "1"])),
    ("retire_after", Fate::Refused(&["--retire-after", "2"])),
    ("retire_window_h", Fate::Refused(&["--retire-window-h", "2"])),
    ("check_invariants", Fate::Honoured(&["--check-invariants"])),
    ("series_bucket_s", Fate::Refused(&["--series-bucket-s", "60"])),
    ("horizon_days", Fate::Refused(&["--horizon-days", "1"])),
    ("set_aside_after", Fate::Refused(&["--set-aside-after", "10"])),
];

/// `simulate`'s outputs: fields of RunSpec, not flags.
const OUTPUTS: [&str; 2] = ["out", "decisions"];

/// 4 nodes of 2 GPUs with `flags`, heartbeats every second unless they say otherwise.
fn config(flags: &[&str]) -> LiveConfig {
    let beats: &[&str] = if flags.contains(&"--heartbeat-s") { &[] } else { &["--heartbeat-s", "1"] };
    let run = RunSpec::from_flags([beats, flags].concat()).unwrap();
    LiveConfig { run, ..LiveConfig::new("4x2", "fifo").unwrap() }
}

type Line = (u64, &'static str, u32, Option<u32>, Vec<u32>);

fn line(d: &sim::DecisionRecord) -> Line {
    (d.time.as_ms(), d.kind.as_str(), d.job.0, d.task.map(|t| t.0), d.gpus.iter().map(|g| g.0).collect())
}

/// A fixed session on 4 nodes of 2 GPUs: jobs of 1, 2 and 4 GPUs (some in queue `prod`),
/// every node beating each half second (node 3 silent from 1 to 4.5 s), a GPU failure at 2.5 s, each running task ending at the
/// first beat 0.9 s or more after it started. Returns the driver.
fn session(config: LiveConfig) -> Driver {
    let mut d = Driver::new(config).unwrap();
    d.apply(d.start_batch()).unwrap();
    let task = |name: &str, gpus: u32| TaskRequest { gpus, ..TaskRequest::new(name, "true") };
    let jobs: Vec<JobRequest> = (0..8)
        .map(|i| {
            let queue = (i % 2 == 0).then(|| "prod".to_string());
            let tasks = vec![task("a", [1, 2, 4][i % 3]), task("b", 1)];
            JobRequest { queue, priority: (i % 3) as i32, ..JobRequest::new(format!("j{i}"), tasks) }
        })
        .collect();
    for job in &jobs {
        d.check_submission(job).unwrap();
    }
    d.apply(Batch { time_ms: 100, inputs: jobs.into_iter().map(Input::submit).collect() }).unwrap();
    let mut started = std::collections::BTreeMap::new();
    for t in (500..=12_000).step_by(500) {
        // Node 3 falls silent for 3.5 s: declared dead, sooner under shorter heartbeats or fewer
        // missed beats.
        let silent = |node: u32| node == 3 && (1000..4500).contains(&t);
        let mut inputs: Vec<Input> = (0..4).filter(|&n| !silent(n)).map(|node| Input::Beat { node }).collect();
        for task in d.running_tasks().collect::<Vec<_>>() {
            let state = d.controller().task(task);
            let since = *started.entry((task, state.attempt)).or_insert(t);
            if t - since >= 900 && state.stalled_since.is_none() {
                inputs.push(Input::Exit { task: task.0, attempt: state.attempt, code: 0 });
            }
        }
        if t == 2500 {
            inputs.push(Input::GpuFail { node: 0, slot: 0, what: "xid 79".into() });
        }
        d.apply(Batch { time_ms: t, inputs }).unwrap();
    }
    d
}

/// What a setting can change: the decisions (their digest), and the work and time the
/// Controller counts as lost to failures and restarts.
fn effect(d: &Driver) -> (String, u64) {
    let lost = (0..d.task_count()).map(|t| d.controller().task(sim::TaskId::from_index(t)).losses());
    (d.controller().digest_hex(), lost.map(|l| l.redo_mgpu_ms + l.overhead_mgpu_ms).sum())
}

#[test]
fn every_run_setting_has_its_place_in_live_mode() {
    let fields = serde_json::to_value(RunSpec::default()).unwrap();
    let fields: BTreeSet<&str> = fields.as_object().unwrap().keys().map(String::as_str).collect();
    let placed: BTreeSet<&str> = FIELDS.iter().map(|(f, _)| *f).chain(OUTPUTS).collect();
    assert_eq!(fields, placed, "a RunSpec field live mode neither honours nor refuses");
    let refused: BTreeSet<&str> =
        FIELDS.iter().filter(|(_, f)| matches!(f, Fate::Refused(_))).map(|(n, _)| *n).collect();
    let named: BTreeSet<&str> = REFUSED.iter().map(|(n, _)| *n).collect();
    assert_eq!(refused, named, "the settings refused are those LiveConfig::check names");
}

#[test]
fn a_setting_live_mode_cannot_honour_is_refused_by_name() {
    for (field, fate) in &FIELDS {
        let Fate::Refused(flags) = fate else { continue };
        let flag = format!("--{}: ", field.replace('_', "-"));
        let e = Driver::new(config(flags)).err().unwrap_or_else(|| panic!("{field}: accepted"));
        assert!(e.starts_with("live serve cannot honour ") && e.contains(&flag), "{field}: {e}");
    }
}

/// Each honoured setting reaches the session: its Controller runs with the settings
/// `simulate` would give it, the exported live.json replays with the setting, and the replay
/// decides what the session decided.
#[test]
fn a_setting_live_mode_honours_reaches_the_session_and_its_replay() {
    let dir = std::env::temp_dir().join(format!("schedlab-run-settings-{}", std::process::id()));
    let plain = session(config(&[]));
    for (field, fate) in &FIELDS {
        let Fate::Honoured(flags) = fate else { continue };
        let config = config(flags);
        let d = session(config.clone());
        let mut expected = config.run.controller_config().unwrap();
        // A debug build checks the invariants whatever the settings say (live/src/driver.rs).
        expected.record_decisions = true;
        expected.check_invariants |= cfg!(debug_assertions);
        assert_eq!(d.controller_config(), expected, "{field}: the Controller's settings");
        let live: Vec<Line> = d.decisions().iter().map(line).collect();
        let replay = d.replay_in_simulator(&policies::Registry::builtin()).unwrap();
        let replayed: Vec<Line> = replay.decisions.iter().map(line).filter(|l| l.0 <= d.now().as_ms()).collect();
        assert_eq!(live, replayed, "{field}: the replay decides otherwise");
        // No built-in policy draws random numbers (the seed feeds a user's policy's draws),
        // and checking invariants changes no decision.
        if !["seed", "check_invariants"].contains(field) {
            assert_ne!(effect(&d), effect(&plain), "{field} changed nothing");
        }
        write_journal(&d, &dir).unwrap();
        let written: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("live.json")).unwrap()).unwrap();
        let replay_spec: RunSpec = serde_json::from_value(written["run"].clone()).unwrap();
        let shaping = field.starts_with("queue_") || ["single_node_up_to", "whole_nodes"].contains(field);
        let carried = config.run.differing_fields(&replay_spec).contains(&field.to_string());
        // What shapes jobs is in the trace's jobs, not the replay's settings (it would shape
        // them again); the rest the replay is given.
        assert_eq!(carried, shaping, "{field}: live.json's run");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// Whole nodes and single-node consolidation shape each job as it is submitted, as they shape
/// a trace's jobs: a 4-GPU task gets 2 GPUs on each of 2 nodes, a 2-GPU task one node.
#[test]
fn consolidation_shapes_each_submitted_job_and_the_trace_keeps_it() {
    let d = session(config(&["--whole-nodes", "2", "--single-node-up-to", "2"]));
    let trace = d.trace().unwrap();
    for job in trace.workload.jobs() {
        for task in &job.tasks {
            match task.gpus {
                4 => assert_eq!(task.fixed_gpus_per_node(), Some(2), "{}", job.name),
                _ => assert!(task.single_node, "{} {}", job.name, task.name),
            }
        }
    }
}
