//! What the fuzzing campaign found (live/tests/fuzz_api.rs, and the dependency kinds of
//! live/tests/random_session.rs), each as the smallest session that shows it: a journal of
//! batches through the driver, then the checks every fuzz case makes (a submission is refused
//! with a reason or accepted; an accepted session exports as a trace whose replay in the
//! simulator makes the live decisions, and its journal rebuilds it). Those still open are
//! ignored with the defect as the reason (`cargo test --test fuzz_findings -- --ignored`):
//! take the mark off with the fix; SCHEDLAB_FUZZ_ALL=1 makes fuzz_api.rs generate them.

use schedlab_live::config::LiveConfig;
use schedlab_live::driver::{Batch, Driver, Input};
use schedlab_live::wire::JobRequest;
use sim::DecisionRecord;

type Line = (u64, &'static str, u32, Option<u32>, Vec<u32>);

fn line(d: &DecisionRecord) -> Line {
    (d.time.as_ms(), d.kind.as_str(), d.job.0, d.task.map(|t| t.0), d.gpus.iter().map(|g| g.0).collect())
}

/// Runs `batches` (after every node's first beat) on `cluster` under fifo, each batch's jobs
/// checked as the API checks them first: whether all were accepted, and if so the live
/// decisions and the replay's, up to the session's end.
fn session(cluster: &str, batches: Vec<Batch>) -> Result<(Vec<Line>, Vec<Line>), String> {
    let config = LiveConfig::new(cluster, "fifo").unwrap().with_seed(1).with_heartbeat_ms(1000);
    let mut d = Driver::new(config.clone()).unwrap();
    let mut journal = vec![d.start_batch()];
    d.apply(journal[0].clone()).unwrap();
    for batch in batches {
        for input in &batch.inputs {
            if let Input::Submit { job } = input {
                d.check_submission(job).map_err(|r| format!("refused: {r}"))?;
            }
        }
        let ticks = d.apply(batch.clone()).unwrap();
        journal.extend(ticks.into_iter().chain([batch]));
    }
    let live: Vec<Line> = d.decisions().iter().map(line).collect();
    let replay = d.replay_in_simulator(&policies::Registry::builtin()).map_err(|e| format!("the replay: {e}"))?;
    let sim = replay.decisions.iter().map(line).filter(|l| l.0 <= d.now().as_ms()).collect();
    let rebuilt = Driver::replay(config, journal).unwrap();
    assert_eq!(rebuilt.controller().digest_hex(), d.controller().digest_hex(), "the journal rebuilds the session");
    Ok((live, sim))
}

fn job(body: &str) -> Input {
    Input::submit(serde_json::from_str::<JobRequest>(body).unwrap())
}

fn at(time_ms: u64, inputs: Vec<Input>) -> Batch {
    Batch { time_ms, inputs }
}

fn beat() -> Input {
    Input::Beat { node: 0 }
}

fn exit(task: u32, attempt: u32, code: i32) -> Input {
    Input::Exit { task, attempt, code }
}

/// Refused at submission, or replayed to the same decisions.
fn refused_or_replays(cluster: &str, batches: Vec<Batch>) {
    match session(cluster, batches) {
        Err(e) if e.starts_with("refused: ") => {}
        Err(e) => panic!("accepted, but {e}"),
        Ok((live, sim)) => assert_eq!(live, sim, "live decisions, then the replay's"),
    }
}

/// Issue 32 item 1, fixed: a `data=` point its upstream never reached (it exited first, with 0
/// or 1) exports and replays.
#[test]
fn a_data_dependency_whose_upstream_exits_before_its_point_replays() {
    for code in [0, 1] {
        let p = r#"{"name":"p","tasks":[{"name":"prep","command":"true","estimate_s":60},
                    {"name":"train","command":"true","depends_on":["prep:data=30"]}]}"#;
        let batches = vec![at(10, vec![job(p)]), at(1010, vec![beat(), exit(0, 1, code)]), at(1500, vec![beat()])];
        refused_or_replays("1x2", batches);
    }
}

