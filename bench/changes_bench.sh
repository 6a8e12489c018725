#!/usr/bin/env bash
# The change feed (issue 21): how long from a write to its line in
# MOUNT/.changes/TABLE (p50, p99 over SAMPLES writes through the mount, each
# a new cell, read back as tail -f reads: the size, then the new bytes,
# polled every 0.2 ms), and how many lines per second the feed writes while
# ROWS rows are loaded through the daemon's API (tabletfs_apibench --workload
# load, batches of 1,000 rows of one 100-byte cell).
#
#   bench/changes_bench.sh --bin-dir DIR --work DIR [--samples N] [--rows N]
#
# DIR: where `tabletfs` and `tabletfs_apibench` are (build/<name>/bin).
set -euo pipefail

bin_dir="" work="" samples=500 rows=200000
while (($#)); do
  case "$1" in
    --bin-dir) bin_dir=$2; shift 2 ;;
    --work) work=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    *) echo "changes_bench.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
if [[ -z "$bin_dir" || -z "$work" ]]; then
  echo "usage: changes_bench.sh --bin-dir DIR --work DIR [--samples N] [--rows N]" >&2
  exit 2
fi
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
bench_require "$bin_dir" tabletfs tabletfs_apibench
bench_fresh_mount "$work"
apibench=$bin_dir/tabletfs_apibench
"$apibench" --endpoint "unix:$data/bigtable.sock" --workload setup >/dev/null
mkdir -p "$mnt/bench/r/f"

python3 - "$mnt" "$samples" <<'PY'
import os, sys, time
mnt, samples = sys.argv[1], int(sys.argv[2])
fd = os.open(os.path.join(mnt, ".changes/bench"), os.O_RDONLY)
seen = 0
lat = []
for i in range(samples):
    path = os.path.join(mnt, "bench/r/f/q%d" % i)
    t0 = time.perf_counter()
    with open(path, "w") as f:
        f.write("v")
    needle = ('"qualifier":"q%d",' % i).encode()
    while True:
        size = os.fstat(fd).st_size
        if size > seen:
            text = os.pread(fd, size - seen, seen)
            seen += len(text)
            if needle in text:
                break
        time.sleep(0.0002)
    lat.append(time.perf_counter() - t0)
lat.sort()
def pct(p): return lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3
print("write to line, %d writes through the mount: p50 %.2f ms, p99 %.2f ms"
      % (samples, pct(0.5), pct(0.99)))
os.close(fd)
PY

python3 - "$mnt" "$rows" "$apibench" "$data" <<'PY'
import os, subprocess, sys, time
mnt, rows, apibench, data = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
# The feed's pace, not a reader's: only its size is polled (a reader that
# reads every line of a bulk load falls out of the feed's window on 2
# cores), then its last line is checked.
fd = os.open(os.path.join(mnt, ".changes/bench"), os.O_RDONLY)
t0 = time.perf_counter()
load = subprocess.Popen([apibench, "--endpoint", "unix:" + data + "/bigtable.sock",
                         "--workload", "load", "--rows", str(rows)],
                        stdout=subprocess.DEVNULL)
size, grew = 0, t0
while load.poll() is None or time.perf_counter() - grew < 1.0:
    s = os.fstat(fd).st_size
    if s > size:
        size, grew = s, time.perf_counter()
    time.sleep(0.005)
tail = os.pread(fd, 4096, size - 4096).decode()
last = tail.rstrip("\n").split("\n")[-1]
assert ('"row":"user%010d"' % (rows - 1)) in last, last[:200]
print("%d rows loaded through the API: the feed wrote %d bytes in %.2f s, "
      "%.0f lines/s (%.0f bytes a line)"
      % (rows, size, grew - t0, rows / (grew - t0), size / rows))
os.close(fd)
PY
