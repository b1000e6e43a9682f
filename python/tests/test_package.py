"""The package's version, and the warning when a seed cannot change anything."""

import importlib.metadata
import pathlib
import tomllib
import warnings

import pytest
import schedlab
from conftest import SMALL_CLUSTER
from fifo import Fifo

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def test_the_version_is_the_crates_and_the_installed_packages():
    crate = tomllib.loads((ROOT / "python" / "Cargo.toml").read_text())["package"]["version"]
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    assert schedlab.__version__ == crate == workspace
    assert importlib.metadata.version("schedlab") == schedlab.__version__


def test_a_seed_given_to_a_run_it_cannot_change_is_warned_of(small_trace):
    with pytest.warns(schedlab.SeedWarning, match=r"seed=7 changes nothing here .*no failures="):
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, seed=7)


def test_no_seed_warning_when_the_seed_feeds_something_or_is_not_given(small_trace):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER)
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, seed=3, failures="weibull:node_mtbf_h=500")
        schedlab.simulate(jobs=20, seed=3)  # the built-in synthetic workload
        schedlab.simulate(trace=small_trace, cluster=SMALL_CLUSTER, policy=Fifo, seed=3)  # may draw plan.random()
        schedlab.sweep(policies=["fifo", "sjf"], trace=small_trace, cluster=SMALL_CLUSTER)
        schedlab.sweep(seeds=[0, 1], trace=small_trace, cluster=SMALL_CLUSTER, failures="weibull:node_mtbf_h=500")


def test_a_sweep_over_seeds_that_cannot_change_its_runs_is_warned_of(small_trace):
    with pytest.warns(schedlab.SeedWarning, match=r"seeds 0, 1, 2: runs that differ only in their seed will be identical"):
        table = schedlab.sweep(seeds=[0, 1, 2], trace=small_trace, cluster=SMALL_CLUSTER)
    assert table["digest"].n_unique() == 1
    runs = [dict(seed=0), dict(seed=1)]
    with pytest.warns(schedlab.SeedWarning, match=r"trace="):
        schedlab.sweep(runs, trace=small_trace, cluster=SMALL_CLUSTER)
