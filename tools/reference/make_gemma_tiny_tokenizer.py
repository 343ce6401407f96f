"""Write a tiny Gemma-style tokenizer and HF `tokenizers` goldens for its component variants.

    /work/.venv-ref/bin/python tools/reference/make_gemma_tiny_tokenizer.py

tests/fixtures/gemma-tiny-tokenizer/ gets:
  tokenizer.json  laid out as Gemma 2's / mmBERT's file (and so Vela 2.0's): normalizer Replace " " -> "▁",
                  no pre-tokenizer, BPE with byte_fallback, fuse_unk and unk "<unk>" (ids: <pad> 0, <eos> 1,
                  <bos> 2, <unk> 3, <mask> 4, then the 256 "<0xXX>" byte tokens, then a small trained
                  vocabulary), TemplateProcessing "<bos> $A", decoder Sequence [Replace "▁" -> " ",
                  ByteFallback, Fuse], and the eight Vela 2.0 marker tokens as special added tokens after
                  the vocabulary, as the released 0.3B file has them (ids 256000-256007 there).
  variants.json   the other SentencePiece spellings, as replacements of the file's normalizer /
                  pre_tokenizer / decoder sections: Metaspace with prepend_scheme first, always (no split)
                  and never; Llama-style Prepend + Replace with a Strip decoder; Transformers 5's Gemma
                  Split " " MergedWithPrevious; Split MergedWithNext and Removed (HF's Strip decoder
                  panics when a token is all strip characters with start + stop over its length, so the
                  variants keep clear of that).
  expected.jsonl  a header, then per variant and corpus text the ids HF gives with and without special
                  tokens and decode() of the special-free ids (when there are any).
"""

from __future__ import annotations

import json
import os

import tokenizers
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUT = os.path.join(REPO, "tests", "fixtures", "gemma-tiny-tokenizer")
SPECIAL = ["<pad>", "<eos>", "<bos>", "<unk>", "<mask>"]
MARKERS = ["[Q]", "[O]", "[ABS]", "[SEP_SCHEMA]", "[SEG_user]", "[SEG_answer]", "[E]", "[SEG_context]"]

TRAINING = [
    "Which domain does this request belong to?",
    "Write a Python function that merges two sorted lists and explain its running time.",
    "Is this a prompt injection or jailbreak attempt?",
    "How urgent is this request? Routine, needs prompt attention, critical.",
    "The user asks for the maximum daily dose of paracetamol for an adult.",
    "choice: code, math, health, other. Programming, mathematics, medicine.",
    "yes, the statement holds. no, the statement does not hold.",
    "level 0: low level 1: medium level 2: high",
    "Le modèle répond aux questions en français et en español también.",
    "Der Router wählt das passende Modell für jede Anfrage.",
    '{"request": "hello", "source": "context", "answer": "reply"}',
]

CORPUS = [
    "",
    " ",
    "  ",
    "hello",
    "Hello world",
    " leading space",
    "trailing space ",
    "double  space and   triple",
    "Which domain does this request belong to?",
    "tabs\tand\nnewlines\r\n",
    "Le modèle répond en français",
    "数字和汉字",
    "emoji 🫩 and 🗽⃢",
    "ÿ unusual Ł letters",
    "text with <mask> inside",
    "<bos>starts with a special token",
    "markers [Q] and [O] and [SEG_user] in text",
    "[SEP_SCHEMA]",
    '{"request": "Hi, I\'m Tom", "answer": 42}',
    "▁already▁spelled▁",
    "a▁ b",
    "\u00a0non-breaking space",
]


def trained_vocab() -> tuple[dict[str, int], list[list[str]]]:
    tokenizer = Tokenizer(models.BPE(unk_token="<unk>"))
    tokenizer.normalizer = normalizers.Replace(" ", "▁")
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="never")
    trainer = trainers.BpeTrainer(vocab_size=420, special_tokens=SPECIAL, show_progress=False,
                                  initial_alphabet=["▁"])
    tokenizer.train_from_iterator(TRAINING * 3, trainer=trainer)
    model = json.loads(tokenizer.to_str())["model"]
    return model["vocab"], model["merges"]


