//! `schedlab report` through the binary: every chart present, numbers equal to summary.json,
//! byte-identical output, notes (not crashes) for older run folders, clear errors for bad
//! input, and the page rendered by headless Chromium with every chart and no console message.

mod common;

use common::{read_json, schedlab, scratch, stderr, stdout};
use std::path::{Path, PathBuf};

fn s(path: &Path) -> &str {
    path.to_str().expect("UTF-8 path")
}

/// 2 policies x 2 seeds of the built-in workload on 32 GPUs with node failures.
fn sweep(dir: &Path) -> PathBuf {
    let out = dir.join("sweep");
    let result = schedlab(&[
        "sweep",
        "--jobs",
        "120",
        "--load",
        "1.5",
        "--cluster",
        "4x8:V100",
        "--failures",
        "weibull:node_mtbf_h=20,repair_median_h=2",
        "--policy",
        "fifo",
        "--policy",
        "sjf",
        "--seeds",
        "0..2",
        "--out",
        s(&out),
    ]);
    assert!(result.status.success(), "sweep failed: {}", stderr(&result));
    out
}

/// The run folders of a sweep, from its sweep.json.
fn run_dirs(sweep: &Path) -> Vec<String> {
    read_json(&sweep.join("sweep.json"))["runs"]
        .as_array()
        .expect("runs")
        .iter()
        .map(|r| r["dir"].as_str().expect("dir").to_string())
        .collect()
}

/// Hand-written timeseries.csv, queue_timeseries.csv and tasks.csv in the schemas `simulate
/// --out` writes: 48 one-hour buckets on 32 GPUs, two queues, failures in buckets 10 and 30,
/// and one DAG job of four tasks (the last never ran).
fn write_fixtures(run: &Path) {
    let mut ts = String::from(
        "start_s,end_s,capacity_gpus,allocated_gpus,stalled_gpus,failed_gpus,waiting_tasks,running_tasks,arrivals,completions,failures,lost_gpu_h\n",
    );
    let mut qs = String::from("start_s,end_s,queue,allocated_gpus,waiting_tasks,running_tasks\n");
    for i in 0..48u32 {
        let (start, end) = (i * 3600, (i + 1) * 3600);
        let allocated = f64::from((i * 7) % 29 + 2);
        let failed = if (10..14).contains(&i) || (30..32).contains(&i) { 8 } else { 0 };
        let failures = u32::from(i == 10 || i == 30);
        let lost = if i == 11 || i == 31 { "2.5" } else { "0" };
        ts.push_str(&format!(
            "{start},{end},32,{allocated},0,{failed},{},{},3,2,{failures},{lost}\n",
            (i * 3) % 11,
            (i % 5) + 1
        ));
        qs.push_str(&format!("{start},{end},prod,{},1,1\n", allocated * 0.75));
        qs.push_str(&format!("{start},{end},research,{},2,1\n", allocated * 0.25));
    }
    std::fs::write(run.join("timeseries.csv"), ts).unwrap();
    std::fs::write(run.join("queue_timeseries.csv"), qs).unwrap();
    std::fs::write(
        run.join("tasks.csv"),
        "job_id,task_id,job_index,task_index,state,first_start_s,finish_s,gpus,depends_on\n\
         1,prep,1,0,succeeded,0.000,600.000,1,\n\
         1,train,1,1,succeeded,600.000,7800.500,8,prep\n\
         1,eval,1,2,failed,7800.500,9000.000,2,train\n\
         1,report,1,3,skipped,,,1,eval:any;prep\n\
         2,solo,2,4,succeeded,100.000,200.000,4,\n",
    )
    .unwrap();
}

fn report(dir: &Path, html: &Path, extra: &[&str]) -> String {
    let mut args = vec!["report", s(dir), "-o", s(html)];
    args.extend_from_slice(extra);
    let out = schedlab(&args);
    assert!(out.status.success(), "report failed: {}", stderr(&out));
    std::fs::read_to_string(html).expect("report written")
}

