#!/usr/bin/env bash
# Two builds of the engine on Set A (or Set B), alternating, in one run:
# the "no worse" check of a refactoring (issue 17) or of any change to the
# engine.
#
#   bench/dbbench_compare.sh --base BIN --new BIN --work DIR
#                            [--num N] [--value_size B] [--reps N]
#                            [--leveldb]
#
# BIN: a `tabletfs_dbbench` (e.g. build/release/bin/tabletfs_dbbench of two
# checkouts). Per repetition, alternating which build goes first: fillseq
# on a fresh directory, then fillrandom, overwrite, readrandom, readmissing,
# readseq and seekrandom (N/10 seeks) on one database (Set A of
# bench/run.sh: 16-byte keys, 100-byte values, half compressible; Set B is
# --num 200000 --value_size 1000). Prints
# one line per workload: the median ops/s of each build and new/base.
# --leveldb adds Debian's LevelDB (through the new build's harness) to each
# repetition, and new/leveldb.
set -euo pipefail

base="" new="" work="" num=1000000 value_size=100 reps=3 leveldb=0
while (($#)); do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --num) num=$2; shift 2 ;;
    --value_size) value_size=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --leveldb) leveldb=1; shift ;;
    *) echo "dbbench_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$base" || -z "$new" || -z "$work" ]]; then
  echo "usage: dbbench_compare.sh --base BIN --new BIN --work DIR" >&2
  exit 2
fi
mkdir -p "$work"
results=$work/results.txt
: > "$results"
workloads=(fillseq fillrandom overwrite readrandom readmissing readseq
           seekrandom)

run() {  # NAME BIN WORKLOAD DB
  local line engine=tabletfs extra=()
  if [[ "$1" == leveldb ]]; then engine=leveldb; fi
  if [[ "$3" == seekrandom ]]; then extra=(--reads=$(((num + 9) / 10))); fi
  line=$("$2" --engine="$engine" --workload="$3" --db="$4" --num="$num" \
           --value_size="$value_size" --compressible_fraction=0.5 "${extra[@]}" \
           2>>"$work/err.log")
  echo "$1 $3 $(sed -n 's/.*"ops_per_s":\([0-9.]*\).*/\1/p' <<<"$line")" \
    >>"$results"
}

for ((i = 0; i < reps; i++)); do
  order=(base new)
  if ((leveldb)); then order+=(leveldb); fi
  if ((i % 2)); then
    reversed=()
    for ((j = ${#order[@]} - 1; j >= 0; j--)); do reversed+=("${order[j]}"); done
    order=("${reversed[@]}")
  fi
  for w in "${workloads[@]}"; do
    for name in "${order[@]}"; do
      bin=$base
      if [[ "$name" != base ]]; then bin=$new; fi
      db=$work/db-$name
      if [[ "$w" == fillseq ]]; then
        rm -rf "$db-seq"
        run "$name" "$bin" "$w" "$db-seq"
        rm -rf "$db-seq" "$db"
      else
        run "$name" "$bin" "$w" "$db"
      fi
    done
  done
  rm -rf "$work"/db-*
done

median() {  # NAME WORKLOAD
  awk -v n="$1" -v w="$2" '$1 == n && $2 == w {print $3}' "$results" |
    sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'
}
if ((leveldb)); then
  printf '%-11s %12s %12s %12s %9s %11s\n' workload base new leveldb \
    new/base new/leveldb
else
  printf '%-11s %12s %12s %9s\n' workload base new new/base
fi
for w in "${workloads[@]}"; do
  b=$(median base "$w") n=$(median new "$w")
  if ((leveldb)); then
    l=$(median leveldb "$w")
    printf '%-11s %12s %12s %12s %9.3f %11.3f\n' "$w" "$b" "$n" "$l" \
      "$(echo "$n / $b" | bc -l)" "$(echo "$n / $l" | bc -l)"
  else
    printf '%-11s %12s %12s %9.3f\n' "$w" "$b" "$n" "$(echo "$n / $b" | bc -l)"
  fi
done
