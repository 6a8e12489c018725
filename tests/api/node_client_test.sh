#!/usr/bin/env bash
# Google's Node.js client library (@google-cloud/bigtable) against tabletfs
# and against Google's Bigtable emulator: the same session on both, the same
# output expected.
#
#   tests/api/node_client_test.sh TABLETFS_BINARY
#
# Installs the pinned client (@google-cloud/bigtable@7.2.0) with npm into
# ${XDG_CACHE_HOME:-$HOME/.cache}/tabletfs/node-bigtable-7.2.0 (kept and
# reused), starts `tabletfs --serve` (Bigtable API on a loopback TCP port)
# and cbtemulator, runs tests/api/node_client_session.js against each, and
# diffs the two transcripts (stdout). Exit 0 when they are identical, 1
# with the diff otherwise, 77 (ctest's SKIP_RETURN_CODE) when node, npm or
# cbtemulator is not installed or the npm install fails (no network).
#
# The session prints what the client returns, leaving out only what
# differs by design (see the head of node_client_session.js): timestamps
# near now, the order of families and tables, error texts (codes are
# compared, but for the few calls the emulator fails with an untyped
# error: those codes are printed, not compared), SampleRowKeys' samples.
# stderr is not compared (the client warns there that it found no GCE
# metadata server).
#
# Environment: NODE, NPM, CBTEMULATOR override where the programs are
# found; NODE_BIGTABLE_DIR where the client is installed.

# The *_port variables are set through printf -v, the trap's functions are
# called:
# shellcheck disable=SC2154,SC2317

set -euo pipefail

if [[ $# -ne 1 || -z $1 ]]; then
  echo "usage: $0 TABLETFS_BINARY" >&2
  exit 2
fi
TABLETFS=$1
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
SESSION=$here/node_client_session.js
CLIENT_VERSION=7.2.0

NODE=${NODE:-$(command -v node || true)}
NPM=${NPM:-$(command -v npm || true)}
if [[ -z ${CBTEMULATOR:-} ]]; then
  CBTEMULATOR=$(command -v cbtemulator || true)
  if [[ -z $CBTEMULATOR ]]; then
    for sdk in /usr/lib/google-cloud-sdk /usr/share/google-cloud-sdk \
               /opt/google-cloud-sdk \
               "$(dirname "$(dirname "$(readlink -f "$(command -v gcloud || echo /nonexistent/x/y)")")")"; do
      if [[ -x $sdk/platform/bigtable-emulator/cbtemulator ]]; then
        CBTEMULATOR=$sdk/platform/bigtable-emulator/cbtemulator
        break
      fi
    done
  fi
fi
if [[ -z $NODE || ! -x $NODE ]]; then
  echo "SKIP: node not found (install nodejs, or set NODE)"
  exit 77
fi
if [[ -z $CBTEMULATOR || ! -x $CBTEMULATOR ]]; then
  echo "SKIP: cbtemulator not found (install" \
       "google-cloud-cli-bigtable-emulator, or set CBTEMULATOR)"
  exit 77
fi

# -- the client library, installed once -------------------------------------
CLIENT_DIR=${NODE_BIGTABLE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tabletfs/node-bigtable-$CLIENT_VERSION}
installed() {
  [[ -f $CLIENT_DIR/node_modules/@google-cloud/bigtable/package.json ]] &&
    grep -q "\"version\": \"$CLIENT_VERSION\"" \
      "$CLIENT_DIR/node_modules/@google-cloud/bigtable/package.json"
}
if ! installed; then
  if [[ -z $NPM || ! -x $NPM ]]; then
    echo "SKIP: npm not found (install npm, or set NPM), and" \
         "@google-cloud/bigtable@$CLIENT_VERSION is not in $CLIENT_DIR"
    exit 77
  fi
  echo "installing @google-cloud/bigtable@$CLIENT_VERSION into $CLIENT_DIR"
  mkdir -p "$(dirname "$CLIENT_DIR")"
  # A directory of our own, so that npm neither looks for nor edits a
  # package.json further up; moved into place only when complete.
  staging=$(mktemp -d "$CLIENT_DIR.XXXXXX")
  if ! (cd "$staging" && echo '{"private": true}' >package.json &&
        timeout 600 "$NPM" install --prefix "$staging" \
          "@google-cloud/bigtable@$CLIENT_VERSION" --no-audit --no-fund \
          >"$staging/npm.log" 2>&1); then
    echo "SKIP: npm install @google-cloud/bigtable@$CLIENT_VERSION failed" \
         "(no network?); its log ends:"
    tail -n 15 "$staging/npm.log" || true
    rm -rf "$staging"
    exit 77
  fi
  rm -rf "$CLIENT_DIR"  # an incomplete copy, if any
  # Another run may have put its copy in place meanwhile: keep that one.
  mv -T "$staging" "$CLIENT_DIR" 2>/dev/null || rm -rf "$staging"
  if ! installed; then
    echo "FAIL: npm install left no @google-cloud/bigtable@$CLIENT_VERSION" \
         "in $CLIENT_DIR"
    exit 1
  fi
fi
export NODE_PATH=$CLIENT_DIR/node_modules

# The binary may be in the middle of a rebuild: give it a moment.
for _ in $(seq 1 30); do
  [[ -x $TABLETFS ]] && break
  sleep 1
done
if [[ ! -x $TABLETFS ]]; then
  echo "FAIL: $TABLETFS is not an executable" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/node_client.XXXXXX")
tabletfs_pid=
emulator_pid=
session_pids=()

stop() {  # stop PID: SIGTERM, then SIGKILL after 5 s
  local pid=$1
  [[ -n $pid ]] || return 0
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 50); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
}
cleanup() {
  local rc=$? pid
  for pid in "${session_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  stop "$tabletfs_pid"
  stop "$emulator_pid"
  rm -rf "$tmp"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() {
  python3 -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])' 2>/dev/null || echo $((20000 + RANDOM % 40000))
}