/// The chart ids of the page, from its figures.
fn figures(html: &str) -> Vec<String> {
    html.match_indices("<figure class=\"chart\"")
        .map(|(i, _)| attribute(&html[i..], "data-chart").expect("a figure names its chart"))
        .collect()
}

/// The first `name="value"` in `text`.
fn attribute(text: &str, name: &str) -> Option<String> {
    let start = text.find(&format!(" {name}=\""))? + name.len() + 3;
    let len = text[start..].find('"')?;
    Some(text[start..start + len].to_string())
}

/// (data-key, data-value, data-half-width) of each cell of the table row whose first cell is `first`.
fn row_values(html: &str, table: &str, first: &str) -> Vec<(String, String, Option<String>)> {
    let table_start = html.find(&format!("<table id=\"table-{table}\"")).unwrap_or_else(|| panic!("no table {table}"));
    let table_html = &html[table_start..table_start + html[table_start..].find("</table>").unwrap()];
    let row = table_html
        .split("<tr>")
        .find(|r| r.starts_with(&format!("<td>{first}</td>")))
        .unwrap_or_else(|| panic!("no row {first} in table {table}"));
    row.split("<td")
        .filter_map(|cell| {
            let cell = &cell[..cell.find('>')?];
            Some((attribute(cell, "data-key")?, attribute(cell, "data-value")?, attribute(cell, "data-half-width")))
        })
        .collect()
}

/// The charts a report of the fixture sweep (with `write_fixtures` in every run) must have, in
/// page order, written out here rather than read from any page.
fn fixture_charts() -> Vec<String> {
    let trace = "built-in-synthetic";
    let mut expected: Vec<String> =
        ["jct-cdf", "queueing-cdf", "utilisation", "queue-length"].iter().map(|c| format!("{c}-{trace}")).collect();
    expected.extend([
        format!("queue-share-{trace}-fifo"),
        format!("queue-share-{trace}-sjf"),
        format!("failures-{trace}"),
        format!("lost-gpu-hours-{trace}"),
        format!("gantt-{trace}"),
    ]);
    expected
}

#[test]
fn a_sweep_report_has_every_chart_and_no_network_reference() {
    let dir = scratch("report", "every_chart");
    let sweep = sweep(&dir);
    for run in run_dirs(&sweep) {
        write_fixtures(&sweep.join(run));
    }
    let html = report(&sweep, &dir.join("report.html"), &[]);
    assert_eq!(figures(&html), fixture_charts());
    // Every chart has its title, axis labels and (several series) a legend inside its SVG.
    for (title, texts) in [
        ("Job completion time CDF", vec!["fraction of finished jobs", "JCT (log scale)", "fifo", "sjf"]),
        ("GPU utilisation over time", vec!["allocated GPUs (% of cluster)", "time since the first submission (h)"]),
        ("GPU share per queue", vec!["share of cluster GPUs (%)", "prod", "research"]),
        ("DAG job 1", vec!["train (8 GPUs)", "prep (1 GPU)", "succeeded", "failed", "task (GPUs)"]),
    ] {
        let start = html.find(&format!("aria-label=\"{title}")).unwrap_or_else(|| panic!("no chart {title}"));
        let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
        for text in texts {
            assert!(svg.contains(text), "chart {title} lacks `{text}`");
        }
    }
    // The page opens with the verdict: one line per question, before the summary tables.
    let verdict = html.find("<section id=\"verdict\">").expect("a verdict section");
    assert!(verdict < html.find("<section id=\"summary\">").expect("a summary section"), "the verdict comes first");
    for question in ["Mean JCT: ", "Tail JCT (p99): ", "Waiting: ", "Utilisation: ", "Fairness: ", "Preemption cost: "]
    {
        assert!(html[verdict..].contains(&format!("<li>{question}")), "no verdict on {question}");
    }
    // Self-contained: nothing that loads from anywhere.
    for needle in ["http://", "https://", "src=", "href=\"//", "@import", "@font-face", "url("] {
        assert!(!html.contains(needle), "the page contains `{needle}`");
    }
    assert!(html.contains("Content-Security-Policy"));
}

