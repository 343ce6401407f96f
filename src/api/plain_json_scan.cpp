#include "api/plain_json_scan.h"

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace s1::api {
namespace {

constexpr size_t failed = SIZE_MAX;  // a position: the text is not in the subset

// Every text this accepts, the strict parser accepts with the same top-level member: it accepts a
// narrower grammar (see the header) and leaves everything else to that parser, so a mistake here
// can only send a text down the slow path, never let an invalid one through.
//
// Why it is shaped so: on a short body the time went into the chain of dependent steps from one
// string's end to the next (load at the position, compare, find the first match, move on), so the
// bytes that stop a run of string content are found 64 at a time into bit masks, and the next one
// is a shift and a count of trailing zeros away; the masks also know which bytes a backslash
// escapes, so a long text full of \n and \" is no slower. The walk is iterative with its own
// stack of open containers, and keeps its position in a local.
class PlainScanner {
 public:
  PlainScanner(std::string_view text, std::string_view member)
      : data_(text.data()), size_(text.size()), member_(member), member_key_(name_key(member.data(), member.size(), false)) {}

  std::optional<StrictJsonScan> run() {
    const size_t start = skip_space(0);
    StrictJsonScan scan;
    scan.object = start < size_ && data_[start] == '{';
    if (!document(start)) return std::nullopt;
    scan.member.kind = member_kind_;
    if (member_kind_ == TopLevelMember::Kind::string) scan.member.text.assign(data_ + member_start_, member_size_);
    return scan;
  }

 private:
  static constexpr size_t max_depth = 32;  // half the strict limit: never near it
  static constexpr size_t max_open_names = 128;

  // A member name of an open object; `key` tells most different names apart without reading them.
  struct Name {
    const char* data;
    size_t size;
    uint64_t key;
  };

  bool at(size_t position, char c) const { return position < size_ && data_[position] == c; }
  // The byte at `position`, or NUL (which no rule here accepts) at the end of the text.
  char peek(size_t position) const { return position < size_ ? data_[position] : '\0'; }
  static bool digit(char c) { return c >= '0' && c <= '9'; }

  static bool space(char c) {
    constexpr uint64_t spaces = (uint64_t{1} << ' ') | (uint64_t{1} << '\n') | (uint64_t{1} << '\r') | (uint64_t{1} << '\t');
    const auto byte = static_cast<unsigned char>(c);
    return byte <= ' ' && ((spaces >> byte) & 1) != 0;
  }

  size_t skip_space(size_t position) const {
    while (position < size_ && space(data_[position])) ++position;
    return position;
  }

  // The walk keeps its state in locals (the position, the open containers, the open names): as
  // members they were reloaded from memory around every store into names_. Whitespace is looked
  // for only where the byte expected there is not found.
  bool document(size_t position) {
    size_t depth = 0;          // containers open now
    uint64_t objects = 0;      // bit d: the container at depth d is an object
    size_t open_names = 0;     // names_[0, open_names): the names of the objects open now
    bool member_next = false;  // the value at `position` is the top-level member's
    while (true) {
      // At a value, or at whitespace before one.
      const char c = peek(position);
      const bool member_value = member_next;
      if (member_value) {
        if (space(c)) {
          position = skip_space(position);
          continue;
        }
        member_next = false;
        member_kind_ = c == '"' ? TopLevelMember::Kind::string : c == 'n' ? TopLevelMember::Kind::null : TopLevelMember::Kind::other;
        member_start_ = position + 1;
      }
      if (c == '"' && !member_value) {
        position = string_end(position);  // the most common value, ahead of the switch
      } else {
        switch (c) {
          case ' ':
          case '\n':
          case '\r':
          case '\t':
            position = skip_space(position);
            continue;
          case '{':
          case '[': {
            const bool object = c == '{';
            if (depth == max_depth) return false;
            objects = object ? objects | (uint64_t{1} << depth) : objects & ~(uint64_t{1} << depth);
            first_names_[depth++] = open_names;
            position = skip_space(position + 1);
            if (at(position, object ? '}' : ']')) {
              ++position;
              open_names = first_names_[--depth];
              break;
            }
            if (object) {
              position = member_name(position, depth, open_names, member_next);
              if (position == failed) return false;
            }
            continue;
          }
          case '"':
            position = unescaped_string_end(position);  // the member's value, kept raw: no escapes
            if (position == failed) return false;
            member_size_ = position - 1 - member_start_;
            break;
          case 't': position = literal(position, "true"); break;
          case 'f': position = literal(position, "false"); break;
          case 'n': position = literal(position, "null"); break;
          default: position = number(position); break;
        }
      }
      if (position == failed) return false;
      // Closes containers until a comma leads to the next value.
      while (true) {
        if (depth == 0) return skip_space(position) == size_;
        const char next = peek(position);
        const bool in_object = (objects >> (depth - 1)) & 1;
        if (next == ',') {
          ++position;
          if (in_object) {
            position = member_name(position, depth, open_names, member_next);
            if (position == failed) return false;
          }
          break;
        }
        if (next == (in_object ? '}' : ']')) {
          ++position;
          open_names = first_names_[--depth];
        } else if (space(next)) {
          position = skip_space(position);
        } else {
          return false;
        }
      }
    }
  }

  size_t literal(size_t position, std::string_view word) const {
    if (size_ - position < word.size() || std::memcmp(data_ + position, word.data(), word.size()) != 0) return failed;
    return position + word.size();
  }

  // -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]{1,2})? with at most 15 digits before the exponent:
  // an int64, or a finite double far from overflow and underflow (|x| in [1e-114, 1e114) or 0).
  size_t number(size_t position) const {
    if (at(position, '-')) ++position;
    size_t digits = 0;
    if (at(position, '0')) {
      ++position;
      digits = 1;
    } else {
      while (position < size_ && digit(data_[position])) {
        ++position;
        ++digits;
      }
      if (digits == 0) return failed;
    }
    if (at(position, '.')) {
      ++position;
      size_t fraction = 0;
      while (position < size_ && digit(data_[position])) {
        ++position;
        ++fraction;
      }
      if (fraction == 0) return failed;
      digits += fraction;
    }
    if (digits > 15) return failed;
    if (at(position, 'e') || at(position, 'E')) {
      ++position;
      if (at(position, '+') || at(position, '-')) ++position;
      size_t exponent = 0;
      while (position < size_ && digit(data_[position])) {
        ++position;
        ++exponent;
      }
      if (exponent == 0 || exponent > 2) return failed;
    }
    return position;
  }

  // At the opening quote of a string value: the position after the closing one. Simple escapes
  // are no stops (the block masks know which bytes they escape), so a long text full of \n and \"
  // goes 64 bytes a step.
  size_t string_end(size_t position) {
    ++position;
    while (true) {
      position = next_stop(position, value_stops_);
      if (position >= size_) return failed;
      const auto c = static_cast<unsigned char>(data_[position]);
      if (c == '"') return position + 1;  // unescaped: escaped quotes are no stops
      if (((odd_escapes_ >> (position & 63)) & 1) != 0) {
        position = unicode_escape_end(position - 1);
      } else if (c >= 0x80) {
        position = utf8_sequence_end(position);
      } else {
        return failed;  // a control character
      }
      if (position == failed) return failed;
    }
  }

  // At the opening quote of a name or of the member's value, which must have no escape.
  size_t unescaped_string_end(size_t position) {
    ++position;
    while (true) {
      position = next_stop(position, name_stops_);
      if (position >= size_) return failed;
      const auto c = static_cast<unsigned char>(data_[position]);
      if (c == '"') return position + 1;
      if (c < 0x80) return failed;  // a backslash or a control character
      position = utf8_sequence_end(position);
      if (position == failed) return failed;
    }
  }

  // The first stop (a bit of `stops`, name_stops_ or value_stops_, for the block of the position)
  // at or after `position`; size_ or more when there is none.
  size_t next_stop(size_t position, const uint64_t& stops) {
    while (true) {
      const size_t block = position & ~size_t{63};
      if (block != mask_block_) {
        if (block >= size_) return size_;
        load_block(block);
      }
      const uint64_t ahead = stops >> (position & 63);
      if (ahead != 0) return position + static_cast<size_t>(std::countr_zero(ahead));
      position = block + 64;
    }
  }

  // Sets the stops for `block`, after the blocks loaded so far. Which bytes are escaped follows
  // from the backslashes before, in the blocks loaded: the walk loads every block that a string
  // touches, and a block it skips (whitespace, numbers) has no backslash, nor one escaping into
  // it, or the walk fails there. Out of line, as are the \u and UTF-8 checks: inlined, they made
  // every string's scan set up vector constants and save registers.
  [[gnu::noinline]] void load_block(size_t block) {
    const char* bytes = data_ + block;
    alignas(16) char padded[64];
    if (size_ - block < 64) {
      // Past the end of the text, bytes read as NUL, a control character: a string that runs off
      // the end stops there.
      std::memset(padded, 0, sizeof padded);
      std::memcpy(padded, bytes, size_ - block);
      bytes = padded;
    }
    uint64_t backslashes = 0;
    const uint64_t stops = stop_bytes(bytes, backslashes);
    mask_block_ = block;
    name_stops_ = stops;
    value_stops_ = stops;
    odd_escapes_ = 0;
    if (backslashes != 0 || escapes_next_block_) {
      // Backslashes and escaped quotes end no string value; escaped bytes other than a simple
      // escape's letter stop it.
      const uint64_t escaped = escaped_bytes(backslashes);
      for (uint64_t rest = escaped; rest != 0; rest &= rest - 1) {
        const int at = std::countr_zero(rest);
        if (!simple_escape(bytes[at])) odd_escapes_ |= uint64_t{1} << at;
      }
      value_stops_ = (stops & ~backslashes & ~(escaped & bytes_equal(bytes, '"'))) | odd_escapes_;
    }
  }

  // The bytes of a block that a backslash escapes: each backslash not itself escaped escapes the
  // byte after it. Branch-free, as simdjson finds them (the carry of an addition marks where each
  // odd run of backslashes ends); escapes_next_block_ carries an escaping backslash at the end of
  // the block into the next.
  uint64_t escaped_bytes(uint64_t backslashes) {
    constexpr uint64_t even_bits = 0x5555555555555555;
    const uint64_t carried = escapes_next_block_ ? 1 : 0;
    backslashes &= ~carried;  // an escaped backslash escapes nothing
    const uint64_t follows_backslash = (backslashes << 1) | carried;
    const uint64_t odd_run_starts = backslashes & ~even_bits & ~follows_backslash;
    uint64_t runs_from_even_starts = 0;
    escapes_next_block_ = __builtin_add_overflow(odd_run_starts, backslashes, &runs_from_even_starts);
    return (even_bits ^ (runs_from_even_starts << 1)) & follows_backslash;
  }

#if defined(__SSE2__)
  // Bit i: bytes[i] == c, for 64 bytes.
  static uint64_t bytes_equal(const char* bytes, char c) {
    const __m128i wanted = _mm_set1_epi8(c);
    uint64_t mask = 0;
    for (int part = 0; part < 4; ++part) {
      const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 16 * part));
      mask |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(chunk, wanted)))} << (16 * part);
    }
    return mask;
  }

  // Bit i: bytes[i] stops a string: a quote, a backslash, a control character or not ASCII; and
  // the backslashes alone.
  static uint64_t stop_bytes(const char* bytes, uint64_t& backslashes) {
    // Bytes below 0x20 and from 0x80 are exactly those below 0x20 as signed chars.
    const __m128i quote = _mm_set1_epi8('"');
    const __m128i backslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    uint64_t mask = 0;
    for (int part = 0; part < 4; ++part) {
      const __m128i chunk = _mm_loadu_si128(reinterpret_cast<const __m128i*>(bytes + 16 * part));
      const __m128i backslash_bytes = _mm_cmpeq_epi8(chunk, backslash);
      const __m128i stops = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(chunk, quote), backslash_bytes), _mm_cmplt_epi8(chunk, space));
      mask |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(stops))} << (16 * part);
      backslashes |= uint64_t{static_cast<uint16_t>(_mm_movemask_epi8(backslash_bytes))} << (16 * part);
    }
    return mask;
  }
