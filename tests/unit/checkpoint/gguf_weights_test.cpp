#include "model/checkpoint/gguf_weights.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/gguf_names.h"
#include "model/checkpoint/load_error.h"
#include "source_dir.h"

namespace s1::checkpoint {
namespace {

using ::testing::HasSubstr;

std::filesystem::path fixtures() { return testing::source_dir() / "tests/fixtures"; }

// name_map.json: for each architecture, our fixtures' tensor names and the GGUF name the gguf
// package's TensorNameMap gives each (tools/reference/make_gguf_fixtures.py).
TEST(GgufNames, MapBackEveryNameTheConverterWrites) {
  std::ifstream file(fixtures() / "gguf/name_map.json");
  const auto table = nlohmann::json::parse(file);
  for (const auto architecture : gguf_architectures()) {
    SCOPED_TRACE(std::string(architecture));
    ASSERT_TRUE(table.contains(std::string(architecture)));
    for (const auto& [ours, gguf_name] : table[std::string(architecture)].items()) {
      const auto mapping = map_gguf_tensor(architecture, gguf_name.get<std::string>());
      ASSERT_TRUE(mapping.has_value()) << gguf_name;
      EXPECT_EQ(mapping->name, ours) << gguf_name;
    }
  }
}

// The writer's direction (s1serve quantize): every name stored renamed only maps to the converter's
// name, and a name whose values the converter changes has none.
TEST(GgufNames, NameEveryTensorTheConverterOnlyRenames) {
  std::ifstream file(fixtures() / "gguf/name_map.json");
  const auto table = nlohmann::json::parse(file);
  for (const auto architecture : gguf_architectures()) {
    SCOPED_TRACE(std::string(architecture));
    for (const auto& [ours, gguf_name] : table[std::string(architecture)].items()) {
      const auto mapping = map_gguf_tensor(architecture, gguf_name.get<std::string>());
      const auto name = gguf_tensor_name(architecture, ours);
      // A squeezed conv kernel keeps its values: named too (the writer squeezes its shape).
      if ((mapping->transforms & ~uint32_t{kGgufUnsqueezeConv}) == kGgufAsIs) {
        EXPECT_EQ(name, gguf_name.get<std::string>()) << ours;
      } else {
        EXPECT_FALSE(name.has_value()) << ours;
      }
    }
  }
  EXPECT_FALSE(gguf_tensor_name("qwen3", "model.layers.x.self_attn.q_proj.weight").has_value());
  EXPECT_FALSE(gguf_tensor_name("qwen3", "model.layers.0.self_attn.q_proj.scale").has_value());
}

TEST(GgufNames, RefusesNamesOutsideTheTable) {
  EXPECT_FALSE(map_gguf_tensor("qwen3", "blk.0.ssm_a").has_value());
  EXPECT_FALSE(map_gguf_tensor("qwen3", "blk.attn_q.weight").has_value());
  EXPECT_FALSE(map_gguf_tensor("qwen3", "blk.01.attn_q.weight").has_value());
  EXPECT_FALSE(map_gguf_tensor("qwen3", "token_embd.scale").has_value());
  EXPECT_FALSE(map_gguf_tensor("llama", "token_embd.weight").has_value());
  EXPECT_EQ(map_gguf_tensor("qwen3", "blk.12.attn_q.weight")->name, "model.layers.12.self_attn.q_proj.weight");
}

std::vector<float> values_of(const TensorView& tensor) { return to_float(tensor); }

// tiny-qwen35.gguf holds tiny-qwen3_5-chat's weights as convert_hf_to_gguf.py changes them for
// Qwen3.5; loading undoes every change, so each tensor comes back under its name and shape with its
// values (up to the f32 rounding of w + 1 - 1 and log(exp)).
TEST(GgufWeights, UndoTheQwen35ConverterChanges) {
  const auto gguf = Checkpoint::open(fixtures() / "gguf/tiny-qwen35.gguf");
  const auto safetensors = Checkpoint::open(fixtures() / "tiny-qwen3_5-chat");
  ASSERT_NE(gguf.gguf(), nullptr);
  ASSERT_EQ(gguf.names(), safetensors.names());
  for (const TensorView& expected : safetensors.tensors()) {
    SCOPED_TRACE(expected.name);
    const TensorView& got = gguf.get(expected.name, expected.shape);
    const auto got_values = values_of(got);
    const auto expected_values = values_of(expected);
    ASSERT_EQ(got_values.size(), expected_values.size());
    for (std::size_t i = 0; i < got_values.size(); ++i) {
      ASSERT_NEAR(got_values[i], expected_values[i], 1e-6 + 1e-6 * std::fabs(expected_values[i])) << "value " << i;
    }
  }
}

TEST(GgufWeights, NameTheTensorThatDoesNotMap) {
  const auto mapped = MappedFile::open(fixtures() / "gguf/types.gguf");
  const auto file = parse_gguf(mapped.bytes(), "types.gguf");
  try {
    map_gguf_weights(file);
    ADD_FAILURE() << "expected a LoadError";
  } catch (const LoadError& error) {
    EXPECT_THAT(error.what(), HasSubstr("key 'general.architecture' is 's1test'; s1serve maps qwen3, qwen35"));
  }
}

}  // namespace
}  // namespace s1::checkpoint
