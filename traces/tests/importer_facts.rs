//! The importers against the facts published in each trace's SOURCE.md (computed there with
//! pandas): if these hold, the importers read every row, convert time exactly, and keep the
//! rows a careless importer would drop (Philly's duplicates, its trailing blank line).

mod common;

use std::collections::BTreeMap;
use std::time::Instant;
use traces::timeparse::parse_datetime_ms;
use traces::{Format, TraceStats, load};

fn assert_close(actual: f64, expected: f64, what: &str) {
    assert!((actual - expected).abs() <= 0.001, "{what}: {actual} vs published {expected}");
}

#[test]
fn philly_matches_source_md() {
    let Some(dir) = common::shared_traces() else {
        return;
    };
    let started = Instant::now();
    let trace = load(&dir.join("philly-pollux/philly.csv"), Format::Philly).expect("philly.csv loads");
    eprintln!("philly.csv: {} jobs loaded in {:?}", trace.workload.len(), started.elapsed());
    assert!(trace.cluster.is_none() && trace.events.is_empty());
    let stats = TraceStats::of(&trace.workload);

    assert_eq!(stats.jobs, 82_247);
    assert_eq!(stats.tasks, 82_247);
    assert_close(stats.gpu_hours, 978_078.473, "GPU-hours");
    let histogram = BTreeMap::from([
        (1, 76_627),
        (2, 1_818),
        (4, 1_870),
        (8, 1_643),
        (12, 7),
        (16, 199),
        (24, 7),
        (32, 67),
        (64, 6),
        (128, 3),
    ]);
    assert_eq!(stats.gpus_per_job, histogram);
    assert_eq!(stats.earliest_submit_ms, Some(parse_datetime_ms("2017-09-04 10:30:41").unwrap()));
    assert_eq!(stats.latest_submit_ms, Some(parse_datetime_ms("2017-12-22 08:02:11").unwrap()));

    // Published: min 1, median 1,144, p90 11,264.8, p99 254,758.42, max 4,628,226 seconds.
    let d = stats.duration.expect("durations");
    assert_eq!(
        (d.min_ms, d.p50_ms, d.p90_ms, d.p99_ms, d.max_ms),
        (1_000, 1_144_000, 11_264_800, 254_758_420, 4_628_226_000)
    );

    let per_vc: BTreeMap<String, u64> = [
        ("6214e9", 41_226),
        ("11cb48", 16_091),
        ("6c71a0", 9_953),
        ("b436b2", 7_423),
        ("103959", 1_934),
        ("ee9e8c", 1_511),
        ("0e4a51", 1_435),
        ("ed69ec", 1_137),
        ("7f04ca", 723),
        ("2869ce", 422),
        ("e13805", 374),
        ("23dbec", 8),
        ("51b7ef", 4),
        ("925e2b", 3),
        ("795a4c", 3),
    ]
    .into_iter()
    .map(|(vc, n)| (vc.to_owned(), n))
    .collect();
    assert_eq!(stats.jobs_per_queue, per_vc);
    assert_eq!(stats.jobs_without_queue, 0);
}

#[test]
fn philly_keeps_duplicates_and_names_jobs_by_line() {
    let Some(dir) = common::shared_traces() else {
        return;
    };
    let workload = load(&dir.join("philly-pollux/philly.csv"), Format::Philly).unwrap().workload;
    // 65 exact duplicate rows: same second, duration, GPUs and VC as an earlier row.
    let mut seen = BTreeMap::new();
    for job in workload.jobs() {
        let key = (job.submit, job.tasks[0].work, job.tasks[0].gpus, job.queue.clone());
        *seen.entry(key).or_insert(0u64) += 1;
    }
    let duplicates: u64 = seen.values().map(|n| n - 1).sum();
    assert_eq!(duplicates, 65);
    // Line 2 of the file: `2017-10-09 07:01:55,66.0,1,66.0,11cb48`.
    let first_row = workload.jobs().iter().find(|j| j.name == "philly-2").expect("philly-2");
    assert_eq!(first_row.submit.as_ms(), parse_datetime_ms("2017-10-09 07:01:55").unwrap());
    assert_eq!(first_row.tasks[0].work.as_ms(), 66_000);
    assert_eq!(first_row.queue.as_deref(), Some("11cb48"));
    // The README's example job, 74 s + 193,182 s of attempts on 8 GPUs in VC ee9e8c.
    let example = parse_datetime_ms("2017-10-07 01:11:39").unwrap();
    assert!(workload.jobs().iter().any(|j| j.submit.as_ms() == example
        && j.tasks[0].work.as_ms() == 193_256_000
        && j.gpus() == 8
        && j.queue.as_deref() == Some("ee9e8c")));
    // Jobs are in submit order (the file is not).
    assert!(workload.jobs().windows(2).all(|w| w[0].submit <= w[1].submit));
}