/// Fixed in 06ecbaf: `checkpoint=N` on an upstream that checkpoints continuously (no
/// `checkpoint_s`, and the coordinator's `--checkpoint-s` 0, its default) was accepted and run,
/// but the session's trace was refused by the simulator ("task `train` waits for checkpoint 1
/// of `prep`, which checkpoints continuously (interval 0)"), so `live export` and every replay
/// check failed. It is refused at submission with that reason.
#[test]
fn a_checkpoint_dependency_on_an_upstream_without_checkpoints_is_refused_or_replays() {
    let p = r#"{"name":"p","tasks":[{"name":"prep","command":"true"},
                {"name":"train","command":"true","depends_on":["prep:checkpoint=1"]}]}"#;
    refused_or_replays("1x2", vec![at(10, vec![job(p)]), at(1000, vec![beat()])]);
}

/// Fixed in 06ecbaf: `checkpoint=N` whose upstream fails before its n-th checkpoint. Live mode
/// never meets the edge (the downstream is skipped), but the trace's point was clipped to the
/// upstream's real work (`DepKind::point`: `min(n x interval, work)`), which the failed attempt
/// reached at its end, so the replay met the edge and started the downstream at 3010.
#[test]
fn a_checkpoint_dependency_whose_upstream_fails_before_the_checkpoint_replays() {
    let p = r#"{"name":"p","tasks":[{"name":"prep","command":"true","checkpoint_s":1.5},
                {"name":"train","command":"true","depends_on":["prep:checkpoint=4"]}]}"#;
    let batches = vec![
        at(10, vec![job(p)]),
        at(1000, vec![beat()]),
        at(2000, vec![beat()]),
        at(3010, vec![beat(), exit(0, 1, 1)]),
        at(4000, vec![beat()]),
    ];
    refused_or_replays("1x2", batches);
}

/// Fixed in 06ecbaf: `checkpoint=N` past the upstream's estimate. Live mode clips the point to
/// the assumed work (`min(3 x 1.5 s, 1.2 s)`) and starts the downstream when the upstream
/// reaches its estimate (1210), though it runs on; the trace had the upstream's real work (3 s,
/// it exits 0 at 3010) and N, so the replay started the downstream at 3010.
#[test]
fn a_checkpoint_dependency_past_the_upstream_estimate_replays() {
    let p = r#"{"name":"p","tasks":[{"name":"prep","command":"true","estimate_s":1.2,"checkpoint_s":1.5},
                {"name":"train","command":"true","depends_on":["prep:checkpoint=3"]}]}"#;
    let batches = vec![
        at(10, vec![job(p)]),
        at(1000, vec![beat()]),
        at(2000, vec![beat()]),
        at(3010, vec![beat(), exit(0, 1, 0)]),
        at(4000, vec![beat()]),
    ];
    refused_or_replays("1x2", batches);
}

/// A task with checkpoints every 2 s fails at 5 s of work (GPU failure: 4 s saved), runs again
/// from 5.51 s and exits 0 at 6.01 s. The trace gives it its saved work plus the last attempt's
/// (4.5 s), less than the 5 s its first attempt had already run, so the replay finishes the
/// first attempt at 4.51 s, before the failure. The same with the coordinator's
/// `--checkpoint-s`, and with preemption in place of the failure.
#[test]
#[ignore = "open defect: work lost past the last checkpoint is missing from the trace"]
fn a_task_that_fails_past_its_last_checkpoint_replays() {
    let p = r#"{"name":"p","tasks":[{"name":"a","command":"true","checkpoint_s":2}]}"#;
    let batches = vec![
        at(10, vec![job(p)]),
        at(1000, vec![beat()]),
        at(2000, vec![beat()]),
        at(3000, vec![beat()]),
        at(4000, vec![beat()]),
        at(5010, vec![beat(), Input::GpuFail { node: 0, slot: 0, what: "xid 79".into() }]),
        at(5510, vec![beat(), Input::GpuRepair { node: 0, slot: 0 }]),
        at(6010, vec![beat(), exit(0, 2, 0)]),
        at(7000, vec![beat()]),
    ];
    refused_or_replays("1x1", batches);
}

/// Fixed in 06ecbaf: a task exactly at its estimate when the session ends (the Tick batch that
/// falls due at submit + estimate, which the coordinator journals) has not exited and runs on,
/// but the trace kept its work at the estimate (`Driver::trace` extended only work past it),
/// and the replay finished it then.
#[test]
fn a_task_at_its_estimate_when_the_session_ends_replays() {
    let p = r#"{"name":"p","tasks":[{"name":"a","command":"true","estimate_s":2}]}"#;
    let batches = vec![at(10, vec![job(p)]), at(1000, vec![beat()]), at(2010, vec![beat()])];
    refused_or_replays("1x1", batches);
}

