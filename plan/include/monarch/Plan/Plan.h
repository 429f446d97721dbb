//===- Plan.h - The ExecutionPlan as plain C++ values -----------*- C++ -*-===//
//
// The in-memory form of a `.mcplan` file, shared by the compiler (which
// builds it from planned IR), the executor (which runs it) and the tools
// (which print it). It mirrors plan/idl/ExecutionPlan.thrift field for
// field but uses only the standard library: no MLIR, no Thrift, no
// exceptions, so both the -fno-exceptions compiler and the exception-enabled
// runtime can include it. PlanFile.h converts it to and from the Thrift
// encoding. Semantics of the instructions: docs/plan-semantics.md; the file
// format and its versioning: docs/plan.md.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_PLAN_PLAN_H
#define MONARCH_PLAN_PLAN_H

#include "monarch/Support/DType.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace monarch::plan {

/// The plan format this build reads and writes (ExecutionPlan.thrift's
/// FORMAT_VERSION; a static_assert in the serializer keeps them equal).
inline constexpr int32_t kPlanFormatVersion = 7;

/// Element types: support's one DType, whose values are the IDL's.
using monarch::DType;
enum class Backend : int32_t { Gloo = 0, Nccl = 1 };
enum class CollectiveKind : int32_t {
  AllReduce = 0,
  AllGather = 1,
  ReduceScatter = 2,
  Broadcast = 3,
  AllToAll = 4,
};
enum class ReductionKind : int32_t {
  Sum = 0,
  Prod = 1,
  Max = 2,
  Min = 3,
  Avg = 4
};
enum class PlanTarget : int32_t { Cpu = 0, Cuda = 1 };

/// Lower-case names as written in the IR ("all_reduce", "sum", ...); "?"
/// for values outside the enumeration. Element types: dtypeMlirName.
const char *backendName(Backend backend);
const char *collectiveKindName(CollectiveKind kind);
const char *reductionKindName(ReductionKind kind);
const char *targetName(PlanTarget target);

/// Where the user wrote the operation an instruction comes from.
struct SourceLoc {
  std::string file;
  int32_t line = 0;
  int32_t col = 0;
  std::string opName;
  /// "file:line:col" ("<unknown>" when the file is empty).
  std::string str() const;
  bool operator==(const SourceLoc &) const = default;
};

/// A ranked tensor type, or a scalar when `isTensor` is false.
struct ValueType {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  bool isTensor = true;
  /// "tensor<8x4xf32>" or "f32".
  std::string str() const;
  bool operator==(const ValueType &) const = default;
};

/// Bytes [offset, offset + sizeInBytes()) of a rank's arena.
struct Buffer {
  int64_t offset = 0;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  int64_t numElements() const;
  int64_t sizeInBytes() const;
  /// "@128 tensor<8x4xf32>".
  std::string str() const;
  bool operator==(const Buffer &) const = default;
};

struct MeshDim {
  std::string name;
  int64_t size = 0;
  bool operator==(const MeshDim &) const = default;
};

/// A proc mesh (no parent) or a slice of one.
struct ProcMesh {
  std::string name;
  std::vector<MeshDim> dims;
  std::optional<std::string> parent;
  /// For slices: the kept half-open range of every parent dimension.
  std::vector<int64_t> sliceStart, sliceEnd;
  /// Rank of the root proc mesh for every rank of this mesh.
  std::vector<int64_t> rootRanks;
  /// Decoded for one rank (deserializePlanForRank): a slice that no step
  /// plan or communicator runs on, whose `rootRanks` are left empty (their
  /// number and sign were checked on the stored set), or a root proc mesh,
  /// whose root ranks are its ranks (left empty: rank r is root rank r).
  bool elided = false;
  int64_t numRanks() const;
  bool operator==(const ProcMesh &) const = default;
};

struct Host {
  std::string name;
  std::vector<int64_t> ranks;
  /// Decoded for one rank (deserializePlanForRank): a worker never reads
  /// the topology, so `ranks` is left empty (its bounds were checked on the
  /// stored set: a host of 4,096 ranks is not expanded for every worker).
  bool elided = false;
  bool operator==(const Host &) const = default;
};

/// Which ranks of root proc mesh `mesh` share a host.
struct MeshTopology {
  std::string mesh;
  std::vector<Host> hosts;
  bool operator==(const MeshTopology &) const = default;
};

