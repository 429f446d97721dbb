//===- KernelTemplates.h - Kernels that take their integers -----*- C++ -*-===//
//
// Kernels of different ranks (and of repeated layers) often differ only in
// a few integers: the offset of the rank's head in a slice, the rank's
// coordinate subtracted from an index (vocabulary-parallel lookups), a
// row of a constant table picked by the rank. compileKernels groups
// kernels equal but for those integers (their *holes*) and compiles one
// body per group that reads the integers that differ from an extra input,
// `tensor<N x i64>` after the kernel's inputs; each kernel of the group
// then carries its own values (CompiledKernel::params), which the worker
// passes at every launch. So the number of kernels compiled does not grow
// with the ranks (issue 15, item 2).
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_CODEGEN_KERNELTEMPLATES_H
#define MONARCH_CODEGEN_KERNELTEMPLATES_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <string>

namespace monarch::codegen::detail {

/// An integer of a kernel that may become a parameter: the value of an
/// integer `arith.constant` at the top of the body whose every use is an
/// arithmetic or index operand (`slot` -1), or static offset `slot` of a
/// `tensor.extract_slice` / `tensor.insert_slice` at the top of the body.
struct Hole {
  mlir::Operation *op = nullptr;
  int slot = -1;
  int64_t value = 0;
};

/// The holes of `kernel`, in body order.
llvm::SmallVector<Hole> holesOf(mlir::func::FuncOp kernel);

/// `print(kernel)` with every hole set to 0 (restored before returning):
/// kernels with equal templates differ at most in their holes.
std::string
templateText(mlir::func::FuncOp kernel, llvm::ArrayRef<Hole> holes,
             llvm::function_ref<std::string(mlir::func::FuncOp)> print);

/// A copy of `kernel` in `into` (named `name`) reading hole `varying[k]`
/// (an index into `holesOf(kernel)`) as element k of a new
/// `tensor<N x i64>` argument inserted after its `numInputs` inputs; the
/// other holes keep their values.
mlir::func::FuncOp parameterize(mlir::func::FuncOp kernel,
                                llvm::ArrayRef<unsigned> varying,
                                unsigned numInputs, mlir::ModuleOp into,
                                llvm::StringRef name);

} // namespace monarch::codegen::detail

#endif // MONARCH_CODEGEN_KERNELTEMPLATES_H
