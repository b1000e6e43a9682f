"""schedlab from Python: the simulator's runs, sweeps and trace importers, and policies
written in Python.

    import schedlab
    run = schedlab.simulate(trace="philly.csv", format="philly", cluster="60x8:V100", policy="sjf")
    run.summary["mean_jct_s"], run.jobs.head()

Keyword arguments of `simulate` are the fields of schedlab's RunSpec: the `schedlab simulate`
flags with `_` for `-` (`heartbeat_s=30`, `horizon_days=365`, ...). Unknown ones are refused.
A policy is a spec string (`"fifo[skip=true]"`, see `schedlab policies`) or a Python object
with `decide(self, view, plan)`; see docs/python.md and python/examples/fifo.py.
"""

from __future__ import annotations

import inspect
import itertools
import json
import os
import warnings
from dataclasses import dataclass
from typing import Any, Iterable

import polars as pl

from . import _native
from ._native import Plan, PlanError, RunError, View
from ._schema import SCHEMAS, read as _frame

__all__ = [
    "simulate", "sweep", "read_trace", "Run", "Trace", "View", "Plan", "PlanError", "RunError", "SeedWarning",
    "SCHEMAS",
]  # fmt: skip

# The Rust crate's version (python/Cargo.toml), which maturin also gives the package's metadata.
__version__: str = _native.__version__


class SeedWarning(UserWarning):
    """A seed given that cannot change the run: no failure model or replayed failure history,
    and a trace in place of the built-in synthetic workload (unless the policy draws random
    numbers, runs that differ only in their seed are identical)."""


@dataclass(frozen=True)
class Run:
    """One run's results: `summary` (summary.json as a dict), `jobs`, `tasks` and `timeseries`
    (jobs.csv, tasks.csv, timeseries.csv as polars DataFrames typed by `SCHEMAS`, whatever the
    run; `.to_pandas()` for pandas),
    `decisions` (decisions.csv, with `decisions=True`; else None), the digest of its
    decisions, and the trace importer's `notes` (what it left out or does not model)."""

    summary: dict
    jobs: pl.DataFrame
    tasks: pl.DataFrame
    timeseries: pl.DataFrame
    decisions: pl.DataFrame | None
    digest: str
    notes: list[str]


@dataclass(frozen=True)
class Trace:
    """A trace as the importer read it: `tasks` (the canonical jobs.csv, one row per task),
    `jobs` (one row per job), `cluster` (cluster.csv, when the trace describes its cluster)
    and the importer's `notes` (what it left out or does not model)."""

    tasks: pl.DataFrame
    jobs: pl.DataFrame
    cluster: pl.DataFrame | None
    notes: list[str]


def _policy_name(policy: Any) -> str:
    """`fifo.py:Fifo`: the file that defines the policy's class, then the object's `name`
    attribute or the class name. It names the policy in the summary and its random stream, so
    it holds no directory (the same policy moved elsewhere draws the same numbers)."""
    cls = type(policy)
    label = getattr(policy, "name", None)
    if not isinstance(label, str) or not label:
        label = cls.__qualname__
    try:
        file = os.path.basename(inspect.getfile(cls))
    except (TypeError, OSError):
        file = "<python>"
    return f"{file}:{label}"


def _spec(settings: dict[str, Any]) -> str:
    """The RunSpec's JSON: None means the field's default, paths become strings."""
    fields = {k: os.fspath(v) if isinstance(v, os.PathLike) else v for k, v in settings.items() if v is not None}
    return json.dumps(fields)


def simulate(
    trace: str | os.PathLike | None = None,
    format: str = "canonical",
    cluster: str | None = None,
    policy: Any = "fifo",
    failures: str | None = None,
    seed: int | None = None,
    force: bool = False,
    **settings: Any,
) -> Run:
    """Runs one simulation. `policy` is a spec string, or a Python policy (an object with
    `decide(self, view, plan)`, or its class, which is instantiated). Every other keyword is a
    RunSpec field. A time series of more than 100,000 buckets is refused, and so is an `out=`
    folder holding files no run writes, unless `force=True` (as `simulate --force`).
    Raises RunError for bad settings, a bad trace, or an exception in a Python policy's
    `decide` (with its traceback). Warns (SeedWarning) when `seed` is given and cannot change
    the run (a trace without a failure model, and a built-in policy)."""
    spec = dict(trace=trace, format=format, cluster=cluster, failures=failures, seed=seed, **settings)
    # A Python policy may draw from `plan.random()`, which the seed feeds.
    if seed is not None and isinstance(policy, str):
        reason = _idle_seed_reason(_spec(dict(spec, policy=policy)))
        if reason is not None:
            warnings.warn(
                f"seed={seed} changes nothing here unless the policy draws random numbers: {reason}",
                SeedWarning,
                stacklevel=2,
            )
    if isinstance(policy, str):
        out = _native.simulate(_spec(dict(spec, policy=policy)), force=force)
    else:
        if inspect.isclass(policy):
            policy = policy()
        out = _native.simulate(_spec(spec), policy, _policy_name(policy), force=force)
    return Run(
        summary=json.loads(out["summary"]),
        jobs=_frame(out["jobs"], "jobs"),
        tasks=_frame(out["tasks"], "tasks"),
        timeseries=_frame(out["timeseries"], "timeseries"),
        decisions=_frame(out["decisions"], "decisions") if out["decisions"] is not None else None,
        digest=out["digest"],
        notes=list(out["notes"]),
    )