#else
  static uint64_t bytes_equal(const char* bytes, char c) {
    uint64_t mask = 0;
    for (int i = 0; i < 64; ++i) mask |= uint64_t{bytes[i] == c} << i;
    return mask;
  }

  static uint64_t stop_bytes(const char* bytes, uint64_t& backslashes) {
    uint64_t mask = 0;
    for (int i = 0; i < 64; ++i) {
      const auto c = static_cast<unsigned char>(bytes[i]);
      mask |= uint64_t{c < 0x20 || c >= 0x80 || c == '"' || c == '\\'} << i;
      backslashes |= uint64_t{c == '\\'} << i;
    }
    return mask;
  }
#endif

  // \" \\ \/ \b \f \n \r \t: the escapes a long text is full of, checked inline by a table.
  static bool simple_escape(char c) {
    static constexpr std::array<bool, 256> simple = [] {
      std::array<bool, 256> table{};
      for (const unsigned char letter : {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'}) table[letter] = true;
      return table;
    }();
    return simple[static_cast<unsigned char>(c)];
  }


  // At a backslash that does not start a simple escape: the position after the \u escape (a
  // surrogate pair, or one code unit that is no surrogate) there must be, or failed.
  [[gnu::noinline]] size_t unicode_escape_end(size_t position) const {
    if (!at(position + 1, 'u')) return failed;
    const int unit = code_unit(position);
    if (unit < 0 || (unit >= 0xDC00 && unit <= 0xDFFF)) return failed;
    position += 6;
    if (unit < 0xD800 || unit > 0xDBFF) return position;
    // A high surrogate needs a low one next.
    if (!at(position, '\\') || !at(position + 1, 'u')) return failed;
    const int low = code_unit(position);
    if (low < 0xDC00 || low > 0xDFFF) return failed;
    return position + 6;
  }


  // The value of the \uXXXX at `position`, or -1.
  int code_unit(size_t position) const {
    if (size_ - position < 6) return -1;
    int unit = 0;
    for (size_t i = position + 2; i < position + 6; ++i) {
      const char c = data_[i];
      int nibble = 0;
      if (c >= '0' && c <= '9') {
        nibble = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        nibble = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        nibble = c - 'A' + 10;
      } else {
        return -1;
      }
      unit = unit * 16 + nibble;
    }
    return unit;
  }

  // At a byte from 0x80: the position after one well-formed UTF-8 sequence (RFC 3629: no overlong
  // forms, no surrogates, nothing above U+10FFFF), as the strict parser's lexer checks it.
  [[gnu::noinline]] size_t utf8_sequence_end(size_t position) const {
    const auto lead = static_cast<unsigned char>(data_[position]);
    size_t continuation = 0;
    unsigned char low = 0x80;
    unsigned char high = 0xBF;
    if (lead >= 0xC2 && lead <= 0xDF) {
      continuation = 1;
    } else if (lead >= 0xE0 && lead <= 0xEF) {
      continuation = 2;
      if (lead == 0xE0) low = 0xA0;
      if (lead == 0xED) high = 0x9F;
    } else if (lead >= 0xF0 && lead <= 0xF4) {
      continuation = 3;
      if (lead == 0xF0) low = 0x90;
      if (lead == 0xF4) high = 0x8F;
    } else {
      return failed;
    }
    if (size_ - position <= continuation) return failed;
    for (size_t i = 1; i <= continuation; ++i) {
      const auto byte = static_cast<unsigned char>(data_[position + i]);
      if (byte < low || byte > high) return failed;
      low = 0x80;
      high = 0xBF;
    }
    return position + continuation + 1;
  }

  // A name without escapes, unique in its object (raw bytes then compare as the unescaped names
  // do), and the colon after it; `is_member` says whether it is the top-level member's.
  size_t member_name(size_t position, size_t depth, size_t& open_names, bool& is_member) {
    if (!at(position, '"')) {
      position = skip_space(position);
      if (!at(position, '"')) return failed;
    }
    const size_t start = position + 1;
    position = unescaped_string_end(position);
    if (position == failed) return failed;
    const char* const name = data_ + start;
    const size_t size = position - 1 - start;
    const uint64_t key = name_key(name, size, size_ - start >= 8);
    for (size_t i = first_names_[depth - 1]; i < open_names; ++i) {
      if (names_[i].key == key && same_name(names_[i], name, size)) return failed;
    }
    if (open_names == max_open_names) return failed;
    // Field by field: a whole-struct copy here read back a 16-byte slot just written as two halves.
    Name& slot = names_[open_names++];
    slot.data = name;
    slot.size = size;
    slot.key = key;
    is_member = depth == 1 && key == member_key_ && size == member_.size() && std::memcmp(name, member_.data(), size) == 0;
    if (!at(position, ':')) {
      position = skip_space(position);
      if (!at(position, ':')) return failed;
    }
    return position + 1;
  }

  static bool same_name(const Name& open, const char* name, size_t size) {
    return open.size == size && std::memcmp(open.data, name, size) == 0;
  }

  // Names in one object mostly differ in their first or last eight bytes (and "q1".."q32" in both).
  // `whole_word` says whether 8 bytes may be read from `name`: in a text, a short name is followed
  // by its closing quote and, when the text is valid, by at least ":0}".
  static uint64_t name_key(const char* name, size_t size, bool whole_word) {
    uint64_t first = 0;
    if (size >= 8) {
      uint64_t last = 0;
      std::memcpy(&first, name, 8);
      std::memcpy(&last, name + size - 8, 8);
      return first ^ std::rotl(last, 29) ^ size;
    }
    if (std::endian::native == std::endian::little && whole_word) {
      std::memcpy(&first, name, 8);  // the name is in the low bytes
      return (first & ((uint64_t{1} << (8 * size)) - 1)) ^ size;
    }
    for (size_t i = 0; i < size; ++i) first |= uint64_t{static_cast<unsigned char>(name[i])} << (8 * i);
    return first ^ size;
  }

  const char* data_;
  size_t size_;
  std::string_view member_;
  uint64_t member_key_;
  // The block the stops describe (see load_block).
  size_t mask_block_ = failed;
  uint64_t name_stops_ = 0;    // quotes, backslashes, control characters, bytes from 0x80
  uint64_t value_stops_ = 0;   // the same but backslashes and escaped quotes, plus odd_escapes_
  uint64_t odd_escapes_ = 0;   // escaped bytes that are no simple escape's: a \u's u, or an error
  bool escapes_next_block_ = false;  // the last block loaded ends with an escaping backslash
  // Left uninitialised: [0, depth_) and [0, name_count_) are written before they are read, and
  // zeroing 3 KB cost as much as scanning a short body.
  std::array<size_t, max_depth> first_names_;  // per open container: its first name in names_
  std::array<Name, max_open_names> names_;     // the names of the objects open now, outermost first
  TopLevelMember::Kind member_kind_ = TopLevelMember::Kind::absent;
  size_t member_start_ = 0;
  size_t member_size_ = 0;
};

}  // namespace

std::optional<StrictJsonScan> scan_plain_json(std::string_view text, std::string_view member) {
  return PlainScanner(text, member).run();
}

}  // namespace s1::api
