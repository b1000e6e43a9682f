#!/usr/bin/env bash
# The external-crate check: builds examples/custom-policy (a crate outside the workspace that
# builds its own schedlab binary, `custom-policy`, with one more policy, `my-policy`), runs its tests (the
# policy under the Controller's invariant checks), and runs the binary on Philly's trace with
# the new policy, checking that the summary names it. Skips the trace run, saying SKIPPED, when
# ../shared/traces/philly-pollux/philly.csv is absent.
#
#   scripts/custom-policy.sh
#
# Reuses the workspace's target dir (CARGO_TARGET_DIR if set), so the dependencies the
# workspace built are not built again. The example's Cargo.lock is a copy of the workspace's
# (not committed): the same versions as the workspace's build.
set -euo pipefail

cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR=${CARGO_TARGET_DIR:-$PWD/target}
manifest=examples/custom-policy/Cargo.toml
cp Cargo.lock examples/custom-policy/Cargo.lock

echo "== examples/custom-policy: lints, tests, release build"
cargo clippy --manifest-path "$manifest" --all-targets -- -D warnings
cargo test --manifest-path "$manifest"
cargo build --release --manifest-path "$manifest"

trace=../shared/traces/philly-pollux/philly.csv
if [[ ! -f "$trace" ]]; then
    echo "SKIPPED: $trace not found; the custom binary was built and tested but not run on it"
    exit 0
fi

echo "== the custom binary on $trace with --policy my-policy"
summary=$("$CARGO_TARGET_DIR/release/custom-policy" simulate --trace "$trace" --format philly --cluster 60x8:V100 \
    --policy my-policy)
echo "$summary"
if ! grep -q '^policy  *my-policy\[starve_after_s=3600,placement=pack,avoid_failed_h=0\]$' <<<"$summary"; then
    echo "error: the summary does not name my-policy with its parameters" >&2
    exit 1
fi
if ! grep -q '^jobs  *82247 (82247 finished' <<<"$summary"; then
    echo "error: not every job of $trace finished under my-policy" >&2
    exit 1
fi
