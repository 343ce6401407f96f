#include "api/media.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <map>

namespace s1::api {
namespace {

const Json* member(const Json& object, std::string_view name) {
  const auto found = object.find(name);
  return found == object.end() ? nullptr : &*found;
}

ApiError invalid(std::string message) { return ApiError::make(ErrorCode::invalid_media, std::move(message)); }
ApiError unsupported(std::string message) { return ApiError::make(ErrorCode::unsupported_media, std::move(message)); }

bool is_empty_media(const Json& value) {
  return value.is_null() || ((value.is_array() || value.is_object()) && value.empty());
}

// A client's name shown back in a message: at most 64 bytes, cut at a code point boundary.
std::string shown_name(std::string_view name) {
  constexpr size_t longest = 64;
  if (name.size() <= longest) return std::string(name);
  size_t cut = longest;
  while (cut > 0 && (static_cast<unsigned char>(name[cut]) & 0xC0) == 0x80) --cut;
  return std::string(name.substr(0, cut)) + "…";
}

std::optional<vision::ImageFormat> format_named(std::string_view name) {
  if (name == "png") return vision::ImageFormat::png;
  if (name == "jpeg" || name == "jpg") return vision::ImageFormat::jpeg;
  if (name == "webp") return vision::ImageFormat::webp;
  return std::nullopt;
}

// What a media type (a data URL's or a part's Content-Type) says: a format, none (a generic type
// such as application/octet-stream: the bytes decide), or a refusal.
Result<std::optional<vision::ImageFormat>> declared_by_media_type(std::string_view type, const std::string& label) {
  std::string lower(type.substr(0, type.find(';')));
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  while (!lower.empty() && lower.back() == ' ') lower.pop_back();
  if (lower.starts_with("video/") || lower.starts_with("audio/")) {
    return unsupported(label + " is " + lower + "; only images (PNG, JPEG, WebP) are served");
  }
  if (!lower.starts_with("image/")) return std::optional<vision::ImageFormat>{};
  if (auto format = format_named(lower.substr(6))) return std::optional(*format);
  return invalid(label + " is " + lower + "; the image formats served are PNG, JPEG and WebP");
}

// An image given as a URL: a base64 `data:` URL, never fetched from elsewhere.
Result<EncodedImage> image_from_url(std::string_view url, std::string label) {
  if (!url.starts_with("data:")) {
    return unsupported(label +
                       " is a remote URL; the server never fetches images: send the bytes as base64 or a "
                       "data: URL");
  }
  const size_t comma = url.find(',');
  if (comma == std::string_view::npos) return invalid(label + " is a data: URL without a comma before its data");
  std::string_view media_type = url.substr(5, comma - 5);
  constexpr std::string_view base64_suffix = ";base64";
  if (media_type.size() < base64_suffix.size() ||
      media_type.substr(media_type.size() - base64_suffix.size()) != base64_suffix) {
    return invalid(label + " is a data: URL that is not base64-encoded");
  }
  media_type.remove_suffix(base64_suffix.size());
  auto declared = declared_by_media_type(media_type, label);
  if (!declared) return declared.error();
  std::optional<std::string> bytes = decode_base64(url.substr(comma + 1));
  if (!bytes) return invalid(label + " is not valid base64");
  return EncodedImage{std::move(label), {}, {}, std::move(*bytes), declared.value()};
}

// A top-level `images` entry, as Ollama and llama.cpp take it: base64, or a data: URL.
Result<EncodedImage> image_from_text(std::string_view text, std::string label) {
  if (text.find(':') != std::string_view::npos) return image_from_url(text, std::move(label));
  std::optional<std::string> bytes = decode_base64(text);
  if (!bytes) return invalid(label + " is not valid base64");
  return EncodedImage{std::move(label), {}, {}, std::move(*bytes), std::nullopt};
}

// A `state` element {"type":"image_url","image_url":{"url":…}} (OpenAI chat, OpenRouter) or
// {"type":"input_image","image_url":…} (OpenAI responses); either may carry the URL as a string.
Result<EncodedImage> image_from_part(const Json& part, std::string label) {
  const Json* image_url = member(part, "image_url");
  if (image_url != nullptr && image_url->is_object()) image_url = member(*image_url, "url");
  if (image_url != nullptr && image_url->is_string()) {
    return image_from_url(image_url->get_ref<const std::string&>(), std::move(label));
  }
  if (member(part, "file_id") != nullptr) {
    return unsupported(label + " names a file id; this server has no files: send the image as a data: URL");
  }
  return invalid(label + " has no image_url holding a data: URL");
}

Result<EncodedImage> asset_image(const std::string& name, const Json& asset) {
  std::string label = "asset \"" + shown_name(name) + "\"";
  if (!asset.is_object()) return invalid(label + " must be an object");
  if (const Json* type = member(asset, "type"); type != nullptr && !type->is_null()) {
    if (type->is_string() && (*type == "video" || *type == "audio")) {
      return unsupported(label + " is " + type->get<std::string>() + "; only images are served");
    }
    if (!(type->is_string() && *type == "image")) return invalid(label + " has a type other than \"image\"");
  }
  EncodedImage image{label, name, {}, {}, std::nullopt};
  if (const Json* format = member(asset, "format"); format != nullptr && !format->is_null()) {
    image.declared = format->is_string() ? format_named(format->get_ref<const std::string&>()) : std::nullopt;
    if (!image.declared) return invalid(label + " has a format other than png, jpeg, jpg or webp");
  }
  // As TypeSafe documents it: with `part`, `data_base64` is ignored.
  if (const Json* part = member(asset, "part"); part != nullptr && !part->is_null()) {
    if (!part->is_string() || part->get_ref<const std::string&>().empty()) {
      return invalid(label + " has a part that is not a part name");
    }
    image.part = part->get<std::string>();
    return image;
  }
  const Json* data = member(asset, "data_base64");
  if (data == nullptr || data->is_null()) return invalid(label + " has neither data_base64 nor part");
  if (!data->is_string()) return invalid(label + " has a data_base64 that is not a string");
  std::optional<std::string> bytes = decode_base64(data->get_ref<const std::string&>());
  if (!bytes) return invalid(label + "'s data_base64 is not valid base64");
  image.bytes = std::move(*bytes);
  return image;
}

// The official SDK's reference to an image it sends (`str(image)`): "<image:" 32 hex digits ">".
constexpr std::string_view sdk_reference_start = "<image:";
constexpr size_t sdk_reference_length = 7 + 32 + 1;

bool is_sdk_reference(std::string_view text) {
  if (text.size() != sdk_reference_length || !text.starts_with(sdk_reference_start) || text.back() != '>') return false;
  return std::all_of(text.begin() + 7, text.end() - 1,
                     [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

// Finds the assets a request's text refers to, in order of first reference.
class ReferenceScan {
 public:
  explicit ReferenceScan(const std::vector<EncodedImage>& assets) : assets_(assets), referenced_(assets.size()) {}

  // Every string and member name inside `value`.
  std::optional<ApiError> scan(const Json& value) {
    if (value.is_string()) return scan_text(value.get_ref<const std::string&>());
    if (value.is_object()) {
      for (const auto& [key, inner] : value.items()) {
        if (auto error = scan_text(key)) return error;
        if (auto error = scan(inner)) return error;
      }
    } else if (value.is_array()) {
      for (const Json& inner : value) {
        if (auto error = scan(inner)) return error;
      }
    }
    return std::nullopt;
  }

  const std::vector<size_t>& order() const { return order_; }
  bool referenced(size_t asset) const { return referenced_[asset]; }

 private:
  std::optional<ApiError> scan_text(std::string_view text) {
    // Several new references in one string are taken in the order they appear there.
    std::vector<std::pair<size_t, size_t>> found;  // position, asset
    for (size_t asset = 0; asset < assets_.size(); ++asset) {
      if (referenced_[asset]) continue;
      const size_t at = text.find(assets_[asset].reference);
      if (at != std::string_view::npos) found.emplace_back(at, asset);
    }
    std::sort(found.begin(), found.end());
    for (const auto& [position, asset] : found) {
      referenced_[asset] = true;
      order_.push_back(asset);
    }
    for (size_t at = text.find(sdk_reference_start); at != std::string_view::npos;
         at = text.find(sdk_reference_start, at + 1)) {
      const std::string_view candidate = text.substr(at, sdk_reference_length);
      if (!is_sdk_reference(candidate)) continue;
      const bool known = std::any_of(assets_.begin(), assets_.end(), [&](const EncodedImage& asset) {
        return asset.reference.find(candidate) != std::string::npos;
      });
      if (!known) return invalid("The request refers to image " + std::string(candidate) + ", which is not in assets");
    }
    return std::nullopt;
  }

  const std::vector<EncodedImage>& assets_;
  std::vector<bool> referenced_;
  std::vector<size_t> order_;
};

bool is_image_part(const Json& element) {
  if (!element.is_object()) return false;
  const Json* type = member(element, "type");
  return type != nullptr && type->is_string() && (*type == "image_url" || *type == "input_image");
}

}  // namespace

std::optional<std::string> decode_base64(std::string_view text) {
  static constexpr std::array<int8_t, 256> values = [] {
    std::array<int8_t, 256> table{};
    table.fill(-1);
    constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    for (size_t i = 0; i < alphabet.size(); ++i)
      table[static_cast<unsigned char>(alphabet[i])] = static_cast<int8_t>(i);
    return table;
  }();
  std::string out;
  out.reserve(text.size() / 4 * 3 + 3);
  uint32_t accumulator = 0;
  int bits = 0;
  size_t digits = 0;
  size_t padding = 0;
  for (const char c : text) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '=') {
      ++padding;
      continue;
    }
    const int8_t value = values[static_cast<unsigned char>(c)];
    if (value < 0 || padding > 0) return std::nullopt;  // a foreign character, or data after padding
    accumulator = (accumulator << 6) | static_cast<uint32_t>(value);
    bits += 6;
    ++digits;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((accumulator >> bits) & 0xFF));
    }
  }
  const size_t tail = digits % 4;
  if (tail == 1) return std::nullopt;
  if (padding > 0 && (tail == 0 || padding != 4 - tail)) return std::nullopt;
  // The bits a short final group leaves over must be zero, as RFC 4648 §3.5 canonical encoders write.
  if ((accumulator & ((1u << bits) - 1)) != 0) return std::nullopt;
  return out;
}

