//===- RankProgram.h - One rank's instructions, ready to run ---*- C++ -*-===//
//
// The worker's own view of a plan: everything the interpreter needs for this
// rank, resolved once at load (buffers as arena offsets and byte sizes,
// communicators by index, kernels by exported symbol, the user's source
// location per instruction). PlanLoader.cpp builds it from an ExecutionPlan;
// tests build it directly. Semantics: docs/plan-semantics.md.
//
//===----------------------------------------------------------------------===//
#ifndef MONARCH_EXECUTOR_RANKPROGRAM_H
#define MONARCH_EXECUTOR_RANKPROGRAM_H

#include "monarch/Executor/Communicator.h"
#include "monarch/Support/DType.h"
#include "monarch/Support/PrintFormat.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace monarch::plan {
struct KernelLibraryBlob;
} // namespace monarch::plan

namespace monarch::worker {

using executor::Backend;
using executor::CommOpKind;
using executor::ReduceOp;

struct BufferRef {
  int64_t offset = 0;
  /// The data plane's type (meaningful for types it moves).
  DType dtype = DType::F32;
  /// numpy's name ("float32", "bool", "int16", ...) and element size.
  std::string numpy = "float32";
  int64_t elementBytes = 4;
  std::vector<int64_t> shape;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  int64_t bytes() const { return numElements() * elementBytes; }
};

enum class OpKind {
  Feed,
  Fetch,
  State,
  Launch,
  Send,
  Recv,
  Collective,
  Wait,
  Print,
};

struct Instruction {
  OpKind kind = OpKind::Wait;
  /// "launch @step.k0", "send to 1 on @world" (for errors and traces).
  std::string name;
  /// The user's source location, "model.py:12:5" ("" when unknown).
  std::string location;

  /// Feed/fetch index.
  int index = -1;
  /// Fetch held for a resident output only (fetch_buffer ... keep_only):
  /// done when the step keeps that output, never returned.
  bool keepOnly = false;
  /// Feed/fetch/state buffer, send/recv buffer, collective input.
  BufferRef buffer;
  /// Collective output.
  BufferRef output;
  /// State: "@actor::@state".
  std::string stateKey;
  /// Launch (and print: `ins` are the printed buffers).
  std::string kernelSymbol;
  /// Launch: the values of the kernel's parameters, passed after its
  /// inputs as an int64 array (empty: none).
  std::vector<int64_t> kernelParams;
  std::vector<BufferRef> ins, outs;
  /// Print: the parsed format (support/PrintFormat.h).
  std::vector<printfmt::Piece> printFormat;

  int stream = 0;
  /// -1: not in a group.
  int group = -1;
  /// Index into RankProgram::communicators.
  int communicator = -1;
  /// Send/recv: a world rank.
  int peer = -1;
  CommOpKind collective = CommOpKind::AllReduce;
  ReduceOp reduce = ReduceOp::Sum;
  /// Broadcast root, a position in the communicator (not a world rank).
  int root = -1;

  /// The event this instruction yields (launch/send/recv/collective), or -1.
  int event = -1;
  /// Wait.
  std::vector<int> waitEvents;
};

struct CommunicatorSpec {
  std::string name;
  /// World ranks in communicator order.
  std::vector<int> ranks;
  Backend backend = Backend::Gloo;
  /// Streams of any member rank that use this communicator, sorted: every
  /// member duplicates the communicator once per entry, in this order, so
  /// each stream has its own FIFO and collective ops stay collective.
  std::vector<int> streams;
};

struct RankProgram {
  std::string planName;
  /// Ranks of the root mesh (the job's world size).
  int meshSize = 1;
  /// This worker's world rank.
  int rank = 0;
  /// False when the plan has no program for this rank (it does nothing).
  bool hasProgram = true;
  int64_t arenaBytes = 0;
  int numEvents = 0;
  std::vector<Instruction> instructions;
  std::vector<CommunicatorSpec> communicators;
  /// The compiled kernels (an ELF shared object), empty when no launch.
  std::string kernelLibrary;
  /// Buffers live on the CUDA device (the plan's communicators use NCCL):
  /// the arena is device memory and kernels come from `cudaLibrary` (PTX
  /// and cuBLAS calls, `monarch-compile --target=cuda`). DeviceArena.h.
  bool device = false;
  std::shared_ptr<const monarch::plan::KernelLibraryBlob> cudaLibrary;
};

} // namespace monarch::worker

#endif // MONARCH_EXECUTOR_RANKPROGRAM_H
