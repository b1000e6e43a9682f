"""The package's version."""

import importlib.metadata
import pathlib
import tomllib

import schedlab

ROOT = pathlib.Path(__file__).resolve().parent.parent.parent


def test_the_version_is_the_crates_and_the_installed_packages():
    crate = tomllib.loads((ROOT / "python" / "Cargo.toml").read_text())["package"]["version"]
    workspace = tomllib.loads((ROOT / "Cargo.toml").read_text())["workspace"]["package"]["version"]
    assert schedlab.__version__ == crate == workspace
    assert importlib.metadata.version("schedlab") == schedlab.__version__
