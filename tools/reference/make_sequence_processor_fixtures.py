#!/usr/bin/env python3
"""Writes tests/parity/text/sequence_processor_expected.jsonl: HF `tokenizers` ids for the tiny Qwen
tokenizer (tests/fixtures/qwen-tiny-tokenizer) given the Llama-3 post-processor layout, a Sequence of
ByteLevel and TemplateProcessing that adds a begin-of-text token (here <|im_start|>) before the text
and <|endoftext|> after it. The header line holds that post_processor section, which the C++ test
puts into the same tokenizer.json; each record has the text, the ids with and without special
tokens, and the ids truncated to max_length 6.

    pip install tokenizers
    python tools/reference/make_sequence_processor_fixtures.py
"""
import json
import pathlib

import tokenizers
from tokenizers import Tokenizer

ROOT = pathlib.Path(__file__).resolve().parents[2]
TOKENIZER = ROOT / "tests/fixtures/qwen-tiny-tokenizer/tokenizer.json"
OUT = ROOT / "tests/parity/text/sequence_processor_expected.jsonl"

POST_PROCESSOR = {
    "type": "Sequence",
    "processors": [
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        {"type": "TemplateProcessing",
         "single": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                    {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
         "pair": [{"SpecialToken": {"id": "<|im_start|>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                  {"SpecialToken": {"id": "<|im_start|>", "type_id": 1}}, {"Sequence": {"id": "B", "type_id": 1}}],
         "special_tokens": {"<|im_start|>": {"id": "<|im_start|>", "ids": [3030], "tokens": ["<|im_start|>"]},
                            "<|endoftext|>": {"id": "<|endoftext|>", "ids": [3029], "tokens": ["<|endoftext|>"]}}},
    ],
}

TEXTS = ["Hello world", "", " leading space", "café 😀 中文", "<|im_start|>user\nhi<|im_end|>",
         "a much longer sentence that the truncation to six tokens has to cut", "line\nbreaks\r\n and\ttabs"]


def main():
    spec = json.loads(TOKENIZER.read_text(encoding="utf-8"))
    spec["post_processor"] = POST_PROCESSOR
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    with OUT.open("w", encoding="utf-8") as out:
        out.write(json.dumps({"tokenizers_version": tokenizers.__version__, "post_processor": POST_PROCESSOR}) + "\n")
        for text in TEXTS:
            record = {"text": text, "ids": tokenizer.encode(text).ids,
                      "ids_without_special": tokenizer.encode(text, add_special_tokens=False).ids}
            tokenizer.enable_truncation(6)
            record["ids_truncated_6"] = tokenizer.encode(text).ids
            tokenizer.no_truncation()
            out.write(json.dumps(record, ensure_ascii=False) + "\n")
    print(f"wrote {OUT.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
