#!/usr/bin/env python3
"""Writes a Qwen3 checkpoint directory (bf16 safetensors) as a BF16 GGUF file with
convert_hf_to_gguf.py's keys, names and vocabulary arrays (the helpers of
tools/reference/make_gguf_fixtures.py), for llama-bench's BF16 row of docs/benchmarks/quantized.md:
the same weights as our bf16 path reads, and the same metadata as `s1serve quantize` writes.

  python3 bench/peers/qwen3_bf16_gguf.py DIR OUT.gguf

Needs the gguf package and numpy; reads the whole safetensors file into memory.
"""

import json
import pathlib
import sys

import gguf
import numpy as np

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2] / "tools" / "reference"))
import make_gguf_fixtures as fixtures  # noqa: E402


def main():
    source, out = pathlib.Path(sys.argv[1]), sys.argv[2]
    config = json.loads((source / "config.json").read_text())
    arch = gguf.MODEL_ARCH.QWEN3
    writer = gguf.GGUFWriter(out, arch=gguf.MODEL_ARCH_NAMES[arch])
    fixtures.add_text_model_keys(writer, config)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    fixtures.add_bpe_vocab(writer, source, config["vocab_size"], "qwen2")
    name_map = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    for name, (dtype, shape, raw) in sorted(fixtures.read_safetensors(source / "model.safetensors").items()):
        if dtype != "BF16":
            raise SystemExit(f"{name} is {dtype}; this writes bf16 checkpoints only")
        if name == "lm_head.weight" and config.get("tie_word_embeddings"):
            continue
        # 1-D tensors (norm weights) in F32, as the converter writes them (ggml multiplies by F32 only).
        if len(shape) == 1:
            writer.add_tensor(fixtures.gguf_name(name_map, name), fixtures.bf16_to_f32(raw, shape))
            continue
        array = np.frombuffer(raw, dtype=np.uint8).reshape(*shape[:-1], shape[-1] * 2)
        writer.add_tensor(fixtures.gguf_name(name_map, name), array, raw_shape=array.shape,
                          raw_dtype=gguf.GGMLQuantizationType.BF16)
    fixtures.finish(writer)


if __name__ == "__main__":
    main()
