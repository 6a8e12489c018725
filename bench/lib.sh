# Shared by the mount benchmarks that run one fresh local mount
# (prefix_compare.sh, changes_bench.sh, stage_compare.sh,
# bigwrite_compare.sh, onedir_compare.sh, loop_compare.sh): source it, then
#
#   bench_require BIN_DIR NAME...   exits unless each BIN_DIR/NAME is built;
#                                   sets bin_dir to BIN_DIR's absolute path
#   bench_fresh_mount WORK [ARG...] an empty data directory WORK/data
#                                   mounted at WORK/mnt by BIN_DIR/tabletfs
#                                   (with ARGs, e.g. -o spin_us=0; log:
#                                   WORK/mount.log), unmounted at exit;
#                                   sets work, data and mnt
#   bench_two_builds BASE NEW WORK  the usage message and exit 2 when one
#                                   is empty; bench_require of both builds (BASE:
#                                   tabletfs; NEW: tabletfs and
#                                   tabletfs_fsbench); sets base, new,
#                                   fsbench (NEW's), results (WORK/
#                                   results.txt, emptied) and runs_dir
#                                   (WORK/run: each run's mount, data, log)
#   bench_table                     table `bench`, family f, in $mnt
#   bench_end_mount                 unmounts $mnt, then removes $data
#   bench_median FILE NAME [COL]    the median of column COL (default 2)
#                                   over FILE's lines whose column 1 is NAME
#   bench_field NAME LINE           the number after "NAME": in a JSON line
#   bench_now                       now, in seconds (to the nanosecond)
#
# Each script keeps its own arguments and its own measurements.

bench_require() {
  local dir=$1 name
  shift
  if [[ ! -d "$dir" ]]; then echo "$0: no directory $dir" >&2; exit 1; fi
  bin_dir=$(cd "$dir" && pwd)
  for name in "$@"; do
    if [[ ! -x "$bin_dir/$name" ]]; then echo "$0: $bin_dir/$name not built" >&2; exit 1; fi
  done
}

bench_unmount() {
  if mountpoint -q "$mnt"; then fusermount3 -u "$mnt" 2>/dev/null || umount -l "$mnt" || true; fi
}

bench_fresh_mount() {
  mkdir -p "$1"
  work=$(cd "$1" && pwd)
  data=$work/data mnt=$work/mnt
  rm -rf "$data"
  mkdir -p "$data" "$mnt"
  trap bench_unmount EXIT
  "$bin_dir/tabletfs" "${@:2}" "$data" "$mnt" 2>>"$work/mount.log" || {
    echo "$0: the mount failed: $work/mount.log says why" >&2
    exit 1
  }
}

bench_two_builds() {
  if [[ -z "$1" || -z "$2" || -z "$3" ]]; then
    echo "usage: $(basename "$0") --base BIN_DIR --new BIN_DIR --work DIR" >&2
    exit 2
  fi
  bench_require "$1" tabletfs
  base=$bin_dir
  bench_require "$2" tabletfs tabletfs_fsbench
  new=$bin_dir
  fsbench=$new/tabletfs_fsbench
  mkdir -p "$3"
  results=$(cd "$3" && pwd)/results.txt
  runs_dir=$(cd "$3" && pwd)/run
  : >"$results"
}

bench_table() {
  mkdir "$mnt/bench"
  mkdir -p "$mnt/.schema/bench"  # made with the table
  touch "$mnt/.schema/bench/f"
}

bench_end_mount() {
  bench_unmount
  # The daemon holds the data directory's lock until it has closed the store.
  sleep 0.5
  rm -rf "$data"
}

bench_median() {
  awk -v n="$2" -v c="${3:-2}" '$1 == n { print $c }' "$1" | sort -n |
    awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'
}

# The number after "NAME": in LINE, one line of JSON (a program's result).
bench_field() { sed -n "s/.*\"$1\":\([0-9.e+-]*\).*/\1/p" <<<"$2"; }

# Now, in seconds since the epoch (to the nanosecond).
bench_now() { date +%s.%N; }
