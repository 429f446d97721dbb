// The phase ladder: one check prefix per stage of the same program.
// RUN: monarch-compile %s --compile-to=traced | FileCheck %s --check-prefix=TRACED
// RUN: monarch-compile %s --compile-to=partitioned | FileCheck %s --check-prefix=PART
// RUN: monarch-compile %s --compile-to=split | FileCheck %s --check-prefix=SPLIT
// RUN: monarch-compile %s --compile-to=planned | FileCheck %s --check-prefix=PLAN
// RUN: monarch-compile %s | FileCheck %s --check-prefix=PLAN
// The verifier after every pass changes nothing in a correct pipeline.
// RUN: monarch-compile %s --verify-each | FileCheck %s --check-prefix=PLAN
// RUN: monarch-compile %s --backend=nccl | FileCheck %s --check-prefix=NCCL

// The IR after every pass, numbered, from the flag or MONARCH_DUMP_DIR.
// RUN: rm -rf %t.dump %t.env && monarch-compile %s --dump-dir=%t.dump -o %t.out
// RUN: ls %t.dump | FileCheck %s --check-prefix=DUMP
// RUN: env MONARCH_DUMP_DIR=%t.env monarch-compile %s --compile-to=split -o %t.out2
// RUN: ls %t.env | FileCheck %s --check-prefix=ENVDUMP
// DUMP: 00-input.mlir
// DUMP-NEXT: 01-monarch-partition.mlir
// DUMP-NEXT: 02-monarch-split-control-data.mlir
// DUMP-NEXT: 03-monarch-shard-weight-update.mlir
// DUMP-NEXT: 04-monarch-specialize-ranks.mlir
// DUMP-NEXT: 05-monarch-bucket-collectives.mlir
// DUMP-NEXT: 06-monarch-hoist-collectives.mlir
// DUMP-NEXT: 07-monarch-plan-transfers.mlir
// DUMP-NEXT: 08-monarch-schedule.mlir
// DUMP-NEXT: 09-monarch-verify-plan.mlir
// DUMP-NEXT: partitioned.mlir
// DUMP-NEXT: planned.mlir
// DUMP-NEXT: split.mlir
// DUMP-NEXT: traced.mlir
// ENVDUMP: 00-input.mlir
// ENVDUMP-NEXT: 01-monarch-partition.mlir
// ENVDUMP-NEXT: 02-monarch-split-control-data.mlir
// ENVDUMP-NOT: plan-transfers
// ENVDUMP: partitioned.mlir
// ENVDUMP-NEXT: split.mlir
// ENVDUMP-NEXT: traced.mlir

// A stage's IR compiles on from there (--compile-from): the split stage
// written above gives the same planned IR and a plan; its dump starts at
// split. Going backwards is refused.
// RUN: monarch-compile %s --compile-to=split -o %t.split.mlir
// RUN: monarch-compile %t.split.mlir --compile-from=split | FileCheck %s --check-prefix=PLAN
// RUN: rm -rf %t.fromdump && monarch-compile %t.split.mlir --compile-from=split --dump-dir=%t.fromdump -o %t.from.mcplan
// RUN: monarch-compile --print-plan %t.from.mcplan | FileCheck %s --check-prefix=FROMPLAN
// RUN: ls %t.fromdump | FileCheck %s --check-prefix=FROMDUMP
// RUN: not monarch-compile %s --compile-from=planned --compile-to=split 2>&1 | FileCheck %s --check-prefix=BACKWARDS
// FROMPLAN: all_reduce
// FROMDUMP: 00-input.mlir
// FROMDUMP-NEXT: 01-monarch-shard-weight-update.mlir
// FROMDUMP-NEXT: 02-monarch-specialize-ranks.mlir
// FROMDUMP-NOT: partitioned.mlir
// FROMDUMP: planned.mlir
// FROMDUMP-NEXT: split.mlir
// FROMDUMP-NOT: traced.mlir
// BACKWARDS: error: --compile-to=split comes before --compile-from=planned

// TRACED: func.func @step
// TRACED: linalg.matmul
// PART: monarch.endpoint @run
// PART: all_reduce
// PART: monarch.call @step.mesh.0::@run
// SPLIT: func.func @step.worker.mesh
// SPLIT: monarch.control_msg to @mesh invoke [@step.worker.mesh]
// PLAN: monarch.communicator @step.worker.mesh.comm0 on @mesh ranks [0, 1] backend gloo
// PLAN: monarch.plan @step.worker.mesh on @mesh
// PLAN: monarch.collective all_reduce sum
// NCCL: backend nccl

shard.grid @grid(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @grid
func.func @step(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4xf32> {
  %xf = monarch.feed %x to @mesh : tensor<4x4xf32>
  %wf = monarch.feed %w to @mesh : tensor<4x4xf32>
  %s = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %rep = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %xs = shard.shard %xf to %s : tensor<4x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %y = linalg.matmul ins(%xs, %wf : tensor<4x4xf32>, tensor<4x4xf32>) outs(%f : tensor<4x4xf32>) -> tensor<4x4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %f2 = linalg.fill ins(%z : f32) outs(%e2 : tensor<4xf32>) -> tensor<4xf32>
  %sum = linalg.reduce ins(%y : tensor<4x4xf32>) outs(%f2 : tensor<4xf32>) dimensions = [0]
    (%a: f32, %b: f32) { %t = arith.addf %a, %b : f32
      linalg.yield %t : f32 }
  %out = shard.shard %sum to %rep annotate_for_users : tensor<4xf32>
  %r = monarch.fetch %out from @mesh : tensor<4xf32>
  return %r : tensor<4xf32>
}
