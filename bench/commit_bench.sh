#!/usr/bin/env bash
# The cost of the commit interval (issue 15): write throughput with the
# interval at its default (5 s) against off (0), in the same run,
# alternating the two within each repetition; medians and ratios.
#
#   bench/commit_bench.sh --bin-dir DIR --work DIR [--reps N] [--quick]
#
#   fillrandom  tabletfs_dbbench --engine=tabletfs --workload=fillrandom,
#               set A of bench/run.sh (1,000,000 x 16-byte key, 100-byte
#               value, half compressible), --commit_interval_ms=5000 vs 0;
#               both the rate until the last write returned and until the
#               store was idle (the headline of docs/BENCHMARKS.md)
#   create      the 100,000-file create of bench/fs_bench.sh (1,000 rows x
#               100 files of 1-200 bytes, one process doing open, write,
#               close per file) through a fresh tabletfs mount with
#               -o commit=5 vs -o commit=0
#
# DIR holds tabletfs_dbbench, tabletfs_fsbench and tabletfs (a Release
# build with -DTABLETFS_BENCH=ON). WORK is where the databases and mounts
# go (its disk is the one measured). Prints one JSON line per run, then per
# measure the medians, their ratio default/off (1.00: no cost) and the
# median of the per-repetition ratios (`paired`). --quick:
# tiny sizes, one repetition (the harness's own check, not a measurement).
set -euo pipefail

bin_dir="" work="" reps=5 quick=0
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --quick) quick=1; reps=1; shift ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) echo "commit_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin_dir" || -z "$work" ]]; then
  echo "usage: bench/commit_bench.sh --bin-dir DIR --work DIR [--reps N] [--quick]" >&2
  exit 2
