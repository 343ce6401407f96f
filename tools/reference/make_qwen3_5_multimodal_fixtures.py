"""Write the Qwen3.5 multimodal decoder parity fixtures: images spliced into the prompt, M-RoPE.

    python3 tools/reference/make_qwen3_5_multimodal_fixtures.py [--out tests/parity/qwen3_5_multimodal]

Each case directory holds a tiny random Qwen3_5ForConditionalGeneration checkpoint (config.json +
model.safetensors, fp32, vision tower and text decoder) and reference.safetensors, per prompt k:
  ids_<k>       int32 [n]                 token ids, each image's <|image_pad|> already expanded
  pixels_<k>    f32 [patches, values]     random pixel values, images concatenated
  grids_<k>     i64 [images, 3]           image_grid_thw
  logits_<k>    f32 [n, vocab]            Qwen3_5ForConditionalGeneration's logits at every position
with mm_token_type_ids given, so that Transformers computes get_rope_index's 3-D positions.
Cases differ in layer mix, rotary width and mrope_section (so each axis owns different frequencies),
vision patch and merge, and the prompts in their 1-4 images of different grids (square and not, one
image right at the start, two images back to back inside one vision_start/vision_end pair's
neighbours). The reference runs the torch GDN path with eager attention in fp32.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys

import torch
from safetensors.torch import save_file
from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_tiny_chat_models import perturb  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VOCAB = 80
IMAGE, START, END = 79, 77, 78  # inside the tiny vocabulary; text tokens are drawn below 77


def text_config(layer_types: list[str], head_dim: int, rotary_factor: float, section: list[int] | None) -> dict:
    rope = {"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": rotary_factor}
    if section is not None:
        rope["mrope_section"] = section
        rope["mrope_interleaved"] = True
    return dict(vocab_size=VOCAB, hidden_size=32, intermediate_size=24, num_hidden_layers=len(layer_types),
                num_attention_heads=2, num_key_value_heads=1, head_dim=head_dim, linear_conv_kernel_dim=4,
                linear_key_head_dim=8, linear_value_head_dim=8, linear_num_key_heads=1, linear_num_value_heads=2,
                max_position_embeddings=512, rms_norm_eps=1e-6, tie_word_embeddings=False, rope_parameters=rope,
                layer_types=layer_types)


# Prompts: text token counts and images (grid_thw in patches) in prompt order, as
# [("text", n) | ("image", [t, h, w])]; every image is wrapped in START ... END.
CASES = {
    # rotary 16 of 32 dims: 8 frequencies, section [3, 3, 2] → T {0, 3, 6}, H {1, 4, 7}, W {2, 5}.
    "sections332": dict(
        text=text_config(["linear_attention", "full_attention", "linear_attention", "full_attention"], 32, 0.5,
                         [3, 3, 2]),
        vision=dict(depth=1, hidden_size=16, num_heads=2, intermediate_size=24, patch_size=4, spatial_merge_size=2,
                    temporal_patch_size=2, out_hidden_size=32, num_position_embeddings=16),
        prompts=[[("text", 5), ("image", [1, 4, 6]), ("text", 7)],
                 [("image", [1, 2, 8]), ("text", 3), ("image", [1, 6, 2]), ("text", 4)]]),
    # rotary 8 of 32 dims: 4 frequencies, section [2, 1, 1] → T {0, 3}, H {1}, W {2}; 3 and 4 images.
    "sections211": dict(
        text=text_config(["full_attention", "linear_attention", "linear_attention", "full_attention"], 32, 0.25,
                         [2, 1, 1]),
        vision=dict(depth=2, hidden_size=16, num_heads=2, intermediate_size=24, patch_size=2, spatial_merge_size=2,
                    temporal_patch_size=2, out_hidden_size=32, num_position_embeddings=36),
        prompts=[[("text", 3), ("image", [1, 4, 4]), ("text", 2), ("image", [1, 2, 6]), ("text", 2),
                  ("image", [1, 8, 2]), ("text", 5)],
                 [("text", 2), ("image", [1, 2, 2]), ("image", [1, 6, 4]), ("text", 1), ("image", [1, 4, 8]),
                  ("text", 2), ("image", [1, 2, 4]), ("text", 3)]]),
    # No mrope_section in the config: Transformers' default [11, 11, 10] over 8 frequencies (T {0, 3,
    # 6}, H {1, 4, 7}, W {2, 5}); merge 3; a long text tail after the image (past the 64-token chunk).
    "default_sections_merge3": dict(
        text=text_config(["linear_attention", "linear_attention", "linear_attention", "full_attention"], 16, 1.0,
                         None),
        vision=dict(depth=1, hidden_size=8, num_heads=1, intermediate_size=16, patch_size=2, spatial_merge_size=3,
                    temporal_patch_size=1, out_hidden_size=32, num_position_embeddings=16),
        prompts=[[("text", 4), ("image", [1, 9, 6]), ("text", 70)],
                 [("image", [1, 3, 3]), ("text", 2), ("image", [1, 6, 12]), ("text", 6)]]),
}


def build_prompt(prompt, merge: int, gen: torch.Generator):
    ids, grids = [], []
    for kind, value in prompt:
        if kind == "text":
            ids += torch.randint(0, START, (value,), generator=gen).tolist()
        else:
            t, h, w = value
            ids += [START] + [IMAGE] * (t * h * w // merge**2) + [END]
            grids.append(value)
    return torch.tensor(ids), torch.tensor(grids, dtype=torch.int64)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default=os.path.join(REPO, "tests", "parity", "qwen3_5_multimodal"))
    args = parser.parse_args()
    for module in ("fla", "causal_conv1d", "kernels"):
        if importlib.util.find_spec(module) is not None:
            raise SystemExit(f"{module} is installed: the reference must run the torch GDN path")
    torch.set_num_threads(1)
    for seed, (name, case) in enumerate(CASES.items()):
        torch.manual_seed(300 + seed)
        config = Qwen3_5Config(text_config=case["text"], vision_config=case["vision"], image_token_id=IMAGE,
                               vision_start_token_id=START, vision_end_token_id=END, tie_word_embeddings=False)
        config._attn_implementation = "eager"
        config.text_config._attn_implementation = "eager"
        config.vision_config._attn_implementation = "eager"
        model = Qwen3_5ForConditionalGeneration(config)
        # Matrices larger than their init (images and positions must move the logits visibly), every
        # norm and bias off its default.
        perturb(model, 400 + seed, lambda p, noise, gen: p.copy_(noise * 0.1))
        model.eval()
        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        model.save_pretrained(folder, safe_serialization=True)
        merge = config.vision_config.spatial_merge_size
        vision = config.vision_config
        width = vision.in_channels * vision.temporal_patch_size * vision.patch_size**2
        gen = torch.Generator().manual_seed(500 + seed)
        tensors = {}
        for k, prompt in enumerate(case["prompts"]):
            ids, grids = build_prompt(prompt, merge, gen)
            patches = int((grids[:, 0] * grids[:, 1] * grids[:, 2]).sum())
            pixels = torch.randn(patches, width, generator=gen)
            with torch.no_grad():
                out = model(input_ids=ids[None], pixel_values=pixels, image_grid_thw=grids,
                            mm_token_type_ids=(ids == IMAGE).int()[None], use_cache=False)
                # With 1-D positions the logits must differ (the fixture tests M-RoPE).
                plain = model(input_ids=ids[None], pixel_values=pixels, image_grid_thw=grids,
                              position_ids=torch.arange(len(ids))[None], use_cache=False)
            assert (out.logits - plain.logits).abs().max() > 1e-2
            tensors[f"ids_{k}"] = ids.to(torch.int32)
            tensors[f"pixels_{k}"] = pixels.contiguous()
            tensors[f"grids_{k}"] = grids
            tensors[f"logits_{k}"] = out.logits[0].contiguous()
            print(name, k, tuple(ids.shape), grids.tolist(), float(out.logits.abs().max()))
        save_file(tensors, os.path.join(folder, "reference.safetensors"),
                  metadata={"transformers": __import__("transformers").__version__, "torch": torch.__version__})
        for extra in ("generation_config.json",):
            if os.path.exists(os.path.join(folder, extra)):
                os.remove(os.path.join(folder, extra))


if __name__ == "__main__":
    main()
