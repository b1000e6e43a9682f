//! schedlab against a real Slurm: the workloads scripts/slurm-dump.sh ran on Slurm 22.05
//! (traces/tests/data/slurm/, see its README) replayed from their own sacct dumps, each job's
//! start compared with the start Slurm recorded. docs/slurm.md has the table and explains the
//! deviations; the bounds here are the ones it documents. The figures are
//! `reports::recorded`'s, which `simulate`'s summary line and `schedlab compare-starts` print.
//! `cargo test --test slurm_fidelity -- --nocapture` prints the table.

use reports::recorded::{StartDeviations, is_array_task, start_deviations};
use schedlab::RunSpec;
use sim::SimTime;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

fn dump(run: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("traces/tests/data/slurm").join(run)
}

/// Each job's first start as Slurm recorded it (the earliest `Start` over its attempts and
/// het components), of the dump's naive clock; jobs that never held resources are left out.
/// A parse of its own, to check the importer's `recorded_starts` against.
fn slurm_starts(sacct: &Path) -> BTreeMap<String, SimTime> {
    let text = std::fs::read_to_string(sacct).expect("the committed sacct dump");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().expect("a header").split('|').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).expect(name);
    let (id, start, alloc) = (col("JobID"), col("Start"), col("AllocTRES"));
    let mut starts: BTreeMap<String, SimTime> = BTreeMap::new();
    for line in lines {
        let f: Vec<&str> = line.split('|').collect();
        if f[id].contains('.') || f[alloc].is_empty() {
            continue;
        }
        let at = SimTime(traces::parse_datetime_ms(&f[start].replacen('T', " ", 1)).expect("a sacct time"));
        let job = f[id].split('+').next().unwrap_or_default().to_owned();
        starts.entry(job).and_modify(|s| *s = (*s).min(at)).or_insert(at);
    }
    starts
}

/// schedlab's start minus Slurm's, in seconds, by job name: the dump `run` replayed under
/// `policy`. The cluster is one pool of the 4 nodes: the jobs ask for untyped GPUs, and Slurm
/// placed 2-node jobs across an a100 and a v100 node, which a schedlab gang cannot span.
fn deviations(run: &str, policy: &str) -> BTreeMap<String, i64> {
    deviations_with(run, policy, &[])
}

/// [`deviations`] with `extra` flags for the replay.
fn deviations_with(run: &str, policy: &str, extra: &[&str]) -> BTreeMap<String, i64> {
    let sacct = dump(run).join("sacct.txt");
    let outcome = replay(run, policy, extra);
    start_deviations(&outcome.result, &slurm_starts(&sacct))
}

/// The dump `run` replayed under `policy` on `--cluster 4x8`, with `extra` flags.
fn replay(run: &str, policy: &str, extra: &[&str]) -> schedlab::RunOutcome {
    let sacct = dump(run).join("sacct.txt");
    let mut flags =
        vec!["--trace", sacct.to_str().unwrap(), "--format", "sacct", "--cluster", "4x8", "--policy", policy];
    flags.extend_from_slice(extra);
    RunSpec::from_flags(flags).expect("flags").run().unwrap_or_else(|e| panic!("replay: {e}"))
}

fn errors(devs: &BTreeMap<String, i64>) -> StartDeviations {
    StartDeviations::of(devs.values()).expect("jobs to compare")
}

/// `devs` without array tasks, as `compare-starts --exclude-arrays` leaves them out.
fn without_arrays(devs: BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    devs.into_iter().filter(|(name, _)| !is_array_task(name)).collect()
}

fn row(label: &str, e: &StartDeviations) {
    println!(
        "| {label} | {} | {} | {} | {} | {} | {} | {} |",
        e.jobs, e.exact, e.within_5s, e.p50_s, e.p99_s, e.max_s, e.latest_s
    );
}

