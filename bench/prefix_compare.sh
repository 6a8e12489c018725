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
bin_dir=$(cd "$bin_dir" && pwd)
tabletfs=$bin_dir/tabletfs apibench=$bin_dir/tabletfs_apibench
for b in "$tabletfs" "$apibench"; do
  if [[ ! -x "$b" ]]; then echo "prefix_compare.sh: $b not built" >&2; exit 1; fi
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
data=$work/data mnt=$work/mnt
rm -rf "$data"
mkdir -p "$data" "$mnt"
cleanup() {
  if mountpoint -q "$mnt"; then fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || true; fi
}
trap cleanup EXIT

"$tabletfs" "$data" "$mnt" 2>>"$work/mount.log"
for workload in setup load; do
  "$apibench" --endpoint "unix:$data/bigtable.sock" --workload "$workload" \
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
median() { awk -v n="$1" '$1 == n { print $2 }' "$results" | sort -n |
  awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
found() { awk -v n="$1" '$1 == n { print $3; exit }' "$results"; }
v=$(median view) g=$(median grep)
echo "rows $rows prefix $prefix reps $reps"
echo "ls .prefix/bench/$prefix: $v s, $(found view) rows"
echo "ls bench | grep ^$prefix: $g s, $(found grep) rows"
awk -v v="$v" -v g="$g" 'BEGIN { printf "speedup %.1fx\n", g / v }'