#[test]
fn numbers_in_the_page_equal_summary_json() {
    let dir = scratch("report", "numbers");
    let sweep = sweep(&dir);
    let html = report(&sweep, &dir.join("report.html"), &[]);
    let mut checked = 0;
    let mut per_policy: std::collections::BTreeMap<String, Vec<f64>> = Default::default();
    for run in run_dirs(&sweep) {
        let summary = read_json(&sweep.join(&run).join("summary.json"));
        let values = row_values(&html, "runs", &run);
        assert_eq!(values.len(), 9, "{run}: {values:?}");
        for (key, value, _) in values {
            match &summary[&key] {
                serde_json::Value::String(text) => assert_eq!(&value, text, "{run} {key}"),
                number => assert_eq!(value.parse::<f64>().unwrap(), number.as_f64().unwrap(), "{run} {key}"),
            }
            checked += 1;
        }
        let spec = if run.contains("fifo") { "fifo" } else { "sjf" };
        per_policy.entry(spec.to_string()).or_default().push(summary["mean_jct_s"].as_f64().unwrap());
    }
    assert_eq!(checked, 4 * 9);
    // The summary table: mean over seeds and its Student-t half-width, recomputed here.
    for (spec, jcts) in per_policy {
        let summary_row = row_values(&html, "summary-built-in-synthetic", "mean JCT (lower)");
        let column = if spec == "fifo" { 0 } else { 1 };
        let (key, mean, half_width) = &summary_row[column];
        assert_eq!(key, "mean_jct_s");
        let expected_mean = (jcts[0] + jcts[1]) / 2.0;
        assert!((mean.parse::<f64>().unwrap() - expected_mean).abs() <= 1e-9 * expected_mean, "{spec}");
        let sd = (jcts[0] - jcts[1]).abs() / 2f64.sqrt();
        let expected_hw = 12.706 * sd / 2f64.sqrt();
        let hw: f64 = half_width.as_ref().expect("n = 2 has an interval").parse().unwrap();
        assert!((hw - expected_hw).abs() <= 1e-9 * expected_hw.max(1.0), "{spec}: {hw} vs {expected_hw}");
    }
}

#[test]
fn the_same_input_gives_the_same_bytes() {
    let dir = scratch("report", "bytes");
    let sweep = sweep(&dir);
    let first_run = sweep.join(&run_dirs(&sweep)[0]);
    write_fixtures(&first_run);
    let a = report(&sweep, &dir.join("a.html"), &["--svg", s(&dir.join("svg-a")), "--png", s(&dir.join("png-a"))]);
    let b = report(&sweep, &dir.join("b.html"), &["--svg", s(&dir.join("svg-b")), "--png", s(&dir.join("png-b"))]);
    assert!(a == b, "two reports of one sweep differ");
    for kind in ["svg", "png"] {
        let list = |side: &str| {
            let mut names: Vec<_> = std::fs::read_dir(dir.join(format!("{kind}-{side}")))
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            names.sort();
            names
        };
        let names = list("a");
        assert_eq!(names, list("b"));
        assert_eq!(names.len(), figures(&a).len(), "one {kind} file per chart");
        for name in names {
            let read = |side: &str| std::fs::read(dir.join(format!("{kind}-{side}")).join(&name)).unwrap();
            assert!(read("a") == read("b"), "{name} differs");
            if kind == "png" {
                assert_eq!(&read("a")[1..4], b"PNG");
            }
        }
    }
}

