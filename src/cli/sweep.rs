//! `schedlab sweep`: traces x policies (x parameter grids) x seeds, each run exactly as
//! `simulate` would run it, in parallel across runs (never inside one).
//!
//! Runs are numbered in a fixed order: trace (as given), then policy (as given, each expanded
//! by the grid, first grid key outermost), then seed. `--shard I/N` runs those whose number
//! % N == I. Every file a sweep writes depends only on its inputs, never on the thread count
//! or on which machine ran which shard; the one exception, wall-clock time, goes to wall.csv.

use super::{CliResult, emit};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Args, Command, FromArgMatches};
use indicatif::{ProgressBar, ProgressStyle};
use policies::{PolicySpec, Registry};
use rayon::prelude::*;
use reports::Summary;
use reports::sweep::{SYNTHETIC_TRACE, Shard, SweepManifest, SweepRun, SweepSettings};
use run::{GRID_KEYS, Keep, RunSpec, Runner};
use std::fs::{self, File};
use std::io::{BufWriter, IsTerminal};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

/// The most runs one sweep may plan (a typo such as `--seeds 0..1000000000` is refused).
const MAX_RUNS: usize = 1_000_000;

/// The sweep's command line: every `simulate` run flag (with `--trace` and `--policy`
/// repeatable and `--seed` replaced by `--seeds`), and the sweep's own flags.
pub struct SweepArgs {
    /// The shared run settings; trace, policy and seed are set per run.
    run: RunSpec,
    traces: Vec<PathBuf>,
    policies: Vec<String>,
    seed_given: bool,
    /// The flags of the built-in workload the user typed (`jobs`, `load`).
    synthetic_typed: Vec<&'static str>,
    own: SweepOwnArgs,
}

#[derive(Args)]
struct SweepOwnArgs {
    /// Seeds: a range START..END (END excluded: 0..5 is 0 to 4), START..=END, or a list 1,4,9.
    #[arg(long, default_value = "0", value_name = "RANGE|LIST")]
    seeds: String,
    /// Parameter grid KEY=V1|V2|... (repeatable): every policy that takes KEY runs once per
    /// value (several keys multiply). KEY may also be a run setting: checkpoint_s,
    /// checkpoint_cost_s, restart_overhead_s, pass_interval_s, release_latency_s, spare_nodes
    /// or max_retries (every run, once per value, in place of the flag's). A key that neither
    /// names is an error.
    #[arg(long, value_name = "KEY=V1|V2|...")]
    grid: Vec<String>,
    /// Output folder (new or empty): runs/<run>-<trace>-<policy>-s<seed>/ per run (what
    /// `simulate --out` writes, but no decisions.csv), sweep.csv (one row per run), sweep.json
    /// (settings and runs) and wall.csv (wall-clock seconds per run, the one file that is not
    /// deterministic).
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Runs at once (default: one per core). The outputs do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Run only the runs numbered I modulo N (0 <= I < N), e.g. one task of a Slurm job array
    /// or a Kubernetes Indexed Job each; `schedlab merge` combines the N outputs.
    #[arg(long, value_name = "I/N", requires = "out")]
    shard: Option<String>,
    /// Write time series of more than 100,000 buckets (--series-bucket-s), as simulate --force.
    #[arg(long)]
    force: bool,
}

/// The fields of a RunSpec that each run sets (or that a sweep has as its own flags).
const PER_RUN: [&str; 5] = ["trace", "policy", "seed", "out", "decisions"];

impl Args for SweepArgs {
    fn augment_args(cmd: Command) -> Command {
        let cmd = RunSpec::augment_args(cmd)
            .mut_arg("trace", |a| {
                a.action(ArgAction::Append).help(
                    "Trace to replay (repeatable; one --format for all). Without it, the built-in \
                     synthetic workload runs on the built-in cluster",
                )
            })
            .mut_arg("policy", |a| {
                a.action(ArgAction::Append)
                    .help("Policy spec name[key=value,...] (repeatable, one spec per flag); see `schedlab policies`")
            })
            .mut_arg("seed", |a| a.hide(true));
        SweepOwnArgs::augment_args(cmd)
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

impl FromArgMatches for SweepArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        Self::from_arg_matches_mut(&mut matches.clone())
    }

