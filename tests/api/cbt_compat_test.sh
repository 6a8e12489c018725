#!/usr/bin/env bash
# cbt against tabletfs and against Google's Bigtable emulator: the same
# session on both, the same output expected.
#
#   tests/api/cbt_compat_test.sh TABLETFS_BINARY
#
# Starts `tabletfs --serve` (Bigtable API on a loopback TCP port) and
# cbtemulator, runs one list of cbt commands against each, and diffs the two
# transcripts. Exit 0 when they are identical, 1 with the diff otherwise,
# 77 (ctest's SKIP_RETURN_CODE) when cbt or cbtemulator is not installed.
#
# What the comparison leaves out, and nothing else:
#   - server-assigned timestamps (cells written without `@TS`): every
#     `@ YYYY/MM/DD-HH:MM:SS.ffffff` not in 1970/01/01 (all the timestamps
#     the session sets itself are) becomes `@ <server time>`;
#   - for a command that fails, its output: only the exit status is
#     compared (the two servers word their errors differently); both
#     texts are printed at the end.
#
# The emulator collects garbage in the background, every 0.5 to 1.5 s,
# where tabletfs applies GC policies as it reads: the session waits
# (`settle`) before reading what a policy collects.
#
# Known divergence left out on purpose (an emulator limit, not ours): the
# emulator never collects by an intersection policy (`maxage=.. and
# maxversions=..`, bttest's applyGC has no GcRule_Intersection case), so
# the session sets such policies and lists them, but writes no cell that
# one would collect.
#
# Environment: CBT, CBTEMULATOR override where the programs are found.

# `run read ...` is cbt's read, the trap's functions are called, and the
# *_port variables are set through printf -v:
# shellcheck disable=SC2162,SC2317,SC2154

set -euo pipefail

