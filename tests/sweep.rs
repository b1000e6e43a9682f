//! `schedlab sweep`, `merge` and `compare` through the binary: byte-identical outputs whatever
//! the thread count or sharding, refusals with clear messages, and comparisons whose verdicts
//! are checked against hand-computed runs.

mod common;

use common::{read_json, schedlab, scratch, stderr, stdout};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn s(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// A small synthetic sweep, overloaded so that fifo and sjf differ: 2 policies x 3 seeds.
const SMALL: &[&str] = &["--jobs", "200", "--load", "2", "--policy", "fifo", "--policy", "sjf", "--seeds", "0..3"];

/// Runs `schedlab sweep SMALL extra... --out out` and insists it succeeds.
fn sweep(out: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["sweep"];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--out", s(out)]);
    let result = schedlab(&args);
    assert!(result.status.success(), "sweep {extra:?} failed: {}", stderr(&result));
    result
}

/// Every file under `dir` (relative path -> bytes), wall.csv (wall-clock times) aside.
fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, files: &mut BTreeMap<String, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).expect("readable dir") {
            let path = entry.expect("dir entry").path();
            if path.is_dir() {
                walk(root, &path, files);
            } else {
                let rel = path.strip_prefix(root).unwrap().to_string_lossy().into_owned();
                if rel != "wall.csv" {
                    files.insert(rel, std::fs::read(&path).unwrap());
                }
            }
        }
    }
    let mut files = BTreeMap::new();
    walk(dir, dir, &mut files);
    files
}

fn assert_same_tree(a: &Path, b: &Path) {
    let (ta, tb) = (tree(a), tree(b));
    assert_eq!(
        ta.keys().collect::<Vec<_>>(),
        tb.keys().collect::<Vec<_>>(),
        "{} and {} hold different files",
        a.display(),
        b.display()
    );
    for (name, bytes) in &ta {
        assert!(*bytes == tb[name], "{name} differs between {} and {}", a.display(), b.display());
    }
}

/// The run folders named in a sweep's sweep.json, in run order.
fn run_dirs(sweep: &Path) -> Vec<String> {
    let manifest = read_json(&sweep.join("sweep.json"));
    manifest["runs"].as_array().unwrap().iter().map(|r| r["dir"].as_str().unwrap().to_string()).collect()
}

