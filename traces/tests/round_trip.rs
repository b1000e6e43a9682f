//! `read(write(w)) == w`: the canonical writer loses nothing, for generated workloads, for
//! real traces converted to the canonical format, and for arbitrary workloads (which the
//! writer either refuses up front or writes exactly).

mod common;

use proptest::prelude::*;
use sim::{DepKind, Dependency, JobSpec, SimDuration, SimTime, TaskOptions, TaskSpec, Window, Workload};
use std::num::NonZeroU16;
use traces::timeparse::MAX_SECONDS;
use traces::{Format, SynthConfig, load, read_jobs_csv, write_trace_jobs_csv};

fn round_trip(workload: &Workload) -> Workload {
    let mut out = Vec::new();
    write_trace_jobs_csv(workload, &mut out).expect("writable");
    read_jobs_csv(out.as_slice(), "written.csv").unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn synthetic_workload_round_trips() {
    let w = SynthConfig::default().generate().unwrap();
    assert_eq!(round_trip(&w), w);
}

#[test]
fn real_traces_round_trip_through_the_canonical_format() {
    let Some(dir) = common::shared_traces() else {
        return;
    };
    for (path, format) in [
        ("philly-pollux/philly.csv", Format::Philly),
        ("microsoft-itp-elasticflow/cluster04.csv", Format::Itp),
        ("alibaba-gpu-v2023-openb/openb_pod_list_default.csv", Format::Openb),
    ] {
        let w = load(&dir.join(path), format).unwrap().workload;
        assert_eq!(round_trip(&w), w, "{path}");
    }
}

const MAX_MS: u64 = MAX_SECONDS * 1000;

/// Names that exercise CSV quoting: commas, quotes, spaces, line ends, non-ASCII.
fn name() -> impl Strategy<Value = String> {
    "[a-z0-9 ,\"\n\r_é-]{1,6}"
}

/// Whole GPUs (any count), or a share of one GPU: shares exist only with `gpus` = 1.
fn gpus_and_share() -> impl Strategy<Value = (u32, Option<NonZeroU16>)> {
    prop_oneof![
        (prop_oneof![1u32..=8, 1u32..=traces::MAX_TASK_GPUS]).prop_map(|gpus| (gpus, None)),
        prop_oneof![Just(1u16), Just(999), 1u16..=999].prop_map(|milli| (1, NonZeroU16::new(milli))),
    ]
}

fn task(index: usize) -> impl Strategy<Value = TaskSpec> {
    (
        name(),
        gpus_and_share(),
        prop::option::of(name()),
        any::<bool>(),
        prop_oneof![1u64..=10_000_000, 1u64..=MAX_MS],
        prop::option::of(1u64..=MAX_MS),
        (
            prop::option::of(prop_oneof![Just(0u64), 0u64..=MAX_MS]),
            prop::option::of(prop_oneof![Just(0u64), 0u64..=MAX_MS]),
        ),
        (prop::option::of(0u64..=MAX_MS / 2), prop::option::of(0u64..=MAX_MS / 2)),
        // GPU type names as a cluster spells them, with any speed the column can hold.
        (
            prop::collection::btree_map("[A-Z][A-Za-z0-9_-]{0,5}", prop_oneof![1u32..=5000, 1u32..=u32::MAX], 0..3),
            prop_oneof![Just(0i32), any::<i32>()],
        ),
    )
        .prop_map(
            move |(
                n,
                (gpus, gpu_milli),
                gpu_type,
                single_node,
                work,
                estimate,
                (checkpoint, restart),
                window,
                (speeds, exit_code),
            )| {
                // A window that opens after it closes is refused; keep the pair ordered.
                let (not_before, not_after) = match window {
                    (Some(a), Some(b)) => (Some(a.min(b)), Some(a.max(b))),
                    other => other,
                };
                // Unique within the job: a suffix nobody else has.
                let mut task =
                    TaskSpec::new(format!("{n}#{index}"), gpus, SimDuration(work)).with_options(TaskOptions {
                        checkpoint: checkpoint.map(SimDuration),
                        restart_overhead: restart.map(SimDuration),
                        checkpoint_cost: None,
                        window: Window { not_before: not_before.map(SimTime), not_after: not_after.map(SimTime) },
                        dataset: n.contains('a').then(|| format!("data {n}")),
                        speeds,
                    });
                task.gpu_milli = gpu_milli;
                task.gpu_type = gpu_type.map(Into::into);
                task.single_node = single_node;
                task.estimate = estimate.map(SimDuration).into();
                task.exit_code = exit_code;
                task
            },
        )
}

/// Dependencies on earlier tasks only (so the DAG is acyclic), of every kind; `choices` are
/// raw draws: (whether, which upstream, which kind, a number).
fn add_deps(tasks: &mut [TaskSpec], choices: &[(bool, usize, u8, u64)]) {
    for (t, &(on, upstream, kind, x)) in choices.iter().enumerate().take(tasks.len()).skip(1) {
        if !on {
            continue;
        }
        let upstream = upstream % t;
        let work = tasks[upstream].work.as_ms();
        let kind = match kind % 5 {
            0 => DepKind::Success,
            1 => DepKind::Any,
            2 => DepKind::Failure,
            3 => DepKind::Data(SimDuration(1 + x % work)),
            _ => DepKind::Checkpoint(1 + (x % 100) as u32),
        };
        tasks[t].deps.push(Dependency { upstream, kind });
    }
}

fn job(index: usize) -> impl Strategy<Value = JobSpec> {
    (
        name(),
        prop_oneof![0u64..=100_000, 0u64..=MAX_MS],
        prop::option::of(name()),
        prop::option::of(1u64..=MAX_MS),
        1usize..4,
        prop_oneof![Just(0i32), any::<i32>()],
        prop::collection::vec((any::<bool>(), any::<usize>(), any::<u8>(), any::<u64>()), 4),
        // A cancel at or after the submit: this far after it.
        prop::option::of(prop_oneof![Just(0u64), 0u64..=MAX_MS / 2]),
    )
        .prop_flat_map(move |(n, submit, queue, deadline, tasks, priority, choices, cancel_after)| {
            let tasks: Vec<_> = (0..tasks).map(task).collect();
            tasks.prop_map(move |mut tasks| {
                add_deps(&mut tasks, &choices);
                // A window that closes before the job's submission is refused too.
                for task in &mut tasks {
                    task.options_mut().window.not_after =
                        task.options().window.not_after.map(|t| t.max(SimTime(submit)));
                }
                // Some jobs start their tasks together, where nothing inside the job waits.
                let window = tasks.first().map(|t| t.options().window);
                let co_start =
                    index % 5 == 2 && tasks.iter().all(|t| t.deps.is_empty() && Some(t.options().window) == window);
                JobSpec {
                    name: format!("{n}#{index}").into(),
                    submit: SimTime(submit),
                    queue: queue.clone().map(Into::into),
                    deadline: deadline.map(SimDuration).into(),
                    cancel: cancel_after.map(|after| SimTime(submit.saturating_add(after).min(MAX_MS))).into(),
                    priority,
                    // Some jobs with an owner, some with only a user, most without.
                    owner: match index % 4 {
                        0 => Some(Box::new(sim::Owner {
                            account: format!("acct{}", index % 3).into(),
                            user: format!("user{index}").into(),
                            qos: "normal".into(),
                        })),
                        1 => Some(Box::new(sim::Owner { user: "solo".into(), ..sim::Owner::default() })),
                        _ => None,
                    },
                    co_start,
                    tasks: tasks.into(),
                }
            })
        })
}

fn workload() -> impl Strategy<Value = Workload> {
    (1usize..12)
        .prop_flat_map(|n| (0..n).map(job).collect::<Vec<_>>())
        .prop_map(|jobs| Workload::new(jobs).expect("valid by construction"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn canonical_round_trip(w in workload()) {
        prop_assert_eq!(round_trip(&w), w);
    }

    /// Without the constraints above (empty or repeated names, zero work), the writer
    /// refuses, or what it writes reads back identically: never a silent change.
    #[test]
    fn writer_refuses_or_writes_exactly(
        jobs in prop::collection::vec(
            ("[ab]{0,1}", 0u64..3, "[01]{0,1}", 0u64..3, prop::option::of("[q]{0,1}")),
            1..6,
        ),
    ) {
        let jobs: Vec<JobSpec> = jobs
            .into_iter()
            .map(|(name, submit, task, work, queue)| {
                let mut j = JobSpec::single(name, SimTime(submit), 1, SimDuration(work));
                j.tasks[0].name = task.into();
                j.queue = queue.map(Into::into);
                j
            })
            .collect();
        let w = Workload::new(jobs).unwrap();
        let mut out = Vec::new();
        if write_trace_jobs_csv(&w, &mut out).is_ok() {
            let back = read_jobs_csv(out.as_slice(), "w.csv");
            prop_assert_eq!(back.as_ref(), Ok(&w), "{}", String::from_utf8_lossy(&out));
        } else {
            prop_assert!(out.is_empty(), "nothing is written when refused");
        }
    }
}
