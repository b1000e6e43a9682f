//! `schedlab sweep`: traces x policies (x parameter grids) x seeds, each run exactly as
//! `simulate` would run it, in parallel across runs (never inside one).
//!
//! Runs are numbered in a fixed order: trace (as given), then policy (as given, each expanded
//! by the grid, first grid key outermost), then seed. `--shard I/N` runs those whose number
//! % N == I. Every file a sweep writes depends only on its inputs, never on the thread count
//! or on which machine ran which shard; the one exception, wall-clock time, goes to wall.csv.
//!
//! The plan, the shards and the parallel loop are `run::many`'s; here are the flags, the
//! progress bar, the printed table and the files.

use super::{CliResult, emit};
use clap::parser::ValueSource;
use clap::{ArgAction, ArgMatches, Args, Command, FromArgMatches};
use indicatif::{ProgressBar, ProgressStyle};
use policies::PolicySpec;
use reports::Summary;
use reports::sweep::{Shard, SweepManifest, SweepRun, SweepSettings, sweep_row};
use run::RunSpec;
use run::many::{Done, Executor, MAX_RUNS, Plan, shared_settings};
use std::fs::{self, File};
use std::io::{BufWriter, IsTerminal};
use std::path::{Path, PathBuf};
use std::time::Instant;

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
    /// Output folder: runs/<run>-<trace>-<policy>-s<seed>/ per run (what `simulate --out`
    /// writes, but no decisions.csv), sweep.csv (one row per run), sweep.json (settings and
    /// runs) and wall.csv (wall-clock seconds per run, the one file that is not
    /// deterministic). A folder an earlier sweep wrote is replaced whole (its runs removed);
    /// one holding files no sweep writes is refused unless --force.
    #[arg(long, short)]
    out: Option<PathBuf>,
    /// Runs at once (default: one per core). The outputs do not depend on it.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    threads: Option<u16>,
    /// Run only the runs numbered I modulo N (0 <= I < N), e.g. one task of a Slurm job array
    /// or a Kubernetes Indexed Job each; `schedlab merge` combines the N outputs.
    #[arg(long, value_name = "I/N", requires = "out")]
    shard: Option<String>,
    /// Write into an --out folder that holds files no sweep writes (they are left as they
    /// are), and time series of more than 100,000 buckets (--series-bucket-s), as simulate --force.
    #[arg(long)]
    force: bool,
}

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

pub fn run(args: SweepArgs) -> CliResult {
    if args.seed_given {
        return Err("a sweep takes --seeds (a range such as 0..5, or a list such as 1,4,9), not --seed".into());
    }
    let runner = super::runner().forced(args.own.force).keeping_traces();
    let settings = settings(&args)?;
    warn_of_idle_seeds(&args, &settings);
    let shard = args.own.shard.as_deref().map(parse_shard).transpose()?;
    let plan = Plan::new(settings, super::registry())?;
    for trace in &plan.settings.traces {
        let path = run::many::trace_and_cluster(trace).0;
        if !Path::new(path).exists() {
            return Err(format!("--trace {path}: no such file or directory").into());
        }
    }
    let mine = plan.slice(shard);
    let out = args.own.out.as_deref();
    if let Some(out) = out {
        prepare_out(out, args.own.force)?;
    }
    let progress = progress_bar(mine.len());
    let tick = progress.clone();
    let executor =
        Executor::new(args.own.threads.map(usize::from))?.wall_time_apart().with_progress(move || tick.inc(1));
    let started = Instant::now();
    let done = executor.execute(&runner, mine.len(), |i| plan.spec(&args.run, &mine[i], out));
    progress.finish_and_clear();
    let elapsed_s = started.elapsed().as_secs_f64();
    let done = done.map_err(|failed| {
        let run = &mine[failed.index];
        format!("run {} ({}, {}, seed {}): {}", run.run, run.trace, run.spec, run.seed, failed.error)
    })?;
    if let Some(out) = out {
        let rows: Vec<Vec<String>> = mine.iter().zip(&done).map(|(r, d)| sweep_row(r, &d.summary)).collect();
        let walls: Vec<(usize, f64)> = mine.iter().zip(&done).map(|(r, d)| (r.run, d.wall_s)).collect();
        write_tables(out, &plan.manifest(shard), &rows, &walls)?;
    }
    emit(means_table(&mine, &done))?;
    let slice = shard.map_or(String::new(), |s| format!(" (shard {s} of a {}-run sweep)", plan.runs.len()));
    let threads = executor.threads();
    let plural = if threads == 1 { "" } else { "s" };
    emit(format_args!("{} runs{slice} in {elapsed_s:.1} s on {threads} thread{plural}\n", mine.len()))?;
    if let Some(out) = out {
        emit(format_args!("wrote {}\n", out.display()))?;
    }
    Ok(())
}

