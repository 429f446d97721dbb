//===- bench_kernels.cpp - Generated kernels against C -------- -*- C++ -*-===//
//
// Compiles a fused elementwise chain (relu(a*b+c)*0.5 over 16M float32) and
// float32 matmuls (512^3, 1024^3; A B, A B^T, A^T B; the BLAS call and the
// generated schedule) with compileKernels(), loads them through
// MonarchKernelRuntime and times them against the same loop in C (clang-22
// -O3 -march=native), memcpy and single-threaded OpenBLAS cblas_sgemm. The
// contenders alternate (A B A B ...) in one process and medians are
// reported, because the machine is shared and noisy; times are the CPU
// time of the calling thread. Targets (printed, not
// asserted): elementwise >= 0.9 of C, matmul >= 0.8 of OpenBLAS.
//
//===----------------------------------------------------------------------===//
#include "monarch/Codegen/KernelCompiler.h"
#include "monarch/Executor/KernelRuntime.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include <time.h>

#include <cblas.h>

extern "C" void monarch_bench_c_relu_chain(const float *a, const float *b,
                                           const float *c, float *out, long n);

using namespace monarch::codegen;
using namespace monarch::plan;
using namespace monarch::executor;

namespace {

/// CPU time of this thread: the machine is shared, and time spent
/// descheduled would otherwise land on whichever contender was running.
double threadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
}

double seconds(const std::function<void()> &fn) {
  double start = threadSeconds();
  fn();
  return threadSeconds() - start;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

/// Runs the contenders alternately `reps` times each; returns median times.
std::vector<double> alternate(const std::vector<std::function<void()>> &fns,
                              int reps) {
  for (const auto &fn : fns) // warm-up: page faults, caches, lazy binding
    fn();
  std::vector<std::vector<double>> times(fns.size());
  for (int r = 0; r < reps; ++r)
    for (size_t i = 0; i < fns.size(); ++i)
      times[i].push_back(seconds(fns[i]));
  std::vector<double> medians;
  for (auto &t : times)
    medians.push_back(median(t));
  return medians;
}

std::string elementwiseSource(long n) {
  std::string t = "tensor<" + std::to_string(n) + "xf32>";
  return R"(
#id = affine_map<(d0) -> (d0)>
func.func private @chain(%a: )" +
         t + ", %b: " + t + ", %c: " + t + ", %out: memref<" +
         std::to_string(n) + R"(xf32>) {
  %zero = arith.constant 0.0 : f32
  %half = arith.constant 0.5 : f32
  %e = tensor.empty() : )" +
         t + R"(
  %r = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel"]}
      ins(%a, %b, %c : )" +
         t + ", " + t + ", " + t + ") outs(%e : " + t + R"() {
  ^bb0(%x: f32, %y: f32, %z: f32, %o: f32):
    %m = arith.mulf %x, %y : f32
    %s = arith.addf %m, %z : f32
    %p = arith.maximumf %s, %zero : f32
    %h = arith.mulf %p, %half : f32
    linalg.yield %h : f32
  } -> )" +
         t + R"(
  bufferization.materialize_in_destination %r in restrict writable %out : ()" +
         t + ", memref<" + std::to_string(n) + R"(xf32>) -> ()
  return
}
)";
}

