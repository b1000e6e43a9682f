//! Metric summaries, per-job tables and printed reports of schedlab runs.

pub mod compare;
mod csv_row;
pub mod fairness;
mod job_tally;
#[cfg(feature = "polars")]
pub mod parquet;
pub mod percentiles;
pub mod recorded;
pub mod regress;
pub mod report;
mod series_tables;
mod stream;
mod summary;
pub mod sweep;
mod tables;
pub mod training;

pub use series_tables::{write_queue_timeseries_csv, write_timeseries_csv};
pub use stream::RecordFiles;
pub use summary::{Summary, SummaryBuilder, percentile_s};
pub use tables::{
    human, summary_table, write_decisions_csv, write_gpu_health_csv, write_job_records_csv, write_summary_json,
    write_tasks_csv,
};
