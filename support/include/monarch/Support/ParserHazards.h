//===- ParserHazards.h - Inputs upstream parsers crash on --------*- C++
//-*-===//
//
// MLIR 22's parsers of linalg.transpose `permutation = [...]` and
// linalg.broadcast / linalg.reduce `dimensions = [...]` report an integer
// that does not fit in 64 bits ("integer value too large") and then use the
// null attribute they got back: SIGSEGV (found by tests/fuzz/mutate_ir.py).
// Our tools scan their textual input for that case first and refuse it at
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
      if (i >= text.size() || text[i] != '[')
        continue;
      for (++i; i < text.size() && text[i] != ']'; ++i) {
        if (!std::isdigit(static_cast<unsigned char>(text[i])))
          continue;
        size_t start = i;
        bool negative = start > 0 && text[start - 1] == '-';
        while (i < text.size() &&
               std::isdigit(static_cast<unsigned char>(text[i])))
          ++i;
        if (!fits(text.substr(start, i - start), negative)) {
          ParserHazard h = position(negative ? start - 1 : start);
          h.message = "integer value too large for the 64-bit `" +
                      std::string(key) + "` array";
          return h;
        }
        --i;
      }
    }
  }
  return std::nullopt;
}

} // namespace monarch

#endif // MONARCH_SUPPORT_PARSERHAZARDS_H