#[test]
fn fifo_replays_sched_builtin_never_later_and_within_the_documented_bounds() {
    let default = errors(&deviations("builtin", "fifo"));
    let fast = errors(&deviations("builtin-fast", "fifo"));
    let fast_no_arrays = errors(&without_arrays(deviations("builtin-fast", "fifo")));
    println!("| Slurm run vs policy | jobs | exact | within 5 s | p50 | p99 | max | latest |");
    row("builtin (defaults) vs fifo", &default);
    row("builtin, batch_sched_delay=0, vs fifo", &fast);
    row("the same without array tasks", &fast_no_arrays);
    // Every job that ran in Slurm is compared (the 27 never-started cancels are not).
    assert_eq!((default.jobs, fast.jobs, fast_no_arrays.jobs), (291, 291, 274));
    // The importer's recorded starts (what `simulate` compares with) are the ones read here.
    for run in ["builtin", "builtin-fast", "backfill"] {
        let sacct = dump(run).join("sacct.txt");
        let trace = traces::load(&sacct, traces::Format::Sacct(Default::default())).expect("the dump");
        assert_eq!(trace.recorded_starts, slurm_starts(&sacct), "{run}");
    }
    // Slurm only adds latency: schedlab never starts a job more than 3 s after Slurm did
    // (times are whole seconds, and a dependency's Eligible is rounded to one).
    assert!(default.latest_s <= 3 && fast.latest_s <= 3, "{default:?} {fast:?}");
    // The 3 s scheduling cadence is a large part of the lag: without it, the median halves...
    assert!(default.p50_s <= 60 && fast.p50_s <= 40 && fast.p50_s < default.p50_s, "{default:?} {fast:?}");
    // ...and what is left is the per-start latency accumulated along the FIFO queue, plus
    // array tasks Slurm held back (p99 and max).
    assert!(fast_no_arrays.p99_s <= 70 && fast.max_s <= 300, "{fast_no_arrays:?} {fast:?}");
}

#[test]
fn fifo_in_passes_every_3_s_matches_sched_builtin() {
    println!("| Slurm run vs fifo | --pass-interval-s | jobs | exact | within 5 s | p50 | p99 | max | latest |");
    let mut table = BTreeMap::new();
    for run in ["builtin-fast", "builtin"] {
        for pass in ["0", "1", "2", "3", "4"] {
            let e = errors(&without_arrays(deviations_with(run, "fifo", &["--pass-interval-s", pass])));
            row(&format!("{run} | {pass}"), &e);
            table.insert((run, pass), e);
        }
    }
    // Slurm's main loop with batch_sched_delay=0 runs about every 3 s: deciding in 3 s passes,
    // fifo starts 9 jobs in 10 within 5 s of Slurm (p50 2 s, p99 7 s), where deciding at every
    // event only 1 in 8 is (p50 23 s).
    let (instant, three) = (&table[&("builtin-fast", "0")], &table[&("builtin-fast", "3")]);
    assert!(three.within_5s >= 250 && three.p50_s <= 2 && three.p99_s <= 8, "{three:?}");
    assert!(instant.within_5s <= 40 && instant.p50_s >= 20, "{instant:?}");
    // Any other cadence fits worse.
    for pass in ["1", "2", "4"] {
        assert!(table[&("builtin-fast", pass)].within_5s < three.within_5s * 2 / 3, "{pass}: {table:?}");
    }
    // Slurm's defaults (batch_sched_delay 3 s) add more than the beat per start: passes alone
    // fit best at 4 s (p50 8 s against 42 s), but only a third of the jobs start within 5 s
    // (a release latency does better: the next test).
    let (instant, four) = (&table[&("builtin", "0")], &table[&("builtin", "4")]);
    assert!(four.p50_s <= 10 && four.within_5s >= 80 && instant.p50_s >= 40, "{table:?}");
}

#[test]
fn backfill_replays_are_bounded_too() {
    let easy = errors(&deviations("backfill", "easy-backfill[duration=estimate]"));
    let fifo = errors(&deviations("backfill", "fifo"));
    row("backfill (defaults) vs easy-backfill[duration=estimate]", &easy);
    row("backfill (defaults) vs fifo", &fifo);
    assert_eq!(easy.jobs, 292);
    assert!(easy.latest_s <= 3, "{easy:?}");
    assert!(easy.max_s <= 300, "{easy:?}");
}

#[test]
fn the_node_failure_slurm_recorded_is_replayed_when_slurm_detected_it() {
    // builtin's one NODE_FAIL (n2 at 20:23:10, back by 20:23:12) as events.csv; the 4x8
    // cluster numbers n1..n4 as the imported one does (a100 nodes n1, n2 first).
    let events = traces::sacct::load_failure_events(
        &dump("builtin").join("sacct.txt"),
        Default::default(),
        &dump("builtin").join("nodes.txt"),
    )
    .expect("the dump's node failures");
    let path = Path::new(env!("CARGO_TARGET_TMPDIR")).join("slurm-builtin-events.csv");
    traces::write_events_csv(&events, std::fs::File::create(&path).expect("tmp file")).expect("events.csv");
    let failures = format!("events:{}", path.display());
    let extra = ["--failures", failures.as_str(), "--heartbeat-s", "1", "--missed-beats", "1"];
    let stats = replay("builtin", "fifo", &extra).result.stats;
    // One node failure, detected at the second Slurm declared it (End is the detection).
    assert_eq!((stats.failures, stats.detections, stats.detection_lag_ms), (1, 1, 0));
}

