//! Files a run writes: `summary.json`, `jobs.csv` (one row per job), `tasks.csv` (the tasks of
//! jobs with several) and, when asked, `decisions.csv` (the decision log the digest is computed
//! from). All name jobs and tasks alike, so they join: `job_id` and `task_id` are the trace's
//! ids as given, `job_index` and `task_index` the simulator's numbers (jobs in (submit, file)
//! order, tasks in job order).

use crate::summary::{Summary, hours};
use sim::{RunResult, SimTime};
use std::io::{self, Write};

fn secs(t: SimTime) -> String {
    format!("{}.{:03}", t.as_ms() / 1000, t.as_ms() % 1000)
}

fn opt_secs(t: Option<SimTime>) -> String {
    t.map(secs).unwrap_or_default()
}

fn span_secs(from: SimTime, to: Option<SimTime>) -> String {
    to.map(|to| secs(SimTime(to.since(from).as_ms()))).unwrap_or_default()
}

/// Every lost GPU-time of a job: redone, detection lag, restart overhead, checkpoint writing.
fn lost_mgpu_ms(j: &sim::JobRecord) -> u64 {
    j.lost_redo_mgpu_ms + j.lost_lag_mgpu_ms + j.lost_overhead_mgpu_ms + j.lost_checkpoint_mgpu_ms
}

/// A run's per-job table, the job records the run directory's `jobs.csv` holds (a run's
/// output; the canonical trace's input `jobs.csv`, a schema of its own, is
/// `traces::write_trace_jobs_csv`'s). Times in seconds with millisecond precision; empty where
/// not applicable.
pub fn write_job_records_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "job_id",
        "job_index",
        "queue",
        "submit_s",
        "first_start_s",
        "end_s",
        "jct_s",
        "queue_s",
        "run_s",
        "tasks",
        "gpus",
        "preemptions",
        "failures",
        "retries",
        "gpu_hours",
        "lost_gpu_hours",
        "state",
        "reason",
        "critical_path_s",
        "ettr",
        "interruptions",
        "mtbi_s",
    ])?;
    for j in &run.jobs {
        let succeeded = j.outcome == Some(sim::JobOutcome::Succeeded);
        let jct = if succeeded { span_secs(j.submit, j.end) } else { String::new() };
        let queue = j.first_start.map(|s| span_secs(j.submit, Some(s))).unwrap_or_default();
        let run_s = j.first_start.map(|s| span_secs(s, j.end)).unwrap_or_default();
        let state = sim::JobStatus::at_end(j.outcome.as_ref()).as_str();
        let reason = j.outcome.as_ref().map_or(j.unfinished_reason.as_deref().unwrap_or(""), |o| o.reason());
        w.write_record([
            j.name.as_str(),
            &j.job.0.to_string(),
            j.queue.as_deref().unwrap_or(""),
            &secs(j.submit),
            &opt_secs(j.first_start),
            &opt_secs(j.end),
            &jct,
            &queue,
            &run_s,
            &j.tasks.to_string(),
            &j.gpus.to_string(),
            &j.preemptions.to_string(),
            &j.failures.to_string(),
            &j.retries.to_string(),
            &format!("{:.6}", hours(u128::from(j.mgpu_ms))),
            &format!("{:.6}", hours(u128::from(lost_mgpu_ms(j)))),
            state,
            reason,
            &j.critical_path_ms.map(|ms| secs(SimTime(ms))).unwrap_or_default(),
            &crate::training::ettr(j).map(|e| format!("{e:.6}")).unwrap_or_default(),
            &crate::training::interruptions(j).to_string(),
            &crate::training::mtbi_s(j).map(|s| format!("{s:.3}")).unwrap_or_default(),
        ])?;
    }
    w.flush()
}

/// Per-task table of jobs with several tasks (DAG jobs and gangs): what a Gantt chart is
/// drawn from. `depends_on` lists the upstream tasks as the trace's `depends_on` spells them
/// (`name` or `name:kind`), `;`-separated.
pub fn write_tasks_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "job_id",
        "task_id",
        "job_index",
        "task_index",
        "state",
        "first_start_s",
        "finish_s",
        "gpus",
        "depends_on",
    ])?;
    let mut first_of_job = 0;
    for (i, t) in run.tasks.iter().enumerate() {
        if i == 0 || run.tasks[i - 1].job != t.job {
            first_of_job = i;
        }
        let deps: Vec<String> = t
            .deps
            .iter()
            .map(|d| {
                let upstream = &run.tasks[first_of_job + d.upstream].name;
                match d.kind {
                    sim::DepKind::Success => upstream.to_string(),
                    kind => format!("{upstream}:{}", kind.spelling()),
                }
            })
            .collect();
        w.write_record([
            run.jobs[t.job.index()].name.as_str(),
            t.name.as_str(),
            &t.job.0.to_string(),
            &t.task.0.to_string(),
            t.status.as_str(),
            &opt_secs(t.first_start),
            &opt_secs(t.finish),
            &t.gpus.to_string(),
            &deps.join(";"),
        ])?;
    }
    w.flush()
}

