//! `schedlab regress` end to end, through the binary: bless, check, catch a worse policy, a
//! digest change, moved runs; tolerances, strictness, and errors that name the spec's key.

mod common;

use common::{schedlab, scratch, stderr, stdout};
use std::path::Path;
use std::process::{Command, Output};

/// Writes `text` as `name` in `dir` and returns its path as a string.
fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).expect("write file");
    path.display().to_string()
}

/// `schedlab regress --spec SPEC --baseline BASELINE [extra...]`.
fn regress(spec: &str, baseline: &str, extra: &[&str]) -> Output {
    let mut args = vec!["regress", "--spec", spec, "--baseline", baseline];
    args.extend(extra);
    schedlab(&args)
}

/// The exit code, with the output in the message when it is not `expected`.
fn assert_exit(out: &Output, expected: i32) {
    assert_eq!(out.status.code(), Some(expected), "stdout:\n{}\nstderr:\n{}", stdout(out), stderr(out));
}

/// A small sweep where queues form (so policies differ): 200 built-in jobs on 32 GPUs.
/// `policy` is the spec the baseline entry `candidate` runs; `extra` is appended.
fn spec(policy: &str, extra: &str) -> String {
    format!(
        "cluster = \"4x8:V100\"\njobs = 200\nseeds = [1, 2]\n\
         policies = [\"sjf\", {{ name = \"candidate\", spec = \"{policy}\" }}]\n{extra}"
    )
}

/// The lines of the diff table about `metric` of `run`.
fn rows<'a>(text: &'a str, run: &str, metric: &str) -> Vec<&'a str> {
    text.lines()
        .filter(|l| {
            let cells: Vec<&str> = l.split_whitespace().collect();
            cells.first() == Some(&run) && cells.get(1) == Some(&metric)
        })
        .collect()
}

#[test]
fn bless_then_check_passes_and_the_baseline_is_stable() {
    let dir = scratch("regress", "bless");
    let spec = write(&dir, "regress.toml", &spec("fifo", ""));
    let baseline = dir.join("baseline.json").display().to_string();

    let out = regress(&spec, &baseline, &[]);
    assert_exit(&out, 2);
    assert!(stderr(&out).contains("--bless"), "a missing baseline says how to make one: {}", stderr(&out));

    let out = regress(&spec, &baseline, &["--bless"]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("new run") && stdout(&out).contains("blessed: wrote"), "{}", stdout(&out));
    let text = std::fs::read_to_string(&baseline).expect("baseline written");
    assert!(!text.contains("wall_s"), "the baseline holds no wall time");
    let json: serde_json::Value = serde_json::from_str(&text).expect("valid JSON");
    let runs = json["runs"].as_array().expect("runs");
    assert_eq!(runs.len(), 4, "2 policies x 2 seeds");
    assert_eq!(runs[0]["policy"], "candidate", "runs in key order");
    assert!(runs[0]["metrics"]["mean_jct_s"].as_f64().is_some_and(|v| v > 0.0));
    assert!(runs[0]["digest"].as_str().is_some_and(|d| d.len() == 16));

    let out = regress(&spec, &baseline, &[]);
    assert_exit(&out, 0);
    assert!(stdout(&out).contains("PASSED"), "{}", stdout(&out));
    assert!(stdout(&out).contains("0 REGRESSED"), "{}", stdout(&out));

    // Blessing again on one thread writes the same bytes.
    let again = dir.join("again.json").display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_schedlab"))
        .args(["regress", "--spec", &spec, "--baseline", &again, "--bless"])
        .env("RAYON_NUM_THREADS", "1")
        .output()
        .expect("schedlab runs");
    assert_exit(&out, 0);
    assert_eq!(std::fs::read_to_string(&again).expect("written"), text, "baseline bytes depend on threads");
}