struct ItpFacts {
    cluster: &'static str,
    jobs: u64,
    gpu_hours: f64,
    earliest_s: u64,
    latest_s: u64,
    /// Duration min / median / max in milliseconds.
    duration_ms: (u64, u64, u64),
    gpus_per_job: &'static [(u64, u64)],
}

/// The table of microsoft-itp-elasticflow/SOURCE.md.
const ITP: [ItpFacts; 9] = [
    ItpFacts {
        cluster: "cluster01",
        jobs: 1_595,
        gpu_hours: 22_740.126,
        earliest_s: 1_932_025,
        latest_s: 4_848_400,
        duration_ms: (612_000, 8_287_000, 144_151_000),
        gpus_per_job: &[(1, 1_530), (2, 11), (4, 6), (8, 5), (16, 6), (32, 11), (64, 26)],
    },
    ItpFacts {
        cluster: "cluster02",
        jobs: 5_778,
        gpu_hours: 123_748.363,
        earliest_s: 5_010,
        latest_s: 5_166_386,
        duration_ms: (600_000, 6_181_500, 1_114_383_000),
        gpus_per_job: &[(1, 4_937), (2, 102), (4, 301), (8, 352), (16, 36), (32, 36), (64, 14)],
    },
    ItpFacts {
        cluster: "cluster03",
        jobs: 3_011,
        gpu_hours: 165_442.521,
        earliest_s: 911_907,
        latest_s: 5_175_336,
        duration_ms: (603_000, 9_856_000, 1_022_894_000),
        gpus_per_job: &[(1, 1_014), (2, 85), (8, 1_777), (16, 94), (32, 24), (64, 17)],
    },
    ItpFacts {
        cluster: "cluster04",
        jobs: 15_802,
        gpu_hours: 705_682.885,
        earliest_s: 5_810,
        latest_s: 5_142_627,
        duration_ms: (600_000, 7_949_000, 1_237_189_000),
        gpus_per_job: &[(1, 11_924), (2, 125), (4, 532), (8, 2_779), (16, 182), (32, 254), (64, 6)],
    },
    ItpFacts {
        cluster: "cluster05",
        jobs: 3_629,
        gpu_hours: 14_303.142,
        earliest_s: 9_940,
        latest_s: 5_130_398,
        duration_ms: (600_000, 7_699_000, 203_901_000),
        gpus_per_job: &[(1, 3_465), (2, 50), (4, 37), (8, 77)],
    },
    ItpFacts {
        cluster: "cluster06",
        jobs: 2_396,
        gpu_hours: 123_878.656,
        earliest_s: 16_566,
        latest_s: 5_168_464,
        duration_ms: (600_000, 4_320_500, 899_735_000),
        gpus_per_job: &[(1, 1_073), (2, 6), (4, 148), (8, 1_082), (16, 59), (32, 20), (64, 8)],
    },
    ItpFacts {
        cluster: "cluster08",
        jobs: 13_047,
        gpu_hours: 67_099.982,
        earliest_s: 3_793,
        latest_s: 3_667_158,
        duration_ms: (600_000, 13_677_000, 1_573_360_000),
        gpus_per_job: &[(1, 12_558), (2, 217), (4, 262), (8, 1), (32, 9)],
    },
    ItpFacts {
        cluster: "cluster09",
        jobs: 11_134,
        gpu_hours: 39_000.760,
        earliest_s: 2_816,
        latest_s: 4_534_015,
        duration_ms: (668_000, 11_764_000, 135_719_000),
        gpus_per_job: &[(1, 11_134)],
    },
    ItpFacts {
        cluster: "cluster10",
        jobs: 260,
        gpu_hours: 4_023.491,
        earliest_s: 2_266_647,
        latest_s: 5_104_565,
        duration_ms: (602_000, 17_761_000, 211_425_000),
        gpus_per_job: &[(1, 193), (2, 51), (4, 14), (16, 2)],
    },
];

