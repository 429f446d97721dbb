//===- MonarchBase.td - monarch dialect, enums and interfaces -*- tablegen -*-===//
//
// The `monarch` dialect models a program over meshes of processes: proc
// meshes and their slices, actor meshes with state and endpoints, calls,
// cross-mesh transfers, controller feeds and fetches, the control messages
// and data channels that `monarch-split-control-data` introduces, and the
// per-rank plan instructions that `monarch-plan-transfers` produces.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_MONARCHBASE_TD
#define MONARCH_IR_MONARCHBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def Monarch_Dialect : Dialect {
  let name = "monarch";
  let cppNamespace = "::monarch";
  let summary = "Meshes of processes, actors, transfers and per-rank plans";
  let description = [{
    The `monarch` dialect is the intermediate representation of
    monarch-compile. A program is written against named multi-dimensional
    meshes of processes (`monarch.proc_mesh`, `monarch.mesh_slice`), places
    tensors on them (sharding inside a mesh uses the upstream `shard`
    dialect), spawns actors (`monarch.actor_class`, `monarch.actor_mesh`)
    whose endpoints (`monarch.endpoint`) are invoked with `monarch.call` and
    `monarch.broadcast`, and moves tensors between meshes with
    `monarch.transfer`.

    The same dialect carries the later stages of the pipeline: control
    messages from the controller (`monarch.control_msg`) separated from data
    channels between ranks (`monarch.channel`), and finally per-rank
    instruction streams (`monarch.rank_program` holding `monarch.launch`,
    `monarch.send`, `monarch.recv`, `monarch.collective`, `monarch.wait`)
    over communicators (`monarch.communicator`) and a static arena.
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
  let hasOperationAttrVerify = 1;
  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let extraClassDeclaration = [{
    /// Registers the attributes (defined in MonarchAttrs.cpp).
    void registerAttributes();

    /// Discardable attribute naming how an endpoint argument or result is
    /// distributed over its actor mesh (a `#monarch.dist`).
    static constexpr ::llvm::StringLiteral getDistAttrName() {
      return ::llvm::StringLiteral("monarch.dist");
    }
    /// Marks a `func.func` as the per-step program of the workers of a proc
    /// mesh (a FlatSymbolRefAttr), created by monarch-split-control-data.
    static constexpr ::llvm::StringLiteral getWorkerForAttrName() {
      return ::llvm::StringLiteral("monarch.worker_for");
    }
    /// Marks a `func.func` as the code of one rank (an i64) of a worker
    /// program's proc mesh, specialized from endpoint bodies by
    /// monarch-specialize-ranks: per-rank code, like an endpoint body, so
    /// mesh collectives may appear in it.
    static constexpr ::llvm::StringLiteral getRankAttrName() {
      return ::llvm::StringLiteral("monarch.rank");
    }
    /// Set by monarch-schedule on a rank program: the modelled length of its
    /// critical path in microseconds (f64) and its peak arena bytes (i64).
    static constexpr ::llvm::StringLiteral getCriticalPathAttrName() {
      return ::llvm::StringLiteral("monarch.critical_path_us");
    }
    static constexpr ::llvm::StringLiteral getPeakBytesAttrName() {
      return ::llvm::StringLiteral("monarch.peak_bytes");
    }
    /// A value that may stay resident on the workers between calls
    /// (`@mc.compile(donate_argnums=...)`): a unit attribute on the
    /// `monarch.fetch` of a returned value (set by the tracer) and on the
    /// worker program's result it becomes (monarch-split-control-data).
    static constexpr ::llvm::StringLiteral getKeepAttrName() {
      return ::llvm::StringLiteral("monarch.keep");
    }
    /// On a rank function's `monarch.channel_send` / `channel_recv`
    /// (monarch-specialize-ranks): the value crosses the channel as shards
    /// of this `#monarch.dist`, each destination rank receiving only its
    /// own shard, so the end's type is a shard of the channel's.
    static constexpr ::llvm::StringLiteral getShardAttrName() {
      return ::llvm::StringLiteral("monarch.shard");
    }
  }];
}

class Monarch_Op<string mnemonic, list<Trait> traits = []>
    : Op<Monarch_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def Monarch_ReductionKindAttr : I32EnumAttr<"ReductionKind",
    "reduction applied by a collective", [
      I32EnumAttrCase<"Sum", 0, "sum">,
      I32EnumAttrCase<"Prod", 1, "prod">,
      I32EnumAttrCase<"Max", 2, "max">,
      I32EnumAttrCase<"Min", 3, "min">,
      I32EnumAttrCase<"Avg", 4, "avg">
    ]> {
  let cppNamespace = "::monarch";
}

def Monarch_CollectiveKindAttr : I32EnumAttr<"CollectiveKind",
    "collective communication primitive of a plan", [
      I32EnumAttrCase<"AllReduce", 0, "all_reduce">,
      I32EnumAttrCase<"AllGather", 1, "all_gather">,
      I32EnumAttrCase<"ReduceScatter", 2, "reduce_scatter">,
      I32EnumAttrCase<"Broadcast", 3, "broadcast">,
      I32EnumAttrCase<"AllToAll", 4, "all_to_all">
    ]> {
  let cppNamespace = "::monarch";
}

def Monarch_LinkKindAttr : I32EnumAttr<"LinkKind",
    "class of interconnect between two ranks", [
      I32EnumAttrCase<"Shm", 0, "shm">,
      I32EnumAttrCase<"Pcie", 1, "pcie">,
      I32EnumAttrCase<"Nvlink", 2, "nvlink">,
      I32EnumAttrCase<"Network", 3, "network">
    ]> {
  let cppNamespace = "::monarch";
}

def Monarch_BackendAttr : I32EnumAttr<"Backend",
    "data-plane implementation of a communicator", [
      I32EnumAttrCase<"Gloo", 0, "gloo">,
      I32EnumAttrCase<"Nccl", 1, "nccl">
    ]> {
  let cppNamespace = "::monarch";
}

//===----------------------------------------------------------------------===//
// Interfaces
//===----------------------------------------------------------------------===//

def Monarch_MeshOpInterface : OpInterface<"MeshOpInterface"> {
  let cppNamespace = "::monarch";
  let description = [{
    A symbol that denotes a set of processes laid out as a named,
    multi-dimensional mesh: a whole `monarch.proc_mesh` or a
    `monarch.mesh_slice` of one. Ranks are row-major linear indices into the
    mesh shape.
  }];
  let methods = [
    InterfaceMethod<"Names of the mesh dimensions, outermost first.",
      "::llvm::SmallVector<::llvm::StringRef>", "getDimNames">,
    InterfaceMethod<"Static extent of each dimension.",
      "::llvm::SmallVector<int64_t>", "getMeshShape">,
    InterfaceMethod<"The `shard.grid` used for sharding inside this mesh.",
      "::mlir::FlatSymbolRefAttr", "getGridRef">,
  ];
  let extraSharedClassDeclaration = [{
    /// Number of processes (ranks) in this mesh.
    int64_t getNumRanks() {
      int64_t n = 1;
      for (int64_t d : $_op.getMeshShape())
        n *= d;
      return n;
    }
    /// Index of dimension `name`, or -1 when the mesh has no such dimension.
    int64_t getDimIndex(::llvm::StringRef name) {
      auto names = $_op.getDimNames();
      for (auto [i, n] : ::llvm::enumerate(names))
        if (n == name)
          return i;
      return -1;
    }
  }];
}

#endif // MONARCH_IR_MONARCHBASE_TD
