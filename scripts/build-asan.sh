#!/usr/bin/env bash
# Configures and builds build-asan/: everything with clang, AddressSanitizer and
# UndefinedBehaviorSanitizer, plus the libFuzzer targets (cmake/sanitizers.cmake). build/ is not
# touched. Extra arguments go to `cmake --build` (e.g. --target fuzz_npy). Parallel jobs:
# POPRT_JOBS (default 2).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh --clang
CC=clang CXX=clang++ cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -gline-tables-only -DNDEBUG" \
  -DPOPRT_SANITIZE=ON -DPOPRT_BUILD_FUZZERS=ON -DPOPRT_BUILD_BENCH=OFF >/dev/null
cmake --build build-asan -j"${POPRT_JOBS:-2}" "$@"
