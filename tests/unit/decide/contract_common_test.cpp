#include "decide/contract_common.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "model/checkpoint/load_error.h"
#include "support/fixtures.h"
#include "text/tokenizer.h"

namespace s1::decide {
namespace {

checkpoint::ConfigReader decision_file(const char* json) {
  return checkpoint::ConfigReader(nlohmann::ordered_json::parse(json), "model/s1serve.json");
}

// The LoadError's message, or "" when `read` does not throw one.
template <typename Read>
std::string load_error_of(Read read) {
  try {
    read();
  } catch (const checkpoint::LoadError& error) {
    return error.what();
  }
  return "";
}

TEST(ContractSettings, ServedModelIdentityKeepsDefaultsAndRefusesAnEmptyName) {
  struct Identity {
    std::string name = "default-name";
    std::vector<std::string> aliases{"default-alias"};
    std::string description = "default description";
  } identity;
  auto file = decision_file(R"({"description": "mine"})");
  read_served_model_identity(file, identity);
  EXPECT_EQ(identity.name, "default-name");
  EXPECT_EQ(identity.aliases, std::vector<std::string>{"default-alias"});
  EXPECT_EQ(identity.description, "mine");
  Identity renamed;
  auto aliased = decision_file(R"({"aliases": []})");
  read_served_model_identity(aliased, renamed);
  EXPECT_TRUE(renamed.aliases.empty());

  const std::string error = load_error_of([] {
    Identity empty;
    auto empty_name = decision_file(R"({"name": ""})");
    read_served_model_identity(empty_name, empty);
  });
  EXPECT_NE(error.find("s1serve.json"), std::string::npos) << error;
  EXPECT_NE(error.find("name"), std::string::npos) << error;
}

TEST(ContractSettings, PrecisionAndLogitRoundingErrorsNameTheKey) {
  auto absent = decision_file("{}");
  EXPECT_EQ(read_precision(absent, backend::cpu::Precision::fp32), backend::cpu::Precision::fp32);
  EXPECT_EQ(read_logit_rounding(absent, LogitRounding::bf16), LogitRounding::bf16);
  auto set = decision_file(R"({"precision": "fp32", "logit_rounding": "none"})");
  EXPECT_EQ(read_precision(set, default_linear_precision()), backend::cpu::Precision::fp32);
  EXPECT_EQ(read_logit_rounding(set, LogitRounding::bf16), LogitRounding::none);

  const std::string precision = load_error_of([] {
    auto fp16 = decision_file(R"({"precision": "fp16"})");
    (void)read_precision(fp16, backend::cpu::Precision::fp32);
  });
  EXPECT_NE(precision.find("s1serve.json"), std::string::npos) << precision;
  EXPECT_NE(precision.find("precision"), std::string::npos) << precision;
  const std::string rounding = load_error_of([] {
    auto fp8 = decision_file(R"({"logit_rounding": "fp8"})");
    (void)read_logit_rounding(fp8, LogitRounding::bf16);
  });
  EXPECT_NE(rounding.find("logit_rounding"), std::string::npos) << rounding;
  EXPECT_FALSE(parse_precision("BF16"));
}

TEST(ContractLogits, RoundsToBf16OnlyWhenAsked) {
  std::vector<double> logits{1.00390625, 1.01171875, -2.3, NAN};
  round_logits(logits, LogitRounding::none);
  EXPECT_EQ(logits[0], 1.00390625);
  round_logits(logits, LogitRounding::bf16);
  EXPECT_EQ(logits[0], 1.0);       // halfway, even neighbour below
  EXPECT_EQ(logits[1], 1.015625);  // halfway, even neighbour above
  EXPECT_EQ(logits[2], -2.296875);
  EXPECT_TRUE(std::isnan(logits[3]));
}

TEST(ContractPrompts, EncodedWithoutSpecialTokensAndRefusedPastTheContext) {
  const text::Tokenizer tokenizer =
      text::Tokenizer::from_file(test::fixture_dir("qwen-tiny-tokenizer") / "tokenizer.json");
  const std::vector<int32_t> ids = encode_without_special_tokens(tokenizer, "one two three");
  ASSERT_GT(ids.size(), 1U);
  const auto fits = encode_prompt_within(tokenizer, "one two three", ids.size());
  ASSERT_TRUE(fits);
  EXPECT_EQ(fits.value(), ids);
  const auto too_long = encode_prompt_within(tokenizer, "one two three", ids.size() - 1);
  ASSERT_FALSE(too_long);
  EXPECT_EQ(too_long.error().code, api::ErrorCode::max_tokens_exceeded);
}

TEST(ContractLabels, ALabelMustBeItsOwnSingleVocabularyToken) {
  const auto tokenizer_dir = test::fixture_dir("qwen-tiny-tokenizer");
  const text::Tokenizer tokenizer = text::Tokenizer::from_file(tokenizer_dir / "tokenizer.json");
  const std::size_t vocab = 1U << 20;
  EXPECT_EQ(require_label_token(tokenizer, "A", vocab, tokenizer_dir, "test"), *tokenizer.token_to_id("A"));

  const std::string several = load_error_of(
      [&] { (void)require_label_token(tokenizer, "A B C", vocab, tokenizer_dir, "test"); });
  EXPECT_NE(several.find(tokenizer_dir.string()), std::string::npos) << several;
  EXPECT_NE(several.find("'A B C'"), std::string::npos) << several;
  const auto id = *tokenizer.token_to_id("A");
  const std::string outside = load_error_of(
      [&] { (void)require_label_token(tokenizer, "A", static_cast<std::size_t>(id), tokenizer_dir, "test"); });
  EXPECT_NE(outside.find("test contract"), std::string::npos) << outside;
}

}  // namespace
}  // namespace s1::decide