/// The sweep's settings (sweep.json's) as the flags give them.
fn settings(args: &SweepArgs) -> Result<SweepSettings, String> {
    let traces = args
        .traces
        .iter()
        .map(|p| p.to_str().map(str::to_string).ok_or_else(|| format!("--trace {}: not UTF-8", p.display())))
        .collect::<Result<Vec<_>, _>>()?;
    super::refuse_synthetic_flags(!traces.is_empty(), &|id| args.synthetic_typed.contains(&id))?;
    Ok(SweepSettings {
        traces,
        policies: args.policies.clone(),
        grid: args.own.grid.clone(),
        seeds: parse_seeds(&args.own.seeds)?,
        run: shared_settings(&args.run, !args.traces.is_empty())?,
    })
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

/// The files a sweep (or a merge) writes at the top of its folder, and `schedlab report`'s
/// page of them; its runs are folders of `runs/`, each holding only a run's files.
const SWEEP_FOLDER_FILES: [&str; 5] = ["sweep.csv", "sweep.json", "wall.csv", "sweep.parquet", "report.html"];

/// Makes `dir` ready for a sweep, as `simulate --out` treats a run folder: a new folder, or
/// one holding only an earlier sweep's files, which are removed (its runs too) so that no run
/// of it is mistaken for one of this sweep; a folder holding anything else is refused unless
/// `force`, which leaves those files as they are.
pub(super) fn prepare_out(dir: &Path, force: bool) -> Result<(), String> {
    let foreign = foreign_files(dir)?;
    if !foreign.is_empty() && !force {
        let shown = match foreign.len() {
            1 => format!("{}, which no sweep writes", foreign[0]),
            n if n <= 3 => format!("{}, which no sweep writes", foreign.join(", ")),
            n => format!("{} and {} more files no sweep writes", foreign[..3].join(", "), n - 3),
        };
        let it = if foreign.len() == 1 { "it" } else { "them" };
        return Err(format!(
            "--out {} holds {shown}: give a new folder, one that only a sweep wrote into, or --force to write \
             beside {it}",
            dir.display()
        ));
    }
    let remove = |path: &Path| match fs::remove_file(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(format!("cannot remove {} (an earlier sweep's): {e}", path.display()))
        }
        _ => Ok(()),
    };
    for name in SWEEP_FOLDER_FILES {
        remove(&dir.join(name))?;
    }
    let runs = dir.join("runs");
    for run in fs::read_dir(&runs).into_iter().flatten().filter_map(Result::ok).filter(|e| e.path().is_dir()) {
        for name in run::RUN_FOLDER_FILES {
            remove(&run.path().join(name))?;
        }
        // Empty now unless --force left another file there.
        let _ = fs::remove_dir(run.path());
    }
    fs::create_dir_all(&runs).map_err(|e| format!("cannot create {}: {e}", runs.display()))
}

/// What `dir` holds that no sweep writes (paths relative to it, sorted); empty for a missing folder.
fn foreign_files(dir: &Path) -> Result<Vec<String>, String> {
    let list = |dir: &Path| -> Result<Vec<(String, PathBuf)>, String> {
        match fs::read_dir(dir) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
            Err(e) => Err(format!("--out {}: cannot read the folder: {e}", dir.display())),
            Ok(entries) => Ok(entries
                .filter_map(Result::ok)
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .collect()),
        }
    };
    let mut foreign = Vec::new();
    for (name, path) in list(dir)? {
        if name == "runs" && path.is_dir() {
            for (run, run_path) in list(&path)? {
                if !run_path.is_dir() {
                    foreign.push(format!("runs/{run}"));
                    continue;
                }
                for (file, _) in list(&run_path)? {
                    if !run::RUN_FOLDER_FILES.contains(&file.as_str()) {
                        foreign.push(format!("runs/{run}/{file}"));
                    }
                }
            }
        } else if !SWEEP_FOLDER_FILES.contains(&name.as_str()) || path.is_dir() {
            foreign.push(name);
        }
    }
    foreign.sort();
    Ok(foreign)
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
}
