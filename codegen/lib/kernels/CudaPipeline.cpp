//===- CudaPipeline.cpp - Kernels through gpu/nvvm to PTX ----- -*- C++ -*-===//
//
// A bufferized kernel becomes a sequence of GPU launches:
//   linalg -> scf.parallel loops; work outside any parallel loop (scalar
//   code, sequential reductions) is wrapped in a one-iteration parallel loop
//   so that nothing touches device memory from the host; the innermost
//   parallel dimension is tiled by up to 256 (threads of a block), the
//   rest become the grid; gpu-map-parallel-loops, convert-parallel-loops-
//   to-gpu and gpu-kernel-outlining produce one gpu.func per launch; math is
//   approximated by polynomials (no libdevice); convert-gpu-to-nvvm with bare
//   pointers; gpu-module-to-binary{format=isa} gives PTX for options.cudaArch.
// Matmuls that cuBLAS can run become host-side calls first (CudaGemm.cpp)
// and `monarch.gemm` lines of the manifest; the others are generated loops
// (one thread per output element, k sequential).
//
// The host side that remains (allocations of temporaries, launches with
// constant grid/block sizes, views of arguments) is recorded in a manifest
// of PTX comment lines ahead of the module's PTX, read by the GPU runner:
//   // monarch.kernel SYMBOL args=N
//   // monarch.scratch SYMBOL INDEX BYTES
//   // monarch.launch SYMBOL ENTRY grid=X,Y,Z block=X,Y,Z operands=a0,s1,...
//   // monarch.gemm SYMBOL INDEX operands=A,B,C
// (aI: kernel argument I; sJ: scratch buffer J, zero-initialized never; a
// gemm operand may add a byte offset, "a0+64"; INDEX is the kernel's
// GemmCall, operands in cuBLAS order). Launches and gemms run in order.
//
//===----------------------------------------------------------------------===//
#include "KernelPipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/Transforms/Approximation.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/IR/Builders.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace monarch::plan;

