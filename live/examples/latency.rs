//! How long the live driver takes per batch: `cargo run --release -p schedlab-live --example latency`.
//! A 16-node x 8-GPU cluster under fifo; every node heartbeats each second, a 1-GPU job is
//! submitted every 2 s and its process exits 60 s after it started. Prints the mean time to
//! apply a heartbeat batch (the policy's decision included) and a submission batch (the job
//! joins the running Controller) as the journal grows, then how long a restart's replay of
//! the whole journal takes.

use schedlab_live::config::LiveConfig;
use schedlab_live::driver::{Batch, Driver, Input};
use schedlab_live::wire::{JobRequest, TaskRequest};
use std::time::{Duration, Instant};

/// Applies `batch` and keeps it in `journal` after the ticks due before it (as the
/// coordinator journals them in SQLite); how long the apply took.
fn apply(d: &mut Driver, journal: &mut Vec<Batch>, batch: Batch) -> Duration {
    let started = Instant::now();
    let ticks = d.apply(batch.clone()).unwrap();
    let took = started.elapsed();
    journal.extend(ticks);
    journal.push(batch);
    took
}

fn main() {
    let config = LiveConfig::new("16x8", "fifo").unwrap().with_heartbeat_ms(1000);
    let mut d = Driver::new(config.clone()).unwrap();
    let mut journal = Vec::new();
    let start = d.start_batch();
    apply(&mut d, &mut journal, start);
    let (mut beat_time, mut beats) = (Duration::ZERO, 0u32);
    let (mut submit_time, mut submits) = (Duration::ZERO, 0u32);
    let mut running: Vec<(u64, u32, u32)> = Vec::new();
    let mut job = 0;
    for second in 1..=3600u64 {
        for node in 0..16u32 {
            let t = second * 1000 + u64::from(node) * 10;
            let mut inputs = vec![Input::Beat { node }];
            running.retain(|&(end, task, attempt)| {
                if end <= t {
                    inputs.push(Input::Exit { task, attempt, code: 0 });
                    false
                } else {
                    true
                }
            });
            beat_time += apply(&mut d, &mut journal, Batch { time_ms: t, inputs });
            beats += 1;
        }
        if second % 2 == 0 {
            let request = JobRequest::new(format!("j{job}"), vec![TaskRequest::new("0", "true")]);
            job += 1;
            let t = second * 1000 + 500;
            submit_time += apply(&mut d, &mut journal, Batch { time_ms: t, inputs: vec![Input::submit(request)] });
            submits += 1;
            for a in d.decisions().iter().rev().take_while(|r| r.time.as_ms() == t) {
                if a.kind.as_str() == "start" {
                    let task = a.task.unwrap();
                    running.push((t + 60_000, task.0, d.controller().task(task).attempt));
                }
            }
        }
        if second % 600 == 0 {
            println!(
                "after {second:>5} s: journal {:>6} batches, {:>5} jobs; heartbeat batch {:>8.1} us, submission batch {:>8.1} us (means so far)",
                journal.len(),
                job,
                beat_time.as_secs_f64() * 1e6 / f64::from(beats),
                submit_time.as_secs_f64() * 1e6 / f64::from(submits),
            );
            (beat_time, beats, submit_time, submits) = (Duration::ZERO, 0, Duration::ZERO, 0);
        }
    }
    // What the coordinator does at most once per `--journal-every-s` while anything changes:
    // the whole session written again as a trace (every heartbeat a row of events.csv).
    let dir = std::env::temp_dir().join(format!("schedlab-latency-journal-{}", std::process::id()));
    let started = Instant::now();
    let trace = d.trace().expect("the session as a trace");
    println!(
        "journal: the session as a trace in memory ({} events) took {:.1} ms",
        trace.events.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let started = Instant::now();
    schedlab_live::coordinator::write_journal(&d, &dir).unwrap();
    println!(
        "journal: writing the session as a trace ({} batches) took {:.0} ms",
        journal.len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    let _ = std::fs::remove_dir_all(&dir);
    let started = Instant::now();
    let again = Driver::replay(config, journal).unwrap();
    println!(
        "restart: replaying {} batches ({} jobs) took {:.0} ms",
        again.batches_applied(),
        again.submissions().len(),
        started.elapsed().as_secs_f64() * 1e3
    );
    assert_eq!(again.controller().digest_hex(), d.controller().digest_hex());
    // The example's own copy of the journal included (the coordinator's is in SQLite).
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    if let Some(peak) = status.lines().find(|l| l.starts_with("VmHWM:")) {
        println!("memory: peak resident {}", peak.trim_start_matches("VmHWM:").trim());
    }
}
