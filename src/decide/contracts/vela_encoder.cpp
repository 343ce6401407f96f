#include "decide/contracts/vela_encoder.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <tuple>
#include <utility>

#include "decide/answer_math.h"
#include "decide/contract_common.h"
#include "decide/prompt.h"
#include "decide/python_text.h"
#include "decide/token_budget.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "model/families.h"

namespace s1::decide {
namespace {

constexpr std::string_view encoder_prefix = "encoder.";

// The vela2-unified marker names, as config.json's "markers" and "marker_ids" spell them.
constexpr std::array<std::string_view, 8> marker_names = {"[Q]",        "[O]",          "[ABS]", "[SEP_SCHEMA]",
                                                          "[SEG_user]", "[SEG_answer]", "[E]",   "[SEG_context]"};

// State members and the part each becomes, in sequence order.
// vllm-sr's runtime (families/vela2/request.py STATE_KEY_ROLES): the part a known state key feeds;
// any other key feeds the context part.
constexpr std::array<std::pair<std::string_view, std::string_view>, 10> state_key_roles = {
    {{"request", "user"},
     {"user", "user"},
     {"prompt", "user"},
     {"source", "context"},
     {"context", "context"},
     {"document", "context"},
     {"tools", "context"},
     {"previous_answer", "context"},
     {"answer", "answer"},
     {"response", "answer"}}};
constexpr std::array<std::string_view, 3> part_roles = {"user", "context", "answer"};

std::optional<api::QuestionType> parse_question_type(std::string_view name) {
  if (name == "choice") return api::QuestionType::choice;
  if (name == "noul") return api::QuestionType::noul;
  if (name == "score") return api::QuestionType::score;
  return std::nullopt;
}

double read_temperature(checkpoint::ConfigReader& reader, std::string_view type) {
  const double value = reader.optional<double>(type, 1.0);
  if (!(value > 0.0) || !std::isfinite(value)) reader.reject(type, "must be a positive temperature");
  return value;
}

// The package tokenizer without its marker entries, so that text never produces a marker id (as
// vllm-sr's own runtime loads it).
text::Tokenizer tokenizer_without_markers(const std::filesystem::path& file, std::span<const std::string> markers) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw text::TokenizerLoadError("cannot open tokenizer file " + file.string());
  std::ostringstream contents;
  contents << in.rdbuf();
  api::Json spec;
  try {
    spec = api::Json::parse(contents.str());
  } catch (const api::Json::exception& error) {
    throw text::TokenizerLoadError("tokenizer " + file.string() + ": " + error.what());
  }
  if (auto added = spec.find("added_tokens"); added != spec.end() && added->is_array()) {
    api::Json kept = api::Json::array();
    for (const api::Json& token : *added) {
      const bool marker =
          token.is_object() && token.contains("content") && token["content"].is_string() &&
          std::find(markers.begin(), markers.end(), token["content"].get<std::string>()) != markers.end();
      if (!marker) kept.push_back(token);
    }
    *added = std::move(kept);
  }
  return text::Tokenizer::from_json(spec.dump(), file.string());
}

}  // namespace

VelaSettings read_vela_settings(checkpoint::ConfigReader& decision_file) {
  VelaSettings settings;
  read_served_model_identity(decision_file, settings);
  settings.precision = read_precision(decision_file, backend::cpu::Precision::fp32);
  if (auto types = decision_file.optional<std::vector<std::string>>("abstain_types")) {
    settings.abstain_types.clear();
    for (const std::string& name : *types) {
      const std::optional<api::QuestionType> type = parse_question_type(name);
      if (!type) decision_file.reject("abstain_types", "'" + name + "' is not choice, noul or score");
      settings.abstain_types.insert(*type);
    }
  }
  decision_file.finish();
  return settings;
}

