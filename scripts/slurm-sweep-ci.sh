#!/usr/bin/env bash
# CI: a schedlab sweep as a Slurm job array against a real Slurm, merged to the bytes of the
# local sweep (scripts/slurm-sweep-check.sh), inside the live profile of scripts/slurm-dump.sh
# (Slurm 22.05 from Debian's packages, installed when absent; needs root).
#
#   SCHEDLAB=target/release/schedlab scripts/slurm-sweep-ci.sh [DIR]
#
# Builds nothing: the binary comes from $SCHEDLAB (default target/release/schedlab). DIR
# (default: a new temporary folder) gets the sweeps (DIR/sweep-check) and slurm-dump.log (a copy
# of what it prints); it is removed on success when it was temporary, kept and named on failure. Slurm's own state and
# logs go to $SLURM_STATE (default /tmp/schedlab-slurm-sweep), its ports from
# $SLURM_DUMP_PORT_BASE (default 18800), so it runs beside the fair-share Slurm of
# scripts/slurm-ci.sh (16800) or any other base.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEDLAB=${SCHEDLAB:-target/release/schedlab}
[[ -x $SCHEDLAB ]] || { echo "slurm-sweep-ci: no schedlab binary at $SCHEDLAB (set SCHEDLAB, or build it)" >&2; exit 2; }
SCHEDLAB=$(realpath "$SCHEDLAB")
if [[ -n ${1:-} ]]; then
    DIR=$1 keep=1
    mkdir -p "$DIR"
else
    DIR=$(mktemp -d /tmp/schedlab-slurm-sweep-ci.XXXXXX) keep=0
fi
DIR=$(realpath "$DIR")
export SLURM_STATE=${SLURM_STATE:-/tmp/schedlab-slurm-sweep}
started=$SECONDS

status=0
SLURM_DUMP_PROFILE=live SLURM_DUMP_PORT_BASE=${SLURM_DUMP_PORT_BASE:-18800} \
    SLURM_DUMP_RUN="SCHEDLAB=$(printf %q "$SCHEDLAB") bash scripts/slurm-sweep-check.sh" \
    bash scripts/slurm-dump.sh "$DIR" 2>&1 | tee "$DIR/slurm-dump.log" || status=$?
if ((status)); then
    echo "slurm-sweep-ci: FAILED (status $status) after $((SECONDS - started)) s; the whole log is $DIR/slurm-dump.log," \
        "the sweeps are in $DIR/sweep-check, Slurm's logs in $SLURM_STATE/log" >&2
    exit 1
fi
((keep)) || rm -rf "$DIR"
echo "slurm-sweep-ci: OK in $((SECONDS - started)) s"
