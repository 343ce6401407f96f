// The ModernBERT family against Transformers' ModernBertModel on tiny random checkpoints
// (tools/reference/make_modernbert_fixtures.py): unequal-length batches run unpadded here and
// padded with an attention mask there, with sequences longer than the local window.
//
// Tolerances, declared before comparing:
//  fp32 hidden states: |Δ| ≤ 1e-5 + 1e-4 · |reference| per element (docs/models.md, §5.4 default);
//  bf16 (weights and activations rounded to bf16 in every product, ~3e-3 relative per product,
//  compounded over 4 layers; local layers' attention stays fp32): max |Δ| ≤ 5e-2 · max |reference|.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/cpu/linear.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "model/modernbert/config.h"
#include "model/modernbert/modernbert_model.h"

namespace s1::modernbert {
namespace {

constexpr double absolute_tolerance = 1e-5;
constexpr double relative_tolerance = 1e-4;
constexpr double bf16_tolerance = 5e-2;

const std::vector<std::string> cases{"no_bias", "bias_every_2", "v4_config"};

std::filesystem::path fixture_root() {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : S1SERVE_SOURCE_DIR_FALLBACK) / "tests" / "parity" /
         "modernbert";
}

struct Sequence {
  std::vector<int32_t> ids;
  std::vector<float> hidden;
};

std::vector<std::vector<Sequence>> read_batches(const std::string& name) {
  std::ifstream in(fixture_root() / name / "batches.json");
  const auto batches = nlohmann::json::parse(in);
  const auto file = checkpoint::Checkpoint::open(fixture_root() / name / "reference.safetensors");
  std::vector<std::vector<Sequence>> result;
  for (std::size_t k = 0; k < batches.size(); ++k) {
    std::vector<Sequence> batch;
    for (std::size_t i = 0; i < batches[k].size(); ++i) {
      const std::string prefix = "b" + std::to_string(k) + "_s" + std::to_string(i) + "_";
      const checkpoint::TensorView& ids = file.get(prefix + "ids");
      Sequence sequence;
      sequence.ids.resize(static_cast<std::size_t>(ids.element_count()));
      std::memcpy(sequence.ids.data(), ids.bytes.data(), sequence.ids.size() * sizeof(int32_t));
      EXPECT_EQ(sequence.ids.size(), batches[k][i].get<std::size_t>());
      sequence.hidden = checkpoint::to_float(file.get(prefix + "hidden"));
      batch.push_back(std::move(sequence));
    }
    result.push_back(std::move(batch));
  }
  return result;
}

ModernBertEncoder load(const std::string& name, backend::cpu::Precision precision) {
  const auto dir = fixture_root() / name;
  const auto weights = checkpoint::Checkpoint::open(dir);
  return ModernBertEncoder(read_modernbert_config(dir / "config.json"), weights, precision, "");
}

void check_case(const std::string& name, backend::cpu::Precision precision) {
  ModernBertEncoder encoder = load(name, precision);
  const auto width = static_cast<std::size_t>(encoder.config().hidden_size);
  for (const auto& batch : read_batches(name)) {
    std::vector<std::span<const int32_t>> ids;
    for (const Sequence& sequence : batch) ids.emplace_back(sequence.ids);
    const std::span<const float> hidden = encoder.forward(ids);
    ASSERT_EQ(encoder.layout().size(), batch.size());
    for (std::size_t s = 0; s < batch.size(); ++s) {
      const backend::cpu::PackedSequence rows = encoder.layout()[s];
      ASSERT_EQ(rows.length, batch[s].ids.size());
      const std::span<const float> got = hidden.subspan(rows.offset * width, rows.length * width);
      const std::vector<float>& expected = batch[s].hidden;
      ASSERT_EQ(got.size(), expected.size());
      double scale = 0.0;
      for (const float value : expected) scale = std::max(scale, static_cast<double>(std::fabs(value)));
      for (std::size_t k = 0; k < got.size(); ++k) {
        const double error = std::fabs(static_cast<double>(got[k]) - expected[k]);
        const double limit = precision == backend::cpu::Precision::fp32
                                 ? absolute_tolerance + relative_tolerance * std::fabs(expected[k])
                                 : bf16_tolerance * scale;
        ASSERT_LE(error, limit) << name << " sequence " << s << " of " << batch.size() << " (length "
                                << rows.length << ") row " << k / width << " column " << k % width;
      }
    }
  }
}

TEST(ModernBertParity, Fp32MatchesTransformers) {
  for (const std::string& name : cases) check_case(name, backend::cpu::Precision::fp32);
}

TEST(ModernBertParity, Bf16WithinTolerance) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16)) GTEST_SKIP() << "bf16 needs AVX-512";
  for (const std::string& name : cases) check_case(name, backend::cpu::Precision::bf16);
}

