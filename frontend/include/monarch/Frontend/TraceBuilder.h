//===- TraceBuilder.h - Builds traced monarch programs ----------*- C++ -*-===//
//
// The C++ frontend of monarch-compile: a builder that records a program
// (meshes, actor classes with state and endpoints, controller functions with
// tensor ops, sharding annotations, calls, feeds and fetches) as a `traced`
// MLIR module, checking every step as it goes and returning errors as
// values. Python's `monarch_compile` records through the same class.
//
// This header deliberately uses only the standard library: it is included
// by the Python extension, which is built with exceptions and RTTI, while
// the implementation (and MLIR) is built without. `TraceBuilderMLIR.h` gives
// C++ users the underlying `mlir::ModuleOp`.
//
// Values are handles (`Value`) into the builder. Each knows its shape, dtype,
// placement (the controller or a mesh) and sharding. Placement is automatic:
// a controller value used on a mesh is fed (`monarch.feed`), a mesh value
// used on another mesh is transferred (`monarch.transfer`), and a function
// result living on a mesh is fetched (`monarch.fetch`).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_FRONTEND_TRACEBUILDER_H
#define MONARCH_FRONTEND_TRACEBUILDER_H

#include "monarch/Support/DType.h"
#include "monarch/Support/Status.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <source_location>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace monarch::frontend {

/// Errors are support's: a Status carries the message, its code
/// (InvalidArgument for what the user traced), its ErrorKind (shape,
/// sharding, mesh, unsupported, or another mistake in the program) and the
/// user's SourceLoc, which is also the location of every op built for them.
using monarch::ErrorKind;
using monarch::SourceLoc;
using monarch::Status;
using monarch::StatusCode;
/// A value or an error. Check it before use.
template <typename T> using Result = monarch::StatusOr<T>;

/// The element types a trace may hold (support's DType, also the plan's):
/// float32, float16, bfloat16, int32 and bool (`I1`, what comparisons
/// produce). Every entry point that takes a DType refuses the others at the
/// caller's line.
bool isTraceableDType(DType dtype);

/// A handle to a traced value (tensor or scalar).
struct Value {
  int64_t id = -1;
  bool valid() const { return id >= 0; }
};

/// The type of a function or endpoint argument. `scalar` values have no
/// shape (e.g. a learning rate); tensors of rank 0 have an empty shape.
struct ArgType {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  bool scalar = false;
};

/// A named mesh dimension and its extent.
struct MeshDim {
  std::string name;
  int64_t size = 1;
};

/// The half-open range `[start, end)` of one mesh dimension (for slices).
struct DimRange {
  std::string name;
  int64_t start = 0;
  int64_t end = 0;
};

/// Reductions of collectives and of partial results.
enum class ReduceKind { Sum, Prod, Max, Min, Avg };
std::optional<ReduceKind> parseReduceKind(const std::string &name);

/// How a global tensor maps to per-rank tensors: for each tensor dimension,
/// the mesh dimensions it is split over (empty: whole). `partial` marks
/// per-rank partial results still to be reduced.
struct Dist {
  std::vector<std::vector<std::string>> split;
  std::optional<ReduceKind> partial;
  bool isReplicated() const;
};

/// What the builder knows about a value.
struct ValueInfo {
  std::vector<int64_t> shape;
  DType dtype = DType::F32;
  bool scalar = false;
  /// The mesh the value lives on; empty for the controller.
  std::string mesh;
  /// Its sharding over `mesh` (or requested for when it is fed).
  Dist dist;
};