/// What Slurm adds, in a small model: strict FIFO over the dump's jobs (as imported) on the
/// four nodes, in whole seconds, where a scheduling pass runs only every `cadence` seconds
/// and a job's GPUs come back `release` seconds after its end. With (1, 0) it decides as
/// schedlab's `fifo` does; its deviations from Slurm, as the two knobs grow, say how much of
/// the gap each explains (docs/slurm.md, "What would make fifo match to the second").
mod model {
    use std::collections::BTreeMap;

    /// Nodes n1..n4 with 8 GPUs; partition `debug` has n3, n4.
    const NODES: usize = 4;

    struct Job {
        name: String,
        eligible: u64,
        gpus: u32,
        nodes: usize,
        run: u64,
        cancel: Option<u64>,
        debug: bool,
    }

    fn jobs(sacct: &std::path::Path) -> Vec<Job> {
        let trace = traces::load(sacct, traces::Format::Sacct(Default::default())).expect("the dump");
        let mut jobs: Vec<(i32, u64, Job)> = trace
            .workload
            .jobs()
            .iter()
            .map(|j| {
                let t = &j.tasks[0];
                let eligible = t.options().window.not_before.unwrap_or(j.submit).0.max(j.submit.0) / 1000;
                let nodes = if t.single_node { 1 } else { 2 };
                let job = Job {
                    name: j.name.to_string(),
                    eligible,
                    gpus: t.gpus / nodes as u32,
                    nodes,
                    run: t.work.0.div_ceil(1000),
                    cancel: j.cancel.get().map(|c| c.0 / 1000),
                    debug: j.queue.as_deref() == Some("debug"),
                };
                (j.priority, j.submit.0, job)
            })
            .collect();
        // Slurm's priority/basic: higher first, then submission.
        jobs.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
        jobs.into_iter().map(|(_, _, job)| job).collect()
    }

    /// Each started job's start, by name, under the model.
    pub fn starts(sacct: &std::path::Path, cadence: u64, release: u64) -> BTreeMap<String, u64> {
        let jobs = jobs(sacct);
        let mut free = [8u32; NODES];
        // (time the GPUs come back, node, GPUs)
        let mut held: Vec<(u64, usize, u32)> = Vec::new();
        let mut pending: Vec<usize> = (0..jobs.len()).collect();
        let mut starts = BTreeMap::new();
        let first = jobs.iter().map(|j| j.eligible).min().unwrap_or(0);
        let mut t = first;
        while !pending.is_empty() {
            held.retain(|&(back, node, gpus)| {
                if back <= t {
                    free[node] += gpus;
                }
                back > t
            });
            pending.retain(|&i| jobs[i].cancel.is_none_or(|c| c > t));
            if (t - first) % cadence == 0 {
                pass(&jobs, &mut pending, &mut free, &mut held, &mut starts, t, release);
            }
            t += 1;
        }
        starts
    }

    /// One strict-FIFO pass at `t`: start jobs in order until one eligible job does not fit.
    fn pass(
        jobs: &[Job],
        pending: &mut Vec<usize>,
        free: &mut [u32; NODES],
        held: &mut Vec<(u64, usize, u32)>,
        starts: &mut BTreeMap<String, u64>,
        t: u64,
        release: u64,
    ) {
        let mut started = Vec::new();
        for &i in pending.iter() {
            let job = &jobs[i];
            if job.eligible > t {
                continue;
            }
            let range = if job.debug { 2..NODES } else { 0..NODES };
            // Best fit: the nodes with the fewest free GPUs that hold the job's share.
            let mut fits: Vec<usize> = range.filter(|&n| free[n] >= job.gpus).collect();
            fits.sort_by_key(|&n| (free[n], n));
            if fits.len() < job.nodes {
                break;
            }
            let end = job.cancel.map_or(t + job.run, |c| c.min(t + job.run));
            for &n in &fits[..job.nodes] {
                free[n] -= job.gpus;
                held.push((end + release, n, job.gpus));
            }
            starts.insert(job.name.clone(), t);
            started.push(i);
        }
        pending.retain(|i| !started.contains(i));
    }
}

fn model_errors(run: &str, cadence: u64, release: u64) -> StartDeviations {
    let sacct = dump(run).join("sacct.txt");
    let slurm = slurm_starts(&sacct);
    let devs: BTreeMap<String, i64> = model::starts(&sacct, cadence, release)
        .into_iter()
        .filter_map(|(name, ours)| slurm.get(&name).map(|&theirs| (name, ours as i64 - (theirs.as_ms() / 1000) as i64)))
        .collect();
    errors(&without_arrays(devs))
}

