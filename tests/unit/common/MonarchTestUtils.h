//===- MonarchTestUtils.h - Shared helpers of the IR builder -- -*- C++ -*-===//
//
// A fixture that owns an MLIRContext with every dialect the tests build IR
// in, an OpBuilder, and helpers to create the recurring pieces (grids,
// meshes, tensor types, buffers) and to check verification, diagnostics and
// the print/parse round trip.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_TESTS_UNIT_MONARCHTESTUTILS_H
#define MONARCH_TESTS_UNIT_MONARCHTESTUTILS_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Parser/Parser.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

namespace monarch::test {

/// Collects every diagnostic emitted while it is alive (instead of printing
/// them), so tests can check the verifier's messages.
class DiagnosticCapture {
public:
  explicit DiagnosticCapture(mlir::MLIRContext &ctx)
      : handler(&ctx, [this](mlir::Diagnostic &diag) {
          messages.push_back(diag.str());
          for (mlir::Diagnostic &note : diag.getNotes())
            messages.push_back("note: " + note.str());
          return mlir::success();
        }) {}

  bool contains(llvm::StringRef text) const {
    for (const std::string &m : messages)
      if (llvm::StringRef(m).contains(text))
        return true;
    return false;
  }

  std::string joined() const {
    std::string all;
    for (const std::string &m : messages)
      all += "  [" + m + "]\n";
    return all.empty() ? std::string("  (no diagnostics)\n") : all;
  }

  std::vector<std::string> messages;

private:
  mlir::ScopedDiagnosticHandler handler;
};

/// Prints `op` in the custom (pretty) form.
inline std::string printOp(mlir::Operation *op) {
  std::string text;
  llvm::raw_string_ostream os(text);
  op->print(os);
  return text;
}

/// Success when `op` verifies; otherwise the failure lists the diagnostics.
inline testing::AssertionResult verifies(mlir::Operation *op) {
  DiagnosticCapture diags(*op->getContext());
  if (succeeded(mlir::verify(op)))
    return testing::AssertionSuccess();
  return testing::AssertionFailure() << "verification failed:\n"
                                     << diags.joined();
}

/// Success when verifying `op` fails with a diagnostic that contains every
/// one of `pieces` (in any order).
inline testing::AssertionResult
failsToVerify(mlir::Operation *op,
              std::initializer_list<llvm::StringRef> pieces) {
  DiagnosticCapture diags(*op->getContext());
  std::string wanted;
  for (llvm::StringRef piece : pieces)
    wanted += " \"" + piece.str() + "\"";
  if (succeeded(mlir::verify(op)))
    return testing::AssertionFailure()
           << "verification succeeded, expected an error containing" << wanted;
  for (const std::string &m : diags.messages)
    if (llvm::all_of(pieces, [&](llvm::StringRef piece) {
          return llvm::StringRef(m).contains(piece);
        }))
      return testing::AssertionSuccess();
  return testing::AssertionFailure()
         << "no diagnostic contains" << wanted << "; got:\n"
         << diags.joined();
}

/// Success when verifying `op` fails with a diagnostic containing `text`.
inline testing::AssertionResult failsToVerify(mlir::Operation *op,
                                              llvm::StringRef text) {
  return failsToVerify(op, {text});
}

/// Success when `module` prints, re-parses (and verifies) and prints again to
/// the same text.
inline testing::AssertionResult roundTrips(mlir::ModuleOp module) {
  std::string first = printOp(module);
  mlir::MLIRContext *ctx = module->getContext();
  DiagnosticCapture diags(*ctx);
  mlir::OwningOpRef<mlir::ModuleOp> reparsed =
      mlir::parseSourceString<mlir::ModuleOp>(first, ctx);
  if (!reparsed)
    return testing::AssertionFailure() << "re-parsing failed:\n"
                                       << diags.joined() << "text:\n"
                                       << first;
  if (failed(mlir::verify(*reparsed)))
    return testing::AssertionFailure() << "re-parsed module does not verify:\n"
                                       << diags.joined();
  std::string second = printOp(*reparsed);
  if (first != second)
    return testing::AssertionFailure() << "round trip changed the text:\n"
                                       << first << "\n--- vs ---\n"
                                       << second;
  return testing::AssertionSuccess();
}

/// Owns a context with the dialects the tests use and a module to build in.
class MonarchIRTest : public testing::Test {
protected:
  MonarchIRTest() : b(&ctx), loc(mlir::UnknownLoc::get(&ctx)) {
    ctx.loadDialect<MonarchDialect, mlir::func::FuncDialect,
                    mlir::arith::ArithDialect, mlir::tensor::TensorDialect,
                    mlir::shard::ShardDialect, mlir::linalg::LinalgDialect>();
    // Diagnostics name the failing op; the tests match on the message only.
    ctx.printOpOnDiagnostic(false);
    module = newModule();
  }

  /// A fresh empty module; the builder is left at the end of its body.
  mlir::OwningOpRef<mlir::ModuleOp> newModule() {
    mlir::OwningOpRef<mlir::ModuleOp> m = mlir::ModuleOp::create(loc);
    b.setInsertionPointToEnd(m->getBody());
    return m;
  }

