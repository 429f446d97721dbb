//===- MonarchPlanOps.td - ops of the planned stage --------*- tablegen -*-===//
//
// The ops of the planned stage: communicators, plans and their per-rank
// instruction streams (launches, sends, receives, collectives, waits,
// feed/fetch/state buffers). Included by MonarchOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_MONARCHPLANOPS_TD
#define MONARCH_IR_MONARCHPLANOPS_TD

//===----------------------------------------------------------------------===//
// Planned stage: communicators and per-rank instruction streams
//===----------------------------------------------------------------------===//

def Monarch_CommunicatorOp : Monarch_Op<"communicator", [
    Symbol, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A group of ranks of a mesh that communicate together";
  let description = [{
    Maps onto one NCCL communicator or Gloo context. `ranks` are ranks of
    `mesh`, listed in the communicator's own rank order.

    ```mlir
    monarch.communicator @world on @mesh ranks [0, 1, 2, 3] backend gloo
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$mesh,
                       DenseI64ArrayAttr:$ranks, Monarch_BackendAttr:$backend);
  let assemblyFormat = [{
    $sym_name `on` $mesh `ranks` $ranks `backend` $backend attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Position of mesh rank `rank` in this communicator, or -1.
    int64_t getCommRank(int64_t rank);
  }];
}

def Monarch_PlanOp : Monarch_Op<"plan", [
    Symbol, NoTerminator, SingleBlock, NoRegionArguments,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "The per-rank execution plan of one compiled step";
  let description = [{
    Holds one `monarch.rank_program` per rank of `mesh`, or for a class of
    ranks that run the same code, one program and a `monarch.rank_member`
    per other rank of the class. When the plan
    replaces a worker program, `signature` keeps that program's inputs
    (`feed_buffer` indices) and outputs (`fetch_buffer` indices) so the
    controller's `monarch.feed_input`/`monarch.fetch_output` still type-check.

    ```mlir
    monarch.plan @step on @mesh {
      monarch.rank_program rank 0 arena 256 { ... }
      monarch.rank_program rank 1 arena 256 { ... }
    }
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$mesh,
                       OptionalAttr<TypeAttrOf<FunctionType>>:$signature);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    $sym_name `on` $mesh (`signature` $signature^)? attr-dict-with-keyword $body
  }];
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::llvm::StringRef":$name, "::llvm::StringRef":$mesh)>,
    OpBuilder<(ins "::llvm::StringRef":$name, "::llvm::StringRef":$mesh,
                   "::mlir::FunctionType":$signature)>
  ];
  let extraClassDeclaration = [{
    /// Replaces each `monarch.rank_member` by the rank program it stands
    /// for (for a consumer that reads one program per rank).
    void expandMembers();
  }];
}

def Monarch_RankProgramOp : Monarch_Op<"rank_program", [
    HasParent<"PlanOp">, IsolatedFromAbove, NoTerminator, SingleBlock,
    NoRegionArguments]> {
  let summary = "The instruction stream of one rank and its static arena";
  let description = [{
    Instructions run in program order, each on its stream; asynchronous ones
    yield a `!monarch.event` that `monarch.wait` consumes. Every buffer lies
    inside the rank's arena of `arena` bytes, allocated once.

    ```mlir
    monarch.rank_program rank 0 arena 256 {
      monarch.feed_buffer 0 into #monarch.buf<0, tensor<8x4xf32>>
      ...
    }
    ```
  }];
  let arguments = (ins Monarch_NonNegI64:$rank, Monarch_NonNegI64:$arena);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "`rank` $rank `arena` $arena attr-dict-with-keyword $body";
  let hasVerifier = 1;
  let skipDefaultBuilders = 1;
  let builders = [OpBuilder<(ins "int64_t":$rank, "int64_t":$arena)>];
}

