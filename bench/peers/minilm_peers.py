"""Peer benchmarks for all-MiniLM-L6-v2 on CPU: sentence-transformers (torch fp32) and ONNX Runtime.

Measures, with 2 threads:
  - latency of one 128-token sequence (batch 1), and
  - throughput of a batch of 32 x 128-token sequences,
as medians over --reps repetitions after --warmup warm-up runs. Prints one JSON object on stdout.

Peers (keys of "results"):
  torch_fp32_forward   SentenceTransformer forward (BERT + mean pooling + normalise) on pre-tokenised
                       ids, torch fp32, torch.set_num_threads(2), inference_mode
  torch_fp32_encode    SentenceTransformer.encode(texts) end to end (tokenisation included); the
                       texts tokenise to exactly 128 tokens
  ort_fp32             ONNX export (torch.onnx.export of the same module chain) on ONNX Runtime,
                       intra_op_num_threads=2, inter_op 1, graph optimisation ORT_ENABLE_ALL
  ort_fp32_fused       the same after onnxruntime.transformers.optimizer (model_type bert: fused
                       attention, skip-LayerNorm, GELU, bias), ORT_ENABLE_ALL -- ORT's best fp32 CPU
  ort_int8_dynamic     ort_fp32_fused + onnxruntime.quantization.quantize_dynamic (QInt8 weights);
                       NOT numerically equivalent, listed for context only
Each result also carries max |embedding - torch embedding| on the benchmark batch.

    HF_HUB_OFFLINE=1 /work/.venv-ref/bin/python bench/peers/minilm_peers.py \
        [--model-dir ~/.local/share/s1serve/models/all-minilm-l6-v2] [--reps 20] [--warmup 3]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from importlib import metadata

THREADS = 2
SEQ_LEN = 128
BATCH = 32


def default_model_dir() -> str:
    root = os.environ.get("S1SERVE_MODELS", os.path.expanduser("~/.local/share/s1serve/models"))
    return os.path.join(root, "all-minilm-l6-v2")


def timed(fn, warmup: int, reps: int) -> list[float]:
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return out


def summarise(times_b1: list[float], times_b32: list[float], max_abs_diff: float | None) -> dict:
    def q(ts, frac):
        s = sorted(ts)
        return s[min(len(s) - 1, int(frac * (len(s) - 1) + 0.5))]

    med1 = statistics.median(times_b1)
    med32 = statistics.median(times_b32)
    return {
        "latency_b1_ms": {"median": round(med1 * 1e3, 3), "p10": round(q(times_b1, 0.1) * 1e3, 3),
                          "p90": round(q(times_b1, 0.9) * 1e3, 3), "reps": len(times_b1)},
        "batch32_ms": {"median": round(med32 * 1e3, 3), "p10": round(q(times_b32, 0.1) * 1e3, 3),
                       "p90": round(q(times_b32, 0.9) * 1e3, 3), "reps": len(times_b32)},
        "throughput_b32": {"sequences_per_s": round(BATCH / med32, 2),
                           "tokens_per_s": round(BATCH * SEQ_LEN / med32, 1)},
        "max_abs_diff_vs_torch": max_abs_diff,
    }


def make_texts(tokenizer, n: int, seq_len: int) -> list[str]:
    """n different English texts that tokenise to exactly seq_len tokens (specials included)."""
    words = ("the customer reported that the application crashed after the latest update and asked "
             "whether a refund or a replacement licence could be issued before the end of the month "
             "because the team depends on the dashboard every morning for planning").split()
    texts = []
    for i in range(n):
        ids: list[str] = []
        k = i
        while True:
            candidate = " ".join(ids + [words[k % len(words)]])
            if len(tokenizer(candidate)["input_ids"]) > seq_len:
                break
            ids.append(words[k % len(words)])
            k += 1 + (i % 3)
        text = " ".join(ids)
        assert len(tokenizer(text)["input_ids"]) == seq_len, (i, len(tokenizer(text)["input_ids"]))
        texts.append(text)
    return texts


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--model-dir", default=default_model_dir())
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--skip", default="", help="comma-separated peer keys to skip")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    os.environ.setdefault("HF_HUB_OFFLINE", "1")

    import numpy as np
    import torch

    torch.set_num_threads(THREADS)
    torch.set_num_interop_threads(1)
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(args.model_dir, device="cpu")
    model.eval()
    tok = model.tokenizer
    texts = make_texts(tok, BATCH, SEQ_LEN)
    enc = tok(texts, padding=True, truncation=True, max_length=SEQ_LEN, return_tensors="pt")
    assert tuple(enc["input_ids"].shape) == (BATCH, SEQ_LEN)
    feats32 = {k: enc[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    feats1 = {k: v[:1] for k, v in feats32.items()}

    load_before = os.getloadavg()
    results: dict[str, dict] = {}
    errors: dict[str, str] = {}

    with torch.inference_mode():
        ref32 = model(dict(feats32))["sentence_embedding"].numpy()

        if "torch_fp32_forward" not in skip:
            t1 = timed(lambda: model(dict(feats1)), args.warmup, args.reps)
            t32 = timed(lambda: model(dict(feats32)), args.warmup, args.reps)
            results["torch_fp32_forward"] = summarise(t1, t32, 0.0)
        if "torch_fp32_encode" not in skip:
            enc_out = model.encode(texts, batch_size=BATCH, normalize_embeddings=True, show_progress_bar=False)
            t1 = timed(lambda: model.encode(texts[:1], batch_size=1, normalize_embeddings=True,
                                            show_progress_bar=False), args.warmup, args.reps)
            t32 = timed(lambda: model.encode(texts, batch_size=BATCH, normalize_embeddings=True,
                                             show_progress_bar=False), args.warmup, args.reps)
            results["torch_fp32_encode"] = summarise(t1, t32, float(np.max(np.abs(enc_out - ref32))))

    # ---- ONNX export: BERT + mean pooling + L2 normalise, dynamic batch and sequence axes --------
    import onnxruntime as ort

    class Wrapped(torch.nn.Module):
        def __init__(self, st):
            super().__init__()
            self.st = st

        def forward(self, input_ids, attention_mask, token_type_ids):
            out = self.st({"input_ids": input_ids, "attention_mask": attention_mask,
                           "token_type_ids": token_type_ids})
            return out["sentence_embedding"]

    # Export from an eager-attention copy of the same weights: the SDPA graph that torch traces by
    # default is not recognised by ORT's BERT attention fusion, the eager one is.
    try:
        export_model = SentenceTransformer(args.model_dir, device="cpu",
                                           model_kwargs={"attn_implementation": "eager"}).eval()
    except Exception as e:
        errors["eager_attention"] = f"{type(e).__name__}: {e}"[:300]
        export_model = model
    workdir = tempfile.mkdtemp(prefix="minilm-onnx-")
    onnx_fp32 = os.path.join(workdir, "minilm_fp32.onnx")
    export_info = {}
    try:
        wrapped = Wrapped(export_model).eval()
        dyn = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
               "token_type_ids": {0: "batch", 1: "seq"}, "sentence_embedding": {0: "batch"}}
        inputs = (feats1["input_ids"], feats1["attention_mask"], feats1["token_type_ids"])
        try:
            torch.onnx.export(wrapped, inputs, onnx_fp32, input_names=list(feats1),
                              output_names=["sentence_embedding"], dynamic_axes=dyn, opset_version=17,
                              dynamo=False)
            export_info["exporter"] = "torch.onnx.export(dynamo=False, opset 17)"
        except Exception as e:  # the TorchScript exporter may be gone in newer torch
            export_info["torchscript_exporter_error"] = f"{type(e).__name__}: {e}"[:300]
            torch.onnx.export(wrapped, inputs, onnx_fp32, input_names=list(feats1),
                              output_names=["sentence_embedding"], dynamic_axes=dyn, dynamo=True,
                              external_data=False)
            export_info["exporter"] = "torch.onnx.export(dynamo=True)"
    except Exception as e:
        errors["onnx_export"] = f"{type(e).__name__}: {e}"[:500]

    def ort_session(path: str):
        so = ort.SessionOptions()
        so.intra_op_num_threads = THREADS
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])

    def bench_ort(key: str, path: str):
        sess = ort_session(path)
        names = {i.name for i in sess.get_inputs()}
        f1 = {k: v.numpy().astype(np.int64) for k, v in feats1.items() if k in names}
        f32 = {k: v.numpy().astype(np.int64) for k, v in feats32.items() if k in names}
        out = sess.run(None, f32)[0]
        diff = float(np.max(np.abs(out - ref32)))
        t1 = timed(lambda: sess.run(None, f1), args.warmup, args.reps)
        t32 = timed(lambda: sess.run(None, f32), args.warmup, args.reps)
        results[key] = summarise(t1, t32, diff)

    paths = {}
    if os.path.exists(onnx_fp32):
        paths["ort_fp32"] = onnx_fp32
        try:
            from onnxruntime.transformers import optimizer

            fused = optimizer.optimize_model(onnx_fp32, model_type="bert", num_heads=12, hidden_size=384,
                                             opt_level=1, use_gpu=False)
            onnx_fused = os.path.join(workdir, "minilm_fp32_fused.onnx")
            fused.save_model_to_file(onnx_fused)
            export_info["fused_ops"] = {k: v for k, v in fused.get_fused_operator_statistics().items() if v}
            paths["ort_fp32_fused"] = onnx_fused
            try:
                from onnxruntime.quantization import QuantType, quantize_dynamic

                onnx_int8 = os.path.join(workdir, "minilm_int8_dynamic.onnx")
                import onnx

                quantize_dynamic(onnx_fused, onnx_int8, weight_type=QuantType.QInt8,
                                 extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT})
                paths["ort_int8_dynamic"] = onnx_int8
            except Exception as e:
                errors["ort_int8_dynamic"] = f"{type(e).__name__}: {e}"[:500]
        except Exception as e:
            errors["ort_fp32_fused"] = f"{type(e).__name__}: {e}"[:500]

    for key, path in paths.items():
        if key in skip:
            continue
        try:
            bench_ort(key, path)
        except Exception as e:
            errors[key] = f"{type(e).__name__}: {e}"[:500]

    def version(pkg):
        try:
            return metadata.version(pkg)
        except metadata.PackageNotFoundError:
            return None

    cpu = ""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), "")
    except OSError:
        pass
    report = {
        "model": "all-minilm-l6-v2",
        "model_dir": args.model_dir,
        "threads": THREADS,
        "seq_len": SEQ_LEN,
        "batch": BATCH,
        "warmup": args.warmup,
        "reps": args.reps,
        "statistic": "median wall time per call (p10/p90 alongside)",
        "machine": {"cpu": cpu, "cpus_visible": os.cpu_count(), "python": platform.python_version(),
                    # other work on the machine skews every number; compare peers from one run only
                    "loadavg_1m_before": round(load_before[0], 2), "loadavg_1m_after": round(os.getloadavg()[0], 2)},
        "versions": {p: version(p) for p in ["torch", "sentence-transformers", "transformers", "onnxruntime",
                                             "onnx", "numpy"]},
        "onnx": export_info,
        "results": results,
        "errors": errors,
    }
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
