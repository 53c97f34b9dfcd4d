#!/usr/bin/env bash
# Installs the build and test dependencies from Debian 12's packages. Idempotent: does nothing
# when everything is already installed. Uses sudo when not run as root.
# --clang: also clang with its sanitizer and libFuzzer runtimes and llvm-symbolizer, for the
# sanitizer and fuzzing builds (scripts/test.sh --sanitize, scripts/fuzz.sh), and clang-format
# (their test run includes format_check, scripts/check_format.sh).
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  libonnx-dev libprotobuf-dev protobuf-compiler
  libeigen3-dev libcli11-dev nlohmann-json3-dev zlib1g-dev libyaml-cpp-dev libssl-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-testdata python3-onnx python3-numpy
  pybind11-dev python3-pytest  # the poprt Python package and its tests
  libcpp-httplib-dev curl  # popef-serve (cpp-httplib) and its end-to-end test (curl)
  nginx-light  # a WebDAV server for the remote compile cache test (tests/e2e/test_remote_cache.py)
  libgrpc++-dev protobuf-compiler-grpc  # popef-serve's gRPC endpoint
  python3-grpcio python3-grpc-tools  # its end-to-end test's client, generated from serve/kserve.proto
  python3-yaml  # the deploy/ manifests' offline test
  python3-torch python3-torchvision  # the exported-model zoo (scripts/zoo.py, tests/e2e/test_zoo.py)
  chromium fonts-dejavu-core  # the profile report's page test (tests/e2e/test_profile_report.py)
)
if [ "${1:-}" = "--clang" ]; then
  packages+=(clang libclang-rt-14-dev llvm clang-format-14)
fi

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "install-deps: need root or sudo to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "install-deps: done"
