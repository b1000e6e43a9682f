#!/usr/bin/env bash
# The scaling curves of docs/scaling.md: wall time and peak resident memory of whole
# `schedlab simulate --stream` processes, against the number of jobs and against the number of
# GPUs, for fifo and the slowest research policy; then the charts drawn from them.
#
#   scripts/scaling.sh            measure (a few minutes), write docs/scaling/scaling.csv, draw
#   scripts/scaling.sh --charts   only redraw docs/img/scaling/*.svg from the committed CSV
#
#   SCALING_1E8=1      also 10^8 jobs on 10^6 GPUs (4.5-9 minutes a run at fcf57ab, 0.9-1.6 GiB of
#                      memory and about 13 GB of jobs.csv in the temporary folder)
#   SCALING_REPEAT=N   runs per point, the median's row recorded (default 3)
#   SCALING_CSV=PATH   where the table goes (default docs/scaling/scaling.csv)
#   SCHEDLAB=PATH      the binary to measure (default: target/release/schedlab, built first)
#
# Every run writes its files (--out) into a temporary folder, removed after it: writing
# jobs.csv is part of a streamed run's cost. Needs bash 5 ($EPOCHREALTIME) and GNU time (%M).
set -euo pipefail
export LC_ALL=C # a decimal point in $EPOCHREALTIME and awk's numbers

cd "$(dirname "$0")/.."
CSV=${SCALING_CSV:-docs/scaling/scaling.csv}
CHARTS=docs/img/scaling

draw() {
    cargo run --quiet -p schedlab-reports --example scaling_charts -- "$CSV" "$CHARTS"
}

if [[ "${1:-}" == "--charts" ]]; then
    draw
    exit 0
fi
if [[ $# -gt 0 ]]; then
    echo "usage: scripts/scaling.sh [--charts]" >&2
    exit 2
fi
if ! /usr/bin/time -f %M true 2>/dev/null || [[ -z "${EPOCHREALTIME:-}" ]]; then
    echo "scripts/scaling.sh needs bash 5 and GNU time at /usr/bin/time (apt-get install time)" >&2
    exit 1
fi
if [[ -z "${SCHEDLAB:-}" ]]; then
    cargo build --release --quiet --bin schedlab
    SCHEDLAB=$PWD/target/release/schedlab
fi
REPEAT=${SCALING_REPEAT:-3}
# The commit measured; `-dirty` when code (anything but docs/) differs from it.
COMMIT=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- . ':!docs' || COMMIT="$COMMIT-dirty"
# fifo, and the slowest of the research policies at 10^6 jobs streamed (tiresias, its Gittins
# mode, themis, critical-path, drf, srtf: docs/scaling.md says how it was chosen).
POLICIES=(fifo "tiresias[mode=gittins]")
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# One point: AXIS POLICY JOBS GPUS; appends the row of the run of median wall time of REPEAT.
# Wall time from bash's clock around the process (microseconds; GNU time's %e has 10 ms), peak
# resident memory from GNU time, and the 1-minute load average as the run starts (the host is
# shared: a load above 2 means the run waited for a core).
point() {
    local axis=$1 policy=$2 jobs=$3 nodes=$(($4 / 8)) runs=()
    local gpus=$((nodes * 8)) # what runs: 10^4 jobs get 12 nodes, 96 GPUs
    for _ in $(seq "$REPEAT"); do
        local load start end
        read -r load _ </proc/loadavg
        start=$EPOCHREALTIME
        /usr/bin/time -o "$TMP/time" -f "%M" "$SCHEDLAB" simulate --jobs "$jobs" \
            --cluster "${nodes}x8:V100" --load 0.9 --policy "$policy" --stream \
            --out "$TMP/run" --force >/dev/null
        end=$EPOCHREALTIME
        runs+=("$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.3f", b - a }') $(tail -n 1 "$TMP/time") $load")
        rm -rf "$TMP/run"
    done
    local seconds kib load mib
    read -r seconds kib load <<<"$(printf '%s\n' "${runs[@]}" | sort -n | sed -n "$(((REPEAT + 1) / 2))p")"
    mib=$(awk -v k="$kib" 'BEGIN { printf "%.1f", k / 1024 }')
    echo "$axis,\"$policy\",$jobs,$gpus,$seconds,$mib,$COMMIT,$load" >>"$TMP/table.csv"
    echo "$axis $policy: $jobs jobs on $gpus GPUs: $seconds s, $mib MiB (s KiB load: ${runs[*]})" >&2
}

# Gathered aside, so a failed run leaves the committed table as it was.
echo "axis,policy,jobs,gpus,seconds,peak_mib,commit,load_1min" >"$TMP/table.csv"
JOBS=(10000 100000 1000000 10000000)
[[ -n "${SCALING_1E8:-}" ]] && JOBS+=(100000000)
for policy in "${POLICIES[@]}"; do
    # The cluster grows with the jobs (jobs / 100 GPUs, as benches/scaling.rs): queues stay alike.
    for jobs in "${JOBS[@]}"; do point jobs "$policy" "$jobs" "$((jobs / 100))"; done
    # 10^6 jobs: seconds a run at every size, and at 10^6 GPUs a GPU per job.
    for gpus in 1000 10000 100000 1000000; do point gpus "$policy" 1000000 "$gpus"; done
done
mkdir -p "$(dirname "$CSV")"
cp "$TMP/table.csv" "$CSV"
echo "wrote $CSV" >&2
draw
