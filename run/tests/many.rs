//! Many runs through the library: executing a plan gives the same summaries whatever the
//! threads or shards, the lowest failing run is the one reported, and shards merge into the
//! unsharded sweep or are refused.

use policies::Registry;
use reports::sweep::{Shard, SweepSettings};
use run::many::{Executor, Failed, Part, Plan, merge};
use run::{RunSpec, Runner};
use std::path::PathBuf;

/// 2 policies x 2 placements x 3 seeds of a small overloaded built-in workload.
fn plan() -> Plan {
    let settings = SweepSettings {
        traces: vec![],
        policies: vec!["fifo".into(), "sjf".into()],
        grid: vec!["placement=pack|spread".into()],
        seeds: vec![0, 1, 2],
        run: serde_json::Map::new(),
    };
    Plan::new(settings, &Registry::builtin()).unwrap()
}

fn base() -> RunSpec {
    RunSpec { jobs: 60, load: 2.0, ..RunSpec::default() }
}

/// The digests of the runs `shard` holds, executed on `threads` threads.
fn digests(plan: &Plan, shard: Option<Shard>, threads: usize) -> Vec<String> {
    let runs = plan.slice(shard);
    let executor = Executor::new(Some(threads)).unwrap();
    assert_eq!(executor.threads(), threads);
    let done = executor.execute(&Runner::default(), runs.len(), |i| plan.spec(&base(), &runs[i], None)).unwrap();
    done.into_iter().map(|d| d.summary.digest).collect()
}

#[test]
fn a_plan_runs_to_the_same_summaries_on_1_and_3_threads_in_run_order() {
    let plan = plan();
    let one = digests(&plan, None, 1);
    assert_eq!(one, digests(&plan, None, 3));
    // In run order: each run's digest is that of its spec run alone.
    for i in [0, 5, 11] {
        let spec = plan.spec(&base(), &plan.runs[i], None).unwrap();
        assert_eq!(spec.run().unwrap().summary.digest, one[i], "run {i}");
    }
}

#[test]
fn shards_executed_and_merged_equal_the_unsharded_sweep() {
    let plan = plan();
    let whole = digests(&plan, None, 2);
    let count = 5;
    // Given out of order, as a merge may be.
    let parts: Vec<Part> = [3, 0, 4, 1, 2]
        .into_iter()
        .map(|index| Part {
            folder: PathBuf::from(format!("s{index}")),
            manifest: plan.manifest(Some(Shard { index, count })),
        })
        .collect();
    let shard_digests: Vec<Vec<String>> = parts.iter().map(|p| digests(&plan, p.manifest.shard, 2)).collect();
    let merged = merge(&parts, &Registry::builtin()).unwrap();
    assert_eq!(merged.plan, plan);
    assert_eq!(merged.plan.manifest(None), plan.manifest(None));
    let mut taken = vec![0; parts.len()];
    let mut rows = Vec::new();
    for holder in &merged.holders {
        rows.push(shard_digests[*holder][taken[*holder]].clone());
        taken[*holder] += 1;
    }
    assert_eq!(rows, whole);
}

#[test]
fn merge_refuses_overlapping_incomplete_or_foreign_shards() {
    let plan = plan();
    let part = |index, count| Part {
        folder: PathBuf::from(format!("s{index}")),
        manifest: plan.manifest(Some(Shard { index, count })),
    };
    let registry = Registry::builtin();
    let error = merge(&[part(0, 2), part(0, 3), part(1, 2)], &registry).unwrap_err();
    assert!(error.starts_with("overlapping shards: run 0"), "{error}");
    let error = merge(&[part(0, 3), part(2, 3)], &registry).unwrap_err();
    assert!(error.contains("4 of the sweep's 12 runs") && error.ends_with("missing shard(s): 1/3"), "{error}");
    let mut foreign = part(1, 2);
    foreign.manifest.settings.seeds = vec![0, 1, 3];
    let error = merge(&[part(0, 2), foreign], &registry).unwrap_err();
    assert!(error.contains("not shards of one sweep") && error.contains("--seeds: [0, 1, 2] vs [0, 1, 3]"), "{error}");
    let mut old = part(1, 2);
    old.manifest.schedlab_version = "0.0.1".into();
    assert!(merge(&[part(0, 2), old], &registry).unwrap_err().contains("written by schedlab 0.0.1"));
}

#[test]
fn the_lowest_failing_run_is_reported_whatever_the_threads() {
    let good = RunSpec { jobs: 30, ..RunSpec::default() };
    let bad = RunSpec { trace: Some(PathBuf::from("/nonexistent/trace.csv")), ..good.clone() };
    let mut specs = vec![good.clone(); 12];
    specs[4] = bad.clone();
    specs[9] = bad;
    for threads in [1, 4] {
        let failed: Failed =
            Executor::new(Some(threads)).unwrap().execute_specs(&Runner::default(), &specs).unwrap_err();
        assert_eq!(failed.index, 4, "{threads} threads");
        assert!(failed.error.contains("trace.csv"), "{}", failed.error);
    }
}

#[test]
fn runs_write_their_files_with_or_without_their_wall_time() {
    let dir = std::env::temp_dir().join(format!("schedlab-many-{}", std::process::id()));
    let spec = |name: &str| RunSpec { jobs: 30, out: Some(dir.join(name)), ..RunSpec::default() };
    let wall_s = |name: &str| {
        let text = std::fs::read_to_string(dir.join(name).join("summary.json")).unwrap();
        serde_json::from_str::<serde_json::Value>(&text).unwrap()["wall_s"].clone()
    };
    let runner = Runner::default();
    let done = Executor::new(Some(1)).unwrap().execute_specs(&runner, &[spec("kept")]).unwrap();
    assert!(wall_s("kept").as_f64().is_some_and(|s| s > 0.0));
    assert!(done[0].summary.wall_s.is_none() && done[0].wall_s > 0.0);
    Executor::new(Some(1)).unwrap().wall_time_apart().execute_specs(&runner, &[spec("apart")]).unwrap();
    assert!(wall_s("apart").is_null());
    assert!(dir.join("apart/timeseries.csv").is_file() && !dir.join("apart/decisions.csv").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
