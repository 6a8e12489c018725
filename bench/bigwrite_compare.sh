#!/usr/bin/env bash
# Two builds of the daemon writing one large cell, each run on a fresh
# mount of a fresh data directory (as bench/fs_bench.sh's 64 MiB write),
# alternating builds, in one run:
#
#   bench/bigwrite_compare.sh --base BIN_DIR --new BIN_DIR --work DIR
#                             [--runs N] [--mib N]
#
# BIN_DIR holds `tabletfs` and `tabletfs_fsbench` (e.g. build/api/bin of two
# checkouts). Root (or a user allowed to mount FUSE). Prints every run's
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
if [[ -z "$base" || -z "$new" || -z "$work" ]]; then
  echo "usage: bigwrite_compare.sh --base BIN_DIR --new BIN_DIR --work DIR" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_require "$base" tabletfs tabletfs_fsbench
base=$bin_dir
bench_require "$new" tabletfs tabletfs_fsbench
new=$bin_dir
mkdir -p "$work"
results=$(cd "$work" && pwd)/results.txt
# Each run's mount, data and log (bench_fresh_mount sets `work` to it).
runs_dir=$(cd "$work" && pwd)/run
: >"$results"

one() {  # NAME BIN_DIR
  local line
  bin_dir=$2
  bench_fresh_mount "$runs_dir"
  mkdir "$mnt/bench"
  mkdir -p "$mnt/.schema/bench"  # made with the table
  touch "$mnt/.schema/bench/f"
  mkdir -p "$mnt/bench/big/f"
  line=$("$bin_dir/tabletfs_fsbench" write "$mnt/bench/big/f/cell" "$mib")
  bench_unmount
  # The daemon holds the data directory's lock until it has closed the store.
  sleep 0.5
  rm -rf "$data"
  echo "$1 $(sed -n 's/.*"mb_per_s":\([0-9.]*\).*/\1/p' <<<"$line")" |
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
