//! NODE_FAIL attempts become node failures a replay can use: hand-written dumps whose expected
//! failures are worked out by hand in the comments, and the real Slurm dump's one node failure.

use std::path::{Path, PathBuf};
use traces::sacct::{failure_events, load_failure_events};
use traces::{EventRecord, NodeFailure, parse_datetime_ms, read_sacct};

const HEAD: &str = "JobID|Submit|Eligible|Start|End|State|AllocTRES|NodeList\n";

fn at(clock: &str) -> u64 {
    parse_datetime_ms(&format!("2026-01-01 {clock}")).unwrap()
}

fn row(id: &str, eligible: &str, start: &str, end: &str, state: &str, gpus: u32, nodes: &str) -> String {
    let t = |c: &str| format!("2026-01-01T{c}");
    format!("{id}|{}|{}|{}|{}|{state}|gres/gpu={gpus}|{nodes}\n", t("00:00:00"), t(eligible), t(start), t(end))
}

/// Line 2: job 1 on g01+g02 killed at 00:01:00; job 2 ran on g01 through it (so g01 did not
/// fail: g02 did); line 4: job 3, killed on g02 at the same instant (the same failure);
/// job 1 requeued, eligible again 00:02:50, ran on g02+g03 from 00:03:00 (g02 back by then);
/// line 5: job 4 killed on g04 at 00:02:00, and no job ran on g04 afterwards.
fn dump() -> String {
    [
        HEAD.to_owned(),
        row("1", "00:00:00", "00:00:10", "00:01:00", "NODE_FAIL", 16, "g[01-02]"),
        row("2", "00:00:00", "00:00:05", "00:05:00", "COMPLETED", 8, "g01"),
        row("3", "00:00:00", "00:00:20", "00:01:00", "NODE_FAIL", 4, "g02"),
        row("4", "00:00:00", "00:00:30", "00:02:00", "NODE_FAIL", 8, "g04"),
        row("3", "00:01:00", "00:02:00", "00:02:30", "COMPLETED", 4, "g03"),
        row("1", "00:02:50", "00:03:00", "00:04:00", "COMPLETED", 16, "g[02-03]"),
        row("4", "00:02:00", "00:04:00", "00:04:10", "COMPLETED", 8, "g03"),
    ]
    .concat()
}

#[test]
fn node_fail_attempts_are_node_failures_with_their_node_and_time() {
    let import = read_sacct(dump().as_bytes(), "sacct.txt").unwrap();
    let failures = &import.report.node_failures;
    assert_eq!(
        failures,
        &[
            NodeFailure { node: "g02".into(), time: at("00:01:00"), back_by: Some(at("00:03:00")), line: 2 },
            NodeFailure { node: "g04".into(), time: at("00:02:00"), back_by: None, line: 5 },
        ]
    );
    let notes = import.report.notes();
    assert!(
        notes.contains(
            &"2 node failures read off NODE_FAIL jobs: g02 (line 2), g04 (line 5); trace import --nodes NODES \
              --failures-out F writes them as node_fail events"
                .to_owned()
        ),
        "{notes:?}"
    );
}

#[test]
fn a_requeued_job_is_replayed_from_its_first_eligibility() {
    let import = read_sacct(dump().as_bytes(), "sacct.txt").unwrap();
    let job = import.workload.jobs().iter().find(|j| j.name == "1").unwrap();
    // Submitted at its first Submit, eligible then (the requeue's 00:02:50 is not a window:
    // the node failure is replayed instead), with the last attempt's work (60 s).
    assert_eq!(job.submit.0, at("00:00:00"));
    assert_eq!((job.tasks[0].options().window.not_before, job.tasks[0].work.0), (None, 60_000));
    assert_eq!(import.report.earlier_attempts.get("NODE_FAIL"), Some(&3));
}

#[test]
fn failures_become_node_fail_events_numbered_as_the_cluster() {
    let import = read_sacct(dump().as_bytes(), "sacct.txt").unwrap();
    let names: Vec<String> = ["g01", "g02", "g03", "g04"].map(String::from).to_vec();
    let events = failure_events(&import.report.node_failures, &names, "sacct.txt").unwrap();
    assert_eq!(
        events,
        [
            EventRecord::NodeFail {
                time: sim::SimTime(at("00:01:00")),
                node: sim::NodeId(1),
                repair: Some(sim::SimDuration(120_000))
            },
            EventRecord::NodeFail { time: sim::SimTime(at("00:02:00")), node: sim::NodeId(3), repair: None },
        ]
    );
    let e = failure_events(&import.report.node_failures, &names[..3], "sacct.txt").unwrap_err();
    assert_eq!(
        e.to_string(),
        "sacct.txt:5: field `NodeList`: expected nodes of the cluster's node list (a GPU node of scontrol show nodes \
         or slurm.conf), got \"g04\""
    );
}

#[test]
fn a_malformed_node_list_is_an_error_at_its_line() {
    let text = format!("{HEAD}{}", row("1", "00:00:00", "00:00:10", "00:01:00", "NODE_FAIL", 16, "g[01-"));
    let e = read_sacct(text.as_bytes(), "sacct.txt").unwrap_err().to_string();
    assert!(e.starts_with("sacct.txt:2: field `NodeList`: expected a Slurm host list such as n[1-4,7]"), "{e}");
}

fn data(file: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/slurm").join(file)
}

#[test]
fn the_real_dumps_node_failures() {
    // builtin: job 64 ended NODE_FAIL on n2 at 20:23:10 (line 142); job 69 started on n2 at
    // 20:23:12. n1, n2 are the a100 pool, first: n2 is node 1.
    let events =
        load_failure_events(&data("builtin/sacct.txt"), Default::default(), &data("builtin/nodes.txt")).unwrap();
    let time = parse_datetime_ms("2026-12-01 20:23:10").unwrap();
    assert_eq!(
        events,
        [EventRecord::NodeFail {
            time: sim::SimTime(time),
            node: sim::NodeId(1),
            repair: Some(sim::SimDuration(2_000))
        }]
    );
    // The other two runs: n2 was set DOWN when no job ran on it, so sacct has no trace of it.
    for run in ["builtin-fast", "backfill"] {
        let events = load_failure_events(
            &data(&format!("{run}/sacct.txt")),
            Default::default(),
            &data(&format!("{run}/nodes.txt")),
        );
        assert_eq!(events.unwrap(), [], "{run}");
    }
}

#[test]
fn when_every_node_of_the_list_ran_another_job_through_it_all_are_kept() {
    // Job 1 on h1+h2 killed at 00:01:00 while jobs 2 (h1) and 3 (h2) ran through it: sacct
    // contradicts itself, and the import keeps the whole list rather than guess.
    let text = [
        HEAD.to_owned(),
        row("1", "00:00:00", "00:00:10", "00:01:00", "NODE_FAIL", 2, "h[1-2]"),
        row("2", "00:00:00", "00:00:05", "00:02:00", "COMPLETED", 1, "h1"),
        row("3", "00:00:00", "00:00:05", "00:02:00", "COMPLETED", 1, "h2"),
    ]
    .concat();
    let import = read_sacct(text.as_bytes(), "sacct.txt").unwrap();
    let nodes: Vec<&str> = import.report.node_failures.iter().map(|f| f.node.as_str()).collect();
    assert_eq!(nodes, ["h1", "h2"]);
}