Result<SystemOneMedia> collect_system_one_media(const Json& body) {
  if (const Json* video = member(body, "video"); video != nullptr && !is_empty_media(*video)) {
    return unsupported("Video is not supported; send still images");
  }
  std::vector<EncodedImage> media;
  if (const Json* images = member(body, "images"); images != nullptr && !is_empty_media(*images)) {
    if (!images->is_array()) return invalid("images must be an array of base64 strings or data: URLs");
    for (size_t index = 0; index < images->size(); ++index) {
      std::string label = "images[" + std::to_string(index) + "]";
      const Json& entry = (*images)[index];
      if (!entry.is_string()) return invalid(label + " must be a base64 string or a data: URL");
      auto image = image_from_text(entry.get_ref<const std::string&>(), std::move(label));
      if (!image) return image.error();
      media.push_back(std::move(image.value()));
    }
  }

  std::vector<EncodedImage> assets;
  if (const Json* given = member(body, "assets"); given != nullptr && !is_empty_media(*given)) {
    if (!given->is_object()) return invalid("assets must be an object of name → asset");
    for (const auto& [name, asset] : given->items()) {
      if (name.empty()) return invalid("An asset's name must not be empty");
      auto image = asset_image(name, asset);
      if (!image) return image.error();
      assets.push_back(std::move(image.value()));
    }
  }

  ReferenceScan references(assets);
  Json state = body.at("state");
  std::vector<EncodedImage> state_parts;
  std::vector<size_t> part_positions;
  if (state.is_array()) {
    for (size_t index = 0; index < state.size(); ++index) {
      if (!is_image_part(state[index])) {
        if (auto error = references.scan(state[index])) return std::move(*error);
        continue;
      }
      auto image = image_from_part(state[index], "state[" + std::to_string(index) + "]");
      if (!image) return image.error();
      state_parts.push_back(std::move(image.value()));
      part_positions.push_back(index);
    }
  } else if (auto error = references.scan(state)) {
    return std::move(*error);
  }
  for (const auto& [key, question] : body.at("questions").items()) {
    for (const char* field : {"instructions", "criteria"}) {
      if (const Json* value = member(question, field)) {
        if (auto error = references.scan(*value)) return std::move(*error);
      }
    }
  }
  for (size_t asset = 0; asset < assets.size(); ++asset) {
    if (!references.referenced(asset)) {
      return invalid(assets[asset].label + " is not referenced from the state, an instruction or a criterion");
    }
  }
  for (const size_t asset : references.order()) media.push_back(std::move(assets[asset]));
  for (size_t part = 0; part < state_parts.size(); ++part) {
    state[part_positions[part]] = Json{{"type", "image"}, {"index", media.size()}};
    media.push_back(std::move(state_parts[part]));
  }
  return SystemOneMedia{std::move(media), std::move(state)};
}

