#!/usr/bin/env python3
"""Builds tests/fixtures/gguf/: small GGUF files for the GGUF reader's tests, written with the
`gguf` package (llama.cpp's own Python reader/writer), and the expected values from its readers.

types.gguf       one metadata key of every GGUF value type (nested arrays too), alignment 64, and
                 for each tensor type s1serve reads (F32, F16, BF16, Q8_0, Q4_0, Q4_K, Q5_K, Q6_K,
                 Q5_0) a tensor "<type>" of random blocks (scales kept finite) next to
                 "<type>.expected", the F32 values gguf.quants.dequantize gives for it; and
                 "q5_0.source" with "q5_0.quantized", gguf.quants.quantize's Q5_0 of it.
tiny-qwen3.gguf  tests/fixtures/tiny-qwen3-chat (BF16 weights, config, tokenizer, chat template)
                 under the tensor and key names llama.cpp's convert_hf_to_gguf.py writes for
                 Qwen3ForCausalLM (names from the gguf package's TensorNameMap, as the converter
                 takes them), vocabulary as its get_vocab_base() lays it out (BPE, pre "qwen2").
tiny-qwen3-q8_0.gguf  the same with every matrix quantised to Q8_0 by the gguf package.
tiny-qwen35.gguf tests/fixtures/tiny-qwen3_5-chat's weights with the value changes the converter
                 makes for Qwen3.5 (norms + 1, A_log as -exp, conv squeezed, value heads tiled),
                 reimplemented here in numpy from its code: what loading must undo.
sentencepiece/   vocab.gguf (a SentencePiece BPE vocabulary as llama.cpp writes it), the
                 tokenizer.json Transformers converts the same model to, and HF tokenizers' ids for
                 the shorter lines of tests/parity/text/corpus.jsonl.
tiny-lfm2.gguf   tests/fixtures/tiny-lfm2 under LFM2Model's keys and names (conv kernels 2-D).
name_map.json    for each tiny fixture of our families, every safetensors tensor name and the GGUF
                 name TensorNameMap gives it: the ground truth for s1serve's name table.

It also writes the fuzz seeds in tests/fuzz/corpus/gguf. Deterministic. Run:  pip install gguf sentencepiece transformers protobuf && python tools/reference/make_gguf_fixtures.py
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
SCALE_OFFSETS = {Q.Q8_0: [0], Q.Q4_0: [0], Q.Q5_0: [0], Q.Q4_K: [0, 2], Q.Q5_K: [0, 2], Q.Q6_K: [208]}


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


TYPES = (Q.F32, Q.F16, Q.BF16, Q.Q8_0, Q.Q4_0, Q.Q4_K, Q.Q5_K, Q.Q6_K, Q.Q5_0)


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
    # s1serve quantize writes Q5_0 (llama.cpp's fallback for Q4_K rows that are not whole blocks):
    # random values and the gguf package's quantisation of them, which ours must equal bit for bit.
    source = rng.standard_normal((3, 512)).astype(np.float32)
    writer.add_tensor("q5_0.source", source)
    quantized = gguf.quants.quantize(source, Q.Q5_0)
    writer.add_tensor("q5_0.quantized", quantized, raw_shape=quantized.shape, raw_dtype=Q.Q5_0)
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


def add_text_model_keys(writer, config):
    """TextModel.set_gguf_parameters' keys."""
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


def write_tiny_qwen3(path, qtype=Q.BF16, add_keys=None):
    """BF16 keeps the fixture's weights exactly; Q8_0 quantises every matrix with the gguf package
    (as the converter's --outtype q8_0 does), keeping 1-D tensors in F32. add_keys(writer) adds
    metadata after the vocabulary (the decision fixtures' keys)."""
    source = FIXTURES / "tiny-qwen3-chat"
    config = json.loads((source / "config.json").read_text())
    arch = gguf.MODEL_ARCH.QWEN3
    writer = gguf.GGUFWriter(str(path), arch=gguf.MODEL_ARCH_NAMES[arch])
    add_text_model_keys(writer, config)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_BF16 if qtype == Q.BF16 else gguf.LlamaFileType.MOSTLY_Q8_0)
    add_bpe_vocab(writer, source, config["vocab_size"], "qwen2")
    if add_keys:
        add_keys(writer)
    name_map = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    for name, (dtype, shape, raw) in sorted(read_safetensors(source / "model.safetensors").items()):
        assert dtype == "BF16", (name, dtype)
        if qtype == Q.BF16:
            array = np.frombuffer(raw, dtype=np.uint8).reshape(*shape[:-1], shape[-1] * 2)
            writer.add_tensor(gguf_name(name_map, name), array, raw_shape=array.shape, raw_dtype=Q.BF16)
        elif len(shape) == 1:
            writer.add_tensor(gguf_name(name_map, name), bf16_to_f32(raw, shape))
        else:
            blocks = gguf.quants.quantize(bf16_to_f32(raw, shape), qtype)
            writer.add_tensor(gguf_name(name_map, name), blocks, raw_shape=blocks.shape, raw_dtype=qtype)
    finish(writer)