def sweep(
    runs: Iterable[dict[str, Any]] | None = None,
    *,
    traces: Iterable[Any] | None = None,
    policies: Iterable[str] | None = None,
    seeds: Iterable[int] | None = None,
    threads: int | None = None,
    force: bool = False,
    **settings: Any,
) -> pl.DataFrame:
    """Runs many simulations in parallel in Rust (the GIL released) and returns one row per run
    with the columns of `schedlab sweep`'s sweep.csv: run, trace, spec, seed, then the summary.

    Either `runs`, a list of dicts of `simulate`'s keywords (`settings` fill in what a dict
    leaves out), or the grid of the `traces` x `policies` x `seeds` given, with `settings` for
    everything else (runs in that order: the last axis varies fastest). Policies are spec strings: a Python policy cannot run in parallel threads (the GIL
    would serialize it and one object would be shared by every run), so run those with
    `simulate`. `force` lifts the limits `simulate`'s does, for every run. Warns (SeedWarning)
    when runs differ only in seeds that cannot change them. The table is typed by
    `SCHEMAS["sweep"]`."""
    if runs is None:
        given = (("trace", traces), ("policy", policies), ("seed", seeds))
        axes = {key: list(values) for key, values in given if values is not None}
        runs = [dict(zip(axes, values)) for values in itertools.product(*axes.values())]
    specs = []
    settings_of_runs = []
    for index, run in enumerate(runs):
        run = dict(settings, **run)
        settings_of_runs.append(run)
        if not isinstance(run.get("policy", "fifo"), str):
            raise TypeError(
                f"sweep run {index}: policy must be a spec string; a Python policy runs with simulate(), "
                "one run at a time"
            )
        specs.append(_spec(run))
    _warn_of_idle_seeds(settings_of_runs)
    return _frame(_native.sweep(specs, threads, force=force), "sweep")


def _idle_seed_reason(spec: str) -> str | None:
    """Why the seed of the run `spec` spells can change nothing, or None when it feeds
    something or the settings are bad (the run itself then says what is wrong)."""
    try:
        return _native.idle_seed_reason(spec)
    except RunError:
        return None


def _warn_of_idle_seeds(runs: list[dict[str, Any]]) -> None:
    """Warns (SeedWarning) when some of `runs` differ only in their seed and that seed cannot
    change them, as `schedlab sweep --seeds` does."""
    seeds: dict[str, list[int]] = {}
    for run in runs:
        rest = {key: value for key, value in run.items() if key != "seed"}
        seed = run.get("seed")
        seeds.setdefault(_spec(rest), []).append(0 if seed is None else seed)
    for rest, given in seeds.items():
        reason = _idle_seed_reason(rest) if len(set(given)) > 1 else None
        if reason is not None:
            listed = ", ".join(str(seed) for seed in dict.fromkeys(given))
            warnings.warn(
                f"seeds {listed}: runs that differ only in their seed will be identical unless the policy draws "
                f"random numbers: {reason}",
                SeedWarning,
                stacklevel=3,
            )
            return


def read_trace(path: str | os.PathLike, format: str = "canonical") -> Trace:
    """Reads a trace with schedlab's importer for `format` (canonical, itp, philly, openb)."""
    out = _native.read_trace(os.fspath(path), format)
    tasks = _frame(out["tasks"], "trace_tasks")
    jobs = tasks.group_by("job_id", maintain_order=True).agg(
        pl.col("submit_s").first(),
        pl.col("queue").first(),
        pl.col("priority").first(),
        pl.len().alias("tasks"),
        pl.col("gpus").sum(),
        (pl.col("gpus") * pl.col("duration_s")).sum().alias("gpu_s"),
    )
    jobs = jobs.cast(dict(SCHEMAS["trace_jobs"]))  # pl.len() counts in polars' index type
    cluster = _frame(out["cluster"], "cluster") if out["cluster"] is not None else None
    return Trace(tasks=tasks, jobs=jobs, cluster=cluster, notes=list(out["notes"]))
