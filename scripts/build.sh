#!/usr/bin/env bash
# Configures and builds one of the standard builds into build/<part>:
#
#   scripts/build.sh release   gcc, Release                        build/release
#   scripts/build.sh asan      gcc, RelWithDebInfo, ASan + UBSan   build/asan
#   scripts/build.sh tsan      clang-14, RelWithDebInfo, TSan,     build/tsan
#                              -Wthread-safety -Werror
#   scripts/build.sh fuzz      clang-14, RelWithDebInfo, ASan +    build/fuzz
#                              UBSan + libFuzzer; builds only the
#                              fuzz targets (tests/fuzz/*_fuzz.cc)
#
# Extra arguments go to cmake's configure step (e.g. -DTABLETFS_BENCH=ON).
# This is the one definition of each build: tests/run.sh and
# examples/quickstart.sh both call it. TABLETFS_JOBS (default 2) caps -j.
# TABLETFS_TARGETS (space-separated, e.g. "tabletfs tabletctl") builds only
# those targets; the quick start builds just the daemon and the CLI.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
targets=()
part=${1:?usage: scripts/build.sh release|asan|tsan|fuzz [cmake args...]}
shift

case "$part" in
  release)
    compilers=(CC=gcc CXX=g++)
    config=(-DCMAKE_BUILD_TYPE=Release -DTABLETFS_SANITIZE=) ;;
  asan)
    compilers=(CC=gcc CXX=g++)
    config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTABLETFS_SANITIZE=address) ;;
  tsan)
    # Thread-safety warnings are errors under clang (top-level CMakeLists).
    compilers=(CC=clang-14 CXX=clang++-14)
    config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTABLETFS_SANITIZE=thread) ;;
  fuzz)
    # ASan + UBSan, not TSan: the fuzz targets are single-threaded parsers,
    # where memory errors are what matters. Only the fuzz targets and the
    # sources they use are built (target tabletfs_fuzzers).
    compilers=(CC=clang-14 CXX=clang++-14)
    config=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DTABLETFS_SANITIZE=address
            -DTABLETFS_FUZZ=ON -DTABLETFS_TESTS=OFF -DTABLETFS_API=OFF)
    targets=(--target tabletfs_fuzzers) ;;
  *) echo "scripts/build.sh: unknown build '$part' (release|asan|tsan|fuzz)" >&2
     exit 2 ;;
esac

dir="$root/build/$part"
generator=()
if [[ ! -f "$dir/CMakeCache.txt" ]]; then
  # Ninja for fresh trees; an existing tree keeps the generator it has.
  if command -v ninja >/dev/null; then generator=(-G Ninja); fi
fi

if [[ -n "${TABLETFS_TARGETS:-}" ]]; then
  read -r -a names <<<"$TABLETFS_TARGETS"
  targets=(--target "${names[@]}")
fi

env "${compilers[@]}" cmake -S "$root" -B "$dir" "${generator[@]}" \
  "${config[@]}" "$@"
cmake --build "$dir" -j "${TABLETFS_JOBS:-2}" "${targets[@]}"
