#pragma once
// What every encoder family (BERT, ModernBERT) offers the contracts and pipelines beside
// decoder::CausalDecoder: run a batch of token sequences bidirectionally and return every row's last
// hidden state. Callers see hidden rows, never a family's layers; families come from the one family
// table (model/families.h).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "backend/backend.h"
#include "model/checkpoint/checkpoint.h"

namespace s1::encoder {

struct EncoderInfo {
  std::string family;  // "bert", "modernbert"
  std::size_t hidden_size = 0;
  std::size_t vocab_size = 0;
  std::size_t max_positions = 0;
};

class Encoder {
 public:
  virtual ~Encoder() = default;

  [[nodiscard]] virtual const EncoderInfo& info() const = 0;

  // The last hidden states of every sequence, packed without padding: [Σ lengths, hidden_size], the
  // rows of sequences[i] right after those of sequences[i − 1]. No row attends to another sequence's.
  // Every id must be < vocab_size and every sequence non-empty and at most max_positions long
  // (std::invalid_argument otherwise). The view lives until the next call. Not thread-safe (scratch
  // buffers are reused).
  virtual std::span<const float> forward(std::span<const std::span<const int32_t>> sequences) = 0;
};

// An encoder family's parsed config, before any weights: what it will be, and how to load it from a
// checkpoint whose encoder tensors sit under `prefix` ("" for a bare encoder checkpoint).
class EncoderSpec {
 public:
  virtual ~EncoderSpec() = default;
  [[nodiscard]] virtual const EncoderInfo& info() const = 0;
  // Matmuls in `arithmetic`. Throws checkpoint::LoadError naming the checkpoint and tensor.
  [[nodiscard]] virtual std::unique_ptr<Encoder> load(const checkpoint::Checkpoint& weights, const std::string& prefix,
                                                      backend::Arithmetic arithmetic) const = 0;
};

}  // namespace s1::encoder
