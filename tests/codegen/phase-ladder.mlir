// The phase ladder down to the plan: one check prefix per stage of the same
// program, the last one through the binary .mcplan and --print-plan.
// RUN: monarch-compile %s --compile-to=traced | FileCheck %s --check-prefix=TRACED
// RUN: monarch-compile %s --compile-to=partitioned | FileCheck %s --check-prefix=PART
// RUN: monarch-compile %s --compile-to=split | FileCheck %s --check-prefix=SPLIT
// RUN: monarch-compile %s --compile-to=planned | FileCheck %s --check-prefix=PLANNED
// RUN: env MONARCH_DISABLE_CACHE=1 monarch-compile %s --compile-to=plan -o %t.mcplan
// RUN: monarch-compile --print-plan %t.mcplan | FileCheck %s --check-prefix=PLAN
// The plan stage is the default for a .mcplan output, and without -o it
// prints the same table.
// RUN: env MONARCH_DISABLE_CACHE=1 monarch-compile %s -o %t.default.mcplan
// RUN: cmp %t.mcplan %t.default.mcplan
// RUN: env MONARCH_DISABLE_CACHE=1 monarch-compile %s --compile-to=plan | FileCheck %s --check-prefix=PLAN
// RUN: env MONARCH_DISABLE_CACHE=1 monarch-compile %s --print-plan | FileCheck %s --check-prefix=PLAN
// RUN: env MONARCH_DISABLE_CACHE=1 monarch-compile %s --backend=nccl --print-plan | FileCheck %s --check-prefix=NCCL

// TRACED: func.func @step
// TRACED: linalg.matmul
// PART: monarch.endpoint @run
// PART: all_reduce
// SPLIT: func.func @step.worker.mesh
// SPLIT: monarch.control_msg to @mesh invoke [@step.worker.mesh]
// PLANNED: monarch.plan @step.worker.mesh on @mesh
// PLANNED: monarch.collective all_reduce sum

// PLAN: ExecutionPlan format 7, monarch-compile {{.*}}, from {{.*}}phase-ladder.mlir
// PLAN: meshes:
// PLAN-NEXT: @mesh  gpus=2  2 ranks
// PLAN: topology:
// PLAN-NEXT: @mesh  host localhost  ranks [0, 1]
// PLAN: communicators:
// PLAN-NEXT: @step.worker.mesh.comm0  on @mesh  ranks [0, 1]  gloo
// Both ranks' kernels compile to one symbol: the table holds it once.
// PLAN: kernels: 1
// PLAN-NEXT: k0 @step.worker.mesh.r0.k0  2 in, 1 out

// Every rank gets a table; each instruction names the user's line (the
// all_reduce comes from the partial sums of the linalg.reduce).
// PLAN: plan @step.worker.mesh on @mesh (tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>)
// PLAN: rank 0: arena {{[0-9]+}} B, peak {{[0-9]+}} B, critical path {{.*}} us, {{[0-9]+}} instructions
// PLAN-NEXT: # instruction operands stream group location
// PLAN-NEXT: 0 feed_buffer input {{[01]}} -> @{{[0-9]+}} tensor<{{.*}}xf32>{{( at \[0, 0\])?}} - - {{.*}}phase-ladder.mlir:[[#]]:[[#]] monarch.feed_buffer
// PLAN: launch k0 @step.worker.mesh.r0.k0 ins(@{{[0-9]+}} tensor<2x4xf32>, @{{[0-9]+}} tensor<4x4xf32>) outs(@{{[0-9]+}} tensor<4xf32>) 0 - {{.*}}phase-ladder.mlir:{{[0-9]+}}:{{[0-9]+}} monarch.launch
// PLAN: collective all_reduce sum @[[#]] tensor<4xf32> -> @[[#]] tensor<4xf32> on @step.worker.mesh.comm0 [[#]] - {{.*}}phase-ladder.mlir:[[@LINE+33]]:10 monarch.collective
// PLAN: fetch_buffer @[[#]] tensor<4xf32> -> output 0
// PLAN: rank 1:
// PLAN: launch k0 @step.worker.mesh.r0.k0
// PLAN: collective all_reduce sum
// PLAN-NOT: fetch_buffer

// The controller program: one control message, two feeds, one fetch.
// PLAN: controller @step (tensor<4x4xf32>, tensor<4x4xf32>) -> (tensor<4xf32>) {{.*}}phase-ladder.mlir:[[@LINE+13]]:1 func.func
// PLAN-NEXT: # step operands location
// PLAN-NEXT: 0 control_msg to @mesh invoke [@step.worker.mesh]
// PLAN-NEXT: 1 feed_input arg 0 -> @step.worker.mesh input 0 : tensor<4x4xf32> {{.*}}phase-ladder.mlir:[[@LINE+11]]:9 monarch.feed_input
// PLAN-NEXT: 2 feed_input arg 1 -> @step.worker.mesh input 1 : tensor<4x4xf32>
// PLAN-NEXT: 3 fetch_output @step.worker.mesh output 0 : tensor<4xf32> {{.*}}phase-ladder.mlir:[[@LINE+24]]:8 monarch.fetch_output
// PLAN-NEXT: 4 await step 0
// PLAN-NEXT: return step 3

// NCCL: @step.worker.mesh.comm0  on @mesh  ranks [0, 1]  nccl

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