Result<EncodedImage> decisions_input_image(const Json& part, const Location& location) {
  return image_from_part(part, openai_param(location));
}

Result<std::vector<EncodedImage>> attach_uploads(std::vector<EncodedImage> media, std::vector<UploadedPart> uploads) {
  std::map<std::string, size_t, std::less<>> by_name;
  for (size_t index = 0; index < uploads.size(); ++index) {
    if (!by_name.emplace(uploads[index].name, index).second) {
      return invalid("Two multipart parts are named \"" + shown_name(uploads[index].name) + "\"");
    }
  }
  std::vector<bool> claimed(uploads.size());
  for (EncodedImage& image : media) {
    if (image.part.empty()) continue;
    const auto found = by_name.find(image.part);
    if (found == by_name.end()) {
      return invalid(image.label + " names part \"" + shown_name(image.part) + "\", which the request does not have");
    }
    if (claimed[found->second]) {
      return invalid("Multipart part \"" + shown_name(image.part) + "\" is claimed by more than one asset");
    }
    claimed[found->second] = true;
    UploadedPart& upload = uploads[found->second];
    auto declared = declared_by_media_type(upload.content_type, image.label);
    if (!declared) return declared.error();
    if (declared.value() && image.declared && *declared.value() != *image.declared) {
      return invalid(image.label + "'s format and its part's Content-Type disagree");
    }
    if (!image.declared) image.declared = declared.value();
    image.bytes = std::move(upload.bytes);
    image.part.clear();
  }
  for (size_t index = 0; index < uploads.size(); ++index) {
    if (!claimed[index]) {
      return invalid("Multipart part \"" + shown_name(uploads[index].name) + "\" is not claimed by any asset");
    }
  }
  return media;
}

