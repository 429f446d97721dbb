//===- ExecutionPlan.thrift - The serialized ExecutionPlan -----*- thrift -*-===//
//
// What `monarch-compile --compile-to=plan` writes into a `.mcplan` file and
// what a worker loads: meshes and their topology, communicators, one entry
// per `monarch.plan` with a program per rank (static arena, instruction
// stream, source location of every instruction), the controller programs
// that invoke the plans, and the compiled kernel libraries.
//
// Versioning (docs/plan.md): FORMAT_VERSION is written in the file header and
// in ExecutionPlan.formatVersion. A reader accepts exactly its own version.
// Any change to this file that an older reader would misread (a renumbered
// or retyped field, a new enum value an old reader would not reject, a
// changed meaning) bumps FORMAT_VERSION. Field ids are never reused.
//
// Semantics of the instructions: docs/plan-semantics.md.
//
//===----------------------------------------------------------------------===//

namespace cpp monarch.plan.wire

const i32 FORMAT_VERSION = 7

/// Element types of buffers and signature values.
enum DType {
  F32 = 1,
  F16 = 2,
  BF16 = 3,
  F64 = 4,
  I1 = 5,
  I8 = 6,
  I16 = 7,
  I32 = 8,
  I64 = 9,
  UI8 = 10,
}

enum Backend {
  GLOO = 0,
  NCCL = 1,
}

enum CollectiveKind {
  ALL_REDUCE = 0,
  ALL_GATHER = 1,
  REDUCE_SCATTER = 2,
  BROADCAST = 3,
  ALL_TO_ALL = 4,
}

enum ReductionKind {
  SUM = 0,
  PROD = 1,
  MAX = 2,
  MIN = 3,
  AVG = 4,
}

enum KernelTarget {
  CPU = 0,
  CUDA = 1,
}

/// Where the user wrote the operation an instruction comes from (recovered
/// from the MLIR location; empty file and line 0 when unknown).
struct SourceLoc {
  1: string file,
  2: i32 line,
  3: i32 col,
  /// The MLIR operation name of the instruction (e.g. `monarch.collective`).
  4: string opName,
}

/// A value type: a ranked tensor, or a scalar (`isTensor` false, no shape).
struct ValueType {
  1: DType dtype,
  2: list<i64> shape,
  3: bool isTensor = true,
}

/// Bytes [offset, offset + size) of a rank's arena, holding a row-major
/// tensor of `dtype` and `shape`; size = product(shape) * bytes(dtype).
struct Buffer {
  1: i64 offset,
  2: DType dtype,
  3: list<i64> shape,
}

struct MeshDim {
  1: string name,
  2: i64 size,
}

/// Format 7: a list of ranks. Where it is a box (the ranks offset + sum_k
/// i_k * stride_k for 0 <= i_k < size_k, the last dimension fastest:
/// the ranks of a mesh slice, a communicator over some mesh dimensions, a
/// class of ranks), it is stored as one, in a size independent of how many
/// ranks it holds; otherwise `ranks` lists them.
struct RankSet {
  1: optional list<i64> ranks,
  /// [offset, size_0, stride_0, size_1, stride_1, ...]: one list, so a box
  /// decodes with one allocation.
  5: optional list<i64> box,
}

/// A proc mesh or a slice of one. A slice lists, for every dimension of its
/// parent, the half-open range it keeps; rank `r` of this mesh is the root
/// proc mesh's rank `rootRanks[r]`.
struct ProcMesh {
  1: string name,
  2: list<MeshDim> dims,
  3: optional string parent,
  4: list<i64> sliceStart,
  5: list<i64> sliceEnd,
  7: RankSet rootRanks,
}

/// Which ranks of a root proc mesh share a host. The compiler writes one
/// host holding every rank; launchers may rewrite it.
struct Host {
  1: string name,
  3: RankSet ranks,
}

struct MeshTopology {
  1: string mesh,
  2: list<Host> hosts,
}

struct Communicator {
  /// Format 7: absent where it is the previous communicator's name with its
  /// trailing number plus one (`@f.comm7` after `@f.comm6`).
  1: optional string name,
  /// The mesh whose ranks `ranks` lists (in communicator order); absent
  /// where it is the previous communicator's.
  2: optional string mesh,
  4: Backend backend,
  5: RankSet ranks,
  /// Format 7: this entry stands for `repeat` communicators (default 1):
  /// the k-th has the members `ranks` plus k * `shift`, the entry's mesh
  /// and backend, and names numbering on (the tensor-parallel groups of a
  /// 4,096-rank mesh are one entry).
  6: optional i64 repeat,
  7: optional i64 shift,
}

/// One kernel of the module: a `func.func` launched by the plans. Its
/// arguments are `numInputs` inputs then `numOutputs` outputs.
struct Kernel {
  1: string name,
  2: i32 numInputs,
  3: i32 numOutputs,
  /// Arithmetic ops of one launch (the simulator's roofline).
  4: optional i64 flops,
}

