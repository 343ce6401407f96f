#include <map>
#include <memory>
#include <vector>

#include "text/json_fields.h"

namespace s1::text::detail {
namespace {

// One piece of a single-sequence template: either the sequence itself or special-token ids.
struct TemplatePiece {
  bool is_sequence;
  std::vector<int32_t> special_ids;
};

// TemplateProcessing and BertProcessing both reduce to a single-sequence template; pairs are not
// supported yet.
class TemplateProcessor final : public PostProcessor {
 public:
  explicit TemplateProcessor(std::vector<TemplatePiece> pieces) : pieces_(std::move(pieces)) {
    for (const TemplatePiece& piece : pieces_) added_ += piece.special_ids.size();
  }

  size_t added_token_count() const override { return added_; }

  std::vector<int32_t> apply(std::span<const int32_t> content) const override {
    std::vector<int32_t> ids;
    ids.reserve(content.size() + added_);
    for (const TemplatePiece& piece : pieces_) {
      if (piece.is_sequence) {
        ids.insert(ids.end(), content.begin(), content.end());
      } else {
        ids.insert(ids.end(), piece.special_ids.begin(), piece.special_ids.end());
      }
    }
    return ids;
  }

  std::optional<int32_t> cls_id() const override { return single_id(pieces_.front()); }
  std::optional<int32_t> sep_id() const override { return single_id(pieces_.back()); }

 private:
  static std::optional<int32_t> single_id(const TemplatePiece& piece) {
    if (piece.is_sequence || piece.special_ids.size() != 1) return std::nullopt;
    return piece.special_ids.front();
  }

  std::vector<TemplatePiece> pieces_;
  size_t added_ = 0;
};

std::unique_ptr<PostProcessor> make_template_processing(const nlohmann::json& section) {
  constexpr std::string_view component = "post_processor TemplateProcessing";
  std::map<std::string, std::vector<int32_t>> special_tokens;
  const auto specials = section.find("special_tokens");
  if (specials != section.end() && !specials->is_null()) {
    if (!specials->is_object())
      throw ConfigError("post_processor TemplateProcessing: 'special_tokens' must be an object");
    for (const auto& [name, token] : specials->items()) {
      special_tokens[name] = required_field<std::vector<int32_t>>(token, component, "ids");
    }
  }
  const auto single = section.find("single");
  if (single == section.end() || !single->is_array() || single->empty()) {
    throw ConfigError("post_processor TemplateProcessing: 'single' must be a non-empty array");
  }
  std::vector<TemplatePiece> pieces;
  size_t sequences = 0;
  for (const nlohmann::json& piece : *single) {
    if (const auto sequence = piece.find("Sequence"); piece.is_object() && sequence != piece.end()) {
      if (required_field<std::string>(*sequence, component, "id") != "A") {
        throw ConfigError("post_processor TemplateProcessing: the single template may only use sequence A");
      }
      ++sequences;
      pieces.push_back({true, {}});
    } else if (const auto special = piece.find("SpecialToken"); piece.is_object() && special != piece.end()) {
      const auto name = required_field<std::string>(*special, component, "id");
      const auto found = special_tokens.find(name);
      if (found == special_tokens.end()) {
        throw ConfigError("post_processor TemplateProcessing: special token '" + name + "' is not in special_tokens");
      }
      pieces.push_back({false, found->second});
    } else {
      throw ConfigError("post_processor TemplateProcessing: template piece " + piece.dump() + " is not supported");
    }
  }
  if (sequences != 1) throw ConfigError("post_processor TemplateProcessing: the single template needs sequence A once");
  return std::make_unique<TemplateProcessor>(std::move(pieces));
}

int32_t bert_processing_id(const nlohmann::json& section, const char* field) {
  const auto found = section.find(field);
  if (found == section.end() || !found->is_array() || found->size() != 2 || !(*found)[1].is_number_integer()) {
    throw ConfigError(std::string("post_processor BertProcessing: '") + field + "' must be [token, id]");
  }
  return (*found)[1].get<int32_t>();
}

// HF's ByteLevel post-processor only trims offsets; the ids pass through.
class PassThroughProcessor final : public PostProcessor {
 public:
  size_t added_token_count() const override { return 0; }
  std::vector<int32_t> apply(std::span<const int32_t> content) const override {
    return {content.begin(), content.end()};
  }
  std::optional<int32_t> cls_id() const override { return std::nullopt; }
  std::optional<int32_t> sep_id() const override { return std::nullopt; }
};

// HF's Sequence: each processor runs on what the one before it made (the Llama-3 layout is
// ByteLevel, which keeps the ids, then TemplateProcessing).
class SequenceProcessor final : public PostProcessor {
 public:
  explicit SequenceProcessor(std::vector<std::unique_ptr<PostProcessor>> stages) : stages_(std::move(stages)) {}

  size_t added_token_count() const override {
    size_t added = 0;
    for (const auto& stage : stages_) added += stage->added_token_count();
    return added;
  }

  std::vector<int32_t> apply(std::span<const int32_t> content) const override {
    std::vector<int32_t> ids(content.begin(), content.end());
    for (const auto& stage : stages_) ids = stage->apply(ids);
    return ids;
  }

  // The outermost stage that puts a token at that end decides it.
  std::optional<int32_t> cls_id() const override { return outermost(&PostProcessor::cls_id); }
  std::optional<int32_t> sep_id() const override { return outermost(&PostProcessor::sep_id); }

 private:
  std::optional<int32_t> outermost(std::optional<int32_t> (PostProcessor::*end)() const) const {
    for (auto stage = stages_.rbegin(); stage != stages_.rend(); ++stage) {
      if (const std::optional<int32_t> id = ((**stage).*end)()) return id;
    }
    return std::nullopt;
  }

  std::vector<std::unique_ptr<PostProcessor>> stages_;
};

std::unique_ptr<PostProcessor> make_sequence(const nlohmann::json& section) {
  const auto processors = section.find("processors");
  if (processors == section.end() || !processors->is_array() || processors->empty()) {
    throw ConfigError("post_processor Sequence: 'processors' must be a non-empty array");
  }
  std::vector<std::unique_ptr<PostProcessor>> stages;
  for (const nlohmann::json& processor : *processors) {
    if (processor.is_null()) throw ConfigError("post_processor Sequence: a processor is null");
    stages.push_back(make_post_processor(processor));
  }
  return std::make_unique<SequenceProcessor>(std::move(stages));
}

}  // namespace

std::unique_ptr<PostProcessor> make_post_processor(const nlohmann::json& section) {
  if (section.is_null()) return nullptr;
  const std::string type = component_type(section, "post_processor");
  if (type == "TemplateProcessing") return make_template_processing(section);
  if (type == "BertProcessing") {
    return std::make_unique<TemplateProcessor>(std::vector<TemplatePiece>{
        {false, {bert_processing_id(section, "cls")}}, {true, {}}, {false, {bert_processing_id(section, "sep")}}});
  }
  if (type == "ByteLevel") return std::make_unique<PassThroughProcessor>();
  if (type == "Sequence") return make_sequence(section);
  throw unsupported("post_processor", type);
}

}  // namespace s1::text::detail
