//===- Plan.cpp - Helpers of the plain ExecutionPlan model ------*- C++ -*-===//
//
// Names, sizes and lookups for the types of Plan.h. No MLIR, no Thrift.
//
//===----------------------------------------------------------------------===//

#include "monarch/Plan/Plan.h"

#include <limits>

namespace monarch::plan {

const char *backendName(Backend backend) {
  switch (backend) {
  case Backend::Gloo:
    return "gloo";
  case Backend::Nccl:
    return "nccl";
  }
  return "?";
}

const char *collectiveKindName(CollectiveKind kind) {
  switch (kind) {
  case CollectiveKind::AllReduce:
    return "all_reduce";
  case CollectiveKind::AllGather:
    return "all_gather";
  case CollectiveKind::ReduceScatter:
    return "reduce_scatter";
  case CollectiveKind::Broadcast:
    return "broadcast";
  case CollectiveKind::AllToAll:
    return "all_to_all";
  }
  return "?";
}

const char *reductionKindName(ReductionKind kind) {
  switch (kind) {
  case ReductionKind::Sum:
    return "sum";
  case ReductionKind::Prod:
    return "prod";
  case ReductionKind::Max:
    return "max";
  case ReductionKind::Min:
    return "min";
  case ReductionKind::Avg:
    return "avg";
  }
  return "?";
}

const char *targetName(PlanTarget target) {
  switch (target) {
  case PlanTarget::Cpu:
    return "cpu";
  case PlanTarget::Cuda:
    return "cuda";
  }
  return "?";
}

const char *instrKindName(InstrKind kind) {
  switch (kind) {
  case InstrKind::Launch:
    return "launch";
  case InstrKind::Send:
    return "send";
  case InstrKind::Recv:
    return "recv";
  case InstrKind::Collective:
    return "collective";
  case InstrKind::Wait:
    return "wait";
  case InstrKind::FeedBuffer:
    return "feed_buffer";
  case InstrKind::FetchBuffer:
    return "fetch_buffer";
  case InstrKind::StateBuffer:
    return "state_buffer";
  case InstrKind::PrintBuffers:
    return "print_buffers";
  }
  return "?";
}

const char *controlStepKindName(ControlStepKind kind) {
  switch (kind) {
  case ControlStepKind::ControlMsg:
    return "control_msg";
  case ControlStepKind::FeedInput:
    return "feed_input";
  case ControlStepKind::FetchOutput:
    return "fetch_output";
  case ControlStepKind::Await:
    return "await";
  }
  return "?";
}

std::string SourceLoc::str() const {
  if (file.empty())
    return "<unknown>";
  return file + ":" + std::to_string(line) + ":" + std::to_string(col);
}

static std::string shapeString(const std::vector<int64_t> &shape, DType dtype,
                               bool isTensor) {
  if (!isTensor)
    return dtypeMlirName(dtype);
  std::string s = "tensor<";
  for (int64_t d : shape)
    s += std::to_string(d) + "x";
  return s + dtypeMlirName(dtype) + ">";
}

std::string ValueType::str() const {
  return shapeString(shape, dtype, isTensor);
}

int64_t Buffer::numElements() const {
  // Saturates instead of overflowing; validatePlan rejects such buffers.
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0)
      return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d)
      return std::numeric_limits<int64_t>::max();
    n *= d;
  }
  return n;
}

int64_t Buffer::sizeInBytes() const {
  int64_t n = numElements(), bytes = static_cast<int64_t>(dtypeSize(dtype));
  if (n < 0)
    return -1;
  if (bytes != 0 && n > std::numeric_limits<int64_t>::max() / bytes)
    return std::numeric_limits<int64_t>::max();
  return n * bytes;
}

std::string Buffer::str() const {
  return "@" + std::to_string(offset) + " " + shapeString(shape, dtype, true);
}

int64_t ProcMesh::numRanks() const {
  if (!elided)
    return static_cast<int64_t>(rootRanks.size());
  // Decoded without its root ranks: as many as its dimensions hold (checked
  // against the stored set when decoded).
  int64_t n = 1;
  for (const MeshDim &d : dims)
    if (d.size <= 0 || __builtin_mul_overflow(n, d.size, &n))
      return 0;
  return n;
}

bool Instruction::isAsync() const {
  switch (kind) {
  case InstrKind::Launch:
  case InstrKind::Send:
  case InstrKind::Recv:
  case InstrKind::Collective:
    return true;
  default:
    return false;
  }
}

std::optional<int64_t> Instruction::stream() const {
  switch (kind) {
  case InstrKind::Launch:
    return launch.stream;
  case InstrKind::Send:
  case InstrKind::Recv:
    return p2p.stream;
  case InstrKind::Collective:
    return collective.stream;
  default:
    return std::nullopt;
  }
}

std::optional<int64_t> Instruction::group() const {
  switch (kind) {
  case InstrKind::Send:
  case InstrKind::Recv:
    return p2p.group;
  case InstrKind::Collective:
    return collective.group;
  default:
    return std::nullopt;
  }
}

bool Instruction::operator==(const Instruction &other) const {
  if (kind != other.kind || !(loc == other.loc))
    return false;
  switch (kind) {
  case InstrKind::Launch:
    return launch == other.launch;
  case InstrKind::Send:
  case InstrKind::Recv:
    return p2p == other.p2p;
  case InstrKind::Collective:
    return collective == other.collective;
  case InstrKind::Wait:
    return wait == other.wait;
  case InstrKind::FeedBuffer:
  case InstrKind::FetchBuffer:
    return io == other.io;
  case InstrKind::StateBuffer:
    return stateBuffer == other.stateBuffer;
  case InstrKind::PrintBuffers:
    return print == other.print;
  }
  return false;
}

template <typename T>
static int32_t findByName(const std::vector<T> &items, const std::string &name,
                          std::string T::*field) {
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].*field == name)
      return static_cast<int32_t>(i);
  return -1;
}

int32_t ExecutionPlan::findMesh(const std::string &name) const {
  return findByName(meshes, name, &ProcMesh::name);
}
int32_t ExecutionPlan::findPlan(const std::string &symbol) const {
  return findByName(plans, symbol, &StepPlan::symbol);
}
int32_t ExecutionPlan::findCommunicator(const std::string &name) const {
  return findByName(communicators, name, &Communicator::name);
}
int32_t ExecutionPlan::findKernel(const std::string &name) const {
  return findByName(kernels, name, &Kernel::name);
}

} // namespace monarch::plan