//===----------------------------------------------------------------------===//
// Instructions
//===----------------------------------------------------------------------===//

struct LaunchInstr {
  /// Index into ExecutionPlan.kernels.
  1: i32 kernel,
  2: list<Buffer> ins,
  3: list<Buffer> outs,
  4: i64 stream,
}

/// A send or a receive. `peer` is a rank of the plan's mesh.
struct P2PInstr {
  1: Buffer buffer,
  2: i64 peer,
  /// Index into ExecutionPlan.communicators.
  3: i32 communicator,
  4: i64 stream,
  5: optional i64 group,
}

struct CollectiveInstr {
  1: CollectiveKind kind,
  2: optional ReductionKind reduction,
  3: optional i64 root,
  4: i32 communicator,
  5: Buffer input,
  6: Buffer output,
  7: i64 stream,
  8: optional i64 group,
}

/// Blocks issue until the instructions at these indices (earlier
/// asynchronous instructions of the same rank program) have completed.
struct WaitInstr {
  1: list<i32> events,
}

/// feed_buffer: controller input `index` into `buffer`;
/// fetch_buffer: `buffer` to the controller as output `index`, or with
/// `offsets` as the shard of it starting there (one offset per dimension).
struct IOInstr {
  1: i64 index,
  2: Buffer buffer,
  3: optional list<i64> offsets,
  /// fetch_buffer only: this rank's copy of an output that may stay
  /// resident, kept when the step asks for it and never returned.
  4: optional bool keepOnly,
}

struct StateBufferInstr {
  1: string actorMesh,
  2: string state,
  3: Buffer buffer,
  /// Split state: where this rank's shard starts in the global value.
  4: optional list<i64> offsets,
}

/// print_buffers (mc.debug_print): `values` formatted with `format`, whose
/// fields name them by position (support/PrintFormat.h).
struct PrintInstr {
  1: string format,
  2: list<Buffer> values,
}

union InstrOp {
  1: LaunchInstr launch,
  2: P2PInstr send,
  3: P2PInstr recv,
  4: CollectiveInstr collective,
  5: WaitInstr wait,
  6: IOInstr feedBuffer,
  7: IOInstr fetchBuffer,
  8: StateBufferInstr stateBuffer,
  9: PrintInstr printBuffers,
}

struct Instruction {
  1: InstrOp op,
  2: SourceLoc loc,
}

/// What differs between the instruction streams of two ranks of one class
/// (SPMD: the same code, parameterised by the rank): instruction
/// `instruction`'s peer (send/recv), communicator (send/recv/collective),
/// root (collective), shard offsets (feed/fetch) or kernel (launch, format
/// 4: the same code with the rank's parameters). Unset fields are the
/// shared stream's.
struct RankPatch {
  1: i32 instruction,
  2: optional i64 peer,
  3: optional i32 communicator,
  4: optional i64 root,
  5: optional list<i64> offsets,
  6: optional i32 kernel,
}

/// Format 6: a rank-dependent field of a class computed from the rank
/// (RankClasses.h): for rank r of the class whose stream is rank s's, the
/// peer is s's plus (r - s) modulo the mesh's size, the communicator the one of s's family (same
/// mesh, members a translate of s's) holding r, offsets[d] s's plus
/// sum_k offsetSlopes[d * dims + k] * (coordinate k of r - coordinate k of
/// s) on the step's mesh. Patches apply after the rules.
struct RankRule {
  1: i32 instruction,
  2: optional bool peerShift,
  3: optional bool communicatorOfRank,
  4: optional list<i64> offsetSlopes,
}

struct RankProgram {
  1: i64 rank,
  /// Format 6: a rank sharing another's stream leaves out the sizes and
  /// estimate it shares with it.
  2: optional i64 arenaBytes,
  3: optional i64 peakBytes,
  /// Estimated by monarch-schedule, in microseconds (0 when unknown).
  4: optional double criticalPathUs,
  /// Empty when `sharesWith` is set.
  5: list<Instruction> instructions,
  /// Format 3: this rank runs the instructions of the earlier program at
  /// this index of the plan's `programs` (one that holds its own), with
  /// `patches` applied: ranks of one class are stored once.
  6: optional i32 sharesWith,
  7: optional list<RankPatch> patches,
  /// On a program holding its own stream: the rules of the ranks sharing it.
  8: optional list<RankRule> rules,
}

/// Format 7: ranks that run program `program`'s stream (an entry of
/// `programs` holding its own) with its rules, its arena, peak and
/// estimate, and no patch of their own: a class stored without an entry
/// per rank.
struct ClassMembers {
  1: i32 program,
  2: RankSet ranks,
}

/// Format 7: the streams on which some rank of the step uses each of
/// `communicators` (indexes into ExecutionPlan.communicators): what every
/// member must set up, known to a worker without reading the others'
/// programs.
struct CommStreams {
  1: RankSet communicators,
  2: list<i64> streams,
}