#[test]
fn a_run_folder_without_the_newer_files_gets_notes_not_a_crash() {
    let dir = scratch("report", "older");
    let run = dir.join("run");
    let out = schedlab(&["simulate", "--jobs", "60", "--out", s(&run)]);
    assert!(out.status.success(), "{}", stderr(&out));
    for file in ["timeseries.csv", "queue_timeseries.csv", "tasks.csv"] {
        let _ = std::fs::remove_file(run.join(file));
    }
    let html = report(&run, &dir.join("report.html"), &[]);
    assert_eq!(figures(&html), ["jct-cdf-run", "queueing-cdf-run"]);
    for file in ["timeseries.csv", "queue_timeseries.csv"] {
        assert!(html.contains(&format!("no {file} in the run folder")), "no note about {file}");
    }
    // The built-in workload has no DAG jobs, so simulate writes no tasks.csv at all: its
    // absence is no reason to re-run, and there is no DAG section to say there is nothing.
    assert!(!html.contains("<section id=\"dag\">"), "a DAG section without DAG jobs");
    assert!(!html.contains("no tasks.csv"), "a note blames a tasks.csv that simulate never writes here");
    // The single run's summary table: the value, no interval.
    let values = row_values(&html, "summary-run", "mean JCT (lower)");
    let summary = read_json(&run.join("summary.json"));
    assert_eq!(values[0].1.parse::<f64>().unwrap(), summary["mean_jct_s"].as_f64().unwrap());
    assert_eq!(values[0].2, None);
    // Written beside the run by default.
    let out = schedlab(&["report", s(&run)]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("report.html"));
    assert!(run.join("report.html").is_file());
}

#[test]
fn bad_input_is_an_error_naming_file_line_and_field() {
    let dir = scratch("report", "bad");
    let run = dir.join("run");
    assert!(schedlab(&["simulate", "--jobs", "30", "--out", s(&run)]).status.success());
    write_fixtures(&run);
    let ts = std::fs::read_to_string(run.join("timeseries.csv")).unwrap();
    let mut lines: Vec<String> = ts.lines().map(str::to_string).collect();
    let mut fields: Vec<&str> = lines[2].split(',').collect();
    fields[3] = "lots";
    lines[2] = fields.join(",");
    std::fs::write(run.join("timeseries.csv"), lines.join("\n")).unwrap();
    let out = schedlab(&["report", s(&run), "-o", s(&dir.join("r.html"))]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("timeseries.csv:3: field `allocated_gpus`: expected a number, got `lots`"),
        "{}",
        stderr(&out)
    );
    std::fs::write(run.join("jobs.csv"), "job_id,queue\n1,a\n").unwrap();
    let out = schedlab(&["report", s(&run), "-o", s(&dir.join("r.html"))]);
    assert!(stderr(&out).contains("jobs.csv:1: no `jct_s` column"), "{}", stderr(&out));
    let out = schedlab(&["report", s(&dir), "-o", s(&dir.join("r.html"))]);
    assert!(stderr(&out).contains("neither a run folder"), "{}", stderr(&out));
    assert!(!dir.join("r.html").exists());
}

// ---- headless Chromium ----

/// The browser, or None (saying SKIPPED) when it is not installed. `.ci/run` installs it and
/// sets `SCHEDLAB_REQUIRE_CHROMIUM=1`, so that in CI a missing browser fails the test instead
/// of passing it having checked nothing.
fn chromium() -> Option<PathBuf> {
    let found = ["/usr/bin/chromium", "/usr/bin/chromium-browser"].iter().map(PathBuf::from).find(|p| p.is_file());
    if found.is_none() {
        assert!(
            std::env::var_os("SCHEDLAB_REQUIRE_CHROMIUM").is_none_or(|v| v != "1"),
            "chromium not found (apt-get install -y chromium) and SCHEDLAB_REQUIRE_CHROMIUM=1 requires it"
        );
        eprintln!("SKIPPED: chromium not found (apt-get install -y chromium); this test checked nothing");
    }
    found
}

/// What headless Chromium made of a page: the render check's attributes and the console lines.
struct Rendered {
    status: String,
    expected: usize,
    rendered: Vec<String>,
    missing: Vec<String>,
    console: Vec<String>,
}

