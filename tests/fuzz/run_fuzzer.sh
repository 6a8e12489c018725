#!/usr/bin/env bash
# Runs one libFuzzer target for a bounded time, as the ctest test
# fuzz.<name> (tests/CMakeLists.txt):
#
#   run_fuzzer.sh FUZZER SECONDS CORPUS_DIR WORK_DIR
#
# CORPUS_DIR (tests/fuzz/corpus/<name>, committed) is read, never written:
# libFuzzer writes new inputs to the first directory it is given, which here
# is WORK_DIR/new, emptied on every run so each run starts from the kept
# corpus. A crash or a broken property (FUZZ_CHECK aborts) leaves the input in
# WORK_DIR/artifacts/; this script prints its path and the command that
# reproduces it, and fails. The last line reports the executions, for
# docs/RELIABILITY.md.
set -uo pipefail

fuzzer=${1:?usage: run_fuzzer.sh FUZZER SECONDS CORPUS_DIR WORK_DIR}
seconds=${2:?}
corpus=${3:?}
work=${4:?}
name=$(basename "$fuzzer")

rm -rf "$work/new" "$work/artifacts"
mkdir -p "$work/new" "$work/artifacts"
dirs=("$work/new")
if [[ -d "$corpus" ]]; then dirs+=("$corpus"); fi

log="$work/last-run.log"
"$fuzzer" -max_total_time="$seconds" -timeout=20 -rss_limit_mb=2048 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "${dirs[@]}" \
  >"$log" 2>&1
rc=$?

execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
grep -E '^(#[0-9]+ +(INITED|DONE)|stat::)' "$log" || true
if ((rc != 0)); then
  tail -n 60 "$log"
  echo
  echo "$name FAILED (exit $rc). Reproducers:"
  for f in "$work"/artifacts/*; do
    [[ -e "$f" ]] && echo "  $fuzzer $f"
  done
  exit 1
fi
echo "fuzz $name: ${execs:-?} executions in ${seconds}s," \
     "$(ls "$corpus" 2>/dev/null | wc -l) kept inputs," \
     "$(ls "$work/new" | wc -l) new"
