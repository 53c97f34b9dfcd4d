#!/usr/bin/env bash
# Checks (or, with --fix, applies) .clang-format on every C and C++ file of the project. Needs
# clang-format 14 (scripts/install-deps.sh --clang installs it); the format_check test runs this.
set -euo pipefail
cd "$(dirname "$0")/.."
formatter=$(command -v clang-format-14 || command -v clang-format)
mode=(--dry-run --Werror)
[ "${1:-}" = "--fix" ] && mode=(-i)
find lib passes codegen popef sim runtime converter tools serve python examples tests fuzz bench \
    \( -name '*.cpp' -o -name '*.h' -o -name '*.c' \) -not -path 'fuzz/regressions/*' -print0 |
  xargs -0 "$formatter" --style=file "${mode[@]}"
