//! The cluster's time series as tables: `timeseries.csv` (cluster-wide, one row per bucket)
//! and `queue_timeseries.csv` (one row per bucket and queue). Levels are time-averages over
//! the part of the bucket the run covered (the last bucket may be cut short by the run's end);
//! counts are events in the bucket.

use sim::RunResult;
use std::io::{self, Write};

/// Each bucket's `(start, end)` in ms, clipped to the run's end.
fn spans(run: &RunResult) -> Vec<(u64, u64)> {
    let series = &run.series;
    let Some(origin) = series.origin() else { return Vec::new() };
    let width = series.width().as_ms();
    let end = run.stats.last_event.max(origin).as_ms();
    (0..series.buckets().len() as u64)
        .map(|i| {
            let start = origin.as_ms() + i * width;
            (start, (start + width).min(end).max(start))
        })
        .collect()
}

fn secs(ms: u64) -> String {
    format!("{}.{:03}", ms / 1000, ms % 1000)
}

/// `integral / span` with 3 decimals; `scale` turns milli-units into units.
fn average(integral: u64, span_ms: u64, scale: f64) -> String {
    if span_ms == 0 { "0.000".into() } else { format!("{:.3}", integral as f64 / span_ms as f64 / scale) }
}

pub fn write_timeseries_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    // One list of columns for the writer here and the report's reader.
    w.write_record(crate::report::input::TIMESERIES_COLUMNS)?;
    let capacity = run.stats.cluster_gpus.to_string();
    for (b, (start, end)) in run.series.buckets().iter().zip(spans(run)) {
        let span = end - start;
        w.write_record([
            secs(start),
            secs(end),
            capacity.clone(),
            average(b.allocated_mgpu_ms, span, 1000.0),
            average(b.stalled_mgpu_ms, span, 1000.0),
            average(b.unusable_gpu_ms, span, 1.0),
            average(b.waiting_task_ms, span, 1.0),
            average(b.running_task_ms, span, 1.0),
            b.arrivals.to_string(),
            b.completions.to_string(),
            b.failures.to_string(),
            format!("{:.6}", crate::summary::hours(u128::from(b.lost_mgpu_ms))),
        ])?;
    }
    w.flush()
}

pub fn write_queue_timeseries_csv(run: &RunResult, out: impl Write) -> io::Result<()> {
    let mut w = csv::Writer::from_writer(out);
    w.write_record(crate::report::input::QUEUE_TIMESERIES_COLUMNS)?;
    // Named queues come from the workload's jobs; "-" (no queue) is written only when a job
    // has no queue, so that a trace where every job names one has no empty rows.
    let skip = usize::from(!run.series.has_jobs_without_queue());
    let queues = run.series.queues();
    for (index, (start, end)) in spans(run).into_iter().enumerate() {
        let span = end - start;
        for (name, q) in queues.iter().zip(run.series.queue_buckets(index)).skip(skip) {
            w.write_record([
                secs(start),
                secs(end),
                name.clone(),
                average(q.allocated_mgpu_ms, span, 1000.0),
                average(q.waiting_task_ms, span, 1.0),
                average(q.running_task_ms, span, 1.0),
            ])?;
        }
    }
    w.flush()
}