/// C = A B on n x n float32 matrices in one of the layouts a training step
/// has: "AB" (forward; linalg.matmul, which the packed schedule takes),
/// "ABt" (x @ w.T; the backward's g @ w.T) and "AtB" (the weight gradient
/// x.T @ g), the latter two as the linalg.generic the tracer emits.
std::string matmulSource(int n, const std::string &layout) {
  std::string s = std::to_string(n);
  std::string t = "tensor<" + s + "x" + s + "xf32>";
  std::string aMap = layout == "AtB" ? "(k, m)" : "(m, k)";
  std::string bMap = layout == "ABt" ? "(n, k)" : "(k, n)";
  std::string product =
      layout == "AB"
          ? "  %c = linalg.matmul ins(%a, %b : " + t + ", " + t +
                ") outs(%z : " + t + ") -> " + t + "\n"
          : "  %c = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> " +
                aMap + ">, affine_map<(m, n, k) -> " + bMap +
                ">, affine_map<(m, n, k) -> (m, n)>], iterator_types = "
                "[\"parallel\", \"parallel\", \"reduction\"]} ins(%a, %b "
                ": " +
                t + ", " + t + ") outs(%z : " + t +
                ") {\n  ^bb0(%x: f32, %y: f32, %acc: f32):\n"
                "    %p = arith.mulf %x, %y : f32\n"
                "    %q = arith.addf %acc, %p : f32\n"
                "    linalg.yield %q : f32\n  } -> " +
                t + "\n";
  return "func.func private @mm(%a: " + t + ", %b: " + t + ", %out: memref<" +
         s + "x" + s + "xf32>) {\n" +
         "  %zero = arith.constant 0.0 : f32\n"
         "  %e = tensor.empty() : " +
         t + "\n  %z = linalg.fill ins(%zero : f32) outs(%e : " + t + ") -> " +
         t + "\n" + product +
         "  bufferization.materialize_in_destination %c in restrict "
         "writable %out : (" +
         t + ", memref<" + s + "x" + s + "xf32>) -> ()\n  return\n}\n";
}

struct Compiled {
  std::unique_ptr<LoadedKernelLibrary> library;
  KernelFunction fn = nullptr;
  double compileMs = 0;
};

bool compile(mlir::MLIRContext &ctx, const std::string &source, Compiled &out) {
  auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
  if (!module)
    return false;
  std::vector<mlir::func::FuncOp> kernels(
      module->getOps<mlir::func::FuncOp>().begin(),
      module->getOps<mlir::func::FuncOp>().end());
  auto start = std::chrono::steady_clock::now();
  mlir::FailureOr<KernelLibrary> lib =
      compileKernels(*module, kernels, KernelCompileOptions());
  out.compileMs = std::chrono::duration<double, std::milli>(
                      std::chrono::steady_clock::now() - start)
                      .count();
  if (mlir::failed(lib))
    return false;
  auto loaded = LoadedKernelLibrary::load(lib->binary, "bench kernels");
  if (!loaded) {
    llvm::errs() << loaded.status().toString() << "\n";
    return false;
  }
  out.library = std::move(loaded.value());
  auto fn = out.library->lookup(lib->kernels.front().symbol);
  if (!fn)
    return false;
  out.fn = *fn;
  return true;
}

} // namespace

