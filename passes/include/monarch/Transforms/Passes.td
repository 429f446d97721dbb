//===- Passes.td - monarch compiler passes -----------------*- tablegen -*-===//
//
// The passes that take a program from the `traced` stage to the `planned`
// stage (see docs/passes.md). Stage pipelines that combine them live in
// Pipelines.cpp and are the only way tools run them.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_TRANSFORMS_PASSES_TD
#define MONARCH_TRANSFORMS_PASSES_TD

include "mlir/Pass/PassBase.td"

def MonarchPartition : Pass<"monarch-partition", "::mlir::ModuleOp"> {
  let summary = "Partition sharded tensor work per rank";
  let description = [{
    For every program (a `func.func` that feeds values to a mesh), outlines
    the tensor work that runs on each mesh into an endpoint of a synthesized
    actor class spawned on that mesh, runs the upstream
    `sharding-propagation` and `shard-partition` passes on it so that every
    op works on per-rank shards with the collectives made explicit, and
    rewrites the upstream `shard` collectives into `monarch` collectives over
    named mesh dimensions. Endpoint arguments and results record how the
    global values are split (`monarch.dist`), so the program calls the
    endpoint with global values.

    ```mlir
    // before
    %x = monarch.feed %arg0 to @mesh : tensor<8x4xf32>
    %xs = shard.shard %x to %s : tensor<8x4xf32>      // split over "gpus"
    %y = linalg.matmul ins(%xs, %w ...)
    // after
    %y = monarch.call @step.mesh::@run(%x, %w) : (tensor<8x4xf32>, ...) -> ...
    monarch.actor_class @step.mesh.class {
      monarch.endpoint @run(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}, ...)
    }
    ```
  }];
  let dependentDialects = [
    "::monarch::MonarchDialect", "::mlir::shard::ShardDialect",
    "::mlir::func::FuncDialect", "::mlir::tensor::TensorDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::arith::ArithDialect",
    "::mlir::cf::ControlFlowDialect"
  ];
  let options = [
    Option<"remarks", "remarks", "bool", /*default=*/"false",
           "Emit a remark per segment of work saying how it was partitioned "
           "(split, retried with replicated inputs, or run on whole values, "
           "and why); MONARCH_PARTITION_REMARKS=1 sets it in the pipelines">,
    Option<"liftConstants", "lift-constants", "bool", /*default=*/"true",
           "Pass non-splat tensor constants into each segment as replicated "
           "arguments (upstream shard-partition cannot partition them); "
           "off only to see upstream's behaviour">,
    Option<"engine", "engine", "std::string", /*default=*/"\"own\"",
           "Which partitioner runs each segment: `own` (monarch's "
           "propagation and expansion, the default; upstream's for a "
           "segment with an op it has no rule for) or `upstream` (MLIR's "
           "sharding-propagation and shard-partition, with monarch's "
           "workarounds); MONARCH_PARTITION_ENGINE sets it in the pipelines">
  ];
  let statistics = [
    Statistic<"numOutlined", "outlined", "Mesh programs outlined">,
    Statistic<"numCollectives", "collectives",
              "Collectives inserted by partitioning">,
    Statistic<"numReplicatedRetries", "replicated-retries",
              "Segments partitioned only with replicated inputs">,
    Statistic<"numWholeValues", "whole-values",
              "Segments run on whole values">
  ];
}

def MonarchSplitControlData : Pass<"monarch-split-control-data",
                                   "::mlir::ModuleOp"> {
  let summary = "Separate control messages from tensor data edges";
  let description = [{
    Classifies every edge of each program. Invocations, scalars and
    completion go on the control plane: each step becomes one
    `monarch.control_msg` per proc mesh (adjacent invocations on the same
    ranks are batched) and a `monarch.await`. Tensor values that flow
    between actor meshes become `monarch.channel`s used by a per-mesh worker
    program (`func.func` with `monarch.worker_for`), so tensor bytes never
    pass through the controller; feeds and fetches stay the only
    controller-crossing data.
  }];
  let dependentDialects = ["::monarch::MonarchDialect",
                           "::mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numControlMsgs", "control-messages", "Control messages">,
    Statistic<"numChannels", "channels", "Data channels">
  ];
}