TEST(ModernBertParity, PackingDoesNotChangeASequence) {
  // The same sequence alone and next to others: unpadded packing must not leak across sequences.
  ModernBertEncoder encoder = load("no_bias", backend::cpu::Precision::fp32);
  const auto width = static_cast<std::size_t>(encoder.config().hidden_size);
  const auto batches = read_batches("no_bias");
  const std::vector<int32_t>& long_ids = batches[0][0].ids;
  const std::span<const float> alone_view = encoder.forward(std::vector<std::span<const int32_t>>{long_ids});
  const std::vector<float> alone(alone_view.begin(), alone_view.end());
  const std::vector<std::span<const int32_t>> packed{batches[0][1].ids, long_ids, batches[0][3].ids};
  const std::span<const float> hidden = encoder.forward(packed);
  const backend::cpu::PackedSequence rows = encoder.layout()[1];
  for (std::size_t k = 0; k < rows.length * width; ++k) {
    ASSERT_NEAR(hidden[rows.offset * width + k], alone[k], 1e-5 * std::max(1.0F, std::fabs(alone[k])));
  }
}

std::filesystem::path write_config(const std::string& name, const nlohmann::json& config) {
  const auto path = std::filesystem::temp_directory_path() / ("s1_modernbert_" + name + ".json");
  std::ofstream(path) << config.dump();
  return path;
}

nlohmann::json fixture_config(const std::string& name) {
  std::ifstream in(fixture_root() / name / "config.json");
  return nlohmann::json::parse(in);
}

void expect_load_error_naming(const nlohmann::json& config, const std::string& key) {
  const auto path = write_config(key, config);
  try {
    (void)read_modernbert_config(path);
    ADD_FAILURE() << "config with " << config.dump() << " loaded";
  } catch (const checkpoint::LoadError& error) {
    EXPECT_NE(std::string(error.what()).find(key), std::string::npos) << error.what();
  }
  std::filesystem::remove(path);
}

TEST(ModernBertConfig, ReadsBothSpellings) {
  const ModernBertConfig v5 = read_modernbert_config(fixture_root() / "bias_every_2" / "config.json");
  EXPECT_EQ(v5.global_rope_theta, 80000.0);
  EXPECT_EQ(v5.local_rope_theta, 5000.0);
  EXPECT_TRUE(v5.norm_bias && v5.attention_bias && v5.mlp_bias);
  const std::vector<LayerType> every_2{LayerType::global, LayerType::local, LayerType::global, LayerType::local};
  EXPECT_EQ(v5.layer_types, every_2);
  const ModernBertConfig v4 = read_modernbert_config(fixture_root() / "v4_config" / "config.json");
  EXPECT_EQ(v4.global_rope_theta, 20000.0);
  EXPECT_EQ(v4.local_rope_theta, 3000.0);
  EXPECT_EQ(v4.local_half_window(), 6);
  const std::vector<LayerType> every_3{LayerType::global, LayerType::local, LayerType::local, LayerType::global};
  EXPECT_EQ(v4.layer_types, every_3);
}

TEST(ModernBertConfig, UnsupportedSettingsAreLoadErrorsNamingTheKey) {
  nlohmann::json config = fixture_config("no_bias");
  config["some_new_setting"] = 1;
  expect_load_error_naming(config, "some_new_setting");
  config = fixture_config("no_bias");
  config["hidden_activation"] = "gelu_pytorch_tanh";
  expect_load_error_naming(config, "hidden_activation");
  config = fixture_config("no_bias");
  config["rope_parameters"]["sliding_attention"]["rope_type"] = "linear";
  expect_load_error_naming(config, "rope_type");
  config = fixture_config("no_bias");
  config["layer_types"][1] = "chunked_attention";
  expect_load_error_naming(config, "layer_types");
  config = fixture_config("no_bias");
  config["model_type"] = "bert";
  expect_load_error_naming(config, "model_type");
}

TEST(ModernBertWeights, ABiasTheConfigDoesNotDeclareIsALoadError) {
  // bias_every_2's weights carry biases; a config saying there are none must not load them.
  const auto dir = fixture_root() / "bias_every_2";
  nlohmann::json config = fixture_config("bias_every_2");
  config["mlp_bias"] = false;
  const auto path = write_config("mlp_bias", config);
  const auto weights = checkpoint::Checkpoint::open(dir);
  try {
    ModernBertEncoder encoder(read_modernbert_config(path), weights, backend::cpu::Precision::fp32, "");
    ADD_FAILURE() << "loaded";
  } catch (const checkpoint::LoadError& error) {
    EXPECT_NE(std::string(error.what()).find("mlp_bias"), std::string::npos) << error.what();
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace s1::modernbert
