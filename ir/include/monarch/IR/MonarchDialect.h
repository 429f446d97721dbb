//===- MonarchDialect.h - The monarch dialect -------------------*- C++ -*-===//
//
// Single entry point for users of the `monarch` dialect: the dialect, its
// enums, attributes, types, interfaces and operations.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_MONARCHDIALECT_H
#define MONARCH_IR_MONARCHDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "monarch/IR/MonarchEnums.h.inc"

#include "monarch/IR/MonarchDialect.h.inc"

#define GET_ATTRDEF_CLASSES
#include "monarch/IR/MonarchAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "monarch/IR/MonarchTypes.h.inc"

#include "monarch/IR/MonarchInterfaces.h.inc"

#define GET_OP_CLASSES
#include "monarch/IR/MonarchOps.h.inc"

namespace monarch {

/// Resolves `ref` (from `from`) to a proc mesh or mesh slice, using `tables`
/// when given. Returns null when the symbol is missing or not a mesh.
MeshOpInterface lookupMesh(mlir::Operation *from, mlir::FlatSymbolRefAttr ref,
                           mlir::SymbolTableCollection *tables = nullptr);

/// The proc mesh at the root of `mesh`'s slice chain (`mesh` itself when it
/// is one); null when a parent does not resolve or the chain is longer than
/// 64 (a cycle in malformed IR). `unresolved`, when given, is then set to the
/// slice whose parent is missing.
ProcMeshOp getRootMesh(MeshOpInterface mesh,
                       mlir::SymbolTableCollection *tables = nullptr,
                       MeshSliceOp *unresolved = nullptr);

/// For each rank of `mesh` (row-major), its rank in the root proc mesh,
/// mapped one slice level at a time; fails as getRootMesh does.
mlir::FailureOr<llvm::SmallVector<int64_t>>
getRootRanks(MeshOpInterface mesh,
             mlir::SymbolTableCollection *tables = nullptr,
             MeshSliceOp *unresolved = nullptr);

/// True when `inner` is `outer` or (transitively) a slice of it.
bool isSameOrSliceOf(MeshOpInterface inner, MeshOpInterface outer,
                     mlir::SymbolTableCollection &tables);

/// Per-rank shape of a tensor of global `shape` distributed by `dist` over
/// `mesh`; fails (with `error` set) when a split is not exact.
mlir::FailureOr<llvm::SmallVector<int64_t>>
getLocalShape(llvm::ArrayRef<int64_t> shape, DistAttr dist,
              MeshOpInterface mesh, std::string &error);

} // namespace monarch

#endif // MONARCH_IR_MONARCHDIALECT_H
