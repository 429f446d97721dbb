//===- CudaLibraryParse.cpp - Manifests of a CUDA kernel ------ -*- C++ -*-===//
//
// Splits a CUDA kernel library into its PTX modules (one per kernel, after
// a `// monarch.ptx-module SYMBOL` line) and reads each module's manifest
// (CudaPipeline.cpp): arguments, temporaries, launches and cuBLAS calls in
// order. Needs no driver.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/CudaRuntime.h"

#include <cstdio>
#include <sstream>

namespace monarch::executor {

using executor::Status;
using executor::StatusCode;
using executor::StatusOr;

namespace {

Status bad(const std::string &message) {
  return Status(StatusCode::InvalidArgument,
                "malformed CUDA kernel library: " + message);
}

/// "a3", "s0", "a1+256".
bool parseOperand(const std::string &text, CudaOperand &op) {
  if (text.size() < 2 || (text[0] != 'a' && text[0] != 's'))
    return false;
  op.argument = text[0] == 'a';
  size_t plus = text.find('+');
  std::string index =
      text.substr(1, plus == std::string::npos ? plus : plus - 1);
  std::string offset = plus == std::string::npos ? "0" : text.substr(plus + 1);
  for (const std::string *s : {&index, &offset})
    if (s->empty() || s->size() > 15 ||
        s->find_first_not_of("0123456789") != std::string::npos)
      return false;
  op.index = static_cast<unsigned>(std::stoul(index));
  op.offset = std::stoll(offset);
  return true;
}

bool parseOperands(const std::string &word, std::vector<CudaOperand> &out) {
  if (word.rfind("operands=", 0) != 0)
    return false;
  std::istringstream list(word.substr(9));
  std::string item;
  while (std::getline(list, item, ',')) {
    CudaOperand op;
    if (!parseOperand(item, op))
      return false;
    out.push_back(op);
  }
  return true;
}

Status parseModule(const std::string &section, CudaKernelProgram &kernel) {
  std::istringstream lines(section);
  std::string line;
  bool sawKernel = false;
  while (std::getline(lines, line)) {
    if (line.rfind("// monarch.", 0) != 0)
      continue;
    std::istringstream words(line);
    std::string slashes, tag, symbol;
    words >> slashes >> tag >> symbol;
    if (tag == "monarch.ptx-module")
      continue;
    if (symbol != kernel.symbol)
      return bad("line '" + line + "' in the module of " + kernel.symbol);
    if (tag == "monarch.kernel") {
      std::string args;
      words >> args;
      if (args.rfind("args=", 0) != 0 || args.size() == 5 ||
          args.find_first_not_of("0123456789", 5) != std::string::npos)
        return bad("line '" + line + "'");
      kernel.numArgs = static_cast<unsigned>(std::stoul(args.substr(5)));
      sawKernel = true;
    } else if (tag == "monarch.scratch") {
      long long index = -1, bytes = -1;
      if (!(words >> index >> bytes) || index < 0 || bytes < 0 ||
          index != static_cast<long long>(kernel.scratchBytes.size()))
        return bad("line '" + line + "'");
      kernel.scratchBytes.push_back(bytes);
    } else if (tag == "monarch.launch") {
      CudaStep step;
      std::string grid, block, operands;
      words >> step.entry >> grid >> block >> operands;
      if (std::sscanf(grid.c_str(), "grid=%u,%u,%u", &step.grid[0],
                      &step.grid[1], &step.grid[2]) != 3 ||
          std::sscanf(block.c_str(), "block=%u,%u,%u", &step.block[0],
                      &step.block[1], &step.block[2]) != 3 ||
          !parseOperands(operands, step.operands))
        return bad("line '" + line + "'");
      kernel.steps.push_back(std::move(step));
    } else if (tag == "monarch.gemm") {
      CudaStep step;
      long long index = -1;
      std::string operands;
      if (!(words >> index >> operands) || index < 0 ||
          !parseOperands(operands, step.operands) || step.operands.size() != 3)
        return bad("line '" + line + "'");
      if (static_cast<size_t>(index) >= kernel.gemms.size())
        return bad(kernel.symbol + " has gemm " + std::to_string(index) +
                   " but its cuBLAS table has " +
                   std::to_string(kernel.gemms.size()) + " entries");
      step.gemm = static_cast<int>(index);
      kernel.steps.push_back(std::move(step));
    } else {
      return bad("unknown manifest line '" + line + "'");
    }
  }
  if (!sawKernel)
    return bad("the module of " + kernel.symbol +
               " has no monarch.kernel line");
  size_t gemmSteps = 0;
  for (const CudaStep &step : kernel.steps) {
    gemmSteps += step.gemm >= 0;
    for (const CudaOperand &op : step.operands)
      if (op.argument ? op.index >= kernel.numArgs
                      : op.index >= kernel.scratchBytes.size())
        return bad(kernel.symbol + ": operand " + (op.argument ? "a" : "s") +
                   std::to_string(op.index) + " out of range");
  }
  if (gemmSteps != kernel.gemms.size())
    return bad(kernel.symbol + ": " + std::to_string(kernel.gemms.size()) +
               " cuBLAS table entries but " + std::to_string(gemmSteps) +
               " monarch.gemm lines");
  return Status::ok();
}

} // namespace

size_t CudaKernelProgram::numLaunches() const {
  size_t n = 0;
  for (const CudaStep &step : steps)
    n += step.gemm < 0;
  return n;
}

StatusOr<std::map<std::string, CudaKernelProgram>> parseCudaLibrary(
    std::string_view code,
    const std::map<std::string, std::vector<plan::GemmCall>> &gemms) {
  std::map<std::string, CudaKernelProgram> kernels;
  const std::string marker = "// monarch.ptx-module ";
  size_t pos = code.find(marker);
  if (pos == std::string_view::npos && !code.empty())
    return bad("no '// monarch.ptx-module' line");
  while (pos != std::string_view::npos) {
    size_t next = code.find(marker, pos + marker.size());
    std::string section(code.substr(pos, next == std::string_view::npos
                                             ? std::string_view::npos
                                             : next - pos));
    size_t end = section.find('\n');
    CudaKernelProgram kernel;
    kernel.symbol = section.substr(marker.size(), end == std::string::npos
                                                      ? std::string::npos
                                                      : end - marker.size());
    if (kernel.symbol.empty() || kernels.count(kernel.symbol))
      return bad("missing or repeated module symbol '" + kernel.symbol + "'");
    auto it = gemms.find(kernel.symbol);
    if (it != gemms.end())
      kernel.gemms = it->second;
    if (Status s = parseModule(section, kernel); !s)
      return s;
    kernel.module = std::move(section);
    kernels.emplace(kernel.symbol, std::move(kernel));
    pos = next;
  }
  for (const auto &[symbol, table] : gemms)
    if (!table.empty() && !kernels.count(symbol))
      return bad("cuBLAS table entries for " + symbol +
                 ", which the library does not contain");
  return kernels;
}

std::map<std::string, std::vector<plan::GemmCall>>
gemmsBySymbol(const plan::KernelLibraryBlob &library) {
  std::map<std::string, std::vector<plan::GemmCall>> out;
  for (const plan::CompiledKernelRef &k : library.kernels)
    if (!k.gemms.empty())
      out[k.symbol] = k.gemms;
  return out;
}

} // namespace monarch::executor
