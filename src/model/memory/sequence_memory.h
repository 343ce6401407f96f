#pragma once
// What a causal decoder remembers of a sequence, for any mix of layer kinds: the keys and values of
// every position of its attention layers, and the state after the last position of its recurrent
// (gated delta) and short-convolution layers. Running the shared prefix once and branching every
// question from it rests on this: a memory is immutable, so any number of branches (and later
// requests) extend one memory without copying it.

#include <cstddef>
#include <memory>
#include <span>
#include <vector>

namespace s1::memory {

// The buffers a model's memory holds. Each kind numbers its own layers (a layer's slot).
struct MemoryShape {
  std::size_t attention_layers = 0;
  std::size_t kv_width = 0;  // floats per position per attention layer, for keys and for values
  std::size_t recurrent_layers = 0;
  std::size_t recurrent_size = 0;  // floats of one recurrent state
  std::size_t conv_layers = 0;
  std::size_t conv_tail_size = 0;  // floats of one conv tail (the last kernel − 1 inputs)
  bool operator==(const MemoryShape&) const = default;
};

// Keys and values of consecutive positions, per attention layer [length, kv_width].
struct KvSegment {
  std::size_t length = 0;
  std::vector<std::vector<float>> keys;
  std::vector<std::vector<float>> values;
};

// What one branch of a forward pass adds to a memory, written while the pass runs: its own tokens'
// keys and values, and the recurrent states and conv tails after its last token.
class MemoryExtension {
 public:
  MemoryExtension(const MemoryShape& shape, std::size_t tokens);

  [[nodiscard]] std::size_t tokens() const { return segment_->length; }
  // [tokens, kv_width] of attention layer `slot`; row t is the branch's t-th token.
  [[nodiscard]] std::span<float> keys(std::size_t slot) { return segment_->keys[slot]; }
  [[nodiscard]] std::span<float> values(std::size_t slot) { return segment_->values[slot]; }
  [[nodiscard]] std::span<float> recurrent(std::size_t slot) { return recurrent_[slot]; }
  [[nodiscard]] std::span<float> conv_tail(std::size_t slot) { return conv_tails_[slot]; }
  // How far the branch moves the next token's position: its token count, unless an image's 3-D
  // (M-RoPE) positions made it advance less.
  void set_position_advance(std::size_t advance) { position_advance_ = advance; }

 private:
  friend class SequenceMemory;
  std::size_t position_advance_ = 0;
  std::shared_ptr<KvSegment> segment_;
  std::vector<std::vector<float>> recurrent_;
  std::vector<std::vector<float>> conv_tails_;
};

// A sequence's memory: its K/V segments in position order and its end states, all shared and
// immutable. Copying one (a clone) shares everything; extending one shares its segments and adds
// the extension's. Only the model that made a memory (its owner) may read it.
class SequenceMemory {
 public:
  // The empty sequence: no positions, zero conv tails, zero recurrent states.
  SequenceMemory(const void* owner, const MemoryShape& shape);

  // Tokens remembered.
  [[nodiscard]] std::size_t length() const { return length_; }
  // The position of the next token: length(), unless images placed on 3-D (M-RoPE) grids made the
  // positions advance less than the tokens (then the largest position so far + 1).
  [[nodiscard]] std::size_t next_position() const { return next_position_; }
  [[nodiscard]] const MemoryShape& shape() const { return shape_; }
  [[nodiscard]] const void* owner() const { return owner_; }
  // Bytes of every buffer this memory reaches, shared ones included: what keeping it costs.
  [[nodiscard]] std::size_t bytes() const;

  // A copy sharing every buffer (they are immutable), for a caller that keeps it apart.
  [[nodiscard]] std::unique_ptr<SequenceMemory> clone() const { return std::make_unique<SequenceMemory>(*this); }
  // Whether prefix() can cut it: only attention layers, whose positions are independent rows (a
  // recurrent state or conv tail holds only the state after the last position), and positions that
  // are the token indices (a cut inside or after an image would not know its next position).
  [[nodiscard]] bool cuttable() const {
    return shape_.recurrent_layers == 0 && shape_.conv_layers == 0 && next_position_ == length_;
  }
  // Its first `length` positions (≤ length()), sharing the whole segments before the cut; for a
  // cuttable() memory only (std::logic_error otherwise).
  [[nodiscard]] std::unique_ptr<SequenceMemory> prefix(std::size_t length) const;
  // This memory followed by `extension` (whose shape must be this memory's).
  [[nodiscard]] std::unique_ptr<SequenceMemory> extended(MemoryExtension&& extension) const;

  // Positions [begin, end) of attention layer `slot` into keys and values ([length, kv_width] each,
  // rows outside the range untouched), so that threads can gather a share each.
  void gather(std::size_t slot, std::size_t begin, std::size_t end, std::span<float> keys,
              std::span<float> values) const;

  struct KeyValues {
    std::span<const float> keys;  // [length, kv_width]
    std::span<const float> values;
  };
  // Every position of attention layer `slot`: in place when one segment holds them all, otherwise
  // gathered into the scratch buffers.
  [[nodiscard]] KeyValues key_values(std::size_t slot, std::vector<float>& key_scratch,
                                     std::vector<float>& value_scratch) const;

  // The state after the last position; an empty span for the empty sequence (the zero state).
  [[nodiscard]] std::span<const float> recurrent(std::size_t slot) const { return end_->recurrent[slot]; }
  // The last kernel − 1 inputs of conv layer `slot` (zeros before the sequence starts).
  [[nodiscard]] std::span<const float> conv_tail(std::size_t slot) const { return end_->conv_tails[slot]; }

 private:
  struct EndStates {
    std::vector<std::vector<float>> recurrent;  // empty vectors for the empty sequence
    std::vector<std::vector<float>> conv_tails;
  };

  const void* owner_;
  MemoryShape shape_;
  std::size_t length_ = 0;
  std::size_t next_position_ = 0;
  std::vector<std::shared_ptr<const KvSegment>> segments_;
  std::shared_ptr<const EndStates> end_;
};

}  // namespace s1::memory