if [[ $# -ne 1 || -z $1 ]]; then
  echo "usage: $0 TABLETFS_BINARY" >&2
  exit 2
fi
TABLETFS=$1

CBT=${CBT:-$(command -v cbt || true)}
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
if [[ -z $CBT || ! -x $CBT ]]; then
  echo "SKIP: cbt not found (install google-cloud-cli-cbt, or set CBT)"
  exit 77
fi
if [[ -z $CBTEMULATOR || ! -x $CBTEMULATOR ]]; then
  echo "SKIP: cbtemulator not found (install" \
       "google-cloud-cli-bigtable-emulator, or set CBTEMULATOR)"
  exit 77
fi

# The binary may be in the middle of a rebuild: give it a moment.
for _ in $(seq 1 30); do
  [[ -x $TABLETFS ]] && break
  sleep 1
done
if [[ ! -x $TABLETFS ]]; then
  echo "FAIL: $TABLETFS is not an executable" >&2
  exit 1
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/cbt_compat.XXXXXX")
tabletfs_pid=
emulator_pid=

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
  local rc=$?
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

# cbt against PORT. HOME is the scratch directory so that no ~/.cbtrc is
# read; `-creds /dev/null` because without -creds cbt runs `gcloud config
# config-helper` on every call (1.5 s each); the emulator host needs no
# credentials either way.
# Against a port nobody answers on, cbt waits: `ready` gives it 2 s.
cbt_at() {
  local port=$1
  shift
  HOME=$tmp BIGTABLE_EMULATOR_HOST=127.0.0.1:$port \
    timeout 30 "$CBT" -creds /dev/null -project p -instance i "$@"
}
ready() {
  local port=$1
  (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null &&
    HOME=$tmp BIGTABLE_EMULATOR_HOST=127.0.0.1:$port \
      timeout 5 "$CBT" -creds /dev/null -timeout 2s -project p -instance i \
      ls >/dev/null 2>&1
}

# start_server NAME: starts it on a free port, waits (30 s at most) until
# `cbt ls` answers; sets <NAME>_pid and <NAME>_port. Retries with another
# port when the server dies at once (the port was taken meanwhile).
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
      if ready "$port"; then
        return 0
      fi
      sleep 0.1
    done
    echo "$name did not answer on port $port (attempt $attempt):" >&2
    tail -n 20 "$tmp/$name.log" >&2 || true
    stop "$pid"
    printf -v "${name}_pid" %s ""
  done
  echo "FAIL: could not start $name" >&2
  exit 1
}

start_server tabletfs
start_server emulator

# ---------------------------------------------------------------------------
# The session. `run ARGS...` runs `cbt ARGS...` and appends to the
# transcript ($out) the command, its exit status and, when it succeeds, its
# stdout with server timestamps normalized. A failure's stdout and stderr go
# to $errs instead (printed, not compared).

normalize() {
  sed -E '/@ 1970\/01\/01-/!s#@ [0-9]{4}/[0-9]{2}/[0-9]{2}-[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{6}#@ <server time>#'
}

session() {
  local port=$1 out=$2 errs=$3
  : >"$out"
  : >"$errs"

  run() {
    local rc=0
    cbt_at "$port" "$@" >"$out.stdout" 2>"$out.stderr" || rc=$?
    printf '$ cbt %s\n' "$*" >>"$out"
    if [[ $rc -eq 0 ]]; then
      printf 'exit 0\n' >>"$out"
      normalize <"$out.stdout" >>"$out"
    else
      printf 'exit %d (error text not compared)\n' "$rc" >>"$out"
      {
        printf '$ cbt %s\n' "$*"
        cat "$out.stdout"
        grep -v -e '-creds flag unset' "$out.stderr" |
          sed -E 's#^[0-9]{4}/[0-9]{2}/[0-9]{2} [0-9:]{8} ##' || true
      } >>"$errs"
    fi
  }
  settle() {  # the emulator's GC runs every 0.5 to 1.5 s
    printf '# settle\n' >>"$out"
    sleep 3
  }

  # -- tables and families ---------------------------------------------------
  run ls
  run createtable t1
  run createtable t2 families=f1:maxversions=1,f2:never
  run createtable t3 'families=a:maxage=10d||maxversions=1,b:maxage=1h&&maxversions=2' splits=m,t
  run ls
  run ls t1
  run ls t2
  run ls t3
  run createfamily t1 cf
  run createfamily t1 g
  run createfamily t1 h
  run createfamily t1 n
  run createfamily t1 u
  run createfamily t1 v
  run setgcpolicy t1 cf maxversions=2
  run setgcpolicy t1 g maxage=1d
  run setgcpolicy t1 h maxage=12h or maxversions=3
  run setgcpolicy t1 h maxage=30m and maxversions=5
  run setgcpolicy t1 n maxversions=1
  run setgcpolicy t1 n never
  # Three rules: cbt sends ((r1 or r2) or r3); GetTable must give it back
  # as it was set.
  run setgcpolicy t1 u maxversions=4 or maxage=3650d or maxversions=3
  run setgcpolicy t1 v maxage=1h and maxversions=6 and maxage=2h
  run ls t1
  run deletefamily t1 u
  run deletefamily t1 v
  run ls

  # -- writes ------------------------------------------------------------------
  run set t1 r1 cf:a=1@1000 cf:a=2@2000 cf:a=3@3000 cf:b=bee@1500 h:x=hx@100
  run set t1 r2 cf:a=hello g:y=why
  run set t1 r3 h:z=zed@5000 cf:c=@7000
  run set t1 s1 cf:a=s@42000 'n:with space=v'
  run set t1 s2 cf:a=1@abc
  run set t1 r4 g:old=ancient@1000
  run set t2 r1 f1:q=v1@1000 f1:q=v2@2000 f1:q=v3@3000 f2:q=w1@1000 f2:q=w2@2000
  run set t3 r1 a:q=1@1000 a:q=2@2000 b:q=x@1000 b:q=y@2000
  run set t3 r2 a:q=now
  run set t3 r2 a:q=later
  settle

  # -- reads ---------------------------------------------------------------------
  run read t1
  run read t2
  run read t3
  run read t1 start=r2
  run read t1 end=r3
  run read t1 start=r1 end=s
  run read t1 prefix=r
  run read t1 prefix=s count=1
  run read t1 count=2
  run read t1 columns=cf:a
  run read t1 columns=cf:a,h:z cells-per-column=1
  run read t1 columns=cf:
  run read t1 columns=:a
  run read t1 regex='r[13]'
  run read t1 cells-per-column=1
  run read t1 keys-only=true
  run read t1 prefix=nothing
  run read t2 columns=nofam:q
  # ReadRowsRequest.reversed
  run read t1 reversed=true
  run read t1 start=r1 end=s reversed=true count=2
  run lookup t1 r1
  run lookup t1 r1 columns=cf:a cells-per-column=1
  run lookup t1 r1 columns=cf:b,h:x
  run lookup t1 nosuchrow
  run count t1
  run count t1 prefix=r
  run count t2
  run count t3

  # A write at a timestamp that exists replaces the cell.
  run set t1 r1 cf:b=BEE@1500
  run lookup t1 r1 columns=cf:b

  # A stricter policy collects what was written before it too; nothing is
  # written after it here before the read.
  run setgcpolicy t2 f2 maxversions=1
  run ls t2
  settle
  run read t2
  run lookup t2 r1 columns=f2:q

  # -- errors --------------------------------------------------------------------
  run createtable t2
  run createfamily t2 f1
  run createfamily nosuch f
  run ls nosuch
  run read nosuch
  run lookup nosuch r
  run count nosuch
  run set nosuch r f1:q=1
  run set t2 r nofam:q=1
  run set t2 r f1:q=1@-1000
  run setgcpolicy nosuch f1 maxversions=1
  run setgcpolicy t2 nofam maxversions=1
  run deletecolumn nosuch r f1 q
  run deletecolumn t2 r nofam q
  run deletefamily nosuch f1
  run deletefamily t2 nofam
  run deleterow nosuch r
  run deleteallrows nosuch
  run deletetable nosuch

  # -- deletes -------------------------------------------------------------------
  run deletecolumn t1 r1 cf a
  run lookup t1 r1
  run deletecolumn t1 r1 cf nosuchcol
  run deletecolumn t1 nosuchrow cf a
  run deletefamily t1 g
  run ls t1
  run read t1
  run createfamily t1 g
  run read t1 columns=g:
  run ls t1
  run deleterow t1 r3
  run deleterow t1 nosuchrow
  run read t1 keys-only=true
  run count t1
  run deleteallrows t1
  run read t1
  run count t1
  run ls t1
  run set t1 again cf:a=back@1000
  run read t1
  run deletetable t1
  run ls
  run deletetable t1
  run read t1
  run deletetable t2
  run deletetable t3
  run ls
  rm -f "$out.stdout" "$out.stderr"
}

# One after the other, in the foreground: a signal then waits only for the
# cbt at hand (the servers are still up) before the trap cleans up.
session "$tabletfs_port" "$tmp/tabletfs.out" "$tmp/tabletfs.err"
session "$emulator_port" "$tmp/emulator.out" "$tmp/emulator.err"

print_errors() {
  echo "== error texts, not compared: tabletfs =="
  cat "$tmp/tabletfs.err"
  echo "== error texts, not compared: emulator =="
  cat "$tmp/emulator.err"
}

commands=$(grep -c '^\$ cbt ' "$tmp/tabletfs.out")
if diff -u --label "emulator (cbtemulator)" --label "tabletfs" \
     "$tmp/emulator.out" "$tmp/tabletfs.out" >"$tmp/diff"; then
  print_errors
  echo "PASS: $commands cbt commands, same output from tabletfs and the emulator"
  exit 0
fi
print_errors
echo "== transcript diff (- emulator, + tabletfs) =="
cat "$tmp/diff"
echo "FAIL: tabletfs and the emulator answer cbt differently (diff above)"
exit 1
