//===- ExamplePlansTest.cpp - The kernels --------------------- -*- C++ -*-===//
//
// Each program of examples/ir goes through the registered stage pipelines
// to planned IR; every kernel named by a monarch.launch is compiled with the
// optimized CPU pipeline and with the reference lowering (upstream scalar
// loops, no fusion, schedules or vectorization), run on the same random
// inputs, and the outputs are compared. Identical kernels must share one
// symbol and distinct ones must not.
//
//===----------------------------------------------------------------------===//
#include "KernelTestUtils.h"

#include "monarch/Executor/KernelRuntime.h"
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/InitAllDialects.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringMap.h"

using namespace monarch;
using namespace monarch::test;

namespace {

std::string dtypeOf(mlir::Type type) {
  if (type.isF32())
    return "f32";
  if (type.isF16())
    return "f16";
  if (type.isBF16())
    return "bf16";
  if (type.isF64())
    return "f64";
  if (type.isInteger(32))
    return "i32";
  if (type.isInteger(64))
    return "i64";
  return "";
}

class ExamplePlansTest : public ::testing::TestWithParam<const char *> {};

TEST_P(ExamplePlansTest, OptimizedKernelsMatchReferenceLowering) {
  mlir::DialectRegistry registry;
  registerMonarchDialects(registry);
  mlir::registerAllDialects(registry);
  mlir::MLIRContext ctx(registry);
  std::string path =
      std::string(MONARCH_SOURCE_DIR) + "/examples/ir/" + GetParam() + ".mlir";
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceFile<mlir::ModuleOp>(path, &ctx);
  ASSERT_TRUE(module) << "cannot parse " << path;
  mlir::PassManager pm(&ctx);
  populateStagePipelines(pm, Stage::Traced, Stage::Planned, PipelineOptions());
  ASSERT_TRUE(mlir::succeeded(pm.run(*module))) << "pipeline failed";

  llvm::SetVector<mlir::func::FuncOp> kernels;
  size_t launches = 0;
  module->walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() != "monarch.launch")
      return;
    ++launches;
    auto sym = op->getAttrOfType<mlir::FlatSymbolRefAttr>("kernel");
    if (auto fn = module->lookupSymbol<mlir::func::FuncOp>(sym))
      kernels.insert(fn);
  });
  ASSERT_FALSE(kernels.empty());

  codegen::KernelCompileOptions optimized, reference;
  reference.referenceLowering = true;
  auto fast =
      codegen::compileKernels(*module, kernels.getArrayRef(), optimized);
  auto slow =
      codegen::compileKernels(*module, kernels.getArrayRef(), reference);
  ASSERT_TRUE(mlir::succeeded(fast) && mlir::succeeded(slow));
  auto fastLib = executor::LoadedKernelLibrary::load(fast->binary, "optimized");
  auto slowLib = executor::LoadedKernelLibrary::load(slow->binary, "reference");
  ASSERT_TRUE(fastLib && slowLib);
  // Same symbols, different code: each library must answer with its own.
  auto fastFn = (*fastLib)->lookup(fast->kernels.front().symbol);
  auto slowFn = (*slowLib)->lookup(slow->kernels.front().symbol);
  ASSERT_TRUE(fastFn && slowFn);
  ASSERT_NE(*fastFn, *slowFn) << "both libraries resolve to the same code";

  // Dedupe: one symbol per distinct printed body.
  llvm::StringMap<std::string> bodyOfSymbol;
  std::mt19937 rng(3);
  for (size_t i = 0; i < kernels.size(); ++i) {
    mlir::func::FuncOp fn = kernels[i];
    const codegen::CompiledKernel &kf = fast->kernels[i];
    const codegen::CompiledKernel &ks = slow->kernels[i];
    SCOPED_TRACE(kf.name);
    ASSERT_EQ(kf.name, fn.getSymName().str());
    std::vector<HostBuffer> inputs, outA, outB;
    for (mlir::Type type : fn.getArgumentTypes()) {
      auto shaped = mlir::cast<mlir::ShapedType>(type);
      std::string dtype = dtypeOf(shaped.getElementType());
      ASSERT_FALSE(dtype.empty()) << "unexpected element type in " << kf.name;
      std::vector<int64_t> shape(shaped.getShape().begin(),
                                 shaped.getShape().end());
      if (mlir::isa<mlir::RankedTensorType>(type)) {
        inputs.push_back(randomBuffer(dtype, shape, rng));
      } else {
        // Poison the outputs differently so an unwritten element shows.
        outA.push_back(randomBuffer(dtype, shape, rng, 100, 200));
        outB.push_back(randomBuffer(dtype, shape, rng, -200, -100));
      }
    }
    ASSERT_EQ(inputs.size(), kf.numInputs);
    ASSERT_EQ(outA.size(), kf.numOutputs);
    std::vector<void *> ins, outsA, outsB;
    for (HostBuffer &in : inputs)
      ins.push_back(in.bytes.data());
    for (HostBuffer &out : outA)
      outsA.push_back(out.bytes.data());
    for (HostBuffer &out : outB)
      outsB.push_back(out.bytes.data());
    std::vector<void *> a = codegen::kernelCallArguments(kf, ins, outsA),
                        b = codegen::kernelCallArguments(ks, ins, outsB);
    ASSERT_TRUE((*fastLib)->call(kf.symbol, a.data()).isOk());
    ASSERT_TRUE((*slowLib)->call(ks.symbol, b.data()).isOk());
    for (size_t o = 0; o < outA.size(); ++o)
      EXPECT_TRUE(allClose(outA[o], outB[o], 1e-5, 1e-5)) << "output " << o;

    // Kernels sharing a symbol must print the same once renamed.
    std::string body;
    llvm::raw_string_ostream os(body);
    fn.getBody().front().print(os);
    auto [it, inserted] = bodyOfSymbol.try_emplace(kf.symbol, body);
    if (!inserted) {
      EXPECT_EQ(it->second, body) << "different kernels share " << kf.symbol;
    }
  }
  // Distinct bodies got distinct symbols.
  llvm::StringMap<std::string> symbolOfBody;
  for (auto &entry : bodyOfSymbol) {
    auto [it, inserted] =
        symbolOfBody.try_emplace(entry.second, entry.first().str());
    EXPECT_TRUE(inserted) << "identical kernels got " << it->second << " and "
                          << entry.first().str();
  }
  // The ranks run the same code: fewer compiled bodies than launches (the
  // sharing is in the IR, one func.func for equal kernels, and at codegen,
  // one symbol for kernels equal once their constants are folded).
  EXPECT_LT(bodyOfSymbol.size(), launches)
      << "the example's ranks repeat kernels; expected some sharing";
}

INSTANTIATE_TEST_SUITE_P(Examples, ExamplePlansTest,
                         ::testing::Values("data_parallel", "tensor_parallel",
                                           "pipeline"));

} // namespace
