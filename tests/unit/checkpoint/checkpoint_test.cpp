#include "model/checkpoint/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "model/checkpoint/load_error.h"
#include "safetensors_builder.h"

namespace s1::checkpoint {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::build_file;
using testing::f32_bytes;
using testing::TempDir;
using testing::u16_bytes;
using testing::write_file;
using testing::write_text;

std::string open_error(const std::filesystem::path& path) {
  try {
    Checkpoint::open(path);
  } catch (const LoadError& error) {
    return error.what();
  }
  ADD_FAILURE() << "expected a LoadError opening " << path;
  return "";
}

class CheckpointTest : public ::testing::Test {
 protected:
  // Two shards and their index: a.safetensors holds "x" and "y", b.safetensors holds "z".
  void write_sharded() {
    write_file(dir_ / "a.safetensors",
               build_file({{"x", "F32", {2}, f32_bytes({1, 2})},
                           {"y", "BF16", {1}, u16_bytes({0x4040})}}));
    write_file(dir_ / "b.safetensors", build_file({{"z", "F16", {1}, u16_bytes({0x3800})}}));
    write_index(R"({"x": "a.safetensors", "y": "a.safetensors", "z": "b.safetensors"})");
  }

  void write_index(std::string_view weight_map) {
    write_text(dir_ / "model.safetensors.index.json",
               std::string(R"({"metadata": {"total_size": 14}, "weight_map": )") +
                   std::string(weight_map) + "}");
  }

  TempDir dir_;
};

TEST_F(CheckpointTest, OpensSingleFileByPathOrDirectory) {
  write_file(dir_ / "model.safetensors",
             build_file({{"encoder.weight", "F32", {2, 3}, f32_bytes({1, 2, 3, 4, 5, 6})},
                         {"encoder.bias", "F16", {3}, u16_bytes({0x3C00, 0x0001, 0x7C00})}}));
  for (const auto& path : {dir_.path(), dir_ / "model.safetensors"}) {
    const auto checkpoint = Checkpoint::open(path);
    EXPECT_EQ(checkpoint.source(), dir_ / "model.safetensors");
    EXPECT_THAT(checkpoint.names(), ElementsAre("encoder.bias", "encoder.weight"));
    const TensorView& weight = checkpoint.get("encoder.weight", {2, 3});
    EXPECT_EQ(weight.dtype, DType::kF32);
    EXPECT_EQ(weight.element_count(), 6);
    EXPECT_THAT(to_float(weight), ElementsAre(1, 2, 3, 4, 5, 6));
    EXPECT_THAT(to_float(checkpoint.get("encoder.bias")),
                ElementsAre(1.0f, 0x1p-24f, std::numeric_limits<float>::infinity()));
    EXPECT_EQ(checkpoint.find("missing"), nullptr);
    EXPECT_EQ(checkpoint.find("encoder.weigh"), nullptr);
  }
}

TEST_F(CheckpointTest, ViewsSurviveMovingTheCheckpoint) {
  write_file(dir_ / "model.safetensors", build_file({{"w", "F32", {1}, f32_bytes({3.5f})}}));
  auto opened = Checkpoint::open(dir_.path());
  const TensorView* before = opened.find("w");
  const Checkpoint moved = std::move(opened);
  EXPECT_EQ(moved.find("w")->bytes.data(), before->bytes.data());
  EXPECT_THAT(to_float(moved.get("w")), ElementsAre(3.5f));
}

std::vector<std::byte> as_bytes(const std::vector<float>& values) {
  std::vector<std::byte> bytes(values.size() * sizeof(float));
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}

// Released pages are mapped in again when read: a loader may give back a packed tensor's pages and
// still read it (or its neighbours) later. Several pages per tensor, so whole pages are released.
TEST_F(CheckpointTest, ReleasedPagesReadTheSameValuesAgain) {
  std::vector<float> big(5000), small{1.5f, -2.0f};
  for (std::size_t i = 0; i < big.size(); ++i) big[i] = static_cast<float>(i) * 0.25f;
  write_file(dir_ / "model.safetensors",
             build_file({{"big", "F32", {5000}, as_bytes(big)}, {"small", "F32", {2}, as_bytes(small)}}));
  const auto checkpoint = Checkpoint::open(dir_.path());
  EXPECT_EQ(to_float(checkpoint.get("big")), big);
  checkpoint.release_pages(checkpoint.get("big"));
  checkpoint.release_pages(checkpoint.get("small"));  // less than a page: nothing to release
  EXPECT_EQ(to_float(checkpoint.get("big")), big);
  EXPECT_EQ(to_float(checkpoint.get("small")), small);
}

TEST_F(CheckpointTest, GetNamesMissingTensorAndShapeMismatch) {
  write_file(dir_ / "model.safetensors", build_file({{"w", "F32", {2, 2}, f32_bytes({1, 2, 3, 4})}}));
  const auto checkpoint = Checkpoint::open(dir_.path());
  try {
    checkpoint.get("pooler.dense.weight");
    FAIL();
  } catch (const LoadError& error) {
    EXPECT_THAT(error.what(), HasSubstr("model.safetensors: tensor 'pooler.dense.weight' not found"));
  }
  try {
    checkpoint.get("w", {4, 1});
    FAIL();
  } catch (const LoadError& error) {
    EXPECT_THAT(error.what(), HasSubstr("tensor 'w' has shape [2, 2], expected [4, 1]"));
  }
}

TEST_F(CheckpointTest, MalformedFileNamesThePath) {
  write_file(dir_ / "model.safetensors", testing::raw_file("{", {}));
  const auto message = open_error(dir_.path());
  EXPECT_THAT(message, HasSubstr((dir_ / "model.safetensors").string()));
  EXPECT_THAT(message, HasSubstr("not valid JSON"));
}

TEST_F(CheckpointTest, EmptyOrMissingFiles) {
  EXPECT_THAT(open_error(dir_.path()), HasSubstr("contains neither model.safetensors nor"));
  EXPECT_THAT(open_error(dir_ / "nope.safetensors"), HasSubstr("nope.safetensors: cannot open"));
  write_file(dir_ / "empty.safetensors", {});
  EXPECT_THAT(open_error(dir_ / "empty.safetensors"), HasSubstr("empty.safetensors: file is 0 bytes"));
}

TEST_F(CheckpointTest, OpensShardedCheckpoint) {
  write_sharded();
  const auto checkpoint = Checkpoint::open(dir_.path());
  EXPECT_EQ(checkpoint.source(), dir_ / "model.safetensors.index.json");
  EXPECT_THAT(checkpoint.names(), ElementsAre("x", "y", "z"));
  EXPECT_THAT(to_float(checkpoint.get("x", {2})), ElementsAre(1, 2));
  EXPECT_THAT(to_float(checkpoint.get("y")), ElementsAre(3.0f));
  EXPECT_THAT(to_float(checkpoint.get("z")), ElementsAre(0.5f));
}

TEST_F(CheckpointTest, PrefersSingleFileOverIndex) {
  write_sharded();
  write_file(dir_ / "model.safetensors", build_file({{"only", "F32", {1}, f32_bytes({1})}}));
  EXPECT_THAT(Checkpoint::open(dir_.path()).names(), ElementsAre("only"));
}

TEST_F(CheckpointTest, ShardedMissingShardFile) {
  write_sharded();
  std::filesystem::remove(dir_ / "b.safetensors");
  EXPECT_THAT(open_error(dir_.path()), HasSubstr("b.safetensors: cannot open"));
}

TEST_F(CheckpointTest, ShardedTensorMissingFromItsShard) {
  write_sharded();
  write_index(R"({"x": "a.safetensors", "y": "a.safetensors", "z": "b.safetensors",
                  "w": "b.safetensors"})");
  EXPECT_THAT(open_error(dir_.path()),
              HasSubstr("tensor 'w' is listed in the index for shard b.safetensors but missing"));
}

