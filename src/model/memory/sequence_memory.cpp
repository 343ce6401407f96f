#include "model/memory/sequence_memory.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace s1::memory {
namespace {

// Beyond this many segments (a long run of one-token extensions) an extension merges them into one,
// so that gathering a layer's keys stays a few large copies.
constexpr std::size_t max_segments = 16;

std::shared_ptr<const KvSegment> merge_segments(std::span<const std::shared_ptr<const KvSegment>> segments,
                                                std::size_t layers) {
  auto merged = std::make_shared<KvSegment>();
  merged->keys.resize(layers);
  merged->values.resize(layers);
  for (const auto& segment : segments) {
    merged->length += segment->length;
    for (std::size_t l = 0; l < layers; ++l) {
      merged->keys[l].insert(merged->keys[l].end(), segment->keys[l].begin(), segment->keys[l].end());
      merged->values[l].insert(merged->values[l].end(), segment->values[l].begin(), segment->values[l].end());
    }
  }
  return merged;
}

std::size_t floats_of(const std::vector<std::vector<float>>& buffers) {
  std::size_t floats = 0;
  for (const auto& buffer : buffers) floats += buffer.size();
  return floats;
}

}  // namespace

MemoryExtension::MemoryExtension(const MemoryShape& shape, std::size_t tokens)
    : position_advance_(tokens),
      segment_(std::make_shared<KvSegment>()),
      recurrent_(shape.recurrent_layers, std::vector<float>(shape.recurrent_size)),
      conv_tails_(shape.conv_layers, std::vector<float>(shape.conv_tail_size)) {
  segment_->length = tokens;
  segment_->keys.assign(shape.attention_layers, std::vector<float>(tokens * shape.kv_width));
  segment_->values.assign(shape.attention_layers, std::vector<float>(tokens * shape.kv_width));
}

SequenceMemory::SequenceMemory(const void* owner, const MemoryShape& shape)
    : owner_(owner),
      shape_(shape),
      end_(std::make_shared<const EndStates>(EndStates{
          .recurrent = std::vector<std::vector<float>>(shape.recurrent_layers),
          .conv_tails =
              std::vector<std::vector<float>>(shape.conv_layers, std::vector<float>(shape.conv_tail_size))})) {}

std::size_t SequenceMemory::bytes() const {
  std::size_t floats = floats_of(end_->recurrent) + floats_of(end_->conv_tails);
  for (const auto& segment : segments_) floats += floats_of(segment->keys) + floats_of(segment->values);
  return floats * sizeof(float);
}

std::unique_ptr<SequenceMemory> SequenceMemory::extended(MemoryExtension&& extension) const {
  if (extension.segment_->keys.size() != shape_.attention_layers ||
      extension.recurrent_.size() != shape_.recurrent_layers || extension.conv_tails_.size() != shape_.conv_layers) {
    throw std::invalid_argument("sequence memory: an extension of another shape");
  }
  auto next = std::make_unique<SequenceMemory>(*this);
  next->length_ += extension.segment_->length;
  next->next_position_ += extension.position_advance_;
  next->segments_.push_back(std::move(extension.segment_));
  if (next->segments_.size() > max_segments) {
    next->segments_ = {merge_segments(next->segments_, shape_.attention_layers)};
  }
  next->end_ = std::make_shared<const EndStates>(
      EndStates{.recurrent = std::move(extension.recurrent_), .conv_tails = std::move(extension.conv_tails_)});
  return next;
}

std::unique_ptr<SequenceMemory> SequenceMemory::prefix(std::size_t length) const {
  if (!cuttable() || length > length_) throw std::logic_error("sequence memory: cannot cut to this prefix");
  auto cut = std::make_unique<SequenceMemory>(owner_, shape_);
  std::size_t first = 0;  // the segment's first position
  for (const auto& segment : segments_) {
    if (first >= length) break;
    if (first + segment->length <= length) {
      cut->segments_.push_back(segment);
    } else {
      auto part = std::make_shared<KvSegment>();
      part->length = length - first;
      const auto floats = static_cast<std::ptrdiff_t>(part->length * shape_.kv_width);
      for (std::size_t l = 0; l < shape_.attention_layers; ++l) {
        part->keys.emplace_back(segment->keys[l].begin(), segment->keys[l].begin() + floats);
        part->values.emplace_back(segment->values[l].begin(), segment->values[l].begin() + floats);
      }
      cut->segments_.push_back(std::move(part));
    }
    first += segment->length;
  }
  cut->length_ = length;
  cut->next_position_ = length;  // cuttable(): positions are the token indices
  return cut;
}

void SequenceMemory::gather(std::size_t slot, std::size_t begin, std::size_t end, std::span<float> keys,
                            std::span<float> values) const {
  const std::size_t width = shape_.kv_width;
  std::size_t first = 0;  // the segment's first position
  for (const auto& segment : segments_) {
    const std::size_t from = std::max(begin, first);
    const std::size_t to = std::min(end, first + segment->length);
    if (from < to) {
      const std::size_t offset = (from - first) * width;
      const std::size_t count = (to - from) * width;
      std::copy_n(segment->keys[slot].begin() + static_cast<std::ptrdiff_t>(offset), count,
                  keys.begin() + static_cast<std::ptrdiff_t>(from * width));
      std::copy_n(segment->values[slot].begin() + static_cast<std::ptrdiff_t>(offset), count,
                  values.begin() + static_cast<std::ptrdiff_t>(from * width));
    }
    first += segment->length;
  }
}

SequenceMemory::KeyValues SequenceMemory::key_values(std::size_t slot, std::vector<float>& key_scratch,
                                                     std::vector<float>& value_scratch) const {
  if (segments_.empty()) return {};
  if (segments_.size() == 1) return {segments_.front()->keys[slot], segments_.front()->values[slot]};
  key_scratch.resize(length_ * shape_.kv_width);
  value_scratch.resize(length_ * shape_.kv_width);
  gather(slot, 0, length_, key_scratch, value_scratch);
  return {key_scratch, value_scratch};
}

}  // namespace s1::memory
