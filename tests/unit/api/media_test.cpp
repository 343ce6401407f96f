// Media intake (contract §11.3): every form, every limit, every bad-media case, with the committed
// image fixtures (tests/fixtures/images) as the files sent.

#include "api/media.h"

#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "api/openai_decisions.h"
#include "api/request.h"
#include "support/fixtures.h"

namespace s1::api {
namespace {

std::string fixture(std::string_view name) {
  std::ifstream in(test::fixture_dir("images") / name, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

std::string base64(std::string_view bytes) {
  constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = static_cast<uint8_t>(bytes[i]) << 16;
    if (i + 1 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 1]) << 8;
    if (i + 2 < bytes.size()) group |= static_cast<uint8_t>(bytes[i + 2]);
    out += alphabet[(group >> 18) & 63];
    out += alphabet[(group >> 12) & 63];
    out += i + 1 < bytes.size() ? alphabet[(group >> 6) & 63] : '=';
    out += i + 2 < bytes.size() ? alphabet[group & 63] : '=';
  }
  return out;
}

const std::string png = fixture("rgb8.png");    // 13x7
const std::string jpeg = fixture("exif6.jpg");  // 13x7 stored, 7x13 turned
const std::string webp = fixture("lossy.webp");

Result<DecisionRequest> parse(const Json& body) { return validate_system_one_request(body, RequestLimits{64, true}); }

Json request_with(Json extra, Json state = "Look at photo") {
  Json body = {{"state", std::move(state)}, {"questions", {{"q", {{"type", "noul"}, {"instructions", "Red?"}}}}}};
  for (auto& [key, value] : extra.items()) body[key] = value;
  return body;
}

// "ok:<labels>" or "<error_type>: <message>".
std::string collected(const Json& body) {
  auto request = parse(body);
  if (!request) return std::string(error_type(request.error().code)) + ": " + request.error().message;
  std::string out = "ok:";
  for (const EncodedImage& image : request->media) out += "[" + image.label + "]";
  return out;
}

TEST(Base64, DecodesStandardAlphabetWithOptionalPadding) {
  EXPECT_EQ(decode_base64("aGVsbG8="), "hello");
  EXPECT_EQ(decode_base64("aGVsbG8"), "hello");
  EXPECT_EQ(decode_base64("aGVs\nbG8=\r\n"), "hello");
  EXPECT_EQ(decode_base64(""), "");
  EXPECT_EQ(decode_base64("+/+/"), std::string("\xfb\xff\xbf"));
}

TEST(Base64, RefusesAnythingElse) {
  for (std::string_view bad : {"aGVsbG8*", "aGVsb", "aGVsbG8==", "aG=VsbG8", "aGVsbG9=", "aGVsbG8=x", "a-_b"}) {
    EXPECT_EQ(decode_base64(bad), std::nullopt) << bad;
  }
}

TEST(MediaIntake, EveryFormInItsOrder) {
  const Json body = request_with(
      {{"images", {base64(webp), "data:image/png;base64," + base64(png)}},
       {"assets",
        {{"<image:0123456789abcdef0123456789abcdef>",
          {{"type", "image"}, {"format", "jpeg"}, {"data_base64", base64(jpeg)}}},
         {"photo", {{"type", "image"}, {"format", "png"}, {"data_base64", base64(png)}}}}}},
      Json::array({"Here is photo and then <image:0123456789abcdef0123456789abcdef>",
                   {{"type", "image_url"}, {"image_url", {{"url", "data:image/webp;base64," + base64(webp)}}}},
                   {{"type", "input_image"}, {"image_url", "data:image/jpeg;base64," + base64(jpeg)}}}));
  EXPECT_EQ(collected(body),
            "ok:[images[0]][images[1]][asset \"photo\"][asset \"<image:0123456789abcdef0123456789abcdef>\"]"
            "[state[1]][state[2]]");
  auto request = parse(body);
  ASSERT_TRUE(request);
  auto images = decode_request_images(request->media, MediaLimits{});
  ASSERT_TRUE(images) << images.error().message;
  ASSERT_EQ(images->size(), 6u);
  EXPECT_EQ((*images)[2].reference, "photo");
  EXPECT_EQ((*images)[2].image.width, 13);
  EXPECT_EQ((*images)[3].image.width, 7);  // EXIF orientation 6
  EXPECT_EQ((*images)[3].image.height, 13);
  // The parts' data leaves the state; their place stays.
  EXPECT_EQ(request->state[1], Json::parse(R"({"type":"image","index":4})"));
  EXPECT_EQ(request->state[2], Json::parse(R"({"type":"image","index":5})"));
}

TEST(MediaIntake, AssetsAreReferencedFromInstructionsAndCriteriaToo) {
  Json body = request_with({{"assets",
                             {{"a1", {{"format", "png"}, {"data_base64", base64(png)}}},
                              {"a2", {{"format", "png"}, {"data_base64", base64(png)}}}}}},
                           "No image here");
  body["questions"] = {
      {"q1", {{"type", "choice"}, {"instructions", "Which?"}, {"criteria", {{"a2", nullptr}, {"x", "a1"}}}}},
      {"q2", {{"type", "noul"}, {"instructions", {{"see", "a1"}}}}}};
  EXPECT_EQ(collected(body), "ok:[asset \"a2\"][asset \"a1\"]");
}

TEST(MediaIntake, AssetMistakesAreInvalidMedia) {
  const Json good = {{"type", "image"}, {"format", "png"}, {"data_base64", base64(png)}};
  EXPECT_EQ(collected(request_with({{"assets", {{"elsewhere", good}}}})),
            "invalid_media: asset \"elsewhere\" is not referenced from the state, an instruction or a criterion");
  EXPECT_EQ(
      collected(request_with({{"assets", {{"photo", good}}}}, "photo <image:00000000000000000000000000000000>")),
      "invalid_media: The request refers to image <image:00000000000000000000000000000000>, which is not in assets");
  EXPECT_EQ(collected(request_with({{"assets", {{"photo", {{"format", "gif"}, {"data_base64", "R0lG"}}}}}})),
            "invalid_media: asset \"photo\" has a format other than png, jpeg, jpg or webp");
  EXPECT_EQ(collected(request_with({{"assets", {{"photo", {{"format", "png"}}}}}})),
            "invalid_media: asset \"photo\" has neither data_base64 nor part");
  EXPECT_EQ(collected(request_with({{"assets", {{"photo", {{"data_base64", "not base64!"}}}}}})),
            "invalid_media: asset \"photo\"'s data_base64 is not valid base64");
  EXPECT_EQ(collected(request_with({{"assets", {{"photo", "x"}}}})),
            "invalid_media: asset \"photo\" must be an object");
  EXPECT_EQ(collected(request_with({{"assets", {{"photo", {{"type", "video"}, {"data_base64", "AAAA"}}}}}})),
            "unsupported_media: asset \"photo\" is video; only images are served");
  EXPECT_EQ(collected(request_with({{"assets", "photo"}})), "invalid_media: assets must be an object of name → asset");
}

TEST(MediaIntake, EmptyFormsAreIgnoredAsInV1) {
  EXPECT_EQ(collected(request_with({{"assets", Json::object()}, {"images", Json::array()}, {"video", nullptr}})),
            "ok:");
  EXPECT_EQ(collected(request_with({{"assets", nullptr}, {"images", nullptr}, {"video", Json::array()}})), "ok:");
}

TEST(MediaIntake, RemoteUrlsVideoAndAudioAreUnsupported) {
  EXPECT_EQ(collected(request_with({{"images", {"https://example.com/a.png"}}})).substr(0, 33),
            "unsupported_media: images[0] is a");
  EXPECT_EQ(collected(request_with(
                          {}, Json::array({{{"type", "image_url"}, {"image_url", {{"url", "file:///etc/passwd"}}}}})))
                .substr(0, 33),
            "unsupported_media: state[0] is a ");
  EXPECT_EQ(collected(request_with({}, Json::array({{{"type", "input_image"}, {"file_id", "file-1"}}}))).substr(0, 38),
            "unsupported_media: state[0] names a fi");
  EXPECT_EQ(collected(request_with({{"video", "AAAA"}})),
            "unsupported_media: Video is not supported; send still images");
  EXPECT_EQ(collected(request_with({{"images", {"data:audio/wav;base64,AAAA"}}})),
            "unsupported_media: images[0] is audio/wav; only images (PNG, JPEG, WebP) are served");
}

TEST(MediaIntake, MalformedImagesFormsAreInvalidMedia) {
  EXPECT_EQ(collected(request_with({{"images", "abc"}})),
            "invalid_media: images must be an array of base64 strings or data: URLs");
  EXPECT_EQ(collected(request_with({{"images", {1}}})),
            "invalid_media: images[0] must be a base64 string or a data: URL");
  EXPECT_EQ(collected(request_with({{"images", {"data:image/png,abc"}}})),
            "invalid_media: images[0] is a data: URL that is not base64-encoded");
  EXPECT_EQ(collected(request_with({{"images", {"data:image/png;base64"}}})),
            "invalid_media: images[0] is a data: URL without a comma before its data");
  EXPECT_EQ(collected(request_with({{"images", {"data:image/gif;base64,R0lG"}}})),
            "invalid_media: images[0] is image/gif; the image formats served are PNG, JPEG and WebP");
  EXPECT_EQ(collected(request_with({}, Json::array({{{"type", "image_url"}, {"image_url", 5}}}))),
            "invalid_media: state[0] has no image_url holding a data: URL");
}

TEST(MediaIntake, SchemaProblemsComeFirst) {
  Json body = request_with({{"images", {"https://example.com/a.png"}}});
  body["state"] = "";
  auto request = parse(body);
  ASSERT_FALSE(request);
  EXPECT_EQ(request.error().code, ErrorCode::validation);
}

TEST(MediaUploads, PartsGoToTheAssetsThatNameThem) {
  const Json body = request_with({{"assets", {{"photo", {{"type", "image"}, {"part", "asset-0"}}}}}});
  auto request = parse(body);
  ASSERT_TRUE(request);
  auto attached = attach_uploads(request->media, {UploadedPart{"asset-0", "image/png", png}});
  ASSERT_TRUE(attached) << attached.error().message;
  ASSERT_EQ(attached->size(), 1u);
  EXPECT_EQ((*attached)[0].bytes, png);
  EXPECT_EQ((*attached)[0].declared, vision::ImageFormat::png);
  EXPECT_TRUE(attach_uploads(request->media, {UploadedPart{"asset-0", "application/octet-stream", png}}));

  auto message = [&](std::vector<UploadedPart> uploads) {
    auto result = attach_uploads(request->media, std::move(uploads));
    return result ? std::string("ok") : std::string(error_type(result.error().code)) + ": " + result.error().message;
  };
  EXPECT_EQ(message({}), "invalid_media: asset \"photo\" names part \"asset-0\", which the request does not have");
  EXPECT_EQ(message({UploadedPart{"asset-0", "", png}, UploadedPart{"asset-1", "", png}}),
            "invalid_media: Multipart part \"asset-1\" is not claimed by any asset");
  EXPECT_EQ(message({UploadedPart{"asset-0", "", png}, UploadedPart{"asset-0", "", png}}),
            "invalid_media: Two multipart parts are named \"asset-0\"");
  EXPECT_EQ(message({UploadedPart{"asset-0", "video/mp4", png}}),
            "unsupported_media: asset \"photo\" is video/mp4; only images (PNG, JPEG, WebP) are served");

  const Json twice =
      request_with({{"assets", {{"photo", {{"part", "asset-0"}}}, {"look", {{"part", "asset-0"}}}}}}, "photo look");
  auto both = parse(twice);
  ASSERT_TRUE(both);
  auto claimed_twice = attach_uploads(both->media, {UploadedPart{"asset-0", "", png}});
  ASSERT_FALSE(claimed_twice);
  EXPECT_EQ(claimed_twice.error().message, "Multipart part \"asset-0\" is claimed by more than one asset");

  const Json declared_jpeg = request_with({{"assets", {{"photo", {{"format", "jpeg"}, {"part", "asset-0"}}}}}});
  auto mismatch = attach_uploads(parse(declared_jpeg)->media, {UploadedPart{"asset-0", "image/png", png}});
  ASSERT_FALSE(mismatch);
  EXPECT_EQ(mismatch.error().message, "asset \"photo\"'s format and its part's Content-Type disagree");
}

std::vector<EncodedImage> one(std::string bytes, std::optional<vision::ImageFormat> declared = std::nullopt) {
  return {EncodedImage{"images[0]", {}, {}, std::move(bytes), declared}};
}

std::string decoded(const std::vector<EncodedImage>& media, const MediaLimits& limits = {}) {
  auto images = decode_request_images(media, limits);
  if (!images) return std::string(error_type(images.error().code)) + ": " + images.error().message;
  std::string out = "ok";
  for (const RequestImage& image : images.value()) {
    out += ":" + std::to_string(image.image.width) + "x" + std::to_string(image.image.height);
  }
  return out;
}

TEST(MediaDecoding, LimitsPerRequestAndPerImage) {
  std::vector<EncodedImage> three = one(png);
  three.push_back(three[0]);
  three.push_back(three[0]);
  EXPECT_EQ(decoded(three), "ok:13x7:13x7:13x7");
  EXPECT_EQ(decoded(three, MediaLimits{2, 1 << 20, 1'000'000}),
            "invalid_media: The request has 3 images; at most 2 are taken per request");
  EXPECT_EQ(decoded(one(png), MediaLimits{8, png.size() - 1, 1'000'000}),
            "invalid_media: images[0] is invalid: it is " + std::to_string(png.size()) + " bytes, over the limit of " +
                std::to_string(png.size() - 1) + " bytes per image");
  EXPECT_EQ(decoded(one(png), MediaLimits{8, 1 << 20, 90}),
            "invalid_media: images[0] is invalid: it is 13x7 pixels, over the limit of 90 pixels per image");
  EXPECT_EQ(decoded(one(fixture("bomb.png"))),
            "invalid_media: images[0] is invalid: it is 100000x100000 pixels, over the limit of 20000000 pixels per "
            "image");
}

TEST(MediaDecoding, BadFilesNameTheImageAndTheReason) {
  EXPECT_EQ(decoded(one(png, vision::ImageFormat::jpeg)),
            "invalid_media: images[0] is invalid: it is declared jpeg but its bytes are png");
  EXPECT_EQ(decoded(one(fixture("not_image.gif"))),
            "invalid_media: images[0] is invalid: it is not a PNG, JPEG or WebP file");
  EXPECT_EQ(decoded(one(fixture("truncated.jpg"))), "invalid_media: images[0] is invalid: its JPEG data is truncated");
  EXPECT_EQ(decoded(one(fixture("corrupt.png"))).substr(0, 59),
            "invalid_media: images[0] is invalid: its PNG data is invali");
  EXPECT_EQ(decoded(one("")), "invalid_media: images[0] is invalid: it is not a PNG, JPEG or WebP file");
  EXPECT_EQ(decoded(one(png, vision::ImageFormat::png)), "ok:13x7");
}

TEST(DecisionsMedia, InputImagePartsAreCollectedInOrder) {
  const std::string url = "data:image/png;base64," + base64(png);
  const Json body = {
      {"input",
       {{{"role", "user"},
         {"content", {{{"type", "input_text"}, {"text", "See"}}, {{"type", "input_image"}, {"image_url", url}}}}}}},
      {"questions",
       {{{"type", "predicate"},
         {"instructions",
          {{{"type", "input_image"}, {"image_url", url}, {"detail", "auto"}},
           {{"type", "input_text"}, {"text", "Red?"}}}}}}}};
  auto request = validate_decisions_request(body, RequestLimits{64, true});
  ASSERT_TRUE(request) << request.error().message;
  ASSERT_EQ(request->pipeline.media.size(), 2u);
  EXPECT_EQ(request->pipeline.media[0].label, "input[0].content[1]");
  EXPECT_EQ(request->pipeline.media[1].label, "questions[0].instructions[0]");
  EXPECT_EQ(request->pipeline.state, "See");
}

TEST(DecisionsMedia, RemoteImagesFilesAndAudioAreRefusedWithTheirParam) {
  auto refused = [](std::string_view part) {
    const Json body = {{"input", {{{"role", "user"}, {"content", Json::array({Json::parse(part)})}}}},
                       {"questions", {{{"type", "predicate"}, {"instructions", "x"}}}}};
    auto request = validate_decisions_request(body, RequestLimits{64, true});
    return request ? std::string("ok")
                   : std::string(error_type(request.error().code)) + "@" + request.error().openai_param;
  };
  EXPECT_EQ(refused(R"({"type":"input_image","image_url":"https://example.com/a.png"})"),
            "unsupported_media@input[0].content[0]");
  EXPECT_EQ(refused(R"({"type":"input_image","file_id":"file-1"})"), "unsupported_media@input[0].content[0]");
  EXPECT_EQ(refused(R"({"type":"input_image","image_url":"data:image/png;base64,@@"})"),
            "invalid_media@input[0].content[0]");
  EXPECT_EQ(refused(R"({"type":"input_file","file_id":"file-1"})"), "unsupported_media@input[0].content[0]");
  EXPECT_EQ(refused(R"({"type":"input_audio","input_audio":{}})"), "unsupported_media@input[0].content[0]");
}

}  // namespace
}  // namespace s1::api