fn render(browser: &Path, html: &Path, profile: &Path) -> Rendered {
    let _ = std::fs::remove_dir_all(profile);
    let out = std::process::Command::new("timeout")
        .arg("120")
        .arg(browser)
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--enable-logging=stderr",
            "--v=0",
        ])
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg("--dump-dom")
        .arg(format!("file://{}", html.canonicalize().unwrap().display()))
        .output()
        .expect("chromium runs");
    let dom = stdout(&out);
    assert!(out.status.success(), "chromium failed: {}", stderr(&out));
    let marker_at = dom.find("id=\"render-check\"").unwrap_or_else(|| panic!("no render check in the DOM:\n{dom}"));
    let marker = &dom[dom[..marker_at].rfind('<').unwrap()..marker_at + dom[marker_at..].find('>').unwrap()];
    let list = |name: &str| -> Vec<String> {
        attribute(marker, name).unwrap_or_default().split_whitespace().map(str::to_string).collect()
    };
    Rendered {
        status: attribute(marker, "data-status").unwrap_or_else(|| panic!("the check did not run: {marker}")),
        expected: attribute(marker, "data-expected").and_then(|n| n.parse().ok()).unwrap_or(0),
        rendered: list("data-rendered"),
        missing: list("data-missing"),
        console: stderr(&out).lines().filter(|l| l.contains("CONSOLE")).map(str::to_string).collect(),
    }
}

/// A report of the fixture sweep, for the browser tests.
fn browser_report(name: &str) -> (PathBuf, String) {
    let dir = scratch("report", name);
    let sweep = sweep(&dir);
    for run in run_dirs(&sweep) {
        write_fixtures(&sweep.join(run));
    }
    let html = report(&sweep, &dir.join("report.html"), &[]);
    (dir, html)
}

#[test]
fn chromium_renders_every_chart_without_console_messages() {
    let Some(browser) = chromium() else { return };
    let (dir, html) = browser_report("chromium_ok");
    let page = render(&browser, &dir.join("report.html"), &dir.join("profile"));
    // The charts the report builder drew for this input (not only the page's own figures, so
    // that a chart the page lost is caught too), which must also be the fixture's full list.
    let input = reports::report::load(&dir.join("sweep")).expect("the sweep loads");
    let drawn: Vec<String> = reports::report::build(&input).charts().map(|c| c.id.clone()).collect();
    assert_eq!(drawn, fixture_charts());
    assert_eq!(page.status, "ok", "missing: {:?}", page.missing);
    assert_eq!(page.expected, drawn.len());
    assert_eq!(page.rendered, drawn);
    assert_eq!(figures(&html), drawn);
    assert!(page.console.is_empty(), "console: {:#?}", page.console);
}

#[test]
fn chromium_check_fails_when_a_chart_is_missing_or_the_page_errs() {
    let Some(browser) = chromium() else { return };
    let (dir, html) = browser_report("chromium_missing");
    // Delete the second chart's figure.
    let victim = figures(&html)[1].clone();
    let start = html.find(&format!("<figure class=\"chart\" id=\"chart-{victim}\"")).unwrap();
    let end = start + html[start..].find("</figure>").unwrap() + "</figure>".len();
    let broken = format!("{}{}", &html[..start], &html[end..]);
    std::fs::write(dir.join("missing.html"), &broken).unwrap();
    let page = render(&browser, &dir.join("missing.html"), &dir.join("profile"));
    assert_eq!(page.status, "missing");
    assert_eq!(page.missing, std::slice::from_ref(&victim));
    assert!(!page.rendered.contains(&victim));
    // A script error and an outside reference (refused by the page's security policy, so
    // nothing is fetched) both reach the console.
    let erring = html.replacen(
        "<main>",
        "<main><script>no_such_function();</script><img src=\"file:///schedlab-no-such-image.png\">",
        1,
    );
    std::fs::write(dir.join("erring.html"), erring).unwrap();
    let page = render(&browser, &dir.join("erring.html"), &dir.join("profile"));
    assert!(page.console.iter().any(|l| l.contains("no_such_function")), "console: {:#?}", page.console);
    assert!(page.console.iter().any(|l| l.contains("schedlab-no-such-image")), "console: {:#?}", page.console);
}

