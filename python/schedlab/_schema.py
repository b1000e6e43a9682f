"""The schema of every table the package returns: its columns, in the order schedlab's
writers write them, and their polars types. A table is read with its schema whatever the run
holds (an empty column, no rows), so tables of different runs concatenate. Reading checks the
CSV's header against the schema: a column the writers add, drop or move is an error naming
this file, never a table typed by guessing.

Whole numbers are Int64, times, fractions and GPU-hours Float64, names and ids String (an id
of digits, `007`, stays text). The sweep table's columns come from the native module, which
types them from the summary's own fields (see python/src/schema.rs)."""

from __future__ import annotations

import polars as pl

from . import _native

S, I, F, B = pl.String, pl.Int64, pl.Float64, pl.Boolean

_TYPES = {"str": S, "int": I, "float": F, "bool": B}

SCHEMAS: dict[str, pl.Schema] = {
    # jobs.csv, reports::write_job_records_csv (reports/src/tables.rs).
    "jobs": pl.Schema({
        "job_id": S, "job_index": I, "queue": S, "submit_s": F, "first_start_s": F, "end_s": F, "jct_s": F,
        "queue_s": F, "run_s": F, "tasks": I, "gpus": I, "preemptions": I, "failures": I, "retries": I,
        "gpu_hours": F, "lost_gpu_hours": F, "state": S, "reason": S, "critical_path_s": F, "ettr": F,
        "interruptions": I, "mtbi_s": F,
    }),  # fmt: skip
    # tasks.csv, reports::write_tasks_csv (reports/src/tables.rs).
    "tasks": pl.Schema({
        "job_id": S, "task_id": S, "job_index": I, "task_index": I, "state": S, "first_start_s": F, "finish_s": F,
        "gpus": I, "depends_on": S,
    }),  # fmt: skip
    # timeseries.csv, reports::write_timeseries_csv (reports/src/series_tables.rs).
    "timeseries": pl.Schema({
        "start_s": F, "end_s": F, "capacity_gpus": I, "allocated_gpus": F, "stalled_gpus": F, "failed_gpus": F,
        "waiting_tasks": F, "running_tasks": F, "arrivals": I, "completions": I, "failures": I, "lost_gpu_h": F,
    }),  # fmt: skip
    # decisions.csv, reports::write_decisions_csv (reports/src/tables.rs).
    "decisions": pl.Schema({
        "time_s": F, "kind": S, "job_id": S, "task_id": S, "job_index": I, "task_index": I, "gpu_indexes": S,
        "detail": S, "policy": S,
    }),  # fmt: skip
    # sweep.csv, reports::sweep::write_sweep_csv: run, trace, spec, seed, then the summary.
    "sweep": pl.Schema({name: _TYPES[kind] for name, kind in _native.sweep_schema()}),
    # A trace's canonical jobs.csv, traces::write_trace_jobs_csv (traces/src/canonical.rs).
    "trace_tasks": pl.Schema({
        "job_id": S, "task_id": S, "submit_s": F, "duration_s": F, "gpus": I, "gpu_milli": I, "gpu_type": S,
        "single_node": B, "gpus_per_node": I, "estimate_s": F, "queue": S, "checkpoint_s": F,
        "restart_overhead_s": F, "deadline_s": F, "priority": I, "depends_on": S, "not_before_s": F,
        "not_after_s": F, "dataset": S, "speeds": S, "cancel_s": F, "exit_code": I, "checkpoint_cost_s": F,
        "account": S, "user": S, "qos": S, "co_start": B,
    }),  # fmt: skip
    # read_trace's one row per job, made from its tasks (schedlab/__init__.py).
    "trace_jobs": pl.Schema({"job_id": S, "submit_s": F, "queue": S, "priority": I, "tasks": I, "gpus": I, "gpu_s": F}),
    # A trace's cluster.csv, traces::write_cluster_csv (traces/src/cluster_spec.rs).
    "cluster": pl.Schema({"pool": S, "gpu_type": S, "nodes": I, "gpus_per_node": I, "nodes_per_rack": I, "speed": F}),
}


def read(data: bytes, table: str) -> pl.DataFrame:
    """The CSV `data`, written by schedlab's writer of `table`, as a DataFrame of its schema."""
    schema = SCHEMAS[table]
    if not data:
        return pl.DataFrame(schema=schema)
    header = pl.read_csv(data, n_rows=0, infer_schema=False).columns
    if header != schema.names():
        raise RuntimeError(
            f"schedlab's {table} table has the columns {header}, its schema in python/schedlab/_schema.py "
            f"{schema.names()}: the schema is out of date"
        )
    return pl.read_csv(data, schema=schema)
