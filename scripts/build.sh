#!/usr/bin/env bash
# Configures and builds into build/ (binaries in build/bin). Extra arguments go to `cmake --build`
# (e.g. --target poprt-convert).
set -euo pipefail
cd "$(dirname "$0")/.."
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j2 "$@"
