#!/usr/bin/env bash
# The whole live path on a real NVIDIA machine: real NVML, one coordinator, one agent, two tiny
# GPU jobs, the first preempted by the second and resumed from its checkpoint. Prints the GPUs
# found, the decisions, the journal, and the journal replayed in the simulator.
#
#   scripts/gpu-smoke.sh            (builds schedlab in release mode first)
#   SCHEDLAB=path/to/schedlab scripts/gpu-smoke.sh
#
# Needs: an NVIDIA driver (libnvidia-ml.so.1), nvidia-smi. With python3 and torch the jobs run
# matrix multiplications on their GPUs; without them they query their GPUs with nvidia-smi and
# sleep, which still exercises NVML, CUDA_VISIBLE_DEVICES, preemption and resumption.
# Exits non-zero if anything did not happen as it should.
#
# NOT YET RUN ON REAL HARDWARE: written without access to an NVIDIA machine; the same steps
# pass in the tests with a fake NVML library (tests/live.rs, live/tests/nvml_fake.rs).
set -euo pipefail

cd "$(dirname "$0")/.."
if [[ -z "${SCHEDLAB:-}" ]]; then
    cargo build --release --quiet
    SCHEDLAB=$PWD/target/release/schedlab
fi
WORK=$(mktemp -d -t schedlab-gpu-smoke.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    echo "work directory kept: $WORK"
}
trap cleanup EXIT

fail() { echo "FAIL: $*" >&2; exit 1; }
# Polls "$@" every half second for up to $TIMEOUT seconds.
wait_until() {
    local deadline=$((SECONDS + ${TIMEOUT:-120}))
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

echo "== GPUs found by NVML"
"$SCHEDLAB" live gpus --backend nvml | tee "$WORK/gpus.txt"
GPUS=$(grep -c '^[0-9]' "$WORK/gpus.txt" || true)
((GPUS > 0)) || fail "NVML found no GPU"
echo "== nvidia-smi says"
nvidia-smi -L

echo "== coordinator (1 node x $GPUS GPUs, srtf on estimates, heartbeat 1 s) and agent"
"$SCHEDLAB" live serve --state "$WORK/state" --listen 127.0.0.1:0 --cluster "1x$GPUS:GPU" \
    --policy 'srtf[duration=estimate]' --heartbeat-s 1 --missed-beats 5 >"$WORK/coordinator.log" 2>&1 &
PIDS+=($!)
TIMEOUT=30 wait_until test -s "$WORK/state/addr" || fail "the coordinator did not start"
ADDR=$(cat "$WORK/state/addr")
CLIENT=(--coordinator "$ADDR" --token-file "$WORK/state/token")
"$SCHEDLAB" live agent "${CLIENT[@]}" --name gpu-node --backend nvml --grace-s 5 \
    --work-dir "$WORK/agent" >"$WORK/agent.log" 2>&1 &
PIDS+=($!)
cluster_has() { "$SCHEDLAB" live status "${CLIENT[@]}" --cluster | grep -q "$1"; }
TIMEOUT=30 wait_until cluster_has "alive agent gpu-node" || fail "the agent did not register"
"$SCHEDLAB" live status "${CLIENT[@]}" --cluster

# One job script for both: counts steps on its GPUs, checkpointing the count, resuming from it.
cat >"$WORK/job.sh" <<'EOF'
#!/usr/bin/env bash
set -u
STEPS=$1
CKPT=$SCHEDLAB_CHECKPOINT_DIR/step
step=$(cat "$CKPT" 2>/dev/null || echo 0)
echo "$SCHEDLAB_JOB/$SCHEDLAB_TASK attempt $SCHEDLAB_ATTEMPT on $CUDA_VISIBLE_DEVICES from step $step"
if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
    exec python3 - "$STEPS" "$CKPT" <<'PY'
import signal, sys, torch
steps, ckpt = int(sys.argv[1]), sys.argv[2]
step = int(open(ckpt).read()) if __import__("os").path.exists(ckpt) else 0
signal.signal(signal.SIGTERM, lambda *_: (open(ckpt, "w").write(str(step)), sys.exit(143)))
x = torch.randn(2048, 2048, device="cuda")
while step < steps:
    for _ in range(50):
        x = (x @ x).tanh()
    torch.cuda.synchronize()
    step += 1
    open(ckpt, "w").write(str(step))
print("done at step", step, "on", torch.cuda.get_device_name(0))
PY
fi
trap 'echo "$step" >"$CKPT"; exit 143' TERM
while ((step < STEPS)); do
    nvidia-smi --query-gpu=uuid,utilization.gpu,memory.used --format=csv,noheader -i "$CUDA_VISIBLE_DEVICES" >/dev/null
    sleep 0.5 &
    wait $!
    step=$((step + 1))
    echo "$step" >"$CKPT"
done
echo "done at step $step"
EOF
chmod +x "$WORK/job.sh"

echo "== submit: 'big' on all $GPUS GPUs (estimate 600 s), then 'small' on 1 GPU (estimate 10 s)"
cat >"$WORK/big.json" <<EOF
{"name": "big", "tasks": [{"name": "0", "command": "$WORK/job.sh 40", "gpus": $GPUS, "estimate_s": 600}]}
EOF
"$SCHEDLAB" live submit "${CLIENT[@]}" --file "$WORK/big.json"
job_has() { "$SCHEDLAB" live status "${CLIENT[@]}" "$1" | grep -q "$2"; }
wait_until job_has big "running attempt 1" || fail "'big' did not start"
sleep 5 # let it make some progress and checkpoint
"$SCHEDLAB" live submit "${CLIENT[@]}" --name small --gpus 1 --estimate-s 10 -- "$WORK/job.sh 5"
wait_until job_has small "succeeded" || fail "'small' did not finish"
wait_until job_has big "succeeded" || fail "'big' did not finish"
job_has big "attempt 2" || fail "'big' was not preempted and resumed"

echo "== jobs"
"$SCHEDLAB" live status "${CLIENT[@]}"
"$SCHEDLAB" live status "${CLIENT[@]}" big
echo "== task output"
cat "$WORK"/agent/logs/*.log
echo "== decisions"
"$SCHEDLAB" live status "${CLIENT[@]}" --decisions | tee "$WORK/decisions.txt"
grep -q "preempt" "$WORK/decisions.txt" || fail "no preemption in the decisions"

echo "== journal (canonical trace)"
"$SCHEDLAB" live export --state "$WORK/state" --out "$WORK/trace"
for f in live.json cluster.csv jobs.csv; do echo "-- $f"; cat "$WORK/trace/$f"; done
echo "-- events.csv ($(($(wc -l <"$WORK/trace/events.csv") - 1)) events; first 10)"
head -11 "$WORK/trace/events.csv"

echo "== the journal replayed in the simulator"
"$SCHEDLAB" simulate --trace "$WORK/trace" --policy 'srtf[duration=estimate]' --heartbeat-s 1 \
    --missed-beats 5 --decisions --out "$WORK/replay" | tail -4
LIVE_DIGEST=$(awk '/^digest/ {print $2}' "$WORK/decisions.txt")
SIM_DIGEST=$(sed -n 's/.*"digest": "\([0-9a-f]*\)".*/\1/p' "$WORK/replay/summary.json")
echo "live digest $LIVE_DIGEST, replay digest $SIM_DIGEST"
[[ "$LIVE_DIGEST" == "$SIM_DIGEST" ]] || fail "the replay made other decisions"
echo "OK"