enum class UnaryOp { Neg, Relu, Exp, Log, Tanh, Sigmoid, Gelu, Sqrt, Abs };
/// `Div` is true division (integers divide as float32, as numpy's `/`);
/// `FloorDiv` and `Mod` are numpy's `//` and `%` (floored, the remainder
/// has the divisor's sign; an integer divisor of 0 gives 0, as numpy does).
enum class BinaryOp { Add, Sub, Mul, Div, Max, Min, Pow, FloorDiv, Mod };
enum class CompareOp { Lt, Le, Gt, Ge, Eq, Ne };
/// A reduction's combiner. `Prod` multiplies (numpy's `prod`): a split
/// reduction axis leaves partial products that an all_reduce(prod)
/// completes, as partial sums do.
enum class ReduceOp { Sum, Mean, Max, Min, Prod };

/// Builds one traced module. Not thread-safe; one builder per module.
class TraceBuilder {
public:
  TraceBuilder();
  ~TraceBuilder();
  TraceBuilder(TraceBuilder &&) noexcept;
  TraceBuilder &operator=(TraceBuilder &&) noexcept;
  TraceBuilder(const TraceBuilder &) = delete;
  TraceBuilder &operator=(const TraceBuilder &) = delete;

  //===--- Meshes ---------------------------------------------------------===//

  /// Declares proc mesh `name` (and its `shard.grid`).
  Status declareMesh(const std::string &name, const std::vector<MeshDim> &dims,
                     SourceLoc loc = SourceLoc::current());
  /// Declares slice `name` of `parent` (a mesh or a slice); dimensions not
  /// listed in `ranges` are taken whole.
  Status declareSlice(const std::string &name, const std::string &parent,
                      const std::vector<DimRange> &ranges,
                      SourceLoc loc = SourceLoc::current());
  bool hasMesh(const std::string &name) const;
  /// The dimensions of a mesh or slice (slices report their own extents).
  Result<std::vector<MeshDim>> meshDims(const std::string &name) const;

  //===--- Controller functions -------------------------------------------===//

  /// Starts controller function `name` with arguments of global types, which
  /// live on the controller. Tensor work on controller values runs on
  /// `defaultMesh` when given (they are fed there when first used).
  Result<std::vector<Value>>
  beginFunction(const std::string &name, const std::vector<ArgType> &args,
                const std::string &defaultMesh = "",
                SourceLoc loc = SourceLoc::current());
  /// The symbol of the function being (or last) traced: its name unless a
  /// mesh or actor of the same name is declared, which keeps the name while
  /// the function gets a fresh symbol (`<name>_fn`).
  std::string functionName() const;
  /// Ends the function; results living on a mesh are fetched.
  /// After endFunction: result `index` of the function may stay resident on
  /// the workers (`@mc.compile(donate_argnums=...)`): its fetch is marked
  /// `monarch.keep`. False when that result is not fetched from a mesh (a
  /// controller value, an argument returned as it is).
  bool markKept(int64_t index);
  Status endFunction(const std::vector<Value> &results,
                     SourceLoc loc = SourceLoc::current());

  //===--- Placement and sharding -----------------------------------------===//

  Result<Value> feed(Value v, const std::string &mesh,
                     SourceLoc loc = SourceLoc::current());
  Result<Value> fetch(Value v, SourceLoc loc = SourceLoc::current());
  /// `v` on `mesh`: fed from the controller or transferred from another mesh
  /// as needed (the same value when it is there already).
  Result<Value> place(Value v, const std::string &mesh,
                      SourceLoc loc = SourceLoc::current());
  Result<Value> transfer(Value v, const std::string &mesh,
                         SourceLoc loc = SourceLoc::current());
  /// Splits tensor dimension `split[i].second` over mesh dimension
  /// `split[i].first` (several mesh dimensions may split one tensor
  /// dimension, outermost first); other dimensions are whole. On a
  /// controller value the sharding applies when it is fed. `mesh` names the
  /// mesh when the value is not on one yet (default: the function's).
  Result<Value> shard(Value v,
                      const std::vector<std::pair<std::string, int64_t>> &split,
                      const std::string &mesh = "",
                      SourceLoc loc = SourceLoc::current());
  /// Makes `v` replicated on its mesh (the compiler inserts collectives).
  Result<Value> replicate(Value v, SourceLoc loc = SourceLoc::current());

