#!/usr/bin/env bash
# The customer table of the HBase reference guide, built and read with
# tabletctl.
#
#   examples/customer_cli.sh [DATADIR]
#
# Rows 00001 and 00002; family Kundenname with FN, LN, MN (row 00001 holds
# two versions of MN: "T", then "Timothy"); family ContactInfo with EA (an
# e-mail address) and SA (a street address). DATADIR defaults to a new
# temporary directory; tabletctl comes from $TABLETCTL, a build directory
# or PATH.
set -euo pipefail

# shellcheck source=examples/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
tabletctl=${TABLETCTL:-$(find_bin tabletctl)}
data=${1:-$(mktemp -d /tmp/customer-cli.XXXXXX)}
export TABLETFS_DATADIR=$data

run() {
  echo "\$ tabletctl $*"
  "$tabletctl" "$@"
  echo
}

if "$tabletctl" ls 2>/dev/null | grep -qx customer; then
  run deletetable customer
fi
run createtable customer
run createfamily customer Kundenname
run createfamily customer ContactInfo
run setgcpolicy customer Kundenname maxversions=5
run ls customer

# As in cbt, a trailing @SUFFIX is a timestamp only when it is an integer:
# the e-mail addresses below are plain values.
run set customer 00001 Kundenname:FN=John Kundenname:LN=Smith \
  Kundenname:MN=T ContactInfo:EA=John.Smith@xyz.com \
  "ContactInfo:SA=10 Main St, Anytown, USA"
run set customer 00001 Kundenname:MN=Timothy
run set customer 00002 Kundenname:FN=Jane Kundenname:LN=Doe \
  ContactInfo:EA=Jane.Doe@xyz.com "ContactInfo:SA=20 Elm St, Anytown, USA"

run lookup customer 00001 columns=Kundenname:MN
run lookup customer 00001 columns=Kundenname:MN cells-per-column=1
run read customer columns=ContactInfo:
run export customer
echo "customer: data in $data"
