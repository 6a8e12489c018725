#!/usr/bin/env bash
# Quick start: build tabletfs, load the Webtable of the Bigtable paper
# (figure 1) with tabletctl, mount it and look at it with ordinary tools.
#
#   examples/quickstart.sh
#
# Data and mount point live in ${TABLETFS_QUICKSTART_DIR:-/tmp/tabletfs-quickstart}
# (data/ and mnt/). Re-running unmounts the previous mount and starts from
# fresh data. The mount is left in place; the script prints how to unmount.
# Package installation and the build (only the daemon and tabletctl) write
# to DIR/build.log, which is printed only when a step fails.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

dir=${TABLETFS_QUICKSTART_DIR:-/tmp/tabletfs-quickstart}
data="$dir/data"
mnt="$dir/mnt"
marker="$dir/.tabletfs-quickstart"
log="$dir/build.log"

# Never delete a directory this script did not create.
if [[ -d "$dir" && ! -e "$marker" && -n "$(ls -A "$dir")" ]]; then
  echo "quickstart: $dir exists and was not made by this script;" \
       "set TABLETFS_QUICKSTART_DIR to another directory" >&2
  exit 1
fi
mkdir -p "$dir"
touch "$marker"
: >"$log"

# step MESSAGE CMD...: one progress line; CMD's output goes to the log,
# which is shown (and the script stops) when CMD fails.
step() {
  local message=$1
  shift
  echo "quickstart: $message"
  if ! "$@" >>"$log" 2>&1; then
    echo "quickstart: failed: $*; its output ($log):" >&2
    cat "$log" >&2
    exit 1
  fi
}

step "installing missing packages (output in $log)" \
  scripts/install-deps.sh build
step "building tabletfs and tabletctl (about 5 minutes the first time, on 2 cores)" \
  env TABLETFS_TARGETS="tabletfs tabletctl" scripts/build.sh release

bin="$root/build/release/bin"

mounted() { awk -v m="$1" '$2 == m {found = 1} END {exit !found}' /proc/self/mounts; }

if mounted "$mnt"; then
  echo "quickstart: unmounting the previous mount at $mnt"
  fusermount3 -u "$mnt" || fusermount3 -uz "$mnt"
fi
rm -rf "$data"
mkdir -p "$data" "$mnt"

ctl() { "$bin/tabletctl" -d "$data" "$@"; }

# Timestamps are microseconds since the epoch; the paper's t3 ... t9 become
# seconds 3 ... 9 after 2026-01-01T00:00:00Z, so `.at/T` views are easy to type.
t0=1767225600000000
t() { echo $((t0 + $1 * 1000000)); }

echo "quickstart: loading the Webtable into $data"
ctl createtable webtable
ctl createfamily webtable contents
ctl createfamily webtable anchor
# `contents:` is the empty qualifier; a value's version is given as @T.
ctl set webtable com.cnn.www "contents:=<html><head><title>CNN</title></head>v1</html>@$(t 3)"
ctl set webtable com.cnn.www "contents:=<html><head><title>CNN</title></head>v2</html>@$(t 5)"
ctl set webtable com.cnn.www "contents:=<html><head><title>CNN</title></head>v3</html>@$(t 6)"
ctl set webtable com.cnn.www "anchor:cnnsi.com=CNN@$(t 9)"
ctl set webtable com.cnn.www "anchor:my.look.ca=CNN.com@$(t 8)"
ctl set webtable com.example.www \
  "contents:=<html><head><title>Example Domain</title></head></html>@$(t 4)" \
  "anchor:www.iana.org=example domains@$(t 4)"
ctl set webtable org.wikipedia.en \
  "contents:=<html><head><title>Wikipedia</title></head></html>@$(t 7)" \
  "anchor:com.cnn.www=Wikipedia@$(t 7)"

# The daemon's start-up lines go to the log too (then it logs to syslog).
step "mounting $data at $mnt" "$bin/tabletfs" "$data" "$mnt"
for _ in $(seq 50); do
  if mounted "$mnt"; then break; fi
  sleep 0.1
done
if ! mounted "$mnt"; then
  echo "quickstart: tabletfs did not mount $mnt" >&2
  exit 1
fi

failures=0
show() {
  echo
  echo "\$ $*"
  (cd "$mnt" && "$@") || { echo "(exit status $?)"; failures=$((failures + 1)); }
}

show ls
show ls webtable
show ls webtable/com.cnn.www webtable/com.cnn.www/anchor
show cat webtable/com.cnn.www/contents/%
show cat webtable/com.cnn.www/anchor/cnnsi.com
show ls .versions/webtable/com.cnn.www/contents
show cat ".at/2026-01-01T00:00:04Z/webtable/com.cnn.www/contents/%"
show grep -r CNN webtable
show find . -type f

cat <<EOF

tabletfs is mounted at $mnt (data in $data).
Unmount with:

  fusermount3 -u $mnt
EOF
exit $((failures > 0))