def Monarch_RankMemberOp : Monarch_Op<"rank_member", [HasParent<"PlanOp">]> {
  let summary = "A rank that runs another rank's program with its own peers";
  let description = [{
    A class of ranks runs one instruction stream (docs/spmd-classes.md):
    rank `rank` runs the `monarch.rank_program` of rank `of` (earlier in the
    plan), with the same instructions, streams, buffers, arena, order and
    links, but its own

    * `peers`: the peer of each `send` and `recv` of that program, in
      program order;
    * `comms`: the communicator of each `collective`, in program order (of
      the same size as the program's, with `rank` a member);
    * `offsets`: the offsets of each `feed_buffer`, `fetch_buffer` and
      `state_buffer`, in program order (`unit` where it has none).

    Expanded, it is exactly the rank program a copy of `of` with those
    fields replaced would be; passes after `monarch-plan-transfers` work on
    the class's program once, and the plan builder instantiates each member.

    ```mlir
    monarch.rank_member rank 1 of 0 peers [3] comms [@step_comm1]
        offsets [array<i64: 4, 0>, unit]
    ```
  }];
  let arguments = (ins Monarch_NonNegI64:$rank, Monarch_NonNegI64:$of,
                       DenseI64ArrayAttr:$peers, ArrayAttr:$comms,
                       ArrayAttr:$offsets);
  let assemblyFormat = [{
    `rank` $rank `of` $of `peers` $peers `comms` $comms `offsets` $offsets
    attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Whether `op` takes its peer, communicator or offsets from a member's
    /// tables (`peers`, `comms`, `offsets`), in that order of its program.
    static bool isPeerSlot(::mlir::Operation *op);
    static bool isCommSlot(::mlir::Operation *op);
    static bool isOffsetsSlot(::mlir::Operation *op);
    /// The rank program this member stands for: a copy of `program` (the
    /// program of rank `of`) with the member's rank, peers, communicators
    /// and offsets, inserted before this op. The caller erases this op.
    RankProgramOp materialize(RankProgramOp program);
  }];
}

class Monarch_PlanInstrOp<string mnemonic, list<Trait> traits = []>
    : Monarch_Op<mnemonic, !listconcat(traits, [HasParent<"RankProgramOp">])>;

def Monarch_LaunchOp : Monarch_PlanInstrOp<"launch", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Launches a compiled kernel on a stream";
  let description = [{
    Calls kernel function `kernel` (a `func.func` in the module) with the
    `ins` buffers followed by the `outs` buffers; their types must match the
    kernel's argument types.

    ```mlir
    %e = monarch.launch @mlp_k0 ins(#monarch.buf<0, tensor<2x4xf32>>,
        #monarch.buf<32, tensor<4x4xf32>>) outs(#monarch.buf<96, tensor<2x4xf32>>)
        stream 0 : !monarch.event
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$kernel, TypedArrayAttrBase<
                       Monarch_BufferAttr, "buffer array">:$ins,
                       TypedArrayAttrBase<Monarch_BufferAttr, "buffer array">:$outs,
                       Monarch_NonNegI64:$stream);
  let results = (outs Monarch_EventType:$event);
  let assemblyFormat = [{
    $kernel `ins` `(` custom<BufferList>($ins) `)`
    `outs` `(` custom<BufferList>($outs) `)` `stream` $stream attr-dict
    `:` type($event)
  }];
}

class Monarch_P2POp<string mnemonic, string peerKw>
    : Monarch_PlanInstrOp<mnemonic, [
        DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let arguments = (ins Monarch_BufferAttr:$buffer, Monarch_NonNegI64:$peer,
                       FlatSymbolRefAttr:$comm, Monarch_NonNegI64:$stream,
                       OptionalAttr<Monarch_NonNegI64>:$group,
                       OptionalAttr<Monarch_LinkKindAttr>:$link);
  let results = (outs Monarch_EventType:$event);
  let assemblyFormat = "custom<Buffer>($buffer) `" # peerKw # "` $peer `on` $comm `stream` $stream "
      # "(`group` $group^)? (`link` $link^)? attr-dict `:` type($event)";
}

def Monarch_SendOp : Monarch_P2POp<"send", "to"> {
  let summary = "Sends a buffer to a peer rank";
  let description = [{
    Point-to-point send of `buffer` to mesh rank `peer` on communicator
    `comm`. Sends and receives with the same `group` id are issued together
    (an NCCL group), so their relative order cannot deadlock. `link` (set
    when the mesh has a `monarch.topology`) is the interconnect it crosses.

    ```mlir
    %e = monarch.send #monarch.buf<0, tensor<8x4xf32>> to 2 on @pp stream 1
        group 0 : !monarch.event
    ```
  }];
}

def Monarch_RecvOp : Monarch_P2POp<"recv", "from"> {
  let summary = "Receives a buffer from a peer rank";
  let description = [{
    ```mlir
    %e = monarch.recv #monarch.buf<0, tensor<8x4xf32>> from 0 on @pp stream 1
        group 0 : !monarch.event
    ```
  }];
}

def Monarch_CollectiveOp : Monarch_PlanInstrOp<"collective", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A collective over a communicator";
  let description = [{
    All members of `comm` issue the same collectives in the same order.
    `input` and `output` may alias (in place). Shape rules, with `n` the
    communicator size: all_reduce and broadcast keep the shape; all_gather
    multiplies dimension 0 by `n`; reduce_scatter divides it by `n`;
    all_to_all keeps the shape and needs dimension 0 divisible by `n`.

    ```mlir
    %e = monarch.collective all_reduce sum #monarch.buf<0, tensor<4x4xf32>>
        -> #monarch.buf<0, tensor<4x4xf32>> on @world stream 1 : !monarch.event
    ```
  }];
  let arguments = (ins Monarch_CollectiveKindAttr:$kind,
                       OptionalAttr<Monarch_ReductionKindAttr>:$reduction,
                       Monarch_BufferAttr:$input, Monarch_BufferAttr:$output,
                       FlatSymbolRefAttr:$comm, OptionalAttr<Monarch_NonNegI64>:$root,
                       Monarch_NonNegI64:$stream, OptionalAttr<Monarch_NonNegI64>:$group,
                       OptionalAttr<Monarch_LinkKindAttr>:$link);
  let results = (outs Monarch_EventType:$event);
  let assemblyFormat = [{
    $kind ($reduction^)? custom<Buffer>($input) `->` custom<Buffer>($output) `on` $comm (`root` $root^)?
    `stream` $stream (`group` $group^)? (`link` $link^)? attr-dict `:` type($event)
  }];
  let hasVerifier = 1;
}

def Monarch_WaitOp : Monarch_PlanInstrOp<"wait"> {
  let summary = "Blocks the rank's program until events complete";
  let description = [{
    ```mlir
    monarch.wait %e0, %e1 : !monarch.event, !monarch.event
    ```
  }];
  let arguments = (ins Variadic<Monarch_EventType>:$events);
  let assemblyFormat = "$events attr-dict `:` type($events)";
  let hasVerifier = 1;
}

def Monarch_FeedBufferOp : Monarch_PlanInstrOp<"feed_buffer"> {
  let summary = "Copies controller input `index` into a buffer";
  let description = [{
    The whole input, or with `at` only this rank's shard of it: the
    elements from `offsets` on (one per dimension), which the controller
    cuts out of the input and sends to this rank alone.

    ```mlir
    monarch.feed_buffer 0 into #monarch.buf<0, tensor<8x4xf32>>
    monarch.feed_buffer 1 into #monarch.buf<128, tensor<4x4xf32>> at [4, 0]
    ```
  }];
  let arguments = (ins Monarch_NonNegI64:$index, Monarch_BufferAttr:$buffer,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets);
  let builders = [
    // The whole input.
    OpBuilder<(ins "uint64_t":$index, "::monarch::BufferAttr":$buffer), [{
      build($_builder, $_state, $_builder.getI64IntegerAttr(index), buffer,
            ::mlir::DenseI64ArrayAttr());
    }]>
  ];
  let assemblyFormat =
      "$index `into` custom<Buffer>($buffer) (`at` $offsets^)? attr-dict";
}

def Monarch_FetchBufferOp : Monarch_PlanInstrOp<"fetch_buffer"> {
  let summary = "Returns a buffer to the controller as output `index`";
  let description = [{
    The whole output, or with `at` one shard of it: the buffer holds the
    output's elements from `offsets` on (one per dimension), and the
    controller assembles the output from the shards the ranks return (a
    split result is never gathered onto one rank to be fetched).

    With `keep_only` the rank does not return the buffer: it holds this
    rank's copy of an output that may stay resident on the workers
    (`@mc.compile(donate_argnums=...)`), kept only when the step's request
    asks for it (another rank returns the output otherwise).

    ```mlir
    monarch.fetch_buffer 0 from #monarch.buf<64, tensor<4xf32>>
    monarch.fetch_buffer 1 from #monarch.buf<0, tensor<2x8xf32>> at [2, 0]
    monarch.fetch_buffer 2 from #monarch.buf<128, tensor<4xf32>> keep_only
    ```
  }];
  let arguments = (ins Monarch_NonNegI64:$index, Monarch_BufferAttr:$buffer,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets,
                       UnitAttr:$keep_only);
  let builders = [
    // The whole output.
    OpBuilder<(ins "uint64_t":$index, "::monarch::BufferAttr":$buffer), [{
      build($_builder, $_state, $_builder.getI64IntegerAttr(index), buffer,
            ::mlir::DenseI64ArrayAttr(), ::mlir::UnitAttr());
    }]>
  ];
  let assemblyFormat =
      "$index `from` custom<Buffer>($buffer) (`at` $offsets^)? (`keep_only` $keep_only^)? attr-dict";
}

def Monarch_StateBufferOp : Monarch_PlanInstrOp<"state_buffer", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Binds actor state to a persistent arena buffer";
  let description = [{
    Actor state lives in the rank's arena across steps: this names the
    buffer holding state `state` of actor mesh `actor` on this rank; kernels
    read and update it in place. For split state, `shard` says where this
    rank's shard starts in the global value (one offset per dimension), so
    that a global value can be cut into the ranks' shards.

    ```mlir
    monarch.state_buffer @s0::@w at #monarch.buf<0, tensor<4x4xf32>>
    monarch.state_buffer @s0::@w1 at #monarch.buf<64, tensor<4x2xf32>> shard [0, 2]
    ```
  }];
  let arguments = (ins SymbolRefAttr:$state, Monarch_BufferAttr:$buffer,
                       OptionalAttr<DenseI64ArrayAttr>:$offsets);
  let assemblyFormat =
      "$state `at` custom<Buffer>($buffer) (`shard` $offsets^)? attr-dict";
  let builders = [
    OpBuilder<(ins "::mlir::SymbolRefAttr":$state,
                   "::monarch::BufferAttr":$buffer), [{
      build($_builder, $_state, state, buffer, ::mlir::DenseI64ArrayAttr());
    }]>
  ];
}

def Monarch_PrintBuffersOp : Monarch_PlanInstrOp<"print_buffers"> {
  let summary = "Formats buffers into a line of the step's output";
  let description = [{
    The plan form of `monarch.debug_print`: a host instruction that reads
    `buffers` once every earlier write to them is waited for, formats them
    with `format` (fields name buffers by position) and adds the text to
    what this rank returns with the step.

    ```mlir
    monarch.print_buffers "loss {0}" [#monarch.buf<0, tensor<f32>>]
    ```
  }];
  let arguments = (ins StrAttr:$format, ArrayAttr:$buffers);
  let assemblyFormat = "$format $buffers attr-dict";
  let hasVerifier = 1;
}

#endif // MONARCH_IR_MONARCHPLANOPS_TD