  //===--- Tensor ops -----------------------------------------------------===//

  /// A scalar constant of `dtype`.
  Result<Value> constant(double value, DType dtype,
                         SourceLoc loc = SourceLoc::current());
  /// A tensor constant of `shape` and `dtype` (float32, float16, bfloat16 or
  /// int32) whose row-major elements are the bytes `data`, on the compiled
  /// function's mesh (in an endpoint: on every rank). For numpy constants and
  /// `mc.zeros`, `mc.arange`, ...
  Result<Value> constantTensor(const std::string &data,
                               std::vector<int64_t> shape, DType dtype,
                               SourceLoc loc = SourceLoc::current());
  Result<Value> unary(UnaryOp op, Value x,
                      SourceLoc loc = SourceLoc::current());
  /// `tensor.concat` along `axis` (the other dimensions must agree); in
  /// compiled functions it runs on whole values.
  Result<Value> concatenate(const std::vector<Value> &parts, int64_t axis,
                            SourceLoc loc = SourceLoc::current());
  /// Elementwise with numpy broadcasting; scalars broadcast too. Operand
  /// dtypes promote as numpy's do (NEP 50): a scalar constant is weak and
  /// takes the tensor's dtype unless it is a float meeting an integer
  /// tensor; bool < int32 < float16, bfloat16 < float32 otherwise, with
  /// float32 standing in for numpy's float64 (int32 with a float type,
  /// float16 with bfloat16).
  Result<Value> binary(BinaryOp op, Value a, Value b,
                       SourceLoc loc = SourceLoc::current());
  Result<Value> compare(CompareOp op, Value a, Value b,
                        SourceLoc loc = SourceLoc::current());
  /// `cond ? a : b` elementwise.
  Result<Value> select(Value cond, Value a, Value b,
                       SourceLoc loc = SourceLoc::current());
  /// `a @ b` with numpy's rules for every rank (1-D operands, broadcast
  /// batch dimensions, dtypes promoted); 2-D and equal-batch 3-D are
  /// `linalg.matmul` / `linalg.batch_matmul`, the rest one contraction.
  Result<Value> matmul(Value a, Value b, SourceLoc loc = SourceLoc::current());
  /// One pairwise step of `np.einsum` as one `linalg.generic`: `a` and `b`
  /// indexed by the letters of `labelsA` and `labelsB` (one per dimension,
  /// none repeated within an operand, a label shared by both of one size),
  /// the result by `labelsOut` (each from `labelsA` or `labelsB`); every
  /// label not in `labelsOut` is summed. A shared label kept is a batch
  /// dimension, a shared label summed is contracted (BLAS calls it like a
  /// matmul, and the partitioner splits it like one); dtypes promote as
  /// `matmul`'s.
  Result<Value> einsum(Value a, Value b, const std::string &labelsA,
                       const std::string &labelsB, const std::string &labelsOut,
                       SourceLoc loc = SourceLoc::current());
  /// Reduces over `axes` (negative counts from the end; empty: all).
  Result<Value> reduce(ReduceOp op, Value x, std::vector<int64_t> axes,
                       bool keepDims = false,
                       SourceLoc loc = SourceLoc::current());
  Result<Value> softmax(Value x, int64_t axis = -1,
                        SourceLoc loc = SourceLoc::current());
  /// One dimension may be -1 (inferred).
  Result<Value> reshape(Value x, std::vector<int64_t> shape,
                        SourceLoc loc = SourceLoc::current());
  /// `x[...]` with static slices: per dimension `offsets[d]` (0 <= offset),
  /// `sizes[d]` elements taken every `strides[d]` (> 0); dimensions listed
  /// in `drop` (integer indices, size 1) are removed from the result. In
  /// compiled functions the slice runs on the whole value.
  Result<Value> slice(Value x, std::vector<int64_t> offsets,
                      std::vector<int64_t> sizes, std::vector<int64_t> strides,
                      std::vector<int64_t> drop = {},
                      SourceLoc loc = SourceLoc::current());
  /// numpy's `take(x, indices, axis)`: the result has shape
  /// `x.shape[:axis] + indices.shape + x.shape[axis+1:]` (a gather, as
  /// `emb[tok]`). `indices` is an integer tensor; negative entries count
  /// from the end, and entries outside `[-n, n)` are clamped into range (as
  /// JAX's gather; numpy raises). In compiled functions a table split
  /// along the other dimensions stays split (each rank gathers from its
  /// rows); one split along `axis` is gathered or read by masked lookups.
  Result<Value> take(Value x, Value indices, int64_t axis,
                     SourceLoc loc = SourceLoc::current());
  /// numpy's `take_along_axis(x, indices, axis)` where `indices` has `x`'s
  /// shape except along `axis`: `out[..., j, ...] = x[..., indices[..., j,
  /// ...], ...]`, the other coordinates the result's own (so a split of
  /// `x` along them passes through the gather). Indices wrap and clamp as
  /// in `take`.
  Result<Value> takeAlong(Value x, Value indices, int64_t axis,
                          SourceLoc loc = SourceLoc::current());
  /// The adjoint of `take`: zeros of shape `values.shape[:axis] + (n,) +
  /// values.shape[axis+k:]` (k = `indices.ndim`, whose shape `values`
  /// holds at `axis`) with each value added at the row its index names,
  /// as `np.add.at(out, (slice(None),) * axis + (indices,), values)`.
  /// Indices wrap and clamp as in `take`, so that it is exactly the
  /// transpose of the gather.
  Result<Value> scatterAdd(Value values, Value indices, int64_t n, int64_t axis,
                           SourceLoc loc = SourceLoc::current());
  /// The adjoint of `takeAlong`: zeros of `values`' shape with `n` along
  /// `axis`, `out[..., indices[..., j, ...], ...] += values[..., j, ...]`
  /// (`indices` has `values`' shape).
  Result<Value> scatterAddAlong(Value values, Value indices, int64_t n,
                                int64_t axis,
                                SourceLoc loc = SourceLoc::current());
  /// Empty `perm` reverses the dimensions.
  Result<Value> transpose(Value x, std::vector<int64_t> perm = {},
                          SourceLoc loc = SourceLoc::current());
  Result<Value> cast(Value x, DType dtype,
                     SourceLoc loc = SourceLoc::current());

