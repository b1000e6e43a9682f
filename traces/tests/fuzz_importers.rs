//! Fuzzing of the importers that no_panics.rs (the trace formats, cluster.csv, events, the
//! failure traces, the shorthand) and inventory_facts.rs (the PAI, openb, spot and Philly
//! inventories) leave out: Slurm's node and partition lists and slurm.conf, `sacctmgr show
//! qos`, sacct dumps read on a UTC offset or a named zone, queues.csv, Philly's and Helios'
//! virtual-cluster files, datasets.csv, and the `--failures` and `tz=` specs. Each is fed the
//! committed samples (tests/data/slurm, and the samples below) with random byte-level damage,
//! and arbitrary bytes: it returns `Ok` or an error naming a line of the input, and never
//! panics.
//!
//! Deterministic under `PROPTEST_RNG_SEED`; `SCHEDLAB_FUZZ_CASES=N` runs N cases of each
//! campaign (scripts/fuzz.sh), each printing `fuzz NAME: N inputs in S s (seed X): F failures`.

mod common;

use common::damage::{Damage, damaged};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed, TestCaseError, TestRunner};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;
use traces::TraceError;
use traces::inventory::{
    SlurmFiles, read_sacctmgr_assoc, read_sacctmgr_qos, read_slurm_cluster, read_slurm_import, read_slurm_nodes,
};
use traces::sacct::{SacctClock, read_sacct_on};
use traces::{read_datasets_csv, read_helios_vc_csv, read_philly_vc_csv, read_queues_csv};

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.trim().parse().ok())
}

/// CI's `PROPTEST_RNG_SEED`, else one drawn from the clock (printed).
fn seed() -> u64 {
    static SEED: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *SEED.get_or_init(|| {
        env_u64("PROPTEST_RNG_SEED").unwrap_or_else(|| {
            let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            (nanos.as_nanos() as u64) ^ u64::from(std::process::id()).rotate_left(32)
        })
    })
}

/// `cases` inputs of `strategy` through `test`; prints what it tried; panics with the
/// smallest failing input.
fn campaign<S>(name: &str, cases: u32, strategy: S, test: impl Fn(S::Value) -> Result<(), TestCaseError>)
where
    S: Strategy,
    S::Value: std::fmt::Debug,
{
    let cases = env_u64("SCHEDLAB_FUZZ_CASES").map_or(cases, |n| n.clamp(1, u64::from(u32::MAX)) as u32);
    let config = Config { cases, failure_persistence: None, rng_seed: RngSeed::Fixed(seed()), ..Config::default() };
    let tried = AtomicU64::new(0);
    let start = Instant::now();
    let result = TestRunner::new(config).run(&strategy, |value| {
        tried.fetch_add(1, Ordering::Relaxed);
        test(value)
    });
    eprintln!(
        "fuzz {name}: {} inputs in {:.2} s (seed {}, {cases} cases): {} failures",
        tried.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64(),
        seed(),
        u32::from(result.is_err())
    );
    if let Err(e) = result {
        panic!("fuzz {name} (PROPTEST_RNG_SEED={}): {e}", seed());
    }
}

/// Bytes, shown as text.
#[derive(Clone)]
struct Input(Vec<u8>);

impl std::fmt::Debug for Input {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "b\"{}\"", self.0.escape_ascii())
    }
}

const QUEUES_SAMPLE: &str = "queue,pools,max_gpus,max_running_jobs,priority,weight,borrow\n\
    team,,2,,0,1,false\nother,fast;slow,16,4,2,2,true\n";
const PHILLY_VC_SAMPLE: &str = "vc,node num\n6214e9,56\n11cb48,18\n0e4a51,4\n";
const HELIOS_VC_SAMPLE: &str = "date,vc1,vc2,vcB,total\n2020-03-01,64,0,16,80\n2020-04-01,64,32,16,112\n";
const DATASETS_SAMPLE: &str = "dataset,nodes,transfer_s\nimagenet,1;3,5\nc4,0,120.5\n";

