#!/usr/bin/env bash
# The whole tabletfs test suite: four builds, each built and tested.
#
#   part     build dir      compiler / config               runs            budget
#   release  build/release  gcc, Release                    all tests        6 min
#   asan     build/asan     gcc, RelWithDebInfo, ASan+UBSan all tests       10 min
#   tsan     build/tsan     clang-14, RelWithDebInfo, TSan, label            6 min
#                           -Wthread-safety -Werror         `concurrency`
#   fuzz     build/fuzz     clang-14, RelWithDebInfo,       label `fuzz`     3 min
#                           ASan+UBSan+libFuzzer            (30 s a target)
#   whole suite, from clean build dirs, 2 cores:                            25 min
#
# Budgets are for a cold build plus the tests on 2 cores; a part over budget
# is reported, not failed. Measured 2026-11-23 in a fresh clone (~110
# sources, 915 tests, ccache cold for that path): release 3:53 build + 0:42
# tests (bench_quick and the real-mount tests included), asan 12:02 + 1:24,
# tsan 3:41 + 0:04, fuzz 0:24 + 1:33; 23:43 in all (12:55 with a partly
# warm ccache on 2026-11-22). 2026-11-26, 1,192 tests, on a machine loaded
# by benchmarks and other builds: 40:06 (asan 22:28 + 2:24). The tsan part builds everything
# so that clang checks the lock annotations of all code, but runs only the
# concurrency tests. The fuzzers have their own small part: libFuzzer wants
# ASan for parsers, and TABLETFS_FUZZ instruments every source it builds.
#
# Environment:
#   TABLETFS_TEST_PARTS  parts to run, default "release asan tsan fuzz"
#   TABLETFS_JOBS        parallel compile and test jobs, default 2
#
# Runs every part even when one fails, exits non-zero if any failed. The last
# lines printed are ctest summary lines: one per part, then the total.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

parts=(${TABLETFS_TEST_PARTS:-release asan tsan fuzz})
jobs=${TABLETFS_JOBS:-2}
declare -A budget_minutes=([release]=6 [asan]=10 [tsan]=6 [fuzz]=3)
suite_budget_minutes=25
for part in "${parts[@]}"; do
  if [[ -z "${budget_minutes[$part]:-}" ]]; then
    echo "tests/run.sh: unknown part '$part' in TABLETFS_TEST_PARTS" \
         "(release asan tsan fuzz)" >&2
    exit 2
  fi
done

scripts/install-deps.sh test

# Mount tests need /dev/fuse. Try to load the module; if it stays absent the
# mount tests fail (loudly, by design) rather than skip.
if [[ ! -e /dev/fuse ]]; then
  if ((EUID == 0)); then modprobe fuse || true; else sudo modprobe fuse || true; fi
fi
if [[ ! -e /dev/fuse ]]; then
  echo "tests/run.sh: WARNING: /dev/fuse is absent; mount tests will fail" >&2
fi

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:check_initialization_order=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
# Leaks inside Debian's libraries (gRPC's DNS resolver) are not ours:
# tests/lsan.supp names each, with the reason.
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp}
# Debian's gRPC is not built with TSan: tests/tsan.supp names, with the
# reason, what TSan cannot see inside it.
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1:suppressions=$PWD/tests/tsan.supp}

mmss() { printf '%d:%02d' $(($1 / 60)) $(($1 % 60)); }

log_dir=$(mktemp -d "${TMPDIR:-/tmp}/tabletfs-run.XXXXXX")
trap 'rm -rf "$log_dir"' EXIT

timing_lines=()   # "release  build 3:05  tests 0:41  ..." per part
summary_lines=()  # "[release] 100% tests passed, 0 tests failed out of 12"
failed_lines=()   # "asan: 3 - Foo.Bar (Failed)"
failed_parts=()
total_passed=0
total_failed=0
suite_start=$SECONDS

