"""The contract is the same for Python and Rust: the example FIFO in Python makes the built-in
`fifo`'s decisions, bit for bit (equal digests)."""

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
    starts = dict(zip(python.jobs["job_id"], python.jobs["first_start_s"]))
    assert starts == {"a": 0.0, "b": 100.0, "c": 150.0, "d": 150.0}
    assert python.digest == rust.digest


@pytest.mark.skipif(not PHILLY.is_file(), reason=f"SKIPPED: {PHILLY} is absent (../shared/traces beside the checkout)")
def test_python_fifo_digest_equals_rust_fifo_on_philly():
    rust, python = both(trace=PHILLY, format="philly", cluster="60x8:V100")
    assert python.summary["jobs"] == 82_247
    assert python.digest == rust.digest
    assert python.summary["decision_points"] == rust.summary["decision_points"]


def test_python_fifo_digest_equals_rust_fifo_with_failures():
    # The built-in synthetic workload on the built-in cluster, with nodes failing.
    rust, python = both(jobs=1500, failures="weibull:node_mtbf_h=50", seed=3)
    assert rust.summary["failures"] > 0, "the run must have failures for this test to mean anything"
    assert rust.summary["task_failures"] > 0 and rust.summary["retries"] > 0
    assert python.digest == rust.digest
