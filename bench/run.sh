#!/usr/bin/env bash
# Benchmarks poprt-convert and popef-run against ONNX Runtime on ../shared/models, side by side in
# one run (bench/run.py has the details). Usage: bench/run.sh [--filter REGEX] [--iterations N] ...
# Needs a build (scripts/build.sh) and Node.js for ONNX Runtime (../shared/ort/setup.sh installs it).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
eval "$("$here/../../shared/ort/setup.sh")"
exec /usr/bin/python3 "$here/run.py" "$@"
