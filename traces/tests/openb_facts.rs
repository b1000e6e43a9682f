//! The openb pod list importer against the facts of alibaba-gpu-v2023-openb/SOURCE.md (computed
//! there with pandas): every pod is either a job or counted as skipped, GPU shares and times
//! are exact, and the notes say what was left out.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use traces::{Format, OpenbReport, TraceStats, load, read_openb_pods};

const POD_LIST: &str = "openb_pod_list_default.csv";

/// The openb trace directory, or `None` (with a note) when this checkout has no data.
fn openb_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/traces/alibaba-gpu-v2023-openb");
    if dir.join(POD_LIST).is_file() {
        Some(dir)
    } else {
        eprintln!("SKIPPED: {} not found; openb facts not checked", dir.join(POD_LIST).display());
        None
    }
}

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!((actual - expected).abs() <= 0.001, "{what}: {actual} vs expected {expected}");
}

#[test]
fn openb_pods_match_source_md() {
    let Some(dir) = openb_dir() else {
        return;
    };
    let path = dir.join(POD_LIST);
    let trace = load(&path, Format::Openb).unwrap_or_else(|e| panic!("{e}"));
    assert!(trace.cluster.is_none() && trace.events.is_empty());
    let file = std::fs::File::open(&path).unwrap();
    let import = read_openb_pods(file, "pods").unwrap();
    assert_eq!(import.workload, trace.workload);

    // 8,152 pods: 7,064 with GPUs imported, 1,088 CPU-only counted, none lost.
    let r = &import.report;
    assert_eq!(
        *r,
        OpenbReport {
            pods: 8_152,
            imported: 7_064,
            cpu_only: 1_088,
            fractional: 3_078,
            // 897 Pending pods, 36 of them CPU-only.
            never_scheduled: 861,
            // openb-pod-7285: Pending, created and deleted at 12,774,042 s.
            zero_occupancy: 1,
            // 1,870 Failed pods, 1 of them CPU-only.
            failed: 1_869,
            not_modelled: vec!["cpu_milli", "memory_mib"],
        }
    );
    assert_eq!(
        trace.notes,
        [
            "skipped 1,088 CPU-only pods (num_gpu = 0; schedlab schedules GPUs)",
            "not modelled: `cpu_milli`, `memory_mib` (CPU and memory requests do not limit placement)",
            "861 pods never scheduled (empty scheduled_time) replayed with work = deletion_time - creation_time",
            "1 pod with zero occupancy (deleted in the second it was scheduled, or created if never scheduled) given 1 \
             ms of work",
            "1,869 pods with pod_phase Failed replayed as normal jobs (the trace gives no failure reason; their \
             occupancy already includes the time they ran)",
        ]
    );

    // FORMAT.md shows these notes.
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/FORMAT.md")).unwrap();
    for note in &trace.notes {
        assert!(doc.lines().any(|l| l == note), "FORMAT.md lacks the note line {note:?}");
    }

    let stats = TraceStats::of(&trace.workload);
    assert_eq!((stats.jobs, stats.tasks, stats.multi_task_jobs), (7_064, 7_064, 0));
    assert_eq!(stats.fractional_tasks, 3_078);
    // SOURCE.md: GPUs per pod 0: 1,088 (skipped) · 1: 6,989 · 2: 16 · 4: 15 · 8: 44.
    assert_eq!(stats.gpus_per_job, BTreeMap::from([(1, 6_989), (2, 16), (4, 15), (8, 44)]));
    // SOURCE.md: qos LS 4,647 · BE 3,398 · Burstable 100 · Guaranteed 7, of which CPU-only
    // pods are LS 636 · BE 450 · Burstable 1 · Guaranteed 1.
    let qos = BTreeMap::from([
        ("LS".to_owned(), 4_011),
        ("BE".to_owned(), 2_948),
        ("Burstable".to_owned(), 99),
        ("Guaranteed".to_owned(), 6),
    ]);
    assert_eq!(stats.jobs_per_queue, qos);
    assert_eq!(stats.jobs_without_queue, 0);
    // SOURCE.md: earliest creation 0 s, latest 12,901,761 s (both GPU pods).
    assert_eq!((stats.earliest_submit_ms, stats.latest_submit_ms), (Some(0), Some(12_901_761_000)));
    // Shares counted as shares; never-scheduled pods add their deletion - creation (28.062 h).
    assert_close(stats.gpu_hours, 51_498.736, "GPU-hours with shares");
    assert_close(stats.fractional_gpu_hours, 7_094.033, "GPU-hours of the shared pods");
    let d = stats.duration.expect("durations");
    assert_eq!((d.min_ms, d.max_ms), (1, 12_537_496_000));
}