namespace monarch::codegen::detail {
namespace {

constexpr int64_t kMaxThreads = 256;

LogicalResult runPipeline(ModuleOp module, llvm::StringRef pipeline,
                          std::string &message) {
  PassManager pm(module.getContext());
  llvm::raw_string_ostream errorStream(message);
  if (failed(parsePassPipeline(pipeline, pm, errorStream)))
    return failure();
  if (failed(pm.run(module))) {
    message = "pass pipeline failed: " + pipeline.str();
    return failure();
  }
  return success();
}

/// Ops that stay on the host: they only describe buffers.
bool isHostOp(Operation *op) {
  return isa<scf::ParallelOp, memref::AllocOp, memref::DeallocOp,
             memref::ExpandShapeOp, memref::CollapseShapeOp, memref::SubViewOp,
             memref::CastOp, arith::ConstantOp, func::CallOp, func::ReturnOp>(
      op);
}

/// Moves top-level scalar reads and pure computations that only parallel
/// loops use into those loops (a learning rate read from a 0-d buffer, say),
/// so they run on the device where their users are.
void sinkIntoParallelLoops(func::FuncOp fn) {
  Block &body = fn.getBody().front();
  SmallVector<Operation *> candidates;
  for (Operation &op : body)
    if (op.getNumRegions() == 0 && op.getNumResults() > 0 &&
        !isa<arith::ConstantOp, memref::AllocOp>(op) &&
        (isa<memref::LoadOp>(op) || isPure(&op)))
      candidates.push_back(&op);
  OpBuilder b(fn.getContext());
  for (Operation *op : llvm::reverse(candidates)) {
    llvm::SetVector<scf::ParallelOp> loops;
    bool onlyInLoops = true;
    for (Operation *user : op->getUsers()) {
      auto loop = dyn_cast<scf::ParallelOp>(body.findAncestorOpInBlock(*user));
      if (!loop) {
        onlyInLoops = false;
        break;
      }
      loops.insert(loop);
    }
    if (!onlyInLoops || loops.empty())
      continue;
    for (scf::ParallelOp loop : loops) {
      b.setInsertionPointToStart(loop.getBody());
      Operation *clone = b.clone(*op);
      op->replaceUsesWithIf(clone->getResults(), [&](OpOperand &use) {
        return loop->isProperAncestor(use.getOwner());
      });
    }
    op->erase();
  }
}

/// Wraps every maximal run of top-level device work that is not a parallel
/// loop in a one-iteration scf.parallel.
LogicalResult wrapSequentialWork(func::FuncOp fn, std::string &message) {
  Block &body = fn.getBody().front();
  SmallVector<SmallVector<Operation *>> runs;
  SmallVector<Operation *> current;
  for (Operation &op : body) {
    if (isHostOp(&op)) {
      if (!current.empty())
        runs.push_back(std::move(current));
      current.clear();
      continue;
    }
    current.push_back(&op);
  }
  if (!current.empty())
    runs.push_back(std::move(current));
  OpBuilder b(fn.getContext());
  for (SmallVector<Operation *> &run : runs) {
    llvm::SmallPtrSet<Operation *, 8> inRun(run.begin(), run.end());
    for (Operation *op : run)
      for (Operation *user : op->getUsers())
        if (!inRun.contains(body.findAncestorOpInBlock(*user))) {
          message = "a value computed on the device is used on the host: " +
                    op->getName().getStringRef().str();
          return failure();
        }
    b.setInsertionPoint(run.front());
    Location loc = run.front()->getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    auto parallel = scf::ParallelOp::create(b, loc, ValueRange{zero},
                                            ValueRange{one}, ValueRange{one});
    Block *inner = parallel.getBody();
    for (Operation *op : run)
      op->moveBefore(inner->getTerminator());
  }
  return success();
}

/// Tiles each top-level parallel loop so that its innermost dimension is
/// split into blocks of up to kMaxThreads threads.
void tileForThreads(func::FuncOp fn) {
  SmallVector<scf::ParallelOp> loops;
  for (auto loop : fn.getBody().front().getOps<scf::ParallelOp>())
    loops.push_back(loop);
  for (scf::ParallelOp loop : loops) {
    SmallVector<int64_t> sizes(loop.getNumLoops(), 1);
    std::optional<int64_t> lb =
        getConstantIntValue(loop.getLowerBound().back());
    std::optional<int64_t> ub =
        getConstantIntValue(loop.getUpperBound().back());
    std::optional<int64_t> step = getConstantIntValue(loop.getStep().back());
    if (!lb || !ub || !step || *step <= 0)
      continue;
    int64_t trips = (*ub - *lb + *step - 1) / *step;
    if (trips <= 1)
      continue;
    sizes.back() = std::min(trips, kMaxThreads);
    scf::tileParallelLoop(loop, sizes, /*noMinMaxBounds=*/true);
  }
}

/// Outlining makes one gpu.module per launch; the runner loads one PTX
/// module per kernel, so the launched functions move into the first module
/// under names unique in the library (`<symbol>_L<i>`).
void mergeGpuModules(ModuleOp scratch, llvm::StringRef symbol) {
  SmallVector<gpu::LaunchFuncOp> launches;
  scratch.walk([&](gpu::LaunchFuncOp launch) { launches.push_back(launch); });
  SmallVector<gpu::GPUModuleOp> modules(scratch.getOps<gpu::GPUModuleOp>());
  if (modules.empty())
    return;
  gpu::GPUModuleOp target = modules.front();
  for (auto [i, launch] : llvm::enumerate(launches)) {
    auto kernel = dyn_cast_or_null<gpu::GPUFuncOp>(
        SymbolTable::lookupNearestSymbolFrom(launch, launch.getKernel()));
    if (!kernel)
      continue;
    std::string name = (symbol + "_L" + llvm::Twine(i)).str();
    auto source = kernel->template getParentOfType<gpu::GPUModuleOp>();
    if (source == target && kernel.getName() != name) {
      // Renamed in place; later launches of it see the new name.
      kernel.setName(name);
    } else if (source != target) {
      kernel->moveBefore(&target.getBody()->back());
      kernel.setName(name);
    }
    launch.setKernelAttr(SymbolRefAttr::get(
        target.getNameAttr(), FlatSymbolRefAttr::get(kernel.getNameAttr())));
  }
  for (gpu::GPUModuleOp module : llvm::drop_begin(modules))
    module->erase();
}

/// Describes a launch operand: the kernel argument or scratch buffer it
/// views (offset 0).
FailureOr<std::string>
describeOperand(Value value, func::FuncOp fn,
                const DenseMap<Value, unsigned> &scratch) {
  while (Operation *def = value.getDefiningOp()) {
    if (auto expand = dyn_cast<memref::ExpandShapeOp>(def))
      value = expand.getSrc();
    else if (auto collapse = dyn_cast<memref::CollapseShapeOp>(def))
      value = collapse.getSrc();
    else
      break;
  }
  if (auto arg = dyn_cast<BlockArgument>(value))
    if (arg.getOwner() == &fn.getBody().front())
      return "a" + std::to_string(arg.getArgNumber());
  auto it = scratch.find(value);
  if (it != scratch.end())
    return "s" + std::to_string(it->second);
  return failure();
}

/// A gemm operand: the argument or temporary under a chain of views, plus
/// the view's static byte offset.
FailureOr<std::string>
describeGemmOperand(Value value, func::FuncOp fn,
                    const DenseMap<Value, unsigned> &scratch) {
  auto type = cast<MemRefType>(value.getType());
  SmallVector<int64_t> strides;
  int64_t offset = 0;
  if (failed(type.getStridesAndOffset(strides, offset)) ||
      ShapedType::isDynamic(offset))
    return failure();
  while (Operation *def = value.getDefiningOp()) {
    if (auto v = dyn_cast<memref::SubViewOp>(def))
      value = v.getSource();
    else if (auto v = dyn_cast<memref::CastOp>(def))
      value = v.getSource();
    else if (isa<memref::ExpandShapeOp, memref::CollapseShapeOp>(def))
      value = def->getOperand(0);
    else
      break;
  }
  FailureOr<std::string> base = describeOperand(value, fn, scratch);
  if (failed(base))
    return failure();
  int64_t bytes = offset * ((type.getElementTypeBitWidth() + 7) / 8);
  return bytes ? *base + "+" + std::to_string(bytes) : *base;
}

/// The manifest lines of the host function (see the file comment).
FailureOr<std::string> buildManifest(func::FuncOp fn, llvm::StringRef symbol,
                                     std::vector<GemmCall> &gemms,
                                     std::string &message) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << "// monarch.kernel " << symbol << " args=" << fn.getNumArguments()
     << "\n";
  DenseMap<Value, unsigned> scratch;
  for (Operation &op : fn.getBody().front()) {
    if (auto alloc = dyn_cast<memref::AllocOp>(op)) {
      MemRefType type = alloc.getType();
      if (!type.hasStaticShape() || !type.getLayout().isIdentity()) {
        message = "a temporary buffer without a static identity layout";
        return failure();
      }
      int64_t bytes =
          type.getNumElements() * ((type.getElementTypeBitWidth() + 7) / 8);
      unsigned index = scratch.size();
      scratch[alloc.getResult()] = index;
      os << "// monarch.scratch " << symbol << " " << index << " " << bytes
         << "\n";
      continue;
    }
    if (auto launch = dyn_cast<gpu::LaunchFuncOp>(op)) {
      auto constant = [](Value v) {
        return getConstantIntValue(v).value_or(-1);
      };
      gpu::KernelDim3 grid = launch.getGridSizeOperandValues();
      gpu::KernelDim3 block = launch.getBlockSizeOperandValues();
      os << "// monarch.launch " << symbol << " "
         << launch.getKernelName().getValue() << " grid=" << constant(grid.x)
         << "," << constant(grid.y) << "," << constant(grid.z)
         << " block=" << constant(block.x) << "," << constant(block.y) << ","
         << constant(block.z) << " operands=";
      for (auto [i, operand] : llvm::enumerate(launch.getKernelOperands())) {
        FailureOr<std::string> desc = describeOperand(operand, fn, scratch);
        if (failed(desc)) {
          std::string what = "a block argument";
          if (Operation *def = operand.getDefiningOp())
            what = def->getName().getStringRef().str();
          message = "launch operand #" + std::to_string(i) + " (" + what +
                    ") is neither a kernel argument nor a temporary";
          return failure();
        }
        os << (i ? "," : "") << *desc;
      }
      os << "\n";
      for (Value v : {grid.x, grid.y, grid.z, block.x, block.y, block.z})
        if (constant(v) < 0) {
          message = "a launch with a non-constant grid or block size";
          return failure();
        }
      continue;
    }
    if (auto call = dyn_cast<func::CallOp>(op)) {
      auto index = call->getAttrOfType<IntegerAttr>(kGemmAttrName);
      if (!index || index.getInt() < 0 ||
          static_cast<size_t>(index.getInt()) >= gemms.size() ||
          call.getNumOperands() != 3) {
        message = "internal error: a call that is not a gemm";
        return failure();
      }
      GemmCall &gemm = gemms[index.getInt()];
      std::string names[3];
      for (unsigned i = 0; i < 3; ++i) {
        FailureOr<std::string> desc =
            describeGemmOperand(call.getOperand(i), fn, scratch);
        if (failed(desc)) {
          message = "gemm operand #" + std::to_string(i) +
                    " is neither a kernel argument nor a temporary";
          return failure();
        }
        names[i] = *desc;
      }
      // The call's operands are the kernel's (A, B, C); cuBLAS gets (B, A).
      gemm.a = names[1];
      gemm.b = names[0];
      gemm.c = names[2];
      os << "// monarch.gemm " << symbol << " " << index.getInt()
         << " operands=" << gemm.a << "," << gemm.b << "," << gemm.c << "\n";
      continue;
    }
    if (isa<memref::DeallocOp, memref::ExpandShapeOp, memref::CollapseShapeOp,
            memref::SubViewOp, memref::CastOp, arith::ConstantOp,
            func::ReturnOp>(op))
      continue;
    message = "'" + op.getName().getStringRef().str() +
              "' would run on the host; the CUDA target supports only "
              "launches and temporaries there";
    return failure();
  }
  return text;
}

} // namespace

