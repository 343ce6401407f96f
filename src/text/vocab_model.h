#pragma once
// What the vocabulary models (BPE, WordPiece) share: the token → id map, the id → token table built
// from it, and the lookups of the Model interface that read only those two.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "text/components.h"
#include "text/string_map.h"

namespace s1::text::detail {

using Vocab = StringMap<int32_t>;

class VocabModel : public Model {
 public:
  VocabModel(const VocabModel&) = delete;
  VocabModel& operator=(const VocabModel&) = delete;

  std::optional<int32_t> token_to_id(std::string_view token) const override;
  std::string_view id_to_token(int32_t id) const override;
  size_t id_limit() const override { return tokens_by_id_.size(); }

 protected:
  // `kind` names the model in errors ("BPE", "WordPiece"). Throws ConfigError for a negative id or
  // an id more than one token uses.
  VocabModel(Vocab vocab, std::string_view kind);

  Vocab vocab_;

 private:
  std::vector<std::string_view> tokens_by_id_;  // views of vocab_'s keys
};

}  // namespace s1::text::detail