VelaPackage read_vela_package(const std::filesystem::path& config_file) {
  checkpoint::ConfigReader reader = checkpoint::ConfigReader::from_file(config_file);
  VelaPackage package;
  if (const auto type = reader.required<std::string>("model_type"); type != "vela2-unified") {
    reader.reject("model_type", "'" + type + "' is not the Vela 2.0 encoder format (vela2-unified)");
  }
  if (reader.required<int64_t>("format_version") != 1) reader.reject("format_version", "only format 1 is known");
  checkpoint::ConfigReader encoder = reader.required_object("encoder_config");
  package.encoder = model::read_encoder_config("modernbert", encoder);
  const int64_t projection = reader.required<int64_t>("proj_dim");
  if (projection < 1) reader.reject("proj_dim", "must be at least 1");
  package.projection = static_cast<std::size_t>(projection);
  const std::string readout = reader.required<std::string>("readout");
  if (readout == "cosine") {
    package.readout = heads::VelaReadout::cosine;
  } else if (readout == "mlp") {
    package.readout = heads::VelaReadout::mlp;
  } else if (readout == "both") {
    package.readout = heads::VelaReadout::both;
  } else {
    reader.reject("readout", "must be \"cosine\", \"mlp\" or \"both\"");
  }
  package.marker_names = reader.required<std::vector<std::string>>("markers");
  std::vector<std::string> sorted_names = package.marker_names;
  std::vector<std::string> expected(marker_names.begin(), marker_names.end());
  std::sort(sorted_names.begin(), sorted_names.end());
  std::sort(expected.begin(), expected.end());
  if (sorted_names != expected) reader.reject("markers", "must name the eight Vela 2.0 markers");
  checkpoint::ConfigReader ids = reader.required_object("marker_ids");
  const auto marker = [&](std::string_view name) {
    const int64_t id = ids.required<int64_t>(name);
    if (id < 0 || std::cmp_greater_equal(id, package.encoder->info().vocab_size)) {
      ids.reject(name, "is outside the encoder's vocabulary");
    }
    return static_cast<int32_t>(id);
  };
  package.markers.q = marker("[Q]");
  package.markers.o = marker("[O]");
  package.markers.abstain = marker("[ABS]");
  package.markers.sep_schema = marker("[SEP_SCHEMA]");
  package.markers.seg_user = marker("[SEG_user]");
  package.markers.seg_answer = marker("[SEG_answer]");
  package.markers.e = marker("[E]");
  package.markers.seg_context = marker("[SEG_context]");
  ids.finish();
  const auto token = [&](std::string_view key) {
    const int64_t id = reader.required<int64_t>(key);
    if (id < 0 || std::cmp_greater_equal(id, package.encoder->info().vocab_size)) {
      reader.reject(key, "is outside the encoder's vocabulary");
    }
    return static_cast<int32_t>(id);
  };
  package.bos = token("bos_token_id");
  package.eos = token("eos_token_id");
  (void)token("pad_token_id");  // execution is unpadded
  const int64_t max_length = reader.required<int64_t>("max_length");
  if (max_length < 4) reader.reject("max_length", "must be at least 4");
  package.max_length = std::min(static_cast<std::size_t>(max_length), package.encoder->info().max_positions);
  const int64_t overlap = reader.optional<int64_t>("window_overlap", 512);
  if (overlap < 0) reader.reject("window_overlap", "must not be negative");
  package.window_overlap = static_cast<std::size_t>(overlap);
  reader.ignore({"architectures", "auto_map", "transformers_version", "torch_dtype", "model_name"});
  reader.finish();
  return package;
}

