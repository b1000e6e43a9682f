"""The Python FIFO (examples/fifo.py) on philly.csv against the built-in fifo: wall time of
each over 3 runs, and what one decide call costs in Python.

    python python/bench/fifo_philly.py [PATH/TO/philly.csv]

The per-call cost is (Python run - Rust run) / decision points: everything the Python policy
adds (entering Python, the view and plan handles, its own bookkeeping), with the engine's own
work (the Rust run) taken out.
"""

import pathlib
import statistics
import sys
import time

import schedlab

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples"))
from fifo import Fifo  # noqa: E402

PHILLY = HERE.parent.parent.parent / "shared" / "traces" / "philly-pollux" / "philly.csv"
RUNS = 3


def timed(policy, trace):
    """Median wall seconds of RUNS runs and the last run."""
    seconds = []
    for _ in range(RUNS):
        started = time.perf_counter()
        run = schedlab.simulate(trace=trace, format="philly", cluster="60x8:V100", policy=policy)
        seconds.append(time.perf_counter() - started)
    return statistics.median(seconds), seconds, run


def main():
    trace = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else PHILLY
    if not trace.is_file():
        sys.exit(f"SKIPPED: {trace} is absent (../shared/traces beside the checkout)")
    rust_s, rust_all, rust = timed("fifo", trace)
    python_s, python_all, python = timed(Fifo, trace)
    assert python.digest == rust.digest, "the Python FIFO must make fifo's decisions"
    calls = python.summary["decision_points"]
    print(f"jobs {python.summary['jobs']}, decision points {calls}, digest {python.digest}")
    print(f"rust fifo   median {rust_s:.2f} s  (runs: {', '.join(f'{s:.2f}' for s in rust_all)})")
    print(f"python fifo median {python_s:.2f} s  (runs: {', '.join(f'{s:.2f}' for s in python_all)})")
    print(f"per decide call in Python: {(python_s - rust_s) / calls * 1e6:.1f} us")


if __name__ == "__main__":
    main()
