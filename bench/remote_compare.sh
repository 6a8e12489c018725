#!/usr/bin/env bash
# A remote mount against a local one on the same shell workloads (issue 19):
# the tree of 10,000 files mounted from a tabletfs server over loopback
# (`tabletfs --serve`, `tabletfs -o endpoint= bigtable://P/I MNT`) and the
# same tree in a local data directory, alternating, with the RPCs each
# workload sent through the remote mount (from its `.tabletfs/stats`).
#
#   bench/remote_compare.sh --bin-dir DIR --work DIR [--dirs N] [--files N]
#                           [--reps N] [--port N]
#
# DIR: where `tabletfs` and `tabletfs_fsbench` are (build/<name>/bin). Per
# repetition and target, on a fresh data directory: create DIRS x FILES
# files of 1-200 bytes as bench/rowNNN/f/fileNN (tabletfs_fsbench create),
# then find | wc -l, grep -r, cat of every file, ls -lR and rm -r, each
# after 1.1 s of rest, so that the kernel's caches (1 s) and the remote
# client's (0.1 s) have expired and every workload starts from the
# server. The targets alternate which goes first. Prints per workload the
# median seconds of each target, remote/local, and the median RPCs of the
# remote one (in all and per file); the raw lines are in WORK/results.txt.
set -euo pipefail

bin_dir="" work=""
dirs=100 files=100 reps=3 port=18619
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --dirs) dirs=$2; shift 2 ;;
    --files) files=$2; shift 2 ;;
    --reps) reps=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    *) echo "remote_compare.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin_dir" || -z "$work" ]]; then
  echo "usage: remote_compare.sh --bin-dir DIR --work DIR [--dirs N] [--files N] [--reps N] [--port N]" >&2
  exit 2
fi
bin_dir=$(cd "$bin_dir" && pwd)
tabletfs=$bin_dir/tabletfs fsbench=$bin_dir/tabletfs_fsbench
for b in "$tabletfs" "$fsbench"; do
  if [[ ! -x "$b" ]]; then echo "remote_compare.sh: $b not built" >&2; exit 1; fi
done
mkdir -p "$work"
work=$(cd "$work" && pwd)
results=$work/results.txt
: >"$results"
mnt=$work/mnt
mkdir -p "$mnt"

server_pid=""
cleanup() {
  if mountpoint -q "$mnt"; then fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || true; fi
  if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; fi
}
trap cleanup EXIT

now() { echo "$EPOCHREALTIME"; }
field() { sed -n "s/.*\"$2\":\([0-9.e+-]*\).*/\1/p" <<<"$1"; }
# The RPCs the remote mount sent so far (0 for a local mount).
rpcs() { awk '$1 == "rpcs" { print $2; f = 1 } END { if (!f) print 0 }' "$mnt/.tabletfs/stats"; }

wait_mounted() {
  local i
  for ((i = 0; i < 100; i++)); do
    if mountpoint -q "$mnt"; then return 0; fi
    sleep 0.1
  done
  echo "remote_compare.sh: $mnt not mounted" >&2
  return 1
}

unmount() {
  local i
  for ((i = 0; i < 50; i++)); do
    if ! mountpoint -q "$mnt"; then return 0; fi
    fusermount3 -u "$mnt" 2>/dev/null && return 0
    sleep 0.2
  done
}

start_server() {  # DATA
  "$tabletfs" --serve -o "bigtable_api=127.0.0.1:$port" "$1" 2>>"$work/server.log" &
  server_pid=$!
  local i
  for ((i = 0; i < 100; i++)); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then return 0; fi
    sleep 0.1
  done
  echo "remote_compare.sh: the server did not listen on $port" >&2
  return 1
}

stop_server() {
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
  server_pid=""
}

# step TARGET OP CMD: runs CMD in the mount after a rest, records
# "TARGET OP SECONDS RPCS".
step() {
  local target=$1 op=$2 t0 t1 r0 r1 rc=0
  sleep 1.1
  r0=$(rpcs)
  t0=$(now)
  (cd "$mnt" && bash -c "$3") >/dev/null 2>"$work/stderr.txt" || rc=$?
  t1=$(now)
  r1=$(rpcs)
  # grep exits 1 when nothing matched.
  if ((rc > 1)) || { ((rc == 1)) && [[ "$op" != grep ]]; }; then
    echo "remote_compare.sh: $target $op failed ($rc): $(head -c 300 "$work/stderr.txt")" >&2
    return 1
  fi
  echo "$target $op $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }') $((r1 - r0))" >>"$results"
}

run_one() {  # TARGET
  local target=$1 data=$work/data line r0
  rm -rf "$data" "$work/server-data"
  if [[ "$target" == remote ]]; then
    start_server "$work/server-data"
    "$tabletfs" -o "endpoint=127.0.0.1:$port" bigtable://bench/bench "$mnt" 2>>"$work/mount.log"
  else
    mkdir -p "$data"
    "$tabletfs" "$data" "$mnt" 2>>"$work/mount.log"
  fi
  wait_mounted
  mkdir "$mnt/bench" && touch "$mnt/.schema/bench/f"
  sleep 1.1
  r0=$(rpcs)
  line=$("$fsbench" create "$mnt/bench" "$dirs" "$files" 1)
  echo "$target create $(field "$line" seconds) $(($(rpcs) - r0))" >>"$results"
  step "$target" find "find bench | wc -l"
  step "$target" grep "grep -r zqxj bench"
  step "$target" cat "find bench -type f -exec cat {} +"
  step "$target" ls_lR "ls -lR bench"
  step "$target" rm "rm -r bench"
  unmount
  if [[ "$target" == remote ]]; then stop_server; fi
  rm -rf "$data" "$work/server-data"
}

for ((i = 0; i < reps; i++)); do
  # Alternate which target goes first, so that neither always meets the
  # machine's state (page cache, other load) the other left.
  if ((i % 2)); then
    run_one remote
    run_one local
  else
    run_one local
    run_one remote
  fi
done

median() {  # TARGET OP COLUMN
  awk -v t="$1" -v o="$2" -v c="$3" '$1 == t && $2 == o { print $c }' "$results" |
    sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}
nfiles=$((dirs * files))
echo "$nfiles files ($dirs rows x $files cells), medians of $reps runs"
printf '%-7s %9s %9s %13s %8s %10s\n' workload local_s remote_s remote/local rpcs rpcs/file
for op in create find grep cat ls_lR rm; do
  l=$(median local "$op" 3) r=$(median remote "$op" 3) n=$(median remote "$op" 4)
  printf '%-7s %9s %9s %13.2f %8s %10.3f\n' "$op" "$l" "$r" \
    "$(echo "$r / $l" | bc -l)" "$n" "$(echo "$n / $nfiles" | bc -l)"
done
