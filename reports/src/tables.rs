//! Files a run writes: `summary.json`, `jobs.csv` (one row per job), `tasks.csv` (the tasks of
//! jobs with several) and, when asked, `decisions.csv` (the decision log the digest is computed
//! from). All name jobs and tasks alike, so they join: `job_id` and `task_id` are the trace's
//! ids as given, `job_index` and `task_index` the simulator's numbers (jobs in (submit, file)
//! order, tasks in job order).

use crate::csv_row::{CsvOut, Escaped, Row, Rows};
use crate::summary::{Summary, hours};
use sim::{DecisionRecord, JobRecord, RunResult, SimTime, TaskRecord};
use std::io::{self, Write};

fn secs(t: SimTime) -> String {
    format!("{}.{:03}", t.as_ms() / 1000, t.as_ms() % 1000)
}

/// Every lost GPU-time of a job: redone, detection lag, restart overhead, checkpoint writing.
fn lost_mgpu_ms(j: &sim::JobRecord) -> u64 {
    j.lost_redo_mgpu_ms + j.lost_lag_mgpu_ms + j.lost_overhead_mgpu_ms + j.lost_checkpoint_mgpu_ms
}

/// jobs.csv's columns.
pub(crate) const JOB_COLUMNS: [&str; 22] = [
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
];

/// tasks.csv's columns.
pub(crate) const TASK_COLUMNS: [&str; 9] =
    ["job_id", "task_id", "job_index", "task_index", "state", "first_start_s", "finish_s", "gpus", "depends_on"];

/// decisions.csv's columns.
pub(crate) const DECISION_COLUMNS: [&str; 9] =
    ["time_s", "kind", "job_id", "task_id", "job_index", "task_index", "gpu_indexes", "detail", "policy"];

/// GPU-hours with 6 decimals: `hours(mgpu_ms)` is `mgpu_ms / 3600` millionths of an hour.
fn gpu_hours(row: &mut Row, mgpu_ms: u64) {
    row.fixed(u128::from(mgpu_ms), 3600, 6, || hours(u128::from(mgpu_ms)));
}

/// jobs.csv's row of one job: the one format of it, for the whole-run and the streaming writer.
pub(crate) fn job_row(rows: &mut Rows, j: &JobRecord) {
    let mut row = rows.row();
    row.text(&j.name);
    row.int(j.job.0);
    row.text(j.queue.as_deref().unwrap_or(""));
    row.secs(j.submit.as_ms());
    row.opt_secs(j.first_start);
    row.opt_secs(j.end);
    // jct_s (succeeded jobs), queue_s, run_s.
    match j.outcome == Some(sim::JobOutcome::Succeeded) {
        true => row.span(j.submit, j.end),
        false => row.empty(),
    }
    match j.first_start {
        Some(start) => {
            row.span(j.submit, Some(start));
            row.span(start, j.end);
        }
        None => {
            row.empty();
            row.empty();
        }
    }
    row.int(j.tasks);
    row.int(j.gpus);
    row.int(j.preemptions);
    row.int(j.failures);
    row.int(j.retries);
    gpu_hours(&mut row, j.mgpu_ms);
    gpu_hours(&mut row, lost_mgpu_ms(j));
    row.word(sim::JobStatus::at_end(j.outcome.as_ref()).as_str());
    row.text(j.outcome.as_ref().map_or(j.unfinished_reason.as_deref().unwrap_or(""), |o| o.reason()));
    match j.critical_path_ms {
        Some(ms) => row.secs(ms),
        None => row.empty(),
    }
    // ETTR (`training::ettr`): productive / (span x mgpus), 6 decimals.
    let span = crate::training::span_ms(j);
    match span.map(|span| u128::from(span) * u128::from(j.mgpus)).filter(|&d| d > 0) {
        Some(denominator) => {
            let productive = u128::from(j.productive_mgpu_ms) * 1_000_000;
            row.fixed(productive, denominator, 6, || crate::training::ettr(j).expect("a span"));
        }
        None => row.empty(),
    }
    let interruptions = crate::training::interruptions(j);
    row.int(interruptions);
    // MTBI (`training::mtbi_s`): span / 1000 / interruptions, 3 decimals.
    match span.filter(|_| interruptions > 0) {
        Some(span) => row.fixed(u128::from(span), u128::from(interruptions), 3, || {
            crate::training::mtbi_s(j).expect("interrupted, with a span")
        }),
        None => row.empty(),
    }
    row.end();
}

