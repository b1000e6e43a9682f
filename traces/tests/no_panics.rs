//! Every reader, fed garbage or real rows with random damage, returns `Ok` or `Err` and never
//! panics; when it returns an error, the error points at a line that exists.

mod common;

use common::damage::{Damage, damaged};

use proptest::prelude::*;
use sim::ClusterSpec;
use traces::failures::{InfiniteHbdOptions, read_alibaba2017, read_infinitehbd, read_titan};
use traces::{
    Format, SynthConfig, TraceError, parse_cluster_shorthand, read_cluster_csv, read_events_csv, read_trace,
    read_workload, validate_workload,
};

const ITP_SAMPLE: &str = "job_id,submission_time,duration,num_gpu\n\
    965d744f-0445-c1a8-12af-97e4c536c66e,1932025,2429,64\n\
    fb10987f-20ac-3703-eb67-146a77a6e17c,2000581,1532,1\n";
const PHILLY_SAMPLE: &str = "timestamp,duration,num_gpus,gpu_time,cluster\n\
    2017-10-09 07:01:55,66.0,1,66.0,11cb48\n\
    2017-10-09 06:13:03,2951.0,1,2951.0,6214e9\n\n";
const OPENB_SAMPLE: &str = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,\
    deletion_time,scheduled_time\n\
    openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0\n\
    openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061\n\
    openb-pod-0017,88000,327680,8,1000,,LS,Failed,9964972,12902960,9964974\n\
    openb-pod-0018,4000,8192,0,0,,BE,Running,9964980,12902960,9964980\n\
    openb-pod-7285,8000,30517,1,230,,BE,Pending,12774042,12774042,\n";
const CLUSTER_SAMPLE: &str = "pool,gpu_type,nodes,gpus_per_node,nodes_per_rack\n\
    fast,A100,8,8,4\nslow,V100,32,8,\n";
const EVENTS_SAMPLE: &str = "time_s,kind,node,gpu,repair_s\n\
    10.5,gpu_fail,1,7,3600\n12,node_fail,30,,\n50,heartbeat,4,,\n";

const INFINITEHBD_SAMPLE: &str = "[\n    {\n        \"node_id\": \"6f24e2b2\",\n        \"event_time\": 3.8955,\n        \
    \"event_type\": \"fault_start\",\n        \"fault_type\": {\"Level\": \"Hardware Failure\", \"Class\": \"GPU\", \
    \"Desc\": \"GPU xid Error\"}\n    },\n    {\"node_id\": \"6f24e2b2\", \"event_time\": 4.25, \"event_type\": \
    \"fault_end\", \"fault_type\": {\"Level\": \"Hardware Failure\", \"Class\": \"GPU\", \"Desc\": \"GPU xid Error\"}}\n]\n";
const TITAN_SAMPLE: &str = "SN,location,insert,remove,duration,out,event\n\
    0320117100060,c11-2c1s4n1,2017-04-09 21:36:19,2019-08-01 20:07:33,72916274,FALSE,\n\
    0320117100219,c13-5c2s2n1,2017-04-09 21:36:19,2018-03-03 10:04:58,28301319,FALSE,DBE\n\
    0323712007755,c12-7c1s5n0,,2016-07-19 20:15:20,,,OTB\n";
const ALIBABA_SAMPLE: &str = "0,1148,add,,64,0.6900059534594777,1\n0,1075,add,,64,0.69,1\n\
    1351,1075,softerror,agent_check,0,0,0\n777,930,softerror,machine_fail,0,0,0\n";

/// The first `events` events of the real InfiniteHBD trace as a JSON array, else a sample.
fn infinitehbd_seed(events: usize) -> String {
    let Some(text) = common::head_of("infinitehbd-gpu-node-faults/fault_trace.json", 10 * events + 1) else {
        return INFINITEHBD_SAMPLE.to_owned();
    };
    // Each event object of the file is 10 lines; close the array after the last whole one.
    format!("{}\n]\n", text.trim_end().trim_end_matches(','))
}

/// The Alibaba 2017 file's first adds and every error, else a sample.
fn alibaba_seed() -> String {
    let Some(text) = common::head_of("alibaba-v2017-server-events/server_event.csv", 1_400) else {
        return ALIBABA_SAMPLE.to_owned();
    };
    let lines: Vec<&str> = text.lines().collect();
    let mut seed: Vec<&str> = lines.iter().take(40).copied().collect();
    seed.extend(lines.iter().filter(|l| l.contains("error")));
    seed.join("\n") + "\n"
}

/// Runs the failure trace importers over `input`; none may panic.
fn read_failures(input: &[u8]) -> Result<(), TestCaseError> {
    let results = [
        read_infinitehbd(input, "fault_trace.json", &InfiniteHbdOptions::default()).map(|_| ()),
        read_infinitehbd(input, "fault_trace.json", &InfiniteHbdOptions { nodes: 1, exclude_classes: vec![] })
            .map(|_| ()),
        read_titan(input, "gc_full.csv").map(|_| ()),
        read_alibaba2017(input, "server_event.csv", sim::SimDuration(1)).map(|_| ()),
    ];
    for result in results {
        if let Err(e) = result {
            check_error_line(&e, input)?;
        }
    }
    Ok(())
}

/// Real rows to damage: the first 200 lines of the real file when present, else a sample.
fn seed_text(relative: &str, fallback: &str) -> String {
    common::head_of(relative, 200).unwrap_or_else(|| fallback.to_owned())
}

