//! Typed GPU TRES in sacct dumps: a site whose `AccountingStorageTRES` lists only typed GPUs
//! (`gres/gpu:a100`) writes `AllocTRES` and `ReqTRES` with no `gres/gpu=` entry. Hand-written
//! rows for each form (typed only, two types, both forms), and the committed real dumps with
//! their untyped entries taken out.

use traces::{Format, read_sacct, read_trace};

const HEAD: &str = "JobID|Partition|Submit|Start|End|Timelimit|State|NNodes|NodeList|ReqTRES|AllocTRES\n";
const SUBMIT: &str = "2026-01-01T00:00:00";
const START: &str = "2026-01-01T00:00:10";
const END: &str = "2026-01-01T00:01:10";

/// A job row that ran from START to END (or, with an empty `alloc`, was cancelled before it
/// started), asking for `req` and given `alloc`.
fn row(id: &str, nodes: u32, req: &str, alloc: &str) -> String {
    let (state, start, hosts) =
        if alloc.is_empty() { ("CANCELLED by 0", END, "None assigned") } else { ("COMPLETED", START, "n1") };
    format!("{id}|gpu|{SUBMIT}|{start}|{END}|00:05:00|{state}|{nodes}|{hosts}|{req}|{alloc}\n")
}

fn trace(rows: &[String]) -> traces::Trace {
    let text = format!("{HEAD}{}", rows.concat());
    read_trace(text.as_bytes(), "sacct.txt", Format::Sacct(Default::default())).expect("the rows import")
}

/// Each job's (name, GPUs of its first task, that task's GPU type).
fn gpus(trace: &traces::Trace) -> Vec<(String, u32, Option<String>)> {
    trace
        .workload
        .jobs()
        .iter()
        .map(|j| (j.name.to_string(), j.tasks[0].gpus, j.tasks[0].gpu_type.as_deref().map(str::to_owned)))
        .collect()
}

fn job(name: &str, gpus: u32, gpu_type: Option<&str>) -> (String, u32, Option<String>) {
    (name.to_owned(), gpus, gpu_type.map(str::to_owned))
}

#[test]
fn typed_only_tres_are_read_as_the_sum_of_their_counts_with_the_asked_type() {
    let t = trace(&[
        // Asked for a100s, given a100s: 2 GPUs of type a100.
        row("1", 1, "billing=4,cpu=4,gres/gpu:a100=2,node=1", "billing=4,cpu=4,gres/gpu:a100=2,node=1"),
        // Asked for GPUs of no type (not tracked, so not in ReqTRES), given v100s: the job
        // did not ask for a type, as with an untyped ReqTRES today.
        row("2", 1, "billing=1,cpu=1,node=1", "billing=1,cpu=1,gres/gpu:v100=1,node=1"),
        // A 2-node gang given 8 a100s and 8 v100s: 16 GPUs.
        row("3", 2, "billing=2,cpu=2,node=2", "billing=2,cpu=2,gres/gpu:a100=8,gres/gpu:v100=8,node=2"),
        // Never started: its GPUs from ReqTRES, typed only.
        row("4", 1, "billing=3,cpu=3,gres/gpu:v100=3,node=1", ""),
    ]);
    assert_eq!(gpus(&t), [job("1", 2, Some("a100")), job("2", 1, None), job("3", 16, None), job("4", 3, Some("v100"))]);
    let gang = &t.workload.jobs()[2].tasks[0];
    assert_eq!((gang.single_node, gang.gpus_per_node.map(|n| n.get())), (false, Some(8)));
    assert!(t.notes.iter().all(|n| !n.starts_with("skipped") && !n.contains("type")), "{:?}", t.notes);
}

