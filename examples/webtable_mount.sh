#!/usr/bin/env bash
# The Webtable of the Bigtable paper (figure 1), built through the mount
# with mkdir, touch, printf and shell redirection, read back with ls, cat
# and grep, then — after unmounting — with tabletctl.
#
#   examples/webtable_mount.sh [DATADIR [MOUNTPOINT]]
#
# Both default to new temporary directories. tabletfs and tabletctl come
# from $TABLETFS_BIN_DIR, else the first build directory that has them,
# else PATH. The paper's t3 ... t9 are seconds 3 ... 9 after
# 2026-01-01T00:00:00Z (as in examples/quickstart.sh); writing the file
# Q@T creates the version of cell Q at exactly T.
set -euo pipefail

# shellcheck source=examples/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck disable=SC2086  # an unset or empty TABLETFS_BIN_DIR adds nothing
tabletfs=$(find_bin tabletfs ${TABLETFS_BIN_DIR:-})
# shellcheck disable=SC2086
tabletctl=$(find_bin tabletctl ${TABLETFS_BIN_DIR:-})
data=${1:-$(mktemp -d /tmp/webtable-data.XXXXXX)}
mnt=${2:-$(mktemp -d /tmp/webtable-mnt.XXXXXX)}

mount_tabletfs "$tabletfs" "$data" "$mnt"

run() {
  echo "\$ $*"
  "$@"
}

t0=1767225600000000
t() { echo $((t0 + $1 * 1000000)); }

if [[ -d webtable ]]; then run rm -r webtable; fi
# A table is a directory; a family is a file under .schema.
run mkdir webtable
run touch .schema/webtable/contents .schema/webtable/anchor
echo "\$ echo 'gcpolicy = maxversions=3' > .schema/webtable/contents"
echo 'gcpolicy = maxversions=3' > .schema/webtable/contents
run cat .schema/webtable/contents

# Rows and family directories; `%` is the empty qualifier (`contents:`).
run mkdir -p webtable/com.cnn.www/contents webtable/com.cnn.www/anchor \
  webtable/com.example.www/contents webtable/com.example.www/anchor \
  webtable/org.wikipedia.en/contents webtable/org.wikipedia.en/anchor
cnn=webtable/com.cnn.www
put "$cnn/contents/%@$(t 3)" '<html><head><title>CNN</title></head>v1</html>'
put "$cnn/contents/%@$(t 5)" '<html><head><title>CNN</title></head>v2</html>'
put "$cnn/contents/%@$(t 6)" '<html><head><title>CNN</title></head>v3</html>'
put "$cnn/anchor/cnnsi.com@$(t 9)" 'CNN'
put "$cnn/anchor/my.look.ca@$(t 8)" 'CNN.com'
put "webtable/com.example.www/contents/%@$(t 4)" \
  '<html><head><title>Example Domain</title></head></html>'
put "webtable/com.example.www/anchor/www.iana.org@$(t 4)" 'example domains'
put "webtable/org.wikipedia.en/contents/%@$(t 7)" \
  '<html><head><title>Wikipedia</title></head></html>'
put "webtable/org.wikipedia.en/anchor/com.cnn.www@$(t 7)" 'Wikipedia'

echo
show ls webtable
show ls "$cnn" "$cnn/anchor"
show cat "$cnn/contents/%"; echo
show ls ".versions/$cnn/contents"
show cat ".at/2026-01-01T00:00:05Z/$cnn/contents/%"; echo
show grep -r CNN webtable

# Unmount, and wait for the daemon to release the data directory.
unmount_tabletfs "$data" "$mnt"
echo
echo "\$ tabletctl -d $data lookup webtable com.cnn.www"
"$tabletctl" -d "$data" lookup webtable com.cnn.www
echo "webtable_mount: data in $data"
exit $((failures > 0))
