//! Hand-written sacct dumps: the mapping on rows small enough to check by eye, and strict
//! errors (file:line:field) on malformed ones.

use traces::{Format, read_sacct, read_trace, validate_workload};

const HEAD: &str =
    "JobID|Partition|Priority|Submit|Eligible|Start|End|Timelimit|State|ExitCode|NNodes|NodeList|ReqTRES|AllocTRES\n";

fn row(id: &str, state: &str, start: &str, end: &str, alloc: &str) -> String {
    format!(
        "{id}|gpu|4294901759|2026-01-01T00:00:00|2026-01-01T00:00:00|{start}|{end}|00:05:00|{state}|0:0|1|n1|\
         cpu=1,gres/gpu=2,node=1|{alloc}\n"
    )
}

const T1: &str = "2026-01-01T00:00:10";
const T2: &str = "2026-01-01T00:01:10";
const ALLOC: &str = "cpu=1,gres/gpu:a100=2,gres/gpu=2,node=1";

#[test]
fn a_job_its_steps_and_its_attempts_are_one_job() {
    let text = format!(
        "{HEAD}{}{}{}{}",
        row("7", "NODE_FAIL", "2026-01-01T00:00:01", "2026-01-01T00:00:05", ALLOC),
        row("7.batch", "CANCELLED", "2026-01-01T00:00:01", "2026-01-01T00:00:05", ALLOC),
        row("7", "COMPLETED", T1, T2, ALLOC),
        row("7.batch", "COMPLETED", T1, T2, ALLOC),
    );
    let import = read_sacct(text.as_bytes(), "sacct.txt").unwrap();
    let jobs = import.workload.jobs();
    assert_eq!(jobs.len(), 1);
    let task = &jobs[0].tasks[0];
    assert_eq!((task.gpus, task.work.0, task.estimate.get().map(|e| e.0)), (2, 60_000, Some(300_000)));
    assert_eq!(jobs[0].queue.as_deref(), Some("gpu"));
    assert_eq!(jobs[0].priority, 4_294_901_759i64.wrapping_sub(1 << 31) as i32);
    assert_eq!(import.report.steps, 2);
    assert_eq!(import.report.earlier_attempts.get("NODE_FAIL"), Some(&1));
}

#[test]
fn cancelled_before_start_is_kept_and_counted() {
    // Slurm writes Start = End = the cancel time and no allocation.
    let text = format!("{HEAD}{}", row("9", "CANCELLED by 0", T2, T2, ""));
    let trace = read_trace(text.as_bytes(), "sacct.txt", Format::Sacct(Default::default())).unwrap();
    let job = &trace.workload.jobs()[0];
    assert_eq!(job.cancel.get().map(|c| c.0 - job.submit.0), Some(70_000));
    assert_eq!(job.tasks[0].gpus, 2, "GPUs from ReqTRES when nothing was allocated");
    assert!(trace.notes.iter().any(|n| n == "1 job cancelled before starting: kept, cancelled at the End time"));
}

#[test]
fn unfinished_and_cpu_only_rows_are_named_not_dropped() {
    let cpu = row("3", "COMPLETED", T1, T2, "cpu=1,node=1").replace("gres/gpu=2,", "");
    let text =
        format!("{HEAD}{}{}{cpu}", row("1", "COMPLETED", T1, T2, ALLOC), row("2", "RUNNING", T1, "Unknown", ALLOC));
    let trace = read_trace(text.as_bytes(), "sacct.txt", Format::Sacct(Default::default())).unwrap();
    assert_eq!(trace.workload.len(), 1);
    let skipped: Vec<&String> = trace.notes.iter().filter(|n| n.starts_with("skipped")).collect();
    assert_eq!(
        skipped,
        [
            "skipped line 3: job 2 is RUNNING: it had not ended when sacct ran",
            "skipped line 4: job 3 has no gres/gpu in its TRES: schedlab schedules GPUs"
        ]
    );
}

