//===- JsonText.cpp - Text inside a JSON string ----------------*- C++ -*-===//

#include "monarch/Support/JsonText.h"

#include <cstdio>

namespace monarch {

std::string jsonEscape(const std::string &text) {
  std::string out;
  for (char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    default:
      if (static_cast<unsigned char>(c) < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "\\u%04x", c);
        out += buf;
      } else {
        out += c;
      }
    }
  }
  return out;
}

} // namespace monarch
