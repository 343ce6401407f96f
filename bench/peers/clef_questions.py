#!/usr/bin/env python3
"""One request with k questions against k single-question requests, for the clef contract, in
s1serve (through POST /v1/systemone, the real binary) and in Transformers + torch on the same
weights (tools/reference/clef_contract.py), the same requests for both (docs/benchmarks/questions.md).

    python3 tools/reference/make_tiny_clef.py --scaled /work/bench-models/scaled-clef-flash 4
    python3 bench/peers/clef_questions.py --binary build/release/s1serve \\
        --model /work/bench-models/scaled-clef-flash --reps 3 --threads 2

The request: k = 5 questions cycled over choice (4 options), noul and score (5 levels) about a
150-word ticket state. Each repetition runs, per engine, the one-request side and the k-request side
back to back (alternating which goes first), engines alternating too; medians of the repetitions.
Both engines in BF16 with `--threads` threads (OMP_NUM_THREADS for s1serve, torch.set_num_threads).
Prints one JSON object.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "tools", "reference"))

WORDS = ("the customer reports that the invoice was charged twice after the upgrade and asks for a refund "
         "because the service stopped working yesterday evening while the team was travelling").split()


def requests(k: int, words: int):
    rng = random.Random(0)
    state = "Ticket: " + " ".join(rng.choice(WORDS) for _ in range(words))
    kinds = [
        {"type": "choice", "instructions": "Which team should handle this ticket?",
         "criteria": {"billing": "Payments", "technical": "Bugs", "sales": "Plans", "other": None}},
        {"type": "noul", "instructions": "Does the customer ask for a refund?"},
        {"type": "score", "instructions": "How urgent is this ticket?",
         "criteria": ["none", "low", "medium", "high", "critical"]},
    ]
    questions = {f"q{i}": kinds[i % len(kinds)] for i in range(k)}
    one = {"state": state, "questions": questions}
    singles = [{"state": state, "questions": {key: question}} for key, question in questions.items()]
    return one, singles


def post(port: int, body: dict) -> dict:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/systemone", data=json.dumps(body).encode(),
                                     headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=600) as response:
        return json.loads(response.read())


def timed(run) -> float:
    start = time.perf_counter()
    run()
    return (time.perf_counter() - start) * 1000.0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--binary", required=True)
    parser.add_argument("--model", required=True)
    parser.add_argument("--questions", type=int, default=5)
    parser.add_argument("--state-words", type=int, default=150)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--port", type=int, default=18731)
    args = parser.parse_args()

    import torch
    from clef_contract import ClefDecider

    torch.set_num_threads(args.threads)
    one, singles = requests(args.questions, args.state_words)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    server = subprocess.Popen([args.binary, "serve", "--model", args.model, "--port", str(args.port)], env=env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(600):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{args.port}/readyz", timeout=5)
                break
            except OSError:
                time.sleep(1)
        decider = ClefDecider(args.model, dtype=torch.bfloat16)
        tokens = {"one": post(args.port, one)["usage"]["input_tokens"],
                  "singles": sum(post(args.port, body)["usage"]["input_tokens"] for body in singles)}
        decider.decide(one)  # warm-up
        sides = {
            "s1serve": (lambda: post(args.port, one), lambda: [post(args.port, body) for body in singles]),
            "transformers": (lambda: decider.decide(one), lambda: [decider.decide(body) for body in singles]),
        }
        times = {engine: {"one": [], "singles": []} for engine in sides}
        for rep in range(args.reps):
            engines = list(sides) if rep % 2 == 0 else list(reversed(sides))
            for engine in engines:
                run_one, run_singles = sides[engine]
                order = [("one", run_one), ("singles", run_singles)]
                for name, run in (order if rep % 2 == 0 else reversed(order)):
                    times[engine][name].append(timed(run))
    finally:
        server.terminate()
        server.wait(timeout=60)

    result = {"model": args.model, "questions": args.questions, "threads": args.threads, "reps": args.reps,
              "input_tokens": tokens}
    for engine, sides_ms in times.items():
        ratios = [s / o for o, s in zip(sides_ms["one"], sides_ms["singles"])]
        result[engine] = {"one_ms": statistics.median(sides_ms["one"]),
                          "singles_ms": statistics.median(sides_ms["singles"]),
                          "singles_over_one": statistics.median(ratios)}
    result["transformers_over_s1serve"] = {
        side: statistics.median(t / s for t, s in zip(times["transformers"][side], times["s1serve"][side]))
        for side in ("one", "singles")}
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
