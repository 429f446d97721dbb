//===- Knobs.cpp - The registry of MONARCH_* environment variables --------===//
//
// Parsing is strict and the same for every reader: a value that does not
// parse is an error with the variable's name and what was expected, never
// silently the default.
//
//===----------------------------------------------------------------------===//
#include "monarch/Support/Knobs.h"

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace monarch::knobs {

const std::vector<Knob> &all() {
  static const std::vector<Knob> table = {
#define MONARCH_KNOB_ENTRY(id, name, type, def, lo, hi, choices, readers,      \
                           compile, doc)                                       \
  {Id::id, name, Type::type, def, lo, hi, choices, readers, compile, doc},
      MONARCH_KNOBS(MONARCH_KNOB_ENTRY)
#undef MONARCH_KNOB_ENTRY
  };
  return table;
}

const Knob &knob(Id id) { return all()[static_cast<size_t>(id)]; }

const Knob *find(const std::string &name) {
  for (const Knob &k : all())
    if (name == k.name)
      return &k;
  return nullptr;
}

const char *typeName(Type type) {
  switch (type) {
  case Type::String:
    return "string";
  case Type::Path:
    return "path";
  case Type::Bool:
    return "bool";
  case Type::Int:
    return "int";
  case Type::Ms:
    return "ms";
  case Type::Choice:
    return "choice";
  }
  return "?";
}

std::string readersText(unsigned readers) {
  static const std::pair<unsigned, const char *> names[] = {
      {Compiler, "compiler"},
      {Controller, "controller"},
      {Worker, "worker"},
      {Python, "python"}};
  std::string out;
  for (const auto &[bit, name] : names)
    if (readers & bit)
      out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

namespace {

std::optional<bool> parseBool(const std::string &text) {
  std::string t;
  for (char c : text)
    t += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (t == "1" || t == "true" || t == "on" || t == "yes")
    return true;
  if (t == "0" || t == "false" || t == "off" || t == "no")
    return false;
  return std::nullopt;
}

std::optional<int64_t> parseInt(const std::string &text) {
  // strtoll would skip leading blanks; a value is digits, maybe signed.
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) ||
                        text[0] == '-' || text[0] == '+'))
    return std::nullopt;
  errno = 0;
  char *end = nullptr;
  long long v = std::strtoll(text.c_str(), &end, 10);
  if (errno || *end != '\0')
    return std::nullopt;
  return static_cast<int64_t>(v);
}

bool isChoice(const Knob &k, const std::string &text) {
  std::string choices = k.choices;
  size_t start = 0;
  while (start <= choices.size()) {
    size_t end = choices.find('|', start);
    if (end == std::string::npos)
      end = choices.size();
    if (choices.compare(start, end - start, text) == 0 && end > start)
      return true;
    start = end + 1;
  }
  return false;
}

/// MONARCH_MATMUL_TILES: three positive integers and an optional 0/1.
bool validTiles(const std::string &text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t end = text.find(',', start);
    parts.push_back(text.substr(
        start, end == std::string::npos ? std::string::npos : end - start));
    if (end == std::string::npos)
      break;
    start = end + 1;
  }
  if (parts.size() != 3 && parts.size() != 4)
    return false;
  for (size_t i = 0; i < 3; ++i) {
    std::optional<int64_t> v = parseInt(parts[i]);
    if (!v || *v <= 0)
      return false;
  }
  return parts.size() == 3 || parts[3] == "0" || parts[3] == "1";
}

std::string expected(const Knob &k) {
  switch (k.type) {
  case Type::Bool:
    return "1 or 0 (true/false, on/off, yes/no)";
  case Type::Int:
    return "an integer in " + std::to_string(k.min) + ".." +
           std::to_string(k.max);
  case Type::Ms:
    return "a number of milliseconds in " + std::to_string(k.min) + ".." +
           std::to_string(k.max);
  case Type::Choice: {
    std::string c = k.choices;
    for (char &ch : c)
      if (ch == '|')
        ch = ',';
    return "one of " + c;
  }
  case Type::String:
    if (k.id == Id::MatmulTiles)
      return "mr,nr,kc or mr,nr,kc,packA (positive integers; packA 0 or 1)";
    return "text";
  case Type::Path:
    return "a path";
  }
  return "?";
}

} // namespace

std::string check(const Knob &k, const std::string &text) {
  bool good = true;
  switch (k.type) {
  case Type::Bool:
    good = parseBool(text).has_value();
    break;
  case Type::Int:
  case Type::Ms: {
    std::optional<int64_t> v = parseInt(text);
    good = v && *v >= k.min && *v <= k.max;
    break;
  }
  case Type::Choice:
    good = isChoice(k, text);
    break;
  case Type::String:
    good = k.id != Id::MatmulTiles || validTiles(text);
    break;
  case Type::Path:
    break;
  }
  if (good)
    return "";
  return std::string(k.name) + "=" + text + ": expected " + expected(k);
}

std::optional<std::string> raw(Id id) {
  const char *v = std::getenv(knob(id).name);
  if (!v || !*v)
    return std::nullopt;
  return std::string(v);
}

namespace {
/// The text to parse: the variable's when set and valid, else the default.
template <typename T> Value<T> start(Id id, std::string &text) {
  Value<T> out;
  const Knob &k = knob(id);
  text = k.defaultValue;
  if (std::optional<std::string> v = raw(id)) {
    out.error = check(k, *v);
    if (out.error.empty()) {
      out.isSet = true;
      text = *v;
    }
  }
  return out;
}
} // namespace

Value<std::string> getString(Id id) {
  std::string text;
  Value<std::string> out = start<std::string>(id, text);
  out.value = text;
  return out;
}

Value<bool> getBool(Id id) {
  std::string text;
  Value<bool> out = start<bool>(id, text);
  out.value = parseBool(text).value_or(false);
  return out;
}

Value<int64_t> getInt(Id id) {
  std::string text;
  Value<int64_t> out = start<int64_t>(id, text);
  out.value = parseInt(text).value_or(0);
  return out;
}

Value<std::chrono::milliseconds> getMs(Id id) {
  std::string text;
  Value<std::chrono::milliseconds> out =
      start<std::chrono::milliseconds>(id, text);
  out.value = std::chrono::milliseconds(parseInt(text).value_or(0));
  return out;
}

std::string validate(unsigned components) {
  std::string out;
  for (const Knob &k : all()) {
    if (!(k.readers & components))
      continue;
    if (std::optional<std::string> v = raw(k.id)) {
      std::string message = check(k, *v);
      if (!message.empty())
        out += (out.empty() ? "" : "\n") + message;
    }
  }
  return out;
}

std::string compileKey() {
  std::string out;
  for (const Knob &k : all())
    if (k.compileInput)
      if (std::optional<std::string> v = raw(k.id))
        out += std::string(k.name) + "=" + *v + ";";
  return out;
}

} // namespace monarch::knobs