def lfm2_ff_dim(config):
    """LFM2Model._add_feed_forward_length: the width after Transformers' auto-adjustment."""
    ff_dim = config.get("block_ff_dim", config["intermediate_size"])
    if config["block_auto_adjust_ff_dim"]:
        ff_dim = int(2 * ff_dim / 3)
        if config["block_ffn_dim_multiplier"] is not None:
            ff_dim = int(config["block_ffn_dim_multiplier"] * ff_dim)
        multiple_of = config["block_multiple_of"]
        ff_dim = multiple_of * ((ff_dim + multiple_of - 1) // multiple_of)
    return ff_dim


def write_tiny_lfm2(path):
    """tests/fixtures/tiny-lfm2 as LFM2Model writes it: TextModel's keys with a per-layer
    head_count_kv (0 for short-conv layers), conv kernels squeezed to 2-D, BF16 weights."""
    source = FIXTURES / "tiny-lfm2"
    config = json.loads((source / "config.json").read_text())
    arch = gguf.MODEL_ARCH.LFM2
    writer = gguf.GGUFWriter(str(path), arch=gguf.MODEL_ARCH_NAMES[arch])
    writer.add_context_length(config["max_position_embeddings"])
    writer.add_embedding_length(config["hidden_size"])
    writer.add_block_count(config["num_hidden_layers"])
    writer.add_head_count(config["num_attention_heads"])
    writer.add_head_count_kv([config["num_key_value_heads"] if kind != "conv" else 0 for kind in config["layer_types"]])
    writer.add_rope_freq_base(config["rope_parameters"]["rope_theta"])
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    writer.add_vocab_size(config["vocab_size"])
    writer.add_shortconv_l_cache(config["conv_L_cache"])
    writer.add_layer_norm_rms_eps(config["norm_eps"])
    writer.add_feed_forward_length(lfm2_ff_dim(config))
    name_map = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    for name, (dtype, shape, raw) in sorted(read_safetensors(source / "model.safetensors").items()):
        assert dtype == "BF16", (name, dtype)
        if "conv.conv" in name:
            assert shape[1] == 1, (name, shape)
            shape = [shape[0], shape[2]]
        array = np.frombuffer(raw, dtype=np.uint8).reshape(*shape[:-1], shape[-1] * 2)
        writer.add_tensor(gguf_name(name_map, name), array, raw_shape=array.shape, raw_dtype=Q.BF16)
    finish(writer)


MINILM = pathlib.Path.home() / ".local/share/s1serve/models/all-minilm-l6-v2"


def qwen35_rename(name):
    # Qwen3NextModel.modify_tensors renames dt_bias before TensorNameMap sees it.
    return name[: -len(".dt_bias")] + ".dt_proj.bias" if name.endswith(".dt_bias") else name


def bf16_to_f32(raw, shape):
    return (np.frombuffer(raw, dtype=np.uint16).astype(np.uint32) << 16).view(np.float32).reshape(shape)


def reorder_v_heads(tensor, dim, num_k_heads, num_v_per_k, head_dim):
    """_LinearAttentionVReorderBase._reorder_v_heads: value heads from grouped-by-key to tiled."""
    shape = list(tensor.shape)
    new_shape = shape[:dim] + [num_k_heads, num_v_per_k, head_dim] + shape[dim + 1:]
    return np.swapaxes(tensor.reshape(new_shape), dim, dim + 1).reshape(shape)


def qwen35_converted(name, data, config):
    """What convert_hf_to_gguf.py's Qwen3.5 path does to a tensor's values (computed in f32)."""
    num_k, num_v = config["linear_num_key_heads"], config["linear_num_value_heads"]
    head_k, head_v = config["linear_key_head_dim"], config["linear_value_head_dim"]
    per_k = num_v // num_k
    if num_k != num_v and "linear_attn." in name:
        if ".in_proj_qkv." in name:
            qk = 2 * head_k * num_k
            data = np.concatenate([data[:qk], reorder_v_heads(data[qk:], 0, num_k, per_k, head_v)])
        elif ".in_proj_z." in name:
            data = reorder_v_heads(data, 0, num_k, per_k, head_v)
        elif ".in_proj_b." in name or ".in_proj_a." in name:
            data = reorder_v_heads(data, 0, num_k, per_k, 1)
        elif ".A_log" in name or ".dt_bias" in name:
            data = reorder_v_heads(data[:, None], 0, num_k, per_k, 1)[:, 0]
        elif ".conv1d" in name:
            data = data.squeeze()
            qk = 2 * head_k * num_k
            data = np.concatenate([data[:qk], reorder_v_heads(data[qk:], 0, num_k, per_k, head_v)])
        elif ".out_proj." in name:
            data = reorder_v_heads(data, 1, num_k, per_k, head_v)
    if name.endswith(".A_log"):
        data = -np.exp(data)
    elif name.endswith(".dt_bias"):
        name = name[: -len(".dt_bias")] + ".dt_proj.bias"
    elif "conv1d" in name:
        data = data.squeeze()
    elif name.endswith("norm.weight") and not name.endswith("linear_attn.norm.weight"):
        data = data + np.float32(1)
    return name, np.ascontiguousarray(data, dtype=np.float32)


def write_tiny_qwen35(path):
    """tests/fixtures/tiny-qwen3_5-chat as the converter writes it: its keys, its weights with the
    converter's value changes, and the Qwen3.5 tiny tokenizer's vocabulary (pre "qwen35")."""
    source = FIXTURES / "tiny-qwen3_5-chat"
    config = json.loads((source / "config.json").read_text())
    arch = gguf.MODEL_ARCH.QWEN35
    writer = gguf.GGUFWriter(str(path), arch=gguf.MODEL_ARCH_NAMES[arch])
    add_text_model_keys(writer, config)
    writer.add_ssm_conv_kernel(config["linear_conv_kernel_dim"])
    writer.add_full_attention_interval(config["layer_types"].index("full_attention") + 1)
    rope = config["rope_parameters"]
    writer.add_rope_dimension_count(int(config["head_dim"] * rope["partial_rotary_factor"]))
    writer.add_rope_dimension_sections(rope["mrope_section"] + [0] * (4 - len(rope["mrope_section"])))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_BF16)
    writer.add_ssm_group_count(config["linear_num_key_heads"])
    writer.add_ssm_time_step_rank(config["linear_num_value_heads"])
    writer.add_ssm_state_size(config["linear_key_head_dim"])
    writer.add_ssm_inner_size(config["linear_value_head_dim"] * config["linear_num_value_heads"])
    add_bpe_vocab(writer, FIXTURES / "qwen-tiny-tokenizer/qwen3_5", config["vocab_size"], "qwen35")
    name_map = gguf.get_tensor_name_map(arch, config["num_hidden_layers"])
    for name, (dtype, shape, raw) in sorted(read_safetensors(source / "model.safetensors").items()):
        assert dtype == "BF16", (name, dtype)
        new_name, data = qwen35_converted(name, bf16_to_f32(raw, shape), config)
        # The converter keeps 1-D tensors and norms in F32; the rest stay BF16 (exact here: the
        # reorders only move values).
        if data.ndim <= 1 or new_name.endswith("norm.weight"):
            writer.add_tensor(gguf_name(name_map, new_name), data)
        else:
            bits = (data.view(np.uint32) >> 16).astype(np.uint16).view(np.uint8)
            raw_bf16 = bits.reshape(*data.shape[:-1], data.shape[-1] * 2)
            writer.add_tensor(gguf_name(name_map, new_name), raw_bf16, raw_shape=raw_bf16.shape,
                              raw_dtype=Q.BF16)
    finish(writer)


