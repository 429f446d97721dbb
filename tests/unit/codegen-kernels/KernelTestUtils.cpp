//===- KernelTestUtils.cpp - Compile, run and check kernels --- -*- C++ -*-===//
//
// The numpy bridge writes inputs to a private temporary directory, runs
// `python3 reference.py` (paths from compile definitions) and reads the
// outputs back.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace monarch::test {
namespace {

size_t elementSize(const std::string &dtype) {
  if (dtype == "f64" || dtype == "i64")
    return 8;
  if (dtype == "f32" || dtype == "i32")
    return 4;
  if (dtype == "f16" || dtype == "bf16")
    return 2;
  if (dtype == "i8" || dtype == "i1")
    return 1;
  ADD_FAILURE() << "unknown dtype " << dtype;
  return 4;
}

float halfToFloat(uint16_t h) {
  uint32_t sign = (h >> 15) & 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  float value;
  if (exp == 0)
    value = std::ldexp(static_cast<float>(mant), -24);
  else if (exp == 31)
    value = mant ? NAN : INFINITY;
  else
    value = std::ldexp(static_cast<float>(mant | 0x400),
                       static_cast<int>(exp) - 25);
  return sign ? -value : value;
}

uint16_t floatToHalf(float f) {
  // Exact for the values tests generate (normal range); rounds to nearest.
  if (f == 0)
    return std::signbit(f) ? 0x8000 : 0;
  uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  int exp;
  float mant =
      std::frexp(std::fabs(f), &exp); // f = mant * 2^exp, mant in [0.5,1)
  int e = exp + 14;
  if (e <= 0) // subnormal
    return sign |
           static_cast<uint16_t>(std::nearbyint(std::ldexp(std::fabs(f), 24)));
  uint32_t m = static_cast<uint32_t>(std::nearbyint(std::ldexp(mant, 11)));
  if (m == 2048) {
    m = 1024;
    ++e;
  }
  return sign | static_cast<uint16_t>(e << 10) |
         static_cast<uint16_t>(m & 0x3ff);
}

std::string temporaryDirectory() {
  std::string tmpl =
      (std::filesystem::temp_directory_path() / "monarch-kernel-test-XXXXXX")
          .string();
  if (!::mkdtemp(tmpl.data()))
    return "";
  return tmpl;
}

} // namespace

HostBuffer::HostBuffer(std::string dtype, std::vector<int64_t> shape)
    : dtype(std::move(dtype)), shape(std::move(shape)) {
  bytes.assign(numElements() * elementSize(this->dtype), 0);
}

