//===- DumpAfterEachPass.h - IR after every pass, numbered ------*- C++ -*-===//
//
// The instrumentation behind `--dump-dir` / MONARCH_DUMP_DIR: the module
// after each module-level pass is written as NN-<pass-argument>.mlir, with
// `.failed` appended for the pass that failed; the session adds each
// stage as <stage>.mlir through `write`.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_DRIVER_DUMPAFTEREACHPASS_H
#define MONARCH_DRIVER_DUMPAFTEREACHPASS_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <string>

namespace monarch {

class DumpAfterEachPass : public mlir::PassInstrumentation {
public:
  explicit DumpAfterEachPass(std::string dir) : dir(std::move(dir)) {}

  void runAfterPass(mlir::Pass *pass, mlir::Operation *op) override {
    dump(pass, op);
  }
  void runAfterPassFailed(mlir::Pass *pass, mlir::Operation *op) override {
    dump(pass, op, ".failed");
  }

  /// Writes `op` as file `name` in the dump directory.
  void write(mlir::Operation *op, llvm::StringRef name) {
    llvm::SmallString<256> path(dir);
    llvm::sys::path::append(path, name);
    std::error_code ec;
    llvm::raw_fd_ostream os(path, ec);
    if (ec) {
      llvm::errs() << "monarch-compile: cannot write " << path << ": "
                   << ec.message() << "\n";
      return;
    }
    // Locations in the parsable form: a dump compiles on from where it was
    // written (`monarch-compile --compile-from=STAGE`).
    op->print(os,
              mlir::OpPrintingFlags().enableDebugInfo(true, /*pretty=*/false));
  }

private:
  void dump(mlir::Pass *pass, mlir::Operation *op,
            llvm::StringRef suffix = "") {
    // Passes nested under the module (kernel cleanups) are not stages.
    if (!mlir::isa<mlir::ModuleOp>(op))
      return;
    std::string name = llvm::formatv("{0:02}-{1}{2}.mlir", ++index,
                                     pass->getArgument(), suffix)
                           .str();
    write(op, name);
  }

  std::string dir;
  unsigned index = 0;
};

} // namespace monarch

#endif // MONARCH_DRIVER_DUMPAFTEREACHPASS_H
