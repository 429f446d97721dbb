//===- CudaRuntimeTest.cpp - cuBLAS table, manifests ---------- -*- C++ -*-===//
//
// The CUDA target turns matmuls into cuBLAS calls (CudaGemm.cpp): the
// compiled library's manifests and GemmCall tables are checked through
// MonarchCudaRuntime's parser (no device needed), malformed libraries are
// rejected, and on a machine with a GPU the kernels run through the runtime
// and are compared with a direct loop reference. Device tests skip when
// CudaDevice::open reports Unavailable.
//
//===----------------------------------------------------------------------===//
#include "monarch/Executor/CudaRuntime.h"
#include "monarch/Codegen/KernelCompiler.h"
#include "monarch/Executor/KernelRuntime.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <thread>

using namespace monarch::codegen;
using namespace monarch::plan;
using namespace monarch::executor;

namespace {

// matmul + bias + relu (the matmul writes a temporary the PTX reads), a
// matmul with B transposed through its map, an f16 batch matmul into f32.
const char *kKernels = R"mlir(
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#col = affine_map<(d0, d1) -> (d1)>
func.func private @mbr(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>, %c: tensor<32xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x32xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  %r = linalg.generic {indexing_maps = [#id2, #col, #id2], iterator_types = ["parallel", "parallel"]} ins(%m, %c : tensor<8x32xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    %p = arith.maximumf %s, %zero : f32
    linalg.yield %p : f32
  } -> tensor<8x32xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
  return
}
func.func private @tb(%a: tensor<8x16xf32>, %b: tensor<32x16xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x16xf32>, tensor<32x16xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
  return
}
func.func private @bmm(%a: tensor<3x8x16xf16>, %b: tensor<3x16x4xf16>, %out: memref<3x8x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<3x8x4xf32>) -> tensor<3x8x4xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<3x8x16xf16>, tensor<3x16x4xf16>) outs(%z : tensor<3x8x4xf32>) -> tensor<3x8x4xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<3x8x4xf32>, memref<3x8x4xf32>) -> ()
  return
}
func.func private @acc(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<4x16xf32>, %out: memref<4x16xf32>) {
  %m = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x16xf32>) outs(%c : tensor<4x16xf32>) -> tensor<4x16xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<4x16xf32>, memref<4x16xf32>) -> ()
  return
}
)mlir";

class CudaRuntimeTest : public ::testing::Test {
protected:
  void SetUp() override {
    mlir::DialectRegistry registry;
    mlir::registerAllDialects(registry);
    ctx.appendDialectRegistry(registry);
    module = mlir::parseSourceString<mlir::ModuleOp>(kKernels, &ctx);
    ASSERT_TRUE(module);
    for (auto fn : module->getOps<mlir::func::FuncOp>())
      kernels.push_back(fn);
    KernelCompileOptions options;
    options.target = KernelTarget::Cuda;
    auto lib = compileKernels(*module, kernels, options);
    ASSERT_TRUE(mlir::succeeded(lib));
    cuda = std::move(*lib);
    for (const CompiledKernel &k : cuda.kernels)
      if (!k.gemms.empty())
        tables[k.symbol] = k.gemms;
  }

  const CompiledKernel &compiled(const std::string &name) {
    for (const CompiledKernel &k : cuda.kernels)
      if (k.name == name)
        return k;
    ADD_FAILURE() << "no kernel " << name;
    return cuda.kernels.front();
  }

  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  std::vector<mlir::func::FuncOp> kernels;
  KernelLibrary cuda;
  std::map<std::string, std::vector<GemmCall>> tables;
};