#[test]
fn a_worsened_fifo_fails_with_the_metric_named_and_passes_after_bless() {
    let dir = scratch("regress", "worse");
    let good = write(&dir, "good.toml", &spec("fifo", ""));
    let worse = write(&dir, "worse.toml", &spec("fifo-idle[every=3]", ""));
    let baseline = dir.join("baseline.json").display().to_string();
    assert_exit(&regress(&good, &baseline, &["--bless"]), 0);

    let out = regress(&worse, &baseline, &[]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    let run = "main/builtin/candidate/1";
    for metric in ["mean_jct_s", "utilisation"] {
        let lines = rows(&text, run, metric);
        assert!(lines.len() == 1 && lines[0].ends_with("REGRESSED"), "{metric} of {run} not REGRESSED:\n{text}");
    }
    assert!(rows(&text, run, "digest")[0].ends_with("digest changed"), "{text}");
    assert!(rows(&text, "main/builtin/sjf/1", "digest").is_empty(), "an unchanged run is not listed:\n{text}");
    assert!(text.contains("FAILED") && text.contains("--bless"), "{text}");

    // Bless accepts it (and says what changed); then the worse policy is the baseline.
    let out = regress(&worse, &baseline, &["--bless"]);
    assert_exit(&out, 0);
    assert!(!rows(&stdout(&out), run, "mean_jct_s").is_empty(), "bless prints what changed:\n{}", stdout(&out));
    assert_exit(&regress(&worse, &baseline, &[]), 0);
    // ... and going back to plain fifo is an improvement of JCT, yet the digest still fails.
    let out = regress(&good, &baseline, &[]);
    assert_exit(&out, 1);
    assert!(rows(&stdout(&out), run, "mean_jct_s")[0].ends_with("improved"), "{}", stdout(&out));
}

/// Blesses `spec("fifo")`, then scales `mean_jct_s` of every baseline run by `factor`, as if
/// the metric's definition had changed while the decisions (and digests) had not.
fn blessed_with_scaled_jct(dir: &Path, factor: f64) -> String {
    let spec = write(dir, "bless.toml", &spec("fifo", ""));
    let baseline = dir.join("baseline.json").display().to_string();
    assert_exit(&regress(&spec, &baseline, &["--bless"]), 0);
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).expect("baseline")).expect("JSON");
    for run in json["runs"].as_array_mut().expect("runs") {
        let jct = run["metrics"]["mean_jct_s"].as_f64().expect("a number");
        run["metrics"]["mean_jct_s"] = serde_json::json!(jct * factor);
    }
    std::fs::write(&baseline, serde_json::to_string_pretty(&json).expect("JSON")).expect("write");
    baseline
}

#[test]
fn a_wide_enough_tolerance_lets_a_small_change_pass() {
    let dir = scratch("regress", "tolerance");
    // Now is 1 % above the baseline: worse JCT.
    let baseline = blessed_with_scaled_jct(&dir, 1.0 / 1.01);
    let check = |name: &str, tolerance: &str| {
        let spec = write(&dir, name, &spec("fifo", tolerance));
        regress(&spec, &baseline, &[])
    };
    let out = check("exact.toml", "");
    assert_exit(&out, 1);
    assert!(rows(&stdout(&out), "main/builtin/sjf/1", "mean_jct_s")[0].ends_with("REGRESSED"), "{}", stdout(&out));
    assert!(stdout(&out).contains("(+1 %)"), "the change is shown: {}", stdout(&out));

    let out = check("narrow.toml", "[tolerance]\nmean_jct_s = { relative = 0.005 }\n");
    assert_exit(&out, 1);

    let out = check("wide.toml", "[tolerance]\ndefault = { relative = 0.0 }\nmean_jct_s = { relative = 0.02 }\n");
    assert_exit(&out, 0);
    let text = stdout(&out);
    assert!(rows(&text, "main/builtin/sjf/1", "mean_jct_s")[0].ends_with("ok"), "moved but ok, and shown:\n{text}");

    // An absolute allowance of a few seconds is not enough for 1 % of a JCT of hours.
    let out = check("absolute.toml", "[tolerance]\nmean_jct_s = { absolute = 5 }\n");
    assert_exit(&out, 1);
}

#[test]
fn an_improvement_passes_unless_strict() {
    let dir = scratch("regress", "strict");
    // Now is 1 % below the baseline: better JCT.
    let baseline = blessed_with_scaled_jct(&dir, 1.01);
    let out = regress(&write(&dir, "lenient.toml", &spec("fifo", "")), &baseline, &[]);
    assert_exit(&out, 0);
    assert!(rows(&stdout(&out), "main/builtin/sjf/2", "mean_jct_s")[0].ends_with("improved"), "{}", stdout(&out));
    let out = regress(&write(&dir, "strict.toml", &spec("fifo", "strict = true\n")), &baseline, &[]);
    assert_exit(&out, 1);
    assert!(stdout(&out).contains("IMPROVED (strict)"), "{}", stdout(&out));
}