#[test]
fn two_types_in_one_request_are_replayed_untyped_and_named() {
    let two = "billing=2,cpu=2,gres/gpu:a100=1,gres/gpu:v100=1,node=1";
    let t = trace(&[
        // Requeued: two attempts, one job, named once.
        row("7", 1, two, two).replace("COMPLETED", "REQUEUED"),
        row("7", 1, two, two),
        // With the untyped entry too: its count, as before, and the same note.
        row("8", 1, &format!("{two},gres/gpu=2"), &format!("{two},gres/gpu=2")),
        row("9", 1, "gres/gpu:a100=1", "gres/gpu:a100=1"),
    ]);
    assert_eq!(gpus(&t), [job("7", 2, None), job("8", 2, None), job("9", 1, Some("a100"))]);
    let mixed: Vec<&String> = t.notes.iter().filter(|n| n.contains("more than one type")).collect();
    assert_eq!(
        mixed,
        ["2 jobs asked for GPUs of more than one type in ReqTRES (line 2: job 7, a100+v100; line 4: job 8, \
             a100+v100), and a schedlab task has one GPU type: each is replayed on its GPU count of any type"]
    );
    let one = trace(&[row("5", 1, two, "")]);
    assert_eq!(gpus(&one), [job("5", 2, None)]);
    assert!(
        one.notes
            .iter()
            .any(|n| n.starts_with("1 job asked for GPUs of more than one type in ReqTRES (line 2: job 5, ")
                && n.ends_with(": it is replayed on its GPU count of any type")),
        "{:?}",
        one.notes
    );
}

#[test]
fn with_both_forms_the_untyped_count_decides_as_before() {
    let t = trace(&[
        // The typed counts disagree with the untyped one: the untyped one is the job's.
        row("1", 1, "cpu=1,gres/gpu:a100=2,gres/gpu=4,node=1", "cpu=1,gres/gpu:a100=2,gres/gpu=4,node=1"),
        row("2", 2, "cpu=2,gres/gpu=16,node=2", "cpu=2,gres/gpu:a100=8,gres/gpu:v100=8,gres/gpu=16,node=2"),
        // An untyped entry that is not a count is no GPUs, whatever the typed ones say.
        row("3", 1, "cpu=1,gres/gpu=x,node=1", "cpu=1,gres/gpu:a100=2,gres/gpu=x,node=1"),
        // No GPU in any form.
        row("4", 1, "cpu=1,node=1", "cpu=1,node=1"),
    ]);
    assert_eq!(gpus(&t), [job("1", 4, Some("a100")), job("2", 16, None)]);
    let skipped: Vec<&String> = t.notes.iter().filter(|n| n.starts_with("skipped")).collect();
    assert_eq!(
        skipped,
        [
            "skipped line 4: job 3 has no gres/gpu in its TRES: schedlab schedules GPUs",
            "skipped line 5: job 4 has no gres/gpu in its TRES: schedlab schedules GPUs"
        ]
    );
}

/// `text` with each `AllocTRES` entry `drop` says to drop taken out.
fn without_alloc_entries(text: &str, drop: impl Fn(&str) -> bool) -> String {
    let mut lines = text.lines();
    let header = lines.next().expect("a header");
    let alloc = header.split('|').position(|h| h == "AllocTRES").expect("AllocTRES");
    let mut out = format!("{header}\n");
    for line in lines {
        let mut fields: Vec<String> = line.split('|').map(str::to_owned).collect();
        fields[alloc] = fields[alloc].split(',').filter(|item| !drop(item)).collect::<Vec<_>>().join(",");
        out.push_str(&fields.join("|"));
        out.push('\n');
    }
    out
}

#[test]
fn the_real_dumps_read_alike_from_either_form_of_their_allocations() {
    for run in ["builtin", "builtin-fast", "backfill"] {
        let path = format!("{}/tests/data/slurm/{run}/sacct.txt", env!("CARGO_MANIFEST_DIR"));
        let real = std::fs::read_to_string(&path).expect("the committed dump");
        let import = |text: &str| read_sacct(text.as_bytes(), "sacct.txt").expect("the dump imports");
        let both = import(&real);
        let typed_only = import(&without_alloc_entries(&real, |item| item.starts_with("gres/gpu=")));
        let untyped_only = import(&without_alloc_entries(&real, |item| item.starts_with("gres/gpu:")));
        // Every job that ran was allocated typed GPUs (the nodes' gres.conf names a type) whose
        // sum is its untyped count; the jobs and everything the import says are the same.
        assert!(real.contains(",gres/gpu:a100=") && both.workload.len() > 250, "{run}");
        assert_eq!(typed_only, both, "{run}: typed-only AllocTRES");
        assert_eq!(untyped_only, both, "{run}: untyped-only AllocTRES");
    }
}
