#!/usr/bin/env bash
# The whole live path on a real NVIDIA machine: real NVML, one coordinator, one agent, two tiny
# GPU jobs, the first preempted by the second and resumed from its checkpoint. Prints the GPUs
# found, the decisions, the journal, and the journal replayed in the simulator by the command
# the journal's live.json stores.
#
#   scripts/gpu-smoke.sh            (builds schedlab in release mode first)
#   SCHEDLAB=path/to/schedlab scripts/gpu-smoke.sh
#   SCHEDLAB_SMOKE_BACKEND=sim:gpus=2 scripts/gpu-smoke.sh     (no GPU: the same flow on made-up
#                                   GPUs, the jobs only sleep; nvml:PATH for another libnvidia-ml)
#
# Needs: an NVIDIA driver (libnvidia-ml.so.1). With python3 and torch the jobs run matrix
# multiplications on their GPUs; without them, with nvidia-smi, they query their GPUs and
# sleep, which still exercises NVML, CUDA_VISIBLE_DEVICES, preemption and resumption.
# Exits non-zero if anything did not happen as it should.
#
# `big` works for a fixed amount of wall time ($SCHEDLAB_SMOKE_BIG_S seconds, across its
# attempts, checkpointed as it goes), not a fixed number of steps: on a fast GPU a step count
# finishes before `small` arrives, and nothing is preempted. `small` is submitted only once the
# coordinator shows `big` running and `big` has checkpointed some progress, so the preemption
# happens whatever the GPU's speed.
#
# Tried only with SCHEDLAB_SMOKE_BACKEND=sim:... and with the tests' fake NVML library
# (nvml:PATH); not yet on an NVIDIA machine.
set -euo pipefail

cd "$(dirname "$0")/.."
if [[ -z "${SCHEDLAB:-}" ]]; then
    cargo build --release --quiet
    SCHEDLAB=$PWD/target/release/schedlab
fi
# Absolute: the replay below runs from another directory.
SCHEDLAB=$(realpath "$SCHEDLAB")
BACKEND=${SCHEDLAB_SMOKE_BACKEND:-nvml}
BIG_S=${SCHEDLAB_SMOKE_BIG_S:-30}
SMALL_S=${SCHEDLAB_SMOKE_SMALL_S:-3}
WORK=$(mktemp -d -t schedlab-gpu-smoke.XXXXXX)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    echo "work directory kept: $WORK"
}
trap cleanup EXIT

fail() {
    echo "FAIL: $*" >&2
    for log in "$WORK"/coordinator.log "$WORK"/agent.log; do
        [[ -f "$log" ]] && { echo "-- last lines of $log" >&2; tail -20 "$log" >&2; }
    done
    exit 1
}
# Polls "$@" every half second for up to $TIMEOUT seconds.
wait_until() {
    local deadline=$((SECONDS + ${TIMEOUT:-120}))
    until "$@"; do
        ((SECONDS < deadline)) || return 1
        sleep 0.5
    done
}

echo "== GPUs found by the $BACKEND backend"
"$SCHEDLAB" live gpus --backend "$BACKEND" | tee "$WORK/gpus.txt"
GPUS=$(grep -c '^[0-9]' "$WORK/gpus.txt" || true)
((GPUS > 0)) || fail "the $BACKEND backend found no GPU"
# What the jobs do on their GPUs: the script decides once, so that a job never quietly falls
# back to less than this machine can do.
if [[ "$BACKEND" == sim* ]]; then
    MODE=sleep
else
    if command -v nvidia-smi >/dev/null; then
        echo "== nvidia-smi says"
        nvidia-smi -L
    fi
    if python3 -c 'import torch; assert torch.cuda.is_available()' 2>/dev/null; then
        MODE=torch
    elif [[ "$BACKEND" == nvml ]] && command -v nvidia-smi >/dev/null; then
        MODE=smi
    else
        MODE=sleep
    fi
fi
echo "== the jobs' work: $MODE ('big' $BIG_S s of work, 'small' $SMALL_S s)"

echo "== coordinator (1 node x $GPUS GPUs, srtf on estimates, heartbeat 1 s) and agent"
"$SCHEDLAB" live serve --state "$WORK/state" --listen 127.0.0.1:0 --cluster "1x$GPUS:GPU" \
    --policy 'srtf[duration=estimate]' --heartbeat-s 1 --missed-beats 5 >"$WORK/coordinator.log" 2>&1 &
