#!/usr/bin/env bash
# Longer fuzzing runs than CI's smoke run: builds build-asan/ (scripts/build-asan.sh), makes the
# seed corpus and runs each libFuzzer target for N seconds (default 600), one after another. The
# corpus each target grows is kept in build-asan/fuzz-work/<name>/corpus and reused by the next
# run (--fresh starts over); a finding is saved beside it and fails the script.
#
#   scripts/fuzz.sh [--seconds N] [--only NAME] [--fresh]
#
# NAME: onnx_import, shape_inference, popef, executable, npy, tensor_proto, serve_request, config,
# host_array.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=600 only="" keep=--keep
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --fresh) keep=""; shift ;;
    *) echo "fuzz.sh: unknown argument $1 (see the comment at the top)" >&2; exit 2 ;;
  esac
done
scripts/build-asan.sh
source scripts/sanitizer-env.sh
/usr/bin/python3 fuzz/make_seeds.py --out build-asan/fuzz-seeds --bin-dir build-asan/bin --per-source 0
status=0
for name in onnx_import shape_inference popef executable npy tensor_proto serve_request config host_array; do
  [ -n "$only" ] && [ "$only" != "$name" ] && continue
  /usr/bin/python3 fuzz/run_fuzzer.py --fuzzer "build-asan/bin/fuzz_$name" --work "build-asan/fuzz-work/$name" \
    --seconds "$seconds" --corpus "build-asan/fuzz-seeds/$name" --corpus "fuzz/regressions/$name" $keep || status=1
done
exit $status
