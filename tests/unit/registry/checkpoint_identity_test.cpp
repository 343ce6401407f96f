#include "registry/checkpoint_identity.h"

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "support/fixtures.h"

namespace s1::registry {
namespace {

class CheckpointIdentityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "s1_checkpoint_identity_XXXXXX").string();
    dir_ = ::mkdtemp(pattern.data());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static void write(const std::filesystem::path& path, std::string_view text) {
    std::filesystem::create_directories(path.parent_path());
    std::ofstream(path, std::ios::binary) << text;
  }
  // A copy of the tiny Qwen3 checkpoint at dir_/relative.
  std::filesystem::path tiny_checkpoint(const std::filesystem::path& relative) {
    const std::filesystem::path target = dir_ / relative;
    std::filesystem::create_directories(target);
    std::filesystem::copy(test::fixture_dir("tiny-qwen3-chat"), target,
                          std::filesystem::copy_options::recursive | std::filesystem::copy_options::overwrite_existing);
    return target;
  }

  std::filesystem::path dir_;
};

TEST_F(CheckpointIdentityTest, FileHashesAreWhatSha256sumPrints) {
  write(dir_ / "abc", "abc");
  EXPECT_EQ(sha256_of_file(dir_ / "abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_THROW(sha256_of_file(dir_ / "missing"), std::runtime_error);
  std::stop_source stopped;
  stopped.request_stop();
  EXPECT_EQ(sha256_of_file(dir_ / "abc", stopped.get_token()), std::nullopt);
}

TEST_F(CheckpointIdentityTest, DescribesWeightFilesAndTheirDtypeFromHeadersOnly) {
  const CheckpointIdentity identity = describe_checkpoint(tiny_checkpoint("plain"));
  ASSERT_EQ(identity.files.size(), 1u);
  EXPECT_EQ(identity.files[0].name, "model.safetensors");
  EXPECT_EQ(identity.files[0].bytes, std::filesystem::file_size(dir_ / "plain" / "model.safetensors"));
  EXPECT_EQ(identity.files[0].sha256, std::nullopt);
  EXPECT_EQ(identity.dtype, "bf16");  // the fixture stores its weights in bf16
  EXPECT_EQ(identity.revision, std::nullopt);
  EXPECT_EQ(identity.label(), std::nullopt) << "no revision and no hash yet";
}

TEST_F(CheckpointIdentityTest, TheRevisionComesFromHuggingFaceDownloadRecords) {
  const std::string commit = "0123456789abcdef0123456789abcdef01234567";
  EXPECT_EQ(describe_checkpoint(tiny_checkpoint("hub/models--x--y/snapshots/" + commit)).revision, commit);
  const std::filesystem::path local = tiny_checkpoint("local");
  write(local / ".cache/huggingface/download/model.safetensors.metadata", commit + "\n\"etag\"\n1700000000.0\n");
  const CheckpointIdentity identity = describe_checkpoint(local);
  EXPECT_EQ(identity.revision, commit);
  EXPECT_EQ(identity.label(), commit);
  write(local / ".cache/huggingface/download/model.safetensors.metadata", "not a commit\n");
  EXPECT_EQ(describe_checkpoint(local).revision, std::nullopt);
}

TEST_F(CheckpointIdentityTest, TheLabelIsTheDigestPrefixOnceEveryFileIsHashed) {
  CheckpointIdentity identity;
  identity.files = {{"a.safetensors", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"}};
  EXPECT_EQ(identity.label(), "ba7816bf8f01");
  identity.files.push_back({"b.safetensors", 3, std::nullopt});
  EXPECT_EQ(identity.label(), std::nullopt);
  identity.files[1].sha256 = identity.files[0].sha256;
  // Several files: the SHA-256 of their sha256sum listing, so `sha256sum *.safetensors | sha256sum` agrees.
  write(dir_ / "listing", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  a.safetensors\n"
                          "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  b.safetensors\n");
  EXPECT_EQ(identity.label(), sha256_of_file(dir_ / "listing")->substr(0, 12));
}

TEST_F(CheckpointIdentityTest, AServedCheckpointHashesItsFilesInTheBackground) {
  const std::filesystem::path checkpoint = tiny_checkpoint("served");
  ServedCheckpoint served(checkpoint, describe_checkpoint(checkpoint));
  served.start_hashing();
  const std::string expected = *sha256_of_file(checkpoint / "model.safetensors");
  for (int i = 0; i < 500 && !served.snapshot().label(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  EXPECT_EQ(served.snapshot().files[0].sha256, expected);
  EXPECT_EQ(served.snapshot().label(), expected.substr(0, 12));
}

TEST_F(CheckpointIdentityTest, AGgufFileIsOneWeightFileWithItsTensorTypes) {
  const CheckpointIdentity identity = describe_checkpoint(test::fixture_dir("gguf") / "tiny-qwen3.gguf");
  ASSERT_EQ(identity.files.size(), 1u);
  EXPECT_EQ(identity.files[0].name, "tiny-qwen3.gguf");
  EXPECT_FALSE(identity.dtype.empty());
}

}  // namespace
}  // namespace s1::registry
