#!/usr/bin/env python3
"""Real-shaped stand-ins of the decision models, for s1_questions_bench (docs/benchmarks/questions.md).

Each contract's tiny test fixture (tests/fixtures/tiny-*) gives the model directory's layout: its
s1serve.json and side files. This script puts that layout on top of a real-shaped random checkpoint
made by bench/peers/decoder_prefill_peers.py `make` (Qwen3.5-2B or Qwen3-0.6B shapes): config.json and
model.safetensors are linked, tokenizer.json becomes the real Qwen2 vocabulary committed in
tests/parity/text, token ids in the decision files are mapped to that vocabulary by their token text,
and every side-file matrix is redrawn at the checkpoint's hidden size (random, N(0, 0.02)).

    python3 bench/make_scaled_decision_models.py --qwen3_5 /work/bench-models/qwen3.5-2b \
        --qwen3 /work/bench-models/qwen3-0.6b --out /work/bench-models/scaled

Standard library only.
"""

import argparse
import json
import lzma
import math
import os
import random
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")

# fixture directory -> the family of the scaled checkpoint it sits on
MODELS = {
    "tiny-qwen3_5-chat": "qwen3_5",
    "tiny-cua-s1": "qwen3_5",
    "tiny-decider": "qwen3_5",
    "tiny-startlux": "qwen3_5",
    "tiny-jemm": "qwen3_5",
    "tiny-open-jev": "qwen3_5",
    "tiny-clm": "qwen3",
}


def read_safetensors_header(path):
    with open(path, "rb") as file:
        size = struct.unpack("<Q", file.read(8))[0]
        return json.loads(file.read(size))


def bf16_bytes(value):
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    bits += 0x7FFF + ((bits >> 16) & 1)  # round to nearest even
    return struct.pack("<H", (bits >> 16) & 0xFFFF)


def write_random_safetensors(path, shapes, seed):
    """shapes: name -> (dtype, shape); weights N(0, 0.02), LayerNorm-like 1-D "weight"s 1, biases 0."""
    generator = random.Random(seed)
    header, blobs, offset = {}, [], 0
    for name in sorted(shapes):
        dtype, shape = shapes[name]
        count = math.prod(shape)
        if name.endswith("bias"):
            values = [0.0] * count
        elif len(shape) == 1:
            values = [1.0] * count
        else:
            values = [generator.gauss(0.0, 0.02) for _ in range(count)]
        if dtype == "F32":
            blob = struct.pack(f"<{count}f", *values)
        elif dtype == "BF16":
            blob = b"".join(bf16_bytes(v) for v in values)
        else:
            raise SystemExit(f"{path}: unsupported dtype {dtype}")
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as file:
        file.write(struct.pack("<Q", len(encoded)) + encoded)
        for blob in blobs:
            file.write(blob)


def scaled_shapes(shapes, tiny_hidden, hidden, tiny_width, width):
    """The input dimension (the last) of a matrix read from the hidden state becomes the scaled hidden
    size; head widths (the largest other dimension) scale by the same factor; label counts stay."""
    result = {}
    for name, (dtype, shape) in shapes.items():
        scaled = []
        for index, dim in enumerate(shape):
            if dim == tiny_hidden and index == len(shape) - 1:
                scaled.append(hidden)
            elif tiny_width and dim == tiny_width:
                scaled.append(width)
            else:
                scaled.append(dim)
        result[name] = (dtype, scaled)
    return result


def token_text_table(tokenizer):
    vocab = dict(tokenizer["model"]["vocab"])
    for added in tokenizer.get("added_tokens", []):
        vocab[added["content"]] = added["id"]
    return vocab


def remap_ids(ids, tiny_vocab, real_vocab, where):
    inverse = {token_id: text for text, token_id in tiny_vocab.items()}
    mapped = []
    for token_id in ids:
        text = inverse.get(token_id)
        if text is None or text not in real_vocab:
            raise SystemExit(f"{where}: token id {token_id} ({text!r}) has no counterpart in the real vocabulary")
        mapped.append(real_vocab[text])
    return mapped


