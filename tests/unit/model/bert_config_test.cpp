// The BERT family reads config.json and the sentence-transformers files strictly: unsupported
// settings are load errors that name the file and the key.

#include "model/bert/config.h"
#include "model/checkpoint/load_error.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <string>

namespace s1::bert {
namespace {

using Json = nlohmann::ordered_json;

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("s1-bert-config-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const Json& value) const {
    std::filesystem::create_directories((path_ / name).parent_path());
    std::ofstream(path_ / name) << value.dump(2);
  }

 private:
  std::filesystem::path path_;
};

Json minilm_config() {
  return Json::parse(R"({
    "_name_or_path": "nreimers/MiniLM-L6-H384-uncased", "architectures": ["BertModel"],
    "attention_probs_dropout_prob": 0.1, "gradient_checkpointing": false, "hidden_act": "gelu",
    "hidden_dropout_prob": 0.1, "hidden_size": 384, "initializer_range": 0.02, "intermediate_size": 1536,
    "layer_norm_eps": 1e-12, "max_position_embeddings": 512, "model_type": "bert", "num_attention_heads": 12,
    "num_hidden_layers": 6, "pad_token_id": 0, "position_embedding_type": "absolute",
    "transformers_version": "4.8.2", "type_vocab_size": 2, "use_cache": true, "vocab_size": 30522})");
}

// Expects a LoadError whose message names every fragment.
template <class F>
void expect_load_error(F&& load, std::initializer_list<std::string_view> fragments) {
  try {
    load();
    ADD_FAILURE() << "expected a LoadError";
  } catch (const checkpoint::LoadError& error) {
    const std::string message = error.what();
    for (const std::string_view fragment : fragments) EXPECT_NE(message.find(fragment), std::string::npos) << message;
  }
}

TEST(BertConfig, ReadsMiniLm) {
  TempDir dir;
  dir.write("config.json", minilm_config());
  const BertConfig config = read_bert_config(dir.path() / "config.json");
  EXPECT_EQ(config.hidden_size, 384);
  EXPECT_EQ(config.num_hidden_layers, 6);
  EXPECT_EQ(config.head_dim(), 32);
  EXPECT_EQ(config.max_position_embeddings, 512);
  EXPECT_DOUBLE_EQ(config.layer_norm_eps, 1e-12);
}

TEST(BertConfig, RejectsSettingsThatChangeTheMaths) {
  const std::pair<const char*, Json> cases[] = {
      {"position_embedding_type", "relative_key"},
      {"hidden_act", "gelu_new"},
      {"hidden_act", "relu"},
      {"is_decoder", true},
      {"add_cross_attention", true},
      {"chunk_size_feed_forward", 64},
      {"model_type", "roberta"},
      {"num_attention_heads", 7},
      {"hidden_size", 0},
  };
  for (const auto& [key, value] : cases) {
    TempDir dir;
    Json config = minilm_config();
    config[key] = value;
    dir.write("config.json", config);
    expect_load_error([&] { read_bert_config(dir.path() / "config.json"); }, {"config.json", key});
  }
}

TEST(BertConfig, RejectsUnknownAndMissingKeys) {
  {
    TempDir dir;
    Json config = minilm_config();
    config["rope_theta"] = 10000.0;
    dir.write("config.json", config);
    expect_load_error([&] { read_bert_config(dir.path() / "config.json"); }, {"config.json", "rope_theta"});
  }
  {
    TempDir dir;
    Json config = minilm_config();
    config.erase("hidden_size");
    dir.write("config.json", config);
    expect_load_error([&] { read_bert_config(dir.path() / "config.json"); }, {"config.json", "hidden_size"});
  }
}

TEST(BertConfig, NullMeansDefault) {
  TempDir dir;
  Json config = minilm_config();
  config["position_embedding_type"] = nullptr;
  config["hidden_act"] = nullptr;
  dir.write("config.json", config);
  EXPECT_NO_THROW(read_bert_config(dir.path() / "config.json"));
}

