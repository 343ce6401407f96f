#!/bin/bash
# Batching off vs on for the default model over HTTP (docs/benchmarks/batching.md): alternating rounds,
# a fresh server per round and mode, concurrency 1, 4 and 16. Prints "round mode concurrency req/s p50".
#   bench/http/batching_on_off.sh [build/release/s1serve] [rounds]
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${1:-$ROOT/build/release/s1serve}
ROUNDS=${2:-3}
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
# The 3-question decision of bench/minilm_bench.cpp, one workload line.
python3 - "$ROOT/bench/minilm_bench.cpp" "$WORK/decision.jsonl" <<'PY'
import json, re, sys
body = re.search(r'R"\((\{"state".*?)\)"', open(sys.argv[1]).read(), re.S).group(1)
open(sys.argv[2], "w").write(json.dumps({"request": json.loads(body)}) + "\n")
PY
echo '{"models": [{"source": "minilm", "batch": {"max_requests": 1}}]}' > "$WORK/off.json"
echo '{"models": [{"source": "minilm", "batch": {"max_requests": 16, "max_tokens": 8192, "max_wait_us": 500}}]}' > "$WORK/on.json"
for round in $(seq "$ROUNDS"); do
  for mode in off on; do
    "$BIN" serve --config "$WORK/$mode.json" --port 18935 >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do curl -sf localhost:18935/readyz >/dev/null && break; sleep 0.2; done
    for c in 1 4 16; do
      "$BIN" bench --url http://127.0.0.1:18935 --workload "$WORK/decision.jsonl" --concurrency "$c" \
        --requests 400 --warmup 16 --out "$WORK/r.json" >/dev/null 2>&1
      python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print('$round $mode', $c, round(d['requests_per_second'], 1), round(d['latency_ms']['p50'], 2))" "$WORK/r.json"
    done
    kill "$pid"; wait "$pid" 2>/dev/null || true
  done
done
