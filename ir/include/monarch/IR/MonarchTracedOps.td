//===- MonarchTracedOps.td - ops of the traced stage -------*- tablegen -*-===//
//
// The ops a traced program is written in: meshes, actors, endpoints and
// their state, explicit collectives inside endpoints, and the placement
// of values (feeds, fetches, transfers). Included by MonarchOps.td, which
// holds the shared definitions.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_MONARCHTRACEDOPS_TD
#define MONARCH_IR_MONARCHTRACEDOPS_TD

//===----------------------------------------------------------------------===//
// Meshes
//===----------------------------------------------------------------------===//

def Monarch_ProcMeshOp : Monarch_Op<"proc_mesh", [
    Symbol,
    DeclareOpInterfaceMethods<Monarch_MeshOpInterface>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A named multi-dimensional mesh of processes";
  let description = [{
    Declares a mesh of processes with named dimensions and static extents;
    ranks are the row-major linear indices into the shape. The `grid` is the
    upstream `shard.grid` of the same shape, used to annotate the sharding of
    tensors that live on this mesh.

    Example:

    ```mlir
    shard.grid @mesh_grid(shape = 1x4)
    monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @mesh_grid
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    StrArrayAttr:$dims,
    DenseI64ArrayAttr:$shape,
    FlatSymbolRefAttr:$grid
  );
  let assemblyFormat = [{
    $sym_name `(` custom<DimList>($dims, $shape) `)` `grid` $grid attr-dict
  }];
  let hasVerifier = 1;
}

def Monarch_MeshSliceOp : Monarch_Op<"mesh_slice", [
    Symbol,
    DeclareOpInterfaceMethods<Monarch_MeshOpInterface>,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A rectangular sub-mesh of a proc mesh or of another slice";
  let description = [{
    Selects the half-open range `[start, end)` along every dimension of its
    parent mesh, keeping the parent's dimension names. Ranks of the slice
    are row-major indices into the slice shape; `getParentRank` maps them to
    ranks of the parent. `grid` is the `shard.grid` of the slice's shape.

    Example:

    ```mlir
    monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2)
        grid @s0_grid
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    FlatSymbolRefAttr:$parent,
    StrArrayAttr:$dims,
    DenseI64ArrayAttr:$starts,
    DenseI64ArrayAttr:$ends,
    FlatSymbolRefAttr:$grid
  );
  let assemblyFormat = [{
    $sym_name `of` $parent `(` custom<RangeList>($dims, $starts, $ends) `)`
    `grid` $grid attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Rank in the parent mesh of rank `rank` of this slice.
    int64_t getParentRank(::llvm::ArrayRef<int64_t> parentShape, int64_t rank);
  }];
}

def Monarch_TopologyOp : Monarch_Op<"topology", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Which ranks of a proc mesh share a host, and their links";
  let description = [{
    Describes the machines under a proc mesh: two ranks share a host when
    their coordinates along every dimension of `hosts` are equal. Transfers
    between ranks of one host use the `intra` link, all others the `inter`
    link; each link has a class, a bandwidth in GB/s and a latency in
    microseconds. `monarch-plan-transfers` labels every planned transfer
    with its link and `monarch-schedule` costs it with these figures.
    Without a topology a mesh is one host and transfers carry no label.

    ```mlir
    monarch.proc_mesh @mesh(hosts = 2, gpus = 8) grid @grid
    monarch.topology for @mesh hosts ["hosts"]
        intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, StrArrayAttr:$hosts,
                       Monarch_LinkKindAttr:$intra, F64Attr:$intra_gbps,
                       F64Attr:$intra_latency_us,
                       Monarch_LinkKindAttr:$inter, F64Attr:$inter_gbps,
                       F64Attr:$inter_latency_us);
  let assemblyFormat = [{
    `for` $mesh `hosts` $hosts
    `intra` $intra `(` $intra_gbps `GBps` `,` $intra_latency_us `us` `)`
    `inter` $inter `(` $inter_gbps `GBps` `,` $inter_latency_us `us` `)`
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Host index of `rank` (row-major over the `hosts` dimensions) for a
    /// mesh of `dims` and `shape`.
    int64_t hostOf(::llvm::ArrayRef<::llvm::StringRef> dims,
                   ::llvm::ArrayRef<int64_t> shape, int64_t rank);
  }];
}

//===----------------------------------------------------------------------===//
// Actors
//===----------------------------------------------------------------------===//

def Monarch_ActorClassOp : Monarch_Op<"actor_class", [
    Symbol, SymbolTable, IsolatedFromAbove, NoTerminator, SingleBlock,
    NoRegionArguments]> {
  let summary = "An actor class: its state and its endpoints";
  let description = [{
    Holds the `monarch.state` declarations and the `monarch.endpoint`s of an
    actor class. The class is independent of any mesh; `monarch.actor_mesh`
    spawns it on one.

    Example:

    ```mlir
    monarch.actor_class @Stage {
      monarch.state @w : tensor<4x4xf32>
      monarch.endpoint @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
        %w = monarch.state_get @w : tensor<4x4xf32>
        ...
        monarch.return %y : tensor<8x4xf32>
      }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name)>];
}