int64_t HostBuffer::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double HostBuffer::at(int64_t i) const {
  const uint8_t *p = bytes.data() + i * elementSize(dtype);
  if (dtype == "f32") {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (dtype == "f64") {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if (dtype == "i32") {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (dtype == "i64") {
    int64_t v;
    std::memcpy(&v, p, 8);
    return static_cast<double>(v);
  }
  if (dtype == "i8")
    return static_cast<int8_t>(*p);
  if (dtype == "i1") // the raw byte: a bit-packed result does not pass as 1
    return *p;
  uint16_t h;
  std::memcpy(&h, p, 2);
  if (dtype == "f16")
    return halfToFloat(h);
  uint32_t bits = static_cast<uint32_t>(h) << 16;
  float v;
  std::memcpy(&v, &bits, 4);
  return v;
}

void HostBuffer::set(int64_t i, double value) {
  uint8_t *p = bytes.data() + i * elementSize(dtype);
  if (dtype == "f32") {
    float v = static_cast<float>(value);
    std::memcpy(p, &v, 4);
  } else if (dtype == "f64") {
    std::memcpy(p, &value, 8);
  } else if (dtype == "i32") {
    int32_t v = static_cast<int32_t>(std::lround(value));
    std::memcpy(p, &v, 4);
  } else if (dtype == "i64") {
    int64_t v = std::llround(value);
    std::memcpy(p, &v, 8);
  } else if (dtype == "i8") {
    *p = static_cast<uint8_t>(static_cast<int8_t>(std::lround(value)));
  } else if (dtype == "i1") { // numpy's bool: one byte, 0 or 1
    *p = std::lround(value) != 0 ? 1 : 0;
  } else if (dtype == "f16") {
    uint16_t h = floatToHalf(static_cast<float>(value));
    std::memcpy(p, &h, 2);
  } else { // bf16, truncated: test inputs only need to be representable
    float v = static_cast<float>(value);
    uint32_t bits;
    std::memcpy(&bits, &v, 4);
    uint16_t h = static_cast<uint16_t>(bits >> 16);
    std::memcpy(p, &h, 2);
  }
}

std::string HostBuffer::spec() const {
  std::string s = dtype + ":";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? "x" : "") + std::to_string(shape[i]);
  return s;
}

HostBuffer randomBuffer(const std::string &dtype, std::vector<int64_t> shape,
                        std::mt19937 &rng, double lo, double hi) {
  HostBuffer buffer(dtype, std::move(shape));
  std::uniform_real_distribution<double> dist(lo, hi);
  for (int64_t i = 0, e = buffer.numElements(); i < e; ++i)
    buffer.set(i, dist(rng));
  return buffer;
}

std::vector<HostBuffer>
numpyReference(const std::string &caseName,
               const std::vector<HostBuffer> &inputs,
               const std::vector<HostBuffer> &outputTemplates) {
  std::string dir = temporaryDirectory();
  if (dir.empty()) {
    ADD_FAILURE() << "cannot create a temporary directory";
    return {};
  }
  std::string command = std::string(MONARCH_PYTHON) + " " +
                        MONARCH_KERNEL_REFERENCE + " " + caseName + " " + dir;
  for (size_t i = 0; i < inputs.size(); ++i) {
    std::ofstream out(dir + "/in" + std::to_string(i) + ".bin",
                      std::ios::binary);
    out.write(reinterpret_cast<const char *>(inputs[i].bytes.data()),
              static_cast<std::streamsize>(inputs[i].bytes.size()));
    command += " in:" + inputs[i].spec();
  }
  for (const HostBuffer &t : outputTemplates)
    command += " out:" + t.spec();
  int rc = std::system(command.c_str());
  std::vector<HostBuffer> outputs;
  if (rc != 0) {
    ADD_FAILURE() << "numpy reference failed (" << rc << "): " << command;
  } else {
    for (size_t i = 0; i < outputTemplates.size(); ++i) {
      HostBuffer out(outputTemplates[i].dtype, outputTemplates[i].shape);
      std::ifstream in(dir + "/out" + std::to_string(i) + ".bin",
                       std::ios::binary);
      in.read(reinterpret_cast<char *>(out.bytes.data()),
              static_cast<std::streamsize>(out.bytes.size()));
      if (in.gcount() != static_cast<std::streamsize>(out.bytes.size()))
        ADD_FAILURE() << "short reference output " << i << " of " << caseName;
      outputs.push_back(std::move(out));
    }
  }
  std::filesystem::remove_all(dir);
  return outputs;
}

::testing::AssertionResult allClose(const HostBuffer &actual,
                                    const HostBuffer &expected, double rtol,
                                    double atol) {
  if (actual.shape != expected.shape || actual.dtype != expected.dtype)
    return ::testing::AssertionFailure()
           << "shape/dtype mismatch: " << actual.spec() << " vs "
           << expected.spec();
  std::ostringstream errors;
  int64_t bad = 0;
  for (int64_t i = 0, e = actual.numElements(); i < e; ++i) {
    double a = actual.at(i), x = expected.at(i);
    if (std::fabs(a - x) <= atol + rtol * std::fabs(x))
      continue;
    if (bad++ < 5)
      errors << "  [" << i << "] got " << a << ", numpy " << x << "\n";
  }
  if (bad == 0)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << bad << " of " << actual.numElements() << " elements differ:\n"
         << errors.str();
}

KernelTest::KernelTest() {
  mlir::DialectRegistry registry;
  registry.insert<monarch::MonarchDialect>();
  mlir::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  ctx.loadAllAvailableDialects();
}

KernelTest::~KernelTest() = default;

bool KernelTest::compile(const std::string &source,
                         const std::vector<std::string> &kernels,
                         codegen::KernelCompileOptions options) {
  diagnostics.clear();
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &diag) {
    diagnostics += diag.str() + "\n";
    return mlir::success();
  });
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  if (!module) {
    ADD_FAILURE() << "cannot parse the kernel source:\n" << diagnostics;
    return false;
  }
  std::vector<mlir::func::FuncOp> funcs;
  for (auto fn : module->getOps<mlir::func::FuncOp>()) {
    bool wanted = kernels.empty()
                      ? !fn.isExternal()
                      : std::find(kernels.begin(), kernels.end(),
                                  fn.getSymName().str()) != kernels.end();
    if (wanted)
      funcs.push_back(fn);
  }
  mlir::FailureOr<codegen::KernelLibrary> compiled =
      codegen::compileKernels(*module, funcs, options);
  if (mlir::failed(compiled)) {
    ADD_FAILURE() << "compileKernels failed:\n" << diagnostics;
    return false;
  }
  library = std::move(*compiled);
  loaded.reset();
  if (options.target != codegen::KernelTarget::Cpu)
    return true;
  auto lib =
      executor::LoadedKernelLibrary::load(library.binary, "test kernels");
  if (!lib) {
    ADD_FAILURE() << lib.status().toString();
    return false;
  }
  loaded = std::move(lib.value());
  return true;
}