VelaCalibration read_vela_calibration(const std::filesystem::path& calibration_file) {
  checkpoint::ConfigReader reader = checkpoint::ConfigReader::from_file(calibration_file);
  VelaCalibration calibration;
  checkpoint::ConfigReader temperature = reader.required_object("temperature");
  calibration.choice = read_temperature(temperature, "choice");
  calibration.noul = read_temperature(temperature, "noul");
  calibration.score = read_temperature(temperature, "score");
  temperature.ignore({"set", "span"});  // set and span questions are not served
  temperature.finish();
  if (std::optional<checkpoint::ConfigReader> noul = reader.optional_object("noul_calibration")) {
    VelaCalibration::Noul block;
    block.temperature = noul->required<double>("T");
    if (!(block.temperature > 0.0) || !std::isfinite(block.temperature)) noul->reject("T", "must be positive");
    block.bias = noul->required<double>("b");
    const bool by_default = noul->optional<bool>("default", false);
    noul->finish();
    if (by_default) calibration.noul_calibration = block;
  }
  // The rest of the file (thresholds, the PII rule, span schemas) calibrates set and span questions.
  return calibration;
}

std::optional<std::vector<std::size_t>> vela_fit_parts(std::span<const std::size_t> lengths, std::size_t fixed,
                                                       std::size_t room) {
  std::vector<std::size_t> budget(lengths.begin(), lengths.end());
  const auto over = [&] {
    std::size_t total = fixed;
    for (const std::size_t length : budget) total += length;
    return total > room ? total - room : 0;
  };
  for (std::size_t& length : budget) {
    if (over() > 0) length = std::max<std::size_t>(1, length > over() ? length - over() : 0);
  }
  if (over() > 0) return std::nullopt;
  return budget;
}

