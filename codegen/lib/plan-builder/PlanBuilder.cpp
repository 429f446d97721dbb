//===- PlanBuilder.cpp - Planned MLIR to an ExecutionPlan -------*- C++ -*-===//
//
// Walks a planned module once: meshes, communicators, then every
// `monarch.plan` (kernels are numbered in order of first launch), then the
// controller functions, and finally compiles the launched kernels. Every
// instruction carries the user's source location recovered from its MLIR
// location. What the plan cannot express (an element type without a plan
// dtype, controller code other than control messages, feeds, fetches and
// constants) is a diagnostic at the operation, not a silent omission.
//
//===----------------------------------------------------------------------===//

#include "monarch/Codegen/PlanBuilder.h"
#include "monarch/Plan/PlanFile.h"

#include "monarch/IR/ElementTypes.h"
#include "monarch/IR/MonarchDialect.h"
#include "monarch/IR/OpCost.h"
#include "monarch/IR/SourceLocation.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/MapVector.h"

#include <map>

using namespace mlir;

namespace monarch::codegen {
using plan::Backend;
using plan::Buffer;
using plan::CollectiveInstr;
using plan::CollectiveKind;
using plan::Communicator;
using plan::CompiledKernelRef;
using plan::ControllerProgram;
using plan::ControlStep;
using plan::ControlStepKind;
using plan::DType;
using plan::ExecutionPlan;
using plan::Host;
using plan::InstrKind;
using plan::Instruction;
using plan::IOInstr;
using plan::Kernel;
using plan::KernelLibraryBlob;
using plan::LaunchInstr;
using plan::MeshDim;
using plan::MeshTopology;
using plan::P2PInstr;
using plan::PlanTarget;
using plan::ProcMesh;
using plan::RankProgram;
using plan::ReductionKind;
using plan::ScalarArg;
using plan::SourceLoc;
using plan::StateBufferInstr;
using plan::StepPlan;
using plan::validatePlan;
using plan::ValueKind;
using plan::ValueRef;
using plan::ValueType;

bool kernelCompilerAvailable() {
#if MONARCH_HAVE_KERNEL_COMPILER
  return true;
#else
  return false;
#endif
}

//===----------------------------------------------------------------------===//
// Locations and types
//===----------------------------------------------------------------------===//

SourceLoc toSourceLoc(Location loc, StringRef opName) {
  SourceLoc result;
  result.opName = opName.str();
  if (std::optional<FileLineColLoc> file = findFileLoc(loc)) {
    result.file = file->getFilename().str();
    result.line = static_cast<int32_t>(file->getLine());
    result.col = static_cast<int32_t>(file->getColumn());
  }
  return result;
}

static SourceLoc locOf(Operation *op) {
  return toSourceLoc(op->getLoc(), op->getName().getStringRef());
}

static std::vector<int64_t> vec(ArrayRef<int64_t> values) {
  return std::vector<int64_t>(values.begin(), values.end());
}

static FailureOr<ValueType> toValueType(Operation *at, Type type) {
  if (auto tensor = dyn_cast<RankedTensorType>(type)) {
    std::optional<DType> dtype = dtypeOf(tensor.getElementType());
    if (!dtype) {
      at->emitOpError("element type ")
          << tensor.getElementType()
          << " has no ExecutionPlan dtype (f32, f16, bf16, f64, i1, i8, "
             "i16, i32, i64)";
      return failure();
    }
    if (!tensor.hasStaticShape()) {
      at->emitOpError("type ") << type << " must have a static shape";
      return failure();
    }
    return ValueType{*dtype, vec(tensor.getShape()), true};
  }
  if (std::optional<DType> dtype = dtypeOf(type))
    return ValueType{*dtype, {}, false};
  at->emitOpError("type ") << type << " cannot cross the controller boundary "
                           << "in an ExecutionPlan";
  return failure();
}

static FailureOr<Buffer> toBuffer(Operation *at, BufferAttr attr) {
  FailureOr<ValueType> type = toValueType(at, attr.getType());
  if (failed(type))
    return failure();
  return Buffer{attr.getOffset(), type->dtype, type->shape};
}

static FailureOr<std::vector<Buffer>> toBuffers(Operation *at,
                                                ArrayAttr attrs) {
  std::vector<Buffer> out;
  out.reserve(attrs.size());
  for (Attribute a : attrs) {
    FailureOr<Buffer> b = toBuffer(at, cast<BufferAttr>(a));
    if (failed(b))
      return failure();
    out.push_back(*b);
  }
  return out;
}

static std::optional<CollectiveKind> toCollective(::monarch::CollectiveKind k) {
  switch (k) {
  case ::monarch::CollectiveKind::AllReduce:
    return CollectiveKind::AllReduce;
  case ::monarch::CollectiveKind::AllGather:
    return CollectiveKind::AllGather;
  case ::monarch::CollectiveKind::ReduceScatter:
    return CollectiveKind::ReduceScatter;
  case ::monarch::CollectiveKind::Broadcast:
    return CollectiveKind::Broadcast;
  case ::monarch::CollectiveKind::AllToAll:
    return CollectiveKind::AllToAll;
  }
  return std::nullopt;
}

static std::optional<ReductionKind> toReduction(::monarch::ReductionKind k) {
  switch (k) {
  case ::monarch::ReductionKind::Sum:
    return ReductionKind::Sum;
  case ::monarch::ReductionKind::Prod:
    return ReductionKind::Prod;
  case ::monarch::ReductionKind::Max:
    return ReductionKind::Max;
  case ::monarch::ReductionKind::Min:
    return ReductionKind::Min;
  case ::monarch::ReductionKind::Avg:
    return ReductionKind::Avg;
  }
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Verification of the stage
//===----------------------------------------------------------------------===//

LogicalResult verifyPlannedModule(ModuleOp module, bool verified) {
  if (!verified && failed(mlir::verify(module)))
    return failure();
  bool ok = true, anyPlan = false, anyProgram = false;
  for (Operation &op : module.getBody()->getOperations()) {
    if (isa<PlanOp>(op))
      anyPlan = true;
    auto fn = dyn_cast<func::FuncOp>(op);
    if (!fn || fn.isExternal())
      continue;
    anyProgram = true;
    if (fn->hasAttr(MonarchDialect::getWorkerForAttrName())) {
      fn.emitOpError("is a worker program that no monarch.plan replaced "
                     "(compile to 'planned' first)");
      ok = false;
      continue;
    }
    fn.walk([&](Operation *inner) {
      if (isa<CallOp, BroadcastOp, FeedOp, FetchOp, TransferOp, ChannelSendOp,
              ChannelRecvOp>(inner)) {
        inner->emitOpError("is not planned: compile the module to the "
                           "'planned' stage first");
        ok = false;
      }
    });
  }
  // A controller program with no mesh work (`def f(x): return x`) needs no
  // worker plan; a module with neither is not a program.
  if (ok && !anyPlan && !anyProgram) {
    module.emitError("module has no monarch.plan and no controller program: "
                     "compile it to the 'planned' stage first");
    ok = false;
  }
  return success(ok);
}

//===----------------------------------------------------------------------===//
// The builder
//===----------------------------------------------------------------------===//

namespace {

class Builder {
public:
  Builder(ModuleOp module, const PlanBuildOptions &options)
      : module(module), symbols(module), options(options) {}

  FailureOr<ExecutionPlan> run() {
    plan.compilerVersion = options.compilerVersion;
    plan.source = options.source;
    for (Operation &op : module.getBody()->getOperations()) {
      if (auto mesh = dyn_cast<MeshOpInterface>(op))
        if (failed(addMesh(mesh)))
          return failure();
    }
    for (auto comm : module.getOps<CommunicatorOp>())
      if (failed(addCommunicator(comm)))
        return failure();
    for (auto p : module.getOps<PlanOp>())
      if (failed(addPlan(p)))
        return failure();
    for (auto fn : module.getOps<func::FuncOp>())
      if (isController(fn) && failed(addController(fn)))
        return failure();
    if (failed(compileLaunchedKernels()))
      return failure();
    mergeEqualKernels();
    if (!options.validate)
      return std::move(plan);
    if (Status s = validatePlan(plan); !s) {
      // The IR verifiers should make this unreachable; say so if not.
      module.emitError("internal error: the ExecutionPlan built from this "
                       "module is inconsistent: ")
          << s.message();
      return failure();
    }
    return std::move(plan);
  }

private:
  LogicalResult addMesh(MeshOpInterface mesh) {
    Operation *op = mesh.getOperation();
    ProcMesh m;
    m.name = SymbolTable::getSymbolName(op).str();
    SmallVector<StringRef> names = mesh.getDimNames();
    SmallVector<int64_t> shape = mesh.getMeshShape();
    for (auto [name, size] : llvm::zip(names, shape))
      m.dims.push_back(MeshDim{name.str(), size});
    // Slice ranks mapped to the root proc mesh.
    MeshSliceOp unresolved;
    auto roots = getRootRanks(mesh, nullptr, &unresolved);
    if (failed(roots))
      return (unresolved ? unresolved.getOperation() : op)
          ->emitOpError("has no resolvable parent mesh");
    m.rootRanks.assign(roots->begin(), roots->end());
    if (auto slice = dyn_cast<MeshSliceOp>(op)) {
      m.parent = slice.getParent().str();
      m.sliceStart = vec(slice.getStarts());
      m.sliceEnd = vec(slice.getEnds());
    }
    if (!m.parent) {
      // One host per coordinate along the monarch.topology's host
      // dimensions; without one, every rank shares one host.
      MeshTopology topo{m.name, {}};
      TopologyOp described;
      for (auto t : op->getParentOfType<ModuleOp>().getOps<TopologyOp>())
        if (t.getMesh() == m.name)
          described = t;
      if (!described) {
        topo.hosts.push_back(Host{"localhost", m.rootRanks});
      } else {
        std::map<int64_t, std::vector<int64_t>> byHost;
        for (int64_t r : m.rootRanks)
          byHost[described.hostOf(names, shape, r)].push_back(r);
        for (auto &[host, ranks] : byHost)
          topo.hosts.push_back(Host{"host" + std::to_string(host), ranks});
      }
      plan.topology.push_back(std::move(topo));
    }
    plan.meshes.push_back(std::move(m));
    return success();
  }

  LogicalResult addCommunicator(CommunicatorOp comm) {
    Communicator c;
    c.name = comm.getSymName().str();
    c.mesh = comm.getMesh().str();
    c.ranks = vec(comm.getRanks());
    c.backend = comm.getBackend() == ::monarch::Backend::Nccl ? Backend::Nccl
                                                              : Backend::Gloo;
    // The first of a name, as ExecutionPlan::findCommunicator finds it.
    commIndices.try_emplace(c.name,
                            static_cast<int32_t>(plan.communicators.size()));
    plan.communicators.push_back(std::move(c));
    return success();
  }

  /// locOf(op), decoded once per location and op name: the ranks of a
  /// class share their instructions' locations (a walk to the file
  /// location and two strings each).
  SourceLoc instructionLoc(Operation *op) {
    auto key = std::make_pair(op->getLoc().getAsOpaquePointer(),
                              op->getName().getAsOpaquePointer());
    auto it = locs.find(key);
    if (it == locs.end())
      it = locs.try_emplace(key, locOf(op)).first;
    return it->second;
  }

  FailureOr<int32_t> commIndex(Operation *at, StringRef name) {
    // Hashed: findCommunicator's scan of 529 names per transfer was a
    // tenth of building a 4,096-rank plan.
    auto it = commIndices.find(name);
    if (it == commIndices.end())
      return at->emitOpError("communicator @") << name << " is not defined";
    return it->second;
  }

  FailureOr<int32_t> kernelIndex(LaunchOp launch) {
    StringRef name = launch.getKernel();
    auto it = kernelIndices.find(name);
    if (it != kernelIndices.end())
      return it->second;
    // The module's table, built once: a lookup per kernel on the module
    // itself scans it (quadratic in the ranks).
    auto fn = symbols.lookup<func::FuncOp>(name);
    if (!fn)
      return launch.emitOpError("kernel @") << name << " is not a func.func";
    int32_t index = static_cast<int32_t>(plan.kernels.size());
    plan.kernels.push_back(Kernel{
        name.str(), static_cast<int32_t>(launch.getIns().size()),
        static_cast<int32_t>(launch.getOuts().size()), structuredFlops(fn)});
    kernelFuncs.push_back(fn);
    kernelIndices[name] = index;
    return index;
  }

  LogicalResult addPlan(PlanOp planOp) {
    StepPlan step;
    step.symbol = planOp.getSymName().str();
    step.mesh = planOp.getMesh().str();
    step.loc = locOf(planOp);
    if (std::optional<FunctionType> signature = planOp.getSignature()) {
      for (Type t : signature->getInputs()) {
        FailureOr<ValueType> v = toValueType(planOp, t);
        if (failed(v))
          return failure();
        step.inputs.push_back(*v);
      }
      for (Type t : signature->getResults()) {
        FailureOr<ValueType> v = toValueType(planOp, t);
        if (failed(v))
          return failure();
        step.outputs.push_back(*v);
      }
    }
    // A member of a class (monarch.rank_member) is its program's rank
    // program with its own rank, peers, communicators and offsets.
    llvm::DenseMap<int64_t, size_t> programOf;
    for (Operation &op : planOp.getBody().front()) {
      if (auto member = dyn_cast<RankMemberOp>(op)) {
        auto it = programOf.find(member.getOf());
        if (it == programOf.end())
          return member.emitOpError("runs the program of rank ")
                 << member.getOf() << ", which is not an earlier program";
        FailureOr<RankProgram> rp =
            instantiateMember(step.programs[it->second], member);
        if (failed(rp))
          return failure();
        step.programs.push_back(std::move(*rp));
        continue;
      }
      auto program = dyn_cast<RankProgramOp>(op);
      if (!program)
        continue;
      FailureOr<RankProgram> rp = buildRankProgram(step, program);
      if (failed(rp))
        return failure();
      programOf[rp->rank] = step.programs.size();
      step.programs.push_back(std::move(*rp));
    }
    planIndices[planOp.getSymName()] = static_cast<int32_t>(plan.plans.size());
    plan.plans.push_back(std::move(step));
    return success();
  }

  FailureOr<RankProgram> instantiateMember(const RankProgram &of,
                                           RankMemberOp member) {
    RankProgram rp = of;
    rp.rank = static_cast<int64_t>(member.getRank());
    ArrayRef<int64_t> peers = member.getPeers();
    ArrayRef<Attribute> comms = member.getComms().getValue();
    ArrayRef<Attribute> offsets = member.getOffsets().getValue();
    size_t p = 0, c = 0, o = 0;
    auto setOffsets = [&](std::vector<int64_t> &to) -> LogicalResult {
      if (o >= offsets.size())
        return member.emitOpError("has too few offsets for its program");
      to.clear();
      if (auto at = dyn_cast<DenseI64ArrayAttr>(offsets[o]))
        to.assign(at.asArrayRef().begin(), at.asArrayRef().end());
      ++o;
      return success();
    };
    for (Instruction &in : rp.instructions) {
      LogicalResult ok = success();
      switch (in.kind) {
      case InstrKind::Send:
      case InstrKind::Recv:
        if (p >= peers.size())
          return member.emitOpError("has too few peers for its program");
        in.p2p.peer = peers[p++];
        break;
      case InstrKind::Collective: {
        if (c >= comms.size())
          return member.emitOpError("has too few comms for its program");
        FailureOr<int32_t> index =
            commIndex(member, cast<FlatSymbolRefAttr>(comms[c++]).getValue());
        if (failed(index))
          return failure();
        in.collective.communicator = *index;
        break;
      }
      case InstrKind::FeedBuffer:
      case InstrKind::FetchBuffer:
        ok = setOffsets(in.io.offsets);
        break;
      case InstrKind::StateBuffer:
        ok = setOffsets(in.stateBuffer.offsets);
        break;
      default:
        break;
      }
      if (failed(ok))
        return failure();
    }
    return rp;
  }

  FailureOr<RankProgram> buildRankProgram(const StepPlan &step,
                                          RankProgramOp program) {
    RankProgram rp;
    rp.rank = static_cast<int64_t>(program.getRank());
    rp.arenaBytes = static_cast<int64_t>(program.getArena());
    rp.peakBytes = rp.arenaBytes;
    if (auto peak = program->getAttrOfType<IntegerAttr>("monarch.peak_bytes"))
      rp.peakBytes = peak.getInt();
    if (auto path =
            program->getAttrOfType<FloatAttr>("monarch.critical_path_us"))
      rp.criticalPathUs = path.getValueAsDouble();
    llvm::DenseMap<Value, int32_t> events;
    // Room for every instruction first: an Instruction is large, and growing
    // the vector moved each a few times (at 4,096 ranks, a tenth of the
    // compile).
    rp.instructions.reserve(program.getBody().front().getOperations().size());
    for (Operation &op : program.getBody().front()) {
      Instruction in;
      in.loc = instructionLoc(&op);
      int32_t index = static_cast<int32_t>(rp.instructions.size());
      LogicalResult ok = success();
      if (auto launch = dyn_cast<LaunchOp>(op)) {
        in.kind = InstrKind::Launch;
        FailureOr<int32_t> k = kernelIndex(launch);
        auto ins = toBuffers(&op, launch.getIns());
        auto outs = toBuffers(&op, launch.getOuts());
        if (failed(k) || failed(ins) || failed(outs))
          return failure();
        in.launch = LaunchInstr{*k, std::move(*ins), std::move(*outs),
                                static_cast<int64_t>(launch.getStream())};
        events[launch.getEvent()] = index;
      } else if (isa<SendOp, RecvOp>(op)) {
        bool send = isa<SendOp>(op);
        in.kind = send ? InstrKind::Send : InstrKind::Recv;
        BufferAttr buffer =
            send ? cast<SendOp>(op).getBuffer() : cast<RecvOp>(op).getBuffer();
        uint64_t peer =
            send ? cast<SendOp>(op).getPeer() : cast<RecvOp>(op).getPeer();
        StringRef comm =
            send ? cast<SendOp>(op).getComm() : cast<RecvOp>(op).getComm();
        uint64_t stream =
            send ? cast<SendOp>(op).getStream() : cast<RecvOp>(op).getStream();
        std::optional<uint64_t> group =
            send ? cast<SendOp>(op).getGroup() : cast<RecvOp>(op).getGroup();
        FailureOr<Buffer> b = toBuffer(&op, buffer);
        FailureOr<int32_t> c = commIndex(&op, comm);
        if (failed(b) || failed(c))
          return failure();
        in.p2p = P2PInstr{*b, static_cast<int64_t>(peer), *c,
                          static_cast<int64_t>(stream), std::nullopt};
        if (group)
          in.p2p.group = static_cast<int64_t>(*group);
        events[op.getResult(0)] = index;
      } else if (auto coll = dyn_cast<CollectiveOp>(op)) {
        in.kind = InstrKind::Collective;
        CollectiveInstr &c = in.collective;
        std::optional<CollectiveKind> kind = toCollective(coll.getKind());
        if (!kind)
          return coll.emitOpError("collective kind has no plan encoding");
        c.kind = *kind;
        if (auto red = coll.getReduction())
          c.reduction = toReduction(*red);
        if (auto root = coll.getRoot())
          c.root = static_cast<int64_t>(*root);
        FailureOr<int32_t> comm = commIndex(&op, coll.getComm());
        FailureOr<Buffer> input = toBuffer(&op, coll.getInput());
        FailureOr<Buffer> output = toBuffer(&op, coll.getOutput());
        if (failed(comm) || failed(input) || failed(output))
          return failure();
        c.communicator = *comm;
        c.input = *input;
        c.output = *output;
        c.stream = static_cast<int64_t>(coll.getStream());
        if (auto group = coll.getGroup())
          c.group = static_cast<int64_t>(*group);
        events[coll.getEvent()] = index;
      } else if (auto wait = dyn_cast<WaitOp>(op)) {
        in.kind = InstrKind::Wait;
        for (Value e : wait.getEvents()) {
          auto it = events.find(e);
          if (it == events.end())
            return wait.emitOpError("waits on an event that is not produced "
                                    "earlier in this rank program");
          in.wait.events.push_back(it->second);
        }
      } else if (isa<FeedBufferOp, FetchBufferOp>(op)) {
        bool feed = isa<FeedBufferOp>(op);
        in.kind = feed ? InstrKind::FeedBuffer : InstrKind::FetchBuffer;
        uint64_t ioIndex = feed ? cast<FeedBufferOp>(op).getIndex()
                                : cast<FetchBufferOp>(op).getIndex();
        size_t count = feed ? step.inputs.size() : step.outputs.size();
        if (ioIndex >= count)
          return op.emitOpError()
                 << (feed ? "input " : "output ") << ioIndex << " but plan @"
                 << step.symbol << " has " << count
                 << (feed ? " inputs" : " outputs") << " in its signature";
        FailureOr<Buffer> b =
            toBuffer(&op, feed ? cast<FeedBufferOp>(op).getBuffer()
                               : cast<FetchBufferOp>(op).getBuffer());
        if (failed(b))
          return failure();
        in.io = IOInstr{static_cast<int64_t>(ioIndex), *b, {}};
        DenseI64ArrayAttr offsets =
            feed ? cast<FeedBufferOp>(op).getOffsetsAttr()
                 : cast<FetchBufferOp>(op).getOffsetsAttr();
        if (offsets)
          in.io.offsets.assign(offsets.asArrayRef().begin(),
                               offsets.asArrayRef().end());
        if (!feed)
          in.io.keepOnly = cast<FetchBufferOp>(op).getKeepOnly();
      } else if (auto state = dyn_cast<StateBufferOp>(op)) {
        in.kind = InstrKind::StateBuffer;
        FailureOr<Buffer> b = toBuffer(&op, state.getBuffer());
        if (failed(b))
          return failure();
        SymbolRefAttr ref = state.getState();
        in.stateBuffer = StateBufferInstr{
            ref.getRootReference().str(), ref.getLeafReference().str(), *b, {}};
        if (auto offsets = state.getOffsetsAttr())
          in.stateBuffer.offsets.assign(offsets.asArrayRef().begin(),
                                        offsets.asArrayRef().end());
      } else if (auto print = dyn_cast<PrintBuffersOp>(op)) {
        in.kind = InstrKind::PrintBuffers;
        in.print.format = print.getFormat().str();
        for (Attribute a : print.getBuffers()) {
          FailureOr<Buffer> b = toBuffer(&op, cast<BufferAttr>(a));
          if (failed(b))
            return failure();
          in.print.buffers.push_back(*b);
        }
      } else {
        ok = op.emitOpError("is not a plan instruction");
      }
      if (failed(ok))
        return failure();
      rp.instructions.push_back(std::move(in));
    }
    return rp;
  }

  static bool isController(func::FuncOp fn) {
    if (fn.isExternal() || fn->hasAttr(MonarchDialect::getWorkerForAttrName()))
      return false;
    // A public function is a program even without mesh work (one that
    // returns its arguments); kernels are private.
    bool any = fn.isPublic();
    fn.walk([&](Operation *op) {
      if (isa<ControlMsgOp, FeedInputOp, FetchOutputOp, AwaitOp>(op))
        any = true;
    });
    return any;
  }

  FailureOr<int32_t> planIndex(Operation *at, FlatSymbolRefAttr ref) {
    auto it = planIndices.find(ref.getValue());
    if (it == planIndices.end())
      return at->emitOpError("invokes ")
             << ref << ", which is not a monarch.plan (compile to 'planned' "
             << "first)";
    return it->second;
  }

  LogicalResult addController(func::FuncOp fn) {
    ControllerProgram c;
    c.name = fn.getSymName().str();
    c.loc = locOf(fn);
    for (Type t : fn.getArgumentTypes()) {
      FailureOr<ValueType> v = toValueType(fn, t);
      if (failed(v))
        return failure();
      c.inputs.push_back(*v);
    }
    for (Type t : fn.getResultTypes()) {
      FailureOr<ValueType> v = toValueType(fn, t);
      if (failed(v))
        return failure();
      c.outputs.push_back(*v);
    }
    if (!fn.getBody().hasOneBlock())
      return fn.emitOpError("controller programs with control flow cannot "
                            "be expressed in an ExecutionPlan");
    llvm::DenseMap<Value, ValueRef> values;
    llvm::DenseMap<Value, int32_t> tokens;
    for (BlockArgument arg : fn.getArguments())
      values[arg] = ValueRef{ValueKind::Argument,
                             static_cast<int32_t>(arg.getArgNumber()), 0};
    auto valueOf = [&](Operation *user, Value v) -> FailureOr<ValueRef> {
      auto it = values.find(v);
      if (it != values.end())
        return it->second;
      InFlightDiagnostic diag = user->emitOpError(
          "uses a controller value an ExecutionPlan cannot carry (only "
          "arguments, fetched outputs and scalar constants)");
      if (Operation *def = v.getDefiningOp())
        diag.attachNote(def->getLoc()) << "computed here";
      return failure();
    };
    for (Operation &op : fn.getBody().front()) {
      ControlStep step;
      step.loc = locOf(&op);
      int32_t index = static_cast<int32_t>(c.steps.size());
      if (auto msg = dyn_cast<ControlMsgOp>(op)) {
        step.kind = ControlStepKind::ControlMsg;
        step.mesh = msg.getMesh().str();
        // Scalars fill the scalar (non-tensor) inputs of the invoked plans,
        // in order: the split pass appends them after the fed tensors.
        SmallVector<std::pair<int32_t, int32_t>> slots;
        for (Attribute a : msg.getInvoke()) {
          auto flat = dyn_cast<FlatSymbolRefAttr>(a);
          if (!flat)
            return msg.emitOpError("invokes endpoint ")
                   << a << " directly; compile to 'planned' first";
          FailureOr<int32_t> p = planIndex(msg, flat);
          if (failed(p))
            return failure();
          step.plans.push_back(*p);
          const StepPlan &target = plan.plans[*p];
          for (size_t i = 0; i < target.inputs.size(); ++i)
            if (!target.inputs[i].isTensor)
              slots.push_back({*p, static_cast<int32_t>(i)});
        }
        if (slots.size() != msg.getScalars().size())
          return msg.emitOpError("carries ")
                 << msg.getScalars().size() << " scalars but the invoked "
                 << "plans have " << slots.size() << " scalar inputs";
        for (auto [scalar, slot] : llvm::zip(msg.getScalars(), slots)) {
          FailureOr<ValueRef> v = valueOf(msg, scalar);
          FailureOr<ValueType> t = toValueType(msg, scalar.getType());
          if (failed(v) || failed(t))
            return failure();
          step.scalars.push_back(ScalarArg{*v, *t, slot.first, slot.second});
        }
        tokens[msg.getToken()] = index;
      } else if (auto feed = dyn_cast<FeedInputOp>(op)) {
        step.kind = ControlStepKind::FeedInput;
        FailureOr<int32_t> p = planIndex(feed, feed.getProgramAttr());
        FailureOr<ValueRef> v = valueOf(feed, feed.getValue());
        FailureOr<ValueType> t = toValueType(feed, feed.getValue().getType());
        if (failed(p) || failed(v) || failed(t))
          return failure();
        step.plan = *p;
        step.index = static_cast<int32_t>(feed.getIndex());
        step.value = *v;
        step.type = *t;
      } else if (auto fetch = dyn_cast<FetchOutputOp>(op)) {
        step.kind = ControlStepKind::FetchOutput;
        FailureOr<int32_t> p = planIndex(fetch, fetch.getProgramAttr());
        FailureOr<ValueType> t = toValueType(fetch, fetch.getType());
        if (failed(p) || failed(t))
          return failure();
        step.plan = *p;
        step.index = static_cast<int32_t>(fetch.getIndex());
        step.type = *t;
        values[fetch.getResult()] = ValueRef{ValueKind::Fetched, index, 0};
      } else if (auto await = dyn_cast<AwaitOp>(op)) {
        step.kind = ControlStepKind::Await;
        for (Value t : await.getTokens()) {
          auto it = tokens.find(t);
          if (it == tokens.end())
            return await.emitOpError("awaits a token that is not a control "
                                     "message of this function");
          step.tokens.push_back(it->second);
        }
      } else if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
        double v = 0;
        if (auto f = dyn_cast<FloatAttr>(constant.getValue()))
          v = f.getValueAsDouble();
        else if (auto i = dyn_cast<IntegerAttr>(constant.getValue()))
          v = static_cast<double>(i.getValue().getSExtValue());
        else
          continue; // Only a use of it would need it; valueOf reports that.
        values[constant.getResult()] = ValueRef{ValueKind::Constant, 0, v};
        continue;
      } else if (auto ret = dyn_cast<func::ReturnOp>(op)) {
        for (Value v : ret.getOperands()) {
          FailureOr<ValueRef> r = valueOf(ret, v);
          if (failed(r))
            return failure();
          c.results.push_back(*r);
        }
        continue;
      } else {
        return op.emitOpError("in controller function @")
               << c.name << " cannot be expressed in an ExecutionPlan "
               << "(controllers send control messages, feed inputs, fetch "
               << "outputs and await)";
      }
      c.steps.push_back(std::move(step));
    }
    plan.controllers.push_back(std::move(c));
    return success();
  }

  LogicalResult compileLaunchedKernels() {
#if MONARCH_HAVE_KERNEL_COMPILER
    if (kernelFuncs.empty())
      return success();
    FailureOr<KernelLibrary> library =
        compileKernels(module, kernelFuncs, options.kernels);
    if (failed(library))
      return failure();
    if (options.onKernelsCompiled)
      options.onKernelsCompiled(*library);
    KernelLibraryBlob blob;
    blob.target = library->target == KernelTarget::Cuda ? PlanTarget::Cuda
                                                        : PlanTarget::Cpu;
    blob.code = std::move(library->binary);
    for (const CompiledKernel &k : library->kernels) {
      auto known = kernelIndices.find(k.name);
      if (known == kernelIndices.end())
        return module.emitError("kernel compiler returned unknown kernel @")
               << k.name;
      int32_t index = known->second;
      blob.kernels.push_back(
          CompiledKernelRef{index, k.symbol, k.gemms, k.params});
    }
    plan.libraries.push_back(std::move(blob));
#endif
    return success();
  }

  /// Kernels that compiled to one symbol (with the same parameter values)
  /// become one entry of the plan's table, named as the first of them: equal
  /// kernels of different ranks (every rank of a data-parallel class has its
  /// own copy in the IR) are then one kernel, so the ranks' streams are equal
  /// (the plan file stores a class's stream once) and the table does not grow
  /// with the ranks.
  void mergeEqualKernels() {
    if (plan.libraries.size() != 1)
      return;
    KernelLibraryBlob &blob = plan.libraries.front();
    size_t n = plan.kernels.size();
    std::vector<int32_t> same(n);
    for (size_t i = 0; i < n; ++i)
      same[i] = static_cast<int32_t>(i);
    // A symbol with the same parameter values is the same kernel.
    std::map<std::pair<std::string, std::vector<int64_t>>, int32_t> bySymbol;
    for (const CompiledKernelRef &ref : blob.kernels) {
      auto [first, fresh] =
          bySymbol.emplace(std::make_pair(ref.symbol, ref.params), ref.kernel);
      const Kernel &a = plan.kernels[first->second],
                   &b = plan.kernels[ref.kernel];
      if (!fresh && a.numInputs == b.numInputs &&
          a.numOutputs == b.numOutputs && a.flops == b.flops)
        same[ref.kernel] = first->second;
    }
    // (Nothing to merge: the table stays as it is, names and all.)
    bool merges = false;
    for (size_t i = 0; i < n; ++i)
      merges |= same[i] != static_cast<int32_t>(i);
    if (!merges)
      return;
    std::vector<int32_t> renumbered(n, -1);
    std::vector<Kernel> kept;
    for (size_t i = 0; i < n; ++i)
      if (same[i] == static_cast<int32_t>(i)) {
        renumbered[i] = static_cast<int32_t>(kept.size());
        kept.push_back(std::move(plan.kernels[i]));
      }
    for (StepPlan &step : plan.plans)
      for (RankProgram &program : step.programs)
        for (Instruction &in : program.instructions)
          if (in.kind == plan::InstrKind::Launch)
            in.launch.kernel = renumbered[same[in.launch.kernel]];
    std::vector<CompiledKernelRef> refs;
    for (CompiledKernelRef &ref : blob.kernels)
      if (same[ref.kernel] == ref.kernel) {
        ref.kernel = renumbered[ref.kernel];
        refs.push_back(std::move(ref));
      }
    blob.kernels = std::move(refs);
    plan.kernels = std::move(kept);
  }

  ModuleOp module;
  SymbolTable symbols;
  const PlanBuildOptions &options;
  ExecutionPlan plan;
  llvm::StringMap<int32_t> kernelIndices, planIndices, commIndices;
  llvm::DenseMap<std::pair<const void *, const void *>, SourceLoc> locs;
  SmallVector<func::FuncOp> kernelFuncs;
};

} // namespace

FailureOr<ExecutionPlan> buildExecutionPlan(ModuleOp module,
                                            const PlanBuildOptions &options) {
  if (failed(verifyPlannedModule(module, options.moduleVerified)))
    return failure();
  return Builder(module, options).run();
}

} // namespace monarch::codegen
