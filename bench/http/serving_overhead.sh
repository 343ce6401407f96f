#!/usr/bin/env bash
# Serving overhead with the instant test backend (mock-ramp): wrk at concurrency 1 and 32, keep-alive,
# a small 3-question decision; RUNS repetitions of SECONDS each, medians reported.
#   bench/http/serving_overhead.sh [BINARY] [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
binary=${1:-build/release/s1serve}
runs=${2:-5}
seconds=${3:-5}
port=18090
"$binary" serve --model mock:ramp --port "$port" --queue 1024 2>/dev/null &
server=$!
trap 'kill -TERM $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
for _ in $(seq 50); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
for concurrency in 1 32; do
  rps=() p50=() p99=()
  for _ in $(seq "$runs"); do
    out=$(wrk -t1 -c"$concurrency" -d"${seconds}s" --latency -s bench/http/systemone_post.lua \
      "http://127.0.0.1:$port/v1/systemone")
    if grep -q "Non-2xx\|Socket errors" <<<"$out"; then echo "errors in run:"; echo "$out"; exit 1; fi
    rps+=("$(awk '/Requests\/sec/ {print $2}' <<<"$out")")
    p50+=("$(awk '$1=="50%" {print $2}' <<<"$out")")
    p99+=("$(awk '$1=="99%" {print $2}' <<<"$out")")
  done
  median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
  # wrk prints latencies with units (us/ms); sort -g orders same-unit values, so report them raw.
  echo "concurrency $concurrency: requests/s median $(median "${rps[@]}") (runs: ${rps[*]}); p50 runs: ${p50[*]}; p99 runs: ${p99[*]}"
done
