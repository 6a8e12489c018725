#!/usr/bin/env bash
# The whole benchmark of issue 8 in one command; writes OUTDIR/report.md.
#
#   bench/run.sh [--quick] [--bin-dir DIR] [--reps N] [--engines a,b,c]
#                [--only store|tablets|fs] [--sets A,B,S,M] OUTDIR
#
# Without --bin-dir it installs the bench packages (scripts/install-deps.sh
# bench) and builds a Release tree with -DTABLETFS_BENCH=ON into
# $TABLETFS_BENCH_BUILD_DIR (default build/bench), then runs:
#   store  tabletfs_dbbench on tabletfs, LevelDB and RocksDB, alternating
#          engine by engine within each workload, N repetitions (default 3):
#            Set A  1,000,000 x (16-byte key, 100-byte value, half compressible)
#            Set B    200,000 x (16-byte key, 1,000-byte value)
#            Set S     10,000 synced writes (fillrandom --sync), Set A's shape
#            Set M  Set A with --matched options, one repetition
#          workloads fillseq fillrandom overwrite readrandom readmissing
#          readseq seekrandom (reads/10 seeks) mixed (2 threads)
#   tablets tabletfs_tabletbench: 1,000,000 1,000-byte rows written by 2
#          threads with tablet_split_bytes 4 MiB (then 90 % deleted and
#          compacted: merges), a reader alongside, against splits off; the
#          longest pause and the max / p99.9 latencies (N repetitions)
#   fs     bench/fs_bench.sh: the 100,000-file tree on native, libfuse
#          passthrough and tabletfs, the 10,000-file variant with
#          passthrough_ll, stat() rates against libfuse's null, 64 MiB cell
#          (N repetitions; --drop-caches when root)
# --only runs one of the three parts (store: the db_bench sets A, B, S, M
# only); the other parts' results already in OUTDIR stay and are reported.
# --sets runs only the store sets named (default A,B,S,M).
# Raw results: OUTDIR/store.jsonl, OUTDIR/tablets.jsonl, OUTDIR/fs-REP.jsonl,
# OUTDIR/machine.json;
# bench/report.py turns them into OUTDIR/report.md.
#
# --quick: tiny sizes, one repetition, under a minute: the harness's own
# test (ctest bench_quick), not a measurement. Exits non-zero when a store
# run fails or nothing was measured; rows that cannot run yet (no daemon)
# are listed as missing in the report, not failures.
#
# Environment: TABLETFS_BENCH_BUILD_DIR (build tree), TABLETFS_BENCH_DATA
# (where databases and trees go; default OUTDIR/data: its disk is the one
# measured), TABLETFS_JOBS (compile jobs, default 2).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
command_line="bench/run.sh $*"
quick=0 bin_dir="" reps="" engines="tabletfs,leveldb,rocksdb" only="" outdir=""
sets="A,B,S,M"
while (($#)); do
  case "$1" in
    --quick) quick=1; shift ;;
    --bin-dir) bin_dir=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --engines) engines=$2; shift 2 ;;
    --only) only=$2; shift 2 ;;
    --sets) sets=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "bench/run.sh: unknown option '$1'" >&2; exit 2 ;;
    *) outdir=$1; shift ;;
  esac
done
usage="usage: bench/run.sh [--quick] [--bin-dir DIR] [--reps N] [--engines a,b,c] [--only store|tablets|fs] [--sets A,B,S,M] OUTDIR"
case "$only" in
  ""|store|tablets|fs) ;;
  *) echo "bench/run.sh: --only '$only': expected store, tablets or fs" >&2
     echo "$usage" >&2
     exit 2 ;;
esac
if [[ -z "$outdir" ]]; then
  echo "$usage" >&2
  exit 2
fi
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)
data=${TABLETFS_BENCH_DATA:-$outdir/data}
IFS=, read -r -a engine_list <<<"$engines"

if ((quick)); then
  reps=${reps:-1}
  set_a=(2000 100) set_b=(500 1000) sync_num=100 per_run_timeout=60
  tablet_args=(--num=20000 --split_bytes=262144)
else
  reps=${reps:-3}
  set_a=(1000000 100) set_b=(200000 1000) sync_num=10000 per_run_timeout=1800
  tablet_args=(--num=1000000 --split_bytes=4194304)
fi

# ---- build -----------------------------------------------------------------
if [[ -z "$bin_dir" ]]; then
  "$root/scripts/install-deps.sh" bench
  build=${TABLETFS_BENCH_BUILD_DIR:-$root/build/bench}
  generator=()
  if [[ ! -f "$build/CMakeCache.txt" ]] && command -v ninja >/dev/null; then
    generator=(-G Ninja)
  fi
  CC=gcc CXX=g++ cmake -S "$root" -B "$build" "${generator[@]}" \
    -DCMAKE_BUILD_TYPE=Release -DTABLETFS_SANITIZE= -DTABLETFS_BENCH=ON \
    -DTABLETFS_TESTS=OFF
  cmake --build "$build" -j "${TABLETFS_JOBS:-2}" \
    --target tabletfs_bench_programs
  bin_dir=$build/bin
