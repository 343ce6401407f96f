"""What the reference deciders' command lines (*_contract.py) and the fixture generators share: one
prompt line per question, and requests read from stdin answered as JSON lines."""

from __future__ import annotations

import json
import sys


def question_prompt_lines(number, request, prompt, text_key="text"):
    """{"request", "question", text_key, "ids"} for each question of request `number`, from
    prompt(state, question) -> (text, ids)."""
    for key, question in request["questions"].items():
        text, ids = prompt(request["state"], question)
        yield {"request": number, "question": key, text_key: text, "ids": ids}


def answer_stdin(decide, prompt_lines, show_prompts: bool) -> None:
    """Each JSON request line of stdin printed as decide(request), or with `show_prompts` as the lines
    of prompt_lines(number, request); one JSON line each."""
    for number, line in enumerate(sys.stdin):
        if not line.strip():
            continue
        request = json.loads(line)
        for row in (prompt_lines(number, request) if show_prompts else [decide(request)]):
            print(json.dumps(row, ensure_ascii=False))
