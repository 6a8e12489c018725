#!/usr/bin/env bash
# Two builds (or two option sets) of the daemon on the request-bound shell
# workloads of a tree, each run on a fresh mount of a fresh data
# directory, alternating, in one run:
#
#   bench/loop_compare.sh --base BIN_DIR --new BIN_DIR --work DIR
#                         [--runs N] [--rows R]
#                         [--base-opts OPTS] [--new-opts OPTS]
#
# BIN_DIR holds `tabletfs` (e.g. build/api/bin of two checkouts); the new
# one's `tabletfs_fsbench` drives both. OPTS go to the daemon as `-o OPTS`
# (e.g. --new-opts spin_us=0 against the same BIN_DIR). Per run: create R
# rows of 100 cells (one open, write and close each), `cat` every file
# twice (the second pass, timed, is served from the kernel's cache: two
# requests a file), stat() of one cell for 1 s, `rm -r`, and the daemon's
# CPU seconds (user + system) over it all. Root (or a user allowed to
# mount FUSE). Prints every run, then each build's medians.
set -euo pipefail

base="" new="" work="" runs=3 rows=100 base_opts="" new_opts=""
while (($#)); do
  case "$1" in
    --base) base=$2; shift 2 ;;
    --new) new=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --base-opts) base_opts=$2; shift 2 ;;
    --new-opts) new_opts=$2; shift 2 ;;
    *) echo "loop_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/lib.sh"
bench_two_builds "$base" "$new" "$work"

# The daemon's user + system CPU seconds (fields 14 and 15 of its stat).
cpu_seconds() {
  awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' \
    "/proc/$1/stat"
}

one() {  # NAME BIN_DIR OPTS
  local opts=() create stat t1 t2 t3 pid cpu
  if [[ -n "$3" ]]; then opts=(-o "$3"); fi
  bin_dir=$2
  bench_fresh_mount "$runs_dir" "${opts[@]}"
  pid=$(cat "$data/mount.pid")
  bench_table
  create=$("$fsbench" create "$mnt/bench" "$rows" 100 1)
  (cd "$mnt/bench" && find . -type f -exec cat {} + >/dev/null)
  t1=$(bench_now)
  (cd "$mnt/bench" && find . -type f -exec cat {} + >/dev/null)
  t2=$(bench_now)
  stat=$("$fsbench" stat "$mnt/bench/row000/f/file00" 1)
  t3=$(bench_now)
  rm -r "$mnt/bench"/row*
  cpu=$(cpu_seconds "$pid")
  awk -v n="$1" -v c="$(bench_field seconds "$create")" -v a="$t1" -v b="$t2" \
    -v s="$(bench_field calls_per_s "$stat")" -v d="$t3" -v e="$(bench_now)" \
    -v u="$cpu" \
    'BEGIN { printf "%s %.3f %.3f %.0f %.3f %s\n", n, c, b - a, s, e - d, u }' |
    tee -a "$results"
  bench_end_mount
}

echo "build create_s cat2_s stat_per_s rm_s daemon_cpu_s"
for ((r = 0; r < runs; r++)); do
  if ((r % 2)); then
    one new "$new" "$new_opts"; one base "$base" "$base_opts"
  else
    one base "$base" "$base_opts"; one new "$new" "$new_opts"
  fi
done

echo "medians of $runs runs, $rows rows x 100 cells:"
printf '%-6s %9s %8s %11s %7s %13s\n' build create_s cat2_s stat_per_s \
  rm_s daemon_cpu_s
for name in base new; do
  printf '%-6s %9s %8s %11s %7s %13s\n' "$name" \
    "$(bench_median "$results" "$name" 2)" \
    "$(bench_median "$results" "$name" 3)" \
    "$(bench_median "$results" "$name" 4)" \
    "$(bench_median "$results" "$name" 5)" \
    "$(bench_median "$results" "$name" 6)"
done