  //===--- Actors ---------------------------------------------------------===//

  /// Declares actor class `name` (idempotent for the same name).
  Status declareActorClass(const std::string &name,
                           SourceLoc loc = SourceLoc::current());
  bool hasActorClass(const std::string &name) const;
  /// Adds state `name` of per-rank type `type` to class `cls`, split over
  /// mesh dimensions as `dist` says (replicated: none).
  Status addState(const std::string &cls, const std::string &name,
                  const ArgType &type, const Dist &dist = {},
                  SourceLoc loc = SourceLoc::current());
  /// Starts endpoint `name` of class `cls` with per-rank argument types and
  /// their distributions (missing entries: replicated). `mesh` is the mesh
  /// the endpoint is traced for: collectives check their dimensions and
  /// compute their shapes against it. Returns the arguments; until
  /// `endEndpoint`, ops are built in the endpoint body.
  Result<std::vector<Value>>
  beginEndpoint(const std::string &cls, const std::string &name,
                const std::vector<ArgType> &args,
                const std::vector<Dist> &argDists, const std::string &mesh,
                SourceLoc loc = SourceLoc::current());
  /// Ends the endpoint with per-rank results and their distributions
  /// (missing entries: replicated), then returns to the enclosing function.
  Status endEndpoint(const std::vector<Value> &results,
                     const std::vector<Dist> &resultDists,
                     SourceLoc loc = SourceLoc::current());
  /// Abandons the endpoint being built (after an error in its body).
  void abandonEndpoint();
  bool hasEndpoint(const std::string &cls, const std::string &name) const;
  bool inEndpoint() const;

