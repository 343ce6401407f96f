#!/bin/bash
# LAYA-shaped encoder timing, s1serve against laya's own Agent (Transformers on torch), interleaved:
# each round runs every peer and every s1serve precision once, so machine noise hits all of them alike.
# One JSON line per run; docs/benchmarks/modernbert.md takes medians of the per-round ratios.
#
#   bench/peers/laya_compare.sh MODEL_DIR TOKENS [ROUNDS] [REPS]
# MODEL_DIR from `tools/reference/make_tiny_laya.py --large DIR`; 4 questions of TOKENS tokens each.
set -euo pipefail
model=$1 tokens=$2 rounds=${3:-3} reps=${4:-5}
here=$(cd "$(dirname "$0")/../.." && pwd)
python=${PYTHON:-/work/.venv-ref/bin/python}
bench=${BENCH:-$here/build/release/bench/s1_modernbert_bench}
for round in $(seq "$rounds"); do
  for precision in fp32 bf16; do
    amp=$([ "$precision" = bf16 ] && echo bf16 || echo "")
    LAYA_CPU_AMP=$amp "$python" "$here/bench/peers/laya_peers.py" --model-dir "$model" --tokens "$tokens" \
      --reps "$reps" --warmup 1 --precision "$precision" 2>/dev/null | sed "s/^{/{\"round\": $round, /"
    "$bench" --model-dir "$model" --tokens "$tokens" --reps "$reps" --warmup 1 --precision "$precision" |
      sed "s/^{/{\"round\": $round, \"peer\": \"s1serve_$precision\", /"
  done
done
