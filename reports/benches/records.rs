//! Writing a run's per-record files: jobs.csv, tasks.csv and decisions.csv of 200,000
//! synthetic job records (one in four a DAG of four tasks), into memory. Divan prints the
//! throughput in bytes of CSV a second.
//!
//! `cargo bench -p schedlab-reports --bench records`.

use divan::counter::BytesCount;
use sim::workload::{DepKind, Dependency, Name};
use sim::{DecisionKind, DecisionRecord, GpuId, JobId, JobOutcome, JobRecord, RunResult, SimTime, TaskId, TaskRecord};
use std::sync::OnceLock;

fn main() {
    divan::main();
}

const JOBS: u64 = 200_000;

/// A run's records as a large trace's replay leaves them: varied times, most jobs succeeded,
/// some preempted or failed, a queue each.
fn run() -> &'static RunResult {
    static RUN: OnceLock<RunResult> = OnceLock::new();
    RUN.get_or_init(|| {
        let mut jobs = Vec::new();
        let mut tasks = Vec::new();
        let mut decisions = Vec::new();
        let mut next_task = 0u32;
        for i in 0..JOBS {
            let mix = i.wrapping_mul(0x9E37_79B9_7F4A_7C15);
            let submit = i * 37_123 + mix % 1000;
            let start = submit + mix % 3_600_000;
            let end = start + 60_000 + (mix >> 20) % 86_400_000;
            let gpus = 1 << ((mix >> 8) % 4);
            let outcome = match mix % 50 {
                0 => Some(JobOutcome::Failed("task 0 failed: hardware, retry budget spent".into())),
                1 => Some(JobOutcome::Cancelled),
                _ => Some(JobOutcome::Succeeded),
            };
            let preemptions = u32::from(mix % 7 == 0);
            let held = (end - start) * gpus * 1000;
            let lost = if preemptions > 0 { held / 10 } else { 0 };
            let several = i % 4 == 0;
            let job = JobId(i as u32);
            if several {
                for t in 0..4usize {
                    let deps =
                        if t == 0 { Vec::new() } else { vec![Dependency { upstream: t - 1, kind: DepKind::Success }] };
                    tasks.push(TaskRecord {
                        task: TaskId(next_task),
                        job,
                        name: Name::from(format!("step{t}")),
                        status: sim::TaskStatus::Succeeded,
                        gpus: gpus as u32,
                        first_start: Some(SimTime(start + t as u64 * 1000)),
                        finish: Some(SimTime(end)),
                        preemptions: 0,
                        failures: 0,
                        deps,
                    });
                    next_task += 1;
                }
            }
            decisions.push(DecisionRecord {
                time: SimTime(start),
                kind: DecisionKind::Start,
                job,
                task: None,
                gpus: (0..gpus as u32).map(GpuId).collect(),
                detail: String::new(),
            });
            decisions.push(DecisionRecord {
                time: SimTime(end),
                kind: DecisionKind::Finish,
                job,
                task: None,
                gpus: Vec::new(),
                detail: String::new(),
            });
            jobs.push(JobRecord {
                job,
                name: Name::from(format!("job-{i:07}")),
                queue: Some(Name::from(["prod", "research", "batch"][(mix % 3) as usize])),
                submit: SimTime(submit),
                first_start: Some(SimTime(start)),
                waited_ms: start - submit,
                end: Some(SimTime(end)),
                tasks: if several { 4 } else { 1 },
                gpus,
                mgpus: gpus * 1000,
                preemptions,
                failures: 0,
                retries: 0,
                mgpu_ms: held,
                productive_mgpu_ms: held - lost,
                lost_redo_mgpu_ms: lost,
                lost_lag_mgpu_ms: 0,
                lost_overhead_mgpu_ms: 0,
                lost_checkpoint_mgpu_ms: 0,
                outcome,
                unfinished_reason: None,
                critical_path_ms: several.then_some(end - start),
                alone_ms: end - start,
            });
        }
        RunResult {
            policy: "fifo[skip=true,placement=pack]".into(),
            seed: 0,
            jobs,
            tasks,
            queues: Vec::new(),
            stats: sim::RunStats::default(),
            decisions,
            health_series: Vec::new(),
            series: sim::Series::new(sim::SimDuration::from_secs(60), Vec::new()),
        }
    })
}

fn measure(bencher: divan::Bencher, write: fn(&RunResult, &mut Vec<u8>) -> std::io::Result<()>) {
    let run = run();
    let mut out = Vec::new();
    write(run, &mut out).expect("writes to memory");
    let bytes = out.len();
    bencher.counter(BytesCount::new(bytes)).with_inputs(|| Vec::with_capacity(bytes)).bench_local_refs(|out| {
        write(run, out).expect("writes to memory");
    });
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn jobs_csv(bencher: divan::Bencher) {
    measure(bencher, |run, out| reports::write_job_records_csv(run, out));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn tasks_csv(bencher: divan::Bencher) {
    measure(bencher, |run, out| reports::write_tasks_csv(run, out));
}

#[divan::bench(sample_count = 10, sample_size = 1)]
fn decisions_csv(bencher: divan::Bencher) {
    measure(bencher, |run, out| reports::write_decisions_csv(run, out));
}
