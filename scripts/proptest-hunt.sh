#!/usr/bin/env bash
# A hunt for cases the property tests have not drawn yet. CI draws every property test's cases
# from one fixed seed (`PROPTEST_RNG_SEED` in .ci/run), so that a commit's CI gives the same
# answer every time; this script draws fresh ones, ROUNDS times (default 4), with
# SCHEDLAB_PROPTEST_CASES (default 400) cases for the failure properties. Run it before a
# change lands. A failure prints its minimal case: turn that into a hand-computed test (see
# `a_repair_at_the_kth_missed_beat_saves_the_node_however_its_failures_overlapped`) before
# fixing the side that is wrong.
#
# Usage: scripts/proptest-hunt.sh [ROUNDS]    (a debug build, as CI's tests: overflow checks on)
set -uo pipefail
cd "$(dirname "$0")/.."
unset PROPTEST_RNG_SEED
export SCHEDLAB_PROPTEST_CASES="${SCHEDLAB_PROPTEST_CASES:-400}"
rounds="${1:-4}"
if ! [[ $rounds =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [ROUNDS] (a whole number of rounds, 1 or more)" >&2
    exit 2
fi
log_dir=$(mktemp -d)
failed=0
# Every test target with a proptest! block, once: a test file, or its crate's unit tests.
targets=$(grep -rl 'proptest!' --include='*.rs' sim policies traces tests live reports run src 2>/dev/null |
    while read -r file; do
        case "$file" in
            tests/*) echo "Cargo.toml --test $(basename "$file" .rs)" ;;
            */tests/*) echo "${file%%/tests/*}/Cargo.toml --test $(basename "$file" .rs)" ;;
            src/*) echo "Cargo.toml --lib" ;;
            *) echo "${file%%/src/*}/Cargo.toml --lib" ;;
        esac
    done | sort -u)
if [ -z "$targets" ]; then
    echo "no proptest targets found" >&2
    exit 2
fi
for round in $(seq 1 "$rounds"); do
    while read -r manifest args; do
        log="$log_dir/$(echo "$manifest $args" | tr '/ ' '__').$round.log"
        # shellcheck disable=SC2086 # args is `--test NAME` or `--lib`, split on purpose
        if ! cargo test -q --manifest-path "$manifest" $args >"$log" 2>&1; then
            echo "FAILED: $manifest $args (round $round): $log"
            grep -E 'minimal failing input|Test failed' "$log" | head -3
            failed=1
        fi
    done <<<"$targets"
    echo "round $round of $rounds done"
done
exit $failed
