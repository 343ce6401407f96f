#!/usr/bin/env bash
# Heap allocations per forwarded request: a uprobe on libc's malloc (`perf probe`, as root), counted
# on the s1serve router process during a wrk run at concurrency 1 and 32 and divided by the requests
# wrk completed. With RECORD=1, also records the allocating call stacks at concurrency 32 and prints
# the most frequent allocating call stacks (where the remaining allocations come from).
#   bench/router/mallocs_per_request.sh [BINARY] [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
binary=${1:-build/release/s1serve}
seconds=${2:-3}
worker_port=18401 router_port=18403
work=$(mktemp -d)
pids=()
libc=$(ldd "$binary" | awk '/libc\.so/ {print $3}')
probe_added=0
cleanup() {
  for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true
  [ $probe_added = 0 ] || perf probe -q -d probe_libc:malloc || true
  rm -rf "$work"
}
trap cleanup EXIT
perf probe -l 2>/dev/null | grep -q 'probe_libc:malloc ' || { perf probe -q -x "$libc" malloc; probe_added=1; }

"$binary" serve --model mock:ramp --port $worker_port --queue 4096 2>/dev/null & pids+=($!)
"$binary" serve --upstream "mock-ramp=http://127.0.0.1:$worker_port" --port $router_port 2>/dev/null & router=$!
pids+=($router)
for port in $worker_port $router_port; do
  for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
done
url="http://127.0.0.1:$router_port/v1/systemone"
for concurrency in 1 32; do
  wrk -t1 -c"$concurrency" -d1s -s bench/http/systemone_post.lua "$url" >/dev/null  # pools and caches warm
  perf stat -e probe_libc:malloc -p "$router" -o "$work/stat" -- sleep "$seconds" &
  stat=$!
  out=$(wrk -t1 -c"$concurrency" -d"${seconds}s" -s bench/http/systemone_post.lua "$url")
  wait $stat
  requests=$(awk '/requests in/ {print $1}' <<<"$out")
  mallocs=$(awk '/probe_libc:malloc/ {gsub(",", "", $1); print $1}' "$work/stat")
  awk -v c="$concurrency" -v n="$requests" -v m="$mallocs" \
    'BEGIN {printf "concurrency %-3s %7d requests %9d mallocs %6.2f per request\n", c, n, m, m / n}'
done
if [ "${RECORD:-0}" = 1 ]; then
  perf record -q -e probe_libc:malloc --call-graph dwarf -p "$router" -o "$work/perf.data" -- sleep 1 &
  recorder=$!
  wrk -t1 -c32 -d1s -s bench/http/systemone_post.lua "$url" >/dev/null
  wait $recorder
  # Each allocation's four innermost callers above the allocator, counted.
  perf script -i "$work/perf.data" -F ip,sym 2>/dev/null | awk '
    /^$/ { if (stack != "") count[stack]++; stack = ""; depth = 0; next }
    { sub(/^ *[0-9a-f]+ /, ""); sub(/\(.*$/, ""); name = substr($0, 1, 90) }
    name ~ /malloc|^operator new|__new_allocator|allocate|_M_create|_M_construct|_M_realloc/ && depth == 0 { next }
    depth < 4 { stack = stack (depth ? " <- " : "") name; depth++ }
    END { for (s in count) printf "%7d %s\n", count[s], s }' | sort -rn | head -${LINES_SHOWN:-40}
fi
