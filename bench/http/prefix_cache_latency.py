#!/usr/bin/env python3
"""The repeated-state workload of docs/benchmarks/batching.md: a ~300-token state asked three
~20-token questions, then the same state asked three other questions (starting with the same words,
so that both requests' shared prefixes end on the same token); the second request's latency
with the prefix cache on vs off (models[].prefix_cache 0). Each round uses a fresh state, so the
first request never hits. Both servers stay up (OMP_WAIT_POLICY=passive: the idle one sleeps) and
the rounds alternate between them.

  bench/http/prefix_cache_latency.py --model-dir DIR [--binary build/release/s1serve] [--rounds 5]
Prints one line per round and server, then the medians, as JSON.
"""
import argparse
import json
import os
import statistics
import subprocess
import tempfile
import time
import urllib.request

WORDS = ("the customer writes that the parcel arrived late and damaged after two weeks of waiting and "
         "asks whether the shop can send a replacement or refund the full price including shipping").split()
QUESTIONS = (
    ["Does the customer ask for a refund of the full price including the shipping costs?",
     "Is the customer angry enough that a supervisor should call them back today?",
     "Does the message mention that the parcel was damaged when it arrived at the door?"],
    ["Does this ticket belong to the logistics team rather than to the payments team?",
     "Is it clear from the message how long the customer has waited for the parcel?",
     "Does a replacement item satisfy the customer instead of a refund of the price?"],
)


def state_text(round_number, words=80):
    text = [f"order {round_number * 7919 % 100000}:"]
    while len(text) < words:
        text.extend(WORDS)
    return " ".join(text[:words])


def post(port, body):
    data = json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v1/systemone", data=data,
                                     headers={"Content-Type": "application/json"})
    started = time.perf_counter()
    with urllib.request.urlopen(request, timeout=600) as response:
        answer = json.loads(response.read())
    return (time.perf_counter() - started) * 1000.0, answer


def body_of(round_number, questions, state_words):
    return {"state": state_text(round_number, state_words),
            "questions": {f"q{i}": {"type": "noul", "instructions": q} for i, q in enumerate(questions)}}


def serve(binary, model_dir, cache_bytes, port, work):
    config = os.path.join(work, f"config-{cache_bytes}.json")
    with open(config, "w") as f:
        json.dump({"models": [{"source": model_dir, "prefix_cache": cache_bytes}]}, f)
    process = subprocess.Popen([binary, "serve", "--config", config, "--port", str(port)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                               env=dict(os.environ, OMP_WAIT_POLICY="passive"))
    for _ in range(1200):
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/readyz", timeout=2) as response:
                if response.status == 200:
                    return process
        except OSError:
            time.sleep(0.25)
    process.kill()
    raise SystemExit("the server did not become ready")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", required=True)
    parser.add_argument("--binary", default="build/release/s1serve")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--port", type=int, default=18937)
    # 80 words are about 300 tokens with the Qwen3-0.6B-shaped stand-in's tokenizer (reported as
    # cached_tokens in the output).
    parser.add_argument("--state-words", type=int, default=80)
    args = parser.parse_args()
    seconds = {"on": [], "off": []}
    modes = (("off", 0, args.port), ("on", 1 << 30, args.port + 1))
    with tempfile.TemporaryDirectory() as work:
        servers = [serve(os.path.abspath(args.binary), os.path.abspath(args.model_dir), cache_bytes, port, work)
                   for _, cache_bytes, port in modes]
        try:
            for round_number in range(args.rounds):
                for mode, _, port in modes:
                    first_ms, _ = post(port, body_of(round_number, QUESTIONS[0], args.state_words))
                    second_ms, answer = post(port, body_of(round_number, QUESTIONS[1], args.state_words))
                    seconds[mode].append(second_ms)
                    print(json.dumps({"round": round_number, "mode": mode, "first_ms": round(first_ms, 1),
                                      "second_ms": round(second_ms, 1), "usage": answer["usage"]}), flush=True)
        finally:
            for process in servers:
                process.kill()
                process.wait()
    on, off = statistics.median(seconds["on"]), statistics.median(seconds["off"])
    print(json.dumps({"second_ms_median": {"on": round(on, 1), "off": round(off, 1)}, "ratio": round(on / off, 3)}))


if __name__ == "__main__":
    main()