  Result<Value> stateGet(const std::string &name,
                         SourceLoc loc = SourceLoc::current());
  /// `mc.debug_print`: prints `values` with `format` (fields name them by
  /// position, `{0:.3f}`) on the workers at run time. In an endpoint each
  /// rank prints its own values; in a compiled function the values are
  /// placed on one mesh and every rank of it prints them whole.
  Status debugPrint(const std::string &format, const std::vector<Value> &values,
                    SourceLoc loc = SourceLoc::current());
  Status stateSet(const std::string &name, Value v,
                  SourceLoc loc = SourceLoc::current());

  /// Explicit collectives over mesh dimensions (endpoint bodies only).
  Result<Value> allReduce(Value v, const std::vector<std::string> &dims,
                          ReduceKind kind = ReduceKind::Sum,
                          SourceLoc loc = SourceLoc::current());
  Result<Value> allGather(Value v, const std::vector<std::string> &dims,
                          int64_t axis = 0,
                          SourceLoc loc = SourceLoc::current());
  Result<Value> reduceScatter(Value v, const std::vector<std::string> &dims,
                              int64_t axis = 0,
                              ReduceKind kind = ReduceKind::Sum,
                              SourceLoc loc = SourceLoc::current());
  Result<Value> broadcastFrom(Value v, const std::vector<std::string> &dims,
                              int64_t root = 0,
                              SourceLoc loc = SourceLoc::current());

  /// Spawns class `cls` on `mesh` as actor mesh `name`.
  Status declareActorMesh(const std::string &name, const std::string &cls,
                          const std::string &mesh,
                          SourceLoc loc = SourceLoc::current());
  bool hasActorMesh(const std::string &name) const;
  /// Calls endpoint `endpoint` on every rank of `actorMesh` with global
  /// values (fed or transferred to the actor's mesh as needed); the results
  /// live on that mesh.
  Result<std::vector<Value>> call(const std::string &actorMesh,
                                  const std::string &endpoint,
                                  const std::vector<Value> &args,
                                  SourceLoc loc = SourceLoc::current());
  /// Like `call`, discarding results.
  Status broadcast(const std::string &actorMesh, const std::string &endpoint,
                   const std::vector<Value> &args,
                   SourceLoc loc = SourceLoc::current());

private:
  /// `matmul` beyond the named ops: one linalg.generic contraction.
  Result<Value> contract(Value a, Value b, SourceLoc loc);
  /// `take` and `takeAlong`: one gather (`along` picks the second).
  Result<Value> gather(Value x, Value indices, int64_t axis, bool along,
                       SourceLoc loc);

  /// `scatterAdd` and `scatterAddAlong`: one compare-and-add generic.
  Result<Value> scatter(Value values, Value indices, int64_t n, int64_t axis,
                        bool along, SourceLoc loc);

public:
  //===--- Inspection -----------------------------------------------------===//

  ValueInfo info(Value v) const;
  /// Per-rank shape of a global `shape` distributed by `dist` over `mesh`.
  Result<std::vector<int64_t>> localShape(const std::vector<int64_t> &shape,
                                          const Dist &dist,
                                          const std::string &mesh) const;
  /// Verifies the module (all of it, as MLIR's verifier does).
  Status verify() const;
  /// The traced module as text.
  std::string str(bool debugInfo = false) const;
  /// Implementation state (TraceBuilderImpl.h).
  struct Impl;
  Impl &impl() { return *pimpl; }
  const Impl &impl() const { return *pimpl; }

private:
  std::unique_ptr<Impl> pimpl;
};

} // namespace monarch::frontend

#endif // MONARCH_FRONTEND_TRACEBUILDER_H
