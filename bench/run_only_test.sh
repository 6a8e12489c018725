#!/usr/bin/env bash
# Checks that bench/run.sh --only PART runs that part's programs and no
# other's: stub programs in a temporary --bin-dir record each call (their
# output is not a result, so run.sh reports failed runs; only the calls
# matter here). ctest bench_only; takes a second.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/bin"
for program in tabletfs_dbbench tabletfs_tabletbench; do
  printf '#!/bin/sh\necho %s >>"%s/calls"\n' "$program" "$work" \
    >"$work/bin/$program"
  chmod +x "$work/bin/$program"
done

failed=0
# expect PART PROGRAM-THAT-MUST-RUN PROGRAM-THAT-MUST-NOT
expect() {
  local part=$1 runs=$2 never=$3
  : >"$work/calls"
  "$root/bench/run.sh" --quick --engines tabletfs --bin-dir "$work/bin" \
    --only "$part" "$work/out-$part" >/dev/null 2>&1 || true
  if ! grep -qx "$runs" "$work/calls"; then
    echo "FAIL: --only $part did not run $runs" >&2
    failed=1
  fi
  if grep -qx "$never" "$work/calls"; then
    echo "FAIL: --only $part ran $never" >&2
    failed=1
  fi
}
expect store tabletfs_dbbench tabletfs_tabletbench
expect tablets tabletfs_tabletbench tabletfs_dbbench

if "$root/bench/run.sh" --only bogus --bin-dir "$work/bin" "$work/out" \
     2>/dev/null; then
  echo "FAIL: --only bogus was accepted" >&2
  failed=1
fi
exit "$failed"
