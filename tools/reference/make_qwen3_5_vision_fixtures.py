"""Write the Qwen3.5 vision tower parity fixtures.

    python3 tools/reference/make_qwen3_5_vision_fixtures.py [--out tests/parity/qwen3_5_vision]

Each case directory holds a tiny random Qwen3_5ForConditionalGeneration checkpoint, reduced to what
the vision tower reads: config.json (the whole wrapper config) and model.safetensors with the
model.visual.* tensors (fp32), and reference.safetensors:
  pixel_values  f32 [patches, 3 * temporal * patch^2]  random inputs, images concatenated
  grid_thw      i64 [images, 3]
  features      f32 [patches / merge^2, out_hidden]   Qwen3_5VisionModel's pooler_output (the merger)
lora/ (write_lora) the two_blocks tower with an unmerged LoRA adapter, and mrope.json: prompts with 0-3 images (token ids with the image pads already expanded, their
grids) and the 3-D positions and rope delta Qwen3_5Model.get_rope_index gives them.
Cases differ in depth, width, heads, head size, patch, merge (2 and 3), temporal patch (2 and 1),
position grid, activation, rope theta and image grids (1-4 images, square and not).
"""

from __future__ import annotations

import argparse
import json
import os

import torch
from safetensors.torch import save_file
from transformers import Qwen3_5Config, Qwen3_5ForConditionalGeneration

TEXT = dict(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
            num_key_value_heads=1, head_dim=8, linear_key_head_dim=8, linear_value_head_dim=8,
            linear_num_key_heads=1, linear_num_value_heads=2, layer_types=["full_attention"])

