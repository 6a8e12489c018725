#!/usr/bin/env bash
# Two builds of the daemon writing one large cell, each run on a fresh
# mount of a fresh data directory (as bench/fs_bench.sh's 64 MiB write),
# alternating builds, in one run:
#
#   bench/bigwrite_compare.sh --base BIN_DIR --new BIN_DIR --work DIR
#                             [--runs N] [--mib N]
#
# BIN_DIR holds `tabletfs` (e.g. build/api/bin of two checkouts); the new
# one's `tabletfs_fsbench` writes for both. Root (or a user allowed to mount FUSE). Prints every run's
# MB/s (the range is read from those lines), then each build's median.
set -euo pipefail

base="" new="" work="" runs=8 mib=64
while (($#)); do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --mib) mib=$2; shift 2 ;;
    *) echo "bigwrite_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_two_builds "$base" "$new" "$work"

one() {  # NAME BIN_DIR
  local line
  bin_dir=$2
  bench_fresh_mount "$runs_dir"
  bench_table
  mkdir -p "$mnt/bench/big/f"
  line=$("$fsbench" write "$mnt/bench/big/f/cell" "$mib")
  bench_end_mount
  echo "$1 $(bench_field mb_per_s "$line")" |
    tee -a "$results"
}

for ((i = 0; i < runs; i++)); do
  if ((i % 2)); then one new "$new"; one base "$base"; else
    one base "$base"; one new "$new"; fi
done

for name in base new; do
  printf '%-5s median %8s MB/s (%d runs)\n' "$name" \
    "$(bench_median "$results" "$name")" \
    "$(awk -v n="$name" '$1 == n' "$results" | wc -l)"
done
