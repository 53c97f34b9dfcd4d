#!/usr/bin/env bash
# Load run of popef-serve with wrk (Debian: apt-get install wrk) on loopback: compiles
# models/mlp.onnx for batches of 4, serves it with dynamic batching on and off, sends 1-row
# KServe v2 JSON requests from C connections for D seconds each time, and prints requests/s, p99
# and the batches the server ran. Not a test: run it by hand after a build.
# Usage: bench/serve_load.sh [-c CONNECTIONS (16)] [-d SECONDS (10)] [-t WRK_THREADS (2)]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${POPRT_BIN:-$here/../build/bin}
connections=16 duration=10 threads=2
while getopts "c:d:t:" opt; do
  case $opt in
    c) connections=$OPTARG ;; d) duration=$OPTARG ;; t) threads=$OPTARG ;;
    *) echo "usage: $0 [-c CONNECTIONS] [-d SECONDS] [-t WRK_THREADS]" >&2; exit 2 ;;
  esac
done
command -v wrk >/dev/null || { echo "serve_load: needs wrk (apt-get install wrk)" >&2; exit 1; }
work=$(mktemp -d)
server=""
cleanup() { [ -n "$server" ] && kill -TERM "$server" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT

"$bin/poprt-convert" --input_model "$here/../models/mlp.onnx" --batch_size 4 --export_popef \
  --output_dir "$work/mlp" >/dev/null
/usr/bin/python3 - "$work/body.json" <<'PY'
import json, random, sys
random.seed(0)
x = [random.uniform(-1, 1) for _ in range(64)]
json.dump({"inputs": [{"name": "x", "shape": [1, 64], "datatype": "FP32", "data": x}]}, open(sys.argv[1], "w"))
PY

run() {  # run LABEL SERVE_FLAGS...
  local label=$1; shift
  "$bin/popef-serve" --model "mlp=$work/mlp/executable.popef" --port 0 --grpc_port -1 "$@" >"$work/serve.log" 2>&1 &
  server=$!
  local port=""
  for _ in $(seq 100); do
    port=$(grep -o 'listening on http://127.0.0.1:[0-9]*' "$work/serve.log" | grep -o '[0-9]*$' || true)
    [ -n "$port" ] && break
    sleep 0.1
  done
  [ -n "$port" ] || { cat "$work/serve.log" >&2; exit 1; }
  local result
  result=$(BODY_FILE="$work/body.json" wrk -t "$threads" -c "$connections" -d "${duration}s" --timeout 10s \
    -s "$here/serve_load.lua" "http://127.0.0.1:$port/v2/models/mlp/infer" | grep '^RESULT')
  local batches rows
  batches=$(curl -s "http://127.0.0.1:$port/metrics" | grep '^poprt_inference_exec_count_total' | awk '{print $2}')
  rows=$(curl -s "http://127.0.0.1:$port/metrics" | grep '^poprt_inference_count_total' | awk '{print $2}')
  kill -TERM "$server"
  wait "$server" || { echo "serve_load: popef-serve exited $?" >&2; exit 1; }
  server=""
  printf '%-34s %s batches %s rows/batch %s\n' "$label" "${result#RESULT }" "$batches" \
    "$(awk -v r="$rows" -v b="$batches" 'BEGIN { printf "%.2f", (b > 0 ? r / b : 0) }')"
}

echo "mlp (batch 4), 1-row JSON requests, $connections connections x ${duration}s, wrk -t $threads"
run "batching off" --dynamic_batching=false
run "batching on (max delay 0)"
run "batching on (max delay 2000 us)" --max_queue_delay_us 2000
