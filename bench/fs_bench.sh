#!/usr/bin/env bash
# The filesystem workloads of issue 8 (docs/BENCHMARKS.md), one JSON line per
# measurement appended to OUT:
#
#   bench/fs_bench.sh --bin-dir DIR --work DIR --out FILE [--quick]
#                     [--dirs N] [--files N] [--ll-dirs N] [--big-mib N]
#                     [--stat-seconds S] [--drop-caches]
#                     [--tabletfs-options OPTS]
#
# Targets, each holding DIRS x FILES files of 1-200 bytes as
# ROOT/rowNNN/f/fileNN (tabletfs: TABLE/ROW/FAMILY/QUALIFIER):
#   native          plain files in WORK (the data directory's filesystem)
#   passthrough     libfuse's high-level passthrough example over native
#   tabletfs        the tabletfs daemon (table "bench", family "f")
#   native_10k, passthrough_ll_10k, tabletfs_10k
#                   LL-DIRS x FILES (10,000 files): passthrough_ll keeps one
#                   fd per inode and cannot hold 100,000 files under the fd
#                   cap, so it runs here only, with -o cache=auto
# Per target: create (one program doing open/write/close per file),
# find | wc -l, grep -r, cat of every file, ls -lR, du -s, a second grep -r
# and cat pass, space on disk, rm -r. Then stat() calls per second on one
# file (tabletfs and libfuse's `null` example, each with default caching and
# with -o attr_timeout=0,entry_timeout=0; native for reference; tabletfs
# also from the file's own directory, stat_cached_here: null's file is the
# root of its mount, so its path has no name inside FUSE to walk) and
# sequential write and read MB/s of one BIG-MIB file.
#
# A target that cannot run (program not built, mount refused) gets one line
# {"target":..., "missing": "why"} instead, and the script goes on.
# --drop-caches writes 3 to /proc/sys/vm/drop_caches before each cold pass
# (root only); without it the "cold" pass is whatever the page cache holds.
# --tabletfs-options OPTS are added to every tabletfs mount (-o OPTS; e.g.
# uring, with the fuse module's enable_uring set to Y).
set -euo pipefail

bin_dir="" work="" out=""
dirs=1000 files=100 ll_dirs=100 big_mib=64 stat_seconds=2 drop_caches=0
tabletfs_options=""
op_timeout=1800  # seconds for any one timed step: a hung mount ends the step
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --quick) dirs=10 files=10 ll_dirs=5 big_mib=2 stat_seconds=0.2
             op_timeout=60; shift ;;
    --dirs) dirs=$2; shift 2 ;;
    --files) files=$2; shift 2 ;;
    --ll-dirs) ll_dirs=$2; shift 2 ;;
    --big-mib) big_mib=$2; shift 2 ;;
    --stat-seconds) stat_seconds=$2; shift 2 ;;
    --drop-caches) drop_caches=1; shift ;;
    --tabletfs-options) tabletfs_options=$2; shift 2 ;;
    *) echo "fs_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin_dir" || -z "$work" || -z "$out" ]]; then
  echo "usage: fs_bench.sh --bin-dir DIR --work DIR --out FILE [--quick] ..." >&2
  exit 2
fi
bin_dir=$(cd "$bin_dir" && pwd)
mkdir -p "$work"
work=$(cd "$work" && pwd)
fsbench=$bin_dir/tabletfs_fsbench
if [[ ! -x "$fsbench" ]]; then
  echo "fs_bench.sh: $fsbench not built" >&2
  exit 1
fi