def Monarch_StateOp : Monarch_Op<"state", [
    Symbol, HasParent<"ActorClassOp">]> {
  let summary = "A piece of actor state (a parameter) kept on every rank";
  let description = [{
    Declares state that each rank of an actor mesh keeps across steps; the
    type is the per-rank type. Endpoints read it with `monarch.state_get` and
    replace it with `monarch.state_set`. A state split over mesh dimensions
    (`mc.param(w, gpus=1)`) says how in `dist`: each rank holds its shard
    of the global value, so a global initial value (`monarch-run --state`)
    can be cut into the ranks' shards.

    ```mlir
    monarch.state @w : tensor<4x4xf32>
    monarch.state @w1 : tensor<4x2xf32> dist #monarch.dist<[[], ["gpus"]]>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, TypeAttr:$type,
                       OptionalAttr<Monarch_DistAttr>:$dist);
  let assemblyFormat = "$sym_name `:` $type (`dist` qualified($dist)^)? attr-dict";
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::mlir::Type":$type,
                   CArg<"::monarch::DistAttr", "{}">:$dist), [{
      build($_builder, $_state, $_builder.getStringAttr(name),
            ::mlir::TypeAttr::get(type), dist);
    }]>
  ];
  let hasVerifier = 1;
}

def Monarch_EndpointOp : Monarch_Op<"endpoint", [
    HasParent<"ActorClassOp">, FunctionOpInterface, IsolatedFromAbove,
    AutomaticAllocationScope, OpAsmOpInterface]> {
  let summary = "An actor method: per-rank code run on every rank";
  let description = [{
    The traced body of an actor method. Each rank of the actor mesh runs it
    on its own data: an argument whose `monarch.dist` attribute splits it
    over mesh dimensions arrives as that rank's shard (the signature holds
    per-rank types), and a result with `monarch.dist` is assembled from the
    per-rank results; without the attribute values are replicated.

    ```mlir
    monarch.endpoint @forward(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>})
        -> tensor<2x4xf32> {
      ...
      monarch.return %y : tensor<2x4xf32>
    }
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    TypeAttrOf<FunctionType>:$function_type,
    OptionalAttr<DictArrayAttr>:$arg_attrs,
    OptionalAttr<DictArrayAttr>:$res_attrs
  );
  let regions = (region AnyRegion:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "::llvm::StringRef":$name,
                                 "::mlir::FunctionType":$type)>];
  let extraClassDeclaration = [{
    ::mlir::Region *getCallableRegion() { return &getBody(); }
    ::llvm::ArrayRef<::mlir::Type> getArgumentTypes() {
      return getFunctionType().getInputs();
    }
    ::llvm::ArrayRef<::mlir::Type> getResultTypes() {
      return getFunctionType().getResults();
    }
    static ::llvm::StringRef getDefaultDialect() { return "monarch"; }
    /// Distribution of argument `i` (replicated when absent).
    DistAttr getArgDist(unsigned i);
    /// Distribution of result `i` (replicated when absent).
    DistAttr getResultDist(unsigned i);
  }];
}

