#!/usr/bin/env bash
# Latency the s1serve router adds in front of a worker, against nginx as a plain reverse proxy, in one
# run: worker = s1serve with the instant test backend; wrk at concurrency 1 and 32 against the worker
# directly, through nginx and through the s1serve router. The targets take turns within each of RUNS
# rounds (direct, nginx, router at 1, then at 32), so a slow spell of the machine hits all three
# alike; each round's added latency is the proxy's p50 (p99) minus the worker's own in that round.
# Reported: medians over the rounds, and in how many rounds the router added no more than nginx.
#   bench/router/router_vs_nginx.sh [BINARY] [RUNS] [SECONDS]
# Environment: ROUTER_FLAGS (e.g. "--http-threads 1"), NGINX_WORKERS (nginx's worker_processes, 1),
# CONCURRENCIES (the wrk connection counts, "1 32").
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
# shellcheck disable=SC2086  # ROUTER_FLAGS is a list of flags
"$binary" serve --upstream "mock-ramp=http://127.0.0.1:$worker_port" --port $router_port ${ROUTER_FLAGS:-} 2>/dev/null & pids+=($!)
mkdir -p "$work"/{body,proxy,fastcgi,uwsgi,scgi}
sed -e "s|@WORKDIR@|$work|g" -e "s|@WORKER_PORT@|$worker_port|" -e "s|@NGINX_PORT@|$nginx_port|" \
  -e "s|^worker_processes 1;|worker_processes ${NGINX_WORKERS:-1};|" \
  bench/router/nginx.conf.template > "$work/nginx.conf"
nginx -c "$work/nginx.conf" & pids+=($!)
for port in $worker_port $nginx_port $router_port; do
  for _ in $(seq 100); do curl -sf "localhost:$port/health" >/dev/null && break; sleep 0.1; done
done

to_ms() { awk '{v=$1; if (v ~ /us$/) {sub(/us$/,"",v); v/=1000} else if (v ~ /ms$/) {sub(/ms$/,"",v)} else if (v ~ /s$/) {sub(/s$/,"",v); v*=1000}; printf "%.3f", v}'; }
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

targets=(direct:$worker_port nginx:$nginx_port s1serve:$router_port)
# Pools warm, connections made.
for target in "${targets[@]}"; do
  wrk -t1 -c32 -d1s -s bench/http/systemone_post.lua "http://127.0.0.1:${target##*:}/v1/systemone" >/dev/null
done
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
declare -A rps p50 p99
for _ in $(seq "$runs"); do
  for concurrency in ${CONCURRENCIES:-1 32}; do
    for target in "${targets[@]}"; do
      name=${target%%:*} port=${target##*:}
      out=$(wrk -t1 -c"$concurrency" -d"${seconds}s" --latency -s bench/http/systemone_post.lua "http://127.0.0.1:$port/v1/systemone")
      if grep -q "Non-2xx\|Socket errors" <<<"$out"; then echo "errors for $name:"; echo "$out"; exit 1; fi
      key=$name/$concurrency
      rps[$key]+="$(awk '/Requests\/sec/ {print $2}' <<<"$out") "
      p50[$key]+="$(awk '$1=="50%" {print $2}' <<<"$out" | to_ms) "
      p99[$key]+="$(awk '$1=="99%" {print $2}' <<<"$out" | to_ms) "
    done
  done
done

printf '%-10s %-5s %10s %9s %9s   %s\n' target conc "req/s" "p50 ms" "p99 ms" "(medians of $runs rounds)"
for concurrency in ${CONCURRENCIES:-1 32}; do
  for target in "${targets[@]}"; do
    key=${target%%:*}/$concurrency
    # shellcheck disable=SC2086  # word lists
    printf '%-10s %-5s %10s %9s %9s\n' "${target%%:*}" "$concurrency" "$(median ${rps[$key]})" "$(median ${p50[$key]})" "$(median ${p99[$key]})"
  done
done
# p50: the latency each proxy adds over the worker alone in the same round. p99: the proxies' own
# p99s compared (the worker's tail at 32 exceeds what either proxy lets through, so an added p99
# can be negative).
for concurrency in ${CONCURRENCIES:-1 32}; do
  # shellcheck disable=SC2206  # word lists
  direct_p50=(${p50[direct/$concurrency]}) nginx_p50=(${p50[nginx/$concurrency]}) router_p50=(${p50[s1serve/$concurrency]})
  # shellcheck disable=SC2206
  nginx_p99=(${p99[nginx/$concurrency]}) router_p99=(${p99[s1serve/$concurrency]})
  router_added=() nginx_added=() p99_ratio=() p50_met=0 p99_met=0
  for i in "${!direct_p50[@]}"; do
    router_added+=("$(awk -v a="${router_p50[$i]}" -v d="${direct_p50[$i]}" 'BEGIN {printf "%.3f", a - d}')")
    nginx_added+=("$(awk -v a="${nginx_p50[$i]}" -v d="${direct_p50[$i]}" 'BEGIN {printf "%.3f", a - d}')")
    p99_ratio+=("$(awk -v r="${router_p99[$i]}" -v n="${nginx_p99[$i]}" 'BEGIN {printf "%.2f", r / n}')")
    if awk -v r="${router_p50[$i]}" -v n="${nginx_p50[$i]}" 'BEGIN {exit !(r <= n)}'; then p50_met=$((p50_met + 1)); fi
    if awk -v q="${p99_ratio[-1]}" 'BEGIN {exit !(q <= 1.5)}'; then p99_met=$((p99_met + 1)); fi
  done
  echo "concurrency $concurrency p50 added per round (ms), router: ${router_added[*]}; nginx: ${nginx_added[*]}"
  printf 'concurrency %-3s p50 added over the worker: router %s ms, nginx %s ms (medians of the rounds); router <= nginx in %d of %d rounds\n' \
    "$concurrency" "$(median "${router_added[@]}")" "$(median "${nginx_added[@]}")" "$p50_met" "${#direct_p50[@]}"
  printf 'concurrency %-3s p99 router / nginx: %s (median of the rounds); <= 1.5 in %d of %d rounds\n' \
    "$concurrency" "$(median "${p99_ratio[@]}")" "$p99_met" "${#direct_p50[@]}"
done
