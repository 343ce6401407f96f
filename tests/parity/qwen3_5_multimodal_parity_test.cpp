// Qwen3.5 with images vs Transformers' Qwen3_5ForConditionalGeneration on tiny random checkpoints
// (tools/reference/make_qwen3_5_multimodal_fixtures.py → tests/parity/qwen3_5_multimodal/): the
// vision tower's features spliced in at the image placeholders, M-RoPE positions, logits at every
// position for prompts with 1–4 images; the same rows from branches after a shared prefix that holds
// images; bf16 drift; the decoder's refusals of images that do not fit.

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "backend/backend.h"
#include "backend/cpu/linear.h"
#include "model/checkpoint/checkpoint.h"
#include "model/decoder/causal_decoder.h"
#include "model/qwen3_5/qwen3_5_model.h"
#include "model/qwen3_5_vision/vision_tower.h"

namespace s1::qwen3_5 {
namespace {

// fp32 engine vs fp32 Transformers: |Δ logit| ≤ 1e-4 × the prompt's largest |reference logit|.
constexpr double logit_tolerance = 1e-4;
// bf16 tower and decoder matmuls vs the fp32 reference, |Δ| ≤ 0.25 × the logit scale. Measured
// 2026-12 (Intel Xeon, AMX-BF16): 1.7–16 % on these prompts, and 1.6–11 % for the same prompts with
// no images spliced in (plain embeddings, 1-D positions) — random tiny weights amplify bf16 rounding
// whatever the input; the gate catches a wrong layout or position (errors of the scale's order).
constexpr double bf16_tolerance = 0.25;
constexpr int32_t image_token = 79;
constexpr int32_t vision_end = 78;

const std::vector<std::string> cases{"sections332", "sections211", "default_sections_merge3"};
constexpr std::size_t prompts_per_case = 2;

std::filesystem::path case_dir(const std::string& name) {
  const char* source = std::getenv("S1SERVE_SOURCE_DIR");
  return std::filesystem::path(source != nullptr ? source : S1SERVE_SOURCE_DIR_FALLBACK) / "tests" / "parity" /
         "qwen3_5_multimodal" / name;
}

struct Prompt {
  std::vector<int32_t> ids;
  std::vector<float> pixels;
  std::size_t patch_values = 0;
  std::vector<qwen3_5_vision::Grid> grids;
  std::vector<float> logits;  // [ids, vocab]
};

Prompt read_prompt(const std::string& name, std::size_t k) {
  const checkpoint::Checkpoint file = checkpoint::Checkpoint::open(case_dir(name) / "reference.safetensors");
  const std::string suffix = std::to_string(k);
  Prompt p;
  const checkpoint::TensorView& ids = file.get("ids_" + suffix);
  const auto* id_values = reinterpret_cast<const int32_t*>(ids.bytes.data());
  p.ids.assign(id_values, id_values + ids.shape[0]);
  const checkpoint::TensorView& pixels = file.get("pixels_" + suffix);
  p.pixels = checkpoint::to_float(pixels);
  p.patch_values = static_cast<std::size_t>(pixels.shape[1]);
  const checkpoint::TensorView& grids = file.get("grids_" + suffix);
  const auto* g = reinterpret_cast<const int64_t*>(grids.bytes.data());
  for (int64_t i = 0; i < grids.shape[0]; ++i) p.grids.push_back({g[3 * i], g[3 * i + 1], g[3 * i + 2]});
  p.logits = checkpoint::to_float(file.get("logits_" + suffix));
  return p;
}

// The prompt's images as the decoder takes them: each run of image tokens with its merged grid and
// its rows of the tower's features.
struct Images {
  std::vector<float> features;
  std::vector<decoder::ImageRows> rows;
};

Images encode(const qwen3_5_vision::VisionTower& tower, const Prompt& p, std::size_t hidden) {
  Images images;
  const backend::Tensor pixels =
      backend::Tensor::of(std::span<const float>(p.pixels)).reshape({p.pixels.size() / p.patch_values, p.patch_values});
  const backend::Tensor features = tower.forward(pixels, p.grids);
  const auto values = features.read_values<float>();
  images.features.assign(values.begin(), values.end());
  const auto merge = static_cast<std::size_t>(tower.config().spatial_merge_size);
  std::size_t token = 0, feature_row = 0;
  for (const qwen3_5_vision::Grid& grid : p.grids) {
    while (p.ids[token] != image_token) ++token;
    decoder::ImageRows image{.first = token,
                             .rows = {},
                             .frames = static_cast<std::size_t>(grid.t),
                             .height = static_cast<std::size_t>(grid.h) / merge,
                             .width = static_cast<std::size_t>(grid.w) / merge};
    image.rows = std::span<const float>(images.features).subspan(feature_row * hidden, image.tokens() * hidden);
    images.rows.push_back(image);
    token += image.tokens();
    feature_row += image.tokens();
  }
  return images;
}

std::vector<std::size_t> every_position(std::size_t n) {
  std::vector<std::size_t> positions(n);
  for (std::size_t i = 0; i < n; ++i) positions[i] = i;
  return positions;
}

double max_abs(std::span<const float> values) {
  double m = 0.0;
  for (const float v : values) m = std::max(m, std::fabs(static_cast<double>(v)));
  return m;
}

// The largest |Δ| between our logits for `hidden` rows and the reference rows from `first_row` on.
double logit_difference(const decoder::CausalDecoder& model, std::span<const float> hidden,
                        std::span<const float> reference, std::size_t first_row) {
  const std::vector<float> logits = model.lm_head().all_logits(hidden);
  const std::size_t vocab = model.info().vocab_size;
  double worst = 0.0;
  for (std::size_t i = 0; i < logits.size(); ++i) {
    worst = std::max(worst, std::fabs(double{logits[i]} - reference[first_row * vocab + i]));
  }
  return worst;
}

struct Loaded {
  std::unique_ptr<backend::Backend> backend;
  std::unique_ptr<qwen3_5_vision::VisionTower> tower;
  std::unique_ptr<decoder::CausalDecoder> model;
};

Loaded load(const std::string& name, backend::cpu::Precision precision) {
  Loaded l;
  l.backend = backend::create_backend("cpu");
  const backend::Arithmetic arithmetic =
      precision == backend::cpu::Precision::bf16 ? backend::Arithmetic::bf16 : backend::Arithmetic::fp32;
  l.tower = std::make_unique<qwen3_5_vision::VisionTower>(
      qwen3_5_vision::VisionTower::load(case_dir(name), *l.backend, arithmetic));
  l.model = load_qwen3_5(case_dir(name), precision);
  return l;
}

class MultimodalParity : public testing::TestWithParam<std::string> {};

TEST_P(MultimodalParity, LogitsAtEveryPositionMatchTransformers) {
  Loaded l = load(GetParam(), backend::cpu::Precision::fp32);
  for (std::size_t k = 0; k < prompts_per_case; ++k) {
    SCOPED_TRACE("prompt " + std::to_string(k));
    const Prompt p = read_prompt(GetParam(), k);
    const Images images = encode(*l.tower, p, l.model->info().hidden_size);
    const std::vector<std::size_t> positions = every_position(p.ids.size());
    const decoder::Branch branch{p.ids, positions, images.rows};
    const auto outputs = l.model->forward(nullptr, std::span(&branch, 1), true);
    EXPECT_LE(logit_difference(*l.model, outputs[0].hidden, p.logits, 0), logit_tolerance * max_abs(p.logits));
    // The next position is the largest M-RoPE position + 1: each image advances it by its merged
    // grid's larger side, not by its token count.
    std::size_t next = p.ids.size();
    for (const decoder::ImageRows& image : images.rows) next -= image.tokens() - std::max(image.height, image.width);
    EXPECT_EQ(outputs[0].state->next_position(), next);
  }
}

// Every cut between two images' runs: the prefix (with the images before the cut) run once, then
// the rest as one branch and, in the same batch, the rest without its last token.
TEST_P(MultimodalParity, BranchesAfterAPrefixWithImagesMatchTransformers) {
  Loaded l = load(GetParam(), backend::cpu::Precision::fp32);
  const std::size_t hidden = l.model->info().hidden_size;
  for (std::size_t k = 0; k < prompts_per_case; ++k) {
    const Prompt p = read_prompt(GetParam(), k);
    const Images images = encode(*l.tower, p, hidden);
    const double bound = logit_tolerance * max_abs(p.logits);
    for (std::size_t cut = 1; cut + 1 < p.ids.size(); ++cut) {
      const bool inside = std::ranges::any_of(images.rows, [&](const decoder::ImageRows& image) {
        return cut > image.first && cut < image.first + image.tokens();
      });
      if (inside || p.ids[cut - 1] != vision_end) continue;  // cut right after each image
      SCOPED_TRACE("prompt " + std::to_string(k) + ", cut " + std::to_string(cut));
      std::vector<decoder::ImageRows> before, after;
      for (decoder::ImageRows image : images.rows) {
        if (image.first < cut) {
          before.push_back(image);
        } else {
          image.first -= cut;
          after.push_back(image);
        }
      }
      const std::span<const int32_t> ids(p.ids);
      const decoder::Branch prefix_branch{ids.first(cut), {}, before};
      auto prefix = std::move(l.model->forward(nullptr, std::span(&prefix_branch, 1), true).front().state);
      const std::size_t rest = p.ids.size() - cut;
      const std::vector<std::size_t> all = every_position(rest);
      const std::vector<std::size_t> shorter = every_position(rest - 1);
      const decoder::Branch branches[] = {{ids.subspan(cut), all, after},
                                          {ids.subspan(cut, rest - 1), shorter, after}};
      const bool image_in_shorter = !after.empty() && after.back().first + after.back().tokens() > rest - 1;
      const auto outputs = l.model->forward(prefix.get(), std::span(branches, image_in_shorter ? 1 : 2), false);
      EXPECT_LE(logit_difference(*l.model, outputs[0].hidden, p.logits, cut), bound);
      if (outputs.size() == 2) {
        EXPECT_LE(logit_difference(*l.model, outputs[1].hidden, p.logits, cut), bound);
      }
    }
  }
}

TEST_P(MultimodalParity, Bf16DriftStaysWithinItsGate) {
  if (!backend::cpu::linear_supported(backend::cpu::Precision::bf16)) GTEST_SKIP() << "no bf16 matmul on this CPU";
  Loaded l = load(GetParam(), backend::cpu::Precision::bf16);
  for (std::size_t k = 0; k < prompts_per_case; ++k) {
    const Prompt p = read_prompt(GetParam(), k);
    const Images images = encode(*l.tower, p, l.model->info().hidden_size);
    const std::vector<std::size_t> positions = every_position(p.ids.size());
    const decoder::Branch branch{p.ids, positions, images.rows};
    const auto outputs = l.model->forward(nullptr, std::span(&branch, 1), false);
    const double drift = logit_difference(*l.model, outputs[0].hidden, p.logits, 0) / max_abs(p.logits);
    RecordProperty("bf16_drift_" + std::to_string(k), std::to_string(drift));
    std::printf("%s prompt %zu: bf16 logit drift %.4f%% of the logit scale\n", GetParam().c_str(), k, 100 * drift);
    EXPECT_LE(drift, bf16_tolerance);
  }
}

INSTANTIATE_TEST_SUITE_P(TinyCheckpoints, MultimodalParity, testing::ValuesIn(cases),
                         [](const auto& test) { return test.param; });

TEST(MultimodalErrors, ImagesThatDoNotFitAreInvalidArguments) {
  Loaded l = load("sections332", backend::cpu::Precision::fp32);
  const Prompt p = read_prompt("sections332", 0);
  const std::size_t hidden = l.model->info().hidden_size;
  const Images images = encode(*l.tower, p, hidden);
  const std::vector<std::size_t> last{p.ids.size() - 1};
  const auto run = [&](std::span<const int32_t> ids, std::span<const decoder::ImageRows> rows) {
    const decoder::Branch branch{ids, last, rows};
    return l.model->forward(nullptr, std::span(&branch, 1), false);
  };
  decoder::ImageRows shifted = images.rows[0];
  shifted.first -= 1;  // its first token is vision_start, not the image token
  EXPECT_THROW(run(p.ids, std::span(&shifted, 1)), std::invalid_argument);
  decoder::ImageRows short_rows = images.rows[0];
  short_rows.rows = short_rows.rows.first(hidden);
  EXPECT_THROW(run(p.ids, std::span(&short_rows, 1)), std::invalid_argument);
  decoder::ImageRows past_end = images.rows[0];
  past_end.first = p.ids.size() - 2;
  EXPECT_THROW(run(p.ids, std::span(&past_end, 1)), std::invalid_argument);
  const decoder::ImageRows twice[] = {images.rows[0], images.rows[0]};
  EXPECT_THROW(run(p.ids, twice), std::invalid_argument);

  // A checkpoint whose image token is outside its vocabulary takes no images at all.
  const auto text_only = load_qwen3_5(case_dir("..") / "qwen3_5" / "vl_untied", backend::cpu::Precision::fp32);
  EXPECT_EQ(text_only->info().image_token_id, -1);
  const std::vector<int32_t> ids{1, 2, 3};
  const std::vector<float> row(text_only->info().hidden_size);
  const decoder::ImageRows one{.first = 1, .rows = row, .frames = 1, .height = 1, .width = 1};
  const std::vector<std::size_t> output{2};
  const decoder::Branch branch{ids, output, std::span(&one, 1)};
  EXPECT_THROW(text_only->forward(nullptr, std::span(&branch, 1), false), std::invalid_argument);
}

}  // namespace
}  // namespace s1::qwen3_5