def Monarch_ReturnOp : Monarch_Op<"return", [
    Pure, HasParent<"EndpointOp">, ReturnLike, Terminator]> {
  let summary = "Returns the per-rank results of an endpoint";
  let description = [{
    ```mlir
    monarch.return %y : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins Variadic<AnyType>:$operands);
  let assemblyFormat = "attr-dict ($operands^ `:` type($operands))?";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, {}); }]>];
  let hasVerifier = 1;
}

def Monarch_StateGetOp : Monarch_Op<"state_get", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Reads actor state on the current rank";
  let description = [{
    ```mlir
    %w = monarch.state_get @w : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$state attr-dict `:` type($result)";
}

def Monarch_StateSetOp : Monarch_Op<"state_set", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Replaces actor state on the current rank";
  let description = [{
    The new value is kept on the rank for later steps.

    ```mlir
    monarch.state_set @w = %w2 : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$state, AnyType:$value);
  let assemblyFormat = "$state `=` $value attr-dict `:` type($value)";
}

def Monarch_ActorMeshOp : Monarch_Op<"actor_mesh", [
    Symbol, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "An actor class spawned on every rank of a mesh";
  let description = [{
    One actor per rank of `mesh` (a `monarch.proc_mesh` or
    `monarch.mesh_slice`), each with its own copy of the class state. The
    verifier checks that every mesh dimension the class's collectives name
    exists in `mesh`.

    ```mlir
    monarch.actor_mesh @s0 = @Stage on @s0_mesh
    ```
  }];
  let arguments = (ins
    SymbolNameAttr:$sym_name,
    FlatSymbolRefAttr:$actor_class,
    FlatSymbolRefAttr:$mesh
  );
  let assemblyFormat = "$sym_name `=` $actor_class `on` $mesh attr-dict";
}

class Monarch_EndpointInvokeOp<string mnemonic, list<Trait> traits = []>
    : Monarch_Op<mnemonic, !listconcat(traits, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>])> {
  let hasVerifier = 1;
  code invokeClassDecl = [{
    /// The actor mesh symbol (`@s0` of `@s0::@forward`).
    ::mlir::StringAttr getActorMeshName() { return getCallee().getRootReference(); }
    /// The endpoint symbol (`@forward` of `@s0::@forward`).
    ::mlir::StringAttr getEndpointName() { return getCallee().getLeafReference(); }
  }];
}

def Monarch_CallOp : Monarch_EndpointInvokeOp<"call"> {
  let summary = "Invokes an endpoint on every rank of an actor mesh";
  let description = [{
    Runs endpoint `@actor_mesh::@endpoint` on every rank. Operand and result
    types are global: an endpoint argument split over mesh dimensions by its
    `monarch.dist` takes the matching shard of the operand on each rank, and
    a split result is assembled from the ranks' results.

    ```mlir
    %y = monarch.call @s0::@forward(%x) : (tensor<8x4xf32>) -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins SymbolRefAttr:$callee, Variadic<AnyType>:$args);
  let results = (outs Variadic<AnyType>:$results);
  let assemblyFormat = [{
    $callee `(` $args `)` attr-dict `:` functional-type($args, $results)
  }];
  let extraClassDeclaration = invokeClassDecl;
}

def Monarch_BroadcastOp : Monarch_EndpointInvokeOp<"broadcast"> {
  let summary = "Invokes an endpoint on every rank, discarding results";
  let description = [{
    Monarch's `broadcast`: a fire-and-forget `monarch.call`, typically used
    for endpoints that only update actor state.

    ```mlir
    monarch.broadcast @s1::@update(%g, %lr) : tensor<4x4xf32>, f32
    ```
  }];
  let arguments = (ins SymbolRefAttr:$callee, Variadic<AnyType>:$args);
  let assemblyFormat = [{
    $callee `(` $args `)` attr-dict (`:` type($args)^)?
  }];
  let extraClassDeclaration = invokeClassDecl;
}

//===----------------------------------------------------------------------===//
// Explicit collectives inside endpoints
//===----------------------------------------------------------------------===//

class Monarch_MeshCollectiveOp<string mnemonic, list<Trait> traits = []>
    : Monarch_Op<mnemonic, !listconcat(traits, [Pure])> {
  let hasVerifier = 1;
}

def Monarch_AllReduceOp : Monarch_MeshCollectiveOp<"all_reduce",
    [SameOperandsAndResultType]> {
  let summary = "All-reduce over named dimensions of the actor mesh";
  let description = [{
    Per-rank code (an endpoint body): every rank gets the reduction of the
    operands of all ranks that share its coordinates outside `dims`.

    ```mlir
    %g2 = monarch.all_reduce %g over ["gpus"] sum : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrArrayAttr:$dims,
                       Monarch_ReductionKindAttr:$reduction);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $dims $reduction attr-dict `:` type($input)
  }];
}

def Monarch_AllGatherOp : Monarch_MeshCollectiveOp<"all_gather"> {
  let summary = "All-gather along a tensor dimension over mesh dimensions";
  let description = [{
    Concatenates the operands of the ranks along `dims` in rank order along
    tensor dimension `axis`. The result extent of `axis` is the operand
    extent times the product of the sizes of `dims` (checked where the actor
    class is spawned on a mesh).

    ```mlir
    %full = monarch.all_gather %part over ["gpus"] axis 0
        : tensor<2x4xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrArrayAttr:$dims,
                       Monarch_NonNegI64:$axis);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $dims `axis` $axis attr-dict `:` type($input) `->` type($result)
  }];
}

def Monarch_ReduceScatterOp : Monarch_MeshCollectiveOp<"reduce_scatter"> {
  let summary = "Reduce, then scatter along a tensor dimension";
  let description = [{
    Reduces the operands of the ranks along `dims` and leaves each rank the
    slice of tensor dimension `axis` at its index.

    ```mlir
    %part = monarch.reduce_scatter %g over ["gpus"] axis 0 sum
        : tensor<8x4xf32> -> tensor<2x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrArrayAttr:$dims,
                       Monarch_NonNegI64:$axis, Monarch_ReductionKindAttr:$reduction);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $dims `axis` $axis $reduction attr-dict `:` type($input)
    `->` type($result)
  }];
}

def Monarch_AllToAllOp : Monarch_MeshCollectiveOp<"all_to_all"> {
  let summary = "Exchange blocks: split one tensor dimension, join another";
  let description = [{
    Each rank splits its operand along `split` into `n` equal blocks (`n`
    the product of the sizes of `dims`) and sends block `j` to the `j`-th
    rank of its group; the result joins the blocks it receives, in rank
    order, along `concat`. Moving a sharded dimension (split over "gpus"
    along 0, then along 1) is one all_to_all: each rank sends and receives
    `(n-1)/n` of its operand, where an all_gather followed by a slice would
    move `n-1` times the operand. With `split == concat` the shape is kept.

    ```mlir
    %y = monarch.all_to_all %x over ["gpus"] split 1 concat 0
        : tensor<2x8xf32> -> tensor<8x2xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrArrayAttr:$dims,
                       Monarch_NonNegI64:$split, Monarch_NonNegI64:$concat);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $dims `split` $split `concat` $concat attr-dict `:`
    type($input) `->` type($result)
  }];
}

