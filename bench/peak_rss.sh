#!/usr/bin/env bash
# Peak resident memory of s1serve serving one model: start it, wait for /health (a real warm-up
# inference has run), send one System One request, then read the process's VmHWM. Prints the
# model directory's safetensors bytes, the peak RSS and the RSS after the request, each also as a
# ratio to the safetensors bytes (docs/benchmarks/memory.md).
#
#   bench/peak_rss.sh MODEL_DIR [BINARY] [PORT]    (one request after warm-up; ~1 min for 0.6B)
set -euo pipefail
model=$1
binary=${2:-build/release/s1serve}
# A free port of our own: a server another process left on a fixed port would answer /health.
port=${3:-$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')}
log=$(mktemp) body=$(mktemp)
"$binary" serve --model "$model" --port "$port" >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true; rm -f "$log" "$body"' EXIT
for _ in $(seq 600); do
  curl -s "localhost:$port/health" 2>/dev/null | grep -q '"status":"ok"' && break
  kill -0 $server 2>/dev/null || { cat "$log" >&2; exit 1; }
  sleep 0.5
done
curl -s "localhost:$port/health" | grep -q '"status":"ok"' || { echo "not ready after 300 s" >&2; exit 1; }
name=$(curl -s "localhost:$port/v1/models" | python3 -c 'import json, sys; print(json.load(sys.stdin)["data"][0]["id"])')
status=$(curl -s -o "$body" -w "%{http_code}" "localhost:$port/v1/systemone" -H 'content-type: application/json' -d '{"model": "'"$name"'",
  "state": "Ticket: I was charged twice for my subscription this month.",
  "questions": {"refund": {"type": "noul", "instructions": "Does the customer ask for a refund?"}}}')
[[ $status == 200 ]] || { echo "request failed: HTTP $status: $(cat "$body")" >&2; exit 1; }
peak_kb=$(awk '/^VmHWM/ {print $2}' /proc/$server/status)
resident_kb=$(awk '/^VmRSS/ {print $2}' /proc/$server/status)
weights=$(stat -L -c %s "$model"/*.safetensors | awk '{s += $1} END {print s}')
python3 -c "w, p, r = $weights, $peak_kb * 1024, $resident_kb * 1024
print(f'safetensors {w / 2**20:.0f} MiB, peak RSS {p / 2**20:.0f} MiB ({p / w:.2f}x), RSS after the request {r / 2**20:.0f} MiB ({r / w:.2f}x)')"