    fn from_arg_matches_mut(matches: &mut ArgMatches) -> Result<Self, clap::Error> {
        let traces = matches.get_many::<PathBuf>("trace").map(|v| v.cloned().collect()).unwrap_or_default();
        // Read by clap as RunSpec's `policy` is: parsed, then kept as their canonical text.
        let policies = matches
            .get_many::<PolicySpec>("policy")
            .map(|v| v.map(PolicySpec::to_string).collect())
            .unwrap_or_default();
        let typed = |id: &str| matches.value_source(id) == Some(ValueSource::CommandLine);
        let seed_given = typed("seed");
        let synthetic_typed = ["jobs", "load"].into_iter().filter(|id| typed(id)).collect();
        Ok(SweepArgs {
            run: RunSpec::from_arg_matches_mut(matches)?,
            traces,
            policies,
            seed_given,
            synthetic_typed,
            own: SweepOwnArgs::from_arg_matches_mut(matches)?,
        })
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(matches)?;
        Ok(())
    }
}

/// One finished run: its sweep.csv row, its summary and its wall time.
struct Done {
    row: Vec<String>,
    summary: Summary,
    wall_s: f64,
}

pub fn run(args: SweepArgs) -> CliResult {
    if args.seed_given {
        return Err("a sweep takes --seeds (a range such as 0..5, or a list such as 1,4,9), not --seed".into());
    }
    let runner = super::runner().forced(args.own.force);
    let runner = runner.keeping_traces();
    let traces = args
        .traces
        .iter()
        .map(|p| p.to_str().map(str::to_string).ok_or_else(|| format!("--trace {}: not UTF-8", p.display())))
        .collect::<Result<Vec<_>, _>>()?;
    super::refuse_synthetic_flags(!traces.is_empty(), &|id| args.synthetic_typed.contains(&id))?;
    let settings = SweepSettings {
        traces,
        policies: args.policies.clone(),
        grid: args.own.grid.clone(),
        seeds: parse_seeds(&args.own.seeds)?,
        run: shared_settings(&args.run, !args.traces.is_empty())?,
    };
    warn_of_idle_seeds(&args, &settings);
    let shard = args.own.shard.as_deref().map(parse_shard).transpose()?;
    let all = plan_runs(&settings)?;
    for trace in &settings.traces {
        if !Path::new(trace).exists() {
            return Err(format!("--trace {trace}: no such file or directory").into());
        }
    }
    let runs_total = all.len();
    let mine: Vec<SweepRun> = all.into_iter().filter(|r| shard.is_none_or(|s| s.holds(r.run))).collect();
    if let Some(out) = &args.own.out {
        prepare_out(out)?;
    }
    let pool = rayon::ThreadPoolBuilder::new().num_threads(args.own.threads.map_or(0, usize::from)).build()?;
    let threads = pool.current_num_threads();
    let progress = progress_bar(mine.len());
    let failed = AtomicBool::new(false);
    let started = Instant::now();
    let results: Vec<Option<Result<Done, String>>> = pool.install(|| {
        mine.par_iter()
            .map(|run| {
                // After a failure, runs not yet started are skipped; the error of the lowest
                // run number among those that ran is reported.
                if failed.load(Ordering::Relaxed) {
                    return None;
                }
                let done = run_one(&runner, run, &args.run, !settings.traces.is_empty(), args.own.out.as_deref());
                if done.is_err() {
                    failed.store(true, Ordering::Relaxed);
                }
                progress.inc(1);
                Some(done)
            })
            .collect()
    });
    progress.finish_and_clear();
    let elapsed_s = started.elapsed().as_secs_f64();
    if let Some(err) = results.iter().flatten().find_map(|r| r.as_ref().err()) {
        return Err(err.clone().into());
    }
    let done: Vec<Done> = results.into_iter().flatten().collect::<Result<_, _>>()?;
    if let Some(out) = &args.own.out {
        let manifest = SweepManifest {
            schedlab_version: version(),
            settings: settings.clone(),
            runs_total,
            shard,
            runs: mine.clone(),
        };
        let rows: Vec<Vec<String>> = done.iter().map(|d| d.row.clone()).collect();
        let walls: Vec<(usize, f64)> = mine.iter().zip(&done).map(|(r, d)| (r.run, d.wall_s)).collect();
        write_tables(out, &manifest, &rows, &walls)?;
    }
    emit(means_table(&mine, &done))?;
    let slice = shard.map_or(String::new(), |s| format!(" (shard {s} of a {runs_total}-run sweep)"));
    let plural = if threads == 1 { "" } else { "s" };
    emit(format_args!("{} runs{slice} in {elapsed_s:.1} s on {threads} thread{plural}\n", mine.len()))?;
    if let Some(out) = &args.own.out {
        emit(format_args!("wrote {}\n", out.display()))?;
    }
    Ok(())
}

