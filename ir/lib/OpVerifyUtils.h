//===- OpVerifyUtils.h - Shared verifier helpers ---------------*- C++ -*-===//
//
// Helpers that the verifiers of the three op files share (internal to
// ir/lib).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_LIB_OPVERIFYUTILS_H
#define MONARCH_IR_LIB_OPVERIFYUTILS_H

#include "monarch/IR/MonarchDialect.h"

#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/SymbolTable.h"

namespace monarch::detail {

/// "@name does not name a <what>": the one wording for unresolved symbols.
mlir::InFlightDiagnostic unresolved(mlir::Operation *op, mlir::StringAttr name,
                                    llvm::StringRef what);

/// The proc mesh or slice `ref` names, or null after a diagnostic.
MeshOpInterface resolveMesh(mlir::Operation *op, mlir::FlatSymbolRefAttr ref,
                            mlir::SymbolTableCollection &tables);

} // namespace monarch::detail

#endif // MONARCH_IR_LIB_OPVERIFYUTILS_H
