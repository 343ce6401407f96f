#!/usr/bin/env bash
# System calls per forwarded request, nginx against the s1serve router, in front of the same worker:
# strace -c on each proxy (nginx's worker process; every router thread) during a wrk run at
# concurrency 1 and 32, divided by the requests wrk completed. epoll_wait per request counts the
# trips through the event loop. strace slows the proxies: the counts are what to compare, not speed.
#   bench/router/syscalls_per_request.sh [BINARY] [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
binary=${1:-build/release/s1serve}
seconds=${2:-3}
worker_port=18201 nginx_port=18202 router_port=18203
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$binary" serve --model mock:ramp --port $worker_port --queue 4096 2>/dev/null & pids+=($!)
"$binary" serve --upstream "mock-ramp=http://127.0.0.1:$worker_port" --port $router_port ${ROUTER_FLAGS:-} 2>/dev/null & router=$!
pids+=($router)
mkdir -p "$work"/{body,proxy,fastcgi,uwsgi,scgi}
sed -e "s|@WORKDIR@|$work|g" -e "s|@WORKER_PORT@|$worker_port|" -e "s|@NGINX_PORT@|$nginx_port|" \
  bench/router/nginx.conf.template > "$work/nginx.conf"
nginx -c "$work/nginx.conf" & nginx_master=$!
pids+=($nginx_master)
for port in $worker_port $nginx_port $router_port; do
  for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
done
nginx_worker=$(pgrep -P $nginx_master)
for concurrency in 1 32; do
  for target in nginx:$nginx_port:$nginx_worker s1serve:$router_port:$router; do
    IFS=: read -r name port pid <<<"$target"
    wrk -t1 -c"$concurrency" -d1s -s bench/http/systemone_post.lua "http://127.0.0.1:$port/v1/systemone" >/dev/null  # pools warm
    strace -c -f -p "$pid" -o "$work/strace" 2>/dev/null &
    tracer=$!
    sleep 0.5
    out=$(wrk -t1 -c"$concurrency" -d"${seconds}s" -s bench/http/systemone_post.lua "http://127.0.0.1:$port/v1/systemone")
    sleep 0.3
    kill -INT $tracer; wait $tracer || true
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    echo "== $name concurrency $concurrency: $requests requests; system calls per request (>= 0.01)"
    awk -v n="$requests" 'NR > 2 && $0 !~ /^-/ && $4 / n >= 0.01 {printf "  %-16s %6.2f\n", $NF, $4 / n}' "$work/strace"
  done
done