#[test]
fn parquet_output_needs_the_polars_feature() {
    let dir = scratch("report", "parquet");
    let sweep = sweep(&dir);
    let parquet = dir.join("sweep.parquet");
    let out = schedlab(&["report", s(&sweep), "-o", s(&dir.join("r.html")), "--parquet", s(&parquet)]);
    if cfg!(feature = "polars") {
        assert!(out.status.success(), "{}", stderr(&out));
        let bytes = std::fs::read(&parquet).expect("sweep.parquet written");
        assert_eq!(&bytes[..4], b"PAR1");
        assert!(stdout(&out).contains("(4 runs)"), "{}", stdout(&out));
    } else {
        assert_eq!(out.status.code(), Some(2));
        assert!(stderr(&out).contains("--parquet needs schedlab built with the polars feature"), "{}", stderr(&out));
        assert!(!parquet.exists());
    }
}

#[test]
fn a_dag_trace_gets_a_gantt_chart_from_simulate_output() {
    let dir = scratch("report", "dag");
    let trace = dir.join("dag.csv");
    let mut text = String::from("job_id,task_id,submit_s,duration_s,gpus,depends_on\n");
    for j in 0..3 {
        let submit = j * 600;
        text.push_str(&format!("small{j},prep,{submit},60,1,\n"));
        text.push_str(&format!("small{j},train,{submit},600,2,prep\n"));
    }
    // The largest DAG job: four tasks, a conditional branch that is skipped.
    text.push_str("big,data,100,300,1,\nbig,train,100,3600,4,data\nbig,alert,100,60,1,train:failure\n");
    text.push_str("big,report,100,60,1,train;data\n");
    std::fs::write(&trace, text).unwrap();
    let run = dir.join("run");
    let out = schedlab(&["simulate", "--trace", s(&trace), "--cluster", "1x8:A100", "--out", s(&run)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = report(&run, &dir.join("report.html"), &[]);
    assert!(figures(&html).contains(&"gantt-run".to_string()), "{:?}", figures(&html));
    assert!(!html.contains("no tasks.csv"));
    let start = html.find("aria-label=\"DAG job big").expect("the Gantt chart of job big");
    let svg = &html[start..start + html[start..].find("</svg>").unwrap()];
    for text in ["data (1 GPU)", "train (4 GPUs)", "alert (1 GPU)", "report (1 GPU)", "skipped", "succeeded"] {
        assert!(svg.contains(text), "the Gantt chart lacks `{text}`");
    }
    assert!(html.contains("4 tasks; 1 never ran (no bar)"), "caption");
}

/// A lone run's report names its run (the folder) and policy, not "run" and "policies across
/// seeds"; the runs table shows a few columns by default, the rest on demand.
#[test]
fn a_lone_runs_report_names_its_run_and_policy_and_keeps_the_runs_table_narrow() {
    let dir = scratch("report", "named");
    let run = dir.join("philly-sjf");
    let out = schedlab(&["simulate", "--jobs", "60", "--policy", "sjf", "--out", s(&run)]);
    assert!(out.status.success(), "{}", stderr(&out));
    let html = report(&run, &dir.join("report.html"), &[]);
    let policy = "sjf[duration=oracle,placement=pack,avoid_failed_h=0]";
    for expected in [
        format!("Job completion time CDF · philly-sjf · {policy}"),
        format!("philly-sjf · {policy}: the run&#39;s metrics"),
    ] {
        assert!(html.contains(&expected), "no `{expected}`");
    }
    assert!(!html.contains("policies across seeds") && !html.contains("· run<"), "a lone run called `run`");
    let table_start = html.find("<table id=\"table-runs\"").expect("a runs table");
    let table = &html[table_start..table_start + html[table_start..].find("</table>").unwrap()];
    let header = &table[..table.find("</tr>").unwrap()];
    let columns: Vec<&str> = header.split("<th").skip(1).collect();
    let more = columns.iter().filter(|th| th.split('>').next().unwrap_or("").contains("more")).count();
    let all = columns.len();
    assert!(all - more <= 7, "{} columns shown by default: {header}", all - more);
    assert!(more >= 5, "the other columns are there, on demand: {header}");
    assert!(html.contains("all columns"), "no way to show the rest");
}