std::vector<VelaPart> vela_parts(const api::Json& state) {
  const auto content_text = [](const api::Json& value) {
    return value.is_string() ? value.get<std::string>() : python_sorted_compact_json(value);
  };
  api::Json object = state;
  if (state.is_string()) {
    const std::string_view text = python_strip(state.get_ref<const std::string&>());
    if (text.starts_with('{')) {
      const api::Json decoded = api::Json::parse(text, nullptr, false);
      if (!decoded.is_discarded() && decoded.is_object()) object = decoded;
    }
  }
  if (!object.is_object() || object.empty()) return {{"user", content_text(state)}};
  // Per part: (key, text, whether the key is a known one).
  std::map<std::string_view, std::vector<std::tuple<std::string, std::string, bool>>> by_role;
  for (const auto& [key, value] : object.items()) {
    std::string lower = key;
    std::ranges::transform(lower, lower.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    const auto known =
        std::ranges::find(state_key_roles, std::string_view(lower), &decltype(state_key_roles)::value_type::first);
    const std::string_view role = known == state_key_roles.end() ? "context" : known->second;
    by_role[role].emplace_back(key, content_text(value), known != state_key_roles.end());
  }
  std::vector<VelaPart> parts;
  for (const std::string_view role : part_roles) {
    const auto found = by_role.find(role);
    if (found == by_role.end()) continue;
    const auto& items = found->second;
    std::string text;
    if (items.size() == 1 && std::get<2>(items[0])) {
      text = std::get<1>(items[0]);
    } else {
      // A part fed by several keys, or by an unknown one: "key:\n<value>" blocks, a blank line apart.
      for (const auto& [key, value, known] : items) text += (text.empty() ? "" : "\n\n") + key + ":\n" + value;
    }
    parts.push_back({std::string(role), std::move(text)});
  }
  return parts;
}

std::vector<std::pair<std::string, std::string>> vela_named_options(const api::Question& question) {
  const auto text = [](const api::Json& value, std::string_view fallback) {
    return value.is_null() ? std::string(fallback) : python_text(value);
  };
  std::vector<std::pair<std::string, std::string>> options;
  switch (question.type) {
    case api::QuestionType::choice:
      for (const api::ChoiceOption& option : question.options)
        options.emplace_back(option.name, text(option.description, ""));
      break;
    case api::QuestionType::noul:
      options.emplace_back("no", text(question.noul_false, vela_noul_default_no));
      options.emplace_back("yes", text(question.noul_true, vela_noul_default_yes));
      break;
    case api::QuestionType::score:
      for (const api::Json& level : question.levels) options.emplace_back(python_text(level), "");
      break;
  }
  return options;
}

std::vector<std::string> vela_option_texts(const api::Question& question) {
  std::vector<std::string> texts;
  for (const auto& [name, description] : vela_named_options(question)) {
    texts.push_back(description.empty() ? name : name + ": " + description);
  }
  return texts;
}

api::Result<std::vector<VelaSequence>> vela_pack_request(const text::Tokenizer& tokenizer, const VelaPackage& package,
                                                         const std::set<api::QuestionType>& abstain_types,
                                                         const api::DecisionRequest& request) {
  VelaSequence schema;
  std::vector<int32_t>& ids = schema.ids;
  ids.push_back(package.bos);
  for (const api::Question& question : request.questions) {
    heads::VelaQuestionSlots slots;
    slots.query = ids.size();
    ids.push_back(package.markers.q);
    const std::string instructions_text =
        question.instructions.is_null() ? std::string() : python_text(question.instructions);
    const std::vector<int32_t> instructions = encode_without_special_tokens(tokenizer, instructions_text);
    ids.insert(ids.end(), instructions.begin(), instructions.end());
    const std::vector<std::string> options = vela_option_texts(question);
    for (const std::string& option : options) {
      slots.options.push_back(ids.size());
      ids.push_back(package.markers.o);
      const std::vector<int32_t> text = encode_without_special_tokens(tokenizer, option);
      ids.insert(ids.end(), text.begin(), text.end());
    }
    if (abstain_types.contains(question.type)) {
      slots.options.push_back(ids.size());
      ids.push_back(package.markers.abstain);
    }
    schema.questions.push_back(std::move(slots));
    schema.real_options.push_back(options.size());
  }
  ids.push_back(package.markers.sep_schema);

  const std::vector<VelaPart> parts = vela_parts(request.state);
  std::vector<std::vector<int32_t>> part_ids;
  std::vector<std::size_t> lengths;
  for (const VelaPart& part : parts) {
    part_ids.push_back(encode_without_special_tokens(tokenizer, part.text));
    lengths.push_back(part_ids.back().size());
    schema.state_tokens += lengths.back();
  }
  const std::size_t fixed = ids.size() + parts.size() + 1;  // a segment marker per part, <eos>
  const std::optional<std::vector<std::size_t>> budget = vela_fit_parts(lengths, fixed, package.max_length);
  if (!budget) {
    return api::ApiError::make(api::ErrorCode::max_tokens_exceeded,
                               "The questions and options of this request take " + std::to_string(fixed) +
                                   " of this model's " + std::to_string(package.max_length) +
                                   " sequence tokens and leave no room for the state");
  }
  // One sequence of the schema and the parts' token ranges [begin, end).
  const auto assemble = [&](const std::vector<std::pair<std::size_t, std::size_t>>& ranges) {
    VelaSequence sequence = schema;
    const std::size_t pool_begin = sequence.ids.size();
    for (std::size_t i = 0; i < parts.size(); ++i) {
      const std::string& role = parts[i].role;
      sequence.ids.push_back(role == "user"      ? package.markers.seg_user
                             : role == "context" ? package.markers.seg_context
                                                 : package.markers.seg_answer);
      const auto [begin, end] = ranges[i];
      sequence.ids.insert(sequence.ids.end(), part_ids[i].begin() + static_cast<std::ptrdiff_t>(begin),
                          part_ids[i].begin() + static_cast<std::ptrdiff_t>(end));
      sequence.state_tokens_kept += end - begin;
    }
    const std::size_t pool_end = sequence.ids.size();
    sequence.ids.push_back(package.eos);
    for (heads::VelaQuestionSlots& slots : sequence.questions) {
      slots.pool_begin = pool_begin;
      slots.pool_end = pool_end;
    }
    return sequence;
  };
  std::vector<std::pair<std::size_t, std::size_t>> kept;
  for (std::size_t i = 0; i < parts.size(); ++i) kept.emplace_back(0, std::min(lengths[i], (*budget)[i]));
  // The package reads a cut part in overlapping windows of the kept length when every question reads
  // that one part (a one-part state here); the windows replace the cut sequence.
  if (parts.size() != 1 || kept[0].second >= lengths[0]) return std::vector<VelaSequence>{assemble(kept)};
  const std::size_t total = lengths[0], length = kept[0].second;
  const std::size_t overlap = std::min(package.window_overlap, length / 4);
  const std::size_t stride = std::max<std::size_t>(1, length - overlap);
  std::vector<VelaSequence> windows;
  for (std::size_t start = 0; start < std::max<std::size_t>(1, total - overlap); start += stride) {
    const std::size_t end = std::min(total, start + length);
    windows.push_back(assemble({{start, end}}));
    if (end >= total) break;
  }
  return windows;
}

double top2_margin_confidence(std::span<const double> probabilities) {
  if (probabilities.size() <= 1) return 1.0;
  double first = 0.0, second = 0.0;
  for (const double p : probabilities) {
    if (p > first) {
      second = first;
      first = p;
    } else if (p > second) {
      second = p;
    }
  }
  return std::clamp(first - second, 0.0, 1.0);
}

double variance_confidence(std::span<const double> probabilities) {
  const std::size_t n = probabilities.size();
  if (n <= 1) return 1.0;
  double mean = 0.0;
  for (std::size_t i = 0; i < n; ++i) mean += static_cast<double>(i) * probabilities[i];
  double variance = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    const double distance = static_cast<double>(i) - mean;
    variance += probabilities[i] * distance * distance;
  }
  // The variance of a uniform distribution over the n levels.
  const double uniform = (static_cast<double>(n) * static_cast<double>(n) - 1.0) / 12.0;
  return std::clamp(1.0 - variance / uniform, 0.0, 1.0);
}