TEST_F(CheckpointTest, ShardedTensorInTwoShards) {
  write_sharded();
  write_file(dir_ / "b.safetensors", build_file({{"z", "F16", {1}, u16_bytes({0x3800})},
                                                 {"x", "F32", {1}, f32_bytes({0})}}));
  const auto message = open_error(dir_.path());
  EXPECT_THAT(message, HasSubstr("model.safetensors.index.json"));
  EXPECT_THAT(message, HasSubstr("tensor 'x' is in two shards: a.safetensors and b.safetensors"));
}

TEST_F(CheckpointTest, ShardedTensorInWrongShardOrUnlisted) {
  write_sharded();
  write_index(R"({"x": "a.safetensors", "y": "b.safetensors", "z": "b.safetensors"})");
  EXPECT_THAT(open_error(dir_.path()),
              HasSubstr("tensor 'y' is in shard a.safetensors but the index places it in "
                        "b.safetensors"));
  write_index(R"({"x": "a.safetensors", "z": "b.safetensors"})");
  EXPECT_THAT(open_error(dir_.path()),
              HasSubstr("tensor 'y' is in shard a.safetensors but not listed in the index"));
}

TEST_F(CheckpointTest, ShardedBadIndex) {
  write_sharded();
  write_index(R"({"x": "../a.safetensors"})");
  EXPECT_THAT(open_error(dir_.path()), HasSubstr("tensor 'x' is not a plain file name"));
  write_index(R"({"x": 3})");
  EXPECT_THAT(open_error(dir_.path()), HasSubstr("weight_map entry for tensor 'x' is not a string"));
  write_index(R"([])");
  EXPECT_THAT(open_error(dir_.path()), HasSubstr("'weight_map' is missing or not an object"));
  write_text(dir_ / "model.safetensors.index.json", "{\"weight_map\": ");
  EXPECT_THAT(open_error(dir_.path()), HasSubstr("model.safetensors.index.json: not valid JSON"));
  write_text(dir_ / "model.safetensors.index.json", R"({"weight_map": {}, "extra": 1})");
  EXPECT_THAT(open_error(dir_.path()), HasSubstr("unexpected key 'extra'"));
}

TEST_F(CheckpointTest, ShardWithMalformedHeaderNamesTheShard) {
  write_sharded();
  write_file(dir_ / "b.safetensors",
             testing::raw_file(R"({"z":{"dtype":"F16","shape":[1],"data_offsets":[0,4]}})",
                               std::vector<std::byte>(4)));
  const auto message = open_error(dir_.path());
  EXPECT_THAT(message, HasSubstr("b.safetensors: tensor 'z'"));
}

}  // namespace
}  // namespace s1::checkpoint