/// tasks.csv's rows of one job's tasks (all of them, in task order: `depends_on` names the
/// upstream tasks among them): the one format of them, for both writers.
pub(crate) fn task_rows(rows: &mut Rows, job_name: &str, tasks: &[TaskRecord]) {
    for t in tasks {
        let mut row = rows.row();
        row.text(job_name);
        row.text(&t.name);
        row.int(t.job.0);
        row.int(t.task.0);
        row.word(t.status.as_str());
        row.opt_secs(t.first_start);
        row.opt_secs(t.finish);
        row.int(t.gpus);
        let start = row.mark();
        for (i, d) in t.deps.iter().enumerate() {
            if i > 0 {
                row.put(b";");
            }
            row.put(tasks[d.upstream].name.as_bytes());
            if d.kind != sim::DepKind::Success {
                row.put(b":");
                row.put(d.kind.spelling().as_bytes());
            }
        }
        row.end_text(start);
        row.end();
    }
}

/// decisions.csv's row of one decision: the one format of it, for both writers.
pub(crate) fn decision_row(
    rows: &mut Rows,
    d: &DecisionRecord,
    job_name: &str,
    task_name: Option<&str>,
    policy: &Escaped,
) {
    let mut row = rows.row();
    row.secs(d.time.as_ms());
    row.word(d.kind.as_str());
    row.text(job_name);
    row.text(task_name.unwrap_or_default());
    row.int(d.job.0);
    row.opt_int(d.task.map(|t| t.0));
    row.ints(d.gpus.iter().map(|g| u64::from(g.0)), b' ');
    row.text(&d.detail);
    row.escaped(policy);
    row.end();
}

/// A run's per-job table, the job records the run directory's `jobs.csv` holds (a run's
/// output; the canonical trace's input `jobs.csv`, a schema of its own, is
/// `traces::write_trace_jobs_csv`'s). Times in seconds with millisecond precision; empty where
/// not applicable. One row per job in the order the run handed the records over (job order, but
/// for jobs set aside: see [`sim::RecordSink`]); [`crate::RecordFiles`] writes the same bytes
/// as a run streams its records.
pub fn write_job_records_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut table = CsvOut::new(out, &JOB_COLUMNS);
    for j in &run.jobs {
        job_row(table.rows(), j);
        table.done()?;
    }
    table.finish().map(drop)
}

/// Per-task table of jobs with several tasks (DAG jobs and gangs): what a Gantt chart is
/// drawn from. `depends_on` lists the upstream tasks as the trace's `depends_on` spells them
/// (`name` or `name:kind`), `;`-separated. Rows in task order within a job, jobs as in
/// jobs.csv.
pub fn write_tasks_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut table = CsvOut::new(out, &TASK_COLUMNS);
    let jobs = ById::new(&run.jobs, |j| j.job);
    for tasks in run.tasks.chunk_by(|a, b| a.job == b.job) {
        let job = jobs.at(tasks[0].job).expect("every task's job has a record");
        task_rows(table.rows(), &run.jobs[job].name, tasks);
        table.done()?;
    }
    table.finish().map(drop)
}

/// The decision log: one row per start, preemption, completion, rejection or unschedulable job,
/// each naming the policy that made it (a log read on its own, or several runs' logs
/// concatenated, still says whose decisions they are). `task_id` is the trace's task id for
/// the tasks of jobs with several (tasks.csv's), empty for a job of one task (its rows join
/// jobs.csv on `job_id`); `gpu_indexes` are the GPUs' numbers, space-separated. Rows in the
/// log's order.
pub fn write_decisions_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut table = CsvOut::new(out, &DECISION_COLUMNS);
    let policy = Escaped::new(&run.policy);
    let (jobs, tasks) = (ById::new(&run.jobs, |j| j.job), ById::new(&run.tasks, |t| t.task));
    for d in &run.decisions {
        let task_name = d.task.and_then(|task| Some(run.tasks[tasks.at(task)?].name.as_str()));
        let job = jobs.at(d.job).expect("every decision's job has a record");
        decision_row(table.rows(), d, &run.jobs[job].name, task_name, &policy);
        table.done()?;
    }
    table.finish().map(drop)
}

/// Where each record is in its list. The lists are in id order but for the jobs a run set
/// aside (`ControllerConfig::set_aside_after`), whose records came when they ended.
struct ById<K>(Vec<(K, usize)>);

impl<K: Ord + Copy> ById<K> {
    fn new<T>(records: &[T], id: impl Fn(&T) -> K) -> ById<K> {
        let mut at: Vec<(K, usize)> = records.iter().enumerate().map(|(i, r)| (id(r), i)).collect();
        // Linear on a list already in order, as nearly every run's is.
        at.sort_unstable();
        ById(at)
    }

    fn at(&self, id: K) -> Option<usize> {
        self.0.binary_search_by_key(&id, |&(k, _)| k).ok().map(|i| self.0[i].1)
    }
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
                "{} / {} / {} / {}{}",
                human(s.mean_jct_s),
                human(s.p50_jct_s),
                human(s.p95_jct_s),
                human(s.p99_jct_s),
                s.jct_percentiles.as_ref().map(|how| format!(" (percentiles: {how})")).unwrap_or_default()
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
