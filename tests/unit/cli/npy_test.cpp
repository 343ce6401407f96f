#include "cli/npy.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace s1::cli {
namespace {

std::string header_of(const std::string& bytes) {
  const std::size_t length = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  return bytes.substr(10, length);
}

TEST(Npy, HeaderIsNumpysVersionOneFormatAlignedTo64Bytes) {
  const std::vector<float> values{1.0F, -2.5F, 3.0F, 0.0F, 5.0F, 6.0F};
  const std::vector<std::size_t> shape{2, 3};
  const std::string bytes = npy_float32_bytes(shape, values);
  ASSERT_EQ(bytes.compare(0, 8, std::string("\x93NUMPY\x01\x00", 8)), 0);
  const std::string header = header_of(bytes);
  EXPECT_EQ(header.rfind("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 0), 0U);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_EQ((10 + header.size()) % 64, 0U);
  ASSERT_EQ(bytes.size(), 10 + header.size() + values.size() * sizeof(float));
  std::vector<float> data(values.size());
  std::memcpy(data.data(), bytes.data() + 10 + header.size(), values.size() * sizeof(float));
  EXPECT_EQ(data, values);
}

TEST(Npy, OneDimensionIsWrittenAsAOneElementTuple) {
  const std::vector<float> values{1.0F, 2.0F, 3.0F};
  const std::vector<std::size_t> shape{3};
  EXPECT_NE(header_of(npy_float32_bytes(shape, values)).find("'shape': (3,), }"), std::string::npos);
}

TEST(Npy, ShapeThatDoesNotMatchTheValuesIsRejected) {
  const std::vector<float> values{1.0F, 2.0F};
  const std::vector<std::size_t> shape{3};
  EXPECT_THROW((void)npy_float32_bytes(shape, values), std::invalid_argument);
}

}  // namespace
}  // namespace s1::cli
