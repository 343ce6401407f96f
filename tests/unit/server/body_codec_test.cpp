#include <gtest/gtest.h>
#include <zlib.h>
#include <zstd.h>

#include <string>

#include "server/body_encoding.h"
#include "server/multipart.h"

namespace s1::server {
namespace {

std::string gzip(const std::string& text, int window_bits) {
  z_stream stream{};
  EXPECT_EQ(deflateInit2(&stream, 6, Z_DEFLATED, window_bits, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::string out(deflateBound(&stream, text.size()) + 32, '\0');
  stream.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
  stream.avail_in = static_cast<uInt>(text.size());
  stream.next_out = reinterpret_cast<Bytef*>(out.data());
  stream.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&stream, Z_FINISH), Z_STREAM_END);
  out.resize(stream.total_out);
  deflateEnd(&stream);
  return out;
}

std::string zstd(const std::string& text) {
  std::string out(ZSTD_compressBound(text.size()), '\0');
  out.resize(ZSTD_compress(out.data(), out.size(), text.data(), text.size(), 3));
  return out;
}

int status_of(const api::Result<std::string>& result) { return result ? 200 : api::http_status(result.error().code); }

TEST(BodyEncoding, DecodesEachCodingWithinTheLimit) {
  const std::string body = "{\"state\":\"" + std::string(100'000, 'x') + "\"}";
  for (const auto& [coding, encoded] :
       {std::pair{ContentCoding::gzip, gzip(body, 16 + MAX_WBITS)},
        std::pair{ContentCoding::deflate, gzip(body, MAX_WBITS)},
        std::pair{ContentCoding::deflate, gzip(body, -MAX_WBITS)}, std::pair{ContentCoding::zstd, zstd(body)}}) {
    auto decoded = decode_body(coding, encoded, body.size());
    ASSERT_TRUE(decoded) << decoded.error().message;
    EXPECT_EQ(decoded.value(), body);
    EXPECT_EQ(status_of(decode_body(coding, encoded, body.size() - 1)), 413);
    EXPECT_EQ(status_of(decode_body(coding, encoded.substr(0, encoded.size() / 2), body.size())), 400);
    EXPECT_EQ(status_of(decode_body(coding, encoded + "junk", body.size())), 400);
    EXPECT_EQ(status_of(decode_body(coding, "", body.size())), 400);
  }
  const std::string twice = gzip("ab", 16 + MAX_WBITS) + gzip("cd", 16 + MAX_WBITS);
  EXPECT_EQ(decode_body(ContentCoding::gzip, twice, 10).value(), "abcd");  // gzip members in sequence
  EXPECT_EQ(decode_body(ContentCoding::zstd, zstd("ab") + zstd("cd"), 10).value(), "abcd");
}

TEST(BodyEncoding, ABombStopsAtTheLimit) {
  const std::string bomb = zstd(std::string(64 << 20, '\0'));
  EXPECT_LT(bomb.size(), 10'000U);
  EXPECT_EQ(status_of(decode_body(ContentCoding::zstd, bomb, 1 << 20)), 413);
  EXPECT_EQ(status_of(decode_body(ContentCoding::gzip, gzip(std::string(64 << 20, '\0'), 16 + MAX_WBITS), 1 << 20)),
            413);
}

TEST(Multipart, BoundaryFromTheContentType) {
  EXPECT_EQ(form_data_boundary("multipart/form-data; boundary=abc"), "abc");
  EXPECT_EQ(form_data_boundary("Multipart/Form-Data; boundary=\"a b:c\""), "a b:c");
  EXPECT_EQ(form_data_boundary("multipart/form-data"), "");
  EXPECT_EQ(form_data_boundary("multipart/form-data; boundary=" + std::string(71, 'a')), "");
  EXPECT_EQ(form_data_boundary("multipart/form-data; boundary=a; boundary=b"), "");
  EXPECT_EQ(form_data_boundary("application/json"), std::nullopt);
}

TEST(Multipart, PartsAsTheSdkWritesThem) {
  // typesafe_sdk._core.multipart.encode_multipart's layout.
  const std::string body =
      "--b0\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\r\n"
      "--b0\r\nContent-Disposition: form-data; name=\"asset-0\"; filename=\"asset-0\"\r\nContent-Type: "
      "image/png\r\n\r\n"
      "\x89PNG\r\n--b\r\n\r\n--b0--\r\n";
  auto parts = parse_form_data(body, "b0");
  ASSERT_TRUE(parts) << parts.error().message;
  ASSERT_EQ(parts->size(), 2U);
  EXPECT_EQ((*parts)[0].name, "request");
  EXPECT_EQ((*parts)[0].content_type, "application/json");
  EXPECT_EQ((*parts)[0].content, "{\"a\":1}");
  EXPECT_EQ((*parts)[1].name, "asset-0");
  EXPECT_EQ((*parts)[1].filename, "asset-0");
  EXPECT_EQ((*parts)[1].content, "\x89PNG\r\n--b\r\n");
}

TEST(Multipart, TheRequestPartAndTheUploads) {
  const std::string asset = "--b\r\nContent-Disposition: form-data; name=\"asset-0\"\r\nContent-Type: image/png\r\n\r\nPNG\r\n";
  const std::string json = "--b\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n{}\r\n";
  auto form = split_form_request(json + asset + "--b--", "b");
  ASSERT_TRUE(form) << form.error().message;
  EXPECT_EQ(form->json, "{}");
  ASSERT_EQ(form->uploads.size(), 1U);
  EXPECT_EQ(form->uploads[0].name, "asset-0");
  EXPECT_EQ(form->uploads[0].content_type, "image/png");
  EXPECT_EQ(form->uploads[0].bytes, "PNG");
  EXPECT_EQ(split_form_request(asset + "--b--", "b").error().code, api::ErrorCode::invalid_multipart);
  EXPECT_EQ(split_form_request(json + json + "--b--", "b").error().code, api::ErrorCode::invalid_multipart);
  const std::string text_request =
      "--b\r\nContent-Disposition: form-data; name=\"request\"\r\nContent-Type: text/plain\r\n\r\n{}\r\n--b--";
  EXPECT_EQ(split_form_request(text_request, "b").error().code, api::ErrorCode::unsupported_media_type);
}

TEST(Multipart, MalformedBodiesAreRefused) {
  const std::string part = "--b\r\nContent-Disposition: form-data; name=\"request\"\r\n\r\n{}\r\n";
  EXPECT_TRUE(parse_form_data(part + "--b--", "b"));
  EXPECT_TRUE(parse_form_data("preamble\r\n" + part + "--b--\r\nepilogue", "b"));
  for (const std::string& bad :
       {part, part + "--b", part + "--bx--", std::string("--b--"), std::string(""),
        std::string("--b\r\nContent-Type: text/plain\r\n\r\nx\r\n--b--"),
        std::string("--b\r\nContent-Disposition: attachment; name=\"x\"\r\n\r\nx\r\n--b--"),
        std::string("--b\r\nContent-Disposition: form-data\r\n\r\nx\r\n--b--"),
        std::string("--b\r\nno colon\r\n\r\nx\r\n--b--"), std::string("--b\r\n\r\nx\r\n--b--")}) {
    auto parts = parse_form_data(bad, "b");
    ASSERT_FALSE(parts) << bad;
    EXPECT_EQ(parts.error().code, api::ErrorCode::invalid_multipart) << bad;
  }
}

}  // namespace
}  // namespace s1::server
