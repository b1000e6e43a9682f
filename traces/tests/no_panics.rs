//! Every reader, fed garbage or real rows with random damage, returns `Ok` or `Err` and never
//! panics; when it returns an error, the error points at a line that exists.

mod common;

use proptest::prelude::*;
use sim::ClusterSpec;
use traces::{
    Format, SynthConfig, TraceError, parse_cluster_shorthand, read_cluster_csv, read_events_csv, read_workload,
    validate_workload,
};

const ITP_SAMPLE: &str = "job_id,submission_time,duration,num_gpu\n\
    965d744f-0445-c1a8-12af-97e4c536c66e,1932025,2429,64\n\
    fb10987f-20ac-3703-eb67-146a77a6e17c,2000581,1532,1\n";
const PHILLY_SAMPLE: &str = "timestamp,duration,num_gpus,gpu_time,cluster\n\
    2017-10-09 07:01:55,66.0,1,66.0,11cb48\n\
    2017-10-09 06:13:03,2951.0,1,2951.0,6214e9\n\n";
const CLUSTER_SAMPLE: &str = "pool,gpu_type,nodes,gpus_per_node,nodes_per_rack\n\
    fast,A100,8,8,4\nslow,V100,32,8,\n";
const EVENTS_SAMPLE: &str = "time_s,kind,node,gpu,repair_s\n\
    10.5,gpu_fail,1,7,3600\n12,node_fail,30,,\n50,heartbeat,4,,\n";

/// Real rows to damage: the first 200 lines of the real file when present, else a sample.
fn seed_text(relative: &str, fallback: &str) -> String {
    common::head_of(relative, 200).unwrap_or_else(|| fallback.to_owned())
}

fn canonical_seed() -> String {
    let workload = SynthConfig { jobs: 150, ..SynthConfig::default() }.generate().unwrap();
    let mut out = Vec::new();
    traces::write_jobs_csv(&workload, &mut out).unwrap();
    String::from_utf8(out).unwrap()
}

fn cluster() -> ClusterSpec {
    parse_cluster_shorthand("8x8:A100,32x8:V100").unwrap()
}

/// An error's line, if any, must be a line of the input (or the one after a final line end).
fn check_error_line(error: &TraceError, input: &[u8]) -> Result<(), TestCaseError> {
    let lines = input.iter().filter(|&&b| b == b'\n' || b == b'\r').count() as u64 + 1;
    if let Some(line) = error.line() {
        prop_assert!(line >= 1 && line <= lines, "line {line} of {lines}: {error}");
    }
    prop_assert!(!error.to_string().is_empty());
    Ok(())
}

/// Runs every reader over `input`; none may panic.
fn read_all(input: &[u8]) -> Result<(), TestCaseError> {
    for format in [Format::Canonical, Format::Itp, Format::Philly] {
        match read_workload(input, "fuzz.csv", format) {
            Ok(w) => prop_assert!(!w.is_empty()),
            Err(e) => check_error_line(&e, input)?,
        }
        let errors = validate_workload(input, "fuzz.csv", format);
        prop_assert!(errors.len() <= traces::MAX_ERRORS);
        for e in &errors {
            check_error_line(e, input)?;
        }
    }
    if let Err(e) = read_cluster_csv(input, "cluster.csv") {
        check_error_line(&e, input)?;
    }
    for spec in [None, Some(cluster())] {
        if let Err(e) = read_events_csv(input, "events.csv", spec.as_ref()) {
            check_error_line(&e, input)?;
        }
    }
    let _ = parse_cluster_shorthand(&String::from_utf8_lossy(input));
    Ok(())
}

/// One damage to a text: overwrite, delete or insert a byte, or duplicate or drop a line.
#[derive(Debug, Clone)]
enum Damage {
    Set(usize, u8),
    Delete(usize),
    Insert(usize, u8),
    DuplicateLine(usize),
    DropLine(usize),
}

/// Bytes that matter to CSV and to our parsers, plus some that should never appear.
fn interesting_byte() -> impl Strategy<Value = u8> {
    prop_oneof![prop::sample::select(b",\"\n\r.-:e0123456789 x\t".to_vec()), any::<u8>(),]
}

