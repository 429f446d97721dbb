//===- JsonText.h - Text inside a JSON string ------------------*- C++ -*-===//
//
// One escape for every JSON the project writes by hand (the Chrome/Perfetto
// traces of MONARCH_TRACE and of the plan simulator).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_SUPPORT_JSONTEXT_H
#define MONARCH_SUPPORT_JSONTEXT_H

#include <string>

namespace monarch {

/// `text` as the inside of a JSON string: quotes and backslashes escaped,
/// newlines as `\n`, other control characters as `\u00XX`.
std::string jsonEscape(const std::string &text);

} // namespace monarch

#endif // MONARCH_SUPPORT_JSONTEXT_H