PIDS+=($!)
TIMEOUT=30 wait_until test -s "$WORK/state/addr" || fail "the coordinator did not start"
ADDR=$(cat "$WORK/state/addr")
CLIENT=(--coordinator "$ADDR" --token-file "$WORK/state/token")
# The agent calls with a token of its own (the user token in state/token cannot act as an agent).
"$SCHEDLAB" live issue-token --state "$WORK/state" --agent gpu-node --out "$WORK/gpu-node.token"
"$SCHEDLAB" live agent --coordinator "$ADDR" --token-file "$WORK/gpu-node.token" --name gpu-node --backend "$BACKEND" --grace-s 5 \
    --work-dir "$WORK/agent" >"$WORK/agent.log" 2>&1 &
PIDS+=($!)
cluster_has() { "$SCHEDLAB" live status "${CLIENT[@]}" --cluster | grep -q "$1"; }
TIMEOUT=30 wait_until cluster_has "alive agent gpu-node" || fail "the agent did not register"
"$SCHEDLAB" live status "${CLIENT[@]}" --cluster

# One job script for both: works on its GPUs until it has worked WORK_MS milliseconds of wall
# time over all its attempts, checkpointing the work done (atomically: a preemption may come
# at any moment) and resuming from it.
cat >"$WORK/job.sh" <<'EOF'
#!/usr/bin/env bash
set -u
WORK_MS=$1 MODE=$2
CKPT=$SCHEDLAB_CHECKPOINT_DIR/work_ms
done_ms=$(cat "$CKPT" 2>/dev/null || echo 0)
echo "$SCHEDLAB_JOB/$SCHEDLAB_TASK attempt $SCHEDLAB_ATTEMPT on $CUDA_VISIBLE_DEVICES from $done_ms ms of work"
if [[ $MODE == torch ]]; then
    exec python3 - "$WORK_MS" "$CKPT" <<'PY'
import os, signal, sys, time, torch
work_ms, ckpt = int(sys.argv[1]), sys.argv[2]
done_ms = int(open(ckpt).read()) if os.path.exists(ckpt) else 0
assert torch.cuda.is_available(), "CUDA_VISIBLE_DEVICES gave this task no GPU"
def save():
    with open(ckpt + ".tmp", "w") as f:
        f.write(str(done_ms))
    os.replace(ckpt + ".tmp", ckpt)
def stop(*_):
    save()
    print("SIGTERM at", done_ms, "ms of work", flush=True)
    sys.exit(143)
signal.signal(signal.SIGTERM, stop)
x = torch.randn(4096, 4096, device="cuda")
torch.cuda.synchronize()
last = time.monotonic()  # CUDA's start-up is not work
while done_ms < work_ms:
    for _ in range(20):
        x = (x @ x).tanh()  # tanh keeps the values finite
    torch.cuda.synchronize()
    now = time.monotonic()
    done_ms += int((now - last) * 1000)
    last = now
    save()
print("done at", done_ms, "ms of work on", torch.cuda.get_device_name(0))
PY
fi
now_ms() { date +%s%3N; }
save() { echo "$done_ms" >"$CKPT.tmp" && mv "$CKPT.tmp" "$CKPT"; }
trap 'save; echo "SIGTERM at $done_ms ms of work"; exit 143' TERM
last=$(now_ms)
while ((done_ms < WORK_MS)); do
    if [[ $MODE == smi ]]; then
        nvidia-smi --query-gpu=uuid,utilization.gpu,memory.used --format=csv,noheader \
            -i "$CUDA_VISIBLE_DEVICES" >/dev/null || { echo "nvidia-smi cannot see $CUDA_VISIBLE_DEVICES"; exit 1; }
    fi
    sleep 0.2 &
    wait $!
    now=$(now_ms)
    done_ms=$((done_ms + now - last))
    last=$now
    save
done
echo "done at $done_ms ms of work"
EOF
chmod +x "$WORK/job.sh"