# Checkpoints of each family (our tiny fixtures; MiniLM, the default model, for BERT when fetched),
# with the llama.cpp architecture their converter writes and its renaming before TensorNameMap.
FAMILIES = {
    "qwen3": (FIXTURES / "tiny-qwen3-chat", gguf.MODEL_ARCH.QWEN3, lambda name: name),
    "qwen35": (FIXTURES / "tiny-qwen3_5-chat", gguf.MODEL_ARCH.QWEN35, qwen35_rename),
    "lfm2": (FIXTURES / "tiny-lfm2", gguf.MODEL_ARCH.LFM2, lambda name: name),
    "modern-bert": (ROOT / "tests/parity/modernbert/bias_every_2", gguf.MODEL_ARCH.MODERN_BERT, lambda name: name),
    "bert": (MINILM, gguf.MODEL_ARCH.BERT, lambda name: name),
}


def write_name_map(path):
    result = {}
    for architecture, (source, arch, rename) in FAMILIES.items():
        if not source.exists():
            raise SystemExit(f"{source} is missing (scripts/fetch-default-model fetches MiniLM)")
        config = json.loads((source / "config.json").read_text())
        layers = config.get("num_hidden_layers") or config["text_config"]["num_hidden_layers"]
        name_map = gguf.get_tensor_name_map(arch, layers)
        # BertModel's converter drops the position-id buffer and the pooler (unused by
        # sentence-transformers' mean pooling); the name map leaves them out likewise.
        names = sorted(name for name in read_safetensors(source / "model.safetensors")
                       if name != "embeddings.position_ids" and not name.startswith("pooler."))
        mapped = {name: name_map.get_name(rename(name), try_suffixes=(".weight", ".bias")) for name in names}
        unmapped = [name for name, gguf_name in mapped.items() if gguf_name is None]
        if unmapped:
            raise SystemExit(f"{architecture}: TensorNameMap has no GGUF name for {unmapped}")
        result[architecture] = mapped
    path.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")


