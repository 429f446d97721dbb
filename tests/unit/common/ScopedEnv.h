//===- ScopedEnv.h - An environment variable set for one scope -*- C++ -*-===//
#ifndef MONARCH_TESTS_COMMON_SCOPEDENV_H
#define MONARCH_TESTS_COMMON_SCOPEDENV_H

#include <cstdlib>
#include <optional>
#include <string>

namespace monarch::testing {

/// Sets (or unsets, with nullptr) an environment variable for one scope,
/// restoring its old value after.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const char *value) : name(name) {
    if (const char *old = std::getenv(name))
      saved = old;
    if (value)
      ::setenv(name, value, 1);
    else
      ::unsetenv(name);
  }
  ~ScopedEnv() {
    if (saved)
      ::setenv(name, saved->c_str(), 1);
    else
      ::unsetenv(name);
  }
  ScopedEnv(const ScopedEnv &) = delete;
  ScopedEnv &operator=(const ScopedEnv &) = delete;

private:
  const char *name;
  std::optional<std::string> saved;
};

} // namespace monarch::testing

#endif // MONARCH_TESTS_COMMON_SCOPEDENV_H
