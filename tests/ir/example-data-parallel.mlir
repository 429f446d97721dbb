// RUN: monarch-opt %examples/ir/data_parallel.mlir | FileCheck %s
// RUN: monarch-opt %examples/ir/data_parallel.mlir --mlir-print-op-generic | monarch-opt | FileCheck %s
// RUN: monarch-opt --verify-roundtrip %examples/ir/data_parallel.mlir | FileCheck %s

// examples/ir/data_parallel.mlir: an MLP training step, data parallel over
// the four "gpus" of a 1x4 mesh.

// CHECK-LABEL: shard.grid @dp_grid(shape = 1x4)
// CHECK-NEXT:  monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @dp_grid

// CHECK-LABEL: monarch.actor_class @MLP {
// CHECK-NEXT:    monarch.state @w1 : tensor<16x32xf32>
// CHECK-NEXT:    monarch.state @w2 : tensor<32x8xf32>
// CHECK-NEXT:    monarch.endpoint @sync_weights() {
// CHECK:           %[[W1B:.*]] = broadcast_from %{{.*}} over ["gpus"] root 0 : tensor<16x32xf32>
// CHECK:           {{^ *}}state_set @w1 = %[[W1B]] : tensor<16x32xf32>

// The batch and targets arrive as this rank's rows: 32 / 4 = 8.
// CHECK:         monarch.endpoint @train_step(%arg0: tensor<8x16xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %arg1: tensor<8x8xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %arg2: f32) -> tensor<f32> {
// CHECK:           %[[H0:.*]] = linalg.matmul ins(%arg0, %{{.*}} : tensor<8x16xf32>, tensor<16x32xf32>) outs(%{{.*}} : tensor<8x32xf32>) -> tensor<8x32xf32>
// CHECK:           linalg.generic {{.*}} ins(%[[H0]] : tensor<8x32xf32>)
// CHECK:             arith.maximumf
// CHECK:           linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x32xf32>, tensor<32x8xf32>) outs(%{{.*}} : tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK:           %[[LOSS:.*]] = all_reduce %{{.*}} over ["gpus"] avg : tensor<f32>
// CHECK:           %[[G1:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<8x32xf32>) outs(%{{.*}} : tensor<16x32xf32>) -> tensor<16x32xf32>
// CHECK-NEXT:      %[[G1R:.*]] = all_reduce %[[G1]] over ["gpus"] avg : tensor<16x32xf32>
// CHECK-NEXT:      %[[G2R:.*]] = all_reduce %{{.*}} over ["gpus"] avg : tensor<32x8xf32>
// CHECK-NEXT:      %[[W1N:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[G1R]] : tensor<16x32xf32>, tensor<16x32xf32>)
// CHECK:           %[[W2N:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[G2R]] : tensor<32x8xf32>, tensor<32x8xf32>)
// CHECK:           {{^ *}}state_set @w1 = %[[W1N]] : tensor<16x32xf32>
// CHECK-NEXT:      {{^ *}}state_set @w2 = %[[W2N]] : tensor<32x8xf32>
// CHECK-NEXT:      {{^ *}}return %[[LOSS]] : tensor<f32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  monarch.actor_mesh @mlp = @MLP on @mesh

// The controller: the batch is sharded over grid axis 1 ("gpus").
// CHECK-LABEL: func.func @train_step(%arg0: tensor<32x16xf32>, %arg1: tensor<32x8xf32>, %arg2: f32) -> tensor<f32> {
// CHECK-NEXT:    monarch.broadcast @mlp::@sync_weights()
// CHECK-NEXT:    %[[ROWS:.*]] = shard.sharding @dp_grid split_axes = {{\[\[}}1]] : !shard.sharding
// CHECK-NEXT:    %[[X0:.*]] = monarch.feed %arg0 to @mesh : tensor<32x16xf32>
// CHECK-NEXT:    %[[X:.*]] = shard.shard %[[X0]] to %[[ROWS]] : tensor<32x16xf32>
// CHECK-NEXT:    %[[T0:.*]] = monarch.feed %arg1 to @mesh : tensor<32x8xf32>
// CHECK-NEXT:    %[[T:.*]] = shard.shard %[[T0]] to %[[ROWS]] : tensor<32x8xf32>
// CHECK-NEXT:    %[[L:.*]] = monarch.call @mlp::@train_step(%[[X]], %[[T]], %arg2) : (tensor<32x16xf32>, tensor<32x8xf32>, f32) -> tensor<f32>
// CHECK-NEXT:    %[[R:.*]] = monarch.fetch %[[L]] from @mesh : tensor<f32>
// CHECK-NEXT:    return %[[R]] : tensor<f32>
