#!/usr/bin/env python3
"""Rebuilds a Qwen tokenizer.json from a llama.cpp vocab-only GGUF, then checks it with HF `tokenizers`.

llama-cpp-python's sdist ships vendor/llama.cpp/models/ggml-vocab-qwen2.gguf (the Qwen2 vocab and
merges, pre-tokeniser "qwen2") and ggml-vocab-qwen35.gguf (the same vocab with the Qwen3.5
pre-tokeniser "qwen35"), each with .inp/.out test vectors that llama.cpp made with the real HF
tokenizer. No Hugging Face hub access is needed:

    pip download --no-deps --no-binary :all: llama-cpp-python   # then untar
    pip install --target /tmp/gguf --no-deps gguf
    PYTHONPATH=/tmp/gguf python tools/reference/gguf_vocab_to_tokenizer_json.py \
        .../ggml-vocab-qwen35.gguf /tmp/qwen35-tokenizer.json

The output follows the layout of Qwen's own tokenizer.json (NFC, Split+ByteLevel, BPE, ByteLevel
decoder and post-processor). Control tokens become special added tokens; llama.cpp's [PAD…]
fillers are left out. The script fails unless every .inp case encodes to its .out ids, except
cases that NFC changes: llama.cpp has no NFC normaliser, so its vectors for decomposed text (one
"e" + U+0301 in the qwen35 set) do not show what HF gives; those are listed, not compared.
"""
import json
import pathlib
import sys
import unicodedata

import gguf
from tokenizers import Tokenizer

PATTERNS = {
    "qwen2": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
    "qwen35": r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
}
BYTE_LEVEL = {"add_prefix_space": False, "trim_offsets": False, "use_regex": False}
CONTROL, USER_DEFINED = 3, 4


def field(reader, name):
    return reader.fields[name].contents()


def build(path):
    reader = gguf.GGUFReader(path)
    pre = field(reader, "tokenizer.ggml.pre")
    tokens = field(reader, "tokenizer.ggml.tokens")
    types = field(reader, "tokenizer.ggml.token_type")
    vocab, added = {}, []
    for index, (token, kind) in enumerate(zip(tokens, types)):
        if kind == CONTROL:
            added.append({"id": index, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": True})
        elif kind == USER_DEFINED and token.startswith("[PAD"):
            continue
        elif kind == USER_DEFINED:
            added.append({"id": index, "content": token, "single_word": False, "lstrip": False, "rstrip": False,
                          "normalized": False, "special": False})
        else:
            vocab[token] = index
    merges = [merge.split(" ") for merge in field(reader, "tokenizer.ggml.merges")]
    return {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": PATTERNS[pre]}, "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", **BYTE_LEVEL}]},
        "post_processor": {"type": "ByteLevel", **BYTE_LEVEL},
        "decoder": {"type": "ByteLevel", **BYTE_LEVEL},
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def check(tokenizer, gguf_path):
    inputs = pathlib.Path(gguf_path + ".inp").read_text(encoding="utf-8").split("\n__ggml_vocab_test__\n")
    outputs = pathlib.Path(gguf_path + ".out").read_text(encoding="utf-8").split("\n")
    compared = 0
    for text, expected in zip(inputs, outputs):
        if unicodedata.normalize("NFC", text) != text:
            print(f"not compared (NFC changes it): {text!r}")
            continue
        compared += 1
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if ids != [int(part) for part in expected.split()]:
            sys.exit(f"mismatch on {text!r}: {ids} != {expected}")
    print(f"{compared} of {len(inputs)} llama.cpp test vectors compared, all match")


def main():
    gguf_path, out_path = sys.argv[1], sys.argv[2]
    text = json.dumps(build(gguf_path), ensure_ascii=False)
    check(Tokenizer.from_str(text), gguf_path)
    pathlib.Path(out_path).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