api::Result<api::Answer> vela_answer(api::QuestionType type, std::span<const float> option_logits,
                                     const VelaCalibration& calibration) {
  std::vector<double> scores(option_logits.begin(), option_logits.end());
  if (type == api::QuestionType::noul) {
    if (scores.size() != 2)
      return api::ApiError::make(api::ErrorCode::internal_error, "a noul question needs two logits");
    const std::vector<double> p = softmax(scores, calibration.choice);  // (no, yes)
    if (p.empty())
      return api::ApiError::make(api::ErrorCode::internal_error, "The model produced a non-finite label score");
    double p_true = p[1];
    if (calibration.noul_calibration) {
      const double clamped = std::clamp(p_true, 1e-12, 1.0 - 1e-12);
      const double logit = std::log(clamped) - std::log1p(-clamped);
      p_true =
          1.0 /
          (1.0 + std::exp(-(logit / calibration.noul_calibration->temperature + calibration.noul_calibration->bias)));
    }
    api::Answer answer;
    answer.type = type;
    answer.probabilities = {p_true, 1.0 - p_true};
    return answer;
  }
  const double temperature = type == api::QuestionType::choice ? calibration.choice : calibration.score;
  auto answer = make_answer(type, scores, temperature, ConfidenceMethod::linear);
  if (!answer) return answer;
  answer.value().confidence = type == api::QuestionType::choice ? top2_margin_confidence(answer.value().probabilities)
                                                                : variance_confidence(answer.value().probabilities);
  return answer;
}

namespace {

class VelaPlan : public runtime::Plan {
 public:
  std::vector<VelaSequence> sequences;  // one, or the windows over a cut one-part state
  std::vector<bool> noul;               // per question
};

class VelaEngine : public runtime::Engine {
 public:
  VelaEngine(const std::filesystem::path& model_dir, VelaSettings settings)
      : settings_(std::move(settings)),
        package_(read_vela_package(model_dir / "config.json")),
        calibration_(read_vela_calibration(model_dir / "calibration.json")),
        tokenizer_(tokenizer_without_markers(model_dir / "tokenizer.json", package_.marker_names)),
        weights_(checkpoint::Checkpoint::open(model_dir)),
        encoder_(
            package_.encoder->load(weights_, std::string(encoder_prefix), model::arithmetic_of(settings_.precision))),
        head_(weights_, package_.encoder->info().hidden_size, package_.projection, package_.readout,
              encoder_prefix) {}

