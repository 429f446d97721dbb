//===- ParserHazards.h - Inputs upstream parsers crash on --------*- C++
//-*-===//
//
// MLIR 22's parsers of linalg.transpose `permutation = [...]` and
// linalg.broadcast / linalg.reduce `dimensions = [...]` report any error in
// the array (an integer that does not fit in 64 bits, a missing `[` or `]`,
// a non-integer element, a trailing comma) and then use the null attribute
// they got back: SIGSEGV (found by tests/fuzz/mutate_ir.py). Our tools scan
// their textual input for those arrays first and refuse a malformed one at
// its line and column, so malformed IR never crashes them. Pure text: no
// MLIR, so both monarch-opt and the compile driver use it.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_SUPPORT_PARSERHAZARDS_H
#define MONARCH_SUPPORT_PARSERHAZARDS_H

#include <cctype>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace monarch {

struct ParserHazard {
  size_t line = 0, col = 0; // 1-based
  std::string message;
  /// `file:line:col: error: message`, as the tools print it.
  std::string diagnostic(std::string_view file) const {
    return std::string(file) + ":" + std::to_string(line) + ":" +
           std::to_string(col) + ": error: " + message;
  }
};

/// The first integer of a linalg i64 array attribute that does not fit in
/// 64 bits, or nothing.
inline std::optional<ParserHazard> findParserHazard(std::string_view text) {
  auto fits = [](std::string_view digits, bool negative) {
    while (digits.size() > 1 && digits.front() == '0')
      digits.remove_prefix(1);
    std::string_view max =
        negative ? "9223372036854775808" : "9223372036854775807";
    return digits.size() < max.size() ||
           (digits.size() == max.size() && digits <= max);
  };
  auto position = [&](size_t offset) {
    ParserHazard h;
    h.line = 1;
    size_t lineStart = 0;
    for (size_t i = 0; i < offset; ++i)
      if (text[i] == '\n') {
        ++h.line;
        lineStart = i + 1;
      }
    h.col = offset - lineStart + 1;
    return h;
  };
  for (std::string_view key : {"permutation", "dimensions"}) {
    for (size_t at = text.find(key); at != std::string_view::npos;
         at = text.find(key, at + 1)) {
      size_t i = at + key.size();
      while (i < text.size() && (text[i] == ' ' || text[i] == '\t'))
        ++i;
      if (i >= text.size() || text[i] != '=')
        continue;
      ++i;
      while (i < text.size() &&
             std::isspace(static_cast<unsigned char>(text[i])))
        ++i;
      // Outside comments; the generic form writes `array<i64: ...>`,
      // which parses safely.
      size_t lineStart =
          at == 0 ? std::string_view::npos : text.rfind('\n', at - 1);
      lineStart = lineStart == std::string_view::npos ? 0 : lineStart + 1;
      std::string_view before = text.substr(lineStart, at - lineStart);
      if (before.find("//") != std::string_view::npos ||
          text.substr(i, 6) == "array<")
        continue;
      // Anything but `[` integers `]` makes the parser report an error and
      // then use the null attribute it got back.
      auto malformed = [&](size_t offset) {
        ParserHazard h = position(offset);
        h.message = "expected a list of integers `[...]` for `" +
                    std::string(key) + "`";
        return h;
      };
      if (i >= text.size() || text[i] != '[')
        return malformed(i);
      auto skipSpace = [&] {
        while (i < text.size() &&
               std::isspace(static_cast<unsigned char>(text[i])))
          ++i;
      };
      ++i;
      skipSpace();
      bool first = true;
      while (i < text.size() && text[i] != ']') {
        if (!first) {
          if (text[i] != ',')
            return malformed(i);
          ++i;
          skipSpace();
        }
        first = false;
        size_t start = i;
        bool negative = i < text.size() && text[i] == '-';
        if (negative)
          ++i;
        size_t digits = i;
        while (i < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[i])))
          ++i;
        if (i == digits)
          return malformed(start);
        if (!fits(text.substr(digits, i - digits), negative)) {
          ParserHazard h = position(start);
          h.message = "integer value too large for the 64-bit `" +
                      std::string(key) + "` array";
          return h;
        }
        skipSpace();
      }
      if (i >= text.size())
        return malformed(i);
    }
  }
  return std::nullopt;
}

} // namespace monarch

#endif // MONARCH_SUPPORT_PARSERHAZARDS_H
