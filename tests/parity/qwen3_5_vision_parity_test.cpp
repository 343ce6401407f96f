// Qwen3.5 vision tower vs Transformers' Qwen3_5VisionModel on tiny random checkpoints
// (tools/reference/make_qwen3_5_vision_fixtures.py → tests/parity/qwen3_5_vision/): the merger's
// features for 1–4 images of different grids in one packed batch, on every backend; each image's
// features again when it runs alone (attention must not cross images); strict config errors.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/config_reader.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/lora_adapter.h"
#include "model/qwen3_5_vision/config.h"
#include "model/qwen3_5_vision/image_tokens.h"
#include "model/qwen3_5_vision/vision_tower.h"

namespace s1::qwen3_5_vision {
namespace {

// fp32 engine vs fp32 Transformers: |Δ| ≤ 1e-4 × the largest |reference feature| of the case, fixed
// before comparing.
constexpr double feature_tolerance = 1e-4;
// The same image alone vs inside the packed batch (both ours): only summation order may differ.
constexpr double alone_tolerance = 1e-5;
// bf16 matmuls (operands rounded to bf16, fp32 sums) vs the fp32 reference: |Δ| ≤ 1e-2 × scale.
// Measured 2026-12 (AMD EPYC, AVX512-BF16): 0.075–0.080 % of the scale on these random towers; the
// gate catches a wrong layout (errors of the scale's order) and leaves room for bf16 rounding.
constexpr double bf16_tolerance = 1e-2;

std::filesystem::path case_dir(const std::string& name) {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : S1SERVE_SOURCE_DIR_FALLBACK) / "tests" / "parity" /
         "qwen3_5_vision" / name;
}

struct Reference {
  std::vector<float> pixel_values;
  std::size_t patch_values = 0;
  std::vector<Grid> grids;
  std::vector<float> features;
  std::size_t out_hidden = 0;
};

Reference read_reference(const std::string& name) {
  const checkpoint::Checkpoint file = checkpoint::Checkpoint::open(case_dir(name) / "reference.safetensors");
  Reference r;
  const checkpoint::TensorView& pixels = file.get("pixel_values");
  r.pixel_values = checkpoint::to_float(pixels);
  r.patch_values = static_cast<std::size_t>(pixels.shape[1]);
  const checkpoint::TensorView& grid = file.get("grid_thw");
  const auto* values = reinterpret_cast<const int64_t*>(grid.bytes.data());
  for (int64_t i = 0; i < grid.shape[0]; ++i) r.grids.push_back({values[3 * i], values[3 * i + 1], values[3 * i + 2]});
  const checkpoint::TensorView& features = file.get("features");
  r.features = checkpoint::to_float(features);
  r.out_hidden = static_cast<std::size_t>(features.shape[1]);
  return r;
}

backend::Tensor pixels_of(std::span<const float> values, std::size_t width) {
  return backend::Tensor::of(values).reshape({values.size() / width, width});
}

class VisionParity : public testing::TestWithParam<std::tuple<std::string, std::string>> {};

TEST_P(VisionParity, MatchesTransformers) {
  const auto& [case_name, backend_name] = GetParam();
  const auto entry = std::ranges::find(backend::backends(), backend_name, &backend::BackendEntry::name);
  ASSERT_NE(entry, backend::backends().end());
  if (!entry->available()) GTEST_SKIP() << backend_name << " is not available here";
  const std::unique_ptr<backend::Backend> be = entry->create();
  const VisionTower tower = VisionTower::load(case_dir(case_name), *be);
  const Reference r = read_reference(case_name);

  const backend::Tensor features = tower.forward(pixels_of(r.pixel_values, r.patch_values), r.grids);
  ASSERT_EQ(features.rows() * features.row_size(), r.features.size());
  ASSERT_EQ(features.row_size(), r.out_hidden);
  const auto ours = features.read_values<float>();
  double scale = 0.0, worst = 0.0;
  for (const float v : r.features) scale = std::max(scale, std::fabs(static_cast<double>(v)));
  for (std::size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::fabs(double{ours[i]} - r.features[i]));
  EXPECT_LE(worst, feature_tolerance * scale) << "max |Δ| " << worst << " at scale " << scale;

  // Each image alone gives its rows of the batch.
  const int64_t merge = tower.config().spatial_merge_size;
  std::size_t patch_offset = 0, row_offset = 0;
  for (const Grid& grid : r.grids) {
    const auto patches = static_cast<std::size_t>(grid.t * grid.h * grid.w);
    const Grid one[] = {grid};
    const backend::Tensor alone = tower.forward(
        pixels_of(std::span(r.pixel_values).subspan(patch_offset * r.patch_values, patches * r.patch_values),
                  r.patch_values),
        one);
    const auto alone_values = alone.read_values<float>();
    for (std::size_t i = 0; i < alone_values.size(); ++i) {
      ASSERT_NEAR(alone_values[i], ours[row_offset * r.out_hidden + i], alone_tolerance * scale);
    }
    patch_offset += patches;
    row_offset += patches / static_cast<std::size_t>(merge * merge);
  }
}

std::vector<std::string> backend_names() {
  std::vector<std::string> names;
  for (const backend::BackendEntry& entry : backend::backends()) names.emplace_back(entry.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(TinyCheckpoints, VisionParity,
                         testing::Combine(testing::Values("two_blocks", "exact_gelu", "merge3"),
                                          testing::ValuesIn(backend_names())),
                         [](const auto& test) { return std::get<0>(test.param) + "_" + std::get<1>(test.param); });

TEST(VisionTower, Bf16DriftStaysWithinItsGate) {
  const std::unique_ptr<backend::Backend> be = backend::create_backend("cpu");
  if (!be->supports(backend::Arithmetic::bf16)) GTEST_SKIP() << "no bf16 matmul on this CPU";
  for (const std::string name : {"two_blocks", "exact_gelu", "merge3"}) {
    SCOPED_TRACE(name);
    const VisionTower tower = VisionTower::load(case_dir(name), *be, backend::Arithmetic::bf16);
    const Reference r = read_reference(name);
    const backend::Tensor features = tower.forward(pixels_of(r.pixel_values, r.patch_values), r.grids);
    const auto ours = features.read_values<float>();
    double scale = 0.0, worst = 0.0;
    for (const float v : r.features) scale = std::max(scale, std::fabs(static_cast<double>(v)));
    for (std::size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::fabs(double{ours[i]} - r.features[i]));
    RecordProperty(name + "_bf16_drift", std::to_string(worst / scale));
    EXPECT_LE(worst, bf16_tolerance * scale) << "max |Δ| " << worst << " at scale " << scale;
  }
}

// Cua-S1's multimodal adapter kept unmerged: LoRA on every block's and the merger's MLP linears.
TEST(VisionTower, UnmergedLoraMatchesTheMergedReference) {
  for (const char* backend_name : {"reference", "cpu"}) {
    SCOPED_TRACE(backend_name);
    const std::unique_ptr<backend::Backend> be = backend::create_backend(backend_name);
    const decoder::LoraAdapter adapter = decoder::LoraAdapter::from_directory(case_dir("lora") / "adapter");
    const VisionTower tower = VisionTower::load(case_dir("lora"), *be, backend::Arithmetic::fp32, &adapter);
    adapter.check_all_taken();
    const Reference r = read_reference("lora");
    const backend::Tensor features = tower.forward(pixels_of(r.pixel_values, r.patch_values), r.grids);
    const auto ours = features.read_values<float>();
    double scale = 0.0, worst = 0.0;
    for (const float v : r.features) scale = std::max(scale, std::fabs(static_cast<double>(v)));
    for (std::size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, std::fabs(double{ours[i]} - r.features[i]));
    EXPECT_LE(worst, feature_tolerance * scale) << "max |Δ| " << worst << " at scale " << scale;

    // Without the adapter the same tower gives the reference's unadapted features.
    const VisionTower plain = VisionTower::load(case_dir("lora"), *be);
    // read_values is a view: the tensor must outlive it.
    const backend::Tensor plain_features = plain.forward(pixels_of(r.pixel_values, r.patch_values), r.grids);
    const auto plain_values = plain_features.read_values<float>();
    const checkpoint::Checkpoint file = checkpoint::Checkpoint::open(case_dir("lora") / "reference.safetensors");
    const std::vector<float> expected = checkpoint::to_float(file.get("features_without_adapter"));
    double plain_worst = 0.0;
    for (std::size_t i = 0; i < expected.size(); ++i)
      plain_worst = std::max(plain_worst, std::fabs(double{plain_values[i]} - expected[i]));
    EXPECT_LE(plain_worst, feature_tolerance * scale);
  }
}

TEST(VisionTower, RefusesLoraOnWeightsItDoesNotAdapt) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / "s1_vision_lora_qkv";
  std::filesystem::create_directories(dir);
  {
    std::ofstream(dir / "adapter_config.json") << R"({"peft_type": "LORA", "r": 1, "lora_alpha": 1})";
    // One pair on blocks.0.attn.qkv (hidden 32 → 96), written as a minimal safetensors file.
    const std::string a = "base_model.model.model.visual.blocks.0.attn.qkv.lora_A.weight";
    const std::string b = "base_model.model.model.visual.blocks.0.attn.qkv.lora_B.weight";
    const nlohmann::json header = {{a, {{"dtype", "F32"}, {"shape", {1, 32}}, {"data_offsets", {0, 128}}}},
                                   {b, {{"dtype", "F32"}, {"shape", {96, 1}}, {"data_offsets", {128, 512}}}}};
    const std::string text = header.dump();
    const uint64_t length = text.size();
    std::ofstream out(dir / "adapter_model.safetensors", std::ios::binary);
    out.write(reinterpret_cast<const char*>(&length), sizeof length);
    out << text << std::string(512, '\0');
  }
  const decoder::LoraAdapter adapter = decoder::LoraAdapter::from_directory(dir);
  const std::unique_ptr<backend::Backend> be = backend::create_backend("reference");
  EXPECT_THROW((void)VisionTower::load(case_dir("two_blocks"), *be, backend::Arithmetic::fp32, &adapter),
               checkpoint::LoadError);
  std::filesystem::remove_all(dir);
}

TEST(VisionTower, RefusesGridsThatAreNotWholeMergeWindows) {
  const std::unique_ptr<backend::Backend> be = backend::create_backend("reference");
  const VisionTower tower = VisionTower::load(case_dir("two_blocks"), *be);
  const std::vector<float> pixels(static_cast<std::size_t>(3 * tower.config().patch_values()), 0.0F);
  const Grid odd[] = {{1, 1, 3}};
  EXPECT_THROW((void)tower.forward(pixels_of(pixels, static_cast<std::size_t>(tower.config().patch_values())), odd),
               std::invalid_argument);
  const Grid too_many[] = {{1, 2, 2}};
  EXPECT_THROW(
      (void)tower.forward(pixels_of(pixels, static_cast<std::size_t>(tower.config().patch_values())), too_many),
      std::invalid_argument);
}

TEST(ImageTokens, ExpandAndPositionAsTransformers) {
  std::ifstream in(case_dir("mrope.json"));
  ASSERT_TRUE(in) << "missing mrope.json";
  const nlohmann::json root = nlohmann::json::parse(in);
  const auto image = root.at("image_token_id").get<int32_t>();
  for (const nlohmann::json& c : root.at("cases")) {
    SCOPED_TRACE(c.at("ids").dump());
    std::vector<Grid> grids;
    for (const auto& g : c.at("grids"))
      grids.push_back({g[0].get<int64_t>(), g[1].get<int64_t>(), g[2].get<int64_t>()});
    const auto merge = c.at("merge").get<int64_t>();
    const std::vector<int32_t> expanded =
        expand_image_placeholders(c.at("ids").get<std::vector<int32_t>>(), image, grids, merge);
    ASSERT_EQ(expanded, c.at("expanded").get<std::vector<int32_t>>());
    const MropePositions positions = mrope_positions(expanded, image, grids, merge);
    EXPECT_EQ(positions.t, c.at("positions")[0].get<std::vector<int64_t>>());
    EXPECT_EQ(positions.h, c.at("positions")[1].get<std::vector<int64_t>>());
    EXPECT_EQ(positions.w, c.at("positions")[2].get<std::vector<int64_t>>());
    // Transformers' delta: the next token sits at length + delta.
    EXPECT_EQ(positions.next, static_cast<int64_t>(expanded.size()) + c.at("delta").get<int64_t>());
  }
}

TEST(ImageTokens, RefuseImagesThatDoNotMatchThePrompt) {
  const Grid grids[] = {{1, 4, 4}};
  const std::vector<int32_t> two_placeholders{1, 9, 2, 9};
  EXPECT_THROW((void)expand_image_placeholders(two_placeholders, 9, grids, 2), std::invalid_argument);
  const std::vector<int32_t> short_run{1, 9, 9, 9, 2};
  EXPECT_THROW((void)mrope_positions(short_run, 9, grids, 2), std::invalid_argument);
  const std::vector<int32_t> no_run{1, 2};
  EXPECT_THROW((void)mrope_positions(no_run, 9, grids, 2), std::invalid_argument);
}

VisionConfig read(const char* json) {
  return read_vision_config(checkpoint::ConfigReader(nlohmann::ordered_json::parse(json), "config.json"));
}

TEST(VisionConfig, ReadsTheWrapperAndRefusesWhatItDoesNotImplement) {
  const VisionConfig config = read(R"({"model_type": "qwen3_5", "vision_config": {"depth": 24, "hidden_size": 1024}})");
  EXPECT_EQ(config.depth, 24);
  EXPECT_EQ(config.hidden_size, 1024);
  EXPECT_EQ(config.num_position_embeddings, 2304);
  EXPECT_TRUE(config.tanh_gelu);
  for (const char* json : {R"({"model_type": "qwen3_5_vision", "hidden_act": "silu"})",
                           R"({"model_type": "qwen3_5_vision", "in_channels": 4})",
                           R"({"model_type": "qwen3_5_vision", "rope_parameters": {"rope_type": "default"}})",
                           R"({"model_type": "qwen3_5_vision", "deepstack_visual_indexes": [8, 16]})",
                           R"({"model_type": "qwen3_5_vision", "hidden_size": 48, "num_heads": 8})",
                           R"({"model_type": "qwen3_5_vision", "window_size": 112})"}) {
    SCOPED_TRACE(json);
    EXPECT_THROW((void)read(json), checkpoint::LoadError);
  }
}

}  // namespace
}  // namespace s1::qwen3_5_vision
