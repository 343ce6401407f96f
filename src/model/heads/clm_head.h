#pragma once
// CLM's two projection heads (Contrastive-LM/CLM src/clm/heads.py make_head), on the backend in fp32:
//
//   x → GELU(inp(x)) → for each hidden block i: GELU(norms.i(hidden.i(x))) [+ x when residual]
//     → out(x) → L2-normalised
//
// with exact GELU and LayerNorm(eps 1e-5) where the checkpoint has norms.i tensors. The published
// CLM-v0.1-8B heads have one hidden block with LayerNorm and no residual (cfg), 4096 → 1536 → 1536 → 512
// (the width as its 18.9M parameters imply).
// tools/convert_clm_heads.py writes the tensors as <head>.inp.weight, <head>.hidden.0.bias, … for the
// heads "state_head" and "action_head".

#include <cstddef>
#include <filesystem>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "model/common/backend_choice.h"

namespace s1::heads {

class ClmHead {
 public:
  struct Block {
    std::unique_ptr<backend::PackedMatrix> linear;
    backend::Tensor norm_weight{};  // undefined: no LayerNorm
    backend::Tensor norm_bias{};
  };

  // input carries the GELU epilogue.
  ClmHead(backend::Backend& backend, std::unique_ptr<backend::PackedMatrix> input, std::vector<Block> blocks,
          std::unique_ptr<backend::PackedMatrix> output, bool residual);

  // rows: [n, input_size] row-major; returns [n, output_size], each row of unit length.
  [[nodiscard]] std::vector<float> project(std::span<const float> rows) const;

  [[nodiscard]] std::size_t input_size() const { return input_->in_features(); }
  [[nodiscard]] std::size_t output_size() const { return output_->out_features(); }

 private:
  backend::Backend* backend_;
  std::unique_ptr<backend::PackedMatrix> input_;
  std::vector<Block> blocks_;
  std::unique_ptr<backend::PackedMatrix> output_;
  bool residual_;
};

struct ClmHeads {
  ClmHead state;
  ClmHead action;
};

// Reads both heads from a safetensors file, checking every shape and that the file holds nothing
// else; both heads must map `input_size` to the same projection size. Throws checkpoint::LoadError
// naming the file and the tensor.
ClmHeads load_clm_heads(const std::filesystem::path& file, std::size_t input_size, bool residual,
                        backend::Backend& backend = model::default_backend());

}  // namespace s1::heads
