//===- TraceBuilderMLIR.h - The MLIR module ------------------- -*- C++ -*-===//
//
// For C++ code built like the compiler (MLIR headers, no exceptions): the
// traced module a `TraceBuilder` holds, and copies of it for the stage
// pipelines. The tracer hands modules to the compiler this way, in memory,
// never as printed text parsed again. The Python
// extension does not include this header (TraceBuilder.h is standard C++).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_FRONTEND_TRACEBUILDERMLIR_H
#define MONARCH_FRONTEND_TRACEBUILDERMLIR_H

#include "monarch/Frontend/TraceBuilder.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/StringRef.h"

namespace monarch::frontend {

/// The traced module (owned by `builder`, in its context).
mlir::ModuleOp tracedModule(const TraceBuilder &builder);

/// A copy of the traced module in the builder's context, with the traced
/// controller function renamed to `functionName` when that is not empty
/// (every reference to it follows). Fails while tracing is in progress, or
/// when `functionName` is a symbol of the module already.
Result<mlir::OwningOpRef<mlir::ModuleOp>>
cloneTracedModule(const TraceBuilder &builder, llvm::StringRef functionName);

} // namespace monarch::frontend

#endif // MONARCH_FRONTEND_TRACEBUILDERMLIR_H