Result<std::vector<RequestImage>> decode_request_images(const std::vector<EncodedImage>& media,
                                                        const MediaLimits& limits) {
  if (media.size() > limits.max_images) {
    return invalid("The request has " + std::to_string(media.size()) + " images; at most " +
                   std::to_string(limits.max_images) + " are taken per request");
  }
  std::vector<RequestImage> images;
  images.reserve(media.size());
  for (const EncodedImage& encoded : media) {
    if (!encoded.part.empty()) {
      return invalid(encoded.label + " names part \"" + shown_name(encoded.part) +
                     "\", but the request is not multipart");
    }
    if (encoded.bytes.size() > limits.max_image_bytes) {
      return invalid(encoded.label + " is invalid: it is " + std::to_string(encoded.bytes.size()) +
                     " bytes, over the limit of " + std::to_string(limits.max_image_bytes) + " bytes per image");
    }
    const std::optional<vision::ImageFormat> format = vision::sniff_image_format(encoded.bytes);
    if (format && encoded.declared && *format != *encoded.declared) {
      return invalid(encoded.label + " is invalid: it is declared " +
                     std::string(vision::image_format_name(*encoded.declared)) + " but its bytes are " +
                     std::string(vision::image_format_name(*format)));
    }
    auto decoded = vision::decode_image(encoded.bytes, limits.max_image_pixels);
    if (auto* failure = std::get_if<vision::DecodeFailure>(&decoded)) {
      ApiError error = invalid(encoded.label + " is invalid: " + failure->reason);
      error.openai_param = encoded.label;  // /v1/decisions labels are its params
      return error;
    }
    images.push_back(RequestImage{encoded.label, encoded.reference, std::move(std::get<vision::Image>(decoded))});
  }
  return images;
}

}  // namespace s1::api
