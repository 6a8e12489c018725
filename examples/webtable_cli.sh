#!/usr/bin/env bash
# The Webtable of the Bigtable paper (figure 1), built and read with
# tabletctl, cbt's commands on a tabletfs data directory.
#
#   examples/webtable_cli.sh [DATADIR]
#
# DATADIR defaults to a new temporary directory. tabletctl is taken from
# $TABLETCTL, else from the first build directory that has it, else PATH.
# The paper's t3 ... t9 are seconds 3 ... 9 after 2026-01-01T00:00:00Z (as
# in examples/quickstart.sh), written as @MICROSECONDS after a value.
set -euo pipefail

# shellcheck source=examples/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tabletctl=${TABLETCTL:-$(find_bin tabletctl)}
data=${1:-$(mktemp -d /tmp/webtable-cli.XXXXXX)}
export TABLETFS_DATADIR=$data

run() {
  echo "\$ tabletctl $*"
  "$tabletctl" "$@"
  echo
}

t0=1767225600000000
t() { echo $((t0 + $1 * 1000000)); }

if "$tabletctl" ls 2>/dev/null | grep -qx webtable; then
  run deletetable webtable
fi
run createtable webtable families=contents:maxversions=3,anchor
run ls webtable

# Three versions of the page; `contents:` is the empty qualifier.
run set webtable com.cnn.www \
  "contents:=<html><head><title>CNN</title></head>v1</html>@$(t 3)"
run set webtable com.cnn.www \
  "contents:=<html><head><title>CNN</title></head>v2</html>@$(t 5)"
run set webtable com.cnn.www \
  "contents:=<html><head><title>CNN</title></head>v3</html>@$(t 6)"
# One row, several cells, one atomic mutation.
run set webtable com.cnn.www "anchor:cnnsi.com=CNN@$(t 9)" \
  "anchor:my.look.ca=CNN.com@$(t 8)"
run set webtable com.example.www \
  "contents:=<html><head><title>Example Domain</title></head></html>@$(t 4)" \
  "anchor:www.iana.org=example domains@$(t 4)"
run set webtable org.wikipedia.en \
  "contents:=<html><head><title>Wikipedia</title></head></html>@$(t 7)" \
  "anchor:com.cnn.www=Wikipedia@$(t 7)"

run lookup webtable com.cnn.www
run lookup webtable com.cnn.www columns=contents: at=2026-01-01T00:00:05Z
run read webtable prefix=com. columns=anchor: cells-per-column=1
run count webtable
run export webtable format=csv
run export webtable format=jsonl
echo "webtable: data in $data"