pub(super) fn version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// Says before the runs start when the seeds cannot change a run (a trace without seeded
/// failures): a sweep over them repeats one run.
fn warn_of_idle_seeds(args: &SweepArgs, settings: &SweepSettings) {
    let probe = RunSpec { trace: args.traces.first().cloned(), ..args.run.clone() };
    if let (true, Some(reason)) = (settings.seeds.len() > 1, probe.idle_seed_reason()) {
        eprintln!(
            "warning: --seeds {}: runs that differ only in their seed will be identical unless the policy draws \
             random numbers: {reason}",
            args.own.seeds
        );
    }
}

/// The settings every run of the sweep shares, for sweep.json: the RunSpec's fields but
/// those each run sets, and with traces, but the built-in workload's (`jobs`, `load`), which those runs do not use.
fn shared_settings(base: &RunSpec, traced: bool) -> Result<serde_json::Map<String, serde_json::Value>, String> {
    const SYNTHETIC: [&str; 2] = ["jobs", "load"];
    match serde_json::to_value(base).map_err(|e| e.to_string())? {
        serde_json::Value::Object(mut fields) => {
            let unused = |key: &str| PER_RUN.contains(&key) || (traced && SYNTHETIC.contains(&key));
            fields.retain(|key, _| !unused(key));
            Ok(fields)
        }
        other => Err(format!("run settings are not a map: {other}")),
    }
}

/// One run, as `simulate` runs it, its files written into its folder.
fn run_one(
    runner: &Runner,
    run: &SweepRun,
    base: &RunSpec,
    from_trace: bool,
    out: Option<&Path>,
) -> Result<Done, String> {
    let mut spec = base.clone();
    spec.trace = from_trace.then(|| PathBuf::from(&run.trace));
    spec.policy = run.spec.parse().map_err(|e| format!("run {}: {e}", run.run))?;
    spec.seed = run.seed;
    for (key, value) in &run.settings {
        spec.set(key, value)?;
    }
    let context =
        |e: &dyn std::fmt::Display| format!("run {} ({}, {}, seed {}): {e}", run.run, run.trace, run.spec, run.seed);
    let keep = Keep { decisions: false, series: out.is_some() };
    let mut outcome = runner.run(&spec, keep).map_err(|e| context(&e))?;
    let wall_s = outcome.summary.wall_s.take().unwrap_or(0.0);
    if let Some(out) = out {
        // What `simulate --out` writes; summary.json without `wall_s` (taken above), so the
        // folder is the same on every machine (wall times are in the sweep's wall.csv).
        outcome.write(&out.join(&run.dir), false).map_err(|e| context(&e))?;
    }
    Ok(Done { row: reports::sweep::sweep_row(run, &outcome.summary), summary: outcome.summary, wall_s })
}

