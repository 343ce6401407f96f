#pragma once
// Header-only so the parity tests, which do not link s1_test_support, share it too.

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

namespace s1::test {

// A TEST_F fixture's own empty directory dir_ (named after the suite, the test and the run's seed, so
// concurrent runs do not meet), removed after the test.
class ScratchDirectoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const ::testing::UnitTest& run = *::testing::UnitTest::GetInstance();
    dir_ = std::filesystem::temp_directory_path() /
           ("s1_" + std::string(run.current_test_info()->test_suite_name()) + "_" + std::to_string(run.random_seed()) +
            "_" + run.current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::filesystem::path dir_;
};

}  // namespace s1::test