fi
bin_dir=$(cd "$bin_dir" && pwd)
dbbench=$bin_dir/tabletfs_dbbench
tabletbench=$bin_dir/tabletfs_tabletbench

# ---- machine ---------------------------------------------------------------
mkdir -p "$data"
json_escape() { python3 -c 'import json,sys; print(json.dumps(sys.stdin.read().strip()))'; }
compiler=$( (grep -m1 '^CMAKE_CXX_COMPILER:' "$bin_dir/../CMakeCache.txt" 2>/dev/null |
             cut -d= -f2 || echo g++) | head -n1)
compiler_version=$("${compiler:-g++}" --version 2>/dev/null | head -n1 || echo unknown)
disk_source=$(df --output=source "$data" | tail -n1)
disk_device=$(lsblk -no PKNAME "$disk_source" 2>/dev/null | head -n1 || true)
disk_info="$(df -hT "$data" | tail -n1 | awk '{print $1" "$2", "$3" total, "$5" free"}')"
if [[ -r /sys/block/${disk_device:-${disk_source##*/}}/queue/rotational ]]; then
  rot=$(cat "/sys/block/${disk_device:-${disk_source##*/}}/queue/rotational")
  disk_info+=", rotational=$rot"
fi
cat >"$outdir/machine.json" <<EOF
{
  "date": $(date -u +%Y-%m-%dT%H:%M:%SZ | json_escape),
  "command": $(printf '%s' "$command_line" | json_escape),
  "quick": $quick,
  "reps": $reps,
  "nproc": $(nproc),
  "memory": $(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo | json_escape),
  "kernel": $(uname -srmo | json_escape),
  "cpu": $( (grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 || echo unknown) | json_escape),
  "disk": $(printf '%s' "$disk_info" | json_escape),
  "data_dir": $(printf '%s' "$data" | json_escape),
  "compiler": $(printf '%s' "$compiler_version" | json_escape),
  "leveldb": $( (dpkg-query -W -f '${Version}' libleveldb-dev 2>/dev/null || echo unknown) | json_escape),
  "rocksdb": $( (dpkg-query -W -f '${Version}' librocksdb-dev 2>/dev/null || echo unknown) | json_escape),
  "libfuse": $( (pkg-config --modversion fuse3 2>/dev/null || echo unknown) | json_escape),
  "commit": $( (git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown) | json_escape),
  "dirty": $( (git -C "$root" status --porcelain 2>/dev/null | grep -q . && echo true) || echo false)
}
EOF

# ---- store -----------------------------------------------------------------
store_failures=0
store_out=$outdir/store.jsonl
# dbrun SET REP ENGINE WORKLOAD DB ARGS... : one tabletfs_dbbench run.
dbrun() {
  local set=$1 rep=$2 engine=$3 workload=$4 db=$5 line rc=0
  shift 5
  echo "store: set $set rep $rep $workload $engine" >&2
  line=$(timeout "$per_run_timeout" "$dbbench" --engine="$engine" \
           --workload="$workload" --db="$db" --label="$set" "$@" \
           2>>"$outdir/store.err") || rc=$?
  if ((rc == 0)) && [[ "$line" == dbbench\ \{* ]]; then
    printf '{"set":"%s","rep":%d,"result":%s}\n' "$set" "$rep" \
      "${line#dbbench }" >>"$store_out"
  else
    store_failures=$((store_failures + 1))
    echo "store: FAILED ($rc): set $set rep $rep $workload $engine" >&2
    printf '{"set":"%s","rep":%d,"failed":{"engine":"%s","workload":"%s","rc":%d}}\n' \
      "$set" "$rep" "$engine" "$workload" "$rc" >>"$store_out"
  fi
}

# store_set SET NUM VALUE_SIZE REPS [EXTRA ARGS...]
store_set() {
  local set=$1 num=$2 value_size=$3 set_reps=$4 rep e i w
  shift 4
  local common=(--num="$num" --value_size="$value_size"
                --compressible_fraction=0.5 "$@")
  local seeks=$(((num + 9) / 10))
  for ((rep = 1; rep <= set_reps; rep++)); do
    # Rotate the engine order each repetition, so none always runs first.
    local order=()
    for ((i = 0; i < ${#engine_list[@]}; i++)); do
      order+=("${engine_list[$(((i + rep - 1) % ${#engine_list[@]}))]}")
    done
    for e in "${order[@]}"; do
      rm -rf "$data/$set-$e-seq" "$data/$set-$e"
    done
    for w in fillseq fillrandom overwrite readrandom readmissing readseq \
             seekrandom mixed; do
      for e in "${order[@]}"; do
        case "$w" in
          fillseq) dbrun "$set" "$rep" "$e" "$w" "$data/$set-$e-seq" "${common[@]}"
                   rm -rf "$data/$set-$e-seq" ;;
          seekrandom) dbrun "$set" "$rep" "$e" "$w" "$data/$set-$e" \
                        "${common[@]}" --reads="$seeks" ;;
          mixed) dbrun "$set" "$rep" "$e" "$w" "$data/$set-$e" \
                   "${common[@]}" --threads=2 ;;
          *) dbrun "$set" "$rep" "$e" "$w" "$data/$set-$e" "${common[@]}" ;;
        esac
      done
    done
    for e in "${order[@]}"; do rm -rf "$data/$set-$e"; done
  done
}

store_sync() {  # the 10,000-synced-writes variant
  local rep e i
  for ((rep = 1; rep <= reps; rep++)); do
    for ((i = 0; i < ${#engine_list[@]}; i++)); do
      e=${engine_list[$(((i + rep - 1) % ${#engine_list[@]}))]}
      rm -rf "$data/S-$e"
      dbrun S "$rep" "$e" fillrandom "$data/S-$e" --num="$sync_num" \
        --value_size="${set_a[1]}" --compressible_fraction=0.5 --sync
      rm -rf "$data/S-$e"
    done
  done
}

# ---- tablets ----------------------------------------------------------------
tablet_failures=0
# tablet_run REP LABEL SPLIT_BYTES: one tabletfs_tabletbench run.
tablet_run() {
  local rep=$1 label=$2 split=$3 line rc=0
  echo "tablets: rep $rep $label" >&2
  line=$(timeout "$per_run_timeout" "$tabletbench" --db="$data/tablets" \
           "${tablet_args[@]}" --split_bytes="$split" --label="$label" \
           2>>"$outdir/tablets.err") || rc=$?
  if ((rc == 0)) && [[ "$line" == tabletbench\ \{* ]]; then
    printf '{"rep":%d,"result":%s}\n' "$rep" "${line#tabletbench }" \
      >>"$outdir/tablets.jsonl"
  else
    tablet_failures=$((tablet_failures + 1))
    echo "tablets: FAILED ($rc): rep $rep $label" >&2
    printf '{"rep":%d,"failed":{"label":"%s","rc":%d}}\n' "$rep" "$label" \
      "$rc" >>"$outdir/tablets.jsonl"
  fi
  rm -rf "$data/tablets"
}

start=$SECONDS
if [[ "$only" == "" || "$only" == tablets ]]; then
  : >"$outdir/tablets.jsonl"
  : >"$outdir/tablets.err"
  for ((rep = 1; rep <= reps; rep++)); do
    split=${tablet_args[1]#--split_bytes=}
    if ((rep % 2)); then
      tablet_run "$rep" splits "$split"
      tablet_run "$rep" nosplits 0
    else
      tablet_run "$rep" nosplits 0
      tablet_run "$rep" splits "$split"
    fi
  done
fi
if [[ "$only" == "" || "$only" == store ]]; then
  : >"$store_out"
  : >"$outdir/store.err"
  has_set() { [[ ",$sets," == *",$1,"* ]]; }
  if has_set A; then store_set A "${set_a[0]}" "${set_a[1]}" "$reps"; fi
  if has_set B; then store_set B "${set_b[0]}" "${set_b[1]}" "$reps"; fi
  if has_set S; then store_sync; fi
  if has_set M; then store_set M "${set_a[0]}" "${set_a[1]}" 1 --matched; fi
fi

# ---- filesystem --------------------------------------------------------------
fs_failed=0
if [[ "$only" == "" || "$only" == fs ]]; then
  rm -f "$outdir"/fs-*.jsonl
  fs_args=(--bin-dir "$bin_dir" --work "$data/fs")
  if ((quick)); then
    fs_args+=(--quick)
  elif ((EUID == 0)); then
    fs_args+=(--drop-caches)
  fi
  for ((rep = 1; rep <= (quick ? 1 : reps); rep++)); do
    echo "fs: rep $rep" >&2
    if ! "$root/bench/fs_bench.sh" "${fs_args[@]}" --out "$outdir/fs-$rep.jsonl"; then
      fs_failed=1
      echo "fs: bench/fs_bench.sh failed (rep $rep)" >&2
    fi
  done
  rm -rf "$data/fs"
fi
echo "bench/run.sh: measured in $((SECONDS - start)) s" >&2

report_rc=0
python3 "$root/bench/report.py" "$outdir" || report_rc=$?
echo "bench/run.sh: report in $outdir/report.md" >&2
if ((report_rc != 0)); then
  echo "bench/run.sh: the report found wrong results (see its last section)" >&2
  exit 1
fi

if ((store_failures > 0 || tablet_failures > 0 || fs_failed)); then
  echo "bench/run.sh: $store_failures store run(s) and $tablet_failures" \
    "tablet run(s) failed, fs failed=$fs_failed" >&2
  exit 1
fi
if [[ ("$only" == "" || "$only" == store) && ! -s "$store_out" ]]; then
  echo "bench/run.sh: no store results" >&2
  exit 1
fi
