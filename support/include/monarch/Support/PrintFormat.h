//===- PrintFormat.h - mc.debug_print's format and value text ---*- C++ -*-===//
//
// `mc.debug_print(fmt, *values)` reaches the workers as one format string
// whose fields name the printed values by position (`{0}`, `{1:.3f}`;
// `{{` and `}}` are literal braces: Python's str.format syntax, with the
// automatic numbering resolved by the tracer). The IR verifier parses it;
// the worker formats each value's bytes with it at run time.
//
// A value without a spec prints as numpy's str() does in the cases users
// read most: a scalar as numpy prints it (`0.1`, `1.0`, `1e-05`, `7`,
// `True`), an array in brackets, rows on their own lines, elements right-
// aligned to one width, and more than 1000 elements summarised with `...`
// (numpy's threshold and edge items). Floats are the shortest text that
// reads back as the same value of their own type. A spec (the mini-language
// of Python's format(): fill, align, sign, width, precision, type
// `e f g % d`) applies to each element.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_SUPPORT_PRINTFORMAT_H
#define MONARCH_SUPPORT_PRINTFORMAT_H

#include "monarch/Support/DType.h"
#include "monarch/Support/Status.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace monarch::printfmt {

/// One piece of a parsed format: literal text, then (when `value >= 0`) the
/// value at that position formatted with `spec`.
struct Piece {
  std::string literal;
  int value = -1;
  std::string spec;
};

/// Parses `format` for `numValues` values into `pieces`. An error says
/// what is wrong: an unbalanced brace, a field that is not a position, a
/// position past the values (ErrorKind::Program), or a spec this printer
/// does not support (ErrorKind::Unsupported).
Status parse(std::string_view format, size_t numValues,
             std::vector<Piece> &pieces);

/// Whether `spec` is one this printer supports ("" always is).
Status validSpec(std::string_view spec);

/// A value's bytes: `shape` empty for a scalar, row-major elements.
struct ValueView {
  DType dtype;
  const void *data;
  std::vector<int64_t> shape;
};

/// The text of one value (see the file comment).
std::string formatValue(const ValueView &value, std::string_view spec = {});

/// The text of a whole print: `pieces` from parse() over `values`.
std::string format(const std::vector<Piece> &pieces,
                   const std::vector<ValueView> &values);

} // namespace monarch::printfmt

#endif // MONARCH_SUPPORT_PRINTFORMAT_H