fn damage() -> impl Strategy<Value = Damage> {
    prop_oneof![
        (any::<usize>(), interesting_byte()).prop_map(|(i, b)| Damage::Set(i, b)),
        any::<usize>().prop_map(Damage::Delete),
        (any::<usize>(), interesting_byte()).prop_map(|(i, b)| Damage::Insert(i, b)),
        any::<usize>().prop_map(Damage::DuplicateLine),
        any::<usize>().prop_map(Damage::DropLine),
    ]
}

fn apply(text: &str, damages: &[Damage]) -> Vec<u8> {
    let mut bytes = text.as_bytes().to_vec();
    for d in damages {
        let len = bytes.len().max(1);
        match *d {
            Damage::Set(i, b) if !bytes.is_empty() => bytes[i % len] = b,
            Damage::Delete(i) if !bytes.is_empty() => {
                bytes.remove(i % len);
            }
            Damage::Insert(i, b) => bytes.insert(i % (bytes.len() + 1), b),
            Damage::DuplicateLine(i) | Damage::DropLine(i) => {
                let mut lines: Vec<Vec<u8>> = bytes.split_inclusive(|&b| b == b'\n').map(<[u8]>::to_vec).collect();
                if !lines.is_empty() {
                    let at = i % lines.len();
                    if matches!(d, Damage::DuplicateLine(_)) {
                        let line = lines[at].clone();
                        lines.insert(at, line);
                    } else {
                        lines.remove(at);
                    }
                }
                bytes = lines.concat();
            }
            _ => {}
        }
    }
    bytes
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..600)) {
        read_all(&input)?;
    }

    #[test]
    fn csv_like_text_after_a_valid_header_never_panics(
        header in prop::sample::select(vec![
            "job_id,task_id,submit_s,duration_s,gpus,gpu_type,single_node,estimate_s,queue\n",
            "job_id,submission_time,duration,num_gpu\n",
            "timestamp,duration,num_gpus,gpu_time,cluster\n",
            "pool,gpu_type,nodes,gpus_per_node,nodes_per_rack\n",
            "time_s,kind,node,gpu,repair_s\n",
        ]),
        body in "[0-9a-z,.:\" \n\r_-]{0,400}",
    ) {
        read_all(format!("{header}{body}").as_bytes())?;
    }

    #[test]
    fn damaged_real_rows_never_panic(
        which in 0usize..5,
        damages in prop::collection::vec(damage(), 1..5),
    ) {
        let text = match which {
            0 => canonical_seed(),
            1 => seed_text("microsoft-itp-elasticflow/cluster01.csv", ITP_SAMPLE),
            2 => seed_text("philly-pollux/philly.csv", PHILLY_SAMPLE),
            3 => CLUSTER_SAMPLE.to_owned(),
            _ => EVENTS_SAMPLE.to_owned(),
        };
        read_all(&apply(&text, &damages))?;
    }

    #[test]
    fn shorthand_never_panics(text in "[0-9xX:,a-zA-Z -]{0,40}") {
        match parse_cluster_shorthand(&text) {
            Ok(spec) => prop_assert!(sim::Cluster::new(&spec).is_ok()),
            Err(e) => prop_assert!(e.to_string().starts_with("cluster `")),
        }
    }
}

#[test]
fn one_damaged_field_is_reported_at_its_line() {
    // Damage the duration of row 50 of the real (or sample) Philly text: the error must name
    // exactly that line and column.
    let text = seed_text("philly-pollux/philly.csv", PHILLY_SAMPLE);
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    let target = lines.len().min(50) - 1;
    let mut fields: Vec<&str> = lines[target].split(',').collect();
    fields[1] = "1.5e3";
    lines[target] = fields.join(",");
    let damaged = lines.join("\n");
    let e = read_workload(damaged.as_bytes(), "philly.csv", Format::Philly).unwrap_err();
    assert_eq!(e.line(), Some(target as u64 + 1), "{e}");
    assert!(e.to_string().contains("field `duration`: expected a plain decimal"), "{e}");
}