/// Makes `dir` ready for a sweep: it must be new or empty, so no run of an earlier sweep is
/// mistaken for one of this.
pub(super) fn prepare_out(dir: &Path) -> Result<(), String> {
    if let Ok(mut entries) = fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(format!(
            "--out {} is not empty: a sweep writes into a new or empty folder (remove it, or choose another)",
            dir.display()
        ));
    }
    let runs = dir.join("runs");
    fs::create_dir_all(&runs).map_err(|e| format!("cannot create {}: {e}", runs.display()))
}

/// sweep.csv, sweep.json and wall.csv (and sweep.parquet when built with the polars
/// feature): the same function for a sweep and a merge.
pub(super) fn write_tables(
    dir: &Path,
    manifest: &SweepManifest,
    rows: &[Vec<String>],
    walls: &[(usize, f64)],
) -> Result<(), String> {
    let create = |name: &str| {
        let path = dir.join(name);
        let file =
            File::create(&path).map(BufWriter::new).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        Ok::<_, String>((path, file))
    };
    let failed = |path: &Path, e: std::io::Error| format!("cannot write {}: {e}", path.display());
    let (path, file) = create("sweep.csv")?;
    reports::sweep::write_sweep_csv(rows, file).map_err(|e| failed(&path, e))?;
    let (path, file) = create("sweep.json")?;
    reports::sweep::write_sweep_json(manifest, file).map_err(|e| failed(&path, e))?;
    let (path, file) = create("wall.csv")?;
    reports::sweep::write_wall_csv(walls, file).map_err(|e| failed(&path, e))?;
    #[cfg(feature = "polars")]
    super::report::sweep_parquet(dir, &dir.join("sweep.parquet"))?;
    Ok(())
}

/// A bar with ETA on a terminal; nothing when stderr is not one, or under CI.
fn progress_bar(runs: usize) -> ProgressBar {
    if !std::io::stderr().is_terminal() || std::env::var_os("CI").is_some() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(runs as u64);
    let style = ProgressStyle::with_template("{bar:40} {pos}/{len} runs  {elapsed} elapsed  ETA {eta}")
        .expect("a valid template");
    bar.set_style(style);
    bar
}

/// The printed result: per (trace, policy), means over its seeds.
fn means_table(runs: &[SweepRun], done: &[Done]) -> String {
    let mut groups: Vec<((&str, String), Vec<&Summary>)> = Vec::new();
    for (run, d) in runs.iter().zip(done) {
        let key = (run.trace.as_str(), run.label());
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, list)) => list.push(&d.summary),
            None => groups.push((key, vec![&d.summary])),
        }
    }
    let mut lines =
        vec![["trace", "policy", "runs", "mean JCT", "p99 JCT", "mean queue", "util %", "goodput %"].map(String::from)];
    for ((trace, spec), list) in &groups {
        let mean = |f: fn(&Summary) -> f64| list.iter().map(|s| f(s)).sum::<f64>() / list.len() as f64;
        let trace = Path::new(trace).file_name().map_or((*trace).into(), |n| n.to_string_lossy());
        lines.push([
            trace.into_owned(),
            spec.to_string(),
            list.len().to_string(),
            reports::human(mean(|s| s.mean_jct_s)),
            reports::human(mean(|s| s.p99_jct_s)),
            reports::human(mean(|s| s.mean_queue_s)),
            format!("{:.1}", mean(|s| s.utilisation) * 100.0),
            format!("{:.1}", mean(|s| s.goodput) * 100.0),
        ]);
    }
    let widths: Vec<usize> = (0..8).map(|c| lines.iter().map(|l| l[c].chars().count()).max().unwrap_or(0)).collect();
    let mut out = String::new();
    for l in &lines {
        out.push_str(&format!("{:<w0$}  {:<w1$}", l[0], l[1], w0 = widths[0], w1 = widths[1]));
        for (c, width) in widths.iter().enumerate().skip(2) {
            out.push_str(&format!("  {:>width$}", l[c]));
        }
        out.push('\n');
    }
    out
}

