//! Canonical trace directories on disk: `jobs.csv` plus optional `cluster.csv` and
//! `events.csv`, loaded together, with events checked against the cluster, and `validate`
//! reporting problems from every file.

use sim::{NodeId, SimTime};
use std::fs;
use std::path::PathBuf;
use traces::{EventRecord, Format, load, load_cluster_file, validate};

/// A fresh directory under cargo's per-test scratch space, holding the given files.
fn trace_dir(name: &str, files: &[(&str, &str)]) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("traces-directory-tests").join(name);
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    for (file, text) in files {
        fs::write(dir.join(file), text).unwrap();
    }
    dir
}

const JOBS: &str = "job_id,task_id,submit_s,duration_s,gpus,queue\n\
                    train,ps,0,3600,1,research\n\
                    train,worker,0,3600,16,research\n\
                    eval,,120.5,60,1,\n";
const CLUSTER: &str = "pool,gpu_type,nodes,gpus_per_node,nodes_per_rack\nA100,A100,2,8,\nK80,K80,4,2,2\n";
const EVENTS: &str = "time_s,kind,node,gpu,repair_s\n7200,node_fail,5,,600\n30,gpu_fail,0,3,\n";

#[test]
fn a_full_directory_loads_jobs_cluster_and_events() {
    let dir = trace_dir("full", &[("jobs.csv", JOBS), ("cluster.csv", CLUSTER), ("events.csv", EVENTS)]);
    let trace = load(&dir, Format::Canonical).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(trace.workload.len(), 2);
    assert_eq!(trace.workload.task_count(), 3);
    assert_eq!(trace.workload.jobs()[0].name, "train");
    assert_eq!(trace.workload.jobs()[1].submit, SimTime(120_500));
    let cluster = trace.cluster.expect("cluster.csv was read");
    assert_eq!(cluster.pools.len(), 2);
    assert_eq!(cluster, load_cluster_file(&dir.join("cluster.csv")).unwrap());
    assert_eq!(trace.events.len(), 2);
    assert_eq!(trace.events[0], EventRecord::GpuFail { time: SimTime(30_000), node: NodeId(0), gpu: 3, repair: None });
    assert_eq!(trace.events[1].node(), NodeId(5));
    assert_eq!(validate(&dir, Format::Canonical), []);
}

#[test]
fn optional_files_may_be_absent_and_a_single_file_works_too() {
    let dir = trace_dir("jobs-only", &[("jobs.csv", JOBS)]);
    let trace = load(&dir, Format::Canonical).unwrap();
    assert_eq!((trace.cluster, trace.events.len()), (None, 0));
    let file = load(&dir.join("jobs.csv"), Format::Canonical).unwrap();
    assert_eq!(file.workload, trace.workload);
}

#[test]
fn events_are_checked_against_the_directory_cluster() {
    let bad_events = "time_s,kind,node,gpu,repair_s\n1,node_fail,6,,\n";
    let dir = trace_dir("bad-node", &[("jobs.csv", JOBS), ("cluster.csv", CLUSTER), ("events.csv", bad_events)]);
    let e = load(&dir, Format::Canonical).unwrap_err().to_string();
    let expected = format!(
        "{}: field `node`: expected a node index below 6 (the cluster's node count), got \"6\"",
        dir.join("events.csv").display()
    );
    assert_eq!(e, expected.replacen(": field", ":2: field", 1));
}

#[test]
fn validate_reports_problems_from_every_file() {
    let jobs = "job_id,submit_s,duration_s,gpus\na,0,1,1\nb,x,1,1\nc,0,1,0\n";
    let cluster = "pool,gpu_type,nodes,gpus_per_node\np,V100,1,99\n";
    let events = "time_s,kind,node\n1,explode,0\n";
    let dir = trace_dir("many-errors", &[("jobs.csv", jobs), ("cluster.csv", cluster), ("events.csv", events)]);
    let errors: Vec<String> = validate(&dir, Format::Canonical).iter().map(ToString::to_string).collect();
    let d = dir.display();
    assert_eq!(
        errors,
        [
            format!(
                "{d}/jobs.csv:3: field `submit_s`: expected a non-negative number of seconds (decimal digits, like 66 or 0.25), got \"x\""
            ),
            format!(
                "{d}/jobs.csv:4: field `gpus`: expected a whole number of GPUs from 1 to 1000000 (the most a cluster may have), got \"0\""
            ),
            format!(
                "{d}/cluster.csv:2: field `gpus_per_node`: expected a whole number of GPUs per node, 1..=64, got \"99\""
            ),
            format!("{d}/events.csv:2: field `kind`: expected gpu_fail, node_fail or heartbeat, got \"explode\""),
        ]
    );
    // load stops at the first.
    assert_eq!(load(&dir, Format::Canonical).unwrap_err().to_string(), errors[0]);
}

#[test]
fn directory_mistakes_are_explained() {
    let dir = trace_dir("empty", &[]);
    let e = load(&dir, Format::Canonical).unwrap_err().to_string();
    assert!(
        e.ends_with(
            "the trace directory has no jobs.csv (cluster.csv, events.csv, queues.csv and datasets.csv are optional)"
        ),
        "{e}"
    );
    let e = load(&dir, Format::Philly).unwrap_err().to_string();
    assert!(e.ends_with("is a directory; the philly format reads one CSV file"), "{e}");
}

#[test]
fn a_written_directory_loads_back_identically() {
    let source = trace_dir("to-copy", &[("jobs.csv", JOBS), ("cluster.csv", CLUSTER), ("events.csv", EVENTS)]);
    let trace = load(&source, Format::Canonical).unwrap();
    let copy = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("traces-directory-tests/copied");
    let _ = fs::remove_dir_all(&copy);
    traces::write_trace_dir(&trace, &copy).unwrap();
    assert_eq!(load(&copy, Format::Canonical).unwrap(), trace);
}