def decider_label_ids(real_vocab):
    """A..Z, then two-letter labels that are single tokens, first 255 — how the reference builds its table."""
    letters = [chr(ord("A") + i) for i in range(26)]
    labels = letters + [a + b for a in letters for b in letters]
    return [real_vocab[label] for label in labels if label in real_vocab][:255]


def build(fixture, base, out, real_tokenizer_text, real_vocab):
    source = os.path.join(FIXTURES, fixture)
    if not os.path.isdir(source):
        print(f"skip {fixture}: not in this checkout", file=sys.stderr)
        return
    target = os.path.join(out, fixture.replace("tiny-", "scaled-"))
    os.makedirs(target, exist_ok=True)
    for name in ("config.json", "model.safetensors"):
        link = os.path.join(target, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.join(os.path.abspath(base), name), link)
    with open(os.path.join(target, "tokenizer.json"), "w", encoding="utf-8") as file:
        file.write(real_tokenizer_text)

    with open(os.path.join(source, "tokenizer.json"), encoding="utf-8") as file:
        tiny_vocab = token_text_table(json.load(file))
    with open(os.path.join(source, "config.json"), encoding="utf-8") as file:
        tiny_config = json.load(file)
    with open(os.path.join(base, "config.json"), encoding="utf-8") as file:
        config = json.load(file)
    tiny_hidden = tiny_config.get("text_config", tiny_config)["hidden_size"]
    hidden = config.get("text_config", config)["hidden_size"]

    for name in sorted(os.listdir(source)):
        path = os.path.join(source, name)
        if name in ("config.json", "model.safetensors", "tokenizer.json") or name.endswith(".jsonl"):
            continue
        if name.endswith(".safetensors"):
            header = read_safetensors_header(path)
            shapes = {k: (v["dtype"], v["shape"]) for k, v in header.items() if k != "__metadata__"}
            widths = sorted({d for _, s in shapes.values() for d in s if d != tiny_hidden and d > 8})
            tiny_width = widths[-1] if widths else 0
            width = tiny_width * hidden // tiny_hidden if tiny_width else 0
            write_random_safetensors(os.path.join(target, name),
                                     scaled_shapes(shapes, tiny_hidden, hidden, tiny_width, width), seed=len(name))
            continue
        if not name.endswith(".json"):
            continue
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
        if name == "s1serve.json":
            data["name"] = data["name"].replace("tiny-", "scaled-")
            data.pop("aliases", None)
            if "precision" in data:
                data["precision"] = "bf16"
            if "label_token_ids" in data:
                data["label_token_ids"] = decider_label_ids(real_vocab)
            if "max_text_tokens" in data:
                data["max_text_tokens"] = 4096
        for key in ("letter_token_ids", "token_ids"):
            if key in data:
                data[key] = remap_ids(data[key], tiny_vocab, real_vocab, f"{fixture}/{name}:{key}")
        if name == "open_jev_export.json":
            data["max_length"] = 4096
            for key, value in list(data.items()):
                if isinstance(value, list) and len(value) == tiny_hidden:
                    data[key] = [random.Random(1).gauss(0.0, 0.02) for _ in range(hidden)]
        with open(os.path.join(target, name), "w", encoding="utf-8") as file:
            json.dump(data, file, indent=1, ensure_ascii=False)
    print(target)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--qwen3_5", required=True, help="real-shaped Qwen3.5 checkpoint directory")
    parser.add_argument("--qwen3", required=True, help="real-shaped Qwen3 checkpoint directory")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    with lzma.open(os.path.join(ROOT, "tests", "parity", "text", "qwen2-tokenizer.json.xz"), "rt",
                   encoding="utf-8") as file:
        real_tokenizer_text = file.read()
    real_vocab = token_text_table(json.loads(real_tokenizer_text))
    os.makedirs(args.out, exist_ok=True)
    for fixture, family in MODELS.items():
        build(fixture, args.qwen3_5 if family == "qwen3_5" else args.qwen3, args.out, real_tokenizer_text, real_vocab)


if __name__ == "__main__":
    main()
