#include "text/jinja_lexer.h"

#include <array>
#include <cstdio>

#include "text/unicode.h"
#include "text/utf8.h"

namespace s1::text::jinja {
namespace {

// Python's str.splitlines boundaries; \r\n counts as one.
size_t line_break_length(std::string_view text, size_t at) {
  const unsigned char c = static_cast<unsigned char>(text[at]);
  if (c == '\r') return at + 1 < text.size() && text[at + 1] == '\n' ? 2 : 1;
  if (c == '\n' || c == 0x0b || c == 0x0c || c == 0x1c || c == 0x1d || c == 0x1e) return 1;
  if (c == 0xc2 && at + 1 < text.size() && static_cast<unsigned char>(text[at + 1]) == 0x85) return 2;
  if (c == 0xe2 && at + 2 < text.size() && static_cast<unsigned char>(text[at + 1]) == 0x80 &&
      (static_cast<unsigned char>(text[at + 2]) == 0xa8 || static_cast<unsigned char>(text[at + 2]) == 0xa9)) {
    return 3;
  }
  return 0;
}

std::string normalise_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t at = 0; at < source.size();) {
    if (const size_t length = line_break_length(source, at); length > 0) {
      if (at + length == source.size()) break;  // splitlines drops the final line break
      out += '\n';
      at += length;
    } else {
      out += source[at++];
    }
  }
  return out;
}

// Python's \s for str patterns (and str.isspace): the characters rstrip() and `-` remove.
size_t whitespace_length(std::string_view text, size_t at) {
  const DecodedChar decoded = decode_utf8(text, at);
  return unicode::is_python_space(decoded.code_point) ? decoded.length : 0;
}

std::string_view rstrip_whitespace(std::string_view text) {
  size_t end = text.size();
  // Step back over whole characters: find the start of the last character each time.
  while (end > 0) {
    size_t start = end - 1;
    while (start > 0 && (static_cast<unsigned char>(text[start]) & 0xc0) == 0x80) --start;
    if (whitespace_length(text, start) != end - start) break;
    end = start;
  }
  return text.substr(0, end);
}

size_t skip_whitespace(std::string_view text, size_t at) {
  while (at < text.size()) {
    const size_t length = whitespace_length(text, at);
    if (length == 0) break;
    at += length;
  }
  return at;
}

bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// A string literal's body as Jinja reads it: Python's unicode-escape decoding.
std::string unescape(std::string_view body, int line) {
  std::string out;
  for (size_t at = 0; at < body.size(); ++at) {
    if (body[at] != '\\') {
      out += body[at];
      continue;
    }
    if (++at == body.size()) throw SyntaxError(line, "a string literal ends in a backslash");
    const char c = body[at];
    switch (c) {
      case '\n':
        break;
      case '\\':
        out += '\\';
        break;
      case '\'':
        out += '\'';
        break;
      case '"':
        out += '"';
        break;
      case 'a':
        out += '\a';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'n':
        out += '\n';
        break;
      case 'r':
        out += '\r';
        break;
      case 't':
        out += '\t';
        break;
      case 'v':
        out += '\v';
        break;
      case 'x':
      case 'u':
      case 'U': {
        const size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
        char32_t code_point = 0;
        for (size_t i = 1; i <= digits; ++i) {
          const int digit = at + i < body.size() ? hex_value(body[at + i]) : -1;
          if (digit < 0) throw SyntaxError(line, std::string("truncated \\") + c + " escape in a string literal");
          code_point = code_point * 16 + static_cast<char32_t>(digit);
        }
        if (code_point > 0x10ffff || (code_point >= 0xd800 && code_point <= 0xdfff)) {
          throw SyntaxError(line, "a string literal escapes a code point UTF-8 cannot hold");
        }
        out += encode_utf8(code_point).view();
        at += digits;
        break;
      }
      case 'N':
        throw SyntaxError(line, "unsupported construct: \\N{...} escapes in string literals");
      default:
        if (c >= '0' && c <= '7') {
          char32_t code_point = 0;
          size_t used = 0;
          while (used < 3 && at + used < body.size() && body[at + used] >= '0' && body[at + used] <= '7') {
            code_point = code_point * 8 + static_cast<char32_t>(body[at + used] - '0');
            ++used;
          }
          out += encode_utf8(code_point).view();
          at += used - 1;
        } else if (static_cast<unsigned char>(c) >= 0x80) {
          // Jinja escapes non-ASCII characters (backslashreplace) before decoding, so a backslash
          // before one stays a backslash followed by the character's escape.
          const DecodedChar decoded = decode_utf8(body, at);
          char buffer[16];
          const char32_t cp = decoded.code_point;
          std::snprintf(buffer, sizeof(buffer),
                        cp <= 0xff     ? "\\x%02x"
                        : cp <= 0xffff ? "\\u%04x"
                                       : "\\U%08x",
                        static_cast<unsigned>(cp));
          out += '\\';
          out += buffer;
          at += decoded.length - 1;
        } else {
          out += '\\';
          out += c;
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string source) : source_(std::move(source)) {}

  std::vector<Token> run() {
    while (at_ < source_.size()) {
      const size_t open = find_tag(at_);
      std::string_view text = std::string_view(source_).substr(at_, open - at_);
      if (open == source_.size()) {
        emit_text(text);
        break;
      }
      const char kind = source_[open + 1];
      const char sign = open + 2 < source_.size() ? source_[open + 2] : '\0';
      if (sign == '-') {
        text = rstrip_whitespace(text);
      } else if (sign != '+' && kind != '{') {
        // lstrip_blocks: drop the spaces between the line's start and a block or comment tag.
        const size_t line_start = text.rfind('\n') == std::string_view::npos ? 0 : text.rfind('\n') + 1;
        if ((line_start > 0 || line_starting_) && skip_whitespace(text, line_start) == text.size()) {
          text = text.substr(0, line_start);
        }
      }
      emit_text(text);
      line_ += count_lines(source_, at_, open);
      at_ = open + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
      if (kind == '#') {
        comment();
      } else if (kind == '%' && raw_begins()) {
        raw();
      } else {
        tag(kind == '%');
      }
    }
    tokens_.push_back({Token::Kind::end, "", line_});
    return std::move(tokens_);
  }

 private:
  static int count_lines(const std::string& text, size_t from, size_t to) {
    int lines = 0;
    for (size_t i = from; i < to; ++i) lines += text[i] == '\n';
    return lines;
  }

  size_t find_tag(size_t from) const {
    for (size_t at = source_.find('{', from); at != std::string::npos; at = source_.find('{', at + 1)) {
      if (at + 1 < source_.size() && (source_[at + 1] == '%' || source_[at + 1] == '{' || source_[at + 1] == '#'))
        return at;
    }
    return source_.size();
  }

  void emit_text(std::string_view text) {
    if (!text.empty()) tokens_.push_back({Token::Kind::text, std::string(text), line_});
  }

  // After a tag's closing characters: `-` strips all whitespace, `+` none, and otherwise
  // trim_blocks drops one newline after a block or comment tag.
  void after_tag_end(char sign, bool trims_newline) {
    const size_t before = at_;
    if (sign == '-') {
      at_ = skip_whitespace(source_, at_);
    } else if (sign != '+' && trims_newline && at_ < source_.size() && source_[at_] == '\n') {
      ++at_;
    }
    line_starting_ = at_ > before && source_[at_ - 1] == '\n';
    line_ += count_lines(source_, before, at_);
  }

  void comment() {
    const int line = line_;
    const size_t close = source_.find("#}", at_);
    if (close == std::string::npos) throw SyntaxError(line, "missing end of comment tag");
    const char sign =
        close > at_ && (source_[close - 1] == '-' || source_[close - 1] == '+') ? source_[close - 1] : '\0';
    line_ += count_lines(source_, at_, close);
    at_ = close + 2;
    line_starting_ = false;
    after_tag_end(sign, true);
  }

  bool raw_begins() const {
    const size_t at = skip_whitespace(source_, at_);
    if (source_.compare(at, 3, "raw") != 0) return false;
    const size_t after = skip_whitespace(source_, at + 3);
    return source_.compare(after, 2, "%}") == 0 || source_.compare(after, 3, "-%}") == 0;
  }

  void raw() {
    const int line = line_;
    size_t at = skip_whitespace(source_, skip_whitespace(source_, at_) + 3);
    at += source_[at] == '-' ? 3 : 2;
    if (source_[at - 3] == '-') at = skip_whitespace(source_, at);
    // The first {% endraw %} (any whitespace control) ends the block.
    for (size_t open = source_.find("{%", at); open != std::string::npos; open = source_.find("{%", open + 1)) {
      size_t inner = open + 2;
      const char sign =
          inner < source_.size() && (source_[inner] == '-' || source_[inner] == '+') ? source_[inner] : '\0';
      if (sign != '\0') ++inner;
      inner = skip_whitespace(source_, inner);
      if (source_.compare(inner, 6, "endraw") != 0) continue;
      inner = skip_whitespace(source_, inner + 6);
      char end_sign = '\0';
      if (inner < source_.size() && (source_[inner] == '-' || source_[inner] == '+')) end_sign = source_[inner++];
      if (source_.compare(inner, 2, "%}") != 0) continue;
      std::string_view text = std::string_view(source_).substr(at, open - at);
      if (sign == '-') text = rstrip_whitespace(text);
      line_ += count_lines(source_, at_, open);
      emit_text(text);
      line_ += count_lines(source_, open, inner + 2);
      at_ = inner + 2;
      after_tag_end(end_sign, true);
      return;
    }
    throw SyntaxError(line, "missing end of raw directive");
  }

  void tag(bool block) {
    tokens_.push_back({block ? Token::Kind::block_begin : Token::Kind::variable_begin, "", line_});
    const char close = block ? '%' : '}';
    std::vector<char> brackets;
    while (true) {
      const size_t before = at_;
      at_ = skip_whitespace(source_, at_);
      line_ += count_lines(source_, before, at_);
      if (at_ >= source_.size())
        throw SyntaxError(line_, std::string("unexpected end of template, expected '") + (block ? "%}" : "}}") + "'");
      if (brackets.empty()) {
        const char sign = source_[at_] == '-' || source_[at_] == '+' ? source_[at_] : '\0';
        const size_t end_at = at_ + (sign != '\0' ? 1 : 0);
        if (source_.compare(end_at, 2, std::string(1, close) + "}") == 0 && (block || sign != '+')) {
          tokens_.push_back({block ? Token::Kind::block_end : Token::Kind::variable_end, "", line_});
          at_ = end_at + 2;
          after_tag_end(sign, block);
          return;
        }
      }
      const char c = source_[at_];
      if (is_name_start(c)) {
        size_t end = at_ + 1;
        while (end < source_.size() && (is_name_start(source_[end]) || is_digit(source_[end]))) ++end;
        tokens_.push_back({Token::Kind::name, source_.substr(at_, end - at_), line_});
        at_ = end;
      } else if (is_digit(c)) {
        number();
      } else if (c == '\'' || c == '"') {
        string_literal(c);
      } else {
        static constexpr std::array<std::string_view, 26> operators = {
            "//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~", "[",
            "]",  "(",  ")",  "{",  "}",  ">",  "<", "=", ".", ":", "|", ",", ";"};
        std::string_view found;
        for (const std::string_view op : operators) {
          if (source_.compare(at_, op.size(), op) == 0) {
            found = op;
            break;
          }
        }
        if (found.empty()) throw SyntaxError(line_, std::string("unexpected char '") + c + "'");
        if (found == "(" || found == "[" || found == "{") {
          brackets.push_back(found == "(" ? ')' : found == "[" ? ']' : '}');
        } else if (found == ")" || found == "]" || found == "}") {
          if (brackets.empty()) throw SyntaxError(line_, "unexpected '" + std::string(found) + "'");
          if (brackets.back() != found[0]) {
            throw SyntaxError(line_, "unexpected '" + std::string(found) + "', expected '" + brackets.back() + "'");
          }
          brackets.pop_back();
        }
        tokens_.push_back({Token::Kind::op, std::string(found), line_});
        at_ += found.size();
      }
    }
  }

  void number() {
    const auto digits = [&](size_t at) {
      // \d+(_\d+)*
      while (at < source_.size() && is_digit(source_[at])) {
        ++at;
        if (at + 1 < source_.size() && source_[at] == '_' && is_digit(source_[at + 1])) ++at;
      }
      return at;
    };
    size_t end = digits(at_);
    bool floating = false;
    if (end + 1 < source_.size() && source_[end] == '.' && is_digit(source_[end + 1])) {
      end = digits(end + 1);
      floating = true;
    }
    if (end < source_.size() && (source_[end] == 'e' || source_[end] == 'E')) {
      size_t exponent = end + 1;
      if (exponent < source_.size() && (source_[exponent] == '+' || source_[exponent] == '-')) ++exponent;
      if (exponent < source_.size() && is_digit(source_[exponent])) {
        end = digits(exponent);
        floating = true;
      }
    }
    std::string text;
    for (size_t i = at_; i < end; ++i) {
      if (source_[i] != '_') text += source_[i];
    }
    tokens_.push_back({floating ? Token::Kind::floating : Token::Kind::integer, text, line_});
    at_ = end;
  }

  void string_literal(char quote) {
    const int line = line_;
    size_t end = at_ + 1;
    while (end < source_.size() && source_[end] != quote) end += source_[end] == '\\' ? 2 : 1;
    if (end >= source_.size()) throw SyntaxError(line, "unexpected char '" + std::string(1, quote) + "'");
    tokens_.push_back(
        {Token::Kind::string, unescape(std::string_view(source_).substr(at_ + 1, end - at_ - 1), line), line});
    line_ += count_lines(source_, at_, end);
    at_ = end + 1;
  }

  std::string source_;
  size_t at_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) { return Lexer(normalise_newlines(source)).run(); }

}  // namespace s1::text::jinja
