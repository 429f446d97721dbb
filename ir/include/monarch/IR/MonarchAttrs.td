//===- MonarchAttrs.td - monarch attributes and types ------*- tablegen -*-===//
//
// Distribution of tensors over mesh dimensions (`#monarch.dist`), buffer
// references into a rank's static arena (`#monarch.buf`), and the two token
// types of the dialect: `!monarch.token` (completion of a control message)
// and `!monarch.event` (completion of an asynchronous plan instruction).
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_MONARCHATTRS_TD
#define MONARCH_IR_MONARCHATTRS_TD

include "monarch/IR/MonarchBase.td"
include "mlir/IR/BuiltinTypeInterfaces.td"

class Monarch_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Monarch_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

class Monarch_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<Monarch_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def Monarch_DistAttr : Monarch_Attr<"Dist", "dist"> {
  let summary = "How a tensor is distributed over the dimensions of a mesh";
  let description = [{
    One entry per tensor dimension, each the list of mesh dimension names that
    tensor dimension is split over (outermost first); an empty list means the
    dimension is whole on every rank. A tensor with no split dimensions is
    replicated. `partial <kind>` marks per-rank values that are partial
    results still to be reduced with `<kind>` over the mesh.

    This is the mesh-name form used where the mesh is not yet known
    statically (endpoint signatures, which an actor class shares between all
    the meshes it is spawned on); inside a known mesh the upstream
    `shard.sharding` is used instead.

    Example:

    ```mlir
    // Dim 0 split over "gpus", dim 1 whole.
    #monarch.dist<[["gpus"], []]>
    // Replicated shape, partial sums on every rank.
    #monarch.dist<[[], []] partial sum>
    ```
  }];
  let parameters = (ins
    "::mlir::ArrayAttr":$split,
    OptionalParameter<"std::optional<::monarch::ReductionKind>">:$partial
  );
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Mesh dimension names tensor dimension `i` is split over.
    ::llvm::SmallVector<::llvm::StringRef> getSplitDims(unsigned i) const;
    /// True when no tensor dimension is split and the value is not partial.
    bool isReplicated() const;
  }];
}

def Monarch_BufferAttr : Monarch_Attr<"Buffer", "buf"> {
  let summary = "A tensor-typed region of a rank's static arena";
  let description = [{
    Plan instructions name their operands by byte offset into the rank's
    arena (see `monarch.rank_program`) and the tensor type stored there; the
    size in bytes follows from the type.

    Example:

    ```mlir
    #monarch.buf<128, tensor<8x4xf32>>   // bytes [128, 256)
    ```
  }];
  let parameters = (ins "int64_t":$offset, "::mlir::RankedTensorType":$type);
  let assemblyFormat = "`<` $offset `,` $type `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Size of the buffer in bytes (elements times the element byte width).
    int64_t getSizeInBytes() const;
  }];
}

def Monarch_TokenType : Monarch_Type<"Token", "token"> {
  let summary = "Completion of a control message";
  let description = [{
    Produced by `monarch.control_msg`; `monarch.await` blocks the controller
    until every addressed worker has reported completion.

    ```mlir
    %t = monarch.control_msg to @mesh invoke [@s0::@forward] : !monarch.token
    monarch.await %t : !monarch.token
    ```
  }];
}

def Monarch_EventType : Monarch_Type<"Event", "event"> {
  let summary = "Completion of an asynchronous plan instruction";
  let description = [{
    Produced by plan instructions that run asynchronously on a stream
    (`monarch.launch`, `monarch.send`, `monarch.recv`, `monarch.collective`)
    and consumed by `monarch.wait`.
  }];
}

#endif // MONARCH_IR_MONARCHATTRS_TD
