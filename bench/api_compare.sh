#!/usr/bin/env bash
# tabletfs's Bigtable API against Google's emulator, the same client
# (tabletfs_apibench) on the same workloads, alternating, in one run
# (issue 18's targets; docs/BENCHMARKS.md "API").
#
#   bench/api_compare.sh --tabletfs BIN --apibench BIN --work DIR
#                        [--emulator BIN] [--rows N] [--ops N] [--reps N]
#
# Per repetition both servers start fresh (tabletfs: `--serve` on a new
# data directory, the engine; the emulator: in memory) and stay up side by
# side; each workload then runs on one and at once on the other (the order
# alternates between repetitions), so that a busy machine slows both alike:
# setup, load (MutateRows of N rows of 100 B in batches of 1,000), scan,
# point reads (OPS, one thread), a 2-thread mix (OPS per thread), and
# PingAndWarm (OPS): the floor a point read is held to. Prints per workload
# the median operations per second of each server and the median of the
# repetitions' tabletfs/emulator ratios, then the peak RSS of each server
# (VmHWM) and the data directory's size after the load.
set -euo pipefail

tabletfs="" apibench="" work=""
emulator=/usr/lib/google-cloud-sdk/platform/bigtable-emulator/cbtemulator
rows=1000000 ops=100000 reps=3
while (($#)); do
  case "$1" in
    --tabletfs) tabletfs=$2; shift 2 ;;
    --apibench) apibench=$2; shift 2 ;;
    --emulator) emulator=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    --ops) ops=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    *) echo "api_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$tabletfs" || -z "$apibench" || -z "$work" ]]; then
  echo "usage: api_compare.sh --tabletfs BIN --apibench BIN --work DIR" >&2
  exit 2
fi
[[ -x "$emulator" ]] || { echo "api_compare.sh: no emulator at $emulator" >&2; exit 2; }
mkdir -p "$work"
results=$work/results.txt
: >"$results"
declare -A pid port
trap 'for p in "${pid[@]}"; do kill "$p" 2>/dev/null; done; true' EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start() {  # NAME
  local name=$1
  port[$name]=$(free_port)
  if [[ $name == tabletfs ]]; then
    rm -rf "$work/data"
    "$tabletfs" -o "bigtable_api=127.0.0.1:${port[$name]}" --serve "$work/data" \
      2>>"$work/tabletfs.log" &
  else
    "$emulator" -host 127.0.0.1 -port "${port[$name]}" >>"$work/emulator.log" 2>&1 &
  fi
  pid[$name]=$!
  for _ in $(seq 100); do
    "$apibench" --endpoint "127.0.0.1:${port[$name]}" --workload ping --ops 1 \
      >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "api_compare.sh: $name did not start" >&2
  exit 1
}

stop() {  # NAME
  echo "$1 rss_kib $(awk '/VmHWM/ {print $2}' "/proc/${pid[$1]}/status")" \
    >>"$results"
  if [[ $1 == tabletfs ]]; then
    echo "$1 data_kib $(du -sk "$work/data" | cut -f1)" >>"$results"
  fi
  kill "${pid[$1]}"
  wait "${pid[$1]}" 2>/dev/null || true
  unset "pid[$1]"
}

field() { sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" <<<"$1"; }

run_workload() {  # NAME WORKLOAD
  local name=$1 w=$2 line extra=()
  case $w in
    get | ping) extra=(--ops "$ops") ;;
    mix) extra=(--ops "$ops" --threads 2) ;;
  esac
  line=$("$apibench" --endpoint "127.0.0.1:${port[$name]}" --rows "$rows" \
           --workload "$w" "${extra[@]}")
  echo "$name $w $(awk -v o="$(field "$line" ops)" -v s="$(field "$line" seconds)" \
                     'BEGIN { printf "%.0f", o / s }')" >>"$results"
}

workloads=(load scan get mix ping)
for ((rep = 0; rep < reps; rep++)); do
  if ((rep % 2 == 0)); then order=(tabletfs emulator); else order=(emulator tabletfs); fi
  for name in "${order[@]}"; do
    start "$name"
    "$apibench" --endpoint "127.0.0.1:${port[$name]}" --rows "$rows" \
      --workload setup >/dev/null
  done
  for w in "${workloads[@]}"; do
    for name in "${order[@]}"; do run_workload "$name" "$w"; done
  done
  for name in "${order[@]}"; do stop "$name"; done
done

median() {  # NAME KEY
  awk -v n="$1" -v k="$2" '$1 == n && $2 == k {print $3}' "$results" |
    sort -n | awk '{v[NR] = $1} END { if (NR) print v[int((NR + 1) / 2)] }'
}
# The ratio of each repetition (its two runs were back to back), then the
# median of those.
ratio_median() {  # WORKLOAD
  paste <(awk -v k="$1" '$1 == "tabletfs" && $2 == k {print $3}' "$results") \
        <(awk -v k="$1" '$1 == "emulator" && $2 == k {print $3}' "$results") |
    awk '{printf "%.4f\n", $1 / $2}' | sort -n |
    awk '{v[NR] = $1} END { if (NR) printf "%.2fx", v[int((NR + 1) / 2)] }'
}
printf '%-8s %14s %14s %8s  %s\n' workload "tabletfs op/s" "emulator op/s" ratio \
  "ratios of the repetitions"
for w in "${workloads[@]}"; do
  t=$(median tabletfs "$w") e=$(median emulator "$w")
  all=$(paste <(awk -v k="$w" '$1 == "tabletfs" && $2 == k {print $3}' "$results") \
              <(awk -v k="$w" '$1 == "emulator" && $2 == k {print $3}' "$results") |
        awk '{printf "%.2f ", $1 / $2}')
  printf '%-8s %14s %14s %8s  %s\n' "$w" "$t" "$e" "$(ratio_median "$w")" "$all"
done
t_get=$(median tabletfs get) t_ping=$(median tabletfs ping)
echo "point read / PingAndWarm cost (tabletfs): $(awk -v g="$t_get" -v p="$t_ping" 'BEGIN { printf "%.2fx", p / g }')"
echo "peak RSS: tabletfs $(median tabletfs rss_kib) KiB, emulator $(median emulator rss_kib) KiB"
echo "data directory after the load: $(median tabletfs data_kib) KiB"
echo "(rows $rows, ops $ops, reps $reps; raw results in $results)"
