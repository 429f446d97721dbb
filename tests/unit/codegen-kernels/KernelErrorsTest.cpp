//===- KernelErrorsTest.cpp - Bad kernels, bad libraries ------ -*- C++ -*-===//
//
// Every kernel that breaks the ABI of KernelCompiler.h gets a diagnostic
// naming it; the runtime answers bad libraries, unknown symbols and null
// buffer lists with a Status; identical kernels share a symbol.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

#include "mlir/Parser/Parser.h"

using namespace monarch;
using namespace monarch::test;

namespace {

using KernelErrorsTest = KernelTest;

TEST_F(KernelErrorsTest, DynamicShapeIsRejected) {
  std::string err = compileError(R"mlir(
func.func private @dyn(%a: tensor<?xf32>, %out: memref<4xf32>) { return }
)mlir");
  EXPECT_NE(err.find("kernel 'dyn' argument #0"), std::string::npos) << err;
  EXPECT_NE(err.find("dynamic shape"), std::string::npos) << err;
}

TEST_F(KernelErrorsTest, InputAfterOutputIsRejected) {
  std::string err = compileError(R"mlir(
func.func private @order(%out: memref<4xf32>, %a: tensor<4xf32>) { return }
)mlir");
  EXPECT_NE(err.find("inputs come first"), std::string::npos) << err;
}

TEST_F(KernelErrorsTest, ReturnedValuesAreRejected) {
  std::string err = compileError(R"mlir(
func.func private @ret(%a: tensor<4xf32>) -> tensor<4xf32> { return %a : tensor<4xf32> }
)mlir");
  EXPECT_NE(err.find("returns values"), std::string::npos) << err;
}

TEST_F(KernelErrorsTest, KernelWithoutOutputIsRejected) {
  std::string err = compileError(R"mlir(
func.func private @noout(%a: tensor<4xf32>) { return }
)mlir");
  EXPECT_NE(err.find("no memref output"), std::string::npos) << err;
}

TEST_F(KernelErrorsTest, DeclarationIsRejected) {
  std::string err = compileError(R"mlir(
func.func private @decl(%a: tensor<4xf32>, %out: memref<4xf32>)
)mlir");
  EXPECT_NE(err.find("has no body"), std::string::npos) << err;
}

TEST_F(KernelErrorsTest, UnsupportedElementTypeIsRejected) {
  std::string err = compileError(R"mlir(
func.func private @cplx(%a: tensor<4xcomplex<f32>>, %out: memref<4xf32>) { return }
)mlir");
  EXPECT_NE(err.find("unsupported element type"), std::string::npos) << err;
}

TEST_F(KernelErrorsTest, CallsToOtherSymbolsAreRejected) {
  std::string err = compileError(R"mlir(
func.func private @helper(memref<4xf32>)
func.func private @k(%a: tensor<4xf32>, %out: memref<4xf32>) {
  call @helper(%out) : (memref<4xf32>) -> ()
  return
}
)mlir",
                                 "k");
  EXPECT_NE(err.find("kernel 'k' references symbol @helper"), std::string::npos)
      << err;
}

TEST_F(KernelErrorsTest, RuntimeRejectsBadLibrariesAndSymbols) {
  auto garbage = executor::LoadedKernelLibrary::load("not a library", "junk");
  ASSERT_FALSE(garbage);
  EXPECT_EQ(garbage.status().code(), executor::StatusCode::InvalidArgument);
  EXPECT_NE(garbage.status().message().find("not an ELF"), std::string::npos);

  std::string truncated(4096, '\0');
  truncated.replace(0, 4,
                    "\x7f"
                    "ELF");
  auto broken = executor::LoadedKernelLibrary::load(truncated, "broken");
  ASSERT_FALSE(broken);
  EXPECT_EQ(broken.status().code(), executor::StatusCode::InvalidArgument);

  ASSERT_TRUE(compile(R"mlir(
func.func private @copy(%a: tensor<4xf32>, %out: memref<4xf32>) {
  bufferization.materialize_in_destination %a in restrict writable %out : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}
)mlir"));
  auto missing = loaded->lookup("monarch_kernel_nope");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), executor::StatusCode::NotFound);
  executor::Status nullCall = loaded->call(kernel("copy")->symbol, nullptr);
  EXPECT_EQ(nullCall.code(), executor::StatusCode::InvalidArgument);
  float in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  void *buffers[] = {in, out};
  ASSERT_TRUE(loaded->call(kernel("copy")->symbol, buffers).isOk());
  EXPECT_EQ(out[3], 4.0f);
}

