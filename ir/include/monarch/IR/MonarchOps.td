//===- MonarchOps.td - monarch dialect operations ----------*- tablegen -*-===//
//
// Operations of the `monarch` dialect: the definitions they share, then one
// file per pipeline stage that introduces them: meshes, actors and placement
// (MonarchTracedOps.td), control messages and data channels
// (MonarchSplitOps.td), and per-rank plan instructions (MonarchPlanOps.td).
// One generated header and source hold them all. See docs/dialect.md for
// the rationale of each shape.
//
//===----------------------------------------------------------------------===//

#ifndef MONARCH_IR_MONARCHOPS_TD
#define MONARCH_IR_MONARCHOPS_TD

include "monarch/IR/MonarchBase.td"
include "monarch/IR/MonarchAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/FunctionInterfaces.td"
include "mlir/Interfaces/CallInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/InferTypeOpInterface.td"

/// Ranks, stream and group ids, indices and sizes: non-negative integers.
def Monarch_NonNegI64 : ConfinedAttr<I64Attr, [IntNonNegative]>;

def Monarch_ScalarType : AnyTypeOf<[AnySignlessInteger, AnyFloat, Index]>;
def Monarch_StaticTensor : Type<
    And<[AnyRankedTensor.predicate, HasStaticShapePred]>,
    "statically shaped tensor", "::mlir::RankedTensorType">;

// The ops, one file per stage that introduces them.
include "monarch/IR/MonarchTracedOps.td"
include "monarch/IR/MonarchSplitOps.td"
include "monarch/IR/MonarchPlanOps.td"

#endif // MONARCH_IR_MONARCHOPS_TD