  mlir::ArrayAttr strs(llvm::ArrayRef<llvm::StringRef> names) {
    return b.getStrArrayAttr(names);
  }

  mlir::RankedTensorType tensor(llvm::ArrayRef<int64_t> shape) {
    return mlir::RankedTensorType::get(shape, b.getF32Type());
  }

  mlir::RankedTensorType tensor(llvm::ArrayRef<int64_t> shape,
                                mlir::Type element) {
    return mlir::RankedTensorType::get(shape, element);
  }

  BufferAttr buf(int64_t offset, llvm::ArrayRef<int64_t> shape) {
    return BufferAttr::get(&ctx, offset, tensor(shape));
  }

  mlir::FlatSymbolRefAttr sym(llvm::StringRef name) {
    return mlir::FlatSymbolRefAttr::get(&ctx, name);
  }

  /// `@root::@leaf`
  mlir::SymbolRefAttr nested(llvm::StringRef root, llvm::StringRef leaf) {
    return mlir::SymbolRefAttr::get(&ctx, root, {sym(leaf)});
  }

  /// `#monarch.dist<split>`; `split` holds one list of mesh dimension names
  /// per tensor dimension.
  DistAttr dist(llvm::ArrayRef<std::vector<llvm::StringRef>> split,
                std::optional<ReductionKind> partial = std::nullopt) {
    llvm::SmallVector<mlir::Attribute> entries;
    for (const std::vector<llvm::StringRef> &names : split)
      entries.push_back(b.getStrArrayAttr(names));
    return DistAttr::get(&ctx, b.getArrayAttr(entries), partial);
  }

  mlir::shard::GridOp grid(llvm::StringRef name,
                           llvm::ArrayRef<int64_t> shape) {
    return mlir::shard::GridOp::create(b, loc, name, shape);
  }

  ProcMeshOp procMesh(llvm::StringRef name,
                      llvm::ArrayRef<llvm::StringRef> dims,
                      llvm::ArrayRef<int64_t> shape, llvm::StringRef gridName) {
    return ProcMeshOp::create(b, loc, name, strs(dims), shape, gridName);
  }

  MeshSliceOp slice(llvm::StringRef name, llvm::StringRef parent,
                    llvm::ArrayRef<llvm::StringRef> dims,
                    llvm::ArrayRef<int64_t> starts,
                    llvm::ArrayRef<int64_t> ends, llvm::StringRef gridName) {
    return MeshSliceOp::create(b, loc, name, parent, strs(dims), starts, ends,
                               gridName);
  }

  /// The two-stage layout of examples/ir/pipeline.mlir: @mesh (hosts = 1,
  /// gpus = 4) and its halves @s0_mesh (gpus 0 to 2) and @s1_mesh (gpus 2 to
  /// 4).
  void buildPipelineMeshes() {
    grid("mesh_grid", {1, 4});
    grid("half_grid", {1, 2});
    procMesh("mesh", {"hosts", "gpus"}, {1, 4}, "mesh_grid");
    slice("s0_mesh", "mesh", {"hosts", "gpus"}, {0, 0}, {1, 2}, "half_grid");
    slice("s1_mesh", "mesh", {"hosts", "gpus"}, {0, 2}, {1, 4}, "half_grid");
  }

  /// A func.func with an entry block; the builder is left inside it.
  mlir::func::FuncOp func(llvm::StringRef name, llvm::ArrayRef<mlir::Type> in,
                          llvm::ArrayRef<mlir::Type> out) {
    auto fn =
        mlir::func::FuncOp::create(b, loc, name, b.getFunctionType(in, out));
    b.setInsertionPointToStart(fn.addEntryBlock());
    return fn;
  }

  /// An endpoint with an entry block; the builder is left inside it.
  monarch::EndpointOp endpoint(llvm::StringRef name,
                               llvm::ArrayRef<mlir::Type> in,
                               llvm::ArrayRef<mlir::Type> out) {
    auto ep =
        monarch::EndpointOp::create(b, loc, name, b.getFunctionType(in, out));
    b.setInsertionPointToStart(ep.addEntryBlock());
    return ep;
  }

  /// Checks that `op` makes `module` fail to verify with a diagnostic
  /// containing all of `pieces`, then erases `op` and checks that `module`
  /// verifies again.
  void expectRejected(mlir::Operation *op,
                      std::initializer_list<llvm::StringRef> pieces) {
    EXPECT_TRUE(failsToVerify(*module, pieces)) << printOp(op);
    op->erase();
    EXPECT_TRUE(verifies(*module));
  }
  void expectRejected(mlir::Operation *op, llvm::StringRef message) {
    expectRejected(op, {message});
  }

  mlir::MLIRContext ctx;
  mlir::OpBuilder b;
  mlir::Location loc;
  mlir::OwningOpRef<mlir::ModuleOp> module;
};

} // namespace monarch::test

#endif // MONARCH_TESTS_UNIT_MONARCHTESTUTILS_H
