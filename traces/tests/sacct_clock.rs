//! sacct times on a clock: `--format sacct[tz=...]` across both daylight-saving changes of
//! 2026 in Europe/Berlin (hand-computed: CET is UTC+1, CEST UTC+2; summer time from 29 March
//! 02:00 to 25 October 03:00 local), and a fixed offset on the real dump.

use std::path::Path;
use traces::{Format, load, parse_datetime_ms, read_trace};

const HEAD: &str = "JobID|Submit|Start|End|State|AllocTRES\n";

fn utc(text: &str) -> u64 {
    parse_datetime_ms(text).unwrap()
}

fn dump(rows: &[(&str, &str, &str, &str)]) -> String {
    let body: String = rows
        .iter()
        .map(|(id, submit, start, end)| format!("{id}|{submit}|{start}|{end}|COMPLETED|gres/gpu=1\n"))
        .collect();
    format!("{HEAD}{body}")
}

fn berlin() -> Format {
    "sacct[tz=Europe/Berlin]".parse().unwrap()
}

#[test]
fn a_job_across_a_change_runs_for_its_real_length() {
    let text = dump(&[
        // Spring: 01:45 CET (00:45 UTC) to 03:15 CEST (01:15 UTC): 30 minutes, not 90.
        ("spring", "2026-03-29T01:30:00", "2026-03-29T01:45:00", "2026-03-29T03:15:00"),
        // Autumn: 01:40 CEST (23:40 UTC the day before) to 03:40 CET (02:40 UTC): 3 hours, not 2.
        ("autumn", "2026-10-25T01:30:00", "2026-10-25T01:40:00", "2026-10-25T03:40:00"),
    ]);
    let naive = read_trace(text.as_bytes(), "sacct.txt", Format::Sacct(Default::default())).unwrap();
    let zoned = read_trace(text.as_bytes(), "sacct.txt", berlin()).unwrap();
    let work = |t: &traces::Trace, name: &str| {
        let job = t.workload.jobs().iter().find(|j| j.name == name).unwrap();
        (job.submit.0, job.tasks[0].work.0)
    };
    assert_eq!(work(&naive, "spring"), (utc("2026-03-29 01:30:00"), 90 * 60_000));
    assert_eq!(work(&zoned, "spring"), (utc("2026-03-29 00:30:00"), 30 * 60_000));
    assert_eq!(work(&naive, "autumn").1, 2 * 3_600_000);
    assert_eq!(work(&zoned, "autumn"), (utc("2026-10-24 23:30:00"), 3 * 3_600_000));
    assert!(zoned.notes.iter().all(|n| !n.contains("summer time")), "{:?}", zoned.notes);
}

#[test]
fn the_repeated_hour_is_read_as_its_first_pass_and_counted() {
    // 02:10 and 02:50 on 25 October happen twice; both are read as CEST (00:10, 00:50 UTC).
    let text = dump(&[("1", "2026-10-25T01:50:00", "2026-10-25T02:10:00", "2026-10-25T02:50:00")]);
    let trace = read_trace(text.as_bytes(), "sacct.txt", berlin()).unwrap();
    assert_eq!(trace.workload.jobs()[0].tasks[0].work.0, 40 * 60_000);
    assert!(
        trace.notes.contains(
            &"2 times fell in the hour repeated by a change back from summer time: read as its first pass".to_owned()
        ),
        "{:?}",
        trace.notes
    );
}

#[test]
fn a_time_the_change_skips_is_an_error_at_its_field() {
    let text = dump(&[("1", "2026-03-29T01:50:00", "2026-03-29T02:30:00", "2026-03-29T03:10:00")]);
    let e = read_trace(text.as_bytes(), "sacct.txt", berlin()).unwrap_err().to_string();
    assert_eq!(
        e,
        "sacct.txt:2: field `Start`: expected a time on the clock tz=Europe/Berlin (2026-03-29 02:30:00 does not \
         exist in Europe/Berlin: a daylight-saving change skips it), got \"2026-03-29T02:30:00\""
    );
}

#[test]
fn a_fixed_offset_moves_every_time_of_the_real_dump() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/slurm/builtin/sacct.txt");
    let naive = load(&path, Format::Sacct(Default::default())).unwrap();
    let shifted = load(&path, "sacct[tz=+02:00]".parse().unwrap()).unwrap();
    assert_eq!(naive.workload.len(), shifted.workload.len());
    for (a, b) in naive.workload.jobs().iter().zip(shifted.workload.jobs()) {
        assert_eq!((a.name.as_str(), a.submit.0 - 7_200_000), (b.name.as_str(), b.submit.0));
        assert_eq!(a.tasks[0].work, b.tasks[0].work);
    }
    // Job 1 was submitted at 20:22:02 on the dump's clock.
    assert_eq!(shifted.workload.jobs()[0].submit.0, utc("2026-12-01 18:22:02"));
}

#[test]
fn a_naive_dump_across_a_change_trusts_elapsed_and_says_so() {
    // A local-time dump (naive) of a 4-hour job across the spring change in Berlin: the
    // clock reads 00:30 to 05:30 (5 hours), Slurm's own Elapsed 04:00:00. A job whose span
    // agrees with its Elapsed is left as it is.
    let text = "JobID|Submit|Start|End|Elapsed|State|AllocTRES\n\
                dst|2026-03-29T00:00:00|2026-03-29T00:30:00|2026-03-29T05:30:00|04:00:00|COMPLETED|gres/gpu=1\n\
                plain|2026-03-30T00:00:00|2026-03-30T00:30:00|2026-03-30T01:30:00|01:00:00|COMPLETED|gres/gpu=1\n";
    let trace = read_trace(text.as_bytes(), "sacct.txt", Format::Sacct(Default::default())).unwrap();
    let work = |name: &str| trace.workload.jobs().iter().find(|j| j.name == name).unwrap().tasks[0].work.0;
    assert_eq!(work("dst"), 4 * 3_600_000);
    assert_eq!(work("plain"), 3_600_000);
    let note = trace.notes.iter().find(|n| n.contains("Elapsed")).expect("a note on the Elapsed mismatch");
    assert!(note.starts_with("1 job's End - Start differs from its Elapsed by whole hours"), "{note}");
    assert!(note.contains("line 2"), "{note}");
    assert!(note.contains("work = Elapsed"), "{note}");
    assert!(note.contains("sacct[tz="), "{note}");
}