struct Communicator {
  std::string name;
  std::string mesh;
  std::vector<int64_t> ranks;
  Backend backend = Backend::Gloo;
  /// Decoded for one rank (deserializePlanForRank): a repeat of a stored
  /// run that neither holds the rank nor is named by a stored stream or
  /// patch, so the rank never uses it; `name` and `ranks` are left empty (a
  /// worker of 4,096 ranks is in a few of hundreds of communicators).
  bool elided = false;
  bool operator==(const Communicator &) const = default;
};

struct Kernel {
  std::string name;
  int32_t numInputs = 0;
  int32_t numOutputs = 0;
  /// Arithmetic ops of one launch (its structured ops' iterations times
  /// their ops per iteration, OpCost.h): the simulator's roofline.
  int64_t flops = 0;
  bool operator==(const Kernel &) const = default;
};

enum class InstrKind : int32_t {
  Launch,
  Send,
  Recv,
  Collective,
  Wait,
  FeedBuffer,
  FetchBuffer,
  StateBuffer,
  PrintBuffers,
};
/// "launch", "send", ... as in the IR.
const char *instrKindName(InstrKind kind);

struct LaunchInstr {
  int32_t kernel = 0; ///< Index into ExecutionPlan::kernels.
  std::vector<Buffer> ins, outs;
  int64_t stream = 0;
  bool operator==(const LaunchInstr &) const = default;
};

struct P2PInstr {
  Buffer buffer;
  int64_t peer = 0;         ///< A rank of the plan's mesh.
  int32_t communicator = 0; ///< Index into ExecutionPlan::communicators.
  int64_t stream = 0;
  std::optional<int64_t> group;
  bool operator==(const P2PInstr &) const = default;
};

struct CollectiveInstr {
  CollectiveKind kind = CollectiveKind::AllReduce;
  std::optional<ReductionKind> reduction;
  std::optional<int64_t> root;
  int32_t communicator = 0;
  Buffer input, output;
  int64_t stream = 0;
  std::optional<int64_t> group;
  bool operator==(const CollectiveInstr &) const = default;
};

struct WaitInstr {
  /// Indices of earlier asynchronous instructions of the same program.
  std::vector<int32_t> events;
  bool operator==(const WaitInstr &) const = default;
};

/// feed_buffer (input `index` into `buffer`) and fetch_buffer (`buffer` as
/// output `index`, or with `offsets` the shard of it starting there: the
/// controller assembles the output from every rank's shard).
struct IOInstr {
  int64_t index = 0;
  Buffer buffer;
  std::vector<int64_t> offsets;
  /// fetch_buffer: held for a resident output only, never returned.
  bool keepOnly = false;
  bool operator==(const IOInstr &) const = default;
};

struct StateBufferInstr {
  std::string actorMesh, state;
  Buffer buffer;
  /// For split state: where this rank's shard starts in the global value
  /// (one offset per dimension); empty for state held whole.
  std::vector<int64_t> offsets;
  bool operator==(const StateBufferInstr &) const = default;
};

/// print_buffers: `buffers` formatted with `format` (support's
/// PrintFormat.h; fields name buffers by position), a line of the step's
/// output on this rank.
struct PrintInstr {
  std::string format;
  std::vector<Buffer> buffers;
  bool operator==(const PrintInstr &) const = default;
};

/// One instruction; only the member matching `kind` is meaningful (`p2p`
/// for both send and recv, `io` for feed and fetch).
struct Instruction {
  InstrKind kind = InstrKind::Wait;
  LaunchInstr launch;
  P2PInstr p2p;
  CollectiveInstr collective;
  WaitInstr wait;
  IOInstr io;
  StateBufferInstr stateBuffer;
  PrintInstr print;
  SourceLoc loc;

  /// True for the instructions that run on a stream and yield an event.
  bool isAsync() const;
  /// Stream of an asynchronous instruction, or nullopt.
  std::optional<int64_t> stream() const;
  std::optional<int64_t> group() const;
  bool operator==(const Instruction &) const;
};

struct RankProgram {
  int64_t rank = 0;
  int64_t arenaBytes = 0;
  int64_t peakBytes = 0;
  double criticalPathUs = 0;
  std::vector<Instruction> instructions;
  bool operator==(const RankProgram &) const = default;
};

/// One `monarch.plan`.
struct StepPlan {
  std::string symbol;
  std::string mesh;
  std::vector<ValueType> inputs, outputs;
  std::vector<RankProgram> programs;
  SourceLoc loc;
  bool operator==(const StepPlan &) const = default;
};

enum class ValueKind : int32_t { Argument = 0, Fetched = 1, Constant = 2 };

