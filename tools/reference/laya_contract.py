"""The LAYA contract in Python: laya==0.3.20's own Agent behind s1serve's /v1/systemone shape.

    /work/.venv-ref/bin/python tools/reference/laya_contract.py MODEL_DIR [--requests FILE]

MODEL_DIR is a LAYA checkpoint directory (rl_agent_config.json, model.safetensors, encoder/, tokenizer/).
A /v1/systemone request maps onto laya's inputs unchanged: state as given; each question's type, criteria
and instructions (absent instructions are passed as None, which laya renders as "null"). laya runs on
the CPU in fp32 (its default there) and answers with its own packing, heads, temperatures and 4-decimal
rounding. Writes beside the requests:

  packing.jsonl   per request and question: token ids, marker positions, question type (laya's packing)
  heads.jsonl     per request and question: the raw marker logits and act probability of laya's forward,
                  and laya's complete answer (incl. answer_confidence, noul confidence, act_probability)
  expected.jsonl  per request: the /v1/systemone answers (noul: noul; choice: choice, confidence,
                  probabilities; score: score, confidence, legend, probabilities) and input_tokens
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os

import torch

PINNED = "0.3.20"


def laya_questions(questions: dict) -> dict:
    return {key: {"type": q["type"], "instructions": q.get("instructions"),
                  **({"criteria": q["criteria"]} if q.get("criteria") is not None else {})}
            for key, q in questions.items()}


def wire_answer(answer: dict) -> dict:
    if answer["type"] == "noul":
        return {"type": "noul", "noul": answer["noul"]}
    if answer["type"] == "choice":
        return {"type": "choice", "choice": answer["choice"], "confidence": answer["confidence"],
                "probabilities": answer["probabilities"]}
    return {"type": "score", "score": answer["score"], "confidence": answer["confidence"],
            "legend": answer["legend"], "probabilities": answer["probabilities"]}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("model_dir")
    parser.add_argument("--requests")
    args = parser.parse_args()
    version = importlib.metadata.version("laya")
    if version != PINNED:
        raise SystemExit(f"laya=={PINNED} is the reference; found {version}")
    from laya import Agent
    from laya.common import collate_items

    torch.set_num_threads(1)
    agent = Agent(args.model_dir, device="cpu")
    requests_file = args.requests or os.path.join(args.model_dir, "requests.jsonl")
    out_dir = os.path.dirname(os.path.abspath(requests_file))
    with open(requests_file) as f:
        requests = [json.loads(line) for line in f if line.strip()]
    packing, heads, expected = [], [], []
    for index, request in enumerate(requests):
        questions = laya_questions(request["questions"])
        keys = list(questions)
        internal = {key: agent._to_internal(questions[key]) for key in keys}
        items = agent._encode_state(request["state"], keys, internal)
        with torch.no_grad():
            logits, act = agent._forward(collate_items([items], agent.tok.pad_token_id))
        result = agent.system_one(request["state"], questions)
        for row, (key, item) in enumerate(zip(keys, items)):
            k = len(item["markers"])
            packing.append({"request": index, "question": key, "ids": item["ids"], "markers": item["markers"],
                            "qtype": item["qtype"]})
            heads.append({"request": index, "question": key, "logits": [float(x) for x in logits[row, :k]],
                          "act_probability": float(act[row, 0]), "answer": result["answers"][key]})
        expected.append({"request": request,
                         "answers": {key: wire_answer(result["answers"][key]) for key in keys},
                         "input_tokens": result["usage"]["input_tokens"]})
    for name, rows in (("packing", packing), ("heads", heads), ("expected", expected)):
        with open(os.path.join(out_dir, name + ".jsonl"), "w") as f:
            for row in rows:
                f.write(json.dumps(row, ensure_ascii=False) + "\n")
    print(f"laya {version}: {len(requests)} requests, {len(packing)} questions -> {out_dir}")


if __name__ == "__main__":
    main()
