-- wrk script for bench/serve_load.sh: POSTs the KServe v2 infer request in $BODY_FILE to the URL
-- wrk is given, and prints the p50/p99 latency and the request rate in one line at the end.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
local f = assert(io.open(os.getenv("BODY_FILE"), "rb"))
wrk.body = f:read("*a")
f:close()

function done(summary, latency, requests)
  local seconds = summary.duration / 1e6
  local errors = summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout +
                 summary.errors.status
  io.write(string.format("RESULT requests %d errors %d req/s %.1f p50_ms %.2f p99_ms %.2f\n", summary.requests,
                         errors, summary.requests / seconds, latency:percentile(50) / 1000,
                         latency:percentile(99) / 1000))
end