def MonarchShardWeightUpdate : Pass<"monarch-shard-weight-update",
                                    "::mlir::ModuleOp"> {
  let summary = "Update each rank's rows of a data-parallel weight";
  let description = [{
    On the split form, in endpoint bodies (actor code, and the partitioned
    step of a function compiled with global semantics): an `all_reduce`
    (sum or avg) whose result only feeds elementwise ops whose other inputs
    are replicated over the same mesh dimensions, with exactly one value of
    them used elsewhere (the new weight of plain SGD), becomes a
    `reduce_scatter`, the elementwise ops on this rank's rows (replicated
    inputs sliced at `monarch.process_index` times the rows) and one
    `all_gather` of that value (XLA's automatic sharding of the weight
    update). The bytes moved are the all_reduce's; the update's reads and
    writes are divided by the group's size. Gradients under `min-bytes`
    stay one all_reduce.

    ```mlir
    %g = monarch.all_reduce %p over ["gpus"] avg : tensor<64x64xf32>
    %u = linalg.generic ... ins(%w, %g ...) // w - lr * g
    monarch.state_set @w = %u : tensor<64x64xf32>
    // on a mesh of 2 along "gpus" becomes
    %s = monarch.reduce_scatter %p over ["gpus"] axis 0 avg
        : tensor<64x64xf32> -> tensor<32x64xf32>
    %i = monarch.process_index over ["gpus"] : index
    %rows = tensor.extract_slice %w[%i * 32, 0] [32, 64] [1, 1]
    %u = linalg.generic ... ins(%rows, %s ...)  // 32x64
    %f = monarch.all_gather %u over ["gpus"] axis 0
        : tensor<32x64xf32> -> tensor<64x64xf32>
    monarch.state_set @w = %f : tensor<64x64xf32>
    ```
  }];
  let options = [
    Option<"minBytes", "min-bytes", "int64_t", /*default=*/"262144",
           "Gradients smaller than this stay one all_reduce">,
  ];
  let dependentDialects = ["::monarch::MonarchDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def MonarchSpecializeRanks : Pass<"monarch-specialize-ranks",
                                  "::mlir::ModuleOp"> {
  let summary = "Specialize each worker program into tensor code per rank";
  let description = [{
    For every rank of a worker program's proc mesh, builds one function of
    per-rank tensor code: the endpoint bodies of the actor meshes the rank
    belongs to are inlined with `monarch.process_index` folded to the rank's
    coordinates; split arguments are sliced (`tensor.extract_slice`); split
    or partial results are gathered or reduced where something needs the
    global value; actor state is threaded through. Gathers, scatters and
    exchanges along a dimension other than 0 become ones along 0 plus an
    expand/transpose/collapse, since plan collectives move contiguous
    blocks. Communication stays as placeholders for
    `monarch-plan-transfers`: `monarch.channel_send`/`channel_recv` (the
    ends this rank takes part in; a rank that would send to itself keeps the
    value) and mesh collectives with their group resolved to proc-mesh ranks
    in `plan.group`.

    The form: a rank function (marked `monarch.rank`) takes the worker
    program's arguments, then the value of each piece of state it uses at
    the start of the step (`plan.states` names them); it returns the worker
    outputs it holds (`plan.outputs` gives their indices), then the value of
    each piece of state at the end. The worker program keeps its name,
    signature and `monarch.worker_for` as a private declaration listing its
    rank functions (`plan.ranks`), so the controller's control message,
    feeds and fetches still refer to it.

    ```mlir
    func.func private @step.worker.mesh(tensor<4x4xf32>) -> tensor<4xf32>
        attributes {monarch.worker_for = @mesh,
                    plan.ranks = [@step.worker.mesh.rank0, @step.worker.mesh.rank1]}
    func.func private @step.worker.mesh.rank0(%x: tensor<4x4xf32>) -> tensor<4xf32>
        attributes {monarch.rank = 0 : i64, plan.outputs = array<i64: 0>,
                    plan.states = []} {
      %s = tensor.extract_slice %x[0, 0] [2, 4] [1, 1] : tensor<4x4xf32> to tensor<2x4xf32>
      ...
      %r = monarch.all_reduce %p over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4xf32>
      return %r : tensor<4xf32>
    }
    ```

    A worker output that is split (not partial) is returned as shards, with
    their offsets in `plan.output_offsets`, and the controller assembles
    the output; nothing is gathered onto one rank to be fetched. Each shard
    is returned by one of the ranks holding it (along the mesh dimensions
    that do not split it, the one at the output's index modulo their
    number), so the work only outputs need is spread over the replicas.
    `shard-outputs=0` gathers them instead.

    Symmetrically, a worker input that every call using it on a rank takes
    split the same way is fed to that rank as its shard only (the rank
    function's argument has the shard's type, `plan.input_offsets` says
    where it starts, and the controller cuts it out of the input), so no
    rank receives the whole batch to slice its rows out of it, and ranks
    whose code differs only by which rows they read get equal kernels.
    `shard-inputs=0` feeds whole values.
  }];
  let options = [
    Option<"shardOutputs", "shard-outputs", "bool", /*default=*/"true",
           "Return split outputs as shards for the controller to assemble">,
    Option<"shardInputs", "shard-inputs", "bool", /*default=*/"true",
           "Feed each rank only its shard of inputs it takes split">,
    Option<"classes", "classes", "bool", /*default=*/"false",
           "One function per class of ranks (plan.members): a rank whose "
           "rank-dependent answers (membership, coordinates, slices, "
           "ownership) equal a class's first rank's, asked in the same "
           "order, joins it instead of being specialised; its groups, input "
           "and output offsets follow from the mesh">,
  ];
  let dependentDialects = ["::monarch::MonarchDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::linalg::LinalgDialect"];
}

def MonarchBucketCollectives : Pass<"monarch-bucket-collectives",
                                    "::mlir::ModuleOp"> {
  let summary = "Merge small independent all_reduces of each rank into one";
  let description = [{
    On the per-rank form of `monarch-specialize-ranks`: small
    `monarch.all_reduce`s of a rank function over the same group, mesh
    dimensions, reduction and element type, none of which depends on
    another, become one all_reduce of their flattened inputs concatenated
    (PyTorch DDP's gradient buckets): a data-parallel backward's many small
    gradient all_reduces cost one collective's latency instead of one each.
    The bucket is reduced where its last member was; ops that used an
    earlier member's result before that point move after it (never a
    communication op: the bucket closes first). Every rank of a worker
    program must make the same buckets (their collectives must match);
    otherwise that worker program is left as it is.

    Not yet in the default pipeline (`populatePlanPipeline`): it lands with
    the overlap of gradient buckets with the backward (issue 35, item 2),
    which needs the kernel cut at bucket boundaries to pay; until then it
    runs where asked (`monarch-opt --monarch-bucket-collectives`).

    ```mlir
    %a = monarch.all_reduce %ga over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<16xf32>
    %b = monarch.all_reduce %gb over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<4x4xf32>
    // becomes
    %fb = tensor.collapse_shape %gb [[0, 1]] : tensor<4x4xf32> into tensor<16xf32>
    %c = tensor.concat dim(0) %ga, %fb : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32>
    %r = monarch.all_reduce %c over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<32xf32>
    %a = tensor.extract_slice %r[0] [16] [1] : tensor<32xf32> to tensor<16xf32>
    ...
    ```
  }];
  let dependentDialects = ["::monarch::MonarchDialect",
                           "::mlir::tensor::TensorDialect"];
  let options = [
    Option<"bucketBytes", "bucket-bytes", "int64_t", /*default=*/"1048576",
           "Most bytes of one bucket; all_reduces of more than a quarter of "
           "it are left alone (0: no buckets)">
  ];
  let statistics = [
    Statistic<"numMerged", "merged", "all_reduces merged into buckets">,
    Statistic<"numBuckets", "buckets", "Buckets made">
  ];
}

def MonarchHoistCollectives : Pass<"monarch-hoist-collectives",
                                   "::mlir::ModuleOp"> {
  let summary = "Issue each collective of a rank as soon as its input is ready";
  let description = [{
    On the per-rank form of `monarch-specialize-ranks`: each mesh
    collective moves up to just after what it reads, past pure ops and past
    earlier collectives of its own group, so that it runs on the
    communication stream while the rest of the step computes (issue 35,
    item 2: gradients reduced as they are produced, whatever order the
    program lists them in). It never passes a channel end, a collective of
    another group or an op with effects: each rank enters its groups in the
    same order as before, and within a group permutes the collectives.
    Every member of a group must permute them alike, which is checked; a
    worker program where two members would disagree is left as it is.
    Collectives of one group ready at the same point keep their order.

    ```mlir
    %g2 = linalg.matmul ...              // the second weight's gradient
    %g1 = linalg.matmul ...              // the first's, produced last
    %r1 = monarch.all_reduce %g1 over ["gpus"] avg {plan.group = ...}
    %r2 = monarch.all_reduce %g2 over ["gpus"] avg {plan.group = ...}
    // becomes
    %g2 = linalg.matmul ...
    %r2 = monarch.all_reduce %g2 over ["gpus"] avg {plan.group = ...}
    %g1 = linalg.matmul ...
    %r1 = monarch.all_reduce %g1 over ["gpus"] avg {plan.group = ...}
    ```
  }];
  let dependentDialects = ["::monarch::MonarchDialect"];
  let statistics = [
    Statistic<"numHoisted", "hoisted", "Collectives issued earlier">,
    Statistic<"numLeft", "left", "Worker programs left as they were (the "
              "members of a group would have disagreed)">
  ];
}

def MonarchPlanTransfers : Pass<"monarch-plan-transfers", "::mlir::ModuleOp"> {
  let summary = "Lower data edges to point-to-point and collective transfers";
  let description = [{
    Lowers the per-rank form of `monarch-specialize-ranks` to a
    `monarch.plan` of `monarch.rank_program`s that replaces the worker
    program under its name and signature: tensor compute between
    communication points is outlined into kernels (`monarch.launch`), each
    channel end becomes `monarch.send`/`monarch.recv`s and each collective a
    `monarch.collective` on a `monarch.communicator`. Paths and backends come
    from the topology (`hosts` = number of hosts the ranks are spread over,
    row-major); small transfers issued together share an NCCL group;
    transfers go on their own streams so they overlap compute; and every
    rank issues the communication of a communicator in one global order (a
    topological order of the program), which is what makes the plan free of
    deadlocks.
  }];
  let options = [
    Option<"backend", "backend", "std::string", /*default=*/"\"gloo\"",
           "Data plane for communicators: gloo (CPU) or nccl (GPU)">,
    Option<"groupBytes", "group-bytes", "int64_t", /*default=*/"65536",
           "Transfers up to this size issued back to back share a group">,
    Option<"cutAtContractions", "cut-at-contractions", "bool",
           /*default=*/"false",
           "Also start a new kernel at every contraction (linalg matmul, "
           "batch matmul, contraction generic) that has compute before it: "
           "each kernel is one contraction and its elementwise epilogue">,
    Option<"maxKernelOps", "max-kernel-ops", "int64_t", /*default=*/"0",
           "Start a new kernel once one holds this many ops (0: no bound); "
           "long elementwise runs (an optimizer's update of every "
           "parameter) then compile as several kernels, in parallel">,
    Option<"rankClasses", "rank-classes", "bool", /*default=*/"true",
           "Lower one rank of each class of ranks whose functions are equal "
           "but for their collectives' groups, and give the others a copy of "
           "its program with their own peers, communicators and offsets "
           "(false: lower every rank; the plan is the same)">,
    Option<"classPrograms", "class-programs", "bool", /*default=*/"false",
           "With rank-classes, write each copy as a monarch.rank_member "
           "(the class program's rank with its own peers, communicators and "
           "offsets) instead of a rank program of its own; passes after "
           "this one work on the class program once "
           "(docs/spmd-classes.md)">
  ];
  let dependentDialects = ["::monarch::MonarchDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::tensor::TensorDialect",
                           "::mlir::bufferization::BufferizationDialect"];
  let statistics = [
    Statistic<"numSends", "sends", "Point-to-point sends">,
    Statistic<"numCollectives", "collectives", "Collectives">,
    Statistic<"numKernels", "kernels", "Kernels outlined">,
    Statistic<"numCopied", "copied",
              "Rank programs copied from their class's first rank">
  ];
}

def MonarchSchedule : Pass<"monarch-schedule", "::mlir::ModuleOp"> {
  let summary = "Order each rank's instructions and plan its memory";
  let description = [{
    Builds the per-rank dependency graph of every `monarch.rank_program`
    (Boost.Graph): data dependencies through arena buffers, event
    dependencies, and the fixed order of communication per communicator.
    Reorders instructions topologically so transfers start as early as
    possible, computes the critical-path length, and replans the arena: each
    buffer's live range, reuse of dead buffers' bytes, and the peak bytes per
    rank. Results are recorded as attributes on each rank program
    (`monarch.critical_path_us`, `monarch.peak_bytes`) and as the new `arena`.
  }];
  let dependentDialects = ["::monarch::MonarchDialect"];
  let statistics = [
    Statistic<"bytesSaved", "bytes-saved", "Arena bytes saved by reuse">
  ];
}

def MonarchVerifyPlan : Pass<"monarch-verify-plan", "::mlir::ModuleOp"> {
  let summary = "Prove that a planned program cannot deadlock or mismatch";
  let description = [{
    A static check over all rank programs of each `monarch.plan`: every
    send has its receive with equal shape and element type; every collective
    is issued by all members of its communicator in the same order and with
    the same kind, reduction, root and shapes; and the happens-before graph
    (stream order, waits, matched transfers and collectives, groups) has no
    cycle, so no rank waits on itself. Failures are diagnostics at the
    offending op naming the ranks involved.

    A `monarch.rank_member` is checked as the rank program it stands for:
    its program's instructions with its own peers and communicators
    (matching, agreement and the deadlock graph per rank; data hazards once,
    on the program, which a member shares).
  }];
  let dependentDialects = ["::monarch::MonarchDialect"];
}

def MonarchExpandRankMembers
    : Pass<"monarch-expand-rank-members", "::mlir::ModuleOp"> {
  let summary = "Write each rank_member as the rank program it stands for";
  let description = [{
    Replaces every `monarch.rank_member` of every `monarch.plan` by a copy
    of its class's `monarch.rank_program` with the member's rank, peers,
    communicators and offsets (docs/spmd-classes.md): one program per rank,
    to read a member's instructions or to compare with a plan built with
    `monarch-plan-transfers=class-programs=false`.
  }];
  let dependentDialects = ["::monarch::MonarchDialect"];
}

#endif // MONARCH_TRANSFORMS_PASSES_TD
