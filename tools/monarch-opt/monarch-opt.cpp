//===- monarch-opt.cpp - The mlir-opt of monarch-compile --------*- C++ -*-===//
//
// Registers the monarch dialect and passes plus the upstream dialects and
// passes the pipeline uses, then hands over to MlirOptMain.
//
//===----------------------------------------------------------------------===//

#include "monarch/IR/MonarchDialect.h"
#include "monarch/Transforms/Passes.h"
#include "monarch/Transforms/Pipelines.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/ShardingInterfaceImpl.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry.insert<monarch::MonarchDialect, mlir::func::FuncDialect,
                  mlir::arith::ArithDialect, mlir::tensor::TensorDialect,
                  mlir::linalg::LinalgDialect, mlir::shard::ShardDialect,
                  mlir::scf::SCFDialect, mlir::memref::MemRefDialect,
                  mlir::bufferization::BufferizationDialect,
                  mlir::LLVM::LLVMDialect, mlir::gpu::GPUDialect,
                  mlir::NVVM::NVVMDialect>();
  mlir::linalg::registerShardingInterfaceExternalModels(registry);
  mlir::arith::registerShardingInterfaceExternalModels(registry);
  mlir::tensor::registerShardingInterfaceExternalModels(registry);
  mlir::registerAllPasses();
  monarch::registerMonarchPasses();
  monarch::registerMonarchPipelines();
  return mlir::asMainReturnCode(mlir::MlirOptMain(
      argc, argv, "monarch-compile optimizer driver\n", registry));
}
