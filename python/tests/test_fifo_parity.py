"""The contract is the same for Python and Rust: the example FIFO in Python makes the built-in
`fifo`'s decisions, bit for bit (equal digests)."""

import random

import pytest
import schedlab
from conftest import SHARED_TRACES, SMALL_CLUSTER
from fifo import Fifo

PHILLY = SHARED_TRACES / "philly-pollux" / "philly.csv"


def both(**run):
    """The run with the built-in fifo and with the Python one."""
    return schedlab.simulate(policy="fifo", **run), schedlab.simulate(policy=Fifo(), **run)


def test_python_fifo_schedules_the_small_trace_as_worked_out(small_trace):
    rust, python = both(trace=small_trace, cluster=SMALL_CLUSTER)
    starts = dict(zip(python.jobs["name"], python.jobs["first_start_s"]))
    assert starts == {"a": 0.0, "b": 100.0, "c": 150.0, "d": 150.0}
    assert python.digest == rust.digest


@pytest.mark.skipif(not PHILLY.is_file(), reason=f"SKIPPED: {PHILLY} is absent (../shared/traces beside the checkout)")
def test_python_fifo_digest_equals_rust_fifo_on_philly():
    rust, python = both(trace=PHILLY, format="philly", cluster="60x8:V100")
    assert python.summary["jobs"] == 82_247
    assert python.digest == rust.digest
    assert python.summary["decision_points"] == rust.summary["decision_points"]


def failing_cluster_trace(tmp_path):
    """300 jobs of 1 to 16 GPUs over two days (seeded), for a run in which nodes fail."""
    rng = random.Random(7)
    lines = ["job_id,submit_s,duration_s,gpus"]
    for i in range(300):
        lines.append(f"j{i},{i * 600},{rng.randint(600, 36_000)},{rng.choice([1, 1, 2, 4, 8, 16])}")
    path = tmp_path / "jobs.csv"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_python_fifo_digest_equals_rust_fifo_with_failures(tmp_path):
    run = dict(trace=failing_cluster_trace(tmp_path), cluster="4x8:V100", failures="weibull:node_mtbf_h=24", seed=3)
    rust, python = both(**run)
    assert rust.summary["failures"] > 0, "the run must have failures for this test to mean anything"
    assert rust.summary["task_failures"] > 0
    assert python.digest == rust.digest