TEST_F(KernelErrorsTest, LibrariesLoadedTogetherStayDistinct) {
  // Regression: with the memory file closed after dlopen, the next library
  // got the same /proc/self/fd/N path and dlopen answered with the first.
  auto build = [&](const char *op) {
    std::string source =
        std::string(R"mlir(
func.func private @k(%x: tensor<8xf32>, %out: memref<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %r = )mlir") +
        op +
        R"mlir( ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8xf32>, memref<8xf32>) -> ()
  return
}
)mlir";
    auto module = mlir::parseSourceString<mlir::ModuleOp>(source, &ctx);
    auto k = module->lookupSymbol<mlir::func::FuncOp>("k");
    return codegen::compileKernels(*module, {k},
                                   codegen::KernelCompileOptions());
  };
  auto add = build("linalg.add");
  auto mul = build("linalg.mul");
  ASSERT_TRUE(mlir::succeeded(add) && mlir::succeeded(mul));
  auto addLib = executor::LoadedKernelLibrary::load(add->binary, "add");
  auto mulLib = executor::LoadedKernelLibrary::load(mul->binary, "mul");
  ASSERT_TRUE(addLib && mulLib);
  float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, sum[8], product[8];
  void *addArgs[] = {in, sum}, *mulArgs[] = {in, product};
  ASSERT_TRUE((*mulLib)->call(mul->kernels[0].symbol, mulArgs).isOk());
  ASSERT_TRUE((*addLib)->call(add->kernels[0].symbol, addArgs).isOk());
  EXPECT_EQ(sum[7], 16.0f);
  EXPECT_EQ(product[7], 64.0f);
  EXPECT_FALSE((*addLib)->lookup(mul->kernels[0].symbol));
}

TEST_F(KernelErrorsTest, IdenticalKernelsShareOneSymbol) {
  ASSERT_TRUE(compile(R"mlir(
func.func private @a(%x: tensor<8xf32>, %out: memref<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.add ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8xf32>, memref<8xf32>) -> ()
  return
}
func.func private @b(%y: tensor<8xf32> {test.note = "renamed"}, %o: memref<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.add ins(%y, %y : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  bufferization.materialize_in_destination %r in restrict writable %o : (tensor<8xf32>, memref<8xf32>) -> ()
  return
}
func.func private @c(%x: tensor<8xf32>, %out: memref<8xf32>) {
  %e = tensor.empty() : tensor<8xf32>
  %r = linalg.mul ins(%x, %x : tensor<8xf32>, tensor<8xf32>) outs(%e : tensor<8xf32>) -> tensor<8xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<8xf32>, memref<8xf32>) -> ()
  return
}
)mlir"));
  ASSERT_EQ(library.kernels.size(), 3u);
  EXPECT_EQ(library.kernels[0].name, "a");
  EXPECT_EQ(library.kernels[1].name, "b");
  EXPECT_EQ(library.kernels[0].symbol, library.kernels[1].symbol);
  EXPECT_NE(library.kernels[0].symbol, library.kernels[2].symbol);
  // Both names run the shared code.
  std::mt19937 rng(5);
  std::vector<HostBuffer> in = {randomBuffer("f32", {8}, rng)};
  std::vector<HostBuffer> outA = {HostBuffer("f32", {8})};
  std::vector<HostBuffer> outB = {HostBuffer("f32", {8})};
  ASSERT_TRUE(run("a", in, outA));
  ASSERT_TRUE(run("b", in, outB));
  EXPECT_TRUE(allClose(outA[0], outB[0], 0, 0));
  EXPECT_EQ(outA[0].at(3), 2 * in[0].at(3));
}

} // namespace
