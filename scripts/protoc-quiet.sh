#!/usr/bin/env bash
# Runs protoc (the command line given) and drops its notes about unused
# imports in Google's .proto files, which are not ours to fix; every other
# line and protoc's exit status are kept. Used by cmake/bigtable_protos.cmake.
set -uo pipefail
"$@" 2> >(grep -v 'warning: Import .* is unused\.' >&2)
