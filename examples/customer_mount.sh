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

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
find_bin() {
  for b in ${TABLETFS_BIN_DIR:-} "$root"/build/release/bin "$root"/build-*/bin \
           "$root"/build/*/bin; do
    if [[ -x "$b/$1" ]]; then echo "$b/$1"; return; fi
  done
  command -v "$1" || { echo "customer_mount: $1 not found" >&2; exit 1; }
}
tabletfs=$(find_bin tabletfs)
tabletctl=$(find_bin tabletctl)
data=${1:-$(mktemp -d /tmp/customer-data.XXXXXX)}
mnt=${2:-$(mktemp -d /tmp/customer-mnt.XXXXXX)}

mounted() { awk -v m="$1" '$2 == m {found = 1} END {exit !found}' /proc/self/mounts; }

"$tabletfs" "$data" "$mnt"
for _ in $(seq 50); do mounted "$mnt" && break; sleep 0.1; done
mounted "$mnt" || { echo "customer_mount: tabletfs did not mount $mnt" >&2; exit 1; }
trap 'cd /; mounted "$mnt" && fusermount3 -u "$mnt"' EXIT
cd "$mnt"

run() {
  echo "\$ $*"
  "$@"
}
failures=0
show() {  # like run, but a failure is counted and the script goes on
  echo "\$ $*"
  "$@" || { echo "(exit status $?)"; failures=$((failures + 1)); }
}
put() {  # put FILE VALUE: one new version, the value without a newline
  echo "\$ printf '%s' '$2' > '$1'"
  printf '%s' "$2" > "$1"
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
cd /
pid=$(cat "$data/mount.pid" 2>/dev/null || true)
fusermount3 -u "$mnt"
for _ in $(seq 100); do
  [[ -n "$pid" ]] && kill -0 "$pid" 2>/dev/null || break
  sleep 0.1
done
echo
echo "\$ tabletctl -d $data read customer"
"$tabletctl" -d "$data" read customer
echo "customer_mount: data in $data"
exit $((failures > 0))
