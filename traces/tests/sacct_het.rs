//! A Slurm heterogeneous job (`200+0`, `200+1`) imports as one job whose components start
//! together (`co_start`), keeps the flag through the canonical jobs.csv, and replays with
//! both components starting at the same instant.

use sim::{ClusterSpec, ControllerConfig, PoolSpec, Scenario};
use traces::{Format, read_jobs_csv, read_trace, write_trace_jobs_csv};

const HEAD: &str = "JobID|Partition|Submit|Start|End|Timelimit|State|NNodes|NodeList|ReqTRES|AllocTRES\n";

/// A job row submitted at 00:00:00 that ran from `start` to `end` (times of the day) with
/// `gpus` GPUs on one node.
fn row(id: &str, start: &str, end: &str, gpus: u32) -> String {
    let tres = format!("billing={gpus},cpu={gpus},gres/gpu={gpus},node=1");
    format!("{id}|gpu|2026-01-01T00:00:00|2026-01-01T{start}|2026-01-01T{end}|01:00:00|COMPLETED|1|n1|{tres}|{tres}\n")
}

/// `100` (8 GPUs) ran for 100 s; het job `200` (8 + 4 GPUs) ran 200 s after it.
fn trace() -> traces::Trace {
    let rows = [
        row("100", "00:00:00", "00:01:40", 8),
        row("200+0", "00:01:40", "00:05:00", 8),
        row("200+1", "00:01:40", "00:05:00", 4),
    ];
    let text = format!("{HEAD}{}", rows.concat());
    read_trace(text.as_bytes(), "sacct.txt", Format::Sacct(Default::default())).expect("the rows import")
}

#[test]
fn a_het_job_imports_as_one_co_start_job() {
    let t = trace();
    let jobs = t.workload.jobs();
    let shape: Vec<_> = jobs.iter().map(|j| (j.name.as_str(), j.tasks.len(), j.co_start)).collect();
    assert_eq!(shape, [("100", 1, false), ("200", 2, true)]);
}

#[test]
fn the_canonical_csv_keeps_co_start() {
    let t = trace();
    let mut out = Vec::new();
    write_trace_jobs_csv(&t.workload, &mut out).unwrap();
    let text = String::from_utf8(out.clone()).unwrap();
    assert!(text.lines().next().unwrap().ends_with(",co_start"), "{text}");
    let back = read_jobs_csv(out.as_slice(), "jobs.csv").unwrap();
    assert_eq!(back, t.workload);
    assert!(back.jobs()[1].co_start);
    // Rows of one job must agree on it.
    let mixed = "job_id,task_id,submit_s,duration_s,gpus,co_start\nj,a,0,1,1,true\nj,b,0,1,1,false\n";
    let e = read_jobs_csv(mixed.as_bytes(), "jobs.csv").unwrap_err().to_string();
    assert!(e.contains("`co_start` differs"), "{e}");
}

/// 2 nodes x 8 GPUs: `100` takes one node until 100 s. `200`'s 8-GPU component would fit the
/// other node at 0, its 4-GPU one not: both start at 100 under every policy tried.
#[test]
fn the_replay_starts_both_components_together() {
    let pool = PoolSpec {
        name: "gpu".into(),
        gpu_type: "gpu".into(),
        nodes: 2,
        gpus_per_node: 8,
        nodes_per_rack: 0,
        speed_milli: 1000,
    };
    let cluster = sim::Cluster::new(&ClusterSpec { pools: vec![pool] }).unwrap();
    for spec in ["fifo[skip=true]", "sjf", "easy-backfill", "slurm[sched=builtin,batch_sched_delay=0]"] {
        let mut policy = policies::build(spec).unwrap();
        let scenario = Scenario::new(cluster.clone(), trace().workload);
        let config = ControllerConfig { check_invariants: true, ..ControllerConfig::default() };
        let r = sim::simulate(scenario, policy.as_mut(), config).unwrap();
        // Trace time is the epoch's; every job was submitted at the same instant.
        let submit = trace().workload.jobs()[0].submit.as_ms();
        let starts: Vec<_> = r.tasks.iter().map(|t| t.first_start.map(|s| s.as_ms() - submit)).collect();
        assert_eq!(starts, [Some(100_000), Some(100_000)], "{spec}");
    }
}
