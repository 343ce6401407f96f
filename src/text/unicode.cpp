#include "text/unicode.h"

#include <utf8proc.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <span>

namespace s1::text::unicode {
namespace {

struct CodePointRange {
  char32_t first;
  char32_t last;
};

#include "text/unicode_tables.inc"

bool in_ranges(std::span<const CodePointRange> ranges, char32_t code_point) {
  const auto found = std::upper_bound(ranges.begin(), ranges.end(), code_point,
                                      [](char32_t value, const CodePointRange& range) { return value < range.first; });
  return found != ranges.begin() && code_point <= std::prev(found)->last;
}

enum ClassBit : uint8_t {
  kControl = 1,
  kPunctuation = 2,
  kNonspacingMark = 4,
  kRegexLetter = 8,
  kRegexMark = 16,
  kRegexNumber = 32,
  kRegexSpace = 64,
};

// The classes are asked for every non-ASCII character, so the BMP gets a flat table (64 KiB,
// built once) instead of a binary search per question.
const std::array<uint8_t, 0x10000>& bmp_classes() {
  static const std::array<uint8_t, 0x10000> table = [] {
    std::array<uint8_t, 0x10000> classes{};
    const auto mark = [&](std::span<const CodePointRange> ranges, uint8_t bit) {
      for (const CodePointRange& range : ranges) {
        for (char32_t code_point = range.first; code_point <= range.last && code_point < 0x10000; ++code_point) {
          classes[code_point] |= bit;
        }
      }
    };
    mark(kBertControlRanges, kControl);
    mark(kBertPunctuationRanges, kPunctuation);
    mark(kNonspacingMarkRanges, kNonspacingMark);
    mark(kRegexLetterRanges, kRegexLetter);
    mark(kRegexMarkRanges, kRegexMark);
    mark(kRegexNumberRanges, kRegexNumber);
    mark(kRegexSpaceRanges, kRegexSpace);
    return classes;
  }();
  return table;
}

bool has_class(std::span<const CodePointRange> ranges, ClassBit bit, char32_t code_point) {
  if (code_point < 0x10000) return (bmp_classes()[code_point] & bit) != 0;
  return in_ranges(ranges, code_point);
}

}  // namespace

bool is_whitespace(char32_t code_point) {
  switch (code_point) {
    case 0x09: case 0x0A: case 0x0B: case 0x0C: case 0x0D: case 0x20: case 0x85: case 0xA0:
    case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return code_point >= 0x2000 && code_point <= 0x200A;
  }
}

bool is_python_space(char32_t code_point) {
  return is_whitespace(code_point) || (code_point >= 0x1C && code_point <= 0x1F);
}

bool is_python_decimal(char32_t code_point) {
  return utf8proc_category(static_cast<utf8proc_int32_t>(code_point)) == UTF8PROC_CATEGORY_ND;
}

bool is_python_printable(char32_t code_point) {
  if (code_point == 0x20) return true;
  switch (utf8proc_category(static_cast<utf8proc_int32_t>(code_point))) {
    case UTF8PROC_CATEGORY_CC: case UTF8PROC_CATEGORY_CF: case UTF8PROC_CATEGORY_CS: case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN: case UTF8PROC_CATEGORY_ZL: case UTF8PROC_CATEGORY_ZP: case UTF8PROC_CATEGORY_ZS:
      return false;
    default:
      return true;
  }
}

bool is_bert_control(char32_t code_point) { return has_class(kBertControlRanges, kControl, code_point); }

bool is_bert_punctuation(char32_t code_point) { return has_class(kBertPunctuationRanges, kPunctuation, code_point); }

bool is_nonspacing_mark(char32_t code_point) { return has_class(kNonspacingMarkRanges, kNonspacingMark, code_point); }

bool is_regex_letter(char32_t code_point) { return has_class(kRegexLetterRanges, kRegexLetter, code_point); }

bool is_regex_mark(char32_t code_point) { return has_class(kRegexMarkRanges, kRegexMark, code_point); }

bool is_regex_number(char32_t code_point) { return has_class(kRegexNumberRanges, kRegexNumber, code_point); }

bool is_regex_space(char32_t code_point) { return has_class(kRegexSpaceRanges, kRegexSpace, code_point); }

bool is_chinese_char(char32_t code_point) {
  return (code_point >= 0x4E00 && code_point <= 0x9FFF) || (code_point >= 0x3400 && code_point <= 0x4DBF) ||
         (code_point >= 0x20000 && code_point <= 0x2A6DF) || (code_point >= 0x2A700 && code_point <= 0x2B73F) ||
         (code_point >= 0x2B740 && code_point <= 0x2B81F) || (code_point >= 0x2B920 && code_point <= 0x2CEAF) ||
         (code_point >= 0xF900 && code_point <= 0xFAFF) || (code_point >= 0x2F800 && code_point <= 0x2FA1F);
}

int canonical_combining_class(char32_t code_point) {
  return utf8proc_get_property(static_cast<utf8proc_int32_t>(code_point))->combining_class;
}

Decomposition decompose_canonical(char32_t code_point) {
  Decomposition result{};
  // Most characters have no canonical decomposition; Hangul syllables decompose algorithmically
  // and carry no table entry, so they always take the full call.
  const bool hangul_syllable = code_point >= 0xAC00 && code_point <= 0xD7A3;
  if (!hangul_syllable) {
    const utf8proc_property_t* property = utf8proc_get_property(static_cast<utf8proc_int32_t>(code_point));
    if (property->decomp_seqindex == UINT16_MAX || property->decomp_type != 0) {
      result.code_points[0] = code_point;
      result.size = 1;
      return result;
    }
  }
  utf8proc_int32_t buffer[8];
  const utf8proc_ssize_t size =
      utf8proc_decompose_char(static_cast<utf8proc_int32_t>(code_point), buffer, 8, UTF8PROC_DECOMPOSE, nullptr);
  if (size <= 0 || size > 4) {
    result.code_points[0] = code_point;
    result.size = 1;
    return result;
  }
  result.size = static_cast<size_t>(size);
  for (size_t index = 0; index < result.size; ++index) result.code_points[index] = static_cast<char32_t>(buffer[index]);
  return result;
}

char32_t to_lower(char32_t code_point) {
  return static_cast<char32_t>(utf8proc_tolower(static_cast<utf8proc_int32_t>(code_point)));
}

}  // namespace s1::text::unicode