// A sentence-transformers directory as all-MiniLM-L6-v2 ships it.
void write_pipeline(const TempDir& dir) {
  dir.write("modules.json", Json::parse(R"([
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
    {"idx": 2, "name": "2", "path": "2_Normalize", "type": "sentence_transformers.models.Normalize"}])"));
  dir.write("1_Pooling/config.json", Json::parse(R"({"word_embedding_dimension": 384,
    "pooling_mode_cls_token": false, "pooling_mode_mean_tokens": true, "pooling_mode_max_tokens": false,
    "pooling_mode_mean_sqrt_len_tokens": false})"));
  dir.write("sentence_bert_config.json", Json::parse(R"({"max_seq_length": 256, "do_lower_case": false})"));
}

BertConfig config_384() {
  BertConfig config;
  config.hidden_size = 384;
  config.max_position_embeddings = 512;
  return config;
}

TEST(SentencePipeline, ReadsTransformerMeanPoolingNormalize) {
  TempDir dir;
  write_pipeline(dir);
  const SentencePipeline pipeline = read_sentence_pipeline(dir.path(), config_384());
  EXPECT_EQ(pipeline.max_seq_length, 256);
  EXPECT_TRUE(pipeline.normalize);
  EXPECT_EQ(pipeline.embedding_dimension, 384);
}

TEST(SentencePipeline, WithoutNormalizeDoesNotNormalise) {
  TempDir dir;
  write_pipeline(dir);
  dir.write("modules.json", Json::parse(R"([
    {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
    {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}])"));
  EXPECT_FALSE(read_sentence_pipeline(dir.path(), config_384()).normalize);
}

TEST(SentencePipeline, RejectsOtherPoolingModes) {
  for (const char* mode : {"pooling_mode_cls_token", "pooling_mode_max_tokens", "pooling_mode_mean_sqrt_len_tokens",
                           "pooling_mode_lasttoken", "pooling_mode_weightedmean_tokens"}) {
    TempDir dir;
    write_pipeline(dir);
    dir.write("1_Pooling/config.json", Json{{"word_embedding_dimension", 384},
                                            {"pooling_mode_mean_tokens", false},
                                            {mode, true}});
    expect_load_error([&] { read_sentence_pipeline(dir.path(), config_384()); }, {"1_Pooling", "pooling_mode"});
  }
}

TEST(SentencePipeline, RejectsUnsupportedModulesAndSettings) {
  {
    TempDir dir;
    write_pipeline(dir);
    dir.write("modules.json", Json::parse(R"([
      {"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
      {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
      {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}])"));
    expect_load_error([&] { read_sentence_pipeline(dir.path(), config_384()); }, {"modules.json", "Dense"});
  }
  {
    TempDir dir;
    write_pipeline(dir);
    dir.write("sentence_bert_config.json", Json{{"max_seq_length", 1024}});
    expect_load_error([&] { read_sentence_pipeline(dir.path(), config_384()); },
                      {"sentence_bert_config.json", "max_seq_length"});
  }
  {
    TempDir dir;
    write_pipeline(dir);
    dir.write("sentence_bert_config.json", Json{{"max_seq_length", 256}, {"do_lower_case", true}});
    expect_load_error([&] { read_sentence_pipeline(dir.path(), config_384()); }, {"do_lower_case"});
  }
  {
    TempDir dir;
    write_pipeline(dir);
    dir.write("1_Pooling/config.json", Json{{"word_embedding_dimension", 768}, {"pooling_mode_mean_tokens", true}});
    expect_load_error([&] { read_sentence_pipeline(dir.path(), config_384()); }, {"word_embedding_dimension"});
  }
  {
    TempDir dir;
    write_pipeline(dir);
    std::filesystem::remove(dir.path() / "modules.json");
    expect_load_error([&] { read_sentence_pipeline(dir.path(), config_384()); }, {"modules.json", "missing"});
  }
}

}  // namespace
}  // namespace s1::bert