int main(int argc, char **argv) {
  // bench_kernels [REPS] [elementwise|matmul] [MATMUL_SIZE]
  int reps = argc > 1 ? std::max(1, std::atoi(argv[1])) : 9;
  std::string only = argc > 2 ? argv[2] : "";
  openblas_set_num_threads(1);
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  ctx.loadAllAvailableDialects();
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1, 1);
  bool ok = true;

  llvm::outs() << llvm::format("%-26s %-24s %10s %10s %7s %7s\n", "kernel",
                               "path", "generated", "reference", "ratio",
                               "target");

  // Elementwise chain, 16M float32: 3 loads + 1 store per element.
  if (only.empty() || only == "elementwise") {
    const long n = 16l << 20;
    std::vector<float> a(n), b(n), c(n), out(n), ref(n);
    for (long i = 0; i < n; ++i) {
      a[i] = dist(rng);
      b[i] = dist(rng);
      c[i] = dist(rng);
    }
    Compiled chain;
    if (!compile(ctx, elementwiseSource(n), chain)) {
      llvm::errs() << "bench_kernels: compiling the elementwise chain failed\n";
      return 1;
    }
    void *buffers[] = {a.data(), b.data(), c.data(), out.data()};
    std::vector<double> t = alternate(
        {[&] { chain.fn(buffers); },
         [&] {
           monarch_bench_c_relu_chain(a.data(), b.data(), c.data(), ref.data(),
                                      n);
         },
         [&] { std::memcpy(ref.data(), a.data(), n * sizeof(float)); }},
        reps);
    monarch_bench_c_relu_chain(a.data(), b.data(), c.data(), ref.data(), n);
    for (long i = 0; i < n; ++i)
      if (std::fabs(out[i] - ref[i]) > 1e-6f * (1 + std::fabs(ref[i]))) {
        llvm::errs() << "bench_kernels: elementwise result differs at " << i
                     << "\n";
        ok = false;
        break;
      }
    double bytes = 16.0 * n, copyBytes = 8.0 * n;
    double gen = bytes / t[0] / 1e9, cLoop = bytes / t[1] / 1e9,
           copy = copyBytes / t[2] / 1e9;
    llvm::outs() << llvm::format(
        "%-26s %-24s %7.1f GB/s %5.1f GB/s %7.2f %7s\n",
        "relu(a*b+c)*0.5 16M f32", "generated (tile 16)", gen, cLoop,
        gen / cLoop, ">=0.90");
    llvm::outs() << llvm::format("%-26s %-24s %7.1f GB/s %5.1f GB/s %7.2f\n",
                                 "  vs memcpy 64 MiB", "", gen, copy,
                                 gen / copy);
    llvm::outs() << llvm::format("  (compile %.0f ms)\n", chain.compileMs);
  }

  // Matmul C = A * B, float32, in the layouts of a training step, through
  // both CPU paths (MONARCH_CPU_GEMM: the BLAS call, the default, and the
  // generated schedule), against single-threaded OpenBLAS called directly.
  // The generated path of the transposed layouts has no packed schedule
  // (generic tile-and-vectorize): only 512^3 is timed there.
  std::vector<int> sizes = {512, 1024};
  if (argc > 3)
    sizes = {std::atoi(argv[3])};
  struct Path {
    const char *knob, *label;
  };
  for (int n : sizes) {
    if (!only.empty() && only != "matmul")
      break;
    std::vector<float> a(size_t(n) * n), b(size_t(n) * n), out(size_t(n) * n),
        ref(size_t(n) * n);
    for (auto &x : a)
      x = dist(rng);
    for (auto &x : b)
      x = dist(rng);
    for (std::string layout : {"AB", "ABt", "AtB"}) {
      for (Path path :
           {Path{"blas", "blas call"}, Path{"generated", "generated"}}) {
        std::string knob = path.knob;
        ::setenv("MONARCH_CPU_GEMM", path.knob, 1);
        Compiled mm;
        bool compiled = compile(ctx, matmulSource(n, layout), mm);
        ::unsetenv("MONARCH_CPU_GEMM");
        if (!compiled) {
          llvm::errs() << "bench_kernels: compiling matmul " << n << " "
                       << layout << " failed\n";
          return 1;
        }
        void *buffers[] = {a.data(), b.data(), out.data()};
        int mmReps = n >= 1024 ? std::max(3, reps / 2) : reps;
        auto transA = layout == "AtB" ? CblasTrans : CblasNoTrans;
        auto transB = layout == "ABt" ? CblasTrans : CblasNoTrans;
        std::vector<double> t = alternate(
            {[&] { mm.fn(buffers); },
             [&] {
               cblas_sgemm(CblasRowMajor, transA, transB, n, n, n, 1.0f,
                           a.data(), n, b.data(), n, 0.0f, ref.data(), n);
             }},
            mmReps);
        double maxErr = 0;
        for (size_t i = 0; i < out.size(); ++i)
          maxErr = std::max(maxErr, double(std::fabs(out[i] - ref[i])));
        if (maxErr > 1e-3 * std::sqrt(double(n))) {
          llvm::errs() << "bench_kernels: matmul " << n << " " << layout
                       << " differs from OpenBLAS by " << maxErr << "\n";
          ok = false;
        }
        double flops = 2.0 * n * n * n;
        double gen = flops / t[0] / 1e9, blas = flops / t[1] / 1e9;
        std::string name = "sgemm " + layout + " " + std::to_string(n) + "^3";
        std::string label =
            std::string(path.label) + (knob == "generated" ? " (packed)" : "");
        llvm::outs() << llvm::format(
            "%-26s %-24s %6.1f GF/s %6.1f GF/s %6.2f %7s\n", name.c_str(),
            label.c_str(), gen, blas, gen / blas,
            // Issue 35 item 4 asks 0.9 of OpenBLAS for the backward's layouts.
            layout == "AB" ? ">=0.80" : ">=0.90");
        llvm::outs() << llvm::format("  (compile %.0f ms)\n", mm.compileMs);
      }
    }
  }
  return ok ? 0 : 1;
}