TEST_F(CudaRuntimeTest, MatmulsBecomeCublasCallsBetweenPtxLaunches) {
  auto parsed = parseCudaLibrary(cuda.binary, tables);
  ASSERT_TRUE(parsed.isOk()) << parsed.status().toString();

  // mbr: the gemm writes temporary s0 (beta 0: the zero fill is gone), then
  // one PTX launch adds the bias and applies relu.
  const CudaKernelProgram &mbr = parsed->at(compiled("mbr").symbol);
  ASSERT_EQ(mbr.steps.size(), 2u);
  EXPECT_EQ(mbr.steps[0].gemm, 0);
  EXPECT_LT(mbr.steps[1].gemm, 0);
  EXPECT_EQ(mbr.numLaunches(), 1u);
  ASSERT_EQ(mbr.gemms.size(), 1u);
  const GemmCall &g = mbr.gemms[0];
  // Row-major C[8][32] = A[8][16] B[16][32] is column-major
  // C^T = B^T A^T: m = 32, n = 8, k = 16, cuBLAS A = our B (a1).
  EXPECT_FALSE(g.transA);
  EXPECT_FALSE(g.transB);
  EXPECT_EQ(g.m, 32);
  EXPECT_EQ(g.n, 8);
  EXPECT_EQ(g.k, 16);
  EXPECT_EQ(g.lda, 32);
  EXPECT_EQ(g.ldb, 16);
  EXPECT_EQ(g.ldc, 32);
  EXPECT_EQ(g.batch, 1);
  EXPECT_EQ(g.beta, 0.0);
  EXPECT_EQ(g.a, "a1");
  EXPECT_EQ(g.b, "a0");
  EXPECT_EQ(g.c, "s0");
  EXPECT_EQ(mbr.scratchBytes, std::vector<int64_t>{8 * 32 * 4});

  // tb: B is [32][16] read transposed, so cuBLAS transposes its A.
  const CudaKernelProgram &tb = parsed->at(compiled("tb").symbol);
  ASSERT_EQ(tb.gemms.size(), 1u);
  EXPECT_TRUE(tb.gemms[0].transA);
  EXPECT_FALSE(tb.gemms[0].transB);
  EXPECT_EQ(tb.gemms[0].lda, 16);
  EXPECT_EQ(tb.gemms[0].c, "a2");
  EXPECT_EQ(tb.numLaunches(), 0u); // a kernel that is only a cuBLAS call

  // bmm: strided batched, f16 inputs accumulating in f32.
  const GemmCall &b = parsed->at(compiled("bmm").symbol).gemms.at(0);
  EXPECT_EQ(b.batch, 3);
  EXPECT_EQ(b.m, 4);
  EXPECT_EQ(b.n, 8);
  EXPECT_EQ(b.k, 16);
  EXPECT_EQ(b.strideA, 16 * 4);
  EXPECT_EQ(b.strideB, 8 * 16);
  EXPECT_EQ(b.strideC, 8 * 4);
  EXPECT_EQ(b.typeA, DType::F16);
  EXPECT_EQ(b.typeC, DType::F32);

  // acc: accumulates into a copy of its input c, so beta stays 1.
  const CudaKernelProgram &acc = parsed->at(compiled("acc").symbol);
  ASSERT_EQ(acc.gemms.size(), 1u);
  EXPECT_EQ(acc.gemms[0].beta, 1.0);
}

TEST_F(CudaRuntimeTest, MalformedLibrariesAreRejected) {
  auto errorOf = [](std::string_view code,
                    const std::map<std::string, std::vector<GemmCall>> &t) {
    auto parsed = parseCudaLibrary(code, t);
    EXPECT_FALSE(parsed.isOk());
    if (parsed.isOk())
      return std::string();
    EXPECT_EQ(parsed.status().code(),
              monarch::executor::StatusCode::InvalidArgument);
    return parsed.status().message();
  };
  // The table without the library's gemm entries.
  EXPECT_NE(errorOf(cuda.binary, {}).find("but its cuBLAS table has 0"),
            std::string::npos);
  // Table entries for a kernel the library lacks.
  auto extra = tables;
  extra["monarch_kernel_nosuch"] = tables.begin()->second;
  EXPECT_NE(errorOf(cuda.binary, extra).find("does not contain"),
            std::string::npos);
  std::string header = "// monarch.ptx-module k\n// monarch.kernel k args=2\n";
  GemmCall g;
  EXPECT_NE(
      errorOf(header + "// monarch.gemm k 0 operands=a0,a1,a5\n", {{"k", {g}}})
          .find("operand a5 out of range"),
      std::string::npos);
  EXPECT_NE(errorOf(header, {{"k", {g}}}).find("1 cuBLAS table entries but 0"),
            std::string::npos);
  EXPECT_NE(
      errorOf(header + "// monarch.gemm k 0 operands=a0,a1\n", {{"k", {g}}})
          .find("line '// monarch.gemm"),
      std::string::npos);
  EXPECT_NE(errorOf(header + "// monarch.frobnicate k\n", {})
                .find("unknown manifest line"),
            std::string::npos);
  EXPECT_NE(errorOf("just text", {}).find("no '// monarch.ptx-module'"),
            std::string::npos);
}

/// Host reference: row-major C = A B (+ C0), floats widened to double.
std::vector<double> matmulReference(const std::vector<float> &a,
                                    const std::vector<float> &b, int64_t m,
                                    int64_t n, int64_t k, bool transB) {
  std::vector<double> c(m * n, 0.0);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j)
      for (int64_t p = 0; p < k; ++p)
        c[i * n + j] +=
            double(a[i * k + p]) * (transB ? b[j * k + p] : b[p * n + j]);
  return c;
}