/// The committed Slurm samples (tests/data/slurm): each directory's files, by name.
fn slurm_samples() -> Vec<(String, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/slurm");
    let mut samples = Vec::new();
    for dir in std::fs::read_dir(&root).expect("tests/data/slurm") {
        let dir = dir.expect("an entry").path();
        if !dir.is_dir() {
            continue;
        }
        for file in [
            "nodes.txt",
            "partitions.txt",
            "slurm.conf",
            "qos.txt",
            "sacct.txt",
            "gres.conf",
            "config.txt",
            "assoc.txt",
        ] {
            if let Ok(text) = std::fs::read_to_string(dir.join(file)) {
                // The first 80 lines: damage lands near enough to matter, the reads stay fast.
                let head: String = text.split_inclusive('\n').take(80).collect();
                samples.push((format!("{}/{file}", dir.file_name().unwrap().to_string_lossy()), head));
            }
        }
    }
    samples.sort();
    assert!(samples.len() >= 10, "the committed Slurm samples: {}", samples.len());
    samples
}

/// A node list followed by its partitions, as `scontrol show nodes; scontrol show partitions`.
fn slurm_listing() -> Vec<String> {
    let samples = slurm_samples();
    let find = |dir: &str, file: &str| samples.iter().find(|(n, _)| n == &format!("{dir}/{file}")).map(|(_, t)| t);
    samples
        .iter()
        .filter_map(|(name, _)| name.strip_suffix("/nodes.txt"))
        .filter_map(|dir| Some(format!("{}{}", find(dir, "nodes.txt")?, find(dir, "partitions.txt")?)))
        .collect()
}

/// An error's line, if any, must be a line of the input (or the one after a final line end).
fn check_error(error: &TraceError, input: &[u8]) -> Result<(), TestCaseError> {
    let lines = input.iter().filter(|&&b| b == b'\n' || b == b'\r').count() as u64 + 1;
    if let Some(line) = error.line() {
        prop_assert!(line >= 1 && line <= lines, "line {line} of {lines}: {error}");
    }
    prop_assert!(!error.to_string().is_empty());
    Ok(())
}

fn check<T>(result: Result<T, TraceError>, input: &[u8]) -> Result<(), TestCaseError> {
    match result {
        Ok(_) => Ok(()),
        Err(e) => check_error(&e, input),
    }
}

/// Every importer of this file over `input`.
fn read_all(input: &[u8]) -> Result<(), TestCaseError> {
    check(read_slurm_nodes(input, "nodes.txt"), input)?;
    let text = String::from_utf8_lossy(input);
    match read_sacctmgr_qos(&text, "qos.txt") {
        Ok(qos) => check(read_slurm_cluster(input, "nodes.txt", Some(&qos)), input)?,
        Err(e) => check_error(&e, input)?,
    }
    let assoc = read_sacctmgr_assoc(&text, "assoc.txt");
    if let Err(e) = &assoc {
        check_error(e, input)?;
    }
    // The same text as slurm.conf, as scontrol show config and (where it reads) as the associations.
    let files = SlurmFiles { config: Some((&text, "config.txt")), assoc: assoc.as_ref().ok(), qos: None };
    check(read_slurm_import(input, "slurm.conf", files), input)?;
    for clock in [SacctClock::Naive, SacctClock::Offset(-5 * 3600), SacctClock::Zone("Europe/Berlin")] {
        check(read_sacct_on(input, "sacct.txt", clock), input)?;
    }
    check(read_queues_csv(input, "queues.csv"), input)?;
    for borrow in [false, true] {
        check(read_philly_vc_csv(input, "philly_vc.csv", 8, borrow), input)?;
        check(read_helios_vc_csv(input, "vc.csv", None, borrow), input)?;
        check(read_helios_vc_csv(input, "vc.csv", Some("2020-03-01"), borrow), input)?;
    }
    check(read_datasets_csv(input, "datasets.csv"), input)?;
    Ok(())
}

/// What the readers split and parse on.
const TOKENS: &[&str] = &[
    "=",
    "|",
    ",",
    ":",
    ";",
    "\n",
    "\r",
    "\"",
    "(null)",
    "N/A",
    "UNLIMITED",
    "gpu:",
    "gres/gpu=",
    "-",
    "[",
    "]",
    "1-",
    "99999999999999999999",
    "1e400",
    "NodeName=",
    "PartitionName=",
    "Nodes=",
    "\u{0}",
    "\u{ff}",
];

fn damage() -> impl Strategy<Value = Damage> {
    let byte = prop_oneof![prop::sample::select(b",|=:;[]-\n\r\"0123456789 x".to_vec()), any::<u8>()];
    prop_oneof![
        (any::<usize>(), byte.clone()).prop_map(|(i, b)| Damage::Set(i, b)),
        any::<usize>().prop_map(Damage::Delete),
        (any::<usize>(), byte).prop_map(|(i, b)| Damage::Insert(i, b)),
        (any::<usize>(), prop::sample::select(TOKENS)).prop_map(|(i, t)| Damage::Token(i, t)),
        any::<usize>().prop_map(Damage::DuplicateLine),
        any::<usize>().prop_map(Damage::DropLine),
    ]
}

