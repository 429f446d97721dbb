//===- Registration.h - Everything a monarch tool registers -----*- C++ -*-===//
//
// The dialects (ours and the upstream ones the pipeline uses) and the
// sharding-interface models that monarch-partition needs. monarch-opt,
// monarch-compile and the Python extension call this, so a program compiles
// the same way everywhere.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_TRANSFORMS_REGISTRATION_H
#define MONARCH_TRANSFORMS_REGISTRATION_H

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace monarch {

/// Registers the monarch dialect; func, arith, tensor, linalg, shard, scf,
/// memref, bufferization, llvm, gpu and nvvm; and the sharding interfaces of
/// linalg, arith and tensor ops.
void registerMonarchDialects(mlir::DialectRegistry &registry);

} // namespace monarch

#endif // MONARCH_TRANSFORMS_REGISTRATION_H
