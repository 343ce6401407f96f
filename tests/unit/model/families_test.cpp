// The one family table: decoders and encoders by model_type, options only where a family has them.

#include "model/families.h"

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "model/checkpoint/checkpoint.h"
#include "model/checkpoint/load_error.h"
#include "support/fixtures.h"

namespace s1::model {
namespace {

using backend::cpu::Precision;

std::string load_error_of(const std::function<void()>& load) {
  try {
    load();
  } catch (const checkpoint::LoadError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a LoadError";
  return "";
}

TEST(FamilyTable, DecoderOptionsOnlyWhereTheFamilyOffersThem) {
  const auto dir = test::fixture_dir("tiny-lfm2");
  ASSERT_EQ(decoder_family_of(dir), "lfm2");
  const std::string message =
      load_error_of([&] { (void)load_causal_decoder(dir, Precision::fp32, {.without_lm_head = true}); });
  EXPECT_NE(message.find("lfm2 family has no"), std::string::npos) << message;
  EXPECT_NE(message.find("qwen3_5 only"), std::string::npos) << message;
}

TEST(FamilyTable, AHeadlessNoncausalQwen3_5ComesThroughTheTable) {
  const auto dir = test::fixture_dir("tiny-d3");
  const auto decoder =
      load_causal_decoder(dir, Precision::fp32, {.noncausal_full_attention = true, .without_lm_head = true});
  EXPECT_EQ(decoder->info().family, "qwen3_5");
}

TEST(FamilyTable, ADecoderIsNotAnEncoder) {
  const auto dir = test::fixture_dir("tiny-lfm2");
  EXPECT_FALSE(encoder_family_of(dir));
  const std::string message = load_error_of([&] { (void)load_encoder(dir, Precision::fp32); });
  EXPECT_NE(message.find("'lfm2' is not an encoder family"), std::string::npos) << message;
  EXPECT_NE(message.find("known: bert, modernbert"), std::string::npos) << message;
}

TEST(FamilyTable, AnEncoderConfigInsideALargerModelLoadsUnderItsPrefix) {
  const auto dir = test::fixture_dir("tiny-vela");
  checkpoint::ConfigReader package = checkpoint::ConfigReader::from_file(dir / "config.json");
  checkpoint::ConfigReader config = package.required_object("encoder_config");
  const auto spec = read_encoder_config("modernbert", config);
  EXPECT_EQ(spec->info().family, "modernbert");
  ASSERT_GT(spec->info().hidden_size, 0U);

  const checkpoint::Checkpoint weights = checkpoint::Checkpoint::open(dir);
  const auto encoder = spec->load(weights, "encoder.", backend::Arithmetic::fp32);
  const std::vector<int32_t> first{1, 5, 7, 2}, second{1, 9, 2};
  const std::array<std::span<const int32_t>, 2> sequences{first, second};
  const std::span<const float> hidden = encoder->forward(sequences);
  EXPECT_EQ(hidden.size(), (first.size() + second.size()) * encoder->info().hidden_size);

  checkpoint::ConfigReader other_package = checkpoint::ConfigReader::from_file(dir / "config.json");
  checkpoint::ConfigReader again = other_package.required_object("encoder_config");
  const std::string message = load_error_of([&] { (void)read_encoder_config("roberta", again); });
  EXPECT_NE(message.find("'roberta' is not an encoder family"), std::string::npos) << message;
}

}  // namespace
}  // namespace s1::model
