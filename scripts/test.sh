#!/usr/bin/env bash
# Installs the dependencies, builds everything and runs the whole test suite (unit, end-to-end,
# conformance baseline; extra arguments go to ctest). ONNX Runtime (for the round-trip tests) is set up when npm is available.
# --sanitize: the suite under ASan + UBSan instead, with the fuzz smoke run (scripts/sanitize.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  shift
  exec scripts/sanitize.sh "$@"
fi
scripts/install-deps.sh
if command -v npm >/dev/null && command -v node >/dev/null; then
  [ -x ../shared/ort/setup.sh ] && eval "$(../shared/ort/setup.sh)" || echo "test.sh: ONNX Runtime setup failed; its tests will be skipped" >&2
  export NODE_PATH="${NODE_PATH:-}"
fi
scripts/build.sh
cd build
# The zoo label (every exported model, tens of minutes) runs only when asked: scripts/test.sh -L zoo.
[ $# -eq 0 ] && set -- -LE zoo
ctest --output-on-failure -j2 "$@"
