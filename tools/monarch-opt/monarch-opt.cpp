//===- monarch-opt.cpp - The mlir-opt of monarch-compile --------*- C++ -*-===//
//
// Registers the monarch dialect, passes and stage pipelines plus the
// upstream dialects and passes the pipeline uses, then hands over to
// MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "monarch/Transforms/Passes.h"
#include "monarch/Transforms/Pipelines.h"
#include "monarch/Transforms/Registration.h"

#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  monarch::registerMonarchDialects(registry);
  mlir::registerAllPasses();
  monarch::registerMonarchPasses();
  monarch::registerMonarchPipelines();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "monarch-compile optimizer driver\n", registry));
}
