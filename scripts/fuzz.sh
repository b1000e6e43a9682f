#!/usr/bin/env bash
# A long fuzzing campaign (issue 32): the property-based fuzz tests of the live API's bodies
# and request sequences (live/tests/fuzz_api.rs), of the agent's assignment handling
# (live/tests/fuzz_agent.rs) and of the trace importers no_panics.rs leaves out
# (traces/tests/fuzz_importers.rs), with many more cases than the short run `cargo test` makes,
# round after round with a new seed each, until the rounds or the minutes are done. Prints
# each campaign's inputs, time and failures, and the totals; exits non-zero on any failure
# (the failing seed and smallest input are in the output above the summary).
#
# Usage: scripts/fuzz.sh [CASES]
#   CASES                    cases per body campaign and round (SCHEDLAB_FUZZ_CASES; default
#                            20000; the HTTP and agent sessions run CASES/32)
#   SCHEDLAB_FUZZ_ROUNDS     rounds (default 1)
#   SCHEDLAB_FUZZ_MINUTES    keep starting rounds until this many minutes have passed
#                            (overrides the rounds)
#   PROPTEST_RNG_SEED        the first round's seed (default: the clock); round k uses seed+k
#   SCHEDLAB_FUZZ_ALL=1      also the open defects of live/tests/fuzz_findings.rs
#   SCHEDLAB_FUZZ_RELEASE=1  build with --release (faster cases, a longer first build)
#
# CI runs the short campaign as part of `cargo test` with PROPTEST_RNG_SEED set.
set -euo pipefail
cd "$(dirname "$0")/.."

cases=${1:-${SCHEDLAB_FUZZ_CASES:-20000}}
rounds=${SCHEDLAB_FUZZ_ROUNDS:-1}
minutes=${SCHEDLAB_FUZZ_MINUTES:-0}
seed=${PROPTEST_RNG_SEED:-$(date +%s)}
profile=()
if [[ "${SCHEDLAB_FUZZ_RELEASE:-0}" == 1 ]]; then profile=(--release); fi

targets=(
    "-p schedlab-live --test fuzz_api"
    "-p schedlab-live --test fuzz_agent"
    "-p schedlab-traces --test fuzz_importers"
)

log=$(mktemp -t schedlab-fuzz.XXXXXX)
echo "fuzz: building the fuzz tests" >&2
for target in "${targets[@]}"; do
    # shellcheck disable=SC2086 # the target is words on purpose
    cargo test "${profile[@]}" $target --no-run >&2
done

start=$(date +%s)
round=0
failed=0
while :; do
    if (( minutes > 0 )); then
        (( $(date +%s) - start < minutes * 60 )) || break
    else
        (( round < rounds )) || break
    fi
    round_seed=$((seed + round))
    echo "fuzz: round $((round + 1)), seed $round_seed, $cases cases" >&2
    for target in "${targets[@]}"; do
        # shellcheck disable=SC2086
        if ! SCHEDLAB_FUZZ_CASES=$cases PROPTEST_RNG_SEED=$round_seed \
            cargo test "${profile[@]}" $target -- --nocapture --test-threads 2 2>&1 | tee -a "$log" >&2; then
            failed=1
        fi
    done
    round=$((round + 1))
done
elapsed=$(( $(date +%s) - start ))

echo
echo "fuzz campaign: $round round(s) from seed $seed, $cases cases, ${elapsed} s in all"
grep -o 'fuzz [a-z_]*: [0-9]* inputs in [0-9.]* s ([^)]*): [0-9]* failures' "$log" | awk '
    {
        name = $2; sub(":", "", name)
        if (!(name in inputs)) order[++names] = name
        inputs[name] += $3; secs[name] += $6; fails[name] += $(NF - 1)
        total_inputs += $3; total_secs += $6; total_fails += $(NF - 1)
    }
    END {
        printf "%-28s %12s %10s %9s\n", "campaign", "inputs", "seconds", "failures"
        for (i = 1; i <= names; i++) {
            n = order[i]
            printf "%-28s %12d %10.1f %9d\n", n, inputs[n], secs[n], fails[n]
        }
        printf "%-28s %12d %10.1f %9d\n", "total", total_inputs, total_secs, total_fails
    }'
if (( failed )); then
    echo "fuzz: FAILED (the failing seeds and smallest inputs are above; the full output: $log)"
    exit 1
fi
rm -f "$log"
echo "fuzz: no failures"