/// `0..5` (0 to 4), `0..=4`, `7`, or `1,4,9`: distinct seeds in the order given.
pub(super) fn parse_seeds(text: &str) -> Result<Vec<u64>, String> {
    let bad = || {
        format!(
            "--seeds `{text}`: expected a range START..END (END excluded: 0..5 is seeds 0 to 4), START..=END, \
             or a list such as 1,4,9"
        )
    };
    let number = |s: &str| s.trim().parse::<u64>().map_err(|_| bad());
    let seeds: Vec<u64> = if let Some((start, end)) = text.split_once("..") {
        let (start, end) = match end.strip_prefix('=') {
            Some(last) => (number(start)?, number(last)?.checked_add(1).ok_or_else(bad)?),
            None => (number(start)?, number(end)?),
        };
        if end <= start {
            return Err(format!("--seeds `{text}`: the range is empty (START..END runs START to END-1)"));
        }
        if end - start > MAX_RUNS as u64 {
            return Err(format!("--seeds `{text}`: more than {MAX_RUNS} seeds"));
        }
        (start..end).collect()
    } else {
        text.split(',').map(number).collect::<Result<_, _>>()?
    };
    for (i, seed) in seeds.iter().enumerate() {
        if seeds[..i].contains(seed) {
            return Err(format!("--seeds `{text}`: seed {seed} given twice"));
        }
    }
    Ok(seeds)
}

/// `I/N` with 0 <= I < N.
pub(super) fn parse_shard(text: &str) -> Result<Shard, String> {
    let parsed = text.split_once('/').and_then(|(i, n)| Some((i.trim().parse().ok()?, n.trim().parse().ok()?)));
    match parsed {
        Some((index, count)) if index < count => Ok(Shard { index, count }),
        _ => Err(format!(
            "--shard `{text}`: expected I/N with 0 <= I < N, e.g. --shard 0/4 .. --shard 3/4 (a sweep in 4 shards)"
        )),
    }
}

/// `KEY=V1|V2|...`.
fn parse_grid(text: &str) -> Result<(String, Vec<String>), String> {
    let bad = |why: &str| format!("--grid `{text}`: {why}; expected KEY=V1|V2|..., e.g. --grid placement=pack|spread");
    let (key, values) = text.split_once('=').ok_or_else(|| bad("no `=`"))?;
    let key = key.trim();
    if key.is_empty() {
        return Err(bad("no key"));
    }
    let values: Vec<String> = values.split('|').map(|v| v.trim().to_string()).collect();
    if let Some(v) = values.iter().find(|v| v.is_empty() || v.contains([',', '[', ']', '='])) {
        return Err(bad(&format!("bad value `{v}`")));
    }
    for (i, v) in values.iter().enumerate() {
        if values[..i].contains(v) {
            return Err(bad(&format!("`{v}` given twice")));
        }
    }
    Ok((key.to_string(), values))
}

/// Each policy spec, expanded over every grid key it takes (first key outermost), each
/// expansion checked as `simulate --policy` would check it. A policy registered without a
/// parameter list takes no grid key (it cannot say which it reads).
pub(super) fn expand_policies(policies: &[String], grid: &[String]) -> Result<Vec<PolicySpec>, String> {
    let registry = super::registry();
    let grid: Vec<(String, Vec<String>)> = grid.iter().map(|g| parse_grid(g)).collect::<Result<_, _>>()?;
    for (i, (key, _)) in grid.iter().enumerate() {
        if grid[..i].iter().any(|(k, _)| k == key) {
            return Err(format!("--grid {key}: given twice; list every value in one --grid {key}=V1|V2|..."));
        }
    }
    let given: Vec<PolicySpec> = policies
        .iter()
        .map(|text| text.parse().map_err(|e| format!("--policy `{text}`: {e}")))
        .collect::<Result<_, _>>()?;
    let mut used = vec![false; grid.len()];
    let mut specs = Vec::new();
    for (text, spec) in policies.iter().zip(&given) {
        let mut expanded = vec![spec.clone()];
        for (g, (key, values)) in grid.iter().enumerate() {
            if !takes(registry, spec.name(), key) {
                continue;
            }
            if spec.param(key).is_some() {
                return Err(format!("--grid {key}: --policy `{text}` already sets `{key}`; give it in one place"));
            }
            used[g] = true;
            expanded = expanded
                .into_iter()
                .flat_map(|s| values.iter().map(move |v| s.clone().with(key, v)))
                .collect::<Result<_, _>>()
                .map_err(|e| e.to_string())?;
        }
        for spec in expanded {
            registry.check(&spec).map_err(|e| format!("--policy `{spec}`: {e}"))?;
            if specs.contains(&spec) {
                return Err(format!("--policy `{spec}` is in the sweep twice"));
            }
            specs.push(spec);
        }
    }
    if let Some(g) = used.iter().position(|u| !u) {
        let key = &grid[g].0;
        return Err(format!(
            "--grid {key}: no policy in the sweep takes `{key}` ({}), and it is no run setting a grid can vary ({})",
            keys_taken(registry, &given),
            GRID_KEYS.join(", ")
        ));
    }
    Ok(specs)
}