/// Every sample: the committed Slurm files, a node list with its partitions, and the CSVs.
fn samples() -> Vec<String> {
    let mut all: Vec<String> = slurm_samples().into_iter().map(|(_, text)| text).collect();
    all.extend(slurm_listing());
    all.extend([QUEUES_SAMPLE, PHILLY_VC_SAMPLE, HELIOS_VC_SAMPLE, DATASETS_SAMPLE].map(str::to_string));
    all
}

#[test]
fn the_samples_are_read_before_damage() {
    let listing = slurm_listing();
    assert!(!listing.is_empty());
    for text in &listing {
        let import = read_slurm_nodes(text.as_bytes(), "nodes.txt").unwrap();
        assert!(sim::Cluster::new(&import.spec).is_ok());
    }
    let qos = slurm_samples().into_iter().find(|(n, _)| n.ends_with("qos.txt")).unwrap().1;
    assert!(!read_sacctmgr_qos(&qos, "qos.txt").unwrap().is_empty());
    let sacct = slurm_samples().into_iter().find(|(n, _)| n.ends_with("sacct.txt")).unwrap().1;
    for clock in [SacctClock::Naive, SacctClock::Offset(3600), SacctClock::Zone("Europe/Berlin")] {
        assert!(read_sacct_on(sacct.as_bytes(), "sacct.txt", clock).is_ok());
    }
    assert_eq!(read_queues_csv(QUEUES_SAMPLE.as_bytes(), "queues.csv").unwrap().len(), 2);
    assert_eq!(read_philly_vc_csv(PHILLY_VC_SAMPLE.as_bytes(), "philly_vc.csv", 8, false).unwrap().len(), 3);
    assert!(read_helios_vc_csv(HELIOS_VC_SAMPLE.as_bytes(), "vc.csv", None, false).is_ok());
    assert_eq!(read_datasets_csv(DATASETS_SAMPLE.as_bytes(), "datasets.csv").unwrap().len(), 2);
}

#[test]
fn damaged_samples_never_panic_an_importer() {
    let samples = samples();
    let strategy = (prop::sample::select(samples), prop::collection::vec(damage(), 1..6))
        .prop_map(|(text, damages)| Input(damaged(&text, &damages)));
    campaign("damaged_importer_samples", 512, strategy, |input| read_all(&input.0));
}

#[test]
fn arbitrary_bytes_never_panic_an_importer() {
    let strategy = prop::collection::vec(any::<u8>(), 0..600).prop_map(Input);
    campaign("arbitrary_importer_bytes", 256, strategy, |input| read_all(&input.0));
}

#[test]
fn slurm_like_lines_never_panic_an_importer() {
    let line = prop_oneof![
        "NodeName=[a-z0-9\\[\\],-]{0,12} (Gres=gpu:[a-z0-9]{0,5}:[0-9]{0,3} )?(Partitions=[a-z,]{0,8} )?State=[A-Z+]{0,8}",
        "PartitionName=[a-z]{0,6} Nodes=[a-z0-9\\[\\],-]{0,12}( MaxTime=[0-9:-]{0,9})?( QoS=[a-z0-9/]{0,6})?",
        "GresTypes=gpu|NodeName=DEFAULT Gres=gpu:[0-9]{0,2}",
        "[A-Za-z]{1,8}\\|[A-Za-z0-9|/=,:-]{0,40}",
    ];
    let strategy = prop::collection::vec(line, 0..8).prop_map(|lines| Input(lines.join("\n").into_bytes()));
    campaign("slurm_like_lines", 512, strategy, |input| read_all(&input.0));
}

#[test]
fn failure_and_clock_specs_never_panic() {
    let spec = prop_oneof![
        "(weibull|lognormal|exponential|infinitehbd|titan|alibaba2017|x)?:?[a-z0-9=.,/_-]{0,40}",
        any::<String>(),
    ];
    campaign("failure_and_clock_specs", 1024, spec, |text| {
        if let Err(e) = text.parse::<traces::FailureSpec>() {
            prop_assert!(!e.to_string().is_empty());
        }
        if let Err(e) = SacctClock::parse(&text) {
            prop_assert!(!e.is_empty());
        }
        Ok(())
    });
}