for part in "${parts[@]}"; do
  echo
  echo "==================== $part ===================="
  part_start=$SECONDS
  log="$log_dir/$part.ctest.log"
  built=1
  # The release build also builds the benchmark harness, whose --quick run
  # (ctest label `bench`) keeps it from rotting.
  extra=()
  if [[ "$part" == release ]]; then extra=(-DTABLETFS_BENCH=ON); fi
  build_log="$log_dir/$part.build.log"
  # The tsan part runs only the concurrency tests: it builds only them
  # (and the programs they run), not every test executable under TSan.
  targets=()
  if [[ "$part" == tsan ]]; then targets=(TABLETFS_TARGETS=concurrency_tests); fi
  if ! env "${targets[@]}" scripts/build.sh "$part" "${extra[@]}" 2>&1 |
       tee "$build_log"; then
    built=0
  elif [[ "$part" == release ]]; then
    # mount(8) finds fuse.tabletfs helpers only on its own PATH, so the
    # `mount -t fuse.tabletfs` and fstab tests need the installed daemon.
    if ((EUID == 0)); then
      cmake --install "build/$part" >/dev/null || built=0
    else
      sudo cmake --install "build/$part" >/dev/null || built=0
    fi
  fi
  build_seconds=$((SECONDS - part_start))
  # Every build is free of compiler warnings (a false positive is silenced
  # at its line, with a comment saying why): a warning fails the part.
  # ccache replays a cached compile's warnings, so a warm cache hides none.
  warnings=$(grep -c 'warning:' "$build_log" || true)

  passed=0 failed=0 note=""
  test_start=$SECONDS
  if ((built)); then
    ctest_args=(--test-dir "build/$part" -j "$jobs" --output-on-failure)
    if [[ "$part" == tsan ]]; then
      # Concurrency tests may not exist yet; the other parts must have tests.
      ctest_args+=(-L '^concurrency$' --no-tests=ignore)
    elif [[ "$part" == fuzz ]]; then
      ctest_args+=(-L '^fuzz$' --no-tests=error)
    else
      ctest_args+=(--no-tests=error)
    fi
    ctest_rc=0
    ctest "${ctest_args[@]}" 2>&1 | tee "$log" || ctest_rc=$?
    summary=$(grep -E '^[0-9]+% tests passed, [0-9]+ tests failed out of [0-9]+' \
              "$log" | tail -n 1 || true)
    if [[ "$summary" =~ ^[0-9]+%\ tests\ passed,\ ([0-9]+)\ tests\ failed\ out\ of\ ([0-9]+) ]]; then
      failed=${BASH_REMATCH[1]}
      passed=$((BASH_REMATCH[2] - failed))
    elif grep -q 'No tests were found' "$log"; then
      note="no tests"
    fi
    while IFS= read -r line; do
      failed_lines+=("$part: $line")
    done < <(awk '/^The following tests FAILED:/ {on = 1; next}
                  on && /^[[:space:]]+[0-9]+ - / {sub(/^[[:space:]]+/, ""); print; next}
                  on {on = 0}' "$log")
    if ((ctest_rc != 0 && failed == 0)); then
      failed=1
      note="ctest exited $ctest_rc${note:+, $note}"
      failed_lines+=("$part: $note")
    fi
  else
    failed=1
    note="configure/build failed"
    failed_lines+=("$part: configure/build failed (see the output above)")
  fi
  if ((warnings > 0)); then
    failed=$((failed + 1))
    note="$warnings compiler warnings${note:+, $note}"
    failed_lines+=("$part: $warnings compiler warnings (grep 'warning:' in the build output above)")
  fi
  test_seconds=$((SECONDS - test_start))
  part_seconds=$((SECONDS - part_start))

  over=""
  if ((part_seconds > budget_minutes[$part] * 60)); then over="  OVER BUDGET"; fi
  timing=$(printf '%-8s build %6s  tests %6s  total %6s  budget %2d:00%s' \
           "$part" "$(mmss $build_seconds)" "$(mmss $test_seconds)" \
           "$(mmss $part_seconds)" "${budget_minutes[$part]}" "$over")
  echo "timing: $timing"
  timing_lines+=("$timing")

  total=$((passed + failed))
  if ((failed > 0)); then failed_parts+=("$part"); fi
  total_passed=$((total_passed + passed))
  total_failed=$((total_failed + failed))
  summary_lines+=("$(printf '[%s] %s' "$part" \
    "$(awk -v p=$passed -v f=$failed 'BEGIN {
         t = p + f; pct = t ? p * 100 / t : 100; if (f && pct > 99) pct = 99;
         printf "%d%% tests passed, %d tests failed out of %d", pct + 0.5, f, t }')")${note:+ ($note)}")
done

suite_seconds=$((SECONDS - suite_start))
echo
echo "==================== tabletfs test suite ===================="
for line in "${timing_lines[@]}"; do echo "$line"; done
over=""
if ((suite_seconds > suite_budget_minutes * 60)); then over="  OVER BUDGET"; fi
printf 'suite    %41s  budget %2d:00%s\n' "$(mmss $suite_seconds)" \
       "$suite_budget_minutes" "$over"
if ((${#failed_lines[@]} > 0)); then
  echo
  echo "The following tests FAILED:"
  for line in "${failed_lines[@]}"; do echo "  $line"; done
  # CI shows only the tail of this output: repeat what each failed test
  # asserted, so a failure can be read from there.
  for part in "${failed_parts[@]}"; do
    [[ -f "$log_dir/$part.ctest.log" ]] || continue
    echo
    echo "Assertions that failed in $part (at most 60 lines):"
    grep -E -A4 ': Failure$|Sanitizer|^\[  FAILED  \]' \
      "$log_dir/$part.ctest.log" | head -n 60 || true
  done
fi
echo
if ((${#failed_parts[@]} > 0)); then
  echo "Verdict: FAILED (${failed_parts[*]})"
else
  echo "Verdict: PASSED (${parts[*]})"
fi
for line in "${summary_lines[@]}"; do echo "$line"; done
awk -v p=$total_passed -v f=$total_failed 'BEGIN {
  t = p + f; pct = t ? p * 100 / t : 100; if (f && pct > 99) pct = 99;
  printf "%d%% tests passed, %d tests failed out of %d\n", pct + 0.5, f, t }'
((${#failed_parts[@]} == 0))