#[test]
fn itp_clusters_match_source_md() {
    let Some(dir) = common::shared_traces() else {
        return;
    };
    let (mut jobs, mut gpu_hours, mut earliest, mut latest) = (0, 0.0, u64::MAX, 0);
    let mut histogram = BTreeMap::new();
    for facts in &ITP {
        let path = dir.join(format!("microsoft-itp-elasticflow/{}.csv", facts.cluster));
        let trace = load(&path, Format::Itp).unwrap_or_else(|e| panic!("{e}"));
        let stats = TraceStats::of(&trace.workload);
        let name = facts.cluster;
        assert_eq!(stats.jobs, facts.jobs, "{name} jobs");
        assert_close(stats.gpu_hours, facts.gpu_hours, name);
        assert_eq!(stats.earliest_submit_ms, Some(facts.earliest_s * 1000), "{name} earliest");
        assert_eq!(stats.latest_submit_ms, Some(facts.latest_s * 1000), "{name} latest");
        let d = stats.duration.unwrap();
        assert_eq!((d.min_ms, d.p50_ms, d.max_ms), facts.duration_ms, "{name} durations");
        assert_eq!(stats.gpus_per_job, facts.gpus_per_job.iter().copied().collect(), "{name} GPUs per job");
        assert_eq!(stats.jobs_without_queue, facts.jobs, "ITP has no queues");
        jobs += stats.jobs;
        gpu_hours += stats.gpu_hours;
        earliest = earliest.min(stats.earliest_submit_ms.unwrap());
        latest = latest.max(stats.latest_submit_ms.unwrap());
        for (gpus, n) in stats.gpus_per_job {
            *histogram.entry(gpus).or_insert(0) += n;
        }
    }
    assert_eq!(jobs, 56_652);
    assert_close(gpu_hours, 1_265_919.927, "ITP total GPU-hours");
    assert_eq!((earliest, latest), (2_816_000, 5_175_336_000));
    let published = BTreeMap::from([(1, 47_828), (2, 647), (4, 1_300), (8, 6_073), (16, 379), (32, 354), (64, 71)]);
    assert_eq!(histogram, published);
}

#[test]
fn itp_job_ids_are_kept_verbatim() {
    let Some(dir) = common::shared_traces() else {
        return;
    };
    let w = load(&dir.join("microsoft-itp-elasticflow/cluster01.csv"), Format::Itp).unwrap().workload;
    // First row: `965d744f-0445-c1a8-12af-97e4c536c66e,1932025,2429,64`.
    let first = &w.jobs()[0];
    assert_eq!(first.name, "965d744f-0445-c1a8-12af-97e4c536c66e");
    assert_eq!((first.submit.as_ms(), first.tasks[0].work.as_ms(), first.gpus()), (1_932_025_000, 2_429_000, 64));
    assert_eq!(first.queue, None);
}

#[test]
fn real_traces_validate_clean() {
    let Some(dir) = common::shared_traces() else {
        return;
    };
    assert_eq!(traces::validate(&dir.join("philly-pollux/philly.csv"), Format::Philly), []);
    assert_eq!(traces::validate(&dir.join("microsoft-itp-elasticflow/cluster09.csv"), Format::Itp), []);
    // Wrong format: the errors say which columns are missing.
    let errors = traces::validate(&dir.join("philly-pollux/philly.csv"), Format::Itp);
    assert_eq!(errors.len(), 1);
    assert!(errors[0].to_string().contains("no column `job_id`"), "{}", errors[0]);
}