fi
bin_dir=$(cd "$bin_dir" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
num=1000000 rows=1000 files=100
if ((quick)); then num=2000 rows=10 files=10; fi
results=$work/commit_bench.jsonl
: >"$results"

mnt=$work/mnt
cleanup() {
  if mountpoint -q "$mnt" 2>/dev/null; then fusermount3 -u "$mnt" || true; fi
}
trap cleanup EXIT

# fillrandom MODE MS
fillrandom() {
  local db=$work/db line
  rm -rf "$db"
  line=$("$bin_dir/tabletfs_dbbench" --engine=tabletfs --workload=fillrandom \
           --db="$db" --num="$num" --value_size=100 \
           --compressible_fraction=0.5 --commit_interval_ms="$2")
  rm -rf "$db"
  local idle last elapsed syncs sync_ms
  idle=$(sed -n 's/.*"ops_per_s":\([0-9.]*\).*/\1/p' <<<"$line")
  last=$(sed -n 's/.*"ops_per_s_last_write":\([0-9.]*\).*/\1/p' <<<"$line")
  elapsed=$(sed -n 's/.*"idle_s":\([0-9.]*\).*/\1/p' <<<"$line")
  syncs=$(sed -n 's/.*commit_syncs=\([0-9]*\).*/\1/p' <<<"$line")
  sync_ms=$(sed -n 's/.*commit_sync_ms=\([0-9]*\).*/\1/p' <<<"$line")
  printf '{"measure":"fillrandom_ops_per_s","mode":"%s","value":%s}\n' "$1" "$idle" >>"$results"
  printf '{"measure":"fillrandom_ops_per_s_last_write","mode":"%s","value":%s}\n' "$1" "$last" >>"$results"
  printf '{"measure":"fillrandom_commit","mode":"%s","seconds":%s,"commit_syncs":%s,"commit_sync_ms":%s}\n' \
    "$1" "$elapsed" "${syncs:-0}" "${sync_ms:-0}" >>"$results"
}

# create MODE SECONDS: the tree of fs_bench.sh through a fresh mount.
create() {
  local data=$work/data line i seconds
  rm -rf "$data"
  mkdir -p "$data" "$mnt"
  for ((i = 0; i < 25; i++)); do
    if "$bin_dir/tabletfs" -o "commit=$2" "$data" "$mnt" 2>>"$work/tabletfs.log"; then
      break
    fi
    sleep 0.4  # the last daemon may still hold the lock while it closes
  done
  mountpoint -q "$mnt"
  mkdir "$mnt/bench" && touch "$mnt/.schema/bench/f"
  line=$("$bin_dir/tabletfs_fsbench" create "$mnt/bench" "$rows" "$files" 1)
  local stats
  stats=$(cat "$mnt/.tabletfs/stats")
  fusermount3 -u "$mnt"
  seconds=$(sed -n 's/.*"seconds":\([0-9.e+-]*\).*/\1/p' <<<"$line")
  printf '{"measure":"create_commit","mode":"%s","seconds":%s,"commit_syncs":%s,"commit_sync_ms":%s}\n' \
    "$1" "$seconds" "$(awk '$1 == "commit_syncs" { print $2 }' <<<"$stats")" \
    "$(awk '$1 == "commit_sync_micros" { printf "%d", $2 / 1000 }' <<<"$stats")" >>"$results"
  # Files per second, so that higher is better as for fillrandom.
  printf '{"measure":"create_files_per_s","mode":"%s","value":%s}\n' "$1" \
    "$(awk -v n=$((rows * files)) -v s="$seconds" 'BEGIN { printf "%.1f", n / s }')" >>"$results"
  # The daemon removes its pid file once the store is closed.
  for ((i = 0; i < 300; i++)); do
    [[ -e $data/mount.pid ]] || break
    sleep 0.1
  done
  rm -rf "$data"
}

for ((rep = 1; rep <= reps; rep++)); do
  # Alternate which mode goes first, so drift of the machine (other load,
  # the page cache) falls on both.
  if ((rep % 2)); then order=(default off); else order=(off default); fi
  for mode in "${order[@]}"; do
    if [[ $mode == default ]]; then ms=5000 s=5; else ms=0 s=0; fi
    echo "commit_bench: rep $rep fillrandom $mode" >&2
    fillrandom "$mode" "$ms"
    echo "commit_bench: rep $rep create $mode" >&2
    create "$mode" "$s"
  done
done

cat "$results"
python3 - "$results" <<'EOF'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
commits = [r for r in runs if "commit_syncs" in r]
runs = [r for r in runs if "value" in r]
measures = sorted({r["measure"] for r in runs})
# Paired: rep i's default over rep i's off (they ran next to each other),
# so drift of a shared machine cancels better than in a ratio of medians.
print("%-34s %13s %13s %8s %8s" % ("measure (median)", "default (5s)", "off",
                                   "ratio", "paired"))
for m in measures:
    vals = {mode: [r["value"] for r in runs
                   if r["measure"] == m and r["mode"] == mode]
            for mode in ("default", "off")}
    med = {mode: statistics.median(v) for mode, v in vals.items()}
    paired = statistics.median(d / o for d, o in zip(vals["default"],
                                                     vals["off"]))
    print("%-34s %13.1f %13.1f %8.3f %8.3f" % (m, med["default"], med["off"],
                                              med["default"] / med["off"],
                                              paired))
# What the interval adds, whatever the noise: the background syncs and the
# time they took, against the run's length (writers never wait for them).
for m in sorted({r["measure"] for r in commits}):
    rs = [r for r in commits if r["measure"] == m and r["mode"] == "default"]
    if not rs:
        continue
    syncs = sum(r["commit_syncs"] for r in rs)
    ms = sum(r["commit_sync_ms"] for r in rs)
    secs = sum(r["seconds"] for r in rs)
    print("%s (default): %d commit syncs in %.1f s of runs, %.0f ms syncing "
          "(%.2f %% of the time, beside the writers); off: %d" % (
              m, syncs, secs, ms, 100.0 * ms / 1000 / secs,
              sum(r["commit_syncs"] for r in commits
                  if r["measure"] == m and r["mode"] == "off")))
EOF
