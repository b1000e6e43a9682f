"""simulate's keywords are the RunSpec; its tables are the reports' own; sweep and read_trace."""

import pytest
import schedlab
from conftest import SMALL_CLUSTER
from fifo import Fifo

# jobs.csv's header, as reports/src/tables.rs writes it.
JOBS_COLUMNS = [
    "job_id", "job_index", "queue", "submit_s", "first_start_s", "end_s", "jct_s", "queue_s", "run_s", "tasks", "gpus",
    "preemptions", "failures", "retries", "gpu_hours", "lost_gpu_hours", "state", "reason", "critical_path_s",
    "ettr", "interruptions", "mtbi_s",
]  # fmt: skip


def test_keywords_that_are_not_runspec_fields_are_refused(small_trace):
    with pytest.raises(schedlab.RunError, match="unknown field `no_such_setting`"):
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, no_such_setting=1)


def test_the_tables_have_the_reports_columns_and_the_runs_values(small_trace):
    run = schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER)
    assert run.jobs.columns == JOBS_COLUMNS
    assert run.jobs["job_id"].to_list() == ["a", "b", "c", "d"]
    assert run.jobs["jct_s"].to_list() == [100.0, 140.0, 160.0, 130.0]  # end - submit, worked out
    assert run.summary["jobs_finished"] == 4
    assert run.summary["policy"].startswith("fifo[")
    assert run.digest == run.summary["digest"]
    assert run.timeseries.columns[:2] == ["start_s", "end_s"]
    assert run.timeseries["arrivals"].sum() == 4
    assert run.tasks.height == 0  # tasks.csv lists the tasks of jobs with several


def test_the_decision_log_comes_when_asked(small_trace):
    assert schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER).decisions is None
    run = schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, decisions=True)
    starts = run.decisions.filter(kind="start")
    # The log names the policy that made it: here the built-in fifo with its parameters.
    assert set(run.decisions["policy"]) == {run.summary["policy"]}
    assert starts["time_s"].to_list() == [0.0, 100.0, 150.0, 150.0]
    assert starts["gpu_indexes"].to_list() == ["0 1 2 3", "0 1 2 3 4 5 6 7", "0 1", "2"]


def test_a_python_policy_is_named_by_its_file_and_class_or_name(small_trace):
    assert schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=Fifo).summary["policy"] == "fifo.py:Fifo"

    class Named(Fifo):
        name = "my-fifo"

    run = schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=Named(), decisions=True)
    assert run.summary["policy"] == "test_api.py:my-fifo"
    assert set(run.decisions["policy"]) == {"test_api.py:my-fifo"}  # and so does its decision log


def test_a_policy_that_needs_estimates_is_refused_a_trace_without(small_trace):
    class Estimating(Fifo):
        def needs_estimates(self):
            return True

    with pytest.raises(schedlab.RunError, match="estimate"):
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=Estimating())


@pytest.mark.filterwarnings("ignore::schedlab.SeedWarning")  # seeds that change nothing, on purpose
def test_sweep_runs_the_grid_and_returns_one_row_per_run(small_trace):
    table = schedlab.sweep(traces=[small_trace], policies=["fifo", "sjf"], seeds=[0, 1], cluster=SMALL_CLUSTER, threads=2)
    assert table.columns[:4] == ["run", "trace", "spec", "seed"]
    assert table["run"].to_list() == [0, 1, 2, 3]
    assert table["spec"].to_list() == ["fifo", "fifo", "sjf", "sjf"]
    assert table["seed"].to_list() == [0, 1, 0, 1]
    alone = schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy="sjf", seed=1)
    assert table["digest"][3] == alone.digest
    assert table["mean_jct_s"][3] == alone.summary["mean_jct_s"]


def test_sweep_takes_a_list_of_runs(small_trace):
    runs = [dict(policy="fifo"), dict(policy="fifo[skip=true]")]
    table = schedlab.sweep(runs, trace=small_trace, cluster=SMALL_CLUSTER)
    assert table["spec"].to_list() == ["fifo", "fifo[skip=true]"]
    # skip lets c and d start past b at 20 and 30; strict fifo starts them at 150.
    assert table["mean_jct_s"][0] > table["mean_jct_s"][1]


def test_sweep_refuses_a_python_policy(small_trace):
    with pytest.raises(TypeError, match="sweep run 0: policy must be a spec string"):
        schedlab.sweep([dict(policy=Fifo())], trace=small_trace, cluster=SMALL_CLUSTER)


def test_a_failing_run_fails_the_sweep_naming_it(small_trace):
    with pytest.raises(schedlab.RunError, match="run 1: .*nope"):
        schedlab.sweep(policies=["fifo", "nope"], trace=small_trace, cluster=SMALL_CLUSTER)


def test_read_trace_gives_tasks_and_jobs(small_trace):
    trace = schedlab.read_trace(small_trace)
    assert trace.tasks["job_id"].to_list() == ["a", "b", "c", "d"]
    assert trace.jobs["gpus"].to_list() == [4, 8, 2, 1]
    assert trace.jobs["gpu_s"].to_list() == [400.0, 400.0, 60.0, 10.0]
    assert trace.cluster is None
    assert trace.notes == []


def test_read_trace_reports_a_bad_trace_in_the_users_words(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_s,duration_s,gpus\na,0,100,four\n")
    with pytest.raises(schedlab.RunError, match="gpus"):
        schedlab.read_trace(path)


def test_out_writes_the_runs_files_as_simulate_out_does(small_trace, tmp_path):
    run = schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, out=tmp_path / "run", decisions=True)
    written = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert written == [
        "decisions.csv", "jobs.csv", "queue_metrics.csv", "queue_timeseries.csv", "summary.json", "timeseries.csv",
    ]  # fmt: skip
    assert (tmp_path / "run" / "jobs.csv").read_bytes().decode().splitlines()[0] == ",".join(run.jobs.columns)


def test_out_refuses_a_folder_holding_other_files_unless_forced(small_trace, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    with pytest.raises(schedlab.RunError, match=r"out=.* holds notes.txt, which no run writes: .* or force=True"):
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, out=folder)
    assert sorted(p.name for p in folder.iterdir()) == ["notes.txt"]
    schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, out=folder, force=True)
    assert (folder / "notes.txt").read_text() == "mine"
    assert (folder / "summary.json").exists()


def test_a_time_series_past_the_bucket_limit_is_refused_unless_forced(tmp_path):
    # Submissions 200,000 s apart: a 1 s bucket would be more than 100,000 buckets.
    path = tmp_path / "jobs.csv"
    path.write_text("job_id,submit_s,duration_s,gpus\na,0,1,1\nb,200000,1,1\n")
    with pytest.raises(schedlab.RunError, match=r"series_bucket_s=1 would write .* give series_bucket_s=3 or more, or force=True"):
        schedlab.simulate(trace=path, cluster=SMALL_CLUSTER, series_bucket_s=1)
    run = schedlab.simulate(trace=path, cluster=SMALL_CLUSTER, series_bucket_s=1, force=True)
    assert run.timeseries.height > 100_000


def test_sweep_checks_each_runs_out_folder(small_trace, tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "mine.txt").write_text("mine")
    with pytest.raises(schedlab.RunError, match=r"run 0: out=.* holds mine.txt, which no run writes"):
        schedlab.sweep([dict(trace=small_trace, cluster=SMALL_CLUSTER, out=folder)])
    schedlab.sweep([dict(trace=small_trace, cluster=SMALL_CLUSTER, out=folder)], force=True)
    assert (folder / "summary.json").exists()