TEST_F(CudaRuntimeTest, RunsOnTheDeviceAgainstAHostReference) {
  auto device = CudaDevice::open();
  if (!device.isOk()) {
    EXPECT_EQ(device.status().code(),
              monarch::executor::StatusCode::Unavailable);
    GTEST_SKIP() << "no device, skipped: " << device.status().message();
  }
  auto lib = LoadedCudaLibrary::load(**device, cuda.binary, tables);
  ASSERT_TRUE(lib.isOk()) << lib.status().toString();
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> dist(-1, 1);
  auto random = [&](size_t n) {
    std::vector<float> v(n);
    for (float &x : v)
      x = dist(rng);
    return v;
  };
  auto run = [&](const std::string &name,
                 std::vector<std::vector<float>> args) -> std::vector<float> {
    std::vector<uint64_t> ptrs;
    for (auto &arg : args) {
      auto p = (*device)->alloc(arg.size() * 4);
      EXPECT_TRUE(p.isOk());
      ptrs.push_back(*p);
      EXPECT_TRUE((*device)->copyToDevice(*p, arg.data(), arg.size() * 4));
    }
    monarch::executor::Status s = (*lib)->run(compiled(name).symbol, ptrs);
    EXPECT_TRUE(s.isOk()) << s.toString();
    std::vector<float> out(args.back().size());
    EXPECT_TRUE((*device)->copyToHost(out.data(), ptrs.back(), out.size() * 4));
    for (uint64_t p : ptrs)
      (*device)->free(p);
    return out;
  };
  auto a = random(8 * 16), b = random(16 * 32), bias = random(32),
       bt = random(32 * 16);
  std::vector<float> got = run("mbr", {a, b, bias, std::vector<float>(256)});
  std::vector<double> want = matmulReference(a, b, 8, 32, 16, false);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], std::max(0.0, want[i] + bias[i % 32]), 1e-4) << i;
  got = run("tb", {a, bt, std::vector<float>(256)});
  want = matmulReference(a, bt, 8, 32, 16, true);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-4) << i;
  auto a2 = random(4 * 8), b2 = random(8 * 16), c2 = random(4 * 16);
  got = run("acc", {a2, b2, c2, std::vector<float>(64)});
  want = matmulReference(a2, b2, 4, 16, 8, false);
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_NEAR(got[i], want[i] + c2[i], 1e-4) << i;
}

// Kernels that are only a matmul: the cuBLAS table alone computes them.
const char *kGemmOnly = R"mlir(
func.func private @ta(%a: tensor<16x8xf32>, %b: tensor<16x32xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<16x8xf32>, tensor<16x32xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
  return
}
func.func private @tb(%a: tensor<8x16xf32>, %b: tensor<32x16xf32>, %out: memref<8x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %m = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%a, %b : tensor<8x16xf32>, tensor<32x16xf32>) outs(%z : tensor<8x32xf32>) -> tensor<8x32xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<8x32xf32>, memref<8x32xf32>) -> ()
  return
}
func.func private @rows(%a: tensor<8x4xf32>, %w: tensor<4x6xf32>, %out: memref<2x6xf32>) {
  %zero = arith.constant 0.0 : f32
  %s = tensor.extract_slice %a[2, 0] [2, 4] [1, 1] : tensor<8x4xf32> to tensor<2x4xf32>
  %e = tensor.empty() : tensor<2x6xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x6xf32>) -> tensor<2x6xf32>
  %m = linalg.matmul ins(%s, %w : tensor<2x4xf32>, tensor<4x6xf32>) outs(%z : tensor<2x6xf32>) -> tensor<2x6xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<2x6xf32>, memref<2x6xf32>) -> ()
  return
}
func.func private @bmm(%a: tensor<3x5x7xf32>, %b: tensor<3x7x4xf32>, %out: memref<3x5x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x5x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<3x5x4xf32>) -> tensor<3x5x4xf32>
  %m = linalg.batch_matmul ins(%a, %b : tensor<3x5x7xf32>, tensor<3x7x4xf32>) outs(%z : tensor<3x5x4xf32>) -> tensor<3x5x4xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<3x5x4xf32>, memref<3x5x4xf32>) -> ()
  return
}
)mlir";

