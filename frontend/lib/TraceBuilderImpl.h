//===- TraceBuilderImpl.h - State behind the TraceBuilder -------*- C++ -*-===//
//
// The MLIR side of `TraceBuilder`: the context, the module being built, the
// table of value handles with their placement and sharding, and the scopes
// (controller functions, endpoint bodies) ops are built in. Shared by the
// files of frontend/lib; not installed.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_FRONTEND_LIB_TRACEBUILDERIMPL_H
#define MONARCH_FRONTEND_LIB_TRACEBUILDERIMPL_H

#include "monarch/Frontend/TraceBuilder.h"
#include "monarch/IR/MonarchDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <string>
#include <vector>

namespace monarch::frontend {

/// One traced value.
struct ValueRecord {
  mlir::Value value;
  /// Mesh it lives on; empty on the controller or inside an endpoint.
  std::string mesh;
  /// Its sharding over `mesh` (for controller values: the sharding asked
  /// for by `shard`, applied when the value is fed).
  Dist dist;
  bool scalar = false;
  /// Index of the scope that owns it.
  int scope = -1;
  /// The producer annotation (`shard.shard`) that defines `value`, if any.
  mlir::Operation *annotation = nullptr;
  /// A source on a mesh (feed, transfer, call result) not annotated yet: it
  /// is annotated before its first use by tensor work.
  bool needsAnnotation = false;
  /// Copies on other meshes (feeds, transfers): mesh -> value id.
  std::map<std::string, int64_t> copies;
  /// Where `shard` asked for the sharding (errors at feed time point here).
  SourceLoc shardLoc;
};

/// A controller function or an endpoint body being built.
struct Scope {
  enum Kind { Function, Endpoint } kind = Function;
  mlir::Operation *op = nullptr;
  /// Function: mesh for tensor work on controller values.
  std::string defaultMesh;
  /// Endpoint: the mesh it is traced for, and its class.
  std::string mesh;
  std::string cls;
  mlir::OpBuilder::InsertPoint saved;
  bool open = true;
};

struct TraceBuilder::Impl {
  Impl();

  mlir::MLIRContext ctx;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  mlir::OpBuilder b;
  std::vector<ValueRecord> values;
  std::vector<Scope> scopes;
  /// Open scopes, innermost last.
  std::vector<int> stack;

  //===--- Helpers ----------------------------------------------------===//

  mlir::Location loc(const SourceLoc &l);
  /// An error in the user's program at `l`, of `kind` (the exception class
  /// Python raises: ShapeError for ErrorKind::Shape, ...).
  Status error(const SourceLoc &l, std::string message,
               ErrorKind kind = ErrorKind::Program) const;
  /// "element type int64 cannot be traced (...)".
  Status dtypeError(const SourceLoc &l, DType dtype) const;
  /// Runs `fn` collecting MLIR diagnostics; returns them joined.
  std::string collectDiagnostics(llvm::function_ref<void()> fn);

  Scope *currentScope();
  /// The record of `v`, checked to belong to the current scope.
  Result<ValueRecord *> get(Value v, const SourceLoc &l);
  Value add(mlir::Value value, std::string mesh, Dist dist, bool scalar);
  ValueRecord &rec(Value v) { return values[v.id]; }

  /// Sets the builder to where module-level declarations go (before the
  /// first function) for the lifetime of the guard.
  void toDeclarations();
  MeshOpInterface lookupMesh(llvm::StringRef name);
  ActorClassOp lookupClass(llvm::StringRef name);
  /// A symbol name not used in the module yet, based on `base`.
  std::string freshSymbol(const std::string &base);
  /// Frees `name` for a declaration (mesh, actor class, actor mesh): a
  /// controller function holding it is renamed (nothing refers to one, and
  /// the user's namespaces of functions and of actors are separate); any
  /// other symbol holding it is an error.
  Status makeRoomFor(const std::string &name, const SourceLoc &loc);

  mlir::Type elementType(DType dtype);
  std::optional<DType> dtypeOf(mlir::Type element) const;
  mlir::Type typeOf(const ArgType &t);
  ArgType argTypeOf(mlir::Value v) const;
  std::string typeStr(const ValueRecord &r) const;

  /// `shard.sharding` on the grid of `mesh` for `dist`.
  Result<mlir::Value> sharding(const std::string &mesh, const Dist &dist,
                               int64_t rank, const SourceLoc &l);
  /// Checks that `dist` names dimensions of `mesh` and divides `shape`.
  Status checkDist(const std::string &mesh, const Dist &dist,
                   const std::vector<int64_t> &shape, const SourceLoc &l,
                   const std::string &what);

  /// The mesh tensor work on `operands` runs on (controller scopes), or ""
  /// inside an endpoint.
  Result<std::string> placement(const std::vector<Value> &operands,
                                const SourceLoc &l);
  /// `v` as an SSA value usable by tensor work on `mesh` (fed, transferred
  /// and annotated as needed); `mesh` empty: as it is (endpoint scopes).
  Result<mlir::Value> materialize(Value v, const std::string &mesh,
                                  const SourceLoc &l);
  /// In an endpoint, a per-rank scalar as a 0-d tensor (collectives move
  /// tensors, reshape reshapes one); other values as they are.
  Value scalarAsTensor(Value v, const SourceLoc &l);
  /// `v` on `mesh` (fed or transferred as needed, not annotated: calls and
  /// fetches need no annotation), as a value handle.
  Result<Value> placeOn(Value v, const std::string &mesh, const SourceLoc &l);
  /// Annotates a source value (feed, transfer, call result) with its
  /// sharding so shard-partition sees every input annotated.
  void annotate(Value v, const SourceLoc &l);
};

/// llvm::StringRef list of the names in `names`.
std::string joinNames(const std::vector<std::string> &names);
std::string shapeStr(const std::vector<int64_t> &shape);

} // namespace monarch::frontend

#endif // MONARCH_FRONTEND_LIB_TRACEBUILDERIMPL_H
