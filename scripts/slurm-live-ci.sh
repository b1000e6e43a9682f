#!/usr/bin/env bash
# CI: schedlab against a real Slurm started in the live profile of scripts/slurm-dump.sh
# (Slurm 22.05 from Debian's packages, installed when absent; needs root), running two checks
# in turn while its daemons are up:
#
#   scripts/slurm-sweep-check.sh       a sweep as a Slurm job array (partition batch), merged
#                                      to the bytes of the same sweep run locally
#                                      (docs/sweeps-and-regression.md)
#   scripts/slurm-executor-check.py    live mode's Slurm executor (partition gpu, held by
#                                      live/slurm/job_submit.lua): fifo with a node set down and
#                                      the coordinator killed with SIGKILL, srtf preempting,
#                                      then shadow mode on partition batch (docs/slurm-executor.md)
#
#   SCHEDLAB=target/release/schedlab scripts/slurm-live-ci.sh [DIR]
#
# Builds nothing: the binary comes from $SCHEDLAB (default target/release/schedlab). DIR
# (default: a new temporary folder) gets the sweeps (DIR/sweep-check), the coordinators' state
# directories, logs and exports (DIR/check) and slurm-dump.log; it is removed on success when
# it was temporary, kept and named on failure. Slurm's own state and logs go to $SLURM_STATE
# (default /tmp/schedlab-slurm-live-ci), its ports from $SLURM_DUMP_PORT_BASE (default 18800),
# so it runs beside the fair-share Slurm of scripts/slurm-ci.sh (16800) or any other base.
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEDLAB=${SCHEDLAB:-target/release/schedlab}
[[ -x $SCHEDLAB ]] || { echo "slurm-live-ci: no schedlab binary at $SCHEDLAB (set SCHEDLAB, or build it)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "slurm-live-ci: needs python3" >&2; exit 2; }
SCHEDLAB=$(realpath "$SCHEDLAB")
if [[ -n ${1:-} ]]; then
    DIR=$1 keep=1
    mkdir -p "$DIR"
else
    DIR=$(mktemp -d /tmp/schedlab-slurm-live-ci.XXXXXX) keep=0
fi
DIR=$(realpath "$DIR")
export SLURM_STATE=${SLURM_STATE:-/tmp/schedlab-slurm-live-ci}
started=$SECONDS

bin=$(printf %q "$SCHEDLAB")
checks="SCHEDLAB=$bin bash scripts/slurm-sweep-check.sh"
checks+=" && SCHEDLAB=$bin SLURM_EXECUTOR_OUT=$(printf %q "$DIR/check") python3 scripts/slurm-executor-check.py"
status=0
SLURM_DUMP_PROFILE=live SLURM_DUMP_PORT_BASE=${SLURM_DUMP_PORT_BASE:-18800} SLURM_DUMP_RUN=$checks \
    bash scripts/slurm-dump.sh "$DIR" 2>&1 | tee "$DIR/slurm-dump.log" || status=$?
if ((status)); then
    echo "slurm-live-ci: FAILED (status $status) after $((SECONDS - started)) s; the whole log is $DIR/slurm-dump.log," \
        "the sweeps are in $DIR/sweep-check, the sessions in $DIR/check, Slurm's logs in $SLURM_STATE/log" >&2
    exit 1
fi
((keep)) || rm -rf "$DIR"
echo "slurm-live-ci: OK in $((SECONDS - started)) s"