/// The decision log: one row per start, preemption, completion, rejection or unschedulable job,
/// each naming the policy that made it (a log read on its own, or several runs' logs
/// concatenated, still says whose decisions they are). `task_id` is the trace's task id for
/// the tasks of jobs with several (tasks.csv's), empty for a job of one task (its rows join
/// jobs.csv on `job_id`); `gpu_indexes` are the GPUs' numbers, space-separated.
pub fn write_decisions_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record([
        "time_s",
        "kind",
        "job_id",
        "task_id",
        "job_index",
        "task_index",
        "gpu_indexes",
        "detail",
        "policy",
    ])?;
    for d in &run.decisions {
        let gpus: Vec<String> = d.gpus.iter().map(|g| g.0.to_string()).collect();
        let task_id = d.task.and_then(|task| {
            let at = run.tasks.binary_search_by_key(&task, |t| t.task).ok()?;
            Some(run.tasks[at].name.as_str())
        });
        w.write_record([
            secs(d.time).as_str(),
            d.kind.as_str(),
            run.jobs[d.job.index()].name.as_str(),
            task_id.unwrap_or_default(),
            &d.job.0.to_string(),
            &d.task.map(|t| t.0.to_string()).unwrap_or_default(),
            &gpus.join(" "),
            &d.detail,
            &run.policy,
        ])?;
    }
    w.flush()
}

/// Broken (ground truth) and unusable (known to the scheduler) GPUs over time: one row per
/// change, each value holding until the next row.
pub fn write_gpu_health_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(["time_s", "broken_gpus", "unusable_gpus"])?;
    for h in &run.health_series {
        w.write_record([secs(h.time), h.broken_gpus.to_string(), h.unusable_gpus.to_string()])?;
    }
    w.flush()
}

pub fn write_summary_json(summary: &Summary, mut out: impl Write) -> io::Result<()> {
    serde_json::to_writer_pretty(&mut out, summary)?;
    writeln!(out)
}

/// The readable summary every `simulate` prints.
pub fn summary_table(s: &Summary) -> String {
    let rows: Vec<(&str, String)> = vec![
        ("policy", s.policy.clone()),
        ("cluster GPUs", s.cluster_gpus.to_string()),
        (
            "jobs",
            format!(
                "{} ({} finished, {} unschedulable, {} rejected, {} cancelled, {} failed, {} unfinished)",
                s.jobs,
                s.jobs_finished,
                s.jobs_unschedulable,
                s.jobs_rejected,
                s.jobs_cancelled,
                s.jobs_failed,
                s.jobs_unfinished
            ),
        ),
        (
            "JCT mean / p50 / p95 / p99",
            format!(
                "{} / {} / {} / {}",
                human(s.mean_jct_s),
                human(s.p50_jct_s),
                human(s.p95_jct_s),
                human(s.p99_jct_s)
            ),
        ),
        ("queueing delay mean (to first start)", human(s.mean_queue_s)),
        ("waiting mean (preempted time included)", human(s.mean_wait_s)),
        ("makespan", human(s.makespan_s)),
        ("utilisation / goodput", format!("{:.1} % / {:.1} %", s.utilisation * 100.0, s.goodput * 100.0)),
        ("jobs per hour", format!("{:.2}", s.jobs_per_hour)),
        ("GPU-hours allocated", format!("{:.1}", s.gpu_hours)),
        ("preemptions", s.preemptions.to_string()),
        (
            "failures (tasks hit, retries)",
            format!("{} ({}, {}); {} jobs failed", s.failures, s.task_failures, s.retries, s.jobs_failed),
        ),
        (
            "lost GPU-hours",
            format!(
                "{:.1} (redone {:.1}, detection {:.1}, restart {:.1}{}); mean detection lag {:.1} s",
                s.lost_gpu_hours,
                s.lost_redo_gpu_hours,
                s.lost_detection_gpu_hours,
                s.lost_overhead_gpu_hours,
                if s.lost_checkpoint_gpu_hours > 0.0 {
                    format!(", checkpoints {:.1}", s.lost_checkpoint_gpu_hours)
                } else {
                    String::new()
                },
                s.mean_detection_lag_s
            ),
        ),
        (
            "queue fairness (Jain) / FTF rho mean, max",
            format!("{:.3} / {:.2}, {:.2}", s.queue_fairness_jain, s.ftf_rho_mean, s.ftf_rho_max),
        ),
        ("Little's law error", format!("{:.2e}", s.littles_law_error)),
        ("events", s.events.to_string()),
        ("digest", s.digest.clone()),
    ];
    let mut rows = rows;
    if s.interruptions > 0 {
        let ettr = format!(
            "{:.1} % / {:.1} %; {} interruptions, {:.2} a day",
            s.ettr_mean * 100.0,
            s.ettr_gpu_weighted * 100.0,
            s.interruptions,
            s.interruptions_per_day
        );
        rows.insert(rows.len() - 4, ("ETTR mean / GPU-weighted", ettr));
    }
    if let Some(span) = s.failures_span_s {
        rows.insert(rows.len() - 2, ("failures drawn over", human(span)));
    }
    if let Some(at) = s.horizon_stop_s {
        let note = format!("{} (jobs not ended are unfinished; jobs.csv says why)", human(at));
        rows.insert(rows.len() - 2, ("stopped at the horizon", note));
    }
    if let Some(wall) = s.wall_s {
        rows.push(("wall time", format!("{wall:.3} s")));
    }
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    rows.iter().map(|(k, v)| format!("{k:<width$}  {v}\n")).collect()
}

/// Seconds in the largest unit that reads well: `42.0 s`, `3.5 min`, `7.25 h`, `2.10 d`.
pub fn human(secs: f64) -> String {
    if secs < 120.0 {
        format!("{secs:.1} s")
    } else if secs < 7200.0 {
        format!("{:.1} min", secs / 60.0)
    } else if secs < 172_800.0 {
        format!("{:.2} h", secs / 3600.0)
    } else {
        format!("{:.2} d", secs / 86_400.0)
    }
}
