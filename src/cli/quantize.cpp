// `s1serve quantize`: a safetensors checkpoint of a family s1serve runs, as the GGUF file llama.cpp's
// convert_hf_to_gguf.py would write for it (the same metadata keys, tensor names and tokenizer
// arrays), with its matrices quantised as llama.cpp's reference quantisers do. Supported: the dense
// Qwen3 family and LFM2. With --decision-type, the decision keys llama.cpp's server reads
// (`<arch>.decision.type`, `<arch>.decision.temperature.*`, `tokenizer.chat_template.systemone`) are
// written into the file, which then serves as that decision type; otherwise a decision-model side
// file (s1serve.json, label-token) is written beside the GGUF as FILE.s1serve.json, where the GGUF
// loader reads it (decide/gguf_model.h).

#include "cli/quantize.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/quant_blocks.h"
#include "decide/gguf_decision.h"
#include "decide/gguf_model.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/gguf_config.h"
#include "model/checkpoint/gguf_names.h"
#include "model/checkpoint/gguf_writer.h"
#include "model/checkpoint/load_error.h"
#include "model/lfm2/config.h"
#include "model/qwen3/config.h"
#include "text/gguf_vocab.h"

namespace s1::cli {
namespace {

using checkpoint::GgmlType;
using checkpoint::GgufValue;
using checkpoint::LoadError;
using Metadata = std::vector<std::pair<std::string, GgufValue>>;

// llama.cpp's llama_ftype for general.file_type: MOSTLY_Q8_0, and MOSTLY_Q4_K_S for q4_k (every
// matrix Q4_K where its rows allow; llama.cpp's _S mix also uses Q5_K for a few).
constexpr uint32_t file_type_q8_0 = 7, file_type_q4_k_s = 14;
// gguf-py's TokenType.
constexpr int32_t token_normal = 1, token_control = 3, token_user_defined = 4, token_unused = 5;

nlohmann::json read_json(const std::filesystem::path& file) {
  std::ifstream in(file);
  if (!in) throw LoadError(file.string() + ": missing or unreadable");
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& error) {
    throw LoadError(file.string() + ": not JSON (" + error.what() + ")");
  }
}

// The tokenizer as convert_hf_to_gguf.py's get_vocab_base() writes a BPE one: every id below the
// model's vocab_size (ids past the tokenizer are "[PAD<i>]" fillers), added tokens CONTROL when
// special, USER_DEFINED otherwise; merges as "a b"; eos and pad ids by their tokens.
// The pre-tokeniser name llama.cpp knows for the tokenizer.json's Split pattern.
std::string pre_tokenizer_name(const nlohmann::json& tokenizer, bool lfm2_family, const std::string& source) {
  const nlohmann::json& pre = tokenizer.value("pre_tokenizer", nlohmann::json::object());
  const nlohmann::json split = pre.value("type", "") == "Sequence" && pre.contains("pretokenizers") &&
                                       !pre["pretokenizers"].empty()
                                   ? pre["pretokenizers"][0]
                                   : pre;
  std::string pattern;
  if (split.value("type", "") == "Split" && split.contains("pattern") && split["pattern"].contains("Regex"))
    pattern = split["pattern"]["Regex"].get<std::string>();
  if (const auto name = text::gguf_pre_tokenizer_of_pattern(pattern, lfm2_family)) return *name;
  throw LoadError(source + ": pre_tokenizer's split pattern is none that s1serve writes (qwen2" +
                  std::string(lfm2_family ? ", lfm2" : "") + ")");
}

void add_tokenizer(const std::filesystem::path& dir, int64_t vocab_size, bool lfm2_family, Metadata& metadata) {
  const std::filesystem::path tokenizer_file = dir / "tokenizer.json";
  const nlohmann::json tokenizer = read_json(tokenizer_file);
  const nlohmann::json config = read_json(dir / "tokenizer_config.json");
  const auto fail = [&](const std::string& what) { throw LoadError(tokenizer_file.string() + ": " + what); };
  if (!tokenizer.contains("model") || tokenizer["model"].value("type", "") != "BPE")
    fail("model.type is not BPE (only byte-level BPE tokenizers, as Qwen3's, are written)");
  std::map<int64_t, std::string> normal;
  for (const auto& [token, id] : tokenizer["model"]["vocab"].items()) normal[id.get<int64_t>()] = token;
  std::map<int64_t, std::pair<std::string, bool>> added;
  for (const auto& entry : tokenizer.value("added_tokens", nlohmann::json::array()))
    added[entry.at("id").get<int64_t>()] = {entry.at("content").get<std::string>(), entry.value("special", false)};
  std::vector<std::string> tokens;
  std::vector<int32_t> types;
  std::map<std::string, int64_t> ids;
  for (int64_t id = 0; id < vocab_size; ++id) {
    if (const auto found = added.find(id); found != added.end()) {
      tokens.push_back(found->second.first);
      types.push_back(found->second.second ? token_control : token_user_defined);
    } else if (const auto word = normal.find(id); word != normal.end()) {
      tokens.push_back(word->second);
      types.push_back(token_normal);
    } else {
      tokens.push_back("[PAD" + std::to_string(id) + "]");
      types.push_back(token_unused);
    }
    ids.emplace(tokens.back(), id);
  }
  if (!normal.empty() && normal.rbegin()->first >= vocab_size)
    fail("has token ids at or above the model's vocab_size " + std::to_string(vocab_size));
  std::vector<std::string> merges;
  for (const auto& merge : tokenizer["model"].value("merges", nlohmann::json::array()))
    merges.push_back(merge.is_string() ? merge.get<std::string>()
                                       : merge.at(0).get<std::string>() + " " + merge.at(1).get<std::string>());
  metadata.emplace_back("tokenizer.ggml.model", checkpoint::gguf_string("gpt2"));
  metadata.emplace_back("tokenizer.ggml.pre",
                        checkpoint::gguf_string(pre_tokenizer_name(tokenizer, lfm2_family, tokenizer_file.string())));
  metadata.emplace_back("tokenizer.ggml.tokens", checkpoint::gguf_strings(std::move(tokens)));
  metadata.emplace_back("tokenizer.ggml.token_type", checkpoint::gguf_int32s(types));
  metadata.emplace_back("tokenizer.ggml.merges", checkpoint::gguf_strings(std::move(merges)));
  const auto special_id = [&](const char* field, const char* key) {
    if (!config.contains(field) || !config[field].is_string()) return;
    const auto found = ids.find(config[field].get<std::string>());
    if (found == ids.end()) fail(std::string("tokenizer_config.json's ") + field + " is not a token");
    metadata.emplace_back(key, checkpoint::gguf_uint32(static_cast<uint32_t>(found->second)));
  };
  special_id("bos_token", "tokenizer.ggml.bos_token_id");
  special_id("eos_token", "tokenizer.ggml.eos_token_id");
  special_id("pad_token", "tokenizer.ggml.padding_token_id");
  metadata.emplace_back("tokenizer.ggml.add_bos_token", checkpoint::gguf_bool(config.value("add_bos_token", false)));
  std::string chat_template;
  if (config.contains("chat_template") && config["chat_template"].is_string()) {
    chat_template = config["chat_template"].get<std::string>();
  } else if (std::ifstream jinja(dir / "chat_template.jinja"); jinja) {
    chat_template.assign(std::istreambuf_iterator<char>(jinja), {});
  } else {
    throw LoadError((dir / "tokenizer_config.json").string() + ": no chat_template (nor chat_template.jinja)");
  }
  metadata.emplace_back("tokenizer.chat_template", checkpoint::gguf_string(std::move(chat_template)));
}

// What llama.cpp's quantizer writes for a matrix whose rows are not whole blocks of the type asked
// for (llama_tensor_get_type's convert_incompatible_tensor): Q4_K falls back to Q5_0, and to F16 when
// the rows are not whole Q5_0 blocks either. Q8_0 is not a k-quant there, and ggml cannot write it
// for such rows: those stay F32, as vectors do (llama.cpp quantises matrices only).
GgmlType stored_type(const checkpoint::TensorView& view, backend::DType type) {
  const std::size_t row = view.shape.empty() ? 0 : static_cast<std::size_t>(view.shape.back());
  if (view.shape.size() != 2) return GgmlType::kF32;
  if (type == backend::DType::q8_0) return row % backend::quant::q8_0_values == 0 ? GgmlType::kQ8_0 : GgmlType::kF32;
  if (row % backend::quant::q4_k_values == 0) return GgmlType::kQ4_K;
  return row % backend::quant::q5_0_values == 0 ? GgmlType::kQ5_0 : GgmlType::kF16;
}

checkpoint::GgufTensorData convert_tensor(const checkpoint::Checkpoint& weights, const checkpoint::TensorView& view,
                                          std::string name, backend::DType type) {
  // llama.cpp squeezes [C, 1, K] conv kernels to [C, K], and never quantises them (llama-quant.cpp).
  const bool conv_kernel = name.find("shortconv.conv.weight") != std::string::npos;
  std::vector<int64_t> shape = view.shape;
  if (conv_kernel) {
    if (shape.size() != 3 || shape[1] != 1)
      throw LoadError(weights.source().string() + ": conv kernel '" + view.name + "' is not [C, 1, K]");
    shape = {shape[0], shape[2]};
  }
  const GgmlType stored = conv_kernel ? GgmlType::kF32 : stored_type(view, type);
  const std::vector<float> values = weights.to_float_released(view);
  std::vector<std::byte> bytes;
  switch (stored) {
    case GgmlType::kQ8_0:
    case GgmlType::kQ4_K: {
      const backend::DType dtype = stored == GgmlType::kQ8_0 ? backend::DType::q8_0 : backend::DType::q4_k;
      bytes.resize(backend::storage_bytes(dtype, values.size()));
      backend::quant::quantize_row(dtype, values.data(), values.size(), bytes.data());
      break;
    }
    case GgmlType::kQ5_0: {
      const std::size_t blocks = values.size() / backend::quant::q5_0_values;
      bytes.resize(blocks * backend::quant::q5_0_bytes);
      for (std::size_t b = 0; b < blocks; ++b) {
        backend::quant::quantize_q5_0_block(values.data() + b * backend::quant::q5_0_values,
                                            reinterpret_cast<uint8_t*>(bytes.data()) + b * backend::quant::q5_0_bytes);
      }
      break;
    }
    case GgmlType::kF16: {
      bytes.resize(values.size() * sizeof(uint16_t));
      for (std::size_t i = 0; i < values.size(); ++i) {
        const uint16_t half = backend::float_to_f16(values[i]);
        std::memcpy(bytes.data() + i * sizeof(half), &half, sizeof(half));
      }
      break;
    }
    default:
      bytes.resize(values.size() * sizeof(float));
      std::memcpy(bytes.data(), values.data(), bytes.size());
      break;
  }
  if (type == backend::DType::q4_k && view.shape.size() == 2 && stored != GgmlType::kQ4_K) {
    std::cout << name << ": rows of " << view.shape.back() << " values are not whole Q4_K blocks of 256; written as "
              << checkpoint::ggml_type_info(stored).name << ", as llama.cpp's quantizer does\n";
  }
  return {std::move(name), stored, std::move(shape), std::move(bytes)};
}

void write_decision_file(const std::filesystem::path& dir, const std::filesystem::path& out) {
  const std::filesystem::path source = dir / "s1serve.json";
  if (!std::filesystem::exists(source)) return;
  const nlohmann::json settings = read_json(source);
  const std::string contract = settings.value("contract", "");
  // The GGUF loader serves label-token only; the other contracts read files a GGUF does not carry.
  if (contract != "label-token")
    throw LoadError(source.string() + ": contract '" + contract +
                    "' has no GGUF equivalent (a GGUF is served with label-token)");
  std::filesystem::copy_file(source, decide::gguf_decision_file(out),
                             std::filesystem::copy_options::overwrite_existing);
}

struct DecisionKeys {
  std::string type;  // empty: none written
  std::filesystem::path template_file;
  std::vector<std::string> temperatures;  // "<question type>[.<bucket>]=<value>"
};

// The keys llama.cpp's server-decision reads, checked as the GGUF loader will read them.
void add_decision_keys(const DecisionKeys& decision, const std::string& architecture, Metadata& metadata) {
  if (!decide::gguf_decision_type_named(decision.type))
    throw std::invalid_argument("--decision-type '" + decision.type +
                                "' is not a decision type s1serve serves (openjev, lev, nimble, pplx-decider, lfm2-d1)");
  metadata.emplace_back(architecture + ".decision.type", checkpoint::gguf_string(decision.type));
  for (const std::string& entry : decision.temperatures) {
    const auto equals = entry.find('=');
    const std::string key = entry.substr(0, equals);
    const std::string question_type = key.substr(0, key.find('.'));
    double value = 0.0;
    try {
      std::size_t used = 0;
      value = equals == std::string::npos ? 0.0 : std::stod(entry.substr(equals + 1), &used);
      if (equals + 1 + used != entry.size()) value = 0.0;
    } catch (const std::exception&) {
      value = 0.0;
    }
    if ((question_type != "choice" && question_type != "noul" && question_type != "score") || key.ends_with(".") ||
        !(value > 0.0) || !std::isfinite(value)) {
      throw std::invalid_argument("--decision-temperature '" + entry +
                                  "' is not <choice|noul|score>[.<bucket>]=<a number above 0>");
    }
    metadata.emplace_back(architecture + ".decision.temperature." + key, checkpoint::gguf_float32(value));
  }
  std::ifstream in(decision.template_file, std::ios::binary);
  if (!in) throw LoadError(decision.template_file.string() + ": missing or unreadable (--decision-template)");
  std::string prompt_template(std::istreambuf_iterator<char>(in), {});
  metadata.emplace_back("tokenizer.chat_template.systemone", checkpoint::gguf_string(std::move(prompt_template)));
}

void quantize(const std::filesystem::path& dir, backend::DType type, const std::filesystem::path& out,
              const DecisionKeys& decision) {
  const nlohmann::json raw_config = read_json(dir / "config.json");
  const std::string model_type = raw_config.value("model_type", "");
  if (model_type != "qwen3" && model_type != "lfm2")
    throw LoadError((dir / "config.json").string() + ": model_type '" + model_type +
                    "'; quantize writes the qwen3 and lfm2 families only so far");
  const std::string architecture = model_type;
  Metadata metadata;
  metadata.emplace_back("general.architecture", checkpoint::gguf_string(architecture));
  const uint32_t file_type = type == backend::DType::q8_0 ? file_type_q8_0 : file_type_q4_k_s;
  int64_t vocab_size = 0;
  bool tie_word_embeddings = true;
  if (model_type == "qwen3") {
    const qwen3::Qwen3Config config = qwen3::read_qwen3_config(dir / "config.json");
    vocab_size = config.vocab_size;
    tie_word_embeddings = config.tie_word_embeddings;
    const std::map<std::string_view, double> values{
        {"max_position_embeddings", static_cast<double>(config.max_position_embeddings)},
        {"hidden_size", static_cast<double>(config.hidden_size)},
        {"intermediate_size", static_cast<double>(config.intermediate_size)},
        {"num_hidden_layers", static_cast<double>(config.num_hidden_layers)},
        {"num_attention_heads", static_cast<double>(config.num_attention_heads)},
        {"num_key_value_heads", static_cast<double>(config.num_key_value_heads)},
        {"head_dim", static_cast<double>(config.head_dim)},
        {"rms_norm_eps", config.rms_norm_eps},
        {"rope_theta", config.rope_theta}};
    // In the converter's order (a file byte for byte its own, tests/e2e/quantize_e2e.py).
    for (const checkpoint::GgufConfigKey& key : checkpoint::gguf_text_model_keys()) {
      const double value = values.at(key.config);
      metadata.emplace_back(
          architecture + "." + std::string(key.gguf),
          key.is_float ? checkpoint::gguf_float32(value) : checkpoint::gguf_uint32(static_cast<uint32_t>(value)));
      if (key.gguf == "attention.key_length")
        metadata.emplace_back(architecture + ".attention.value_length",
                              checkpoint::gguf_uint32(static_cast<uint32_t>(config.head_dim)));
    }
    metadata.emplace_back("general.file_type", checkpoint::gguf_uint32(file_type));
  } else {
    // LFM2Model.set_gguf_parameters's keys, in its order (tests/fixtures/gguf/converted/tiny-lfm2-f32.gguf):
    // one head_count_kv per layer, 0 for the short-conv layers; feed_forward_length the real width.
    const lfm2::Lfm2Config config = lfm2::read_lfm2_config(dir / "config.json");
    vocab_size = config.vocab_size;
    tie_word_embeddings = config.tie_word_embeddings;
    if (config.conv_bias) throw LoadError((dir / "config.json").string() + ": conv_bias is true; llama.cpp's lfm2 has none");
    const auto uint = [](int64_t value) { return checkpoint::gguf_uint32(static_cast<uint32_t>(value)); };
    std::vector<int32_t> kv_heads;
    for (const bool attention : config.full_attention)
      kv_heads.push_back(attention ? static_cast<int32_t>(config.num_key_value_heads) : 0);
    metadata.emplace_back("lfm2.block_count", uint(config.num_hidden_layers));
    metadata.emplace_back("lfm2.context_length", uint(config.max_position_embeddings));
    metadata.emplace_back("lfm2.embedding_length", uint(config.hidden_size));
    metadata.emplace_back("lfm2.feed_forward_length", uint(config.intermediate_size));
    metadata.emplace_back("lfm2.attention.head_count", uint(config.num_attention_heads));
    metadata.emplace_back("lfm2.attention.head_count_kv", checkpoint::gguf_int32s(kv_heads));
    metadata.emplace_back("lfm2.rope.freq_base", checkpoint::gguf_float32(config.rope_theta));
    metadata.emplace_back("lfm2.attention.layer_norm_rms_epsilon", checkpoint::gguf_float32(config.norm_eps));
    metadata.emplace_back("general.file_type", checkpoint::gguf_uint32(file_type));
    metadata.emplace_back("lfm2.vocab_size", uint(config.vocab_size));
    metadata.emplace_back("lfm2.shortconv.l_cache", uint(config.conv_kernel));
  }
  add_tokenizer(dir, vocab_size, model_type == "lfm2", metadata);
  if (!decision.type.empty()) add_decision_keys(decision, architecture, metadata);

  const checkpoint::Checkpoint weights = checkpoint::Checkpoint::open(dir);
  std::vector<checkpoint::GgufTensorData> tensors;
  for (const checkpoint::TensorView& view : weights.tensors()) {
    // A bare Qwen3Model's names lack the "model." prefix.
    const std::string name =
        view.name.starts_with("model.") || view.name == "lm_head.weight" ? view.name : "model." + view.name;
    // Transformers writes lm_head when tied too; llama.cpp reads the embedding table then.
    if (tie_word_embeddings && name == "lm_head.weight") continue;
    const auto gguf_name = checkpoint::gguf_tensor_name(architecture, name);
    if (!gguf_name)
      throw LoadError(weights.source().string() + ": tensor '" + view.name + "' has no " + architecture + " GGUF name");
    tensors.push_back(convert_tensor(weights, view, *gguf_name, type));
  }
  checkpoint::write_gguf(out, metadata, tensors);
  // A file with decision keys says how it decides; a label-token side file would contradict it.
  if (decision.type.empty()) write_decision_file(dir, out);
}

}  // namespace

