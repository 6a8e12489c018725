# shellcheck shell=bash
# Sourced by the example scripts (examples/*_cli.sh, examples/*_mount.sh):
#
#   source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
#
# Sets `root` (the repository) and `example` (the script's name, for
# messages) and defines:
#   find_bin PROGRAM [DIR...]  the path of PROGRAM: the first DIR that has
#       it, else the first build directory that has it, else PATH; exits
#       with a message when there is none.
#   mounted DIR                whether DIR is a mount point now.
#   mount_tabletfs TABLETFS DATA MNT  mounts DATA at MNT with the daemon
#       TABLETFS, waits for the mount, unmounts it when the script exits,
#       and changes to MNT.
#   unmount_tabletfs DATA MNT  unmounts and waits for the daemon to let go
#       of DATA (so tabletctl can open it).
#   show CMD...                prints and runs CMD; a failure is counted in
#       `failures` and the script goes on.
#   put FILE VALUE             writes VALUE (no newline) to FILE: one new
#       version.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
example=$(basename "${BASH_SOURCE[1]}" .sh)

find_bin() {
  local program=$1 b
  shift
  for b in "$@" "$root"/build/release/bin "$root"/build-*/bin \
           "$root"/build/*/bin; do
    if [[ -x "$b/$program" ]]; then echo "$b/$program"; return; fi
  done
  command -v "$program" || { echo "$example: $program not found" >&2; exit 1; }
}

mounted() { awk -v m="$1" '$2 == m {found = 1} END {exit !found}' /proc/self/mounts; }

mount_tabletfs() {
  local tabletfs=$1 data=$2 mnt=$3
  "$tabletfs" "$data" "$mnt"
  for _ in $(seq 50); do mounted "$mnt" && break; sleep 0.1; done
  mounted "$mnt" || { echo "$example: tabletfs did not mount $mnt" >&2; exit 1; }
  # shellcheck disable=SC2064  # expanded now: $mnt is local
  trap "cd /; mounted $(printf %q "$mnt") && fusermount3 -u $(printf %q "$mnt")" EXIT
  cd "$mnt" || exit 1
}

unmount_tabletfs() {
  local data=$1 mnt=$2 pid
  cd /
  pid=$(cat "$data/mount.pid" 2>/dev/null || true)
  fusermount3 -u "$mnt"
  for _ in $(seq 100); do
    if [[ -z "$pid" ]] || ! kill -0 "$pid" 2>/dev/null; then break; fi
    sleep 0.1
  done
}

failures=0
show() {
  echo "\$ $*"
  "$@" || { echo "(exit status $?)"; failures=$((failures + 1)); }
}

put() {
  echo "\$ printf '%s' '$2' > '$1'"
  printf '%s' "$2" > "$1"
}