/// Whether the policy `name` declares the parameter `key`.
fn takes(registry: &Registry, name: &str, key: &str) -> bool {
    registry.get(name).is_some_and(|p| p.params.iter().any(|p| p.key == key))
}

/// `fifo takes skip, placement; ...`: the keys each policy of the sweep declares.
fn keys_taken(registry: &Registry, policies: &[PolicySpec]) -> String {
    let taken = policies.iter().map(|spec| {
        let name = spec.name();
        let keys: Vec<&str> = registry.get(name).map_or(Vec::new(), |p| p.params.iter().map(|k| k.key).collect());
        format!("{name} takes {}", if keys.is_empty() { "none".to_string() } else { keys.join(", ") })
    });
    taken.collect::<Vec<_>>().join("; ")
}

/// Keeps what a file name may hold: letters, digits, `-` and `.`; any run of anything else
/// becomes one `_` (`fifo[skip=true]` -> `fifo_skip_true`).
fn slug(text: &str) -> String {
    let mut out = String::new();
    for c in text.chars() {
        if c.is_ascii_alphanumeric() || c == '-' || c == '.' {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches(['_', '.']);
    if out.is_empty() { "x".to_string() } else { out.to_string() }
}

/// Every run of the sweep `settings` define, numbered: trace, then policy (grid-expanded),
/// then seed. A pure function of the settings, so `merge` plans the same runs.
pub(super) fn plan_runs(settings: &SweepSettings) -> Result<Vec<SweepRun>, String> {
    if settings.seeds.is_empty() {
        return Err("--seeds: no seeds".to_string());
    }
    let (setting_grid, policy_grid): (Vec<String>, Vec<String>) =
        settings.grid.iter().cloned().partition(|g| GRID_KEYS.contains(&g.split('=').next().unwrap_or("").trim()));
    let specs = expand_policies(&settings.policies, &policy_grid)?;
    let combos = setting_combos(&setting_grid)?;
    let traces: Vec<(&str, String)> = if settings.traces.is_empty() {
        vec![(SYNTHETIC_TRACE, "synthetic".to_string())]
    } else {
        settings
            .traces
            .iter()
            .map(|t| (t.as_str(), slug(&Path::new(t).file_stem().map_or(t.into(), |s| s.to_string_lossy()))))
            .collect()
    };
    let total = traces.len() * specs.len() * combos.len() * settings.seeds.len();
    if total > MAX_RUNS {
        return Err(format!("the sweep has {total} runs, more than {MAX_RUNS}"));
    }
    let width = total.saturating_sub(1).to_string().len().max(3);
    let mut runs = Vec::with_capacity(total);
    for (trace, trace_slug) in &traces {
        for spec in &specs {
            for combo in &combos {
                for &seed in &settings.seeds {
                    let mut run = SweepRun {
                        run: runs.len(),
                        dir: String::new(),
                        trace: trace.to_string(),
                        spec: spec.to_string(),
                        settings: combo.clone(),
                        seed,
                    };
                    run.dir = format!("runs/{:0width$}-{trace_slug}-{}-s{seed}", run.run, slug(&run.label()));
                    runs.push(run);
                }
            }
        }
    }
    Ok(runs)
}

/// Every combination of the run-setting grid's values (first key outermost); one empty
/// combination without such keys.
fn setting_combos(grid: &[String]) -> Result<Vec<Vec<(String, String)>>, String> {
    let mut combos = vec![Vec::new()];
    for (i, g) in grid.iter().enumerate() {
        let (key, values) = parse_grid(g)?;
        if grid[..i].iter().any(|earlier| earlier.split('=').next().map(str::trim) == Some(key.as_str())) {
            return Err(format!("--grid {key}: given twice; list every value in one --grid {key}=V1|V2|..."));
        }
        for v in &values {
            RunSpec::default().set(&key, v)?;
        }
        let mut next = Vec::with_capacity(combos.len() * values.len());
        for combo in &combos {
            for v in &values {
                next.push([combo.clone(), vec![(key.clone(), v.clone())]].concat());
            }
        }
        combos = next;
    }
    Ok(combos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seeds_read_as_ranges_and_lists() {
        assert_eq!(parse_seeds("0..5").unwrap(), [0, 1, 2, 3, 4]);
        assert_eq!(parse_seeds("2..=4").unwrap(), [2, 3, 4]);
        assert_eq!(parse_seeds("1,4,9").unwrap(), [1, 4, 9]);
        assert_eq!(parse_seeds("7").unwrap(), [7]);
        for bad in ["5..5", "a..3", "1,,2", "1,1", "-1", "0..", ""] {
            assert!(parse_seeds(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn shards_are_i_of_n() {
        assert_eq!(parse_shard("1/3").unwrap(), Shard { index: 1, count: 3 });
        for bad in ["3/3", "0/0", "1", "a/2", "-1/2"] {
            assert!(parse_shard(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_grid_expands_the_policies_that_take_each_key() {
        let policies = ["fifo".to_string(), "sjf[duration=oracle]".to_string()];
        let grid = ["skip=true|false".to_string(), "placement=pack|spread".to_string()];
        let expanded: Vec<String> = expand_policies(&policies, &grid).unwrap().iter().map(|s| s.to_string()).collect();
        // First grid key outermost; each spec printed canonically (keys sorted).
        assert_eq!(
            expanded,
            [
                "fifo[placement=pack,skip=true]",
                "fifo[placement=spread,skip=true]",
                "fifo[placement=pack,skip=false]",
                "fifo[placement=spread,skip=false]",
                "sjf[duration=oracle,placement=pack]",
                "sjf[duration=oracle,placement=spread]",
            ]
        );
        assert!(
            expand_policies(&policies, &["nosuch=1|2".into()]).unwrap_err().contains("no policy in the sweep takes")
        );
        assert!(expand_policies(&policies, &["duration=oracle".into()]).unwrap_err().contains("already sets"));
        assert!(expand_policies(&policies, &["skip=maybe".into()]).unwrap_err().contains("fifo[skip=maybe]"));
    }

    #[test]
    fn runs_are_numbered_trace_then_policy_then_seed() {
        let settings = SweepSettings {
            traces: vec!["a/philly.csv".into(), "b/trace-dir/".into()],
            policies: vec!["fifo[skip=true]".into(), "sjf".into()],
            grid: vec![],
            seeds: vec![3, 4],
            run: serde_json::Map::new(),
        };
        let runs = plan_runs(&settings).unwrap();
        assert_eq!(runs.len(), 8);
        assert_eq!(runs[1].dir, "runs/001-philly-fifo_skip_true-s4");
        assert_eq!((runs[2].spec.as_str(), runs[2].seed), ("sjf", 3));
        assert_eq!(runs[7].dir, "runs/007-trace-dir-sjf-s4");
    }
}