#[test]
fn a_sweep_gives_the_same_bytes_with_1_and_4_threads() {
    let dir = scratch("sweep", "threads");
    let (one, four) = (dir.join("one"), dir.join("four"));
    let quiet = sweep(&one, &["--threads", "1"]);
    sweep(&four, &["--threads", "4"]);
    assert_same_tree(&one, &four);
    assert_eq!(stderr(&quiet), "", "no progress bar when stderr is not a terminal");
    assert!(stdout(&quiet).contains("6 runs in"), "{}", stdout(&quiet));

    // The layout: 6 run folders, one row per run in run order, wall_s only in wall.csv.
    let dirs = run_dirs(&one);
    assert_eq!(dirs.len(), 6);
    assert_eq!(dirs[0], "runs/000-synthetic-fifo-s0");
    assert_eq!(dirs[5], "runs/005-synthetic-sjf-s2");
    let csv = std::fs::read_to_string(one.join("sweep.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines.len(), 7, "{csv}");
    assert!(lines[0].starts_with("run,trace,spec,seed,policy,cluster_gpus,jobs,"), "{}", lines[0]);
    assert!(lines[0].ends_with(",digest") && !lines[0].contains("wall_s"), "{}", lines[0]);
    let digests: Vec<&str> = lines[1..].iter().map(|l| l.rsplit(',').next().unwrap()).collect();
    for (i, run) in dirs.iter().enumerate() {
        assert!(lines[i + 1].starts_with(&format!("{i},(built-in synthetic),")), "{}", lines[i + 1]);
        let summary = read_json(&one.join(run).join("summary.json"));
        assert_eq!(summary["digest"].as_str(), Some(digests[i]), "{run}: sweep.csv and summary.json disagree");
        assert!(summary["wall_s"].is_null(), "{run}: wall time in summary.json");
        assert!(one.join(run).join("jobs.csv").is_file());
    }
    assert_ne!(digests[0], digests[3], "fifo and sjf should decide differently under this load");
    let wall = std::fs::read_to_string(one.join("wall.csv")).unwrap();
    assert_eq!(wall.lines().count(), 7, "{wall}");
}

#[test]
fn shard_0_and_1_of_2_merged_equal_the_unsharded_sweep_byte_for_byte() {
    let dir = scratch("sweep", "shards");
    let (whole, shard0, shard1, merged) = (dir.join("whole"), dir.join("s0"), dir.join("s1"), dir.join("merged"));
    sweep(&whole, &[]);
    let out0 = sweep(&shard0, &["--shard", "0/2", "--threads", "1"]);
    sweep(&shard1, &["--shard", "1/2", "--threads", "3"]);
    assert!(stdout(&out0).contains("3 runs (shard 0/2 of a 6-run sweep)"), "{}", stdout(&out0));
    // Shard i holds the runs numbered i modulo 2.
    let held: Vec<String> = run_dirs(&shard0).iter().map(|d| d[5..8].to_string()).collect();
    assert_eq!(held, ["000", "002", "004"]);
    assert_eq!(read_json(&shard1.join("sweep.json"))["shard"], serde_json::json!({"index": 1, "count": 2}));

    let out = schedlab(&["merge", s(&shard1), s(&shard0), "--out", s(&merged)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("merged 2 shards: 6 runs"), "{}", stdout(&out));
    assert_same_tree(&whole, &merged);
    let wall = std::fs::read_to_string(merged.join("wall.csv")).unwrap();
    let runs: Vec<&str> = wall.lines().skip(1).map(|l| l.split(',').next().unwrap()).collect();
    assert_eq!(runs, ["0", "1", "2", "3", "4", "5"]);
}

#[test]
fn merge_refuses_overlapping_incomplete_or_foreign_shards() {
    let dir = scratch("sweep", "refuse");
    let (shard0, shard1) = (dir.join("s0"), dir.join("s1"));
    sweep(&shard0, &["--shard", "0/2"]);
    sweep(&shard1, &["--shard", "1/2"]);
    let merged = dir.join("merged");

    let twice = schedlab(&["merge", s(&shard0), s(&shard1), s(&shard0), "--out", s(&merged)]);
    assert_eq!(twice.status.code(), Some(2));
    assert!(
        stderr(&twice).contains("overlapping shards: run 0 (runs/000-synthetic-fifo-s0) is in both"),
        "{}",
        stderr(&twice)
    );

    let alone = schedlab(&["merge", s(&shard0), "--out", s(&merged)]);
    assert_eq!(alone.status.code(), Some(2));
    let err = stderr(&alone);
    assert!(err.contains("incomplete: 3 of the sweep's 6 runs are in no shard given (runs 1, 3, 5)"), "{err}");
    assert!(err.contains("missing shard(s): 1/2"), "{err}");

    // A shard of another sweep (other seeds) is not a shard of this one.
    let foreign = dir.join("foreign");
    let out = schedlab(&[
        "sweep",
        "--jobs",
        "200",
        "--load",
        "2",
        "--policy",
        "fifo",
        "--policy",
        "sjf",
        "--seeds",
        "0..4",
        "--shard",
        "1/2",
        "--out",
        s(&foreign),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mixed = schedlab(&["merge", s(&shard0), s(&foreign), "--out", s(&merged)]);
    assert_eq!(mixed.status.code(), Some(2));
    let err = stderr(&mixed);
    assert!(err.contains("are not shards of one sweep") && err.contains("--seeds: [0, 1, 2] vs [0, 1, 2, 3]"), "{err}");

    // Not a sweep folder at all.
    let empty = scratch("sweep", "refuse-empty");
    let none = schedlab(&["merge", s(&empty), "--out", s(&merged)]);
    assert!(stderr(&none).contains("cannot read sweep.json"), "{}", stderr(&none));
    assert!(!merged.exists(), "a refused merge writes nothing");
}

/// 1 node x 4 GPUs. a (2 GPUs, 100 s) at 0, b (4 GPUs, 100 s) at 1, c (1 GPU, 10 s) at 2.
/// fifo: c waits behind the blocked b: a 0..100, b 100..200, c 200..210; JCTs 100, 199, 208.
/// fifo[skip=true]: c passes b: c 2..12; JCTs 100, 199, 10. GPU-time 610 GPU-s both.
fn head_of_line_trace(dir: &Path) -> PathBuf {
    let trace = dir.join("jobs.csv");
    std::fs::write(&trace, "job_id,submit_s,duration_s,gpus\na,0,100,2\nb,1,100,4\nc,2,10,1\n").unwrap();
    trace
}

/// The compare table's row for `metric`: its columns.
fn row(table: &str, metric: &str) -> Vec<String> {
    let line = table
        .lines()
        .find(|l| l.split_whitespace().next() == Some(metric))
        .unwrap_or_else(|| panic!("no row `{metric}` in:\n{table}"));
    line.split_whitespace().map(str::to_string).collect()
}

#[test]
fn compare_names_the_better_policy_on_a_hand_computed_case() {
    let dir = scratch("sweep", "compare-hand");
    let trace = head_of_line_trace(&dir);
    let out_dir = dir.join("sweep");
    let out = schedlab(&[
        "sweep",
        "--trace",
        s(&trace),
        "--cluster",
        "1x4:A",
        "--policy",
        "fifo",
        "--policy",
        "fifo[skip=true]",
        "--out",
        s(&out_dir),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let dirs = run_dirs(&out_dir);
    assert_eq!(dirs, ["runs/000-jobs-fifo-s0", "runs/001-jobs-fifo_skip_true-s0"]);
    let (fifo, skip) = (out_dir.join(&dirs[0]), out_dir.join(&dirs[1]));

    let out = schedlab(&["compare", s(&fifo), s(&skip)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let table = stdout(&out);
    // metric, A, B, change, change %, better
    assert_eq!(row(&table, "mean_jct_s"), ["mean_jct_s", "169", "103", "-66", "-39.05%", "B"]);
    assert_eq!(row(&table, "p50_jct_s"), ["p50_jct_s", "199", "100", "-99", "-49.75%", "B"]);
    assert_eq!(row(&table, "mean_queue_s"), ["mean_queue_s", "99", "33", "-66", "-66.67%", "B"]);
    assert_eq!(row(&table, "makespan_s"), ["makespan_s", "210", "200", "-10", "-4.76%", "B"]);
    // utilisation 610 / (4 x 210) = 0.72619 and 610 / (4 x 200) = 0.7625: higher is better.
    assert_eq!(row(&table, "utilisation"), ["utilisation", "0.72619", "0.7625", "+0.03631", "+5.00%", "B"]);
    assert_eq!(row(&table, "jobs_per_hour")[5], "B");
    assert_eq!(row(&table, "p99_jct_s"), ["p99_jct_s", "208", "199", "-9", "-4.33%", "B"]);
    assert_eq!(row(&table, "gpu_hours")[5], "same", "610 GPU-s either way");
    assert_eq!(row(&table, "jobs_finished")[5], "same");
    assert_eq!(row(&table, "digest")[3], "different");
    assert_eq!(row(&table, "policy").last().map(String::as_str), Some("different"));

    // Swapped, A is the better side.
    let swapped = stdout(&schedlab(&["compare", s(&skip), s(&fifo)]));
    assert_eq!(row(&swapped, "mean_jct_s"), ["mean_jct_s", "103", "169", "+66", "+64.08%", "A"]);
    assert_eq!(row(&swapped, "utilisation")[5], "A");
}

#[test]
fn compare_of_a_run_or_sweep_with_itself_reports_no_change() {
    let dir = scratch("sweep", "compare-self");
    let out_dir = dir.join("sweep");
    sweep(&out_dir, &[]);
    let run = out_dir.join(&run_dirs(&out_dir)[4]);
    let out = schedlab(&["compare", s(&run), s(&run.join("summary.json"))]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("no change: every metric and the digest are the same"), "{text}");
    let metrics = ["mean_jct_s", "utilisation", "goodput", "jobs_per_hour", "littles_law_error", "digest", "events"];
    for metric in metrics {
        assert_eq!(row(&text, metric).last().map(String::as_str), Some("same"), "{metric}:\n{text}");
    }
    let only = stdout(&schedlab(&["compare", s(&run), s(&run), "--only-changed"]));
    assert!(!only.contains("mean_jct_s"), "{only}");

    let out = schedlab(&["compare", s(&out_dir), s(&out_dir)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("compared run by run"), "{text}");
    assert!(text.contains("identical (every metric and the digest): 6 of 6 runs"), "{text}");

    let mixed = schedlab(&["compare", s(&run), s(&out_dir)]);
    assert_eq!(mixed.status.code(), Some(2));
    assert!(stderr(&mixed).contains("one side is a run and the other a sweep"), "{}", stderr(&mixed));
}

#[test]
fn sweeps_of_different_policies_compare_by_their_means_over_seeds() {
    let dir = scratch("sweep", "compare-sweeps");
    let trace = head_of_line_trace(&dir);
    let side = |name: &str, policy: &str| {
        let out_dir = dir.join(name);
        let out = schedlab(&[
            "sweep",
            "--trace",
            s(&trace),
            "--cluster",
            "1x4:A",
            "--policy",
            policy,
            "--seeds",
            "0..2",
            "--out",
            s(&out_dir),
        ]);
        assert!(out.status.success(), "{}", stderr(&out));
        out_dir
    };
    let (fifo, skip) = (side("fifo", "fifo"), side("skip", "fifo[skip=true]"));
    let out = schedlab(&["compare", s(&fifo), s(&skip)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains("per trace, means over seeds"), "{text}");
    assert_eq!(row(&text, "runs"), ["runs", "2", "2", "0", "+0.00%", "same"]);
    assert_eq!(row(&text, "mean_jct_s"), ["mean_jct_s", "169", "103", "-66", "-39.05%", "B"]);
    assert!(!text.contains("\ndigest"), "digests are per run, not averaged:\n{text}");
}

#[test]
fn the_grid_expands_each_policy_over_the_keys_it_takes() {
    let dir = scratch("sweep", "grid");
    let out_dir = dir.join("sweep");
    let out = schedlab(&[
        "sweep",
        "--jobs",
        "50",
        "--policy",
        "fifo",
        "--policy",
        "sjf",
        "--grid",
        "skip=true|false",
        "--grid",
        "placement=pack|spread",
        "--out",
        s(&out_dir),
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let manifest = read_json(&out_dir.join("sweep.json"));
    let specs: Vec<&str> = manifest["runs"].as_array().unwrap().iter().map(|r| r["spec"].as_str().unwrap()).collect();
    // First grid key outermost; each spec printed canonically (keys sorted).
    assert_eq!(
        specs,
        [
            "fifo[placement=pack,skip=true]",
            "fifo[placement=spread,skip=true]",
            "fifo[placement=pack,skip=false]",
            "fifo[placement=spread,skip=false]",
            "sjf[placement=pack]",
            "sjf[placement=spread]",
        ]
    );
    assert_eq!(run_dirs(&out_dir)[1], "runs/001-synthetic-fifo_placement_spread_skip_true-s0");
    let csv = std::fs::read_to_string(out_dir.join("sweep.csv")).unwrap();
    assert!(
        csv.contains(",\"fifo[placement=spread,skip=true]\",0,\"fifo[skip=true,placement=spread,avoid_failed_h=0]\","),
        "{csv}"
    );

    let unknown = schedlab(&["sweep", "--jobs", "50", "--policy", "sjf", "--grid", "skip=true|false"]);
    assert_eq!(unknown.status.code(), Some(2));
    assert!(
        stderr(&unknown).contains("--grid skip: no policy in the sweep takes `skip` (sjf takes "),
        "{}",
        stderr(&unknown)
    );
    let twice = schedlab(&["sweep", "--jobs", "50", "--policy", "fifo[skip=true]", "--grid", "skip=true|false"]);
    assert!(stderr(&twice).contains("already sets `skip`"), "{}", stderr(&twice));
    let bad_value = schedlab(&["sweep", "--jobs", "50", "--policy", "fifo", "--grid", "skip=yes"]);
    assert!(stderr(&bad_value).contains("--policy `fifo[skip=yes]`"), "{}", stderr(&bad_value));
}

/// A grid over a run setting: every run once per value, in groups the sweep.csv, the printed
/// table and the report tell apart; checkpoints every 30 min lose work on failures that
/// continuous checkpoints (0) never lose. Sharded and merged, the same bytes.
#[test]
fn the_grid_varies_run_settings_too() {
    let dir = scratch("sweep", "grid-settings");
    let args = |out: &Path, shard: Option<&str>| {
        let mut a = vec![
            "sweep",
            "--jobs",
            "200",
            "--cluster",
            "4x8:V100",
            "--failures",
            "weibull:node_mtbf_h=50,repair_median_h=2",
            "--policy",
            "fifo",
            "--grid",
            "checkpoint_s=0|1800",
            "--seeds",
            "0..2",
            "--out",
        ];
        a.push(s(out));
        if let Some(shard) = shard {
            a.extend(["--shard", shard]);
        }
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>| {
        let out = schedlab(&a.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(out.status.success(), "{}", stderr(&out));
        out
    };
    let whole = dir.join("whole");
    let printed = stdout(&run(args(&whole, None)));
    assert!(printed.contains("fifo checkpoint_s=0 ") && printed.contains("fifo checkpoint_s=1800 "), "{printed}");
    let manifest = read_json(&whole.join("sweep.json"));
    let settings: Vec<String> = manifest["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["settings"][0][1].as_str().unwrap().to_string())
        .collect();
    assert_eq!(settings, ["0", "0", "1800", "1800"]);
    assert_eq!(run_dirs(&whole)[2], "runs/002-synthetic-fifo_checkpoint_s_1800-s0");
    let csv = std::fs::read_to_string(whole.join("sweep.csv")).unwrap();
    assert!(csv.contains("\n2,(built-in synthetic),fifo checkpoint_s=1800,0,"), "{csv}");
    let redo = |slug: &str| -> f64 {
        let dirs = run_dirs(&whole).into_iter().filter(|d| d.contains(slug));
        dirs.map(|d| read_json(&whole.join(d).join("summary.json"))["lost_redo_gpu_hours"].as_f64().unwrap()).sum()
    };
    assert_eq!(redo("checkpoint_s_0-"), 0.0);
    assert!(redo("checkpoint_s_1800-") > 0.0, "{csv}");
    let report = dir.join("report.html");
    run(vec!["report".into(), s(&whole).into(), "--output".into(), s(&report).into()]);
    let html = std::fs::read_to_string(&report).unwrap();
    assert!(html.contains("fifo checkpoint_s=1800"), "the report shows each setting's group");
    let shards = [dir.join("s0"), dir.join("s1")];
    for (i, shard) in shards.iter().enumerate() {
        run(args(shard, Some(&format!("{i}/2"))));
    }
    let merged = dir.join("merged");
    run(vec!["merge".into(), s(&shards[0]).into(), s(&shards[1]).into(), "--out".into(), s(&merged).into()]);
    assert_same_tree(&whole, &merged);
    let bad = schedlab(&["sweep", "--jobs", "50", "--grid", "spare_nodes=one"]);
    assert!(stderr(&bad).contains("--grid spare_nodes: `one` is not a whole number"), "{}", stderr(&bad));
}

#[test]
fn bad_seeds_shards_and_outputs_are_clear_errors() {
    let dir = scratch("sweep", "errors");
    let cases: &[(&[&str], &str)] = &[
        (&["--seeds", "5..2"], "--seeds `5..2`: the range is empty"),
        (&["--seeds", "x"], "--seeds `x`: expected a range START..END (END excluded: 0..5 is seeds 0 to 4)"),
        (&["--seeds", "1,1"], "seed 1 given twice"),
        (&["--seed", "3"], "a sweep takes --seeds"),
        (&["--shard", "2/2", "--out", "unused"], "--shard `2/2`: expected I/N with 0 <= I < N"),
        (&["--shard", "one/2", "--out", "unused"], "--shard `one/2`: expected I/N"),
        (&["--shard", "0/2"], "--out"),
        (&["--threads", "0"], "--threads"),
    ];
    for (args, want) in cases {
        let mut full = vec!["sweep", "--jobs", "20"];
        full.extend_from_slice(args);
        let out = schedlab(&full);
        assert!(!out.status.success(), "{args:?} succeeded");
        assert!(stderr(&out).contains(want), "{args:?}: wanted `{want}` in:\n{}", stderr(&out));
    }
    assert!(!Path::new("unused").exists());

    // A run that fails names the run; a folder that holds files is never written into.
    let trace = head_of_line_trace(&dir);
    let out = schedlab(&[
        "sweep",
        "--trace",
        s(&trace),
        "--cluster",
        "1x4:A",
        "--policy",
        "fifo",
        "--policy",
        "sjf[duration=estimate]",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(stderr(&out).contains("run 1 ("), "{}", stderr(&out));
    let full = schedlab(&["sweep", "--jobs", "20", "--out", s(&dir)]);
    assert!(stderr(&full).contains("which no sweep writes"), "{}", stderr(&full));
}

/// examples/slurm-sweep.sh, run the way Slurm runs it (one shard per array task, then the
/// merge), gives the unsharded sweep.
#[test]
fn the_slurm_example_runs_its_shards_and_merges_them() {
    let dir = scratch("sweep", "slurm");
    let whole = dir.join("whole");
    sweep(&whole, &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/slurm-sweep.sh");
    let run = |args: &[&str], task: Option<&str>| {
        let mut cmd = Command::new("bash");
        cmd.arg(&script)
            .args(args)
            .env("SCHEDLAB", env!("CARGO_BIN_EXE_schedlab"))
            .env("SWEEP_OUT", dir.join("out"))
            .env("SHARDS", "2")
            .env("SWEEP_ARGS", SMALL.join(" "));
        if let Some(task) = task {
            cmd.env("SLURM_ARRAY_TASK_ID", task);
        }
        let out = cmd.output().expect("bash runs");
        assert!(out.status.success(), "{args:?} {task:?}: {}", stderr(&out));
    };
    run(&["shard"], Some("1"));
    run(&["shard"], Some("0"));
    run(&["merge"], None);
    assert_same_tree(&whole, &dir.join("out/merged"));
}

/// With the polars feature, sweep and merge also write sweep.parquet (sweep.csv's table, from
/// the same function for both): written, byte-identical with 1 and 4 threads, and shard +
/// merge reproduces it byte for byte. (The other tests' tree comparisons include it too, but
/// would pass just as well if it were never written.)
#[cfg(feature = "polars")]
#[test]
fn sweep_parquet_is_written_and_the_same_bytes_whatever_the_threads_or_shards() {
    let dir = scratch("sweep", "parquet");
    let (one, four, shard0, shard1, merged) =
        (dir.join("one"), dir.join("four"), dir.join("s0"), dir.join("s1"), dir.join("merged"));
    sweep(&one, &["--threads", "1"]);
    sweep(&four, &["--threads", "4"]);
    sweep(&shard0, &["--shard", "0/2", "--threads", "1"]);
    sweep(&shard1, &["--shard", "1/2", "--threads", "2"]);
    let out = schedlab(&["merge", s(&shard0), s(&shard1), "--out", s(&merged)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let parquet = |sweep: &Path| {
        let path = sweep.join("sweep.parquet");
        std::fs::read(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    };
    let bytes = parquet(&one);
    assert_eq!(&bytes[..4], b"PAR1", "not a Parquet file");
    assert!(bytes == parquet(&four), "sweep.parquet differs between 1 and 4 threads");
    assert!(bytes == parquet(&merged), "the merged sweep.parquet differs from the unsharded one");
    // A shard's own table holds its own runs.
    let shard_frame = reports::parquet::read_parquet(&shard0.join("sweep.parquet")).expect("the shard's Parquet reads");
    assert_eq!(shard_frame.height(), 3);
    // It is sweep.csv's table: the same columns, one row per run.
    let frame = reports::parquet::read_parquet(&one.join("sweep.parquet")).expect("the Parquet reads back");
    let csv = std::fs::read_to_string(one.join("sweep.csv")).unwrap();
    let header: Vec<&str> = csv.lines().next().unwrap().split(',').collect();
    let columns: Vec<&str> = frame.get_column_names().iter().map(|c| c.as_str()).collect();
    assert_eq!(columns, header);
    assert_eq!(frame.height(), 6);
    let digests = frame.column("digest").and_then(|c| c.str().cloned()).expect("a text digest column");
    for (i, line) in csv.lines().skip(1).enumerate() {
        assert_eq!(digests.get(i), line.rsplit(',').next(), "run {i}: the digest differs from sweep.csv's");
    }
}

/// Seeds that change nothing: on a trace without failures, the sweep says so before running,
/// records no setting of the built-in workload it did not run, refuses `--jobs`/`--load`, and
/// its report shows each metric as one value rather than a zero-width interval.
#[test]
fn a_sweep_over_seeds_that_change_nothing_says_so_and_reports_one_value() {
    let dir = scratch("sweep", "idle-seeds");
    let trace = head_of_line_trace(&dir);
    let out = dir.join("out");
    let args = ["sweep", "--trace", s(&trace), "--cluster", "1x4:A", "--policy", "fifo", "--seeds", "0..3"];
    let done = schedlab(&[&args[..], &["--out", s(&out)]].concat());
    assert!(done.status.success(), "{}", stderr(&done));
    assert!(
        stderr(&done).contains(
            "warning: --seeds 0..3: runs that differ only in their seed will be identical unless the policy draws \
             random numbers: the seed feeds"
        ),
        "{}",
        stderr(&done)
    );
    let settings = read_json(&out.join("sweep.json"))["settings"]["run"].clone();
    assert!(settings.get("jobs").is_none() && settings.get("load").is_none(), "{settings}");
    assert!(settings.get("cluster").is_some(), "{settings}");
    let refused = schedlab(&[&args[..], &["--load", "0.5"]].concat());
    assert!(!refused.status.success());
    assert!(stderr(&refused).contains("--load shapes the built-in synthetic workload, which --trace replaces"));

    let report = schedlab(&["report", s(&out)]);
    assert!(report.status.success(), "{}", stderr(&report));
    let html = std::fs::read_to_string(out.join("report.html")).unwrap();
    assert!(html.contains("(deterministic: one value)"), "no cell says its seeds agree");
    assert!(!html.contains("± 0.0 ") && !html.contains("± 0 <") && !html.contains("± 0.00 %"), "a zero-width interval");
}

/// The sweep's table prints times as `simulate` does (`1.7 min`, `8.26 d`), not raw seconds.
#[test]
fn the_sweep_table_prints_times_in_human_units() {
    let dir = scratch("sweep", "human-units");
    let trace = head_of_line_trace(&dir);
    let out = schedlab(&["sweep", "--trace", s(&trace), "--cluster", "1x4:A", "--policy", "fifo"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    // fifo on 4 GPUs: a 0..100, b 100..200, c 200..210: JCTs 100, 199, 208 s; mean 169 s, p99 208 s;
    // queueing 0, 99, 198 s: mean 99 s.
    let line = text.lines().find(|l| l.starts_with("jobs.csv")).unwrap_or_else(|| panic!("{text}"));
    let cells: Vec<&str> = line.split("  ").map(str::trim).filter(|c| !c.is_empty()).collect();
    assert_eq!(cells[3..6], ["2.8 min", "3.5 min", "99.0 s"], "{text}");
}

/// A sweep folder is reused as `simulate --out` reuses a run folder: an earlier sweep's files
/// are replaced whole; a folder holding anything else is refused unless --force, which writes
/// beside it and leaves it as it is.
#[test]
fn a_sweep_reuses_its_own_folder_and_force_writes_beside_other_files() {
    let dir = scratch("sweep", "reuse");
    let (reused, fresh) = (dir.join("reused"), dir.join("fresh"));
    sweep(&reused, &[]);
    let narrower = ["sweep", "--jobs", "200", "--load", "2", "--policy", "fifo", "--seeds", "0..2", "--out"];
    let again = schedlab(&[&narrower[..], &[s(&reused)]].concat());
    assert!(again.status.success(), "{}", stderr(&again));
    let first = schedlab(&[&narrower[..], &[s(&fresh)]].concat());
    assert!(first.status.success(), "{}", stderr(&first));
    assert_same_tree(&reused, &fresh);

    std::fs::write(reused.join("notes.txt"), "mine").unwrap();
    let refused = schedlab(&[&narrower[..], &[s(&reused)]].concat());
    assert_eq!(refused.status.code(), Some(2));
    let err = stderr(&refused);
    assert!(err.contains("notes.txt, which no sweep writes") && err.contains("--force"), "{err}");
    let forced = schedlab(&[&narrower[..], &[s(&reused), "--force"]].concat());
    assert!(forced.status.success(), "{}", stderr(&forced));
    assert_eq!(std::fs::read_to_string(reused.join("notes.txt")).unwrap(), "mine");
    std::fs::remove_file(reused.join("notes.txt")).unwrap();
    assert_same_tree(&reused, &fresh);
}

/// One sweep over traces of different clusters: each trace names its own after `@`, and each
/// run is on its trace's cluster (one sweep, one report, not one per trace).
#[test]
fn a_sweep_runs_each_trace_on_the_cluster_it_names() {
    let dir = scratch("sweep", "own-clusters");
    let trace = head_of_line_trace(&dir);
    let small = format!("{}@1x4:V100", s(&trace));
    let large = format!("{}@2x4:V100", s(&trace));
    let out = dir.join("out");
    let args = ["sweep", "--trace", &small, "--trace", &large, "--policy", "fifo", "--out", s(&out)];
    let result = schedlab(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    let gpus: Vec<u64> = run_dirs(&out)
        .iter()
        .map(|run| read_json(&out.join(run).join("summary.json"))["cluster_gpus"].as_u64().unwrap())
        .collect();
    assert_eq!(gpus, [4, 8]);
    let both = schedlab(&["sweep", "--trace", &small, "--cluster", "4x8", "--policy", "fifo"]);
    assert!(!both.status.success());
    assert!(stderr(&both).contains("its own cluster (after `@`) and --cluster"), "{}", stderr(&both));
}
