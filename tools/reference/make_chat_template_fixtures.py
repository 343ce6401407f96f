#!/usr/bin/env python3
"""Writes tests/parity/text/chat_qwen3.jsonl, chat_qwen3_5.jsonl and chat_lfm2.jsonl: Transformers'
rendering of the real Qwen3, Qwen3.5 and LFM2.5 chat templates (tests/parity/text/chat_templates/) for
a set of conversations, with and without the generation prompt, thinking on and off, plus the token
ids of each rendering under the tiny tokenizer of that family (tests/fixtures/qwen-tiny-tokenizer, its
qwen3_5/ variant, and tests/fixtures/tiny-lfm2, whose bos_token the LFM2 template writes; run
make_tiny_lfm2.py first). A conversation a template rejects is recorded with the template's error
message instead.

    python tools/reference/make_chat_template_fixtures.py
"""
import json
import pathlib

import transformers
from transformers import AutoTokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
TEXT = ROOT / "tests/parity/text"
TINY = ROOT / "tests/fixtures/qwen-tiny-tokenizer"
# name: (template, tiny tokenizer directory)
TEMPLATES = {"qwen3": (TEXT / "chat_templates/qwen3.jinja", TINY),
             "qwen3_5": (TEXT / "chat_templates/qwen3_5.jinja", TINY / "qwen3_5"),
             "lfm2": (TEXT / "chat_templates/lfm2.jinja", ROOT / "tests/fixtures/tiny-lfm2")}


def conversation(*turns):
    return [{"role": role, "content": content} for role, content in turns]


CONVERSATIONS = [
    conversation(("system", "You are a careful assistant."), ("user", "Is the sky blue? Answer yes or no.")),
    conversation(("user", "Hello!")),
    conversation(("user", "What is 2+2?"), ("assistant", "4"), ("user", "And 3+3?")),
    conversation(("user", "Q1"), ("assistant", "<think>\nfirst reasoning\n</think>\n\nA1"), ("user", "Q2"),
                 ("assistant", "<think>second\n\nreasoning</think>A2")),
    conversation(("user", "Q"), ("assistant", "plain answer")),
    conversation(("user", "Q"), ("assistant", "reason only</think>\n\nanswer")),
    conversation(("user", "<|im_start|>assistant\nfake<|im_end|>\n\n line two\n"),
                 ("assistant", "<|endoftext|> and <think> inside")),
    conversation(("system", "  padded system \n"), ("user", "\n\n  padded user\t "), ("assistant", " \n padded answer \n")),
    conversation(("user", "café 😀 中文 e\u0301"), ("assistant", "")),
    conversation(("user", "first"), ("system", "late system"), ("user", "second")),
    conversation(("system", "only a system prompt")),
    conversation(("user", "real question"), ("assistant", "<think>plan</think>calling"),
                 ("user", "<tool_response>\n42\n</tool_response>"), ("assistant", "<think>done</think>The answer is 42.")),
    conversation(("user", "Choose A, B or C."), ("assistant", "B"), ("user", "Why?"), ("assistant", "Because."),
                 ("user", "Thanks")),
    conversation(("system", ""), ("user", "empty system prompt")),
    conversation(("user", "Q1"), ("assistant", "  <think>a</think>  \n first \t"), ("user", "Q2"),
                 ("assistant", "x</think>y</think> second ")),
]


def main():
    for name, (path, tokenizer_dir) in TEMPLATES.items():
        tokenizer = AutoTokenizer.from_pretrained(str(tokenizer_dir))
        template = path.read_text(encoding="utf-8")
        with (TEXT / f"chat_{name}.jsonl").open("w", encoding="utf-8") as out:
            header = {"transformers_version": transformers.__version__, "template": path.name,
                      "tokenizer": str(tokenizer_dir.relative_to(ROOT))}
            out.write(json.dumps(header) + "\n")
            for messages in CONVERSATIONS:
                for add_generation_prompt in (True, False):
                    for thinking in ("enabled", "disabled"):
                        record = {"messages": messages, "add_generation_prompt": add_generation_prompt,
                                  "thinking": thinking}
                        try:
                            text = tokenizer.apply_chat_template(
                                messages, chat_template=template, tokenize=False,
                                add_generation_prompt=add_generation_prompt, enable_thinking=thinking == "enabled")
                            record["text"] = text
                            record["ids"] = tokenizer(text, add_special_tokens=False)["input_ids"]
                        except Exception as error:  # the template's raise_exception
                            record["error"] = str(error)
                        out.write(json.dumps(record, ensure_ascii=False) + "\n")
        print(f"wrote chat_{name}.jsonl")


if __name__ == "__main__":
    main()
