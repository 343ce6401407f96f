#include "text/vocab_model.h"

#include <algorithm>
#include <string>
#include <utility>

namespace s1::text::detail {

VocabModel::VocabModel(Vocab vocab, std::string_view kind) : vocab_(std::move(vocab)) {
  const std::string model = "model " + std::string(kind);
  int32_t max_id = -1;
  for (const auto& [token, id] : vocab_) {
    if (id < 0) throw ConfigError(model + ": token '" + token + "' has negative id " + std::to_string(id));
    max_id = std::max(max_id, id);
  }
  tokens_by_id_.resize(static_cast<size_t>(max_id + 1));
  for (const auto& [token, id] : vocab_) {
    if (!tokens_by_id_[static_cast<size_t>(id)].empty()) {
      throw ConfigError(model + ": id " + std::to_string(id) + " is used by more than one token");
    }
    tokens_by_id_[static_cast<size_t>(id)] = token;
  }
}

std::optional<int32_t> VocabModel::token_to_id(std::string_view token) const {
  const auto found = vocab_.find(token);
  if (found == vocab_.end()) return std::nullopt;
  return found->second;
}

std::string_view VocabModel::id_to_token(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= tokens_by_id_.size()) return {};
  return tokens_by_id_[static_cast<size_t>(id)];
}

}  // namespace s1::text::detail
