//===- Fingerprint.h - What a compiler build is, for cache keys -*- C++ -*-===//
//
// Compile caches (plans, PlanCache.h; kernels, KernelCache.h) must miss when
// the compiler changes. A build is told apart by the files its code was
// loaded from: path, size and modification time of each, found with
// dladdr from an address inside it. A rebuilt library changes its entry;
// two programs that load the same libraries (monarch-compile and the Python
// extension) get the same text.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_SUPPORT_FINGERPRINT_H
#define MONARCH_SUPPORT_FINGERPRINT_H

#include <string>

namespace monarch {

/// "path:size:mtime;" of the file at `path` ("path;" when it cannot be
/// read).
std::string describeFile(const char *path);

/// describeFile of the binary (executable or shared library) holding the
/// code or data at `anchor`; "" when there is none.
std::string describeLoadedFile(const void *anchor);

} // namespace monarch

#endif // MONARCH_SUPPORT_FINGERPRINT_H
