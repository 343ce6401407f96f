#!/usr/bin/env python3
"""Builds tests/fixtures/gguf/: small GGUF files for the GGUF reader's tests, written with the
`gguf` package (llama.cpp's own Python reader/writer), and the expected values from its readers.

types.gguf       one metadata key of every GGUF value type (nested arrays too), alignment 64, and
                 for each tensor type s1serve reads (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K) a
                 tensor "<type>" of random blocks (scales kept finite) next to "<type>.expected",
                 the F32 values gguf.quants.dequantize gives for it.
tiny-qwen3.gguf  tests/fixtures/tiny-qwen3-chat (BF16 weights, config, tokenizer, chat template)
                 under the tensor and key names llama.cpp's convert_hf_to_gguf.py writes for
                 Qwen3ForCausalLM (names from the gguf package's TensorNameMap, as the converter
                 takes them), vocabulary as its get_vocab_base() lays it out (BPE, pre "qwen2").
name_map.json    for each tiny fixture of our families, every safetensors tensor name and the GGUF
                 name TensorNameMap gives it: the ground truth for s1serve's name table.

It also writes the fuzz seeds in tests/fuzz/corpus/gguf. Deterministic. Run:  pip install gguf && python tools/reference/make_gguf_fixtures.py
"""
import json
import pathlib
import struct

import gguf
import numpy as np

ROOT = pathlib.Path(__file__).resolve().parents[2]
OUT = ROOT / "tests/fixtures/gguf"
FIXTURES = ROOT / "tests/fixtures"
Q = gguf.GGMLQuantizationType

# type → (offset of each f16 scale within a block), so random blocks keep finite scales.
SCALE_OFFSETS = {Q.Q8_0: [0], Q.Q4_0: [0], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208]}


def random_tensor(rng, qtype, rows, cols):
    block, block_bytes = gguf.GGML_QUANT_SIZES[qtype]
    if qtype == Q.F32:
        return rng.standard_normal((rows, cols)).astype(np.float32).view(np.uint8)
    if qtype == Q.F16:
        return rng.standard_normal((rows, cols)).astype(np.float16).view(np.uint8)
    if qtype == Q.BF16:
        bits = rng.standard_normal((rows, cols)).astype(np.float32).view(np.uint32) >> 16
        return bits.astype(np.uint16).view(np.uint8)
    blocks = rng.integers(0, 256, size=(rows * cols // block, block_bytes), dtype=np.uint8)
    for offset in SCALE_OFFSETS[qtype]:
        scales = rng.uniform(-0.05, 0.05, size=blocks.shape[0]).astype(np.float16)
        blocks[:, offset:offset + 2] = scales.view(np.uint8).reshape(-1, 2)
    return blocks.reshape(rows, -1)


def add_metadata_of_every_type(writer):
    V = gguf.GGUFValueType
    writer.add_key_value("test.uint8", 200, V.UINT8)
    writer.add_key_value("test.int8", -100, V.INT8)
    writer.add_key_value("test.uint16", 60000, V.UINT16)
    writer.add_key_value("test.int16", -30000, V.INT16)
    writer.add_key_value("test.uint32", 4000000000, V.UINT32)
    writer.add_key_value("test.int32", -2000000000, V.INT32)
    writer.add_key_value("test.float32", 0.5, V.FLOAT32)
    writer.add_key_value("test.bool", True, V.BOOL)
    writer.add_key_value("test.string", "h\u00e9llo", V.STRING)
    writer.add_key_value("test.uint64", 2**63 + 5, V.UINT64)
    writer.add_key_value("test.int64", -(2**62), V.INT64)
    writer.add_key_value("test.float64", 0.1, V.FLOAT64)
    writer.add_key_value("test.array.int32", [1, -2, 3], V.ARRAY, V.INT32)
    writer.add_key_value("test.array.string", ["a", "bc", ""], V.ARRAY, V.STRING)
    writer.add_key_value("test.array.float32", [0.25, -1.5], V.ARRAY, V.FLOAT32)
    writer.add_key_value("test.array.nested", [[1, 2], [3]], V.ARRAY, V.ARRAY)


TYPES = (Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_K, Q.Q5_K, Q.Q6_K)


def write_types(path):
    rng = np.random.default_rng(22)
    writer = gguf.GGUFWriter(str(path), arch="s1test")
    writer.add_custom_alignment(64)
    add_metadata_of_every_type(writer)
    for qtype in TYPES:
        rows, cols = 3, 512
        raw = random_tensor(rng, qtype, rows, cols)
        name = qtype.name.lower()
        writer.add_tensor(name, raw, raw_shape=raw.shape, raw_dtype=qtype)
        expected = gguf.quants.dequantize(raw, qtype).astype(np.float32)
        assert expected.shape == (rows, cols), (qtype, expected.shape)
        assert np.isfinite(expected).all()
        writer.add_tensor(name + ".expected", expected)
    finish(writer)


def finish(writer):
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def read_safetensors(path):
    """name → (dtype, shape, raw bytes), without torch (numpy has no bfloat16)."""
    data = path.read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + length])
    body = data[8 + length:]
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        begin, end = entry["data_offsets"]
        tensors[name] = (entry["dtype"], entry["shape"], body[begin:end])
    return tensors


