#!/usr/bin/env bash
# The customer table of the HBase reference guide, built through the mount
# and read back with ls and cat, then — after unmounting — with tabletctl.
#
#   examples/customer_mount.sh [DATADIR [MOUNTPOINT]]
#
# Rows 00001 and 00002; family Kundenname with FN, LN, MN (row 00001 holds
# two versions of MN: "T", then "Timothy" — two writes of one file make two
# versions); family ContactInfo with EA (an e-mail address) and SA (a
# street address). Both directories default to new temporary ones;
# tabletfs and tabletctl come from $TABLETFS_BIN_DIR, a build directory or
# PATH.
set -euo pipefail

# shellcheck source=examples/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck disable=SC2086  # an unset or empty TABLETFS_BIN_DIR adds nothing
tabletfs=$(find_bin tabletfs ${TABLETFS_BIN_DIR:-})
# shellcheck disable=SC2086
tabletctl=$(find_bin tabletctl ${TABLETFS_BIN_DIR:-})
data=${1:-$(mktemp -d /tmp/customer-data.XXXXXX)}
mnt=${2:-$(mktemp -d /tmp/customer-mnt.XXXXXX)}

mount_tabletfs "$tabletfs" "$data" "$mnt"

run() {
  echo "\$ $*"
  "$@"
}

if [[ -d customer ]]; then run rm -r customer; fi
run mkdir customer
run touch .schema/customer/Kundenname .schema/customer/ContactInfo
echo "\$ echo 'gcpolicy = maxversions=5' > .schema/customer/Kundenname"
echo 'gcpolicy = maxversions=5' > .schema/customer/Kundenname

run mkdir -p customer/00001/Kundenname customer/00001/ContactInfo \
  customer/00002/Kundenname customer/00002/ContactInfo
put customer/00001/Kundenname/FN 'John'
put customer/00001/Kundenname/LN 'Smith'
put customer/00001/Kundenname/MN 'T'
put customer/00001/Kundenname/MN 'Timothy'
put customer/00001/ContactInfo/EA 'John.Smith@xyz.com'
put customer/00001/ContactInfo/SA '10 Main St, Anytown, USA'
put customer/00002/Kundenname/FN 'Jane'
put customer/00002/Kundenname/LN 'Doe'
put customer/00002/ContactInfo/EA 'Jane.Doe@xyz.com'
put customer/00002/ContactInfo/SA '20 Elm St, Anytown, USA'

echo
show ls customer customer/00001 customer/00001/Kundenname
show cat customer/00001/Kundenname/MN; echo
show ls .versions/customer/00001/Kundenname
show grep -r Anytown customer

# Unmount, and wait for the daemon to release the data directory.
unmount_tabletfs "$data" "$mnt"
echo
echo "\$ tabletctl -d $data read customer"
"$tabletctl" -d "$data" read customer
echo "customer_mount: data in $data"
exit $((failures > 0))