CASES = {
    "two_blocks": dict(vision=dict(depth=2, hidden_size=32, num_heads=2, intermediate_size=48, patch_size=8,
                                   spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=24,
                                   num_position_embeddings=16),
                       grids=[[1, 4, 6], [1, 2, 2], [1, 8, 4]]),
    "exact_gelu": dict(vision=dict(depth=1, hidden_size=48, num_heads=4, intermediate_size=40, patch_size=4,
                                   spatial_merge_size=2, temporal_patch_size=2, out_hidden_size=40,
                                   num_position_embeddings=36, hidden_act="gelu",
                                   rope_parameters={"rope_type": "axial", "rope_theta": 500.0}),
                       grids=[[1, 2, 2], [1, 6, 4], [1, 2, 10], [1, 4, 4]]),
    "merge3": dict(vision=dict(depth=3, hidden_size=32, num_heads=2, intermediate_size=48, patch_size=6,
                               spatial_merge_size=3, temporal_patch_size=1, out_hidden_size=32,
                               num_position_embeddings=25),
                   grids=[[1, 6, 9]]),
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", default="tests/parity/qwen3_5_vision")
    args = parser.parse_args()
    for seed, (name, case) in enumerate(CASES.items()):
        torch.manual_seed(100 + seed)
        config = Qwen3_5Config(text_config=TEXT, vision_config=case["vision"])
        config._attn_implementation = "eager"
        model = Qwen3_5ForConditionalGeneration(config).eval()
        # Random (not initial) norms and biases, so that a dropped bias or norm weight shows; sharper
        # queries and keys and a larger position table, so that attention is far from uniform and a
        # wrong rotary or position grid moves the features by their own order.
        with torch.no_grad():
            for key, tensor in model.model.visual.named_parameters():
                if key.endswith("bias") or "norm" in key:
                    tensor.copy_(torch.randn_like(tensor) * 0.5 + (1.0 if key.endswith("weight") else 0.0))
                elif key.endswith("attn.qkv.weight"):
                    tensor.mul_(10.0)
                elif key.endswith("pos_embed.weight"):
                    tensor.mul_(25.0)
        visual = model.model.visual
        vision = config.vision_config
        grid = torch.tensor(case["grids"], dtype=torch.int64)
        patches = int((grid[:, 0] * grid[:, 1] * grid[:, 2]).sum())
        width = vision.in_channels * vision.temporal_patch_size * vision.patch_size**2
        pixel_values = torch.randn(patches, width)
        with torch.no_grad():
            features = visual(pixel_values, grid_thw=grid).pooler_output

        folder = os.path.join(args.out, name)
        os.makedirs(folder, exist_ok=True)
        config.save_pretrained(folder)
        weights = {k: v.contiguous() for k, v in model.state_dict().items() if k.startswith("model.visual.")}
        save_file(weights, os.path.join(folder, "model.safetensors"))
        save_file({"pixel_values": pixel_values.contiguous(), "grid_thw": grid,
                   "features": features.contiguous()}, os.path.join(folder, "reference.safetensors"))
        print(name, tuple(features.shape), float(features.abs().max()))
    write_mrope(args.out)
    write_lora(args.out)


def write_lora(out: str) -> None:
    """lora/: the two_blocks tower with an unmerged PEFT LoRA (r 4, alpha 8: scale 2) on every block's
    and the merger's linear_fc1 / linear_fc2, as Cua-S1's multimodal adapter adapts them
    (adapter/adapter_config.json + adapter_model.safetensors); the reference features are the tower's
    with each W + scale·B·A merged in fp32 (exactly what PEFT's unmerged forward computes, up to
    summation order)."""
    torch.manual_seed(150)
    case = CASES["two_blocks"]
    config = Qwen3_5Config(text_config=TEXT, vision_config=case["vision"])
    config._attn_implementation = "eager"
    model = Qwen3_5ForConditionalGeneration(config).eval()
    visual = model.model.visual
    rank, alpha = 4, 8.0
    adapter, targets = {}, []
    with torch.no_grad():
        for key, tensor in visual.named_parameters():
            if key.endswith("bias") or "norm" in key:
                tensor.copy_(torch.randn_like(tensor) * 0.5 + (1.0 if key.endswith("weight") else 0.0))
        for name, module in visual.named_modules():
            if name.endswith("linear_fc1") or name.endswith("linear_fc2"):
                a = torch.randn(rank, module.in_features) * 0.15
                b = torch.randn(module.out_features, rank) * 0.15
                base = f"base_model.model.model.visual.{name}"
                adapter[base + ".lora_A.weight"] = a.contiguous()
                adapter[base + ".lora_B.weight"] = b.contiguous()
                targets.append(name.split(".")[-1])
        base_weights = {k: v.clone() for k, v in model.state_dict().items() if k.startswith("model.visual.")}
        grid = torch.tensor(case["grids"], dtype=torch.int64)
        patches = int((grid[:, 0] * grid[:, 1] * grid[:, 2]).sum())
        vision = config.vision_config
        pixel_values = torch.randn(patches, vision.in_channels * vision.temporal_patch_size * vision.patch_size**2)
        plain = visual(pixel_values, grid_thw=grid).pooler_output
        for name, module in visual.named_modules():
            if name.endswith("linear_fc1") or name.endswith("linear_fc2"):
                base = f"base_model.model.model.visual.{name}"
                module.weight += (alpha / rank) * adapter[base + ".lora_B.weight"] @ adapter[base + ".lora_A.weight"]
        features = visual(pixel_values, grid_thw=grid).pooler_output
    assert (features - plain).abs().max() > 0.1 * plain.abs().max()
    folder = os.path.join(out, "lora")
    os.makedirs(os.path.join(folder, "adapter"), exist_ok=True)
    config.save_pretrained(folder)
    save_file(base_weights, os.path.join(folder, "model.safetensors"))
    save_file(adapter, os.path.join(folder, "adapter", "adapter_model.safetensors"))
    with open(os.path.join(folder, "adapter", "adapter_config.json"), "w") as f:
        json.dump({"peft_type": "LORA", "r": rank, "lora_alpha": alpha, "bias": "none",
                   "target_modules": sorted(set(targets))}, f, indent=2)
        f.write("\n")
    save_file({"pixel_values": pixel_values.contiguous(), "grid_thw": grid, "features": features.contiguous(),
               "features_without_adapter": plain.contiguous()}, os.path.join(folder, "reference.safetensors"))
    print("lora", tuple(features.shape), float(features.abs().max()))


IMAGE, START, END = 248056, 248053, 248054
# (token ids before expansion with one IMAGE per image, image grids, merge size)
PROMPTS = [
    ([1, 2, 3, 4], [], 2),
    ([7, START, IMAGE, END, 9, 10], [[1, 4, 6]], 2),
    ([START, IMAGE, END, 5, START, IMAGE, END, 6, 7], [[1, 2, 2], [1, 8, 4]], 2),
    ([3, START, IMAGE, END], [[1, 6, 2]], 2),
    ([1, START, IMAGE, END, START, IMAGE, END, START, IMAGE, END, 2], [[1, 6, 9], [1, 3, 3], [1, 12, 3]], 3),
]


def write_mrope(out: str) -> None:
    cases = []
    for ids, grids, merge in PROMPTS:
        config = Qwen3_5Config(text_config=TEXT, vision_config=dict(depth=1, hidden_size=16, num_heads=1,
                                                                     intermediate_size=16, out_hidden_size=16,
                                                                     spatial_merge_size=merge))
        model = Qwen3_5ForConditionalGeneration(config).model
        expanded = []
        image = 0
        for token in ids:
            if token == IMAGE:
                t, h, w = grids[image]
                expanded += [IMAGE] * (t * h * w // merge**2)
                image += 1
            else:
                expanded.append(token)
        input_ids = torch.tensor([expanded])
        types = (input_ids == IMAGE).int()
        grid = torch.tensor(grids, dtype=torch.int64) if grids else None
        positions, delta = model.get_rope_index(input_ids, types, image_grid_thw=grid)
        cases.append({"ids": ids, "grids": grids, "merge": merge, "expanded": expanded,
                      "positions": positions[:, 0].tolist(), "delta": int(delta[0, 0])})
    with open(os.path.join(out, "mrope.json"), "w") as f:
        json.dump({"image_token_id": IMAGE, "cases": cases}, f)
        f.write("\n")


if __name__ == "__main__":
    main()
