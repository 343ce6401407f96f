#include <algorithm>
#include <cstdio>
#include <queue>
#include <unordered_map>

#include "text/byte_level.h"
#include "text/json_fields.h"
#include "text/string_map.h"
#include "text/utf8.h"
#include "text/vocab_model.h"

namespace s1::text::detail {
namespace {

struct MergeResult {
  uint32_t rank;
  int32_t id;
};

uint64_t pair_key(int32_t left, int32_t right) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) | static_cast<uint32_t>(right);
}

// One symbol of a word being merged: a doubly linked list over a vector, as HF's Word.
struct Symbol {
  int32_t id;
  int32_t previous;
  int32_t next;
  bool removed;
};

struct Candidate {
  uint32_t rank;
  int32_t position;
  int32_t id;
  // std::priority_queue pops the largest, so "greater" means lower rank, then leftmost.
  bool operator<(const Candidate& other) const {
    return rank != other.rank ? rank > other.rank : position > other.position;
  }
};

// HF's BPE model: a word starts as single characters (single bytes after a ByteLevel
// pre-tokeniser), then the lowest-ranked adjacent pair is merged, leftmost first, until no pair
// has a merge. Vocab tokens of a byte-level file are spelled in GPT-2's alphabet; they are keyed
// here by the bytes they stand for, so words are never re-spelled.
class Bpe final : public VocabModel {
 public:
  struct Options {
    std::optional<std::string> unk_token;
    bool fuse_unk = false;
    bool byte_fallback = false;
    bool ignore_merges = false;
    bool byte_level = false;
  };

  Bpe(Vocab vocab, std::span<const std::pair<std::string, std::string>> merges, Options options)
      : VocabModel(std::move(vocab), "BPE"), options_(std::move(options)) {
    if (options_.byte_level) {
      // Tokens outside the alphabet (none in Qwen's files) can only be reached by id.
      for (const auto& [token, id] : vocab_) {
        if (std::optional<std::string> bytes = byte_level_to_bytes(token)) symbols_.emplace(std::move(*bytes), id);
      }
    }
    if (options_.unk_token) {
      const auto unk = vocab_.find(*options_.unk_token);
      if (unk == vocab_.end()) {
        throw ConfigError("model BPE: unk_token '" + *options_.unk_token + "' is not in the vocab");
      }
      unk_id_ = unk->second;
    }
    if (options_.byte_fallback) {
      for (int byte = 0; byte < 256; ++byte) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", byte);
        const auto found = symbol_vocab().find(std::string_view(name));
        fallback_ids_[static_cast<size_t>(byte)] = found == symbol_vocab().end() ? -1 : found->second;
      }
    }
    merges_.reserve(merges.size());
    for (size_t rank = 0; rank < merges.size(); ++rank) {
      const auto& [left, right] = merges[rank];
      const int32_t left_id = merge_part_id(left, merges[rank]);
      const int32_t right_id = merge_part_id(right, merges[rank]);
      const int32_t merged_id = merge_part_id(left + right, merges[rank]);
      // A repeated pair keeps its last rank, as HF's map construction does.
      merges_.insert_or_assign(pair_key(left_id, right_id), MergeResult{static_cast<uint32_t>(rank), merged_id});
    }
  }

  std::vector<int32_t> tokenize(std::span<const std::string_view> words) const override {
    std::vector<int32_t> ids;
    ids.reserve(words.size() * 2);
    for (const std::string_view word : words) {
      if (word.empty()) continue;
      if (options_.ignore_merges) {
        if (const auto whole = symbol_vocab().find(word); whole != symbol_vocab().end()) {
          ids.push_back(whole->second);
          continue;
        }
      }
      for (const Symbol& symbol : merge_all(initial_symbols(word))) {
        if (!symbol.removed) ids.push_back(symbol.id);
      }
    }
    return ids;
  }

  std::optional<int32_t> unk_id() const override { return unk_id_; }

 private:
  // Where symbols are looked up: by bytes for a byte-level file, by spelling otherwise.
  const Vocab& symbol_vocab() const { return options_.byte_level ? symbols_ : vocab_; }

  int32_t merge_part_id(const std::string& token, const std::pair<std::string, std::string>& merge) const {
    const auto found = vocab_.find(token);
    if (found == vocab_.end()) {
      throw ConfigError("model BPE: merge '" + merge.first + " " + merge.second + "' uses '" + token +
                        "', which is not in the vocab");
    }
    return found->second;
  }

  // HF's merge_word before merging: one symbol per character (byte), unknown ones as byte
  // fallback tokens or unk, consecutive unks fused when fuse_unk is set.
  std::vector<Symbol> initial_symbols(std::string_view word) const {
    std::vector<Symbol> symbols;
    symbols.reserve(word.size());
    const auto add = [&](int32_t id) {
      const auto index = static_cast<int32_t>(symbols.size());
      symbols.push_back({id, index - 1, index + 1, false});
    };
    bool unk_pending = false;
    for (size_t position = 0; position < word.size();) {
      const size_t length = options_.byte_level ? 1 : decode_utf8(word, position).length;
      const std::string_view character = word.substr(position, length);
      position += length;
      if (const auto found = symbol_vocab().find(character); found != symbol_vocab().end()) {
        if (unk_pending) add(*unk_id_);
        unk_pending = false;
        add(found->second);
        continue;
      }
      if (options_.byte_fallback &&
          std::all_of(character.begin(), character.end(),
                      [&](char byte) { return fallback_ids_[static_cast<unsigned char>(byte)] >= 0; })) {
        // HF leaves a pending unk in place here, so it lands after these bytes.
        for (const char byte : character) add(fallback_ids_[static_cast<unsigned char>(byte)]);
        continue;
      }
      if (!unk_id_) continue;
      if (unk_pending && !options_.fuse_unk) add(*unk_id_);
      unk_pending = true;
    }
    if (unk_pending) add(*unk_id_);
    if (!symbols.empty()) symbols.back().next = -1;
    return symbols;
  }

  std::optional<MergeResult> merge_of(int32_t left, int32_t right) const {
    const auto found = merges_.find(pair_key(left, right));
    if (found == merges_.end()) return std::nullopt;
    return found->second;
  }

  // HF's Word::merge_all, stale queue entries included, so ties resolve the same way.
  std::vector<Symbol> merge_all(std::vector<Symbol> symbols) const {
    std::priority_queue<Candidate> queue;
    for (size_t index = 0; index + 1 < symbols.size(); ++index) {
      if (const auto merge = merge_of(symbols[index].id, symbols[index + 1].id)) {
        queue.push({merge->rank, static_cast<int32_t>(index), merge->id});
      }
    }
    while (!queue.empty()) {
      const Candidate top = queue.top();
      queue.pop();
      Symbol& left = symbols[static_cast<size_t>(top.position)];
      if (left.removed || left.next < 0) continue;
      Symbol& right = symbols[static_cast<size_t>(left.next)];
      const auto current = merge_of(left.id, right.id);
      if (!current || current->id != top.id) continue;
      left.id = top.id;
      right.removed = true;
      left.next = right.next;
      if (left.next >= 0) symbols[static_cast<size_t>(left.next)].previous = top.position;
      if (left.previous >= 0) {
        if (const auto merge = merge_of(symbols[static_cast<size_t>(left.previous)].id, left.id)) {
          queue.push({merge->rank, left.previous, merge->id});
        }
      }
      if (left.next >= 0) {
        if (const auto merge = merge_of(left.id, symbols[static_cast<size_t>(left.next)].id)) {
          queue.push({merge->rank, top.position, merge->id});
        }
      }
    }
    return symbols;
  }

  Vocab symbols_;
  Options options_;
  std::unordered_map<uint64_t, MergeResult> merges_;
  std::optional<int32_t> unk_id_;
  std::array<int32_t, 256> fallback_ids_{};
};