mounted=()  # mount points to unmount on exit
bg_pids=()  # foreground FUSE example processes we started
cleanup() {
  local m p
  for m in "${mounted[@]}"; do
    if mountpoint -q "$m"; then fusermount3 -u "$m" 2>/dev/null || umount -l "$m" || true; fi
  done
  for p in "${bg_pids[@]}"; do kill "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

emit() { printf '%s\n' "$1" >>"$out"; }
missing() {  # TARGET REASON
  echo "fs_bench.sh: $1: $2" >&2
  emit "{\"target\":\"$1\",\"missing\":\"$2\"}"
}
now() { echo "$EPOCHREALTIME"; }
elapsed() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.6f", b - a }'; }
json_field() {  # LINE FIELD -> value (numbers only)
  sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" <<<"$1"
}
cold() {
  if ((drop_caches)); then
    sync
    echo 3 >/proc/sys/vm/drop_caches 2>/dev/null || true
  fi
}

# timed TARGET OP CMD... : runs CMD through bash, records its seconds.
timed() {
  local target=$1 op=$2
  shift 2
  local t0 t1 rc=0
  t0=$(now)
  timeout "$op_timeout" bash -c "$*" >/dev/null 2>"$work/stderr.txt" || rc=$?
  t1=$(now)
  # grep exits 1 when nothing matched: that is not a failure.
  if ((rc > 1)) || { ((rc == 1)) && [[ "$op" != grep* ]]; }; then
    echo "fs_bench.sh: $target $op failed ($rc): $(head -c 300 "$work/stderr.txt")" >&2
    emit "{\"target\":\"$target\",\"op\":\"$op\",\"failed\":$rc}"
    return 1
  fi
  emit "{\"target\":\"$target\",\"op\":\"$op\",\"seconds\":$(elapsed "$t0" "$t1")}"
}

# tree TARGET ROOT NDIRS SPACE_DIR : every tree workload on ROOT (created
# here, removed at the end). SPACE_DIR: where the bytes land ("" to skip).
tree() {
  local target=$1 root=$2 ndirs=$3 space_dir=$4 line count
  mkdir -p "$root"
  cold
  if ! line=$(timeout "$op_timeout" "$fsbench" create "$root" "$ndirs" "$files" 1); then
    missing "$target" "create failed"
    return 1
  fi
  emit "{\"target\":\"$target\",\"op\":\"create\",\"seconds\":$(json_field "$line" seconds),\"files\":$((ndirs * files))}"
  cold
  count=$(find "$root" | wc -l)
  emit "{\"target\":\"$target\",\"op\":\"find_count\",\"count\":$count,\"expected\":$((1 + ndirs * (2 + files)))}"
  cold
  timed "$target" find "find '$root' | wc -l" || true
  cold
  timed "$target" grep "grep -r zqxj '$root'" || true
  cold
  timed "$target" cat "find '$root' -type f -exec cat {} +" || true
  cold
  timed "$target" ls_lR "ls -lR '$root'" || true
  cold
  timed "$target" du "du -s '$root'" || true
  # Second passes: whatever the kernel kept from the first.
  timed "$target" grep2 "grep -r zqxj '$root'" || true
  timed "$target" cat2 "find '$root' -type f -exec cat {} +" || true
  if [[ -n "$space_dir" ]]; then
    sync
    emit "{\"target\":\"$target\",\"op\":\"space\",\"bytes\":$(($(du -sk "$space_dir" | cut -f1) * 1024)),\"apparent_bytes\":$(du -sb "$space_dir" | cut -f1)}"
  fi
}

# bigfile TARGET PATH : sequential write then (cold) read of BIG-MIB MiB.
bigfile() {
  local target=$1 path=$2 line
  mkdir -p "$(dirname "$path")"
  if line=$(timeout "$op_timeout" "$fsbench" write "$path" "$big_mib"); then
    emit "{\"target\":\"$target\",\"op\":\"seq_write\",\"mb_per_s\":$(json_field "$line" mb_per_s),\"bytes\":$((big_mib << 20))}"
  else
    emit "{\"target\":\"$target\",\"op\":\"seq_write\",\"failed\":1}"
    return 0
  fi
  cold
  if line=$(timeout "$op_timeout" "$fsbench" read "$path"); then
    emit "{\"target\":\"$target\",\"op\":\"seq_read\",\"mb_per_s\":$(json_field "$line" mb_per_s),\"bytes\":$(json_field "$line" bytes)}"
  else
    emit "{\"target\":\"$target\",\"op\":\"seq_read\",\"failed\":1}"
  fi
}

# statrate TARGET OP PATH
statrate() {
  local line
  if line=$(timeout "$op_timeout" "$fsbench" stat "$3" "$stat_seconds"); then
    emit "{\"target\":\"$1\",\"op\":\"$2\",\"calls_per_s\":$(json_field "$line" calls_per_s)}"
  else
    emit "{\"target\":\"$1\",\"op\":\"$2\",\"failed\":1}"
  fi
}

wait_mounted() {  # MNT [PID]: up to 10 s
  local i
  for ((i = 0; i < 100; i++)); do
    if mountpoint -q "$1"; then return 0; fi
    if [[ -n "${2:-}" ]] && ! kill -0 "$2" 2>/dev/null; then return 1; fi
    sleep 0.1
  done
  return 1
}

unmount() {  # MNT [PID]
  local i
  for ((i = 0; i < 50; i++)); do
    if ! mountpoint -q "$1"; then break; fi
    fusermount3 -u "$1" 2>/dev/null && break
    sleep 0.2
  done
  if [[ -n "${2:-}" ]]; then wait "$2" 2>/dev/null || true; fi
}

# Starts one of libfuse's examples in the foreground (we keep its pid).
# fuse_example PROGRAM MNT ARGS... ; sets example_pid.
example_pid=""
fuse_example() {
  local program=$1 mnt=$2
  shift 2
  if [[ ! -x "$bin_dir/$program" ]]; then return 1; fi
  "$bin_dir/$program" -f "$@" "$mnt" 2>>"$work/$program.log" &
  example_pid=$!
  bg_pids+=("$example_pid")
  mounted+=("$mnt")
  wait_mounted "$mnt" "$example_pid"
}

# The tabletfs daemon goes to the background by itself and exits non-zero
# when the mount failed; a daemon still closing the store after the last
# unmount holds the data directory's lock for a moment, hence the retries.
tabletfs_mount() {  # DATA MNT [OPTIONS]
  local data=$1 mnt=$2 opts=${3:-} i
  local args=("$data" "$mnt")
  if [[ -n "$opts" ]]; then args+=(-o "$opts"); fi
  if [[ -n "$tabletfs_options" ]]; then args+=(-o "$tabletfs_options"); fi
  mounted+=("$mnt")
  for ((i = 0; i < 25; i++)); do
    if "$bin_dir/tabletfs" "${args[@]}" 2>>"$work/tabletfs.log"; then
      wait_mounted "$mnt" && return 0
    fi
    sleep 0.4
  done
  return 1
}

# tabletfs_table MNT TABLE : a table with family f (through the mount).
tabletfs_table() {
  mkdir "$1/$2" || return 1
  mkdir -p "$1/.schema/$2" 2>/dev/null || true  # may exist already
  touch "$1/.schema/$2/f"
}

: >"$out"
emit "{\"config\":{\"dirs\":$dirs,\"files\":$files,\"ll_dirs\":$ll_dirs,\"big_mib\":$big_mib,\"stat_seconds\":$stat_seconds,\"drop_caches\":$drop_caches,\"tabletfs_options\":\"$tabletfs_options\"}}"

# ---- native ----------------------------------------------------------------
run_native() {  # TARGET NDIRS
  local base=$work/$1
  rm -rf "$base"
  mkdir -p "$base"
  tree "$1" "$base/tree" "$2" "$base/tree" || return 0
  if [[ "$1" == native ]]; then
    statrate native stat_cached "$base/tree/row000/f/file00"
    bigfile native "$base/big/f/cell"
    rm -rf "$base/big"
  fi
  timed "$1" rm "rm -r '$base/tree'" || true
  rm -rf "$base"
}

# ---- libfuse passthrough (high level, mirrors /) ----------------------------
run_passthrough() {
  local base=$work/passthrough
  rm -rf "$base"
  mkdir -p "$base/data" "$base/mnt"
  if ! fuse_example fuse_passthrough "$base/mnt"; then
    missing passthrough "fuse_passthrough not built or mount failed"
    return 0
  fi
  local root=$base/mnt$base/data
  if tree passthrough "$root/tree" "$dirs" ""; then
    bigfile passthrough "$root/big/f/cell"
    rm -rf "$root/big"
    timed passthrough rm "rm -r '$root/tree'" || true
  fi
  unmount "$base/mnt" "$example_pid"
  rm -rf "$base"
}

run_passthrough_ll() {
  local base=$work/passthrough_ll
  rm -rf "$base"
  mkdir -p "$base/data" "$base/mnt"
  if ! fuse_example fuse_passthrough_ll "$base/mnt" \
      -o "source=$base/data,cache=auto"; then
    missing passthrough_ll_10k "fuse_passthrough_ll not built or mount failed"
    return 0
  fi
  if tree passthrough_ll_10k "$base/mnt/tree" "$ll_dirs" ""; then
    timed passthrough_ll_10k rm "rm -r '$base/mnt/tree'" || true
  fi
  unmount "$base/mnt" "$example_pid"
  rm -rf "$base"
}

# ---- libfuse null: the FUSE round-trip floor for stat() ---------------------
run_null() {
  local base=$work/null
  rm -rf "$base"
  mkdir -p "$base"
  touch "$base/file"
  if fuse_example fuse_null "$base/file"; then
    statrate null stat_cached "$base/file"
    unmount "$base/file" "$example_pid"
  else
    missing null "fuse_null not built or mount failed"
  fi
  if fuse_example fuse_null "$base/file" -o attr_timeout=0,entry_timeout=0; then
    statrate null stat_nocache "$base/file"
    unmount "$base/file" "$example_pid"
  else
    missing null "fuse_null not built or mount failed (timeouts 0)"
  fi
  rm -rf "$base"
}

# ---- tabletfs ---------------------------------------------------------------
run_tabletfs() {  # TARGET NDIRS
  local target=$1 ndirs=$2 base=$work/$1
  if [[ ! -x "$bin_dir/tabletfs" ]]; then
    missing "$target" "daemon not built ($bin_dir/tabletfs absent)"
    return 0
  fi
  rm -rf "$base"
  mkdir -p "$base/data" "$base/mnt"
  if ! tabletfs_mount "$base/data" "$base/mnt"; then
    missing "$target" "mount failed: $(tail -n 1 "$work/tabletfs.log" | tr -d '"\\')"
    return 0
  fi
  if ! tabletfs_table "$base/mnt" bench; then
    missing "$target" "could not create table bench with family f"
  elif tree "$target" "$base/mnt/bench" "$ndirs" "$base/data"; then
    if [[ "$target" == tabletfs ]]; then
      statrate tabletfs stat_cached "$base/mnt/bench/row000/f/file00"
      # null's file is its mount's root: no name of the path is walked
      # inside FUSE. The same from the cell's own directory walks one.
      (cd "$base/mnt/bench/row000/f" &&
        statrate tabletfs stat_cached_here file00)
      bigfile tabletfs "$base/mnt/bench/big/f/cell"
      rm -r "$base/mnt/bench/big" || true
    fi
    timed "$target" rm "rm -r '$base/mnt/bench'" || true
  fi
  unmount "$base/mnt"
  if [[ "$target" == tabletfs ]]; then
    if tabletfs_mount "$base/data" "$base/mnt" attr_timeout=0,entry_timeout=0 &&
        tabletfs_table "$base/mnt" st && mkdir -p "$base/mnt/st/r/f" &&
        echo x >"$base/mnt/st/r/f/c"; then
      statrate tabletfs stat_nocache "$base/mnt/st/r/f/c"
    else
      missing tabletfs "stat with timeouts 0: mount or setup failed"
    fi
    unmount "$base/mnt"
  fi
  rm -rf "$base"
}

run_native native "$dirs"
run_passthrough
run_tabletfs tabletfs "$dirs"
run_native native_10k "$ll_dirs"
run_passthrough_ll
run_tabletfs tabletfs_10k "$ll_dirs"
run_null
echo "fs_bench.sh: results in $out" >&2
