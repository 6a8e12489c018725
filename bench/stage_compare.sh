#!/usr/bin/env bash
# A staged commit of a row of CELLS cells against CELLS single-cell writes
# (issue 21): per row, `mkdir -p .stage/bench/ROW/f`, CELLS files written
# and closed, one rename onto .commit/bench/ — against `mkdir -p
# bench/ROW/f` and the same CELLS files written in place (each its own
# commit). ROWS rows each, alternating which goes first, REPS repetitions,
# on a fresh mount. The loops are Python (os.mkdir, open/write/close,
# os.rename: no process per step), so the times are the mount's. Prints
# the median milliseconds per row of each and their ratio.
#
#   bench/stage_compare.sh --bin-dir DIR --work DIR [--rows N] [--cells N]
#                          [--reps N]
#
# DIR: where `tabletfs` is (build/<name>/bin).
set -euo pipefail

bin_dir="" work=""
rows=200 cells=10 reps=3
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "stage_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin_dir" || -z "$work" ]]; then
  echo "usage: stage_compare.sh --bin-dir DIR --work DIR [--rows N] [--cells N] [--reps N]" >&2
  exit 2
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_require "$bin_dir" tabletfs
bench_fresh_mount "$work"
mkdir "$mnt/bench"
touch "$mnt/.schema/bench/f"

results=$work/results.txt
: >"$results"
# run MODE REP: appends "MODE MS_PER_ROW".
run() {
  python3 - "$mnt" "$1" "$2" "$rows" "$cells" >>"$results" <<'PY'
import os, sys, time
mnt, mode, rep, rows, cells = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
value = b"v" * 100
t0 = time.perf_counter()
for r in range(rows):
    row = f"{mode}{rep}-{r:06d}"
    base = f"{mnt}/.stage/bench/{row}" if mode == "staged" else f"{mnt}/bench/{row}"
    os.makedirs(f"{base}/f")
    for c in range(cells):
        with open(f"{base}/f/q{c}", "wb") as f:
            f.write(value)
    if mode == "staged":
        os.rename(base, f"{mnt}/.commit/bench/{row}")
t1 = time.perf_counter()
print(mode, f"{(t1 - t0) * 1000 / rows:.3f}")
PY
}
for ((rep = 0; rep < reps; rep++)); do
  if ((rep % 2 == 0)); then run staged "$rep"; run direct "$rep"
  else run direct "$rep"; run staged "$rep"; fi
done
# Every staged row arrived whole.
want=$((reps * rows))
got=$(ls "$mnt/bench" | grep -c '^staged' || true)
if ((got != want)); then echo "stage_compare.sh: $got staged rows committed, want $want" >&2; exit 1; fi
s=$(bench_median "$results" staged) d=$(bench_median "$results" direct)
echo "rows $rows cells $cells reps $reps"
echo "staged commit of a row of $cells cells: $s ms"
echo "$cells single-cell writes:              $d ms"
awk -v s="$s" -v d="$d" 'BEGIN { printf "staged / direct %.2f\n", s / d }'