/// cublasSgemm(StridedBatched) semantics on host f32 buffers, column-major,
/// as the cuBLAS documentation defines them; operands resolved like the
/// runtime resolves them ("aI" plus a byte offset).
void emulateGemm(const GemmCall &g, std::vector<std::vector<float>> &args) {
  auto resolve = [&](const std::string &op) -> float * {
    size_t plus = op.find('+');
    unsigned index = std::stoul(
        op.substr(1, plus == std::string::npos ? std::string::npos : plus - 1));
    size_t bytes =
        plus == std::string::npos ? 0 : std::stoul(op.substr(plus + 1));
    EXPECT_EQ(op[0], 'a') << "emulation handles argument operands only";
    return args.at(index).data() + bytes / 4;
  };
  for (int64_t batch = 0; batch < g.batch; ++batch) {
    const float *A = resolve(g.a) + batch * g.strideA;
    const float *B = resolve(g.b) + batch * g.strideB;
    float *C = resolve(g.c) + batch * g.strideC;
    for (int64_t j = 0; j < g.n; ++j)
      for (int64_t i = 0; i < g.m; ++i) {
        double sum = 0;
        for (int64_t p = 0; p < g.k; ++p) {
          double a = g.transA ? A[p + i * g.lda] : A[i + p * g.lda];
          double b = g.transB ? B[j + p * g.ldb] : B[p + j * g.ldb];
          sum += a * b;
        }
        float &c = C[i + j * g.ldc];
        c = static_cast<float>(g.alpha * sum + g.beta * c);
      }
  }
}

// Without a device: the table's cuBLAS arguments (column-major mapping,
// transposes, leading dimensions, offsets, batch strides), executed with
// cuBLAS's documented semantics on the host, give what the CPU kernels give.
TEST(CudaGemmTableTest, EmulatedCublasCallsMatchTheCpuKernels) {
  mlir::MLIRContext ctx;
  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  ctx.appendDialectRegistry(registry);
  auto module = mlir::parseSourceString<mlir::ModuleOp>(kGemmOnly, &ctx);
  ASSERT_TRUE(module);
  std::vector<mlir::func::FuncOp> fns(
      module->getOps<mlir::func::FuncOp>().begin(),
      module->getOps<mlir::func::FuncOp>().end());
  KernelCompileOptions cudaOptions;
  cudaOptions.target = KernelTarget::Cuda;
  auto cuda = compileKernels(*module, fns, cudaOptions);
  KernelCompileOptions cpuOptions;
  cpuOptions.parameters = false; // Compared kernel by kernel with CUDA's.
  auto cpu = compileKernels(*module, fns, cpuOptions);
  ASSERT_TRUE(mlir::succeeded(cuda) && mlir::succeeded(cpu));
  auto loaded = LoadedKernelLibrary::load(cpu->binary, "cpu");
  ASSERT_TRUE(loaded.isOk()) << loaded.status().toString();
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> dist(-1, 1);
  for (size_t k = 0; k < fns.size(); ++k) {
    SCOPED_TRACE(fns[k].getSymName().str());
    ASSERT_EQ(cuda->kernels[k].gemms.size(), 1u);
    std::vector<std::vector<float>> args;
    for (mlir::Type type : fns[k].getArgumentTypes()) {
      std::vector<float> v(mlir::cast<mlir::ShapedType>(type).getNumElements());
      for (float &x : v)
        x = dist(rng);
      args.push_back(v);
    }
    std::vector<std::vector<float>> host = args;
    std::vector<void *> ptrs;
    for (auto &a : args)
      ptrs.push_back(a.data());
    ASSERT_TRUE((*loaded)->call(cpu->kernels[k].symbol, ptrs.data()).isOk());
    emulateGemm(cuda->kernels[k].gemms[0], host);
    for (size_t i = 0; i < args.back().size(); ++i)
      ASSERT_NEAR(host.back()[i], args.back()[i], 1e-5) << "element " << i;
  }
}

TEST(CudaDeviceTest, UsableFromAThreadOtherThanTheOpener) {
  // A worker opens the device while loading a plan and uses it from its
  // request and stream threads.
  auto device = CudaDevice::open();
  if (!device.isOk())
    GTEST_SKIP() << "no device, skipped: " << device.status().message();
  std::vector<float> in = {1.0f, 2.0f, 3.0f, 4.0f}, out(4, 0.0f);
  monarch::executor::Status status = monarch::executor::Status::ok();
  std::thread other([&] {
    auto p = (*device)->alloc(in.size() * sizeof(float));
    if (!p.isOk()) {
      status = p.status();
      return;
    }
    status = (*device)->copyToDevice(*p, in.data(), in.size() * sizeof(float));
    if (status)
      status =
          (*device)->copyToHost(out.data(), *p, out.size() * sizeof(float));
    (*device)->free(*p);
  });
  other.join();
  ASSERT_TRUE(status.isOk()) << status.toString();
  EXPECT_EQ(out, in);
}

TEST(CudaDeviceTest, OpeningWithoutADeviceIsUnavailableNotACrash) {
  auto device = CudaDevice::open(/*ordinal=*/1000);
  ASSERT_FALSE(device.isOk());
  EXPECT_EQ(device.status().code(), monarch::executor::StatusCode::Unavailable);
  EXPECT_FALSE(device.status().message().empty());
}

} // namespace