#[test]
fn a_digest_change_fails_whatever_the_tolerances() {
    let dir = scratch("regress", "digest");
    let loose = "[tolerance]\ndefault = { relative = 1e9, absolute = 1e9 }\n";
    let baseline = dir.join("baseline.json").display().to_string();
    assert_exit(&regress(&write(&dir, "before.toml", &spec("fifo", loose)), &baseline, &["--bless"]), 0);

    let changed = write(&dir, "after.toml", &spec("fifo[placement=spread]", loose));
    let out = regress(&changed, &baseline, &[]);
    assert_exit(&out, 1);
    let text = stdout(&out);
    assert!(rows(&text, "main/builtin/candidate/1", "digest")[0].ends_with("digest changed"), "{text}");
    assert!(text.contains("0 REGRESSED, 0 CHANGED"), "metrics are within the loose tolerances:\n{text}");

    // A hand-edited digest in the baseline is caught the same way.
    let text = std::fs::read_to_string(&baseline).expect("baseline");
    let json: serde_json::Value = serde_json::from_str(&text).expect("JSON");
    let digest = json["runs"][3]["digest"].as_str().expect("digest").to_string();
    std::fs::write(&baseline, text.replace(&digest, "0000000000000000")).expect("write");
    let out = regress(&write(&dir, "same.toml", &spec("fifo", loose)), &baseline, &[]);
    assert_exit(&out, 1);
    assert!(stdout(&out).contains("1 digest changed"), "{}", stdout(&out));
}

#[test]
fn new_and_missing_runs_fail() {
    let dir = scratch("regress", "runs");
    let baseline = dir.join("baseline.json").display().to_string();
    let one = "cluster = \"4x8:V100\"\njobs = 100\npolicies = [\"fifo\"]\n";
    assert_exit(&regress(&write(&dir, "a.toml", &format!("{one}seeds = [1]\n")), &baseline, &["--bless"]), 0);
    let out = regress(&write(&dir, "b.toml", &format!("{one}seeds = [1, 2]\n")), &baseline, &[]);
    assert_exit(&out, 1);
    assert!(rows(&stdout(&out), "main/builtin/fifo/2", "-")[0].ends_with("new run"), "{}", stdout(&out));
    let out = regress(&write(&dir, "c.toml", &format!("{one}seeds = [2]\n")), &baseline, &[]);
    assert_exit(&out, 1);
    assert!(rows(&stdout(&out), "main/builtin/fifo/1", "-")[0].ends_with("missing run"), "{}", stdout(&out));
}

#[test]
fn sweeps_inherit_settings_and_paths_start_at_the_spec() {
    let dir = scratch("regress", "sweeps");
    write(&dir, "jobs.csv", "job_id,submit_s,duration_s,gpus\n1,0,3600,8\n2,10,600,4\n3,20,60,8\n4,30,1200,2\n");
    let spec = write(
        &dir,
        "regress.toml",
        "cluster = \"2x8:V100\"\nseeds = [1]\npolicies = [\"fifo\", \"sjf\"]\ntraces = [\"jobs.csv\"]\n\
         [[sweep]]\nname = \"failing\"\nfailures = \"weibull:node_mtbf_h=0.5,repair_median_h=0.1\"\n\
         checkpoint_s = 300\npolicies = [\"fifo\"]\n",
    );
    let baseline = dir.join("baseline.json").display().to_string();
    assert_exit(&regress(&spec, &baseline, &["--bless"]), 0);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&baseline).expect("baseline")).expect("JSON");
    let runs = json["runs"].as_array().expect("runs");
    let keys: Vec<String> = runs.iter().map(|r| format!("{}/{}/{}", r["sweep"], r["trace"], r["policy"])).collect();
    assert_eq!(
        keys,
        ["\"failing\"/\"jobs.csv\"/\"fifo\"", "\"main\"/\"jobs.csv\"/\"fifo\"", "\"main\"/\"jobs.csv\"/\"sjf\""]
    );
    assert_eq!(runs[0]["metrics"]["cluster_gpus"], 16, "the sweep inherits the cluster");
    assert_eq!(runs[1]["metrics"]["jobs"], 4, "the trace next to the spec was read");
    assert!(runs[0]["metrics"]["failures"].as_u64().is_some_and(|f| f > 0), "the failing sweep has failures");
    assert_eq!(runs[1]["metrics"]["failures"], 0, "the main sweep has none");
    assert_exit(&regress(&spec, &baseline, &["--all"]), 0);
}