/// A controller value: argument `index`, the value received by step `index`
/// (a FetchOutput step), or a scalar constant.
struct ValueRef {
  ValueKind kind = ValueKind::Argument;
  int32_t index = 0;
  double constant = 0;
  bool operator==(const ValueRef &) const = default;
};

enum class ControlStepKind : int32_t {
  ControlMsg = 0,
  FeedInput = 1,
  FetchOutput = 2,
  Await = 3,
};
const char *controlStepKindName(ControlStepKind kind);

struct ScalarArg {
  ValueRef value;
  ValueType type;
  int32_t plan = 0;  ///< Index into ExecutionPlan::plans.
  int32_t input = 0; ///< Input of that plan the scalar becomes.
  bool operator==(const ScalarArg &) const = default;
};

/// One step of a controller program; fields by kind:
///  ControlMsg: mesh, plans (indices into ExecutionPlan::plans), scalars;
///  FeedInput: plan, index (plan input), value, type;
///  FetchOutput: plan, index (plan output), type;
///  Await: tokens (indices of ControlMsg steps).
struct ControlStep {
  ControlStepKind kind = ControlStepKind::Await;
  std::string mesh;
  std::vector<int32_t> plans;
  std::vector<ScalarArg> scalars;
  int32_t plan = 0;
  int32_t index = 0;
  ValueRef value;
  std::vector<int32_t> tokens;
  ValueType type;
  SourceLoc loc;
  bool operator==(const ControlStep &) const = default;
};

/// A controller `func.func`.
struct ControllerProgram {
  std::string name;
  std::vector<ValueType> inputs, outputs;
  std::vector<ControlStep> steps;
  /// Where result i comes from.
  std::vector<ValueRef> results;
  SourceLoc loc;
  bool operator==(const ControllerProgram &) const = default;
};

/// A matmul of a CUDA kernel, executed as one cuBLAS call
/// (`cublasGemmStridedBatchedEx`, or `cublasGemmEx` when batch is 1) between
/// the kernel's PTX launches. Every field is a cuBLAS argument in cuBLAS's
/// column-major convention: the row-major C = A·B of the kernel is computed
/// as Cᵀ = Bᵀ·Aᵀ, so `a` is the kernel's B operand and `b` its A operand.
/// Operands are "aI" (kernel argument I) or "sJ" (temporary J), plus a byte
/// offset ("a0+64").
struct GemmCall {
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  /// Elements between consecutive matrices of a batch (0 when batch is 1).
  int64_t strideA = 0, strideB = 0, strideC = 0;
  int64_t batch = 1;
  DType typeA = DType::F32, typeB = DType::F32, typeC = DType::F32;
  double alpha = 1.0, beta = 1.0;
  std::string a, b, c;
  bool operator==(const GemmCall &) const = default;
};

struct CompiledKernelRef {
  int32_t kernel = 0; ///< Index into ExecutionPlan::kernels.
  std::string symbol; ///< `extern "C" void symbol(void **buffers)`.
  /// CUDA: the kernel's matmuls as cuBLAS calls, in the order of the
  /// `monarch.gemm` lines of its launch manifest.
  std::vector<GemmCall> gemms = {};
  /// The values of the symbol's parameters: kernels equal but for a few
  /// integers share a symbol that reads them from one more input, an
  /// int64 array after the kernel's inputs (docs/kernels.md, "Kernels
  /// that take their integers"). Empty when it takes none.
  std::vector<int64_t> params = {};
  bool operator==(const CompiledKernelRef &) const = default;
};

/// An ELF shared object (Cpu) or PTX text (Cuda) and the kernels it holds.
struct KernelLibraryBlob {
  PlanTarget target = PlanTarget::Cpu;
  std::string code;
  std::vector<CompiledKernelRef> kernels;
  bool operator==(const KernelLibraryBlob &) const = default;
};

struct ExecutionPlan {
  int32_t formatVersion = kPlanFormatVersion;
  std::string compilerVersion;
  std::string source;
  std::vector<ProcMesh> meshes;
  std::vector<MeshTopology> topology;
  std::vector<Communicator> communicators;
  std::vector<Kernel> kernels;
  std::vector<StepPlan> plans;
  std::vector<ControllerProgram> controllers;
  std::vector<KernelLibraryBlob> libraries;

  /// Lookups by name; -1 when absent.
  int32_t findMesh(const std::string &name) const;
  int32_t findPlan(const std::string &symbol) const;
  int32_t findCommunicator(const std::string &name) const;
  int32_t findKernel(const std::string &name) const;
  bool operator==(const ExecutionPlan &) const = default;
};

} // namespace monarch::plan

#endif // MONARCH_PLAN_PLAN_H
