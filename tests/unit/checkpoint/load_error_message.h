// The message of a checkpoint parse that must fail, for the parser tests of every format.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <string_view>

#include "model/checkpoint/load_error.h"

namespace s1::checkpoint::testing {

// Runs `parse` and returns its LoadError's message, which must name the file (`label`); fails the
// test if parsing succeeds.
template <typename Parse>
std::string load_error_message(Parse&& parse, std::string_view label) {
  try {
    parse();
  } catch (const LoadError& error) {
    const std::string message = error.what();
    EXPECT_THAT(message, ::testing::HasSubstr(std::string(label)));
    return message;
  }
  ADD_FAILURE() << "expected a LoadError";
  return "";
}

}  // namespace s1::checkpoint::testing
