#pragma once
// JEV-27B-VL's verbalizer readout rows (system1-omni recipe/jev_vl/export_merged.py,
// label_head.safetensors): the merged LM-head rows, float32, of the token ids the readout reads (the
// 24 trained verbalizer slots and the single-token option labels). A logit is a row's dot product
// with the final-norm hidden state accumulated in double, as the reference's CPU readout does: a
// handful of dot products per question, which a backend matmul (fp32 accumulation) would not
// reproduce as exactly.

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <unordered_map>
#include <vector>

namespace s1::heads {

class VerbalizerRows {
 public:
  // Tensors "rows" F32 [n, hidden] and "ids" I64 [n] (distinct, non-negative) of the safetensors file
  // `path`. Throws checkpoint::LoadError naming the file and the tensor for a missing tensor, another
  // dtype or shape, a repeated id or a non-finite row value.
  static VerbalizerRows from_file(const std::filesystem::path& path, std::size_t hidden);
  VerbalizerRows(std::vector<float> rows, std::vector<int64_t> ids, std::size_t hidden);

  [[nodiscard]] const std::vector<int64_t>& ids() const { return ids_; }
  [[nodiscard]] bool contains(int64_t id) const { return index_.contains(id); }

  // One logit per id: Σ row(id)ᵢ·hiddenᵢ in double. std::out_of_range for an id without a row,
  // std::invalid_argument for a hidden state of another width.
  [[nodiscard]] std::vector<double> logits(std::span<const float> hidden, std::span<const int64_t> ids) const;

 private:
  std::size_t hidden_ = 0;
  std::vector<float> rows_;
  std::vector<int64_t> ids_;
  std::unordered_map<int64_t, std::size_t> index_;
};

}  // namespace s1::heads
