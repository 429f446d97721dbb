//===- monarch-opt.cpp - The mlir-opt of monarch-compile --------*- C++ -*-===//
//
// Registers the monarch dialect, passes and stage pipelines plus the
// upstream dialects and passes the pipeline uses, then hands over to
// MlirOptMain, after refusing the inputs upstream parsers crash on
// (Support/ParserHazards.h).
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "monarch/Support/ParserHazards.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  monarch::registerMonarchDialects(registry);
  mlir::registerAllPasses();
  monarch::registerMonarchPasses();
  monarch::registerMonarchPipelines();
  auto [input, output] = mlir::registerAndParseCLIOptions(
      argc, argv, "monarch-compile optimizer driver\n", registry);
  if (input != "-")
    if (auto buffer = llvm::MemoryBuffer::getFile(input))
      if (auto hazard = monarch::findParserHazard((*buffer)->getBuffer())) {
        llvm::errs() << hazard->diagnostic(input) << "\n";
        return 1;
      }
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, input, output, registry));
}
