#!/usr/bin/env bash
# CI: live mode's Slurm executor against a real Slurm (scripts/slurm-executor-check.py, run
# inside the live profile of scripts/slurm-dump.sh: Slurm 22.05 from Debian's packages,
# installed when absent; needs root). Two sessions, fifo and srtf, with a node set down, the
# coordinator killed with SIGKILL and restarted, preemptions; docs/slurm-executor.md says what
# is checked.
#
#   SCHEDLAB=target/release/schedlab scripts/slurm-executor-ci.sh [DIR]
#
# Builds nothing: the binary comes from $SCHEDLAB (default target/release/schedlab). DIR
# (default: a new temporary folder) gets the coordinators' state directories and logs, the
# exports and slurm-dump.log; it is removed on success when it was temporary, kept and named
# on failure. Slurm's own state and logs go to $SLURM_STATE (default
# /tmp/schedlab-slurm-executor), its ports from $SLURM_DUMP_PORT_BASE (default 19800).
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEDLAB=${SCHEDLAB:-target/release/schedlab}
[[ -x $SCHEDLAB ]] || { echo "slurm-executor-ci: no schedlab binary at $SCHEDLAB (set SCHEDLAB, or build it)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "slurm-executor-ci: needs python3" >&2; exit 2; }
SCHEDLAB=$(realpath "$SCHEDLAB")
if [[ -n ${1:-} ]]; then
    DIR=$1 keep=1
    mkdir -p "$DIR"
else
    DIR=$(mktemp -d /tmp/schedlab-slurm-executor-ci.XXXXXX) keep=0
fi
DIR=$(realpath "$DIR")
export SLURM_STATE=${SLURM_STATE:-/tmp/schedlab-slurm-executor}
started=$SECONDS

status=0
SLURM_DUMP_PROFILE=live SLURM_DUMP_PORT_BASE=${SLURM_DUMP_PORT_BASE:-19800} \
    SLURM_DUMP_RUN="SCHEDLAB=$(printf %q "$SCHEDLAB") SLURM_EXECUTOR_OUT=$(printf %q "$DIR/check") python3 scripts/slurm-executor-check.py" \
    bash scripts/slurm-dump.sh "$DIR" 2>&1 | tee "$DIR/slurm-dump.log" || status=$?
if ((status)); then
    echo "slurm-executor-ci: FAILED (status $status) after $((SECONDS - started)) s; the whole log is $DIR/slurm-dump.log," \
        "the sessions are in $DIR/check, Slurm's logs in $SLURM_STATE/log" >&2
    exit 1
fi
((keep)) || rm -rf "$DIR"
echo "slurm-executor-ci: OK in $((SECONDS - started)) s"
