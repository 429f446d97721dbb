//===- MonarchSplitOps.td - ops of the split stage ---------*- tablegen -*-===//
//
// The ops monarch-split-control-data introduces: control messages from
// the controller, feeds and fetches of a worker program, and the data
// channels between meshes. Included by MonarchOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_MONARCHSPLITOPS_TD
#define MONARCH_IR_MONARCHSPLITOPS_TD

//===----------------------------------------------------------------------===//
// Split stage: control messages and data channels
//===----------------------------------------------------------------------===//

def Monarch_ControlMsgOp : Monarch_Op<"control_msg", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "One control message from the controller to a mesh";
  let description = [{
    Tells every worker of `mesh` to run the listed endpoints or worker
    programs (`func.func`s marked `monarch.worker_for` this mesh), in order,
    for the current step, with the given scalars. Control messages carry only
    invocations and small scalars; tensors travel on `monarch.channel`s.
    Batching several invocations into one message is what makes a compiled
    step cost one control message per worker. Every invoked actor mesh must
    live on `mesh` or on a slice of it.

    ```mlir
    %t = monarch.control_msg to @mesh invoke [@s0::@forward, @s1::@forward]
        args(%lr : f32) : !monarch.token
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$mesh, SymbolRefArrayAttr:$invoke,
                       Variadic<Monarch_ScalarType>:$scalars);
  let results = (outs Monarch_TokenType:$token);
  let assemblyFormat = [{
    `to` $mesh `invoke` $invoke (`args` `(` $scalars^ `:` type($scalars) `)`)?
    attr-dict `:` type($token)
  }];
  let hasVerifier = 1;
}

def Monarch_FeedInputOp : Monarch_Op<"feed_input", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Sends a controller value as an input of a worker program";
  let description = [{
    Controller side of a feed after `monarch-split-control-data`: the value
    becomes argument `index` of worker program `program` (a `func.func`
    marked `monarch.worker_for`). This is a data edge from the controller to
    the workers, separate from the control message that starts the program.

    ```mlir
    monarch.feed_input %x to @step.worker.mesh input 0 : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins AnyType:$value, FlatSymbolRefAttr:$program,
                       Monarch_NonNegI64:$index);
  let assemblyFormat = [{
    $value `to` $program `input` $index attr-dict `:` type($value)
  }];
}

def Monarch_FetchOutputOp : Monarch_Op<"fetch_output", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Receives an output of a worker program at the controller";
  let description = [{
    Controller side of a fetch after `monarch-split-control-data`: result
    `index` of worker program `program`, sent by the workers to the
    controller.

    ```mlir
    %r = monarch.fetch_output @step.worker.mesh output 0 : tensor<4xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$program, Monarch_NonNegI64:$index);
  let results = (outs AnyType:$result);
  let assemblyFormat = "$program `output` $index attr-dict `:` type($result)";
}

def Monarch_AwaitOp : Monarch_Op<"await"> {
  let summary = "Waits for workers to report completion of control messages";
  let description = [{
    ```mlir
    monarch.await %t0, %t1 : !monarch.token, !monarch.token
    ```
  }];
  let arguments = (ins Variadic<Monarch_TokenType>:$tokens);
  let assemblyFormat = "$tokens attr-dict `:` type($tokens)";
  let hasVerifier = 1;
}

def Monarch_ChannelOp : Monarch_Op<"channel", [
    Symbol, DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A data channel carrying one tensor between two meshes";
  let description = [{
    Tensor bytes flow worker to worker on channels, never through the
    controller. `monarch-plan-transfers` lowers each channel to
    point-to-point sends and receives or to a collective.

    ```mlir
    monarch.channel @c0 from @s0_mesh to @s1_mesh : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, FlatSymbolRefAttr:$from,
                       FlatSymbolRefAttr:$to, TypeAttrOf<AnyRankedTensor>:$type);
  let assemblyFormat = "$sym_name `from` $from `to` $to `:` $type attr-dict";
}

def Monarch_ChannelSendOp : Monarch_Op<"channel_send", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Puts a tensor on a data channel (sending side)";
  let description = [{
    ```mlir
    monarch.channel_send @c0, %y : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$channel, AnyRankedTensor:$value);
  let assemblyFormat = "$channel `,` $value attr-dict `:` type($value)";
}

def Monarch_ChannelRecvOp : Monarch_Op<"channel_recv", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "Takes a tensor from a data channel (receiving side)";
  let description = [{
    ```mlir
    %y = monarch.channel_recv @c0 : tensor<8x4xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$channel);
  let results = (outs AnyRankedTensor:$result);
  let assemblyFormat = "$channel attr-dict `:` type($result)";
}

#endif // MONARCH_IR_MONARCHSPLITOPS_TD