std::string KernelTest::compileError(const std::string &source,
                                     const std::string &only,
                                     codegen::KernelCompileOptions options) {
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  if (!module) {
    ADD_FAILURE() << "does not parse";
    return "";
  }
  std::string text;
  mlir::ScopedDiagnosticHandler handler(&ctx, [&](mlir::Diagnostic &d) {
    text += d.str() + "\n";
    return mlir::success();
  });
  std::vector<mlir::func::FuncOp> kernels;
  for (auto fn : module->getOps<mlir::func::FuncOp>())
    if (only.empty() || fn.getSymName() == only)
      kernels.push_back(fn);
  EXPECT_TRUE(mlir::failed(codegen::compileKernels(*module, kernels, options)));
  return text;
}

const codegen::CompiledKernel *
KernelTest::kernel(const std::string &name) const {
  for (const codegen::CompiledKernel &k : library.kernels)
    if (k.name == name)
      return &k;
  return nullptr;
}

::testing::AssertionResult KernelTest::run(const std::string &name,
                                           std::vector<HostBuffer> &inputs,
                                           std::vector<HostBuffer> &outputs) {
  const codegen::CompiledKernel *k = kernel(name);
  if (!k || !loaded)
    return ::testing::AssertionFailure()
           << "kernel " << name << " not compiled";
  if (k->numInputs != inputs.size() || k->numOutputs != outputs.size())
    return ::testing::AssertionFailure()
           << name << " takes " << k->numInputs << " inputs and "
           << k->numOutputs << " outputs";
  std::vector<void *> ins, outs;
  for (HostBuffer &b : inputs)
    ins.push_back(b.bytes.data());
  for (HostBuffer &b : outputs)
    outs.push_back(b.bytes.data());
  // A kernel compiled with parameters takes their address after its inputs.
  std::vector<void *> buffers = codegen::kernelCallArguments(*k, ins, outs);
  executor::Status status = loaded->call(k->symbol, buffers.data());
  if (!status)
    return ::testing::AssertionFailure() << status.toString();
  return ::testing::AssertionSuccess();
}

} // namespace monarch::test