def corpus_texts():
    return [json.loads(line) for line in (ROOT / "tests/parity/text/corpus.jsonl").read_text().splitlines() if line.strip()]


def write_sentencepiece(folder):
    """A SentencePiece BPE model trained on the corpus's Latin-script lines (the rest exercise
    byte fallback), as llama.cpp's _set_vocab_sentencepiece writes it (vocab.gguf) and as
    Transformers converts it (tokenizer.json), with HF tokenizers' ids for the corpus's shorter lines."""
    import io

    import sentencepiece
    from tokenizers import Tokenizer
    from transformers import LlamaTokenizer
    from transformers.convert_slow_tokenizer import SentencePieceExtractor

    folder.mkdir(parents=True, exist_ok=True)
    texts = corpus_texts()
    training = [text for text in texts if text.strip() and all(ord(c) < 0x250 for c in text)]
    model = io.BytesIO()
    sentencepiece.SentencePieceTrainer.train(
        sentence_iterator=iter(training), model_writer=model, vocab_size=1000, model_type="bpe",
        byte_fallback=True, character_coverage=1.0, split_digits=True, num_threads=1,
        user_defined_symbols=["<start_of_turn>", "<end_of_turn>"], unk_id=0, bos_id=1, eos_id=2, pad_id=3,
        max_sentence_length=100000, minloglevel=2)
    model_path = folder / "tokenizer.model.tmp"
    model_path.write_bytes(model.getvalue())
    try:
        processor = sentencepiece.SentencePieceProcessor(model_file=str(model_path))
        extracted = SentencePieceExtractor(str(model_path)).extract(None)
    finally:
        model_path.unlink()
    hf = LlamaTokenizer(vocab=extracted["vocab"], merges=extracted["merges"],
                        additional_special_tokens=extracted["additional_special_tokens"],
                        add_bos_token=True, bos_token="<s>", eos_token="</s>", unk_token="<unk>")
    tokenizer_json = json.loads(hf.backend_tokenizer.to_str())
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer_json, ensure_ascii=False, indent=1) + "\n")

    writer = gguf.GGUFWriter(str(folder / "vocab.gguf"), arch="llama")
    tokens, scores, types = [], [], []
    for index in range(processor.vocab_size()):
        tokens.append(processor.id_to_piece(index))
        scores.append(processor.get_score(index))
        if processor.is_unknown(index):
            types.append(gguf.TokenType.UNKNOWN)
        elif processor.is_control(index):
            types.append(gguf.TokenType.CONTROL)
        elif processor.is_byte(index):
            types.append(gguf.TokenType.BYTE)
        elif tokens[-1] in ("<start_of_turn>", "<end_of_turn>"):
            # The converter marks tokenizer_config's non-special added tokens user-defined.
            types.append(gguf.TokenType.USER_DEFINED)
        else:
            types.append(gguf.TokenType.NORMAL)
    writer.add_tokenizer_model("llama")
    writer.add_tokenizer_pre("default")
    writer.add_token_list(tokens)
    writer.add_token_scores(scores)
    writer.add_token_types(types)
    writer.add_bos_token_id(processor.bos_id())
    writer.add_eos_token_id(processor.eos_id())
    writer.add_unk_token_id(processor.unk_id())
    writer.add_pad_token_id(processor.pad_id())
    writer.add_add_bos_token(True)
    writer.add_add_space_prefix(True)
    finish(writer)

    # Lines of up to 64 ids keep the file small; the test also compares every line against the
    # tokenizer.json as s1serve loads it.
    reference = Tokenizer.from_str(json.dumps(tokenizer_json))
    with (folder / "expected.jsonl").open("w") as out:
        for line, text in enumerate(texts):
            ids = reference.encode(text, add_special_tokens=True).ids
            if len(ids) <= 64:
                out.write(json.dumps({"line": line, "ids": ids}) + "\n")


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
    # Small vocabularies of both tokenizer models.
    for model in ("gpt2", "llama"):
        writer = gguf.GGUFWriter(str(folder / f"vocab_{model}"), arch="s1test")
        writer.add_tokenizer_model(model)
        writer.add_tokenizer_pre("qwen2" if model == "gpt2" else "default")
        space = "\u0120" if model == "gpt2" else "\u2581"
        tokens = ["<s>", "H", "e", "l", "o", space, "w", "r", "d", "He", "ll", "llo", space + "w"]
        writer.add_token_list(tokens)
        writer.add_token_types([gguf.TokenType.CONTROL] + [gguf.TokenType.NORMAL] * (len(tokens) - 1))
        if model == "gpt2":
            writer.add_token_merges(["H e", "l l", "ll o", space + " w"])
        else:
            writer.add_token_scores([0.0] + [-float(i) for i in range(1, len(tokens))])
            writer.add_bos_token_id(0)
        finish(writer)
    # A Qwen3.5 layer of 1 key head and 2 value heads of width 2, so the mapper's reorders run.
    writer = gguf.GGUFWriter(str(folder / "qwen35_layer"), arch="qwen35")
    writer.add_ssm_group_count(1)
    writer.add_ssm_time_step_rank(2)
    writer.add_ssm_state_size(2)
    writer.add_ssm_inner_size(4)
    shapes = {"blk.0.ssm_a": (2,), "blk.0.ssm_dt.bias": (2,), "blk.0.ssm_alpha.weight": (2, 4),
              "blk.0.attn_gate.weight": (4, 4), "blk.0.attn_qkv.weight": (8, 4), "blk.0.ssm_conv1d.weight": (8, 3),
              "blk.0.ssm_out.weight": (4, 4), "blk.0.attn_norm.weight": (4,)}
    for name, shape in shapes.items():
        writer.add_tensor(name, -rng.uniform(0.5, 1.5, size=shape).astype(np.float32))
    finish(writer)


def main():
    OUT.mkdir(parents=True, exist_ok=True)
    write_types(OUT / "types.gguf")
    write_tiny_qwen3(OUT / "tiny-qwen3.gguf")
    write_tiny_qwen3(OUT / "tiny-qwen3-q8_0.gguf", Q.Q8_0)
    write_tiny_qwen35(OUT / "tiny-qwen35.gguf")
    write_tiny_lfm2(OUT / "tiny-lfm2.gguf")
    write_name_map(OUT / "name_map.json")
    write_sentencepiece(OUT / "sentencepiece")
    write_fuzz_seeds(ROOT / "tests/fuzz/corpus/gguf")


if __name__ == "__main__":
    main()