fn canonical_seed() -> String {
    let workload = SynthConfig { jobs: 150, ..SynthConfig::default() }.generate().unwrap();
    // Every third single-GPU task shares its GPU, so damage reaches `gpu_milli` too.
    let jobs = workload.jobs().iter().cloned().enumerate().map(|(i, mut job)| {
        for task in job.tasks.iter_mut().filter(|t| t.gpus == 1 && i % 3 == 0) {
            task.gpu_milli = sim::gpu_share(1 + (i as u32 * 37) % 999);
        }
        job
    });
    let workload = sim::Workload::new(jobs.collect()).unwrap();
    let mut out = Vec::new();
    traces::write_trace_jobs_csv(&workload, &mut out).unwrap();
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
    for format in Format::ALL {
        match read_trace(input, "fuzz.csv", format) {
            Ok(trace) => {
                prop_assert!(!trace.workload.is_empty());
                prop_assert!(trace.notes.iter().all(|n| !n.is_empty() && !n.contains('\n')));
            }
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
    read_failures(input)
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

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(input in prop::collection::vec(any::<u8>(), 0..600)) {
        read_all(&input)?;
    }

    #[test]
    fn csv_like_text_after_a_valid_header_never_panics(
        header in prop::sample::select(vec![
            "job_id,task_id,submit_s,duration_s,gpus,gpu_type,single_node,estimate_s,queue,checkpoint_s,restart_overhead_s,deadline_s\n",
            "job_id,submission_time,duration,num_gpu\n",
            "timestamp,duration,num_gpus,gpu_time,cluster\n",
            "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n",
            "pool,gpu_type,nodes,gpus_per_node,nodes_per_rack\n",
            "time_s,kind,node,gpu,repair_s\n",
        ]),
        body in "[0-9a-z,.:\" \n\r_-]{0,400}",
    ) {
        read_all(format!("{header}{body}").as_bytes())?;
    }

    #[test]
    fn damaged_real_rows_never_panic(
        which in 0usize..7,
        damages in prop::collection::vec(damage(), 1..5),
    ) {
        let text = match which {
            0 => canonical_seed(),
            1 => seed_text("microsoft-itp-elasticflow/cluster01.csv", ITP_SAMPLE),
            2 => seed_text("philly-pollux/philly.csv", PHILLY_SAMPLE),
            3 => CLUSTER_SAMPLE.to_owned(),
            4 => seed_text("alibaba-gpu-v2023-openb/openb_pod_list_default.csv", OPENB_SAMPLE),
            5 => OPENB_SAMPLE.to_owned(),
            _ => EVENTS_SAMPLE.to_owned(),
        };
        read_all(&damaged(&text, &damages))?;
    }

    #[test]
    fn damaged_failure_traces_never_panic(
        which in 0usize..3,
        damages in prop::collection::vec(damage(), 1..5),
    ) {
        let text = match which {
            0 => infinitehbd_seed(30),
            1 => seed_text("olcf-titan-gpu-lifetimes/gc_full.csv", TITAN_SAMPLE),
            _ => alibaba_seed(),
        };
        read_failures(&damaged(&text, &damages))?;
    }

    #[test]
    fn json_like_text_never_panics(body in r#"[\[\]{}",:0-9.eE+ \n-]{0,200}|\[\{"node_id": "[a-z]{0,3}", "event_time": [0-9.e-]{0,8}[^"]{0,60}"#) {
        read_failures(body.as_bytes())?;
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
    let mut lines: Vec<String> = text.trim_end().lines().map(str::to_owned).collect();
    let target = lines.len().min(50) - 1;
    let mut fields: Vec<&str> = lines[target].split(',').collect();
    fields[1] = "1.5e3";
    lines[target] = fields.join(",");
    let damaged = lines.join("\n");
    let e = read_workload(damaged.as_bytes(), "philly.csv", Format::Philly).unwrap_err();
    assert_eq!(e.line(), Some(target as u64 + 1), "{e}");
    assert!(e.to_string().contains("field `duration`: expected a plain decimal"), "{e}");
}

#[test]
fn the_job_seeds_are_valid_before_damage() {
    let canonical = read_workload(canonical_seed().as_bytes(), "jobs.csv", Format::Canonical).unwrap();
    assert!(canonical.jobs().iter().any(|j| j.tasks.iter().any(|t| t.gpu_milli.is_some())));
    let openb = seed_text("alibaba-gpu-v2023-openb/openb_pod_list_default.csv", OPENB_SAMPLE);
    assert!(read_workload(openb.as_bytes(), "pods.csv", Format::Openb).is_ok());
    let sample = read_trace(OPENB_SAMPLE.as_bytes(), "pods.csv", Format::Openb).unwrap();
    assert_eq!((sample.workload.len(), sample.notes.len()), (4, 5));
}

#[test]
fn the_failure_seeds_are_valid_before_damage() {
    assert_eq!(
        read_infinitehbd(infinitehbd_seed(30).as_bytes(), "f", &InfiniteHbdOptions::keep_all()).map(|_| ()),
        Ok(())
    );
    let titan = seed_text("olcf-titan-gpu-lifetimes/gc_full.csv", TITAN_SAMPLE);
    assert!(read_titan(titan.as_bytes(), "g").is_ok());
    let alibaba = read_alibaba2017(alibaba_seed().as_bytes(), "s", sim::SimDuration(1)).unwrap();
    assert!(!alibaba.faults().is_empty());
    // The fallbacks for a checkout without the real traces.
    assert!(read_infinitehbd(INFINITEHBD_SAMPLE.as_bytes(), "f", &InfiniteHbdOptions::keep_all()).is_ok());
    assert!(read_titan(TITAN_SAMPLE.as_bytes(), "g").is_ok());
    assert!(read_alibaba2017(ALIBABA_SAMPLE.as_bytes(), "s", sim::SimDuration(1)).is_ok());
}
