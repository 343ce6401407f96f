#include "text/utf8.h"

#include <gtest/gtest.h>

namespace s1::text {
namespace {

TEST(Utf8, RepairMatchesPythonReplaceDecoding) {
  // Expected values from bytes.decode("utf-8", errors="replace"): one U+FFFD per maximal subpart.
  const std::string fffd = "\xEF\xBF\xBD";
  EXPECT_EQ(to_valid_utf8("abc"), "abc");
  EXPECT_EQ(to_valid_utf8("\xC3\xA9"), "\xC3\xA9");
  EXPECT_EQ(to_valid_utf8("\xC3"), fffd);
  EXPECT_EQ(to_valid_utf8("\xE2\x82("), fffd + "(");
  EXPECT_EQ(to_valid_utf8("\xED\xA0\x80"), fffd + fffd + fffd);  // a surrogate
  EXPECT_EQ(to_valid_utf8("\xF4\x90\x80\x80"), fffd + fffd + fffd + fffd);
  EXPECT_EQ(to_valid_utf8("\xC0\xAF"), fffd + fffd);  // overlong
  EXPECT_EQ(to_valid_utf8("\xF0\x9F\x98 x"), fffd + " x");
  EXPECT_EQ(to_valid_utf8(std::string("a\0b", 3)), std::string("a\0b", 3));
}

TEST(Utf8, ValidityAndRoundTrip) {
  EXPECT_TRUE(is_valid_utf8(""));
  EXPECT_TRUE(is_valid_utf8("h\xC3\xA9llo \xF0\x9F\x98\x80"));
  EXPECT_FALSE(is_valid_utf8("\xFF"));
  EXPECT_FALSE(is_valid_utf8("\xE0\x80\xAF"));
  for (const char32_t code_point : {U'\0', U'A', U'\u00E9', U'\u0800', U'\uFFFD', U'\U0001F600', U'\U0010FFFF'}) {
    const EncodedChar encoded = encode_utf8(code_point);
    const DecodedChar decoded = decode_utf8(encoded.view(), 0);
    EXPECT_TRUE(decoded.valid);
    EXPECT_EQ(decoded.code_point, code_point);
    EXPECT_EQ(decoded.length, encoded.length);
  }
}

}  // namespace
}  // namespace s1::text
