"""Shared fixtures: a small canonical trace whose schedule is worked out by hand, and the
example FIFO (python/examples/fifo.py) importable as `fifo`."""

import pathlib
import sys

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))

# ../shared/traces beside the checkout (never copied into the repository).
SHARED_TRACES = HERE.parent.parent.parent / "shared" / "traces"

# Four jobs on 2x4 GPUs (8). Strict FIFO: a (4 GPUs) starts at 0; b needs all 8, so it waits
# for a to end at 100 and runs 100..150; c and d wait behind b and start at 150.
SMALL_JOBS = """job_id,submit_s,duration_s,gpus
a,0,100,4
b,10,50,8
c,20,30,2
d,30,10,1
"""
SMALL_CLUSTER = "2x4:V100"


@pytest.fixture
def small_trace(tmp_path):
    path = tmp_path / "jobs.csv"
    path.write_text(SMALL_JOBS)
    return path
