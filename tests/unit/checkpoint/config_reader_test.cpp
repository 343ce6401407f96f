#include "model/checkpoint/config_reader.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "model/checkpoint/load_error.h"
#include "safetensors_builder.h"

namespace s1::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using Json = nlohmann::ordered_json;

constexpr const char* kSource = "/models/bert/config.json";

ConfigReader reader_for(std::string_view text) { return ConfigReader(Json::parse(text), kSource); }

template <typename Action>
std::string error_of(Action&& action) {
  try {
    action();
  } catch (const LoadError& error) {
    const std::string message = error.what();
    EXPECT_THAT(message, HasSubstr(kSource));
    return message;
  }
  ADD_FAILURE() << "expected a LoadError";
  return "";
}

TEST(ConfigReader, ReadsTypedValues) {
  auto config = reader_for(R"({
    "hidden_size": 384, "layer_norm_eps": 1e-12, "rope_theta": 10000, "hidden_act": "gelu",
    "tie_word_embeddings": false, "layer_types": ["full", "sliding"], "sizes": [1, 2, 3],
    "scales": [0.5, 2], "architectures": ["BertModel"], "torch_dtype": "float32"})");
  EXPECT_EQ(config.required<int64_t>("hidden_size"), 384);
  EXPECT_EQ(config.required<double>("layer_norm_eps"), 1e-12);
  EXPECT_EQ(config.required<double>("rope_theta"), 10000.0);  // integers read as numbers
  EXPECT_EQ(config.required<std::string>("hidden_act"), "gelu");
  EXPECT_FALSE(config.required<bool>("tie_word_embeddings"));
  EXPECT_THAT(config.required<std::vector<std::string>>("layer_types"),
              ElementsAre("full", "sliding"));
  EXPECT_THAT(config.required<std::vector<int64_t>>("sizes"), ElementsAre(1, 2, 3));
  EXPECT_THAT(config.optional<std::vector<double>>("scales"), ::testing::Optional(ElementsAre(0.5, 2.0)));
  config.ignore({"architectures", "torch_dtype", "transformers_version"});
  config.finish();
}

TEST(ConfigReader, OptionalDefaultsWhenAbsentOrNull) {
  auto config = reader_for(R"({"rope_scaling": null, "sliding_window": 128})");
  EXPECT_EQ(config.optional<double>("rope_theta", 10000.0), 10000.0);
  EXPECT_EQ(config.optional<int64_t>("sliding_window", 0), 128);
  EXPECT_EQ(config.optional<std::string>("missing"), std::nullopt);
  EXPECT_FALSE(config.optional_object("rope_scaling").has_value());
  EXPECT_FALSE(config.contains("rope_scaling"));
  EXPECT_TRUE(config.contains("sliding_window"));
  config.finish();
}

TEST(ConfigReader, WrongTypeNamesKeyExpectedTypeAndFile) {
  auto config = reader_for(R"({"hidden_size": "384", "eps": true, "n": 2.0, "ids": [1, "2"],
                               "big": 9223372036854775808, "neg": -3})");
  auto message = error_of([&] { config.required<int64_t>("hidden_size"); });
  EXPECT_THAT(message, HasSubstr("key 'hidden_size': expected integer, got string \"384\""));
  message = error_of([&] { config.optional<double>("eps", 1.0); });
  EXPECT_THAT(message, HasSubstr("key 'eps': expected number, got boolean"));
  message = error_of([&] { config.required<int64_t>("n"); });
  EXPECT_THAT(message, HasSubstr("key 'n': expected integer, got number 2.0"));
  message = error_of([&] { config.required<std::vector<int64_t>>("ids"); });
  EXPECT_THAT(message, HasSubstr("key 'ids': expected array of integers"));
  message = error_of([&] { config.required<int64_t>("big"); });
  EXPECT_THAT(message, HasSubstr("key 'big': expected integer"));
  EXPECT_EQ(config.required<int64_t>("neg"), -3);
}

TEST(ConfigReader, MissingRequiredKey) {
  auto config = reader_for(R"({"vocab_size": null})");
  EXPECT_THAT(error_of([&] { config.required<int64_t>("hidden_size"); }),
              HasSubstr("required key 'hidden_size' (integer) is missing or null"));
  EXPECT_THAT(error_of([&] { config.required<int64_t>("vocab_size"); }),
              HasSubstr("required key 'vocab_size'"));
}

TEST(ConfigReader, FinishNamesEveryUnreadKey) {
  auto config = reader_for(R"({"hidden_size": 1, "use_cache": true, "position_embedding_type":
                               "relative_key", "architectures": []})");
  config.required<int64_t>("hidden_size");
  config.ignore({"architectures"});
  const auto message = error_of([&] { config.finish(); });
  EXPECT_THAT(message, HasSubstr("unknown or unsupported keys: 'use_cache', 'position_embedding_type'"));
}

TEST(ConfigReader, NestedObjectsHaveTheirOwnReader) {
  auto config = reader_for(R"({"rope_scaling": {"type": "linear", "factor": 2.0, "extra": 1},
                               "text_config": 5})");
  auto rope = config.required_object("rope_scaling");
  EXPECT_EQ(rope.required<std::string>("type"), "linear");
  EXPECT_EQ(rope.required<double>("factor"), 2.0);
  EXPECT_THAT(error_of([&] { rope.finish(); }),
              HasSubstr("config.json, in 'rope_scaling': unknown or unsupported keys: 'extra'"));
  EXPECT_THAT(error_of([&] { config.optional_object("text_config"); }),
              HasSubstr("key 'text_config': expected object, got integer"));
  EXPECT_THAT(error_of([&] { config.required_object("vision_config"); }),
              HasSubstr("required key 'vision_config' (object) is missing"));
  config.finish();
}

TEST(ConfigReader, RejectNamesKeyAndReason) {
  const auto config = reader_for(R"({"hidden_act": "swish"})");
  EXPECT_THAT(error_of([&] { config.reject("hidden_act", "unsupported activation 'swish'"); }),
              HasSubstr("config.json: key 'hidden_act': unsupported activation 'swish'"));
}

TEST(ConfigReader, RequirePositiveRejectsZeroAndNegatives) {
  const ConfigReader config = reader_for("{}");
  EXPECT_NO_THROW(config.require_positive("num_hidden_layers", 1));
  EXPECT_THAT(error_of([&] { config.require_positive("num_hidden_layers", 0); }),
              HasSubstr("config.json: key 'num_hidden_layers': must be a positive integer"));
  EXPECT_THAT(error_of([&] { config.require_positive("head_dim", -64); }),
              HasSubstr("key 'head_dim': must be a positive integer"));
}

TEST(ConfigReader, RootMustBeAnObject) {
  EXPECT_THAT(error_of([] { reader_for("[1]"); }), HasSubstr("expected a JSON object, got array"));
}

TEST(ConfigReader, FromFile) {
  const testing::TempDir dir;
  testing::write_text(dir / "config.json", R"({"hidden_size": 8})");
  auto config = ConfigReader::from_file(dir / "config.json");
  EXPECT_EQ(config.source(), (dir / "config.json").string());
  EXPECT_EQ(config.required<int64_t>("hidden_size"), 8);
  config.finish();

  testing::write_text(dir / "bad.json", R"({"hidden_size": })");
  try {
    ConfigReader::from_file(dir / "bad.json");
    FAIL();
  } catch (const LoadError& error) {
    EXPECT_THAT(error.what(), HasSubstr("bad.json: not valid JSON"));
  }
  EXPECT_THROW(ConfigReader::from_file(dir / "absent.json"), LoadError);
}

}  // namespace
}  // namespace s1::checkpoint
