#!/usr/bin/env bash
# tabletfs's Bigtable API against Google's emulator, the same client
# (tabletfs_apibench) on the same workloads, alternating, in one run
# (issue 18's targets; docs/BENCHMARKS.md "API").
#
#   bench/api_compare.sh --tabletfs BIN --apibench BIN --work DIR
#                        [--emulator BIN] [--rows N] [--ops N] [--reps N]
#
# Per repetition and server, each on a fresh start (tabletfs: `--serve` on
# a new data directory, the engine; the emulator: in memory): setup, load
# (MutateRows of N rows of 100 B in batches of 1,000), scan, point reads
# (OPS, one thread), a 2-thread mix (OPS per thread), and PingAndWarm (OPS):
# the floor a point read is held to. Prints per workload the median
# operations per second of each server and tabletfs/emulator, then the peak
# RSS of each server (VmHWM) and the data directory's size after the load.
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
server_pid=""
trap '[[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null; true' EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

start() {  # NAME PORT
  local name=$1 port=$2
  if [[ $name == tabletfs ]]; then
    rm -rf "$work/data"
    "$tabletfs" -o "bigtable_api=127.0.0.1:$port" --serve "$work/data" \
      2>>"$work/tabletfs.log" &
  else
    "$emulator" -host 127.0.0.1 -port "$port" >>"$work/emulator.log" 2>&1 &
  fi
  server_pid=$!
  for _ in $(seq 100); do
    "$apibench" --endpoint "127.0.0.1:$port" --workload ping --ops 1 \
      >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "api_compare.sh: $name did not start" >&2
  exit 1
}

stop() {
  kill "$server_pid"
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

field() { sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" <<<"$1"; }

run_one() {  # NAME
  local name=$1 port line w ops_per_s
  port=$(free_port)
  start "$name" "$port"
  local common=(--endpoint "127.0.0.1:$port" --rows "$rows")
  "$apibench" "${common[@]}" --workload setup >/dev/null
  for w in load scan get mix ping; do
    local extra=()
    case $w in
      get | ping) extra=(--ops "$ops") ;;
      mix) extra=(--ops "$ops" --threads 2) ;;
    esac
    line=$("$apibench" "${common[@]}" --workload "$w" "${extra[@]}")
    ops_per_s=$(awk -v o="$(field "$line" ops)" -v s="$(field "$line" seconds)" \
                'BEGIN { printf "%.0f", o / s }')
    echo "$name $w $ops_per_s" >>"$results"
  done
  echo "$name rss_kib $(awk '/VmHWM/ {print $2}' "/proc/$server_pid/status")" \
    >>"$results"
  if [[ $name == tabletfs ]]; then
    echo "$name data_kib $(du -sk "$work/data" | cut -f1)" >>"$results"
  fi
  stop
}

for ((rep = 0; rep < reps; rep++)); do
  if ((rep % 2 == 0)); then order=(tabletfs emulator); else order=(emulator tabletfs); fi
  for name in "${order[@]}"; do run_one "$name"; done
done

median() {  # NAME KEY
  awk -v n="$1" -v k="$2" '$1 == n && $2 == k {print $3}' "$results" |
    sort -n | awk '{v[NR] = $1} END { if (NR) print v[int((NR + 1) / 2)] }'
}
printf '%-8s %14s %14s %8s\n' workload "tabletfs op/s" "emulator op/s" ratio
for w in load scan get mix ping; do
  t=$(median tabletfs "$w") e=$(median emulator "$w")
  printf '%-8s %14s %14s %8s\n' "$w" "$t" "$e" \
    "$(awk -v t="$t" -v e="$e" 'BEGIN { printf "%.2fx", t / e }')"
done
t_get=$(median tabletfs get) t_ping=$(median tabletfs ping)
echo "point read / PingAndWarm cost (tabletfs): $(awk -v g="$t_get" -v p="$t_ping" 'BEGIN { printf "%.2fx", p / g }')"
echo "peak RSS: tabletfs $(median tabletfs rss_kib) KiB, emulator $(median emulator rss_kib) KiB"
echo "data directory after the load: $(median tabletfs data_kib) KiB"
echo "(rows $rows, ops $ops, reps $reps; raw results in $results)"
