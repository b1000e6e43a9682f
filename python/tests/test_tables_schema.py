"""Every table the package returns is typed by one declared schema, whatever the run: a run
without failures or tasks and one with both concatenate, empty columns and empty tables
included."""

import polars as pl
import pytest
import schedlab
from conftest import SMALL_CLUSTER

# A DAG job (b: 1 after 0) and a lone job: tasks.csv lists b's tasks.
DAG_JOBS = """job_id,task_id,submit_s,duration_s,gpus,depends_on
a,0,0,100,4,
b,0,10.5,50,2,
b,1,10.5,50,2,0
"""
# Node failures every few seconds on average: some job fails and has an mtbi_s.
FAILURES = "weibull:node_mtbf_h=0.01"
CLUSTER_CSV = "pool,gpu_type,nodes,gpus_per_node\nv,V100,2,4\n"


@pytest.fixture
def dag_trace(tmp_path):
    path = tmp_path / "dag.csv"
    path.write_text(DAG_JOBS)
    return path


@pytest.fixture
def plain(small_trace):
    """No failures, no job of several tasks."""
    return schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, decisions=True)


@pytest.fixture
def eventful(dag_trace):
    """Failures, and a job of several tasks."""
    return schedlab.simulate(trace=dag_trace, cluster=SMALL_CLUSTER, failures=FAILURES, seed=3, decisions=True)


RUN_TABLES = ("jobs", "tasks", "timeseries", "decisions")


def test_every_run_table_has_its_declared_schema(plain, eventful):
    assert eventful.jobs["failures"].sum() > 0 and eventful.jobs["mtbi_s"].null_count() < eventful.jobs.height
    assert plain.tasks.height == 0 and eventful.tasks.height == 2
    for table in RUN_TABLES:
        for run in (plain, eventful):
            assert getattr(run, table).schema == schedlab.SCHEMAS[table], table


def test_runs_with_and_without_failures_concatenate(plain, eventful):
    for table in RUN_TABLES:
        both = pl.concat([getattr(plain, table), getattr(eventful, table)])
        assert both.schema == schedlab.SCHEMAS[table]


def test_the_declared_schemas_type_what_the_columns_hold():
    jobs = schedlab.SCHEMAS["jobs"]
    assert jobs["job_id"] == pl.String and jobs["job_index"] == pl.Int64
    assert jobs["mtbi_s"] == pl.Float64 and jobs["critical_path_s"] == pl.Float64
    tasks = schedlab.SCHEMAS["tasks"]
    assert tasks["task_index"] == pl.Int64 and tasks["finish_s"] == pl.Float64 and tasks["depends_on"] == pl.String
    sweep = schedlab.SCHEMAS["sweep"]
    assert sweep["seed"] == pl.Int64 and sweep["digest"] == pl.String
    assert sweep["horizon_stop_s"] == pl.Float64 and sweep["failures_span_s"] == pl.Float64


def test_sweep_tables_have_the_declared_schema_and_concatenate(small_trace):
    quiet = schedlab.sweep(policies=["fifo"], trace=small_trace, cluster=SMALL_CLUSTER)
    failing = schedlab.sweep(policies=["fifo"], trace=small_trace, cluster=SMALL_CLUSTER, failures=FAILURES, seed=3)
    assert quiet.schema == failing.schema == schedlab.SCHEMAS["sweep"]
    assert pl.concat([quiet, failing]).height == 2


def test_traces_have_the_declared_schemas_whatever_their_values(small_trace, dag_trace, tmp_path):
    folder = tmp_path / "trace"
    folder.mkdir()
    (folder / "jobs.csv").write_text(DAG_JOBS)
    (folder / "cluster.csv").write_text(CLUSTER_CSV)
    traces = [schedlab.read_trace(small_trace), schedlab.read_trace(dag_trace), schedlab.read_trace(folder)]
    for trace in traces:
        assert trace.tasks.schema == schedlab.SCHEMAS["trace_tasks"]
        assert trace.jobs.schema == schedlab.SCHEMAS["trace_jobs"]
    assert traces[2].cluster.schema == schedlab.SCHEMAS["cluster"]
    assert pl.concat([t.tasks for t in traces]).height == 10
    assert pl.concat([t.jobs for t in traces]).height == 8


def test_a_header_that_is_not_the_declared_schemas_is_an_error():
    from schedlab import _schema

    with pytest.raises(RuntimeError, match=r"decisions table has the columns \['time_s', 'kind'\], .* out of date"):
        _schema.read(b"time_s,kind\n0,start\n", "decisions")
    assert _schema.read(b"", "decisions").schema == schedlab.SCHEMAS["decisions"]