/// One `monarch.plan`: a step on a mesh, invoked by control messages. Its
/// programs are `programs` and, format 7, the ranks of `members` (the
/// in-memory plan lists them all in rank order).
struct StepPlan {
  1: string symbol,
  2: string mesh,
  3: list<ValueType> inputs,
  4: list<ValueType> outputs,
  5: list<RankProgram> programs,
  6: SourceLoc loc,
  7: optional list<ClassMembers> members,
  8: list<CommStreams> commStreams,
}

//===----------------------------------------------------------------------===//
// Controller programs
//===----------------------------------------------------------------------===//

enum ValueKind {
  /// Argument `index` of the controller program.
  ARGUMENT = 0,
  /// The value received by controller step `index` (a FETCH_OUTPUT).
  FETCHED = 1,
  /// A scalar constant (`constant`, converted to the value's dtype).
  CONSTANT = 2,
}

struct ValueRef {
  1: ValueKind kind,
  2: i32 index,
  3: double constant,
}

enum ControlStepKind {
  /// One control message to every worker of `mesh`, running `plans` in order
  /// with `scalars` as plan inputs.
  CONTROL_MSG = 0,
  /// `value` becomes input `index` of plan `plan`.
  FEED_INPUT = 1,
  /// Output `index` of plan `plan` arrives at the controller.
  FETCH_OUTPUT = 2,
  /// Waits for the completion of the control messages at steps `tokens`.
  AWAIT = 3,
}

/// A scalar riding on a control message: it becomes input `input` of plan
/// `plan`.
struct ScalarArg {
  1: ValueRef value,
  2: ValueType type,
  3: i32 plan,
  4: i32 input,
}

struct ControlStep {
  1: ControlStepKind kind,
  2: string mesh,
  3: list<i32> plans,
  4: list<ScalarArg> scalars,
  5: i32 plan,
  6: i32 index,
  7: ValueRef value,
  8: list<i32> tokens,
  9: ValueType type,
  10: SourceLoc loc,
}

/// A controller `func.func`: its signature, its steps in program order, and
/// where each of its results comes from.
struct ControllerProgram {
  1: string name,
  2: list<ValueType> inputs,
  3: list<ValueType> outputs,
  4: list<ControlStep> steps,
  5: list<ValueRef> results,
  6: SourceLoc loc,
}

//===----------------------------------------------------------------------===//
// Kernel libraries and the whole plan
//===----------------------------------------------------------------------===//

/// A matmul of a CUDA kernel run as one cuBLAS call
/// (cublasGemmStridedBatchedEx; cublasGemmEx when batch is 1), between the
/// kernel's PTX launches, at its `monarch.gemm` manifest line. Fields are
/// cuBLAS's arguments (column-major: the row-major C = A.B is computed as
/// C^T = B^T.A^T, so `a` is the kernel's B operand). Operands: "aI" (kernel
/// argument) or "sJ" (temporary) with an optional "+BYTES" offset.
/// Version 2 added this table: a version-1 reader would have ignored it and
/// run kernels without their matmuls.
struct GemmCall {
  1: bool transA,
  2: bool transB,
  3: i64 m,
  4: i64 n,
  5: i64 k,
  6: i64 lda,
  7: i64 ldb,
  8: i64 ldc,
  9: i64 strideA,
  10: i64 strideB,
  11: i64 strideC,
  12: i64 batch,
  13: DType typeA,
  14: DType typeB,
  15: DType typeC,
  16: double alpha,
  17: double beta,
  18: string a,
  19: string b,
  20: string c,
}

struct CompiledKernel {
  /// Index into ExecutionPlan.kernels.
  1: i32 kernel,
  /// The exported symbol; `extern "C" void symbol(void **buffers)`.
  2: string symbol,
  /// CUDA: the kernel's matmuls, in manifest order.
  3: list<GemmCall> gemms,
  /// The values of the symbol's parameters (format 4): passed as one more
  /// input, an int64 array after the kernel's own inputs; empty when the
  /// symbol takes none.
  4: list<i64> params,
}

/// What a worker of `target` loads: an ELF shared object for the CPU, PTX
/// for CUDA. Kernels absent from `kernels` have no compiled code.
struct KernelLibrary {
  1: KernelTarget target,
  2: binary code,
  3: list<CompiledKernel> kernels,
}

struct ExecutionPlan {
  1: i32 formatVersion,
  /// `monarch-compile` version that wrote the plan.
  2: string compilerVersion,
  /// The input file the plan was compiled from.
  3: string source,
  4: list<ProcMesh> meshes,
  5: list<MeshTopology> topology,
  6: list<Communicator> communicators,
  7: list<Kernel> kernels,
  8: list<StepPlan> plans,
  9: list<ControllerProgram> controllers,
  10: list<KernelLibrary> libraries,
}
