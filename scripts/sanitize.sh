#!/usr/bin/env bash
# The whole test suite under clang's AddressSanitizer + UndefinedBehaviorSanitizer, in build-asan/
# (scripts/build-asan.sh; build/ is untouched): unit, end-to-end, conformance baseline and the
# ../shared/models runs, the malformed-input corpus and the libFuzzer smoke run (label fuzz: nine
# targets x 15 s, about 70 s at -j2). About 10 minutes on 2 cores after the build; the slow
# tests get longer timeouts in this build (tests/CMakeLists.txt). Run by
# `scripts/test.sh --sanitize`; extra arguments go to ctest (e.g. -LE conformance to skip the
# baseline, -L fuzz for the smoke run alone).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build-asan.sh
source scripts/sanitizer-env.sh
cd build-asan
ctest --output-on-failure -j2 "$@"