#[test]
fn a_malformed_spec_is_an_error_naming_the_key() {
    let dir = scratch("regress", "malformed");
    let baseline = dir.join("baseline.json").display().to_string();
    // Every case is a whole spec (jobs = 50, seeds = [1] unless the case is about them).
    let ok = "jobs = 50\nseeds = [1]\n";
    let cases: Vec<(String, &str)> = vec![
        (format!("{ok}polices = [\"fifo\"]\n"), "`polices`"),
        ("seeds = [1]\npolicies = [\"fifo\"]\njobs = \"many\"\n".into(), "`jobs`"),
        (format!("{ok}policies = [\"fifo\"]\nload = [0.9]\n"), "`load`"),
        ("jobs = 50\npolicies = [\"fifo\"]\nseeds = [-1]\n".into(), "`seeds`"),
        (format!("{ok}policies = [\"fifo\"]\n[tolerance]\nmean_jct_s = {{ relatve = 0.1 }}\n"), "`relatve`"),
        (format!("{ok}policies = [\"fifo\"]\n[tolerance]\nmean_jtc_s = {{ relative = 0.1 }}\n"), "`mean_jtc_s`"),
        (
            format!("{ok}policies = [\"fifo\"]\n[tolerance]\nmean_jct_s = {{ relative = -1 }}\n"),
            "`tolerance.mean_jct_s.relative`",
        ),
        (
            format!("{ok}policies = [\"fifo\"]\n[tolerance]\nutilisation = {{ better = \"up\" }}\n"),
            "`tolerance.utilisation.better`",
        ),
        (
            format!("{ok}policies = [\"fifo\"]\n[[sweep]]\nname = \"x\"\nfailure = \"weibull:node_mtbf_h=1\"\n"),
            "`failure`",
        ),
        (format!("{ok}policies = [\"fifo\"]\n[[sweep]]\nfailures = \"weibull:node_mtbf_h=1\"\n"), "`name`"),
        (format!("{ok}policies = [{{ name = \"a\" }}]\n"), "`spec`"),
        (format!("{ok}policies = [\"fifo\", \"fifo\"]\n"), "`policies`"),
        (format!("{ok}policies = [\"fifio\"]\n"), "unknown policy `fifio`"),
        (format!("{ok}policies = [\"fifo\"]\ncluster = \"4y8:V100\"\n"), "run main/builtin/fifo/1: cluster `4y8:V100`"),
        (format!("{ok}policies = [\"fifo\"\n"), "line 3"),
    ];
    for (i, (body, needle)) in cases.iter().enumerate() {
        let spec = write(&dir, &format!("case{i}.toml"), body);
        let out = regress(&spec, &baseline, &["--bless"]);
        assert_exit(&out, 2);
        let err = stderr(&out);
        assert!(err.contains(needle), "case {i} ({body:?}): the error does not name {needle}:\n{err}");
        assert!(err.contains(&spec), "case {i}: the error names the spec file:\n{err}");
        assert!(!Path::new(&baseline).exists(), "case {i}: no baseline written on a bad spec");
    }
}

#[test]
fn the_projects_own_regression_check_passes() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let out = schedlab(&[
        "regress",
        "--spec",
        &root.join("regress/regress.toml").display().to_string(),
        "--baseline",
        &root.join("regress/baseline.json").display().to_string(),
    ]);
    assert!(
        out.status.success(),
        "the committed baseline no longer matches; if intended, run\n  \
         cargo run --release -- regress --spec regress/regress.toml --baseline regress/baseline.json --bless\n{}",
        stdout(&out)
    );
}
