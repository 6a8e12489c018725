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
# MB/s, then each build's median, lowest and highest.
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
mkdir -p "$work"
results=$work/results.txt
: >"$results"

one() {  # NAME BIN_DIR
  local d=$work/run data mnt line i
  rm -rf "$d"
  mkdir -p "$d/data" "$d/mnt"
  data=$d/data mnt=$d/mnt
  "$2/tabletfs" "$data" "$mnt" 2>>"$work/daemon.log"
  for ((i = 0; i < 50; i++)); do
    mountpoint -q "$mnt" && break
    sleep 0.1
  done
  mkdir "$mnt/bench"
  mkdir -p "$mnt/.schema/bench"  # made with the table
  touch "$mnt/.schema/bench/f"
  mkdir -p "$mnt/bench/big/f"
  line=$("$2/tabletfs_fsbench" write "$mnt/bench/big/f/cell" "$mib")
  fusermount3 -u "$mnt"
  # The daemon holds the data directory's lock until it has closed the store.
  sleep 0.5
  rm -rf "$d"
  echo "$1 $(sed -n 's/.*"mb_per_s":\([0-9.]*\).*/\1/p' <<<"$line")" |
    tee -a "$results"
}

for ((i = 0; i < runs; i++)); do
  if ((i % 2)); then one new "$new"; one base "$base"; else
    one base "$base"; one new "$new"; fi
done

for name in base new; do
  awk -v n="$name" '$1 == n {print $2}' "$results" | sort -g |
    awk -v n="$name" '{v[NR] = $1} END {
      printf "%-5s median %8.1f MB/s  (lowest %.1f, highest %.1f, %d runs)\n",
             n, v[int((NR + 1) / 2)], v[1], v[NR], NR}'
done
