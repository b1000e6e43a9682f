#!/usr/bin/env bash
# The Python package's CI: builds it from source (pip install ./python: maturin, release,
# --locked to python/Cargo.lock) into a fresh virtual environment and runs its tests
# (python/tests, pytest).
#
#   scripts/python-ci.sh [VENV_DIR]     default VENV_DIR: target/python-ci-venv
#
# Needs Python >= 3.11 with venv and pip (PYTHON picks the interpreter; default python3), Rust,
# a C compiler, and PyPI (maturin, polars, pytest). The wheel's Rust build goes to
# CARGO_TARGET_DIR (default: the workspace's target/, so it shares compiled dependencies with
# the workspace build).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/target/python-ci-venv}
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$root/target}

rm -rf "$venv"
"${PYTHON:-python3}" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
# --locked: python/Cargo.lock must be current (cargo refuses to rewrite it), so a lock gone
# stale fails here instead of being rewritten by every `pip install ./python`.
"$venv/bin/python" -m pip install --quiet --config-settings=maturin.build-args=--locked "$root/python" pytest

# From the repository root, not python/: `import schedlab` must find the installed package
# (with its compiled module), not the source folder python/schedlab.
cd "$root"
"$venv/bin/pytest" -q python/tests
