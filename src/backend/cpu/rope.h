#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

namespace s1::backend::cpu {

// Rotate-half rotary position embedding (Llama/Qwen layout), in place, on the first rotary_dim
// values of each head of each row: row r starts at x + r·row_stride, head h at + h·head_dim, and
// value pairs (j, j + rotary_dim/2) rotate by angle positions[r] · theta^(−2j/rotary_dim).
// The angles are computed in fp32 exactly as Transformers does (inv_freq in fp32, position ·
// inv_freq in fp32, cos/sin in fp32), so long positions round the same way. rotary_dim must be even
// and ≤ head_dim; values past rotary_dim are left alone (partial rotary).
void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads,
                std::size_t head_dim, std::size_t rotary_dim, std::span<const int64_t> positions, float theta);

// Multimodal RoPE (Qwen2/3-VL M-RoPE): as apply_rope, except that frequency j (of rotary_dim / 2)
// rotates by the position of axis axes[j] ∈ {0, 1, 2} (temporal, height, width) of the row;
// positions holds each axis's positions for every row, axis after axis ([3][rows]). Rows whose
// three positions agree rotate exactly as apply_rope rotates them.
void apply_mrope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads,
                 std::size_t head_dim, std::size_t rotary_dim, std::span<const uint8_t> axes,
                 std::span<const int64_t> positions, float theta);

// The cosines and sines apply_rope computes for each row, for positions [0, positions): built once
// and shared by every layer with the same θ, for attention to rotate queries and keys as it reads
// them (backend/cpu/attention.h) instead of a RoPE pass over the QKV rows.
struct RopeTable {
  std::size_t rotary_dim = 0;
  std::size_t positions = 0;
  std::vector<float> cosines, sines;  // [positions][rotary_dim / 2]
};
[[nodiscard]] RopeTable rope_table(std::size_t rotary_dim, float theta, std::size_t positions);

// apply_rope with the angles of `table` (rotary_dim = table.rotary_dim, every position below
// table.positions), on the calling thread (e.g. a backend::cpu::Team thread's rows): the same values,
// with no angle computed again.
void apply_rope(std::span<float> x, std::size_t rows, std::size_t row_stride, std::size_t heads,
                std::size_t head_dim, const RopeTable& table, std::span<const int64_t> positions);

}  // namespace s1::backend::cpu