void add_quantize_command(CLI::App& app) {
  struct Flags {
    std::string model, type, out;
    DecisionKeys decision;
  };
  auto flags = std::make_shared<Flags>();
  CLI::App* command = app.add_subcommand("quantize", "Write a GGUF file of quantised weights from a checkpoint");
  command->add_option("--model", flags->model, "checkpoint directory (safetensors, config.json, tokenizer)")
      ->required();
  command->add_option("--type", flags->type, "q8_0 or q4_k")->required()->check(CLI::IsMember({"q8_0", "q4_k"}));
  command->add_option("--out", flags->out, "the GGUF file to write")->required();
  auto* decision_type = command->add_option(
      "--decision-type", flags->decision.type,
      "write <arch>.decision.type (openjev, lev, nimble, pplx-decider, lfm2-d1): the file serves as that type");
  auto* decision_template =
      command->add_option("--decision-template", flags->decision.template_file,
                          "the Jinja prompt written as tokenizer.chat_template.systemone (with --decision-type)");
  auto* decision_temperature =
      command->add_option("--decision-temperature", flags->decision.temperatures,
                          "<question type>[.<bucket>]=T, written as <arch>.decision.temperature.*; repeatable");
  decision_type->needs(decision_template);
  decision_template->needs(decision_type);
  decision_temperature->needs(decision_type);
  command->callback([flags] {
    try {
      quantize(flags->model, flags->type == "q8_0" ? backend::DType::q8_0 : backend::DType::q4_k, flags->out,
               flags->decision);
    } catch (const std::exception& error) {
      std::cerr << "s1serve quantize: " << error.what() << "\n";
      std::exit(2);
    }
    std::cout << flags->out << "\n";
  });
}

}  // namespace s1::cli
