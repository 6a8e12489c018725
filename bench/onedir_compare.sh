#!/usr/bin/env bash
# Two builds of the daemon creating N cells in one family directory
# (`tabletfs_fsbench create`: one open, write and close each), then
# removing them with `rm -r`, each run on a fresh mount of a fresh data
# directory, alternating builds, in one run:
#
#   bench/onedir_compare.sh --base BIN_DIR --new BIN_DIR --work DIR
#                           [--runs N] [--cells "1000 2000 4000"]
#
# BIN_DIR holds `tabletfs` (e.g. build/api/bin of two checkouts); the new
# one's `tabletfs_fsbench` creates the cells for both. Root (or a
# user allowed to mount FUSE). Prints every run's seconds, then each
# build's medians by N: a time that grows as N^2 shows a directory's cost
# per name growing with its size.
set -euo pipefail

base="" new="" work="" runs=3 cells="1000 2000 4000"
while (($#)); do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --cells) cells=$2; shift 2 ;;
    *) echo "onedir_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_two_builds "$base" "$new" "$work"

one() {  # NAME BIN_DIR N
  local line t1 t2
  bin_dir=$2
  bench_fresh_mount "$runs_dir"
  bench_table
  line=$("$fsbench" create "$mnt/bench" 1 "$3")
  t1=$(bench_now)
  rm -r "$mnt/bench/row000"
  t2=$(bench_now)
  bench_end_mount
  awk -v n="$1/$3" -v a="$(bench_field seconds "$line")" \
    -v b="$t1" -v c="$t2" 'BEGIN { printf "%s %.3f %.3f\n", n, a, c - b }' |
    tee -a "$results"
}

for ((r = 0; r < runs; r++)); do
  for n in $cells; do
    if ((r % 2)); then one new "$new" "$n"; one base "$base" "$n"; else
      one base "$base" "$n"; one new "$new" "$n"; fi
  done
done

printf '%-6s %7s %10s %10s\n' build cells create_s rm_s
for name in base new; do
  for n in $cells; do
    printf '%-6s %7s %10s %10s\n' "$name" "$n" \
      "$(bench_median "$results" "$name/$n")" \
      "$(bench_median "$results" "$name/$n" 3)"
  done
done
