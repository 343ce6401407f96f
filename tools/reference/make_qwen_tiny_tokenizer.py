#!/usr/bin/env python3
"""Builds tests/fixtures/qwen-tiny-tokenizer/: a small Qwen-style byte-level BPE tokenizer for tests.

The pipeline is Qwen's (NFC, Split with Qwen's pattern then ByteLevel without regex, BPE with byte
alphabet, ByteLevel decoder and post-processor, no BOS); only the vocab is small: BPE trained with HF
`tokenizers` on tests/parity/text/corpus.jsonl. Qwen's special tokens come after the vocab, declared
as Qwen3 declares them (<|endoftext|>, <|im_start|>, <|im_end|> special; <think>, </think> not).
Tiny test models need answer labels that are one token each, so A..Z, AA..AZ, 0..9, "yes", "no",
" yes" and " no" are made single tokens by merges placed first (highest priority); the script fails
if any of them does not encode to exactly one token. tokenizer_config.json carries the real Qwen3
chat template (tests/parity/text/chat_templates/qwen3.jinja). Deterministic: rerunning gives the
same files.

A second tokenizer in the subfolder qwen3_5/ follows Qwen3.5's pipeline instead (Qwen3.5's split
pattern, which keeps combining marks with letters) and carries Qwen3.5's chat template, for tiny
models of the Qwen3.5 family. Its tokenizer_class is Qwen3_5Tokenizer: Transformers 5 rebuilds the
normaliser and pre-tokeniser from the class (Qwen2Tokenizer would impose Qwen2's pattern), so the
class must agree with tokenizer.json for Transformers and HF tokenizers to give the same ids.

    python tools/reference/make_qwen_tiny_tokenizer.py
"""
import json
import pathlib

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/qwen-tiny-tokenizer"
CORPUS = ROOT / "tests/parity/text/corpus.jsonl"
TEMPLATES = ROOT / "tests/parity/text/chat_templates"
VOCAB_SIZE = 3000
# Qwen2/Qwen2.5/Qwen3's split pattern, and Qwen3.5's, which adds \p{M} to the letter classes.
QWEN3_PATTERN = r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
QWEN3_5_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}|"
                   r" ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
# name: (output folder, split pattern, chat template file, Transformers tokenizer class)
VARIANTS = {
    "qwen3": (OUT, QWEN3_PATTERN, "qwen3.jinja", "Qwen2Tokenizer"),
    "qwen3_5": (OUT / "qwen3_5", QWEN3_5_PATTERN, "qwen3_5.jinja", "Qwen3_5Tokenizer"),
}
SPECIAL = [("<|endoftext|>", True), ("<|im_start|>", True), ("<|im_end|>", True), ("<think>", False),
           ("</think>", False)]
SINGLE_TOKENS = ([chr(c) for c in range(ord("A"), ord("Z") + 1)] + ["A" + chr(c) for c in range(ord("A"), ord("Z") + 1)]
                 + [str(d) for d in range(10)] + ["yes", "no", " yes", " no"])


def byte_level(text):
    alphabet = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    return "".join(piece for piece, _ in alphabet.pre_tokenize_str(text))


def train(pattern):
    tokenizer = Tokenizer(models.BPE())
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(pattern), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)])
    tokenizer.decoder = decoders.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    tokenizer.post_processor = processors.ByteLevel(add_prefix_space=False, trim_offsets=False, use_regex=False)
    trainer = trainers.BpeTrainer(vocab_size=VOCAB_SIZE, show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    lines = [json.loads(line) for line in CORPUS.open(encoding="utf-8")]
    tokenizer.train_from_iterator(lines, trainer=trainer)
    return json.loads(tokenizer.to_str())


def apply_merges(symbols, merges):
    """Plain BPE over the given merges (rank = position): the pieces a word ends up as."""
    ranks = {merge: rank for rank, merge in enumerate(merges)}
    while True:
        pairs = [(ranks[pair], index) for index, pair in enumerate(zip(symbols, symbols[1:])) if pair in ranks]
        if not pairs:
            return symbols
        _, index = min(pairs)
        symbols = symbols[:index] + [symbols[index] + symbols[index + 1]] + symbols[index + 2:]


def force_single_tokens(spec):
    model = spec["model"]
    vocab, merges = model["vocab"], [tuple(merge) for merge in model["merges"]]
    forced = []
    for text in SINGLE_TOKENS:
        # Join whatever the earlier forced merges leave, left to right.
        pieces = apply_merges(list(byte_level(text)), forced)
        while len(pieces) > 1:
            left, right = pieces[0], pieces[1]
            vocab.setdefault(left + right, len(vocab))
            forced.append((left, right))
            pieces = [left + right] + pieces[2:]
    model["merges"] = [list(merge) for merge in forced + [merge for merge in merges if merge not in forced]]
    return spec


def build(out, pattern, template, tokenizer_class):
    spec = force_single_tokens(train(pattern))
    spec["model"].update({"dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                          "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                          "ignore_merges": False})
    tokenizer = Tokenizer.from_str(json.dumps(spec))
    for content, special in SPECIAL:
        token = AddedToken(content, special=special, normalized=False, lstrip=False, rstrip=False, single_word=False)
        if special:
            tokenizer.add_special_tokens([token])
        else:
            tokenizer.add_tokens([token])
    for text in SINGLE_TOKENS + [content for content, _ in SPECIAL]:
        ids = tokenizer.encode(text, add_special_tokens=False).ids
        if len(ids) != 1:
            raise SystemExit(f"{text!r} is not a single token: {ids}")
    out.mkdir(parents=True, exist_ok=True)
    spec = json.loads(tokenizer.to_str())
    (out / "tokenizer.json").write_text(json.dumps(spec, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
    added = {str(entry["id"]): {key: entry[key] for key in
                                ("content", "lstrip", "normalized", "rstrip", "single_word", "special")}
             for entry in spec["added_tokens"]}
    config = {
        "add_bos_token": False, "add_prefix_space": False, "added_tokens_decoder": added,
        "bos_token": None, "chat_template": (TEMPLATES / template).read_text(encoding="utf-8"),
        "clean_up_tokenization_spaces": False, "eos_token": "<|im_end|>", "errors": "replace",
        "model_max_length": 131072, "pad_token": "<|endoftext|>", "split_special_tokens": False,
        "tokenizer_class": tokenizer_class, "unk_token": None,
    }
    (out / "tokenizer_config.json").write_text(json.dumps(config, ensure_ascii=False, indent=2) + "\n",
                                               encoding="utf-8")
    print(f"wrote {out} with {tokenizer.get_vocab_size()} tokens")


def main():
    for variant in VARIANTS.values():
        build(*variant)


if __name__ == "__main__":
    main()