  runtime::ModelInfo info() const override {
    return served_model_info(settings_.description, api::max_choice_options, package_.max_length, "top2_margin");
  }

  api::Result<std::unique_ptr<runtime::Plan>> prepare(const api::DecisionRequest& request,
                                                      const runtime::PrepareLimits& limits) const override {
    auto sequences = vela_pack_request(tokenizer_, package_, settings_.abstain_types, request);
    if (!sequences) return sequences.error();
    auto plan = std::make_unique<VelaPlan>();
    plan->sequences = std::move(sequences.value());
    for (const VelaSequence& sequence : plan->sequences)
      plan->input_tokens += static_cast<int64_t>(sequence.ids.size());
    for (const api::Question& question : request.questions)
      plan->noul.push_back(question.type == api::QuestionType::noul);
    if (auto error = check_request_budget(plan->input_tokens, limits.token_budget)) return *error;
    return std::unique_ptr<runtime::Plan>(std::move(plan));
  }

  api::Result<runtime::RawOutputs> run(runtime::Plan& base_plan) override {
    const auto& plan = static_cast<const VelaPlan&>(base_plan);
    // Each window's option logits, then their mean, in fp32 as the package averages them.
    std::vector<std::vector<float>> logits;
    for (const VelaSequence& sequence : plan.sequences) {
      const std::span<const int32_t> sequences[] = {sequence.ids};
      const std::vector<std::vector<float>> window =
          head_.option_logits(encoder_->forward(sequences), sequence.questions);
      if (logits.empty()) {
        logits = window;
        continue;
      }
      for (std::size_t q = 0; q < logits.size(); ++q) {
        for (std::size_t i = 0; i < logits[q].size(); ++i) logits[q][i] += window[q][i];
      }
    }
    const auto windows = static_cast<float>(plan.sequences.size());
    runtime::RawOutputs raw;
    for (std::size_t q = 0; q < logits.size(); ++q) {
      for (float& logit : logits[q]) logit /= windows;
      // The real options only: an [ABS] logit never enters the distribution.
      std::vector<double> scores(logits[q].begin(),
                                 logits[q].begin() + static_cast<std::ptrdiff_t>(plan.sequences[0].real_options[q]));
      // The runtime's label order for noul is (true, false); the markers are (false, true).
      if (plan.noul[q]) std::reverse(scores.begin(), scores.end());
      raw.label_scores.push_back(std::move(scores));
    }
    return raw;
  }

  api::Result<std::vector<api::Answer>> finish(const api::DecisionRequest& request, const runtime::Plan& base_plan,
                                               runtime::RawOutputs outputs) const override {
    (void)base_plan;
    std::vector<api::Answer> answers;
    for (std::size_t q = 0; q < request.questions.size(); ++q) {
      std::vector<double>& scores = outputs.label_scores[q];
      const api::QuestionType type = request.questions[q].type;
      if (type == api::QuestionType::noul) std::reverse(scores.begin(), scores.end());
      // The head's logits were float32; the round trip through double is exact.
      const std::vector<float> logits(scores.begin(), scores.end());
      auto answer = vela_answer(type, logits, calibration_);
      if (!answer) return answer.error();
      answers.push_back(std::move(answer.value()));
    }
    return answers;
  }

 private:
  VelaSettings settings_;
  VelaPackage package_;
  VelaCalibration calibration_;
  text::Tokenizer tokenizer_;
  checkpoint::Checkpoint weights_;
  std::unique_ptr<encoder::Encoder> encoder_;
  heads::VelaMarkerHead head_;
};

}  // namespace

std::unique_ptr<runtime::Engine> make_vela_engine(const std::filesystem::path& model_dir,
                                                  const VelaSettings& settings) {
  return std::make_unique<VelaEngine>(model_dir, settings);
}

}  // namespace s1::decide