std::vector<std::pair<std::string, std::string>> parse_merges(const nlohmann::json& section) {
  const auto merges_json = section.find("merges");
  if (merges_json == section.end() || !merges_json->is_array()) {
    throw ConfigError("model BPE: 'merges' must be an array");
  }
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json->size());
  for (const nlohmann::json& merge : *merges_json) {
    if (merge.is_string()) {
      // The older "left right" form; tokens then cannot contain a space.
      const auto& text = merge.get_ref<const std::string&>();
      const size_t space = text.find(' ');
      if (space == std::string::npos || text.find(' ', space + 1) != std::string::npos) {
        throw ConfigError("model BPE: merge '" + text + "' is not two tokens separated by one space");
      }
      merges.emplace_back(text.substr(0, space), text.substr(space + 1));
    } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() && merge[1].is_string()) {
      merges.emplace_back(merge[0].get<std::string>(), merge[1].get<std::string>());
    } else {
      throw ConfigError("model BPE: merge " + merge.dump() + " is neither \"a b\" nor [a, b]");
    }
  }
  return merges;
}

}  // namespace

std::unique_ptr<Model> make_bpe(const nlohmann::json& section, bool byte_level) {
  constexpr std::string_view component = "model BPE";
  const auto vocab_json = section.find("vocab");
  if (vocab_json == section.end() || !vocab_json->is_object()) {
    throw ConfigError("model BPE: 'vocab' must be an object of token -> id");
  }
  Vocab vocab;
  vocab.reserve(vocab_json->size());
  for (const auto& [token, id] : vocab_json->items()) {
    if (!id.is_number_integer()) throw ConfigError("model BPE: id of token '" + token + "' is not an integer");
    vocab.emplace(token, id.get<int32_t>());
  }
  if (const auto dropout = optional_field<double>(section, component, "dropout", 0.0); dropout != 0.0) {
    throw ConfigError("model BPE: dropout " + std::to_string(dropout) + " is not supported (only null)");
  }
  for (const char* field : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    if (!optional_field<std::string>(section, component, field, "").empty()) {
      throw ConfigError(std::string("model BPE: ") + field + " is not supported");
    }
  }
  Bpe::Options options;
  if (const auto unk = section.find("unk_token"); unk != section.end() && !unk->is_null()) {
    options.unk_token = required_field<std::string>(section, component, "unk_token");
  }
  options.fuse_unk = optional_field<bool>(section, component, "fuse_unk", false);
  options.byte_fallback = optional_field<bool>(section, component, "byte_fallback", false);
  options.ignore_merges = optional_field<bool>(section, component, "ignore_merges", false);
  options.byte_level = byte_level;
  return std::make_unique<Bpe>(std::move(vocab), parse_merges(section), std::move(options));
}

}  // namespace s1::text::detail
