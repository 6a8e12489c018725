#!/usr/bin/env bash
# A prefix view against the shell's way to the same rows (issue 21):
# `ls MNT/.prefix/bench/P | wc -l` against `ls MNT/bench | grep ^P | wc -l`
# on a table of ROWS rows, loaded through the mounted daemon's API
# (tabletfs_apibench --workload load: keys user0000000000.., one 100-byte
# cell each), alternating which goes first, REPS repetitions. The default
# prefix, user000012, selects 1% of a million rows (10,000). Prints the
# median seconds of each, their ratio, and the rows each found (equal).
#
#   bench/prefix_compare.sh --bin-dir DIR --work DIR [--rows N] [--prefix P]
#                           [--reps N]
#
# DIR: where `tabletfs` and `tabletfs_apibench` are (build/<name>/bin).
set -euo pipefail

bin_dir="" work=""
rows=1000000 prefix=user000012 reps=3
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "prefix_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin_dir" || -z "$work" ]]; then
  echo "usage: prefix_compare.sh --bin-dir DIR --work DIR [--rows N] [--prefix P] [--reps N]" >&2
  exit 2
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_require "$bin_dir" tabletfs tabletfs_apibench
bench_fresh_mount "$work"
for workload in setup load; do
  "$bin_dir/tabletfs_apibench" --endpoint "unix:$data/bigtable.sock" --workload "$workload" \
    --rows "$rows" >/dev/null
done

# run NAME CMD: prints "NAME SECONDS ROWS".
run() {
  local t0 t1 n
  t0=$EPOCHREALTIME
  n=$(cd "$mnt" && bash -c "$2")
  t1=$EPOCHREALTIME
  echo "$1 $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $n"
}
results=$work/results.txt
: >"$results"
for ((rep = 0; rep < reps; rep++)); do
  view="ls .prefix/bench/$prefix | wc -l" grep="ls bench | grep ^$prefix | wc -l"
  if ((rep % 2 == 0)); then
    run view "$view" >>"$results"
    run grep "$grep" >>"$results"
  else
    run grep "$grep" >>"$results"
    run view "$view" >>"$results"
  fi
done
found() { awk -v n="$1" '$1 == n { print $3; exit }' "$results"; }
v=$(bench_median "$results" view) g=$(bench_median "$results" grep)
echo "rows $rows prefix $prefix reps $reps"
echo "ls .prefix/bench/$prefix: $v s, $(found view) rows"
echo "ls bench | grep ^$prefix: $g s, $(found grep) rows"
awk -v v="$v" -v g="$g" 'BEGIN { printf "speedup %.1fx\n", g / v }'
