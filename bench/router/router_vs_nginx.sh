#!/usr/bin/env bash
# Latency the s1serve router adds in front of a worker, against nginx as a plain reverse proxy, in one
# run: worker = s1serve with the instant test backend; wrk at concurrency 1 and 32 against the worker
# directly, through nginx and through the s1serve router, RUNS repetitions each, medians reported.
#   bench/router/router_vs_nginx.sh [BINARY] [RUNS] [SECONDS]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
binary=${1:-build/release/s1serve}
runs=${2:-5}
seconds=${3:-5}
worker_port=18101 nginx_port=18102 router_port=18103
work=$(mktemp -d)
pids=()
cleanup() { for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done; wait 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

"$binary" serve --model mock:ramp --port $worker_port --queue 4096 2>/dev/null & pids+=($!)
"$binary" serve --upstream "mock-ramp=http://127.0.0.1:$worker_port" --port $router_port ${ROUTER_FLAGS:-} 2>/dev/null & pids+=($!)
mkdir -p "$work"/{body,proxy,fastcgi,uwsgi,scgi}
sed -e "s|@WORKDIR@|$work|g" -e "s|@WORKER_PORT@|$worker_port|" -e "s|@NGINX_PORT@|$nginx_port|" \
  bench/router/nginx.conf.template > "$work/nginx.conf"
nginx -c "$work/nginx.conf" & pids+=($!)
for port in $worker_port $nginx_port $router_port; do
  for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
done

to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; printf "%.3f", v}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-12s %-6s %10s %10s %10s\n' target conc "req/s" "p50 ms" "p99 ms"
for concurrency in 1 32; do
  for target in direct:$worker_port nginx:$nginx_port s1serve:$router_port; do
    name=${target%%:*} port=${target##*:}
    rps=() p50=() p99=()
    # Interleave repetitions over targets would be fairer still; each target's runs are back to back.
    for _ in $(seq "$runs"); do
      out=$(wrk -t1 -c"$concurrency" -d"${seconds}s" --latency -s bench/http/systemone_post.lua "http://127.0.0.1:$port/v1/systemone")
      if grep -q "Non-2xx\|Socket errors" <<<"$out"; then echo "errors for $name:"; echo "$out"; exit 1; fi
      rps+=("$(awk '/Requests\/sec/ {print $2}' <<<"$out")")
      p50+=("$(awk '$1=="50%" {print $2}' <<<"$out" | to_ms)")
      p99+=("$(awk '$1=="99%" {print $2}' <<<"$out" | to_ms)")
    done
    printf '%-12s %-6s %10s %10s %10s\n' "$name" "$concurrency" "$(median "${rps[@]}")" "$(median "${p50[@]}")" "$(median "${p99[@]}")"
  done
done