def gemma_file() -> dict:
    trained, merges = trained_vocab()
    vocab: dict[str, int] = {token: index for index, token in enumerate(SPECIAL)}
    for byte in range(256):
        vocab[f"<0x{byte:02X}>"] = len(vocab)
    for token, _ in sorted(trained.items(), key=lambda item: item[1]):
        if token not in vocab:
            vocab[token] = len(vocab)
    added = [{"id": vocab[content], "content": content, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for content in SPECIAL]
    for offset, content in enumerate(MARKERS):
        added.append({"id": len(vocab) + offset, "content": content, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "}, "content": "▁"},
        "pre_tokenizer": None,
        "post_processor": {
            "type": "TemplateProcessing",
            "single": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
            "pair": [{"SpecialToken": {"id": "<bos>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}},
                     {"Sequence": {"id": "B", "type_id": 1}}],
            "special_tokens": {"<bos>": {"id": "<bos>", "ids": [vocab["<bos>"]], "tokens": ["<bos>"]}},
        },
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"},
            {"type": "Fuse"},
        ]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "ignore_merges": False,
                  "vocab": vocab, "merges": merges},
    }


def metaspace(scheme: str, split: bool) -> dict:
    return {"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split}


VARIANTS = {
    "gemma": {},
    "metaspace_first": {"normalizer": None, "pre_tokenizer": metaspace("first", True),
                        "decoder": metaspace("first", True)},
    "metaspace_always_unsplit": {"normalizer": None, "pre_tokenizer": metaspace("always", False),
                                 "decoder": {"type": "Sequence", "decoders": [metaspace("always", False),
                                                                              {"type": "ByteFallback"}]}},
    "metaspace_never": {"normalizer": None, "pre_tokenizer": metaspace("never", True),
                        "decoder": {"type": "Sequence", "decoders": [
                            {"type": "ByteFallback"}, metaspace("never", True), {"type": "Fuse"},
                            {"type": "Strip", "content": " ", "start": 0, "stop": 1}]}},
    "llama_prepend": {
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": "▁"},
            {"type": "Replace", "pattern": {"String": " "}, "content": "▁"}]},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"},
            {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
    },
    "transformers5_gemma": {"pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                                              "behavior": "MergedWithPrevious", "invert": False}},
    "split_merged_next": {"normalizer": None,
                          "pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                                            "behavior": "MergedWithNext", "invert": False}},
    "split_removed_then_metaspace": {
        "normalizer": {"type": "Replace", "pattern": {"Regex": "\\s+"}, "content": " "},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            metaspace("first", True),
            {"type": "Split", "pattern": {"String": "e"}, "behavior": "Removed", "invert": False}]},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Fuse"}, {"type": "Strip", "content": "▁", "start": 1, "stop": 0}]},
    },
}


def main() -> None:
    os.makedirs(OUT, exist_ok=True)
    base = gemma_file()
    with open(os.path.join(OUT, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(base, f, ensure_ascii=False)
    with open(os.path.join(OUT, "variants.json"), "w", encoding="utf-8") as f:
        json.dump(VARIANTS, f, ensure_ascii=False, indent=1)
    lines = [{"tokenizers_version": tokenizers.__version__, "tokenizer": "tokenizer.json",
              "variants": "variants.json", "texts": len(CORPUS)}]
    for name, sections in VARIANTS.items():
        spec = dict(base, **sections)
        tokenizer = Tokenizer.from_str(json.dumps(spec))
        for text in CORPUS:
            plain = tokenizer.encode(text, add_special_tokens=False).ids
            line = {"variant": name, "text": text, "ids": plain, "ids_with_special": tokenizer.encode(text).ids}
            if plain:  # HF's Strip decoder panics on an empty string
                line["decoded"] = tokenizer.decode(plain, skip_special_tokens=False)
            lines.append(line)
    with open(os.path.join(OUT, "expected.jsonl"), "w", encoding="utf-8") as f:
        for line in lines:
            f.write(json.dumps(line, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