/// SOURCE.md's GPU-hours restricted to scheduled pods, computed from the imported jobs: the
/// fractional figure (51,470.674) counts CPU-only pods as 0, so the imported jobs must give it
/// all; the whole-GPU one (59,612.211) likewise.
#[test]
fn scheduled_pods_give_source_md_gpu_hours() {
    let Some(dir) = openb_dir() else {
        return;
    };
    let path = dir.join(POD_LIST);
    let text = std::fs::read_to_string(&path).unwrap();
    // The file has no quoted fields: `name` is the first column, `scheduled_time` the last.
    let never_scheduled: BTreeSet<&str> =
        text.lines().skip(1).filter(|l| l.ends_with(',')).filter_map(|l| l.split(',').next()).collect();
    assert_eq!(never_scheduled.len(), 897);
    let workload = load(&path, Format::Openb).unwrap().workload;
    let (mut shares_mgpu_ms, mut whole_mgpu_ms) = (0u128, 0u128);
    for job in workload.jobs().iter().filter(|j| !never_scheduled.contains(j.name.as_str())) {
        let task = &job.tasks[0];
        let work = u128::from(task.work.as_ms());
        shares_mgpu_ms += work * task.gpu_milli.map_or(1000 * u128::from(task.gpus), |m| u128::from(m.get()));
        whole_mgpu_ms += work * u128::from(task.gpus) * 1000;
    }
    assert_close(shares_mgpu_ms as f64 / 3.6e9, 51_470.674, "fractional GPU-hours, scheduled pods");
    assert_close(whole_mgpu_ms as f64 / 3.6e9, 59_612.211, "whole GPU-hours, scheduled pods");
}

#[test]
fn openb_rows_are_mapped_as_documented() {
    let Some(dir) = openb_dir() else {
        return;
    };
    let workload = load(&dir.join(POD_LIST), Format::Openb).unwrap().workload;
    let job = |name: &str| workload.jobs().iter().find(|j| j.name == name).unwrap_or_else(|| panic!("{name}"));
    // `openb-pod-0000,12000,16384,1,1000,,LS,Running,0,12537496,0`: a whole GPU.
    let p = job("openb-pod-0000");
    let t = &p.tasks[0];
    assert_eq!((p.submit.as_ms(), p.queue.as_deref(), t.gpus, t.gpu_milli), (0, Some("LS"), 1, None));
    assert_eq!((t.work.as_ms(), t.gpu_type.as_deref(), t.single_node), (12_537_496_000, None, true));
    // `openb-pod-0001,6000,12288,1,460,,LS,Running,427061,12902960,427061`: a share.
    let t = &job("openb-pod-0001").tasks[0];
    assert_eq!((t.gpu_milli.map(|m| m.get()), t.work.as_ms()), (Some(460), (12_902_960 - 427_061) * 1000));
    // The one zero occupancy: 1 ms, kept.
    let p = job("openb-pod-7285");
    assert_eq!(
        (p.submit.as_ms(), p.tasks[0].work.as_ms(), p.tasks[0].gpu_milli.map(|m| m.get())),
        (12_774_042_000, 1, Some(230))
    );
    // CPU-only pods are not jobs.
    assert!(workload.jobs().iter().all(|j| j.gpus() >= 1));
    assert!(workload.jobs().windows(2).all(|w| w[0].submit <= w[1].submit));
}

#[test]
fn openb_validates_clean_and_round_trips() {
    let Some(dir) = openb_dir() else {
        return;
    };
    let path = dir.join(POD_LIST);
    assert_eq!(traces::validate(&path, Format::Openb), []);
    let workload = load(&path, Format::Openb).unwrap().workload;
    let mut out = Vec::new();
    traces::write_trace_jobs_csv(&workload, &mut out).unwrap();
    assert_eq!(traces::read_jobs_csv(out.as_slice(), "jobs.csv").unwrap(), workload);
    // The node list is another format.
    let errors = traces::validate(&dir.join("openb_node_list_gpu_node.csv"), Format::Openb);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].to_string().contains("no column `name`"), "{}", errors[0]);
}
