#!/usr/bin/env bash
# Opt-in long crash loop through the mount (issue 9; not part of the suite):
# runs CrashLoopTest from tests/mount/crash_loop_test.cc in batches, each
# batch a fresh data directory and a new random seed, until KILLS kills were
# survived. Prints every batch's seed and counts; stops at the first failure
# and prints its seed (rerun it with TABLETFS_SEED=n TABLETFS_CRASH_KILLS=m).
#
#   tests/stress/crash_loop.sh [BUILD_DIR]      default build-mrel, then build/release
#
# Environment:
#   KILLS        total kills, default 3000
#   BATCH_KILLS  kills per batch (one data directory), default 500
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build=${1:-}
if [[ -z "$build" ]]; then
  for b in "$root/build-mrel" "$root/build/release"; do
    if [[ -x "$b/bin/mount_tests" ]]; then build=$b; break; fi
  done
fi
tests="$build/bin/mount_tests"
[[ -x "$tests" ]] || { echo "no mount_tests in '$build'; build it first" >&2; exit 2; }

kills=${KILLS:-3000}
batch=${BATCH_KILLS:-500}
done_kills=0
batches=0
log=$(mktemp /tmp/tabletfs_crash_loop.XXXXXX)
trap 'rm -f "$log"' EXIT
start=$SECONDS
while (( done_kills < kills )); do
  n=$(( kills - done_kills < batch ? kills - done_kills : batch ))
  if ! TABLETFS_CRASH_KILLS=$n "$tests" \
      --gtest_filter='CrashLoopTest.*' >"$log" 2>&1; then
    kept=/tmp/tabletfs_crash_loop_$$.log
    cp "$log" "$kept"
    grep -v 'tabletfs: info' "$log" | tail -40
    echo "whole output (with the daemon's log lines) in $kept"
    echo "FAILED after $done_kills kills in earlier batches; $(grep -m1 '^seed' "$log")"
    exit 1
  fi
  batches=$(( batches + 1 ))
  done_kills=$(( done_kills + n ))
  echo "batch $batches: $(grep -m1 '^seed' "$log" | cut -d' ' -f2): $(grep 'kills survived' "$log")"
done
echo "crash loop: $done_kills kills survived in $batches batches, $(( SECONDS - start )) s"
