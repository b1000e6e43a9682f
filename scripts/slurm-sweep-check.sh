#!/usr/bin/env bash
# Checks that a sweep run as a Slurm job array (scripts/slurm-sweep.sh) merges into the very
# bytes of the same sweep run locally. Run by scripts/slurm-live-ci.sh inside a live Slurm
# (scripts/slurm-dump.sh, SLURM_DUMP_PROFILE=live, SLURM_DUMP_RUN); works against any Slurm
# whose nodes share this file system.
#
#   SCHEDLAB=target/release/schedlab scripts/slurm-sweep-check.sh
#
# The sweep: 300 built-in synthetic jobs on 4x8:V100 with Weibull node failures and 30-minute
# checkpoints; fifo and easy-backfill, each with placement=pack|spread, seeds 0..3: 12 runs.
# It runs once with `schedlab sweep --out local` and once through slurm-sweep.sh in 4 shards
# (3 runs each, 2 threads, a node each: sbatch --exclusive) on partition $SLURM_SWEEP_PARTITION;
# then
#
#   - every shard must have succeeded (slurm-sweep.sh exits 1 otherwise, naming it);
#   - `diff -r` of the merged folder and the local one, wall.csv excluded (its wall times are
#     the one non-deterministic file, docs/sweeps-and-regression.md), must find nothing;
#   - wall.csv must list the same runs in the same order on both sides.
#
# Exits 1, saying which check failed and where the folders are, otherwise 0.
#
# Environment:
#   SCHEDLAB                  the binary (default target/release/schedlab)
#   SLURM_SWEEP_PARTITION     partition of the array (default batch: the live profile's own;
#                             never `gpu`, whose jobs that profile holds)
#   SLURM_SWEEP_CHECK_DIR     where the two sweeps go (default $SLURM_DUMP_OUT/sweep-check when
#                             run under slurm-dump.sh, else a new temporary folder); emptied first
set -euo pipefail
cd "$(dirname "$0")/.."

SCHEDLAB=${SCHEDLAB:-target/release/schedlab}
PARTITION=${SLURM_SWEEP_PARTITION:-batch}
[[ -x $SCHEDLAB ]] || { echo "slurm-sweep-check: no schedlab binary at $SCHEDLAB (set SCHEDLAB, or build it)" >&2; exit 2; }
SCHEDLAB=$(realpath "$SCHEDLAB")
export SCHEDLAB

if [[ -n ${SLURM_SWEEP_CHECK_DIR:-} ]]; then
    DIR=$SLURM_SWEEP_CHECK_DIR
elif [[ -n ${SLURM_DUMP_OUT:-} ]]; then
    DIR=$SLURM_DUMP_OUT/sweep-check
else
    DIR=$(mktemp -d /tmp/schedlab-slurm-sweep-check.XXXXXX)
fi
rm -rf "$DIR"
mkdir -p "$DIR"
DIR=$(realpath "$DIR")

SWEEP=(--jobs 300 --cluster 4x8:V100 --failures 'weibull:node_mtbf_h=50,repair_median_h=2'
    --checkpoint-s 1800 --policy fifo --policy easy-backfill --grid 'placement=pack|spread' --seeds 0..3)
started=$SECONDS

echo "slurm-sweep-check: the sweep locally, into $DIR/local"
"$SCHEDLAB" sweep "${SWEEP[@]}" --out "$DIR/local"
runs=$(($(wc -l <"$DIR/local/sweep.csv") - 1))

echo "slurm-sweep-check: the same sweep as a Slurm array of 4 shards on partition $PARTITION, into $DIR/slurm"
# --exclusive: a node per task (n1..n4 on the live profile), so that the shards really spread.
if ! bash scripts/slurm-sweep.sh -n 4 -p "$PARTITION" -t 10 -c 2 -s --exclusive -W 600 -k -o "$DIR/slurm" -- "${SWEEP[@]}"; then
    echo "slurm-sweep-check: FAILED: scripts/slurm-sweep.sh failed (above); its shards and logs are in $DIR/slurm.slurm" >&2
    exit 1
fi

# The runs Slurm spread: every shard on some node, every run in exactly one shard.
for ((i = 0; i < 4; i++)); do
    read -r _ task node <"$DIR/slurm.slurm/shard-$i.status"
    echo "slurm-sweep-check: shard $i: task $task on node $node, $(find "$DIR/slurm.slurm/shard-$i/runs" -mindepth 1 -maxdepth 1 -type d | wc -l) runs"
done

if ! diff -r --exclude=wall.csv "$DIR/local" "$DIR/slurm" >"$DIR/diff.txt"; then
    head -n 40 "$DIR/diff.txt" >&2
    echo "slurm-sweep-check: FAILED: the merged Slurm sweep $DIR/slurm differs from the local sweep $DIR/local" \
        "(wall.csv aside; whole diff in $DIR/diff.txt)" >&2
    exit 1
fi
if ! cmp -s <(cut -d, -f1 "$DIR/local/wall.csv") <(cut -d, -f1 "$DIR/slurm/wall.csv"); then
    echo "slurm-sweep-check: FAILED: wall.csv of $DIR/slurm does not list the runs of $DIR/local/wall.csv" >&2
    exit 1
fi
files=$(find "$DIR/local" -type f | wc -l)
echo "slurm-sweep-check: OK: $runs runs in 4 Slurm shards merged into the local sweep's bytes ($files files identical, wall.csv aside; its runs the same) in $((SECONDS - started)) s"
