#include "api/plain_json_scan.h"

#include <array>
#include <cstddef>

namespace s1::api {
namespace {

// Every text this accepts, the strict parser accepts with the same top-level member: it accepts a
// narrower grammar (see the header) and leaves everything else to that parser, so a mistake here
// can only send a text down the slow path, never let an invalid one through. Recursion is bounded
// by the depth limit.
class PlainScanner {
 public:
  PlainScanner(std::string_view text, std::string_view member) : text_(text), member_(member) {}

  std::optional<StrictJsonScan> run() {
    skip_space();
    scan_.object = at('{');
    if (!value(0)) return std::nullopt;
    skip_space();
    if (position_ != text_.size()) return std::nullopt;
    return std::move(scan_);
  }

 private:
  static constexpr int max_depth = 32;  // half the strict limit: never near it

  bool at(char c) const { return position_ < text_.size() && text_[position_] == c; }
  bool digit() const { return position_ < text_.size() && text_[position_] >= '0' && text_[position_] <= '9'; }

  void skip_space() {
    while (position_ < text_.size()) {
      const char c = text_[position_];
      if (c != ' ' && c != '\n' && c != '\r' && c != '\t') return;
      ++position_;
    }
  }

  bool value(int depth) {
    if (position_ >= text_.size()) return false;
    switch (text_[position_]) {
      case '{': return depth < max_depth && object(depth);
      case '[': return depth < max_depth && array(depth);
      case '"': {
        bool escaped = false;
        std::string_view ignored;
        return string(ignored, escaped);
      }
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: return number();
    }
  }

  bool literal(std::string_view word) {
    if (text_.substr(position_, word.size()) != word) return false;
    position_ += word.size();
    return true;
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)? with at most 15 digits: an exact, finite double or int64.
  bool number() {
    if (at('-')) ++position_;
    size_t digits = 0;
    if (at('0')) {
      ++position_;
      digits = 1;
    } else {
      while (digit()) {
        ++position_;
        ++digits;
      }
      if (digits == 0) return false;
    }
    if (at('.')) {
      ++position_;
      size_t fraction = 0;
      while (digit()) {
        ++position_;
        ++fraction;
      }
      if (fraction == 0) return false;
      digits += fraction;
    }
    return digits <= 15 && !at('e') && !at('E');
  }

  // At the opening quote; `content` is the raw text between the quotes.
  bool string(std::string_view& content, bool& escaped) {
    const size_t start = ++position_;
    while (position_ < text_.size()) {
      const auto c = static_cast<unsigned char>(text_[position_]);
      if (c == '"') {
        content = text_.substr(start, position_ - start);
        ++position_;
        return true;
      }
      if (c < 0x20 || c > 0x7E) return false;
      if (c == '\\') {
        escaped = true;
        if (++position_ >= text_.size()) return false;
        switch (text_[position_]) {
          case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': break;
          default: return false;  // \u (surrogates, unescaped names) is the strict parser's
        }
      }
      ++position_;
    }
    return false;
  }

  bool object(int depth) {
    ++position_;
    const size_t first_name = name_count_;
    skip_space();
    if (at('}')) {
      ++position_;
      return true;
    }
    while (true) {
      if (!at('"')) return false;
      std::string_view name;
      bool escaped = false;
      if (!string(name, escaped) || escaped) return false;
      for (size_t i = first_name; i < name_count_; ++i) {
        if (names_[i] == name) return false;
      }
      if (name_count_ == names_.size()) return false;
      names_[name_count_++] = name;
      skip_space();
      if (!at(':')) return false;
      ++position_;
      skip_space();
      if ((depth == 0 && name == member_) ? !member_value() : !value(depth + 1)) return false;
      skip_space();
      if (at(',')) {
        ++position_;
        skip_space();
        continue;
      }
      if (!at('}')) return false;
      ++position_;
      name_count_ = first_name;
      return true;
    }
  }

  bool array(int depth) {
    ++position_;
    skip_space();
    if (at(']')) {
      ++position_;
      return true;
    }
    while (true) {
      if (!value(depth + 1)) return false;
      skip_space();
      if (at(',')) {
        ++position_;
        skip_space();
        continue;
      }
      if (!at(']')) return false;
      ++position_;
      return true;
    }
  }

  // The top-level member's value, kept as scan_strict_json keeps it.
  bool member_value() {
    if (at('"')) {
      std::string_view content;
      bool escaped = false;
      if (!string(content, escaped) || escaped) return false;
      scan_.member.kind = TopLevelMember::Kind::string;
      scan_.member.text = std::string(content);
      return true;
    }
    const bool null = at('n');
    if (!value(1)) return false;
    scan_.member.kind = null ? TopLevelMember::Kind::null : TopLevelMember::Kind::other;
    return true;
  }

  std::string_view text_;
  std::string_view member_;
  size_t position_ = 0;
  std::array<std::string_view, 128> names_{};  // the names of the objects open now, outermost first
  size_t name_count_ = 0;
  StrictJsonScan scan_;
};

}  // namespace

std::optional<StrictJsonScan> scan_plain_json(std::string_view text, std::string_view member) {
  return PlainScanner(text, member).run();
}

}  // namespace s1::api
