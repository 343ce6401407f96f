"""Peer side of the decoder-prefill benchmark (docs/benchmarks/decoder-prefill.md).

Random-weight checkpoints with real model shapes, and the time Transformers and llama.cpp take to
prefill them (batch 1, last-position logits only). Random weights are enough: prefill time depends
on shapes and dtypes, not on values, and no peer here may see a real checkpoint the engine lacks.

Subcommands:
  make --out DIR          DIR/qwen3-0.6b and DIR/qwen3.5-2b: seeded random init, BF16 safetensors,
                          config.json, a byte-level BPE tokenizer (see make_tokenizer)
  gguf --model DIR        DIR/ggml-model-{bf16,q8_0}.gguf with llama.cpp's convert_hf_to_gguf.py taken
                          from the sdist of the installed llama-cpp-python (same llama.cpp revision)
  time --model DIR        median (p10, p90) ms of a --tokens prefill on --threads threads for
                          transformers_{fp32,bf16}_<attn> and llamacpp_{bf16,q8_0}; one JSON object
                          per peer on stdout, each peer in its own process

    nice -n 10 /work/.venv-ref/bin/python bench/peers/decoder_prefill_peers.py make --out /work/bench-models
    nice -n 10 /work/.venv-ref/bin/python bench/peers/decoder_prefill_peers.py gguf --model /work/bench-models/qwen3-0.6b
    /work/.venv-ref/bin/python bench/peers/decoder_prefill_peers.py time --model /work/bench-models/qwen3-0.6b
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import runpy
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from importlib import metadata
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
FIXTURE_TOKENIZER = REPO / "tests" / "fixtures" / "qwen-tiny-tokenizer"
MANIFEST = "s1serve_bench.json"
GGUF_TYPES = ("bf16", "q8_0")

# Shapes. "verified" / "assumed" is what the shapes rest on; it goes into the manifest and README.
QWEN3_0_6B = {
    "architectures": ["Qwen3ForCausalLM"],
    "model_type": "qwen3",
    "vocab_size": 151936,
    "hidden_size": 1024,
    "intermediate_size": 3072,
    "num_hidden_layers": 28,
    "num_attention_heads": 16,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "hidden_act": "silu",
    "max_position_embeddings": 40960,
    "max_window_layers": 28,
    "rms_norm_eps": 1e-6,
    "rope_parameters": {"rope_type": "default", "rope_theta": 1000000.0},
    "attention_bias": False,
    "attention_dropout": 0.0,
    "use_sliding_window": False,
    "sliding_window": None,
    "tie_word_embeddings": True,
    "bos_token_id": 151643,
    "eos_token_id": 151645,
    "initializer_range": 0.02,
}

QWEN3_5_2B_LAYERS = 24
QWEN3_5_2B = {
    "architectures": ["Qwen3_5ForCausalLM"],
    "model_type": "qwen3_5_text",
    "vocab_size": 248320,
    "hidden_size": 2048,
    "intermediate_size": 6144,
    "num_hidden_layers": QWEN3_5_2B_LAYERS,
    "num_attention_heads": 8,
    "num_key_value_heads": 2,
    "head_dim": 256,
    "hidden_act": "silu",
    "max_position_embeddings": 262144,
    "rms_norm_eps": 1e-6,
    "rope_parameters": {
        "rope_type": "default",
        "rope_theta": 10000000.0,
        "partial_rotary_factor": 0.25,
        "mrope_section": [11, 11, 10],
        "mrope_interleaved": True,
    },
    "attention_bias": False,
    "attention_dropout": 0.0,
    "linear_conv_kernel_dim": 4,
    "linear_key_head_dim": 128,
    "linear_value_head_dim": 128,
    "linear_num_key_heads": 16,
    "linear_num_value_heads": 16,
    "layer_types": ["full_attention" if (i + 1) % 4 == 0 else "linear_attention"
                    for i in range(QWEN3_5_2B_LAYERS)],
    "tie_word_embeddings": True,
    "eos_token_id": 248044,
    "initializer_range": 0.02,
}

MODELS = {
    "qwen3-0.6b": {
        "config": QWEN3_0_6B,
        "verified": "every field copied from Qwen/Qwen3-0.6B config.json (hidden 1024, 28 layers, "
                    "16 q / 8 kv heads, head_dim 128, MLP 3072, vocab 151936, tied, rope_theta 1e6, "
                    "40960 positions, rms eps 1e-6)",
        "assumed": "",
    },
    "qwen3.5-2b": {
        "config": QWEN3_5_2B,
        "verified": "reference/models.md 2.A.1 [V]: 24 layers = 18 GDN + 6 full (every 4th), hidden 2048, "
                    "q/kv heads 8/2, head_dim 256, partial rotary 0.25, GDN k/v head dim 128, 16 GDN v heads, "
                    "conv kernel 4, vocab 248320, tied, rms eps 1e-6, mrope_section [11,11,10]",
        "assumed": "UNVERIFIED for the 2B: 16 GDN key heads, MLP 6144, rope_theta 1e7 (the 0.8B/4B/27B value), "
                   "262144 positions (what Qwen3.5 checkpoints declare)",
    },
}


# ---------------------------------------------------------------------------------------------
# make


def make_tokenizer(out: Path) -> str:
    """Writes a tokenizer into `out` and says where it came from.

    The benchmark feeds token ids directly, so the tokenizer only has to satisfy the GGUF
    converter and llama.cpp's loader (a GPT-2 style BPE with merges). The shared test fixture is
    preferred when it exists; otherwise a byte-level BPE with Qwen2's pre-tokenizer regex, the 256
    byte symbols, a few merges and Qwen's three chat specials is built here.
    """
    if FIXTURE_TOKENIZER.is_dir() and (FIXTURE_TOKENIZER / "tokenizer.json").is_file():
        for f in FIXTURE_TOKENIZER.iterdir():
            if f.is_file():
                shutil.copy2(f, out / f.name)
        return f"copied from {FIXTURE_TOKENIZER.relative_to(REPO)}"

    from tokenizers import pre_tokenizers

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    vocab = {c: i for i, c in enumerate(alphabet)}
    merges = [("Ġ", "t"), ("h", "e"), ("i", "n"), ("Ġt", "he"), ("Ġ", "a"), ("e", "r"), ("o", "n"), ("r", "e")]
    for a, b in merges:
        vocab[a + b] = len(vocab)
    specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    qwen2_split = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*"
                   r"|\s*[\r\n]+|\s+(?!\S)|\s+")
    byte_level = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False}
    tokenizer = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [{"id": len(vocab) + i, "content": s, "single_word": False, "lstrip": False,
                          "rstrip": False, "normalized": False, "special": True}
                         for i, s in enumerate(specials)],
        "normalizer": {"type": "NFC"},
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": qwen2_split}, "behavior": "Isolated", "invert": False},
            byte_level]},
        "post_processor": byte_level,
        "decoder": byte_level,
        "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": "",
                  "end_of_word_suffix": "", "fuse_unk": False, "byte_fallback": False,
                  "ignore_merges": False, "vocab": vocab, "merges": [[a, b] for a, b in merges]},
    }
    (out / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
    (out / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "eos_token": "<|im_end|>",
        "pad_token": "<|endoftext|>", "bos_token": None, "add_bos_token": False}))
    return "built by decoder_prefill_peers.py (byte-level BPE, Qwen2 split regex, 8 merges, 3 specials)"


def make_one(name: str, out: Path, seed: int) -> None:
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM

    spec = MODELS[name]
    cfg = dict(spec["config"])
    model_type = cfg.pop("model_type")
    architectures = cfg.pop("architectures")
    config = AutoConfig.for_model(model_type, **cfg)
    config.architectures = architectures

    torch.manual_seed(seed)
    t0 = time.perf_counter()
    model = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    cls = type(model).__name__
    if cls != architectures[0]:
        raise SystemExit(f"{name}: built {cls}, expected {architectures[0]}")
    n_params = sum(p.numel() for p in model.parameters())
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    del model
    tokenizer_source = make_tokenizer(out)
    manifest = {
        "name": name,
        "class": cls,
        "seed": seed,
        "dtype": "bfloat16",
        "parameters": n_params,
        "init": "Transformers' own _init_weights (normal std 0.02 for projections/embeddings, "
                "model-specific init for norms and GDN A_log/dt_bias), torch.manual_seed(seed)",
        "shapes_verified": spec["verified"],
        "shapes_assumed": spec["assumed"],
        "tokenizer": tokenizer_source,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
    }
    (out / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    log(f"{name}: {cls}, {n_params / 1e6:.1f} M parameters -> {out} ({time.perf_counter() - t0:.0f} s)")


def cmd_make(args) -> None:
    names = args.only.split(",") if args.only else list(MODELS)
    for name in names:
        if name not in MODELS:
            raise SystemExit(f"unknown model {name!r}; known: {', '.join(MODELS)}")
        # One process per model: the 2B init must not share a heap with the 0.6B.
        run_self(["_make-one", "--name", name, "--out", str(Path(args.out) / name), "--seed", str(args.seed)])


# ---------------------------------------------------------------------------------------------
# gguf


def llama_cpp_source(cache: Path) -> Path:
    """The llama.cpp tree (converter, conversion/, gguf-py/) of the installed llama-cpp-python.

    The converter must match the runtime that loads its output, so it comes from the sdist of the
    exact installed version (pip download), not from a separate gguf release.
    """
    version = metadata.version("llama_cpp_python")
    root = cache / f"llama-cpp-python-{version}"
    tree = root / "vendor" / "llama.cpp"
    if (tree / "convert_hf_to_gguf.py").is_file():
        return tree
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:",
                        "--dest", tmp, f"llama-cpp-python=={version}"], check=True)
        (sdist,) = Path(tmp).glob("llama_cpp_python-*.tar.gz")
        with tarfile.open(sdist) as tar:
            prefix = tar.getnames()[0].split("/")[0]
            wanted = [m for m in tar.getmembers()
                      if m.name.startswith(f"{prefix}/vendor/llama.cpp/")
                      and (m.name.endswith("convert_hf_to_gguf.py")
                           or f"{prefix}/vendor/llama.cpp/conversion/" in m.name
                           or f"{prefix}/vendor/llama.cpp/gguf-py/" in m.name)]
            tar.extractall(tmp, members=wanted, filter="data")
        shutil.rmtree(root, ignore_errors=True)
        shutil.move(str(Path(tmp) / prefix), root)
    return tree


def convert_in_process(tree: Path, model: Path, outtype: str, outfile: Path, pre: str, extra: list[str]) -> None:
    """Runs convert_hf_to_gguf.py in this process with one patch.

    The converter names the pre-tokenizer by hashing how the tokenizer splits a probe string and
    refuses unknown hashes. The stand-in tokenizer is unknown to it, and token ids are fed
    directly, so an unknown hash is answered with the real model's pre-tokenizer name.
    """
    sys.path.insert(0, str(tree))
    sys.path.insert(1, str(tree / "gguf-py"))
    import conversion.base as base

    original = base.TextModel.get_vocab_base_pre

    def get_vocab_base_pre(self, tokenizer):
        try:
            return original(self, tokenizer)
        except NotImplementedError:
            log(f"unknown pre-tokenizer hash (stand-in tokenizer): using {pre!r}")
            return pre

    base.TextModel.get_vocab_base_pre = get_vocab_base_pre
    sys.argv = ["convert_hf_to_gguf.py", str(model), "--outtype", outtype, "--outfile", str(outfile), *extra]
    runpy.run_path(str(tree / "convert_hf_to_gguf.py"), run_name="__main__")


def cmd_gguf(args) -> None:
    model = Path(args.model)
    config = json.loads((model / "config.json").read_text())
    arch = config["architectures"][0]
    tree = llama_cpp_source(Path(args.cache))
    registry = (tree / "conversion" / "__init__.py").read_text() + (tree / "convert_hf_to_gguf.py").read_text()
    if f'"{arch}"' not in registry:
        raise SystemExit(f"llama.cpp {metadata.version('llama_cpp_python')} ({tree}) has no converter for {arch}")
    qwen3_5 = arch.startswith("Qwen3_5")
    pre = "qwen35" if qwen3_5 else "qwen2"
    # Qwen3.5 checkpoints ship a multi-token-prediction block the converter insists on unless told
    # to drop it; these checkpoints have none and prefill never runs it.
    extra = ["--no-mtp"] if qwen3_5 else []
    for outtype in args.types.split(","):
        outfile = model / f"ggml-model-{outtype}.gguf"
        t0 = time.perf_counter()
        run_self(["_convert-one", "--tree", str(tree), "--model", str(model), "--outtype", outtype,
                  "--outfile", str(outfile), "--pre", pre, *extra])
        gguf_arch = gguf_architecture(tree, outfile)
        log(f"{outfile}: {outfile.stat().st_size / 2**20:.0f} MiB, general.architecture={gguf_arch} "
            f"({time.perf_counter() - t0:.0f} s)")


def gguf_architecture(tree: Path, path: Path) -> str:
    sys.path.insert(0, str(tree / "gguf-py"))
    from gguf import GGUFReader

    field = GGUFReader(path).fields["general.architecture"]
    return bytes(field.parts[field.data[0]]).decode()


# ---------------------------------------------------------------------------------------------
# time


def token_ids(vocab_size: int, n: int, seed: int) -> list[int]:
    import random

    # Below 150000: inside the ordinary-token range of both Qwen vocabularies.
    rng = random.Random(seed)
    return [rng.randrange(0, min(vocab_size, 150000)) for _ in range(n)]


def time_calls(fn, warmup: int, reps: int) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1e3)
    return out


def time_transformers(model_dir: Path, dtype_name: str, attn: str, ids: list[int], threads: int,
                      warmup: int, reps: int):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    dtype = {"fp32": torch.float32, "bf16": torch.bfloat16}[dtype_name]
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dtype, attn_implementation=attn)
    model.eval()
    input_ids = torch.tensor([ids], dtype=torch.long)
    last = {}

    def run():
        with torch.inference_mode():
            out = model(input_ids=input_ids, use_cache=False, logits_to_keep=1)
        last["logits"] = out.logits

    times = time_calls(run, warmup, reps)
    if last["logits"].shape[1] != 1:
        raise SystemExit(f"logits_to_keep=1 ignored: logits shape {tuple(last['logits'].shape)}")
    logits = last["logits"][0, -1].float().numpy()
    info = {"transformers": transformers.__version__, "torch": torch.__version__,
            "torch_threads": torch.get_num_threads(), "attn_implementation": attn,
            "call": "model(input_ids, use_cache=False, logits_to_keep=1) under inference_mode"}
    return times, logits, info


def time_llamacpp(gguf: Path, flash_attn: bool, extra_bufts: bool, ids: list[int], threads: int, warmup: int,
                  reps: int):
    import ctypes

    import numpy as np
    import llama_cpp
    import llama_cpp.llama_cpp as capi

    if not extra_bufts:
        # llama-cpp-python has no argument for llama_model_params.use_extra_bufts (llama.cpp's
        # --no-repack): without it, weights stay in plain CPU buffers instead of AMX/repacked ones.
        default_params = capi.llama_model_default_params

        def model_params():
            params = default_params()
            params.use_extra_bufts = False
            return params

        capi.llama_model_default_params = model_params

    llm = llama_cpp.Llama(model_path=str(gguf), n_threads=threads, n_threads_batch=threads,
                          n_batch=len(ids), n_ubatch=len(ids), n_ctx=len(ids) + 8, logits_all=False,
                          flash_attn=flash_attn, verbose=False)

    def last_logits():
        # With logits_all False, eval() keeps no scores; the context still holds the last row.
        row = llm._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(ctypes.cast(row, ctypes.POINTER(ctypes.c_float)),
                                     shape=(llm.n_vocab(),)).copy()

    first = {}

    def run():
        llm.reset()
        llm.eval(ids)
        if "logits" not in first:
            first["logits"] = last_logits()

    times = time_calls(run, warmup, reps)
    logits = last_logits()
    # reset() must clear the KV cache and, for Qwen3.5, the recurrent GDN state; a leak shows as
    # the last call disagreeing with the first.
    repeat_diff = float(np.max(np.abs(logits - first["logits"])))
    if repeat_diff > 1e-3:
        raise SystemExit(f"{gguf.name}: last call differs from the first by {repeat_diff} (state not reset)")
    info = {"llama_cpp_python": metadata.version("llama_cpp_python"),
            "llama_cpp_system_info": llama_cpp.llama_print_system_info().decode().strip(),
            "gguf": gguf.name, "flash_attn": flash_attn, "use_extra_bufts": extra_bufts,
            "repeat_logits_max_abs_diff": repeat_diff,
            "n_ctx": llm.n_ctx(), "n_batch": llm.n_batch,
            "call": "llm.reset(); llm.eval(ids)  (n_threads = n_threads_batch = threads, logits_all False)"}
    return times, logits, info


def llamacpp_variant(variant: str) -> tuple[str, bool, bool]:
    """"q8_0_fa_noextra" -> ("q8_0", flash attention on, extra buffer types off).

    Without "_fa", flash attention is off (llama-cpp-python's default); without "_noextra", llama.cpp
    may put weights in its extra CPU buffer types (AMX, repacked layouts), as it does by default.
    """
    rest = variant.removesuffix("_noextra")
    extra_bufts = rest == variant
    gguf_type = rest.removesuffix("_fa")
    if gguf_type not in GGUF_TYPES:
        raise SystemExit(f"unknown llama.cpp variant {variant!r}")
    return gguf_type, rest.endswith("_fa"), extra_bufts


def cmd_time_one(args) -> None:
    import numpy as np

    model = Path(args.model)
    config = json.loads((model / "config.json").read_text())
    ids = token_ids(config["vocab_size"], args.tokens, args.seed)
    kind, _, variant = args.peer.partition("_")
    if kind == "transformers":
        dtype_name, _, attn = variant.partition("_")
        times, logits, info = time_transformers(model, dtype_name, attn, ids, args.threads, args.warmup, args.reps)
    else:
        gguf_type, fa, extra_bufts = llamacpp_variant(variant)
        times, logits, info = time_llamacpp(model / f"ggml-model-{gguf_type}.gguf", fa, extra_bufts, ids,
                                            args.threads, args.warmup, args.reps)
    if not np.all(np.isfinite(logits)):
        raise SystemExit(f"{args.peer}: non-finite logits")
    np.save(args.logits_out, logits)
    print(json.dumps({"times_ms": times, "info": info}))


def summarise(times: list[float]) -> dict:
    import numpy as np

    t = np.array(times)
    return {"median_ms": round(float(np.median(t)), 2), "p10_ms": round(float(np.percentile(t, 10)), 2),
            "p90_ms": round(float(np.percentile(t, 90)), 2)}


def cmd_time(args) -> None:
    import numpy as np

    model = Path(args.model)
    peers = args.peers.split(",") if args.peers else (
        [f"transformers_{d}_{a}" for d in ("fp32", "bf16") for a in args.attn.split(",")]
        + [f"llamacpp_{t}{fa}{extra}" for t in GGUF_TYPES for fa in ("", "_fa")
           for extra in (("", "_noextra") if t == "q8_0" else ("",))])
    manifest = json.loads((model / MANIFEST).read_text()) if (model / MANIFEST).is_file() else {}
    reference = None
    with tempfile.TemporaryDirectory() as tmp:
        for peer in peers:
            if peer.startswith("llamacpp_"):
                gguf = model / f"ggml-model-{llamacpp_variant(peer[len('llamacpp_'):])[0]}.gguf"
                if not gguf.is_file():
                    raise SystemExit(f"{peer}: {gguf} missing (run `gguf` first)")
            logits_file = Path(tmp) / f"{peer}.npy"
            load_before = os.getloadavg()[0]
            t0 = time.perf_counter()
            proc = subprocess.run([sys.executable, __file__, "_time-one", "--peer", peer, "--model", str(model),
                                   "--tokens", str(args.tokens), "--threads", str(args.threads),
                                   "--reps", str(args.reps), "--warmup", str(args.warmup), "--seed", str(args.seed),
                                   "--logits-out", str(logits_file)], text=True, stdout=subprocess.PIPE)
            if proc.returncode != 0:
                # A peer that crashes (llama.cpp's AMX Q8_0 path does on some builds) is reported,
                # and the remaining peers still run.
                print(json.dumps({"model": manifest.get("name", model.name), "peer": peer,
                                  "error": f"peer process exited with {proc.returncode}"
                                           + (f" (signal {-proc.returncode})" if proc.returncode < 0 else "")}),
                      flush=True)
                continue
            result = json.loads(proc.stdout.strip().splitlines()[-1])
            logits = np.load(logits_file)
            if reference is None:
                reference = (peer, logits)
            ref_peer, ref = reference
            cosine = float(np.dot(logits, ref) / (np.linalg.norm(logits) * np.linalg.norm(ref)))
            stats = summarise(result["times_ms"])
            print(json.dumps({
                "model": manifest.get("name", model.name),
                "peer": peer,
                "tokens": args.tokens,
                "threads": args.threads,
                "batch": 1,
                "reps": args.reps,
                "warmup": args.warmup,
                **stats,
                "tokens_per_s": round(args.tokens / stats["median_ms"] * 1e3, 1),
                "times_ms": [round(x, 2) for x in result["times_ms"]],
                "last_logits_vs": {"peer": ref_peer, "cosine": round(cosine, 6),
                                   "max_abs_diff": float(np.max(np.abs(logits - ref))),
                                   "argmax_equal": bool(np.argmax(logits) == np.argmax(ref))},
                "loadavg_1m": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
                "process_s": round(time.perf_counter() - t0, 1),
                "machine": {"cpu": cpu_name(), "logical_cpus": os.cpu_count(), "python": platform.python_version()},
                **result["info"],
            }), flush=True)


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


# ---------------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def run_self(argv: list[str]) -> None:
    proc = subprocess.run([sys.executable, __file__, *argv], check=False)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(argv[:3])}: exit {proc.returncode}")


def main() -> None:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)

    m = sub.add_parser("make", help="write random-weight checkpoints")
    m.add_argument("--out", required=True)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--only", help=f"comma list of {', '.join(MODELS)}")

    g = sub.add_parser("gguf", help="convert a checkpoint to GGUF BF16 and Q8_0")
    g.add_argument("--model", required=True)
    g.add_argument("--types", default=",".join(GGUF_TYPES))
    g.add_argument("--cache", default=str(Path("/work/bench-models/.llama-cpp-src")),
                   help="where the llama-cpp-python sdist tree is kept")

    t = sub.add_parser("time", help="time a prefill on every peer")
    t.add_argument("--model", required=True)
    t.add_argument("--tokens", type=int, default=256)
    t.add_argument("--threads", type=int, default=2)
    t.add_argument("--reps", type=int, default=5)
    t.add_argument("--warmup", type=int, default=1)
    t.add_argument("--seed", type=int, default=0, help="seed of the random token ids")
    t.add_argument("--attn", default="eager", help="Transformers attention implementations (comma list)")
    t.add_argument("--peers", help="explicit comma list, e.g. transformers_bf16_sdpa,llamacpp_q8_0")

    # Internal: one model / conversion / peer per process.
    mo = sub.add_parser("_make-one")
    mo.add_argument("--name", required=True)
    mo.add_argument("--out", required=True)
    mo.add_argument("--seed", type=int, required=True)
    co = sub.add_parser("_convert-one")
    for a in ("--tree", "--model", "--outtype", "--outfile", "--pre"):
        co.add_argument(a, required=True)
    co.add_argument("--no-mtp", action="store_true")
    to = sub.add_parser("_time-one")
    for a in ("--peer", "--model", "--logits-out"):
        to.add_argument(a, required=True)
    for a in ("--tokens", "--threads", "--reps", "--warmup", "--seed"):
        to.add_argument(a, type=int, required=True)

    args = p.parse_args()
    if args.cmd == "make":
        cmd_make(args)
    elif args.cmd == "gguf":
        cmd_gguf(args)
    elif args.cmd == "time":
        cmd_time(args)
    elif args.cmd == "_make-one":
        make_one(args.name, Path(args.out), args.seed)
    elif args.cmd == "_convert-one":
        convert_in_process(Path(args.tree), Path(args.model), args.outtype, Path(args.outfile), args.pre,
                           ["--no-mtp"] if args.no_mtp else [])
    elif args.cmd == "_time-one":
        cmd_time_one(args)


if __name__ == "__main__":
    main()