echo "== submit: 'big' on all $GPUS GPUs (estimate 600 s), then 'small' on 1 GPU (estimate 10 s)"
cat >"$WORK/big.json" <<EOF
{"name": "big", "tasks": [{"name": "0", "command": "$WORK/job.sh $((BIG_S * 1000)) $MODE", "gpus": $GPUS, "estimate_s": 600}]}
EOF
"$SCHEDLAB" live submit "${CLIENT[@]}" --file "$WORK/big.json"
job_has() { "$SCHEDLAB" live status "${CLIENT[@]}" "$1" | grep -q "$2"; }
TIMEOUT=60 wait_until job_has big "running attempt 1" || fail "'big' did not start"
# Its process has started and done some work (CUDA's start-up can take seconds): `small`
# arrives while `big` has most of its work left, however fast the GPU.
BIG_CKPT=$WORK/agent/checkpoints/big/0/work_ms
has_worked() { [[ -s "$BIG_CKPT" ]] && (($(cat "$BIG_CKPT") > 0)); }
TIMEOUT=60 wait_until has_worked || fail "'big' checkpointed no work"
job_has big "running attempt 1" || fail "'big' ended before 'small' was submitted"
echo "'big' has $(cat "$BIG_CKPT") ms of work done; submitting 'small'"
"$SCHEDLAB" live submit "${CLIENT[@]}" --name small --gpus 1 --estimate-s 10 -- \
    "$WORK/job.sh $((SMALL_S * 1000)) $MODE"
wait_until job_has small "succeeded" || fail "'small' did not finish"
TIMEOUT=$((BIG_S + 120)) wait_until job_has big "succeeded" || fail "'big' did not finish"
job_has big "attempt 2" || fail "'big' was not preempted and resumed"
grep -q "SIGTERM at" "$WORK/agent/logs/big.0.1.log" || fail "'big' attempt 1 was not stopped by SIGTERM"
RESUMED=$(sed -n 's/.* from \([0-9]*\) ms of work$/\1/p' "$WORK/agent/logs/big.0.2.log")
((${RESUMED:-0} > 0)) || fail "'big' attempt 2 did not resume from its checkpoint"

echo "== jobs"
"$SCHEDLAB" live status "${CLIENT[@]}"
"$SCHEDLAB" live status "${CLIENT[@]}" big
echo "== task output"
for log in "$WORK"/agent/logs/*.log; do echo "-- ${log##*/}"; cat "$log"; done
echo "== decisions"
"$SCHEDLAB" live status "${CLIENT[@]}" --decisions | tee "$WORK/decisions.txt"
grep -q "preempt" "$WORK/decisions.txt" || fail "no preemption in the decisions"

echo "== journal (canonical trace)"
"$SCHEDLAB" live export --state "$WORK/state" --out "$WORK/trace"
for f in live.json cluster.csv jobs.csv; do echo "-- $f"; cat "$WORK/trace/$f"; done
echo "-- events.csv ($(($(wc -l <"$WORK/trace/events.csv") - 1)) events; first 10)"
head -11 "$WORK/trace/events.csv"

echo "== the journal replayed in the simulator, by the command live.json stores"
# A JSON string field of live.json (one key a line), unescaped.
json_field() { sed -n "s/^ *\"$1\": \"\(.*\)\",\{0,1\}$/\1/p" "$WORK/trace/live.json" | sed 's/\\"/"/g; s/\\\\/\\/g'; }
REPLAY=$(json_field replay)
REPLAY_OUT=$(json_field replay_out)
[[ "$REPLAY" == "schedlab simulate "* && -n "$REPLAY_OUT" ]] || fail "live.json has no replay command"
echo "$REPLAY"
# The stored command names `schedlab`; this run's binary stands in for it, the rest as stored.
(cd / && eval "$(printf '%q' "$SCHEDLAB") ${REPLAY#schedlab }") | tail -4 || fail "the replay command failed"
LIVE_DIGEST=$(awk '/^digest/ {print $2}' "$WORK/decisions.txt")
SIM_DIGEST=$(sed -n 's/.*"digest": "\([0-9a-f]*\)".*/\1/p' "$REPLAY_OUT/summary.json")
echo "live digest $LIVE_DIGEST, replay digest $SIM_DIGEST"
[[ -n "$LIVE_DIGEST" && "$LIVE_DIGEST" == "$SIM_DIGEST" ]] || fail "the replay made other decisions"
echo "OK"
