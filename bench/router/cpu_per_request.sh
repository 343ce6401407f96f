#!/usr/bin/env bash
# CPU time each proxy spends per forwarded request (perf stat's task-clock on the proxy process during
# a wrk run, divided by the requests), nginx and one s1serve router per BINARY, in front of the same
# worker, at concurrency 1 and 32. Steadier than latency percentiles on a shared machine.
#   bench/router/cpu_per_request.sh BINARY [BINARY...]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
[ $# -ge 1 ] || { echo "usage: $0 BINARY [BINARY...]" >&2; exit 2; }
worker_port=18301 nginx_port=18302
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$1" serve --model mock:ramp --port $worker_port --queue 4096 2>/dev/null & pids+=($!)
mkdir -p "$work"/{body,proxy,fastcgi,uwsgi,scgi}
sed -e "s|@WORKDIR@|$work|g" -e "s|@WORKER_PORT@|$worker_port|" -e "s|@NGINX_PORT@|$nginx_port|" \
  bench/router/nginx.conf.template > "$work/nginx.conf"
nginx -c "$work/nginx.conf" & nginx_master=$!
pids+=($nginx_master)
targets=()
port=18310
for binary in "$@"; do
  port=$((port + 1))
  "$binary" serve --upstream "mock-ramp=http://127.0.0.1:$worker_port" --port $port 2>/dev/null & pids+=($!)
  targets+=("$binary:$port:$!")
done
for port in $worker_port $nginx_port $(seq 18311 $port); do
  for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
done
targets=("nginx:$nginx_port:$(pgrep -P $nginx_master)" "${targets[@]}")
for concurrency in 1 32; do
  for target in "${targets[@]}"; do
    IFS=: read -r name port pid <<<"$target"
    wrk -t1 -c"$concurrency" -d1s -s bench/http/systemone_post.lua "http://127.0.0.1:$port/v1/systemone" >/dev/null  # pools warm
    perf stat -e task-clock -p "$pid" -o "$work/stat" -- sleep 3 &
    stat=$!
    out=$(wrk -t1 -c"$concurrency" -d3s -s bench/http/systemone_post.lua "http://127.0.0.1:$port/v1/systemone")
    wait $stat
    if grep -q "Non-2xx\|Socket errors" <<<"$out"; then echo "errors for $name:"; echo "$out"; exit 1; fi
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    milliseconds=$(awk '/task-clock/ {gsub(",", "", $1); print $1}' "$work/stat")
    awk -v c="$concurrency" -v name="$name" -v n="$requests" -v ms="$milliseconds" \
      'BEGIN {printf "concurrency %-3s %-40s %6d requests %6.1f us CPU per request\n", c, name, n, ms * 1000 / n}'
  done
done