/// A task that reads a dataset held by another node pays its transfer (5 s) before progress in
/// the Controller's model; its process exits 0 after 2 s, during the transfer. Live mode
/// finishes it then, but the trace gives it that run as work after the transfer, and the
/// replay finishes it 5 s after its start.
#[test]
#[ignore = "open defect: an exit during the dataset transfer replays at the transfer's end"]
fn a_task_that_exits_during_its_dataset_transfer_replays() {
    let p = r#"{"name":"p","tasks":[{"name":"a","command":"true","dataset":"imagenet"}]}"#;
    let mut batches = vec![at(10, vec![job(p)]), at(1000, vec![beat()]), at(2010, vec![beat(), exit(0, 1, 0)])];
    batches.extend((3..=7).map(|s| at(s * 1000, vec![beat()])));
    let config = LiveConfig {
        datasets: "dataset,nodes,transfer_s\nimagenet,1,5\n".into(),
        ..LiveConfig::new("2x1", "fifo").unwrap().with_seed(1).with_heartbeat_ms(1000)
    };
    let mut d = Driver::new(config).unwrap();
    d.apply(d.start_batch()).unwrap();
    for b in batches {
        let mut b = b;
        b.inputs.push(Input::Beat { node: 1 });
        d.apply(b).unwrap();
    }
    let live: Vec<Line> = d.decisions().iter().map(line).collect();
    let replay = d.replay_in_simulator(&policies::Registry::builtin()).unwrap();
    let sim: Vec<Line> = replay.decisions.iter().map(line).filter(|l| l.0 <= d.now().as_ms()).collect();
    assert_eq!(live, sim, "live decisions, then the replay's");
}

/// The same with the restart overhead: a task's second attempt pays 2 s before progress; its
/// process exits 0 after 0.5 s.
#[test]
#[ignore = "open defect: an exit during the restart overhead replays at the overhead's end"]
fn a_task_that_exits_during_its_restart_overhead_replays() {
    let p = r#"{"name":"p","tasks":[{"name":"a","command":"true","restart_overhead_s":2}]}"#;
    let batches = vec![
        at(10, vec![job(p)]),
        at(1000, vec![beat(), Input::GpuFail { node: 0, slot: 0, what: "xid 79".into() }]),
        at(1500, vec![beat(), Input::GpuRepair { node: 0, slot: 0 }]),
        at(2000, vec![beat(), exit(0, 2, 0)]),
        at(5000, vec![beat()]),
    ];
    refused_or_replays("1x1", batches);
}

/// A task with `speeds` of 0.3 on its GPU type runs 1468 ms and exits 0: the Controller counts
/// 440.4 ms of work, the trace keeps whole milliseconds (440), and the replay runs it 1467 ms.
/// Any speed whose inverse is no whole number makes the replay end such tasks up to 1/speed ms
/// early or late (`V100=0.001`: up to a second).
#[test]
#[ignore = "open defect: the trace rounds work to whole ms, the replay ends up to 1/speed ms off"]
fn a_task_with_a_slow_speed_replays_to_its_exit() {
    let p = r#"{"name":"p","tasks":[{"name":"a","command":"true","speeds":"V100=0.3"}]}"#;
    let batches = vec![
        at(10, vec![job(p)]),
        at(1000, vec![beat()]),
        at(1478, vec![beat(), exit(0, 1, 0)]),
        at(2000, vec![beat()]),
    ];
    refused_or_replays("1x1:V100", batches);
}

/// A start window that closes before the task could start (both ends 8 s after submission, its
/// job's other task holding the only GPU until then): the task fails when its window closes, in
/// a Tick batch, and so does its job, but the driver's tally of jobs by final state misses it
/// (`GET /v1/jobs`' counts, `/metrics`): in debug builds `Driver::apply` panics on its own
/// recount ("jobs by final state, kept vs recounted": left {}, right {"failed": 1}).
#[test]
fn a_job_whose_task_window_closes_is_counted_failed() {
    let p = r#"{"name":"j0","tasks":[{"name":"t0","command":"true","not_before_s":8,"not_after_s":8},
                {"name":"t1","command":"true"}]}"#;
    let mut batches = vec![at(10, vec![job(p)])];
    batches.extend((1..=12).map(|s| at(s * 1000 + 10, vec![beat()])));
    let outcome = std::panic::catch_unwind(|| refused_or_replays("1x1", batches));
    assert!(outcome.is_ok(), "the driver panicked (see above)");
}
