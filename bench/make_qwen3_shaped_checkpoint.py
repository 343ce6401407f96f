#!/usr/bin/env python3
"""Writes a bf16 checkpoint with Qwen3-0.6B's exact shapes and random weights, for memory benchmarks
(bench/peak_rss.sh, docs/benchmarks/memory.md). Its answers mean nothing; its tensors, dtypes and
byte count are those of the real model (tied embeddings, 28 layers, 151936 x 1024 embedding table),
so a loader's copies show in the process's peak RSS as they would for the real checkpoint. The
tokenizer and chat template are the tiny Qwen3 test fixture's (ids below its vocabulary only).

  bench/make_qwen3_shaped_checkpoint.py OUT_DIR [--layers 28] [--precision fp32|bf16]

--precision writes an s1serve.json (label-token contract) choosing the matrix products' arithmetic;
without it the default applies (bf16 with AMX, else fp32).

Needs numpy only. About 1.5 GB on disk.
"""

import argparse
import json
import pathlib
import shutil
import struct

import numpy

HIDDEN, INTERMEDIATE, HEADS, KV_HEADS, HEAD_DIM, VOCAB = 1024, 3072, 16, 8, 128, 151936
FIXTURE = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "tiny-qwen3-chat"


def tensors(layers):
    yield "model.embed_tokens.weight", (VOCAB, HIDDEN), True
    for i in range(layers):
        p = f"model.layers.{i}."
        yield p + "input_layernorm.weight", (HIDDEN,), False
        yield p + "post_attention_layernorm.weight", (HIDDEN,), False
        yield p + "self_attn.q_proj.weight", (HEADS * HEAD_DIM, HIDDEN), True
        yield p + "self_attn.k_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN), True
        yield p + "self_attn.v_proj.weight", (KV_HEADS * HEAD_DIM, HIDDEN), True
        yield p + "self_attn.o_proj.weight", (HIDDEN, HEADS * HEAD_DIM), True
        yield p + "self_attn.q_norm.weight", (HEAD_DIM,), False
        yield p + "self_attn.k_norm.weight", (HEAD_DIM,), False
        yield p + "mlp.gate_proj.weight", (INTERMEDIATE, HIDDEN), True
        yield p + "mlp.up_proj.weight", (INTERMEDIATE, HIDDEN), True
        yield p + "mlp.down_proj.weight", (HIDDEN, INTERMEDIATE), True
    yield "model.norm.weight", (HIDDEN,), False


def bf16_bytes(values):
    """float32 → bf16 (round to nearest even) as little-endian bytes."""
    bits = values.astype(numpy.float32).view(numpy.uint32)
    rounded = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return rounded.astype("<u2").tobytes()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("out", type=pathlib.Path)
    parser.add_argument("--layers", type=int, default=28)
    parser.add_argument("--precision", choices=("fp32", "bf16"))
    options = parser.parse_args()
    options.out.mkdir(parents=True, exist_ok=True)
    # One block of random bf16 values, repeated: drawing 750M normals would take minutes, and the
    # values do not matter to a memory benchmark.
    block = bf16_bytes(numpy.random.default_rng(0).standard_normal(1 << 20, dtype=numpy.float32) * 0.02)

    header, offset = {"__metadata__": {"format": "pt"}}, 0
    specs = list(tensors(options.layers))
    for name, shape, _ in specs:
        size = 2 * int(numpy.prod(shape))
        header[name] = {"dtype": "BF16", "shape": list(shape), "data_offsets": [offset, offset + size]}
        offset += size
    encoded = json.dumps(header, separators=(",", ":")).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(options.out / "model.safetensors", "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for name, shape, random in specs:
            size = 2 * int(numpy.prod(shape))
            if not random:  # norm weights: ones, as a trained model's are near
                f.write(bf16_bytes(numpy.ones(shape, dtype=numpy.float32)))
                continue
            while size > 0:
                f.write(block[: min(size, len(block))])
                size -= len(block)

    config = json.loads((FIXTURE / "config.json").read_text())
    config.update({"hidden_size": HIDDEN, "intermediate_size": INTERMEDIATE, "num_attention_heads": HEADS,
                   "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "vocab_size": VOCAB,
                   "num_hidden_layers": options.layers, "layer_types": ["full_attention"] * options.layers,
                   "max_position_embeddings": 40960, "tie_word_embeddings": True, "dtype": "bfloat16"})
    (options.out / "config.json").write_text(json.dumps(config, indent=2) + "\n")
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copyfile(FIXTURE / name, options.out / name)
    if options.precision:
        contract = {"contract": "label-token", "name": "qwen3-0.6b-shaped", "precision": options.precision}
        (options.out / "s1serve.json").write_text(json.dumps(contract, indent=2) + "\n")
    print(f"{options.out}: {offset / 1e9:.3f} GB of bf16 weights, {len(specs)} tensors")


if __name__ == "__main__":
    main()