FailureOr<std::string> lowerKernelToPtx(ModuleOp scratch,
                                        llvm::StringRef symbol,
                                        const KernelCompileOptions &opts,
                                        std::vector<GemmCall> &gemms,
                                        std::string &message) {
  auto fn = scratch.lookupSymbol<func::FuncOp>(kImplName);
  if (!fn) {
    message = "internal error: no kernel function";
    return failure();
  }
  extractGemms(scratch, fn, gemms);
  if (failed(runPipeline(scratch,
                         "func.func(convert-linalg-to-parallel-loops,"
                         "canonicalize,cse),fold-memref-alias-ops",
                         message)))
    return failure();
  sinkIntoParallelLoops(fn);
  if (failed(wrapSequentialWork(fn, message)))
    return failure();
  tileForThreads(fn);
  {
    RewritePatternSet patterns(scratch.getContext());
    populateMathPolynomialApproximationPatterns(patterns);
    if (failed(applyPatternsGreedily(scratch, std::move(patterns)))) {
      message = "math approximation failed";
      return failure();
    }
  }
  std::string attach = "nvvm-attach-target{chip=" + opts.cudaArch +
                       " O=" + std::to_string(opts.optLevel) + "}";
  if (failed(runPipeline(scratch,
                         "func.func(gpu-map-parallel-loops),convert-parallel-"
                         "loops-to-gpu,canonicalize",
                         message)))
    return failure();
  // Constants used in a launch are recreated inside it, so the outlined
  // kernels take only buffers.
  scratch.walk([](gpu::LaunchOp launch) {
    OpBuilder b(launch.getContext());
    b.setInsertionPointToStart(&launch.getBody().front());
    launch.getBody().walk([&](Operation *op) {
      for (OpOperand &operand : op->getOpOperands()) {
        auto constant = operand.get().getDefiningOp<arith::ConstantOp>();
        if (constant && !launch->isProperAncestor(constant))
          operand.set(b.clone(*constant)->getResult(0));
      }
    });
  });
  if (failed(runPipeline(scratch, "gpu-kernel-outlining", message)))
    return failure();
  mergeGpuModules(scratch, symbol);
  if (failed(runPipeline(
          scratch,
          "lower-affine,canonicalize,cse," + attach +
              ",gpu.module(math-extend-to-supported-types{extra-types=f16,"
              "bf16 target-type=f32},arith-emulate-unsupported-floats{"
              "source-types=bf16,f16 target-type=f32},arith-expand{include-"
              "bf16=true},convert-scf-to-cf,expand-strided-metadata,lower-"
              "affine,convert-gpu-to-nvvm{use-bare-ptr-memref-call-conv=true},"
              "canonicalize,cse,reconcile-unrealized-casts)",
          message)))
    return failure();
  FailureOr<std::string> manifest = buildManifest(fn, symbol, gemms, message);
  if (failed(manifest))
    return failure();
  if (failed(runPipeline(scratch, "gpu-module-to-binary{format=isa}", message)))
    return failure();
  std::string ptx;
  scratch.walk([&](gpu::BinaryOp binary) {
    for (Attribute attr : binary.getObjects())
      if (auto object = dyn_cast<gpu::ObjectAttr>(attr))
        ptx += object.getObject().getValue().str();
  });
  if (ptx.empty() && gemms.empty()) {
    message = "no PTX was produced";
    return failure();
  }
  return "// monarch.ptx-module " + symbol.str() + "\n" + *manifest + ptx +
         "\n";
}

} // namespace monarch::codegen::detail
