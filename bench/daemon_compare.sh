#!/usr/bin/env bash
# Two tabletfs daemons on the same workloads, alternating, in one run: the
# file workloads of issue 16's "no slower" check.
#
#   bench/daemon_compare.sh --base BIN --new BIN --fsbench BIN --work DIR
#                           [--dirs N] [--files N] [--big-mib N] [--reps N]
#
# BIN: a `tabletfs` daemon (e.g. build/release/bin/tabletfs of two
# checkouts). Per repetition and daemon, on a fresh data directory: create
# DIRS x FILES files of 1-200 bytes (tabletfs_fsbench create), cat of every
# file, cat again (what the kernel kept), then a sequential write and read
# of one BIG-MIB MiB cell, alternating which daemon goes first. Prints
# one line per workload: the median seconds
# (MB/s for write and read) of each daemon and new/base.
set -euo pipefail

base="" new="" fsbench="" work=""
dirs=1000 files=100 big_mib=64 reps=3
while (($#)); do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --fsbench) fsbench=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --dirs) dirs=$2; shift 2 ;;
    --files) files=$2; shift 2 ;;
    --big-mib) big_mib=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "daemon_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$base" || -z "$new" || -z "$fsbench" || -z "$work" ]]; then
  echo "usage: daemon_compare.sh --base BIN --new BIN --fsbench BIN --work DIR" >&2
  exit 2
fi
mkdir -p "$work"
results=$work/results.txt
: > "$results"

now() { date +%s.%N; }
field() { sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" <<<"$1"; }

run_one() {  # NAME BIN
  local name=$1 bin=$2 data=$work/data mnt=$work/mnt t0 t1 line
  rm -rf "$data" && mkdir -p "$data" "$mnt"
  "$bin" "$data" "$mnt" 2>>"$work/daemon.log"
  mkdir "$mnt/bench" && touch "$mnt/.schema/bench/f"
  line=$("$fsbench" create "$mnt/bench" "$dirs" "$files" 1)
  echo "$name create $(field "$line" seconds)" >>"$results"
  t0=$(now); find "$mnt/bench" -type f -exec cat {} + >/dev/null; t1=$(now)
  echo "$name cat $(echo "$t1 - $t0" | bc)" >>"$results"
  t0=$(now); find "$mnt/bench" -type f -exec cat {} + >/dev/null; t1=$(now)
  echo "$name cat2 $(echo "$t1 - $t0" | bc)" >>"$results"
  mkdir -p "$mnt/bench/big/f"
  line=$("$fsbench" write "$mnt/bench/big/f/cell" "$big_mib")
  echo "$name write_mb_s $(field "$line" mb_per_s)" >>"$results"
  line=$("$fsbench" read "$mnt/bench/big/f/cell")
  echo "$name read_mb_s $(field "$line" mb_per_s)" >>"$results"
  fusermount3 -u "$mnt"
  while pgrep -f "$bin $data" >/dev/null; do sleep 0.1; done
}

for ((i = 0; i < reps; i++)); do
  # Alternate which daemon goes first, so that neither always meets the
  # machine's state (page cache, other load) the other left.
  if ((i % 2)); then
    run_one new "$new"
    run_one base "$base"
  else
    run_one base "$base"
    run_one new "$new"
  fi
done

median() {  # NAME OP
  awk -v n="$1" -v o="$2" '$1 == n && $2 == o {print $3}' "$results" |
    sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
printf '%-11s %12s %12s %9s\n' workload base new new/base
for op in create cat cat2 write_mb_s read_mb_s; do
  b=$(median base "$op") n=$(median new "$op")
  printf '%-11s %12s %12s %9.3f\n' "$op" "$b" "$n" "$(echo "$n / $b" | bc -l)"
done