def Monarch_BroadcastFromOp : Monarch_MeshCollectiveOp<"broadcast_from",
    [SameOperandsAndResultType]> {
  let summary = "Broadcast a value from one rank over mesh dimensions";
  let description = [{
    Every rank receives the operand of the rank at index `root` along `dims`
    (a linear index into the sub-mesh those dimensions span).

    ```mlir
    %w = monarch.broadcast_from %w0 over ["gpus"] root 0 : tensor<4x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, StrArrayAttr:$dims,
                       Monarch_NonNegI64:$root);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `over` $dims `root` $root attr-dict `:` type($input)
  }];
}

def Monarch_ProcessIndexOp : Monarch_Op<"process_index", [Pure]> {
  let summary = "This rank's linear index along named mesh dimensions";
  let description = [{
    Per-rank code (an endpoint body): the row-major linear index of the
    current rank within the group spanned by `dims` of the actor mesh, in
    `[0, product of their sizes)`. Partitioning uses it to select each rank's
    slice of a replicated value; plans fold it to a constant per rank.

    ```mlir
    %i = monarch.process_index over ["gpus"] : index
    ```
  }];
  let arguments = (ins StrArrayAttr:$dims);
  let results = (outs Index:$result);
  let assemblyFormat = "`over` $dims attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def Monarch_DebugPrintOp : Monarch_Op<"debug_print", [
    MemoryEffects<[MemWrite]>]> {
  let summary = "Prints values on the workers at run time (mc.debug_print)";
  let description = [{
    `format` is Python's str.format syntax with every field naming a value
    by position (`{0}`, `{1:.3f}`; `{{` and `}}` are braces). In per-rank
    code each rank prints its own values; in a compiled function's global
    code the values are gathered whole and every rank of their mesh prints
    them (the controller folds identical lines: `[ranks 0-3] ...`); there
    `mesh` names the mesh whose ranks print. The values are tensors or
    scalars; their text is numpy's (docs/frontend.md).

    ```mlir
    monarch.debug_print "step {0} loss {1:.4f}" on @mesh %k, %loss
        : i64, tensor<f32>
    ```
  }];
  let arguments = (ins StrAttr:$format, Variadic<AnyType>:$values,
                       OptionalAttr<FlatSymbolRefAttr>:$mesh);
  let assemblyFormat =
      "$format (`on` $mesh^)? ($values^ `:` type($values))? attr-dict";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Placement: controller feeds and fetches, cross-mesh transfers
//===----------------------------------------------------------------------===//

def Monarch_FeedOp : Monarch_Op<"feed", [
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Places a controller value on a mesh";
  let description = [{
    The value is sent by the controller to the ranks of `mesh` (replicated
    unless annotated with `shard.shard` afterwards). Feeds are the only
    inputs that pass through the controller.

    ```mlir
    %x = monarch.feed %arg0 to @mesh : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyType:$input, FlatSymbolRefAttr:$mesh);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$input `to` $mesh attr-dict `:` type($input)";
}

def Monarch_FetchOp : Monarch_Op<"fetch", [
    SameOperandsAndResultType,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Brings a value on a mesh back to the controller";
  let description = [{
    ```mlir
    %r = monarch.fetch %y from @mesh : tensor<4xf32>
    ```
  }];
  let arguments = (ins AnyType:$input, FlatSymbolRefAttr:$mesh);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$input `from` $mesh attr-dict `:` type($input)";
}

def Monarch_TransferOp : Monarch_Op<"transfer", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Moves a tensor from one mesh to another";
  let description = [{
    The pipeline-parallel edge: the tensor living on `from` is made available
    on `to`, resharded on the way if the two sides annotate different
    shardings. Both sides hold the same global shape and element type.

    ```mlir
    %y = monarch.transfer %x from @s0_mesh to @s1_mesh
        : tensor<8x4xf32> -> tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyRankedTensor:$input, FlatSymbolRefAttr:$from,
                       FlatSymbolRefAttr:$to);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = [{
    $input `from` $from `to` $to attr-dict `:` type($input) `->` type($result)
  }];
  let hasVerifier = 1;
}

#endif // MONARCH_IR_MONARCHTRACEDOPS_TD
