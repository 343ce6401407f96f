#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <memory>
#include <vector>

#include "../checkpoint/safetensors_builder.h"
#include "model/checkpoint/load_error.h"
#include "model/decoder/output_matrix.h"
#include "model/decoder/readout.h"

namespace s1::decoder {
namespace {

using checkpoint::testing::build_file;
using checkpoint::testing::f32_bytes;
using checkpoint::testing::write_file;

class TempFile {
 public:
  TempFile() : path_(std::filesystem::temp_directory_path() / ("s1-readout-" + std::to_string(::getpid()) + ".safetensors")) {}
  ~TempFile() { std::filesystem::remove(path_); }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

TEST(LogSoftmax, MatchesTheDefinitionAndSurvivesLargeLogits) {
  const std::vector<float> logits{1.0F, 2.0F, 3.0F};
  const double norm = std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0));
  const auto result = log_softmax(logits);
  for (std::size_t i = 0; i < logits.size(); ++i) EXPECT_NEAR(result[i], logits[i] - norm, 1e-12);
  const std::vector<float> large{1000.0F, 999.0F};
  const auto shifted = log_softmax(large);
  EXPECT_NEAR(shifted[0], -std::log1p(std::exp(-1.0)), 1e-12);
  EXPECT_TRUE(std::isfinite(shifted[1]));
  EXPECT_THROW((void)log_softmax(std::vector<float>{}), std::invalid_argument);
}

TEST(SequenceLogLikelihood, SumsEachRowsLogProbabilityOfItsToken) {
  // Two positions over a vocabulary of 3; the continuation is tokens 2 then 0.
  const std::vector<float> logits{0.0F, 0.0F, 0.0F, 2.0F, 0.0F, 0.0F};
  const double expected = std::log(1.0 / 3.0) + (2.0 - std::log(std::exp(2.0) + 2.0));
  EXPECT_NEAR(sequence_log_likelihood(logits, 3, std::vector<int32_t>{2, 0}), expected, 1e-12);
  EXPECT_THROW((void)sequence_log_likelihood(logits, 3, std::vector<int32_t>{2}), std::invalid_argument);
  EXPECT_THROW((void)sequence_log_likelihood(logits, 3, std::vector<int32_t>{2, 3}), std::out_of_range);
}

TEST(OutputMatrix, GatheredLogitsEqualTheFullProductsRows) {
  TempFile file;
  write_file(file.path(), build_file({{"readout", "F32", {3, 2}, f32_bytes({1.0F, 0.0F, 0.5F, -1.0F, 2.0F, 3.0F})}}));
  const OutputMatrix matrix = OutputMatrix::from_side_file(file.path(), "readout", 2, backend::cpu::Precision::fp32);
  ASSERT_EQ(matrix.rows(), 3U);
  const std::vector<float> hidden{2.0F, 1.0F, -1.0F, 4.0F};  // two rows
  const auto gathered = matrix.gather_logits(std::span(hidden).first(2), std::vector<int32_t>{2, 0, 1});
  EXPECT_EQ(gathered, (std::vector<double>{7.0, 2.0, 0.0}));
  const auto all = matrix.all_logits(hidden);
  EXPECT_EQ(all, (std::vector<float>{2.0F, 0.0F, 7.0F, -1.0F, -4.5F, 10.0F}));
  EXPECT_THROW((void)matrix.gather_logits(std::span(hidden).first(2), std::vector<int32_t>{3}), std::out_of_range);
}

// A bf16 table read in place from its mapping (what Qwen3 does with its LM head) answers exactly as
// its fp32 copy: bf16 widens to fp32 without rounding.
TEST(OutputMatrix, ABf16TableReadInPlaceEqualsItsFp32Copy) {
  const std::vector<std::uint16_t> bits{0x3F80, 0xC000, 0x3EAB, 0x4049, 0xBD4C, 0x0000, 0x7F7F, 0x3C00};  // 4 x 2
  std::vector<std::byte> bytes(bits.size() * 2);
  std::memcpy(bytes.data(), bits.data(), bytes.size());
  const auto mapping = std::make_shared<std::vector<std::byte>>(bytes);
  const checkpoint::TensorView view{.name = "lm_head.weight",
                                    .dtype = checkpoint::DType::kBF16,
                                    .shape = {4, 2},
                                    .bytes = std::span<const std::byte>(*mapping)};
  const OutputMatrix copied(view, 2, backend::cpu::Precision::fp32);
  const OutputMatrix in_place(view, 2, backend::cpu::Precision::fp32, mapping);
  EXPECT_THROW((void)in_place.values(), std::logic_error);
  ASSERT_EQ(copied.values().size(), 8U);
  const std::vector<float> hidden{0.75F, -3.0F};
  const std::vector<int32_t> ids{3, 0, 2, 1};
  EXPECT_EQ(in_place.gather_logits(hidden, ids), copied.gather_logits(hidden, ids));
  EXPECT_EQ(in_place.all_logits(hidden), copied.all_logits(hidden));
  for (std::size_t r = 0; r < 4; ++r) {
    std::vector<float> row(2);
    in_place.copy_row(r, row);
    EXPECT_EQ(row, std::vector<float>(copied.values().begin() + 2 * r, copied.values().begin() + 2 * r + 2));
  }
  std::vector<float> row(2);
  EXPECT_THROW(in_place.copy_row(4, row), std::out_of_range);
  EXPECT_THROW((void)in_place.gather_logits(hidden, std::vector<int32_t>{4}), std::out_of_range);
}

TEST(OutputMatrix, SideFileErrorsNameTheFileAndTensor) {
  TempFile file;
  write_file(file.path(), build_file({{"readout", "F32", {2, 2}, f32_bytes({1.0F, 0.0F, 0.5F, -1.0F})}}));
  try {
    (void)OutputMatrix::from_side_file(file.path(), "readout", 3, backend::cpu::Precision::fp32);
    FAIL() << "a readout narrower than the hidden size loaded";
  } catch (const checkpoint::LoadError& error) {
    EXPECT_NE(std::string(error.what()).find(file.path().string()), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("readout"), std::string::npos) << error.what();
  }
  EXPECT_THROW((void)OutputMatrix::from_side_file(file.path(), "missing", 2, backend::cpu::Precision::fp32),
               checkpoint::LoadError);
}

}  // namespace
}  // namespace s1::decoder