#[test]
fn failures_exit_non_zero_and_gangs_span_nodes() {
    let failed = row("4", "FAILED", T1, T2, ALLOC).replace("|0:0|1|", "|3:0|2|");
    let timeout = row("5", "TIMEOUT", T1, T2, ALLOC);
    let text = format!("{HEAD}{failed}{timeout}");
    let w = read_sacct(text.as_bytes(), "s.txt").unwrap().workload;
    let (a, b) = (&w.jobs()[0].tasks[0], &w.jobs()[1].tasks[0]);
    assert_eq!((a.exit_code, a.single_node), (3, false));
    assert_eq!((b.exit_code, b.single_node), (1, true));
}

#[test]
fn malformed_rows_are_errors_naming_file_line_and_field() {
    let e = |text: String| read_sacct(text.as_bytes(), "sacct.txt").unwrap_err().to_string();
    assert_eq!(
        e(format!("{HEAD}{}", row("1", "COMPLETED", "yesterday", T2, ALLOC))),
        "sacct.txt:2: field `Start`: expected a time written YYYY-MM-DDTHH:MM:SS (SLURM_TIME_FORMAT=standard), \
         Unknown or None, got \"yesterday\""
    );
    assert!(
        e(format!("{HEAD}{}", row("1", "DONE", T1, T2, ALLOC)))
            .starts_with("sacct.txt:2: field `State`: expected a Slurm job state (BOOT_FAIL,")
    );
    assert_eq!(
        e(format!("{HEAD}{}", row("1", "COMPLETED", T1, T2, ALLOC).replace("00:05:00", "5 min"))),
        "sacct.txt:2: field `Timelimit`: expected a duration written [D-]HH:MM:SS, MM:SS, UNLIMITED or \
         Partition_Limit, got \"5 min\""
    );
    assert_eq!(
        e(format!("{HEAD}{}", row("1", "FAILED", T1, T2, ALLOC).replace("|0:0|", "|x|"))),
        "sacct.txt:2: field `ExitCode`: expected an exit code written CODE:SIGNAL, such as 0:0 or 1:0, got \"x\""
    );
    assert_eq!(
        e(format!("{HEAD}1|gpu\n")),
        "sacct.txt:2: expected 14 `|`-separated fields as in the header, got 2 (was it written with --parsable2?)"
    );
    assert!(e("JobID|Start|End|State\n".to_owned()).starts_with("sacct.txt:1: the header has no field `Submit`"));
    // validate reports every bad row, not only the first.
    let two = format!("{HEAD}{}{}", row("1", "DONE", T1, T2, ALLOC), row("2", "COMPLETED", "x", T2, ALLOC));
    assert_eq!(validate_workload(two.as_bytes(), "sacct.txt", Format::Sacct(Default::default())).len(), 2);
}

#[test]
fn damaged_real_rows_give_an_error_at_their_line_never_a_panic() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/slurm/builtin/sacct.txt");
    let real = std::fs::read_to_string(path).expect("the committed dump");
    let lines: Vec<&str> = real.lines().take(60).collect();
    let damages: [fn(&str) -> String; 5] = [
        |l| l.replacen('|', "", 1),
        |l| l.replacen("2026-12-01T", "2026-13-01T", 1),
        |l| l.replacen(":", "x", 1),
        |l| l[..l.len() / 2].to_owned(),
        |l| l.replacen("gres/gpu=", "gres/gpu=-", 1),
    ];
    let mut refused = 0;
    for at in 1..lines.len() {
        for damage in damages {
            let mut text: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
            text[at] = damage(lines[at]);
            let input = text.join("\n");
            if let Err(e) = read_sacct(input.as_bytes(), "sacct.txt") {
                let line = e.line().unwrap_or(0);
                assert!(line == 1 || line as usize == at + 1, "line {at}: {e}");
                refused += 1;
            }
        }
    }
    // At least the dropped separator (a field short) is refused on every line.
    assert!(refused >= lines.len() - 1, "{refused}");
}