#[test]
fn slurm_cadence_and_release_latency_explain_the_gap() {
    println!("| Slurm run | pass every | GPUs back after | jobs | exact | within 5 s | p50 | p99 | max | latest |");
    let mut table = BTreeMap::new();
    for run in ["builtin", "builtin-fast"] {
        for (cadence, release) in [(1, 0), (1, 1), (2, 0), (2, 1), (3, 0), (3, 1), (4, 0), (4, 1), (5, 0), (6, 0)] {
            let e = model_errors(run, cadence, release);
            println!(
                "| {run} | {cadence} s | {release} s | {} | {} | {} | {} | {} | {} | {} |",
                e.jobs, e.exact, e.within_5s, e.p50_s, e.p99_s, e.max_s, e.latest_s
            );
            table.insert((run, cadence, release), e);
        }
    }
    let at = |run: &'static str, cadence: u64, release: u64| &table[&(run, cadence, release)];
    // batch_sched_delay=0: passes every 3 s with the GPUs back at the end reproduce Slurm's
    // starts to within 5 s for all but one job (p50 1 s), where deciding every second leaves
    // a median gap of 23 s.
    let fast = at("builtin-fast", 3, 0);
    assert!(fast.within_5s >= 270 && fast.p50_s <= 1 && fast.max_s <= 6, "{fast:?}");
    assert!(at("builtin-fast", 1, 0).p50_s >= 20, "{:?}", at("builtin-fast", 1, 0));
    // Slurm's defaults: the same beat plus a second before the GPUs are back fits best (p50
    // 5 s, p99 11 s).
    let default = at("builtin", 3, 1);
    assert!(default.p50_s <= 5 && default.p99_s <= 11 && default.within_5s >= 170, "{default:?}");
    assert!(at("builtin", 1, 0).p50_s >= 40, "{:?}", at("builtin", 1, 0));
}

#[test]
fn fifo_with_a_release_latency_matches_sched_builtin() {
    println!("| Slurm run vs fifo | --release-latency-s | jobs | exact | within 5 s | p50 | p99 | max | latest |");
    let mut table = BTreeMap::new();
    for run in ["builtin-fast", "builtin"] {
        for release in ["0", "0.5", "1", "1.5", "1.75", "2"] {
            let e = errors(&without_arrays(deviations_with(run, "fifo", &["--release-latency-s", release])));
            row(&format!("{run} | {release}"), &e);
            table.insert((run, release), e);
        }
    }
    // batch_sched_delay=0: Slurm decides as a job ends, but its GPUs are back about a second
    // later (COMPLETING, then the next pass): with that second, 96 % of the starts fall within
    // 5 s of Slurm's (p50 2 s), against 13 % without it.
    let fast = &table[&("builtin-fast", "1")];
    assert!(fast.within_5s >= 255 && fast.p50_s <= 2 && fast.p99_s <= 8 && fast.max_s <= 10, "{fast:?}");
    assert!(table[&("builtin-fast", "0")].within_5s <= 40, "{table:?}");
    // Slurm's defaults add the wait for the next batch pass (3 s apart) to every start: 1.75 s
    // a start on average fits best (p50 2 s, worst 8 s).
    let default = &table[&("builtin", "1.75")];
    assert!(default.within_5s >= 245 && default.p50_s <= 2 && default.max_s <= 10, "{default:?}");
    // The cost adds up along a FIFO queue of a hundred jobs, so half a second off is far off:
    // the latency is a property of the cluster, to measure (docs/slurm.md), not a knob to guess.
    assert!(table[&("builtin-fast", "1.5")].within_5s < 100 && table[&("builtin", "1")].within_5s < 100, "{table:?}");
}

/// The replay's fidelity is in its summary (summary.json, sweep.csv, Python), not only in the
/// line `simulate` prints: a sweep over `release_latency_s` shows the number being fitted.
#[test]
fn the_start_deviations_are_summary_keys() {
    let outcome = replay("builtin", "fifo", &["--pass-interval-s", "3"]);
    let vs = outcome.vs_recorded.expect("a sacct dump records starts");
    let s = &outcome.summary;
    assert_eq!(s.recorded_starts_jobs, Some(vs.jobs as u64));
    assert_eq!(s.recorded_starts_within_5s, Some(vs.within_5s as f64 / vs.jobs as f64));
    assert_eq!((s.recorded_start_p50_s, s.recorded_start_p99_s), (Some(vs.p50_s as f64), Some(vs.p99_s as f64)));
    let json = serde_json::to_value(s).unwrap();
    assert_eq!(json["recorded_starts_jobs"], vs.jobs, "{json}");
    let plain = RunSpec { jobs: 50, ..RunSpec::default() }.run().unwrap();
    assert_eq!(plain.summary.recorded_starts_jobs, None, "the built-in workload records no starts");
}
