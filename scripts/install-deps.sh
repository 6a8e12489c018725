#!/usr/bin/env bash
# Installs the Debian packages tabletfs needs that are not installed yet.
#
#   scripts/install-deps.sh build   build and mount (examples/quickstart.sh)
#   scripts/install-deps.sh test    also what tests/run.sh needs (default)
#   scripts/install-deps.sh bench   build, plus LevelDB, RocksDB and Google
#                                   Benchmark for bench/run.sh (issue 8)
#
# Checks each package with dpkg -s first, so a machine that has everything
# runs no apt-get at all (and needs neither root nor network). Uses sudo when
# not root. Debian 12 (bookworm) package names.
set -euo pipefail

build_packages=(
  build-essential cmake ninja-build pkg-config ccache
  libfuse3-dev fuse3 liburing-dev liblz4-dev libxxhash-dev libgtest-dev libgmock-dev
  libgrpc++-dev libprotobuf-dev protobuf-compiler protobuf-compiler-grpc
  libre2-dev
)
test_packages=(
  libbenchmark-dev clang-14 libclang-rt-14-dev util-linux psmisc rsync strace
  python3 openssl
)

bench_packages=(libleveldb-dev librocksdb-dev libbenchmark-dev)

case "${1:-test}" in
  build) wanted=("${build_packages[@]}") ;;
  bench) wanted=("${build_packages[@]}" "${bench_packages[@]}") ;;
  # The suite runs bench/run.sh --quick (release part), so it needs the
  # baseline engines too.
  test) wanted=("${build_packages[@]}" "${test_packages[@]}" "${bench_packages[@]}") ;;
  *) echo "usage: $0 [build|test|bench]" >&2; exit 2 ;;
esac

missing=()
# npm fetches the pinned Bigtable .proto packages once (cmake/
# bigtable_protos.cmake). A machine whose Node.js came from elsewhere keeps
# its npm; only where there is none is Debian's installed.
if ! command -v npm >/dev/null; then missing+=(npm); fi
for package in "${wanted[@]}"; do
  if ! dpkg -s "$package" 2>/dev/null | grep -q '^Status: install ok installed'; then
    missing+=("$package")
  fi
done
if ((${#missing[@]} == 0)); then
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
sudo=()
if ((EUID != 0)); then
  sudo=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -q
"${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
