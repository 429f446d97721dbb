//===- KernelReport.cpp - Where a kernel library's time went -*- C++ -*-===//
//
// formatKernelReport: the per-kernel table `monarch-compile -v`, Python's
// MONARCH_LOG_LEVEL=info and `monarch-kernels --times` print.
//
//===----------------------------------------------------------------------===//
#include "monarch/Codegen/KernelCompiler.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

namespace monarch::codegen {

/// The seconds a kernel's code took to generate (0 for a cache hit or a
/// duplicate).
static double compileTime(const CompiledKernel &k) {
  return k.lowerSeconds + k.optimizeSeconds + k.codegenSeconds;
}

std::string formatKernelReport(const KernelLibrary &library) {
  std::string out;
  llvm::raw_string_ostream os(out);
  size_t distinct = 0, hits = 0, compiled = 0;
  double cpu = 0;
  for (const CompiledKernel &k : library.kernels) {
    if (k.duplicate)
      continue;
    ++distinct;
    if (k.cacheHit)
      ++hits;
    else
      ++compiled;
    cpu += compileTime(k);
  }
  os << "kernels: " << library.kernels.size() << " (" << distinct
     << " distinct: " << compiled << " compiled on " << library.threads
     << " thread" << (library.threads == 1 ? "" : "s") << " in "
     << llvm::format("%.2f", cpu) << " s";
  if (library.cacheEnabled)
    os << ", " << hits << " from the kernel cache";
  os << ") in " << llvm::format("%.2f", library.wallSeconds) << " s; link "
     << llvm::format("%.2f", library.emitSeconds) << " s\n";
  std::vector<const CompiledKernel *> rows;
  llvm::StringMap<const CompiledKernel *> firstOf;
  for (const CompiledKernel &k : library.kernels) {
    rows.push_back(&k);
    firstOf.try_emplace(k.symbol, &k);
  }
  llvm::stable_sort(rows, [](const CompiledKernel *a, const CompiledKernel *b) {
    return compileTime(*a) > compileTime(*b);
  });
  size_t width = 6;
  for (const CompiledKernel *k : rows)
    width = std::max(width, k->name.size());
  os << llvm::left_justify("kernel", width)
     << "    ops     object    lower  optimize  codegen\n";
  for (const CompiledKernel *k : rows) {
    os << llvm::left_justify(k->name, width)
       << llvm::format(" %6u %7.1f KB  ", k->numOps, k->objectBytes / 1024.0);
    if (k->duplicate)
      os << "same as " << firstOf[k->symbol]->name;
    else if (k->cacheHit)
      os << "cache hit";
    else if (library.target == KernelTarget::Cuda)
      os << llvm::format("%6.2f s  (PTX)", k->lowerSeconds);
    else
      os << llvm::format("%6.2f s  %6.2f s  %6.2f s", k->lowerSeconds,
                         k->optimizeSeconds, k->codegenSeconds);
    os << "\n";
  }
  return out;
}

} // namespace monarch::codegen
