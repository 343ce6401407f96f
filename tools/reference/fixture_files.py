"""What the tiny-fixture generators (make_tiny_*.py) share: clearing a checkpoint's files, saving a
model without the generation_config.json s1serve does not read, copying the committed tiny tokenizer,
and the JSON and JSON-lines files every fixture holds (s1serve.json, requests/prompts/expected.jsonl).
"""

from __future__ import annotations

import json
import os
import shutil


def remove_files(out: str, names) -> None:
    for name in names:
        if os.path.exists(os.path.join(out, name)):
            os.remove(os.path.join(out, name))


def save_checkpoint(model, out: str) -> None:
    model.save_pretrained(out, safe_serialization=True)
    remove_files(out, ("generation_config.json",))


def copy_tokenizer(tokenizer_dir: str, out: str, files=("tokenizer.json", "tokenizer_config.json")) -> None:
    for file in files:
        shutil.copy(os.path.join(tokenizer_dir, file), os.path.join(out, file))


def write_json(path: str, value) -> None:
    """Indented, ASCII-escaped, with a final newline: how s1serve.json and decision_config.json are kept."""
    with open(path, "w") as f:
        json.dump(value, f, indent=2)
        f.write("\n")


def read_jsonl(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def write_jsonl(path: str, rows) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def write_reference_outputs(out: str, decide, prompt_lines) -> None:
    """prompts.jsonl (prompt_lines(number, request) for each request) and expected.jsonl
    (decide(request)) for the requests of out/requests.jsonl: what a generator's reference records."""
    requests = read_jsonl(os.path.join(out, "requests.jsonl"))
    write_jsonl(os.path.join(out, "prompts.jsonl"),
                (line for number, request in enumerate(requests) for line in prompt_lines(number, request)))
    write_jsonl(os.path.join(out, "expected.jsonl"), (decide(request) for request in requests))
