"""Write the Qwen2-VL / Qwen3.5 image preprocessing fixtures.

    python3 tools/reference/make_vision_preprocess_fixtures.py [--out tests/parity/vision/preprocess.json]

Images are not stored: each is generated from (width, height, seed) by `pattern` below, which the
C++ test (tests/parity/vision_preprocess_test.cpp) repeats in integer arithmetic. Each case is run
through the image processor Transformers' AutoImageProcessor builds for a Qwen3.5 checkpoint here
(Qwen2VLImageProcessorPil: torchvision is not installed, so 5.24 picks the PIL backend) with the
case's preprocessor_config.json, and recorded as: grid_thw, the CRC-32 (zlib) of the float32
pixel_values bytes, the hash of PIL's resized RGB bytes (to tell a resampling fault from a patching
one), 24 sampled (index, value) pairs, and for the first case of 16 patches every value. Cases the processor
refuses (aspect ratio over 200) are recorded with the error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import zlib

import numpy as np
import PIL
import transformers
from PIL import Image
from transformers import AutoImageProcessor

# preprocessor_config.json bodies. qwen3_5 is the published Qwen3.5 / Qwen3-VL one; qwen2_vl states
# nothing but the type (Transformers' class defaults: patch 14, CLIP mean/std); small has a budget
# of 4–32 windows so that big images shrink and tiny ones grow at little cost.
CONFIGS = {
    "qwen3_5": {
        "size": {"longest_edge": 16777216, "shortest_edge": 65536},
        "patch_size": 16,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": [0.5, 0.5, 0.5],
        "image_std": [0.5, 0.5, 0.5],
        "processor_class": "Qwen3VLProcessor",
        "image_processor_type": "Qwen2VLImageProcessorFast",
    },
    "qwen2_vl": {"image_processor_type": "Qwen2VLImageProcessor"},
    "small": {
        "size": {"longest_edge": 32 * 32 * 32, "shortest_edge": 32 * 32 * 4},
        "patch_size": 16,
        "temporal_patch_size": 2,
        "merge_size": 2,
        "image_mean": [0.48145466, 0.4578275, 0.40821073],
        "image_std": [0.26862954, 0.26130258, 0.27577711],
        "rescale_factor": 0.00392156862745098,
        "do_resize": True,
        "resample": 3,
        "image_processor_type": "Qwen2VLImageProcessor",
    },
}

M32 = 0xFFFFFFFF


def pattern(width: int, height: int, seed: int) -> np.ndarray:
    """uint8 [height, width, 3]: a gradient plus hashed noise (strong for seed % 4 == 0), with
    wrap-around edges, so that bicubic overshoot clips."""
    y, x, c = np.meshgrid(np.arange(height, dtype=np.uint64), np.arange(width, dtype=np.uint64),
                          np.arange(3, dtype=np.uint64), indexing="ij")
    h = ((x * 73856093) ^ (y * 19349663) ^ (c * 83492791) ^ np.uint64(seed * 2654435761 & M32)) & M32
    h ^= h >> np.uint64(13)
    h = (h * np.uint64(0x5BD1E995)) & M32
    h ^= h >> np.uint64(15)
    grad = x * np.uint64(256) // np.uint64(width) + y * np.uint64(128) // np.uint64(height) + c * np.uint64(64)
    mask = np.uint64(255 if seed % 4 == 0 else 15)
    return ((grad + (h & mask)) & np.uint64(255)).astype(np.uint8)


def crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def sizes() -> list[tuple[str, int, int]]:
    cases = []
    tiny = [(1, 1), (1, 2), (2, 1), (3, 7), (5, 5), (13, 17), (31, 33), (32, 32), (1, 199), (199, 1), (1, 200),
            (201, 1), (2, 401), (400, 2), (63, 65), (100, 3)]
    for w, h in tiny:
        cases.append(("small", w, h))
        cases.append(("qwen3_5", w, h))
    odd = [(97, 211), (211, 97), (640, 480), (1023, 767), (1025, 769), (333, 1999), (2001, 157), (1500, 7),
           (7, 1400), (449, 449), (800, 1), (96, 64), (95, 63), (257, 255), (1280, 720), (719, 1281)]
    for w, h in odd:
        cases.append(("small", w, h))
        cases.append(("qwen2_vl", w, h))
    mid = [(512, 512), (1024, 768), (300, 200), (1919, 1079), (250, 251), (64, 4096), (4096, 64), (1200, 900)]
    for w, h in mid:
        cases.append(("qwen3_5", w, h))
    # Over qwen2_vl's 1,003,520-pixel budget.
    big = [("qwen2_vl", 1500, 1000), ("qwen2_vl", 2048, 1536), ("qwen2_vl", 3000, 500)]
    cases.extend(big)
    rng = np.random.default_rng(20)
    for _ in range(40):
        w = int(rng.integers(1, 1400))
        h = max(1, min(int(w * float(np.exp(rng.uniform(-3.5, 3.5)))), 1400))
        cases.append((["small", "qwen2_vl", "qwen3_5"][int(rng.integers(0, 3))], w, h))
    return cases


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="tests/parity/vision/preprocess.json")
    args = parser.parse_args()

    processors = {}
    for name, body in CONFIGS.items():
        with tempfile.TemporaryDirectory() as folder:
            with open(os.path.join(folder, "preprocessor_config.json"), "w") as f:
                json.dump(body, f)
            with open(os.path.join(folder, "config.json"), "w") as f:
                json.dump({"model_type": "qwen3_5"}, f)
            processors[name] = AutoImageProcessor.from_pretrained(folder)
    chosen = sorted({type(p).__name__ for p in processors.values()})
    if chosen != ["Qwen2VLImageProcessorPil"]:
        sys.exit(f"expected Transformers to pick Qwen2VLImageProcessorPil, got {chosen}")

    cases = []
    full_arrays = 0
    for index, (config, width, height) in enumerate(sizes()):
        seed = index
        image = pattern(width, height, seed)
        case = {"config": config, "width": width, "height": height, "seed": seed}
        processor = processors[config]
        try:
            out = processor(images=Image.fromarray(image, "RGB"), return_tensors="np")
        except ValueError as error:
            case["error"] = str(error)
            cases.append(case)
            continue
        values = np.ascontiguousarray(out["pixel_values"], dtype=np.float32)
        grid = [int(v) for v in out["image_grid_thw"][0]]
        patch = processor.patch_size
        resized = Image.fromarray(image, "RGB").resize((grid[2] * patch, grid[1] * patch), Image.Resampling.BICUBIC)
        case["grid_thw"] = grid
        case["shape"] = list(values.shape)
        case["values_crc32"] = crc32(values.tobytes())
        case["resized_crc32"] = crc32(np.asarray(resized).tobytes())
        flat = values.reshape(-1)
        picks = np.random.default_rng(seed).integers(0, flat.size, 24)
        case["samples"] = [[int(i), float(flat[i])] for i in picks]
        if flat.size <= 16 * 1536 and full_arrays < 1:
            case["values"] = [float(v) for v in flat]
            full_arrays += 1
        cases.append(case)
        print(config, width, height, grid if "grid_thw" in case else case["error"], file=sys.stderr)

    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as f:
        json.dump({"transformers": transformers.__version__, "pillow": PIL.__version__,
                   "processor": chosen[0], "configs": CONFIGS, "cases": cases}, f, separators=(",", ":"))
        f.write("\n")


if __name__ == "__main__":
    main()
