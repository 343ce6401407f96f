"""Peer side of the LAYA benchmark (docs/benchmarks/modernbert.md): laya's own Agent forward.

The same work bench/modernbert_bench.cpp times: `--questions` rows of `--tokens` random token ids,
`--options` [MASK] markers each, packed into one batch and run through the encoder and laya's decision
head (`Agent._forward`, the call laya's `system_one` makes). laya runs fp32 on a CPU unless
LAYA_CPU_AMP=bf16 asks for bf16 autocast; both are timed, each in its own process.

    /work/.venv-ref/bin/python bench/peers/laya_peers.py --model-dir /work/bench-models/laya-large

The checkpoint comes from `tools/reference/make_tiny_laya.py --large DIR` and carries no tokenizer;
laya only needs one for its pad id, so the tiny fixture's is lent to it.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE_TOKENIZER = REPO / "tests" / "fixtures" / "tiny-laya" / "tokenizer"


def agent_directory(model_dir: str, scratch: str) -> str:
    """A directory laya's Agent accepts: the checkpoint's files, plus a tokenizer if it has none."""
    if os.path.isdir(os.path.join(model_dir, "tokenizer")):
        return model_dir
    for name in os.listdir(model_dir):
        os.symlink(os.path.join(model_dir, name), os.path.join(scratch, name))
    os.symlink(FIXTURE_TOKENIZER, os.path.join(scratch, "tokenizer"))
    return scratch


def time_one(args: argparse.Namespace) -> None:
    import numpy as np
    import torch
    from laya import Agent
    from laya.common import collate_items

    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as scratch:
        agent = Agent(agent_directory(args.model_dir, scratch), device="cpu")
    vocab = agent.model.encoder.config.vocab_size if hasattr(agent.model, "encoder") else 50368
    generator = np.random.default_rng(1)
    markers = [1 + 2 * m for m in range(args.options)]
    items = [{"ids": [int(x) for x in generator.integers(0, vocab, args.tokens)], "markers": markers,
              "qtype": q % 3} for q in range(args.questions)]
    batch = collate_items([items], agent.tok.pad_token_id)
    with torch.inference_mode():
        for _ in range(args.warmup):
            agent._forward(batch)
        samples = []
        for _ in range(args.reps):
            start = time.perf_counter()
            agent._forward(batch)
            samples.append((time.perf_counter() - start) * 1e3)
    samples.sort()
    pick = lambda q: samples[min(len(samples) - 1, int(q * len(samples)))]
    print(json.dumps({"peer": "laya_" + ("bf16" if agent.amp_enabled else "fp32"), "threads": args.threads,
                      "tokens": args.tokens, "questions": args.questions,
                      "request_ms": {"median": pick(0.5), "p10": pick(0.1), "p90": pick(0.9)},
                      "torch": torch.__version__}), flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--tokens", type=int, default=512)
    parser.add_argument("--questions", type=int, default=4)
    parser.add_argument("--options", type=int, default=4)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--reps", type=int, default=10)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--precision", choices=("fp32", "bf16"),
                        help="time one precision in this process (the default runs both, one process each)")
    args = parser.parse_args()
    if args.precision:
        time_one(args)
        return
    for precision in ("fp32", "bf16"):
        env = dict(os.environ, LAYA_CPU_AMP="bf16" if precision == "bf16" else "")
        subprocess.run([sys.executable, __file__, *sys.argv[1:], "--precision", precision], env=env, check=True)


if __name__ == "__main__":
    main()
