#pragma once
// Media intake (contract §11.3): every form clients send images in — TypeSafe `assets` (inline
// base64 or multipart parts), top-level `images`, `image_url`/`input_image` parts in a `state`
// array, /v1/decisions `input_image` parts — gathered into one ordered list, then decoded within
// the limits of the server and the model.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/errors.h"
#include "api/json.h"
#include "vision/decode.h"
#include "vision/image.h"

namespace s1::api {

// An image as the request carries it, its form checked (step 7 of §4.4), not yet decoded.
struct EncodedImage {
  std::string label;      // names it in messages: `asset "photo"`, `images[0]`, `state[2]`, `input[0].content[1]`
  std::string reference;  // an asset's name, which the text refers to it by; empty for other forms
  std::string part;       // the multipart part holding its bytes, until attach_uploads fills them in
  std::string bytes;      // the file
  std::optional<vision::ImageFormat> declared;  // what `format`, a data URL or a part's Content-Type says
};

// A multipart part other than `request` (§11.1), by the name an asset's `part` uses.
struct UploadedPart {
  std::string name;
  std::string content_type;
  std::string bytes;
};

// A decoded image with where it came from.
struct RequestImage {
  std::string label;
  std::string reference;
  vision::Image image;
};

struct MediaLimits {
  size_t max_images = 8;                      // per request
  size_t max_image_bytes = 16 * 1024 * 1024;  // encoded, per image
  uint64_t max_image_pixels = 20'000'000;     // per image, read from the header before decoding
};

struct SystemOneMedia {
  std::vector<EncodedImage> images;
  // The request's state with each image part replaced by {"type":"image","index":i}, i its place in
  // `images`: where the image sits, without its data (a prompt never renders base64).
  Json state;
};

// The images of a System One body whose schema is valid, in order: `images` (shared by every
// question, as Ollama takes them), assets in order of their first reference (state, then each
// question's instructions and criteria), then the state array's image parts. 400 unsupported_media
// for video, audio or a remote URL; 400 invalid_media for a malformed form, an unreferenced asset or
// a reference to a missing one.
Result<SystemOneMedia> collect_system_one_media(const Json& body);

// One /v1/decisions `input_image` part (§11.2); `location` is where it sits, for its label.
Result<EncodedImage> decisions_input_image(const Json& part, const Location& location);

// Multipart parts given to the assets that name them: each part claimed by exactly one asset and
// each asset's part present, else 400 invalid_media.
Result<std::vector<EncodedImage>> attach_uploads(std::vector<EncodedImage> media, std::vector<UploadedPart> uploads);

// Decodes every image within `limits`: 400 invalid_media naming the image and the reason.
Result<std::vector<RequestImage>> decode_request_images(const std::vector<EncodedImage>& media,
                                                        const MediaLimits& limits);

// Standard base64 (RFC 4648 §4), ASCII whitespace skipped, padding optional; nullopt when invalid.
std::optional<std::string> decode_base64(std::string_view text);

}  // namespace s1::api