# The session script against PORT. HOME is the scratch directory: no
# user configuration (~/.config/gcloud credentials) is read.
node_at() {
  local port=$1
  shift
  HOME=$tmp BIGTABLE_EMULATOR_HOST=127.0.0.1:$port \
    timeout 240 "$NODE" "$SESSION" "$@"
}

# start_server NAME: starts it on a free port, waits (30 s at most) until
# the port accepts and instance.getTables() answers; sets <NAME>_pid and
# <NAME>_port. Retries with another port when the server dies at once (the
# port was taken meanwhile).
start_server() {
  local name=$1 port pid attempt
  for attempt in 1 2 3 4 5; do
    port=$(free_port)
    case $name in
      tabletfs)
        "$TABLETFS" -o "bigtable_api=127.0.0.1:$port" --serve "$tmp/data" \
          >"$tmp/tabletfs.log" 2>&1 &
        ;;
      emulator)
        "$CBTEMULATOR" -host 127.0.0.1 -port "$port" \
          >"$tmp/emulator.log" 2>&1 &
        ;;
    esac
    pid=$!
    printf -v "${name}_pid" %s "$pid"
    printf -v "${name}_port" %s "$port"
    for _ in $(seq 1 300); do
      if ! kill -0 "$pid" 2>/dev/null; then
        break
      fi
      if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
        if node_at "$port" --probe >/dev/null 2>"$tmp/probe.err"; then
          return 0
        fi
        break
      fi
      sleep 0.1
    done
    echo "$name did not answer on port $port (attempt $attempt):" >&2
    cat "$tmp/probe.err" >&2 2>/dev/null || true
    tail -n 20 "$tmp/$name.log" >&2 || true
    stop "$pid"
    printf -v "${name}_pid" %s ""
  done
  echo "FAIL: could not start $name" >&2
  exit 1
}

start_server tabletfs
start_server emulator

# Both sessions at once (each waits 6 s for the emulator's GC). A session
# that fails (exit status not 0) is a failure too; its status goes into
# the transcript. session_pids are timeout's, which passes the cleanup's
# SIGTERM on to node.
start_session() {
  local name=$1 port=$2
  HOME=$tmp BIGTABLE_EMULATOR_HOST=127.0.0.1:$port \
    timeout 240 "$NODE" "$SESSION" >"$tmp/$name.out" 2>"$tmp/$name.err" &
  session_pids+=($!)
}
start_session tabletfs "$tabletfs_port"
start_session emulator "$emulator_port"
for i in 0 1; do
  rc=0
  wait "${session_pids[$i]}" || rc=$?
  if [[ $rc -ne 0 ]]; then
    name=$([[ $i -eq 0 ]] && echo tabletfs || echo emulator)
    printf 'session exited with status %d\n' "$rc" >>"$tmp/$name.out"
  fi
done
session_pids=()

print_not_compared() {
  local name
  for name in tabletfs emulator; do
    echo "== error codes not compared (the emulator's are untyped): $name =="
    grep '^code not compared: ' "$tmp/$name.err" |
      sed 's/^code not compared: /  /' || true
  done
}

steps=$(grep -c '^> ' "$tmp/tabletfs.out" || true)
if diff -u --label "emulator (cbtemulator)" --label "tabletfs" \
     "$tmp/emulator.out" "$tmp/tabletfs.out" >"$tmp/diff"; then
  print_not_compared
  echo "PASS: $steps Node.js client calls, same output from tabletfs" \
       "and the emulator"
  exit 0
fi
print_not_compared
echo "== transcript diff (- emulator, + tabletfs) =="
cat "$tmp/diff"
for name in tabletfs emulator; do
  if grep -q '^session exited' "$tmp/$name.out"; then
    echo "== $name session stderr =="
    grep -v -e MetadataLookupWarning -e 'node --trace-warnings' \
      "$tmp/$name.err" || true
  fi
done
echo "FAIL: tabletfs and the emulator answer the Node.js client" \
     "differently (diff above)"
exit 1
