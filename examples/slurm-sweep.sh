#!/usr/bin/env bash
# A schedlab sweep spread over a Slurm cluster: one job-array task per shard, then one merge
# job that starts when every shard has succeeded. From the repository root, on a login node:
#
#     bash examples/slurm-sweep.sh            # submits the array and the merge
#
# Each array task runs `schedlab sweep ... --shard $SLURM_ARRAY_TASK_ID/$SHARDS` into
# $SWEEP_OUT/shard-<i>; the merge writes $SWEEP_OUT/merged, byte for byte what the same sweep
# on one machine writes. Tasks start in the submit directory, which every node must see
# (a shared file system), as must the traces.
#
# Settings (environment; sbatch passes it on to the jobs):
#   SCHEDLAB    the binary (default: target/release/schedlab; build it first with
#               `cargo build --release`)
#   SHARDS      number of shards = array tasks (default 4)
#   SWEEP_OUT   output folder (default sweep-out)
#   SWEEP_ARGS  the sweep's flags, split on spaces (default: 6 policies x 5 seeds on Philly)
#
# Without Slurm, the same steps run by hand:
#     SLURM_ARRAY_TASK_ID=0 bash examples/slurm-sweep.sh shard   # ... up to SHARDS-1
#     bash examples/slurm-sweep.sh merge
#
#SBATCH --job-name=schedlab-sweep
#SBATCH --cpus-per-task=4
#SBATCH --time=00:30:00
#SBATCH --output=schedlab-sweep-%A_%a.log
set -euo pipefail

SCHEDLAB=${SCHEDLAB:-target/release/schedlab}
SHARDS=${SHARDS:-4}
SWEEP_OUT=${SWEEP_OUT:-sweep-out}
SWEEP_ARGS=${SWEEP_ARGS:-"--trace ../shared/traces/philly-pollux/philly.csv --format philly --cluster 60x8:V100 \
--policy fifo --policy fifo[skip=true] --policy sjf --policy srtf --policy easy-backfill \
--policy fifo[placement=spread] --seeds 0..5"}
read -r -a sweep_args <<< "$SWEEP_ARGS"

case "${1:-submit}" in
    submit)
        mkdir -p "$SWEEP_OUT"
        array=$(sbatch --parsable --array="0-$((SHARDS - 1))" "$0" shard)
        sbatch --dependency="afterok:${array%%;*}" --cpus-per-task=1 --job-name=schedlab-merge \
            --output=schedlab-merge-%j.log "$0" merge
        echo "submitted shards (job $array) and their merge into $SWEEP_OUT/merged"
        ;;
    shard)
        index=${SLURM_ARRAY_TASK_ID:?run by sbatch --array, or set SLURM_ARRAY_TASK_ID}
        # Threads: the CPUs Slurm gave this task (the outputs do not depend on it).
        threads=()
        if [[ -n "${SLURM_CPUS_PER_TASK:-}" ]]; then threads=(--threads "$SLURM_CPUS_PER_TASK"); fi
        # A retried task starts over: its folder must be new or empty.
        rm -rf "$SWEEP_OUT/shard-$index"
        "$SCHEDLAB" sweep "${sweep_args[@]}" "${threads[@]}" --shard "$index/$SHARDS" --out "$SWEEP_OUT/shard-$index"
        ;;
    merge)
        shards=()
        for ((i = 0; i < SHARDS; i++)); do shards+=("$SWEEP_OUT/shard-$i"); done
        rm -rf "$SWEEP_OUT/merged"
        "$SCHEDLAB" merge "${shards[@]}" --out "$SWEEP_OUT/merged"
        ;;
    *)
        echo "usage: $0 [submit|shard|merge]" >&2
        exit 2
        ;;
esac
