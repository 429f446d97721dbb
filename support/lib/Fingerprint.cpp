//===- Fingerprint.cpp - What a compiler build is ------------- -*- C++ -*-===//
#include "monarch/Support/Fingerprint.h"

#include <dlfcn.h>
#include <sys/stat.h>

namespace monarch {

std::string describeFile(const char *path) {
  std::string out = path;
  struct stat st;
  if (::stat(path, &st) == 0)
    out += ":" + std::to_string(st.st_size) + ":" +
           std::to_string(st.st_mtim.tv_sec) + "." +
           std::to_string(st.st_mtim.tv_nsec);
  return out + ";";
}

std::string describeLoadedFile(const void *anchor) {
  Dl_info info;
  if (!anchor || !::dladdr(anchor, &info) || !info.dli_fname)
    return "";
  return describeFile(info.dli_fname);
}

} // namespace monarch