def gguf_name(name_map, hf_name):
    mapped = name_map.get_name(hf_name, try_suffixes=(".weight", ".bias"))
    if mapped is None:
        raise SystemExit(f"TensorNameMap has no GGUF name for {hf_name}")
    return mapped


def add_bpe_vocab(writer, tokenizer_dir, vocab_size, pre):
    """As convert_hf_to_gguf.py's get_vocab_base(): ids past the tokenizer are [PAD<i>] fillers."""
    tokenizer = json.loads((tokenizer_dir / "tokenizer.json").read_text())
    config = json.loads((tokenizer_dir / "tokenizer_config.json").read_text())
    reverse = {index: token for token, index in tokenizer["model"]["vocab"].items()}
    added = {entry["id"]: entry for entry in tokenizer["added_tokens"]}
    tokens, types = [], []
    for index in range(vocab_size):
        if index in added:
            tokens.append(added[index]["content"])
            special = added[index]["special"]
            types.append(gguf.TokenType.CONTROL if special else gguf.TokenType.USER_DEFINED)
        elif index in reverse:
            tokens.append(reverse[index])
            types.append(gguf.TokenType.NORMAL)
        else:
            tokens.append(f"[PAD{index}]")
            types.append(gguf.TokenType.UNUSED)
    merges = [m if isinstance(m, str) else " ".join(m) for m in tokenizer["model"]["merges"]]
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    writer.add_token_merges(merges)
    ids = {token: index for index, token in enumerate(tokens)}
    if config.get("eos_token"):
        writer.add_eos_token_id(ids[config["eos_token"]])
    if config.get("pad_token"):
        writer.add_pad_token_id(ids[config["pad_token"]])
    writer.add_add_bos_token(bool(config.get("add_bos_token", False)))
    writer.add_chat_template(config["chat_template"])


def write_tiny_qwen3(path):
    source = FIXTURES / "tiny-qwen3-chat"
    config = json.loads((source / "config.json").read_text())
    arch = gguf.MODEL_ARCH.QWEN3
    writer = gguf.GGUFWriter(str(path), arch=gguf.MODEL_ARCH_NAMES[arch])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_feed_forward_length(config["intermediate_size"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv(config["num_key_value_heads"])
    writer.add_key_length(config["head_dim"])
    writer.add_value_length(config["head_dim"])
    writer.add_rope_freq_base(config["rope_parameters"]["rope_theta"])
    writer.add_layer_norm_rms_eps(config["rms_norm_eps"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    add_bpe_vocab(writer, source, config["vocab_size"], "qwen2")
    name_map = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    for name, (dtype, shape, raw) in sorted(read_safetensors(source / "model.safetensors").items()):
        assert dtype == "BF16", (name, dtype)
        array = np.frombuffer(raw, dtype=np.uint8).reshape(*shape[:-1], shape[-1] * 2)
        writer.add_tensor(gguf_name(name_map, name), array, raw_shape=array.shape, raw_dtype=Q.BF16)
    finish(writer)


# Our tiny fixtures of each family, with the llama.cpp architecture their converter writes.
FAMILIES = {
    "qwen3": ("tiny-qwen3-chat", gguf.MODEL_ARCH.QWEN3),
    "qwen35": ("tiny-qwen3_5-chat", gguf.MODEL_ARCH.QWEN35),
    "lfm2": ("tiny-lfm2", gguf.MODEL_ARCH.LFM2),
}


def write_name_map(path):
    result = {}
    for family, (folder, arch) in FAMILIES.items():
        source = FIXTURES / folder
        config = json.loads((source / "config.json").read_text())
        layers = config.get("num_hidden_layers") or config["text_config"]["num_hidden_layers"]
        name_map = gguf.get_tensor_name_map(arch, layers)
        names = sorted(read_safetensors(source / "model.safetensors"))
        result[family] = {name: name_map.get_name(name, try_suffixes=(".weight", ".bias")) for name in names}
    path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


def write_fuzz_seeds(folder):
    """Small files (the fuzzer reads at most 64 KiB): metadata alone, and one block of each type."""
    folder.mkdir(parents=True, exist_ok=True)
    writer = gguf.GGUFWriter(str(folder / "metadata"), arch="s1test")
    add_metadata_of_every_type(writer)
    finish(writer)
    rng = np.random.default_rng(23)
    writer = gguf.GGUFWriter(str(folder / "one_block_of_each_type"), arch="s1test")
    for qtype in TYPES:
        raw = random_tensor(rng, qtype, 1, 256)
        writer.add_tensor(qtype.name.lower(), raw, raw_shape=raw.shape, raw_dtype=qtype)
    finish(writer)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    write_types(OUT / "types.gguf")
    write_tiny_qwen3(OUT / "tiny-qwen3.gguf")
    write_name_map(OUT / "name_map.json")
    write_fuzz_seeds(ROOT / "tests/fuzz/corpus/gguf")


if __name__ == "__main__":
    main()
