// RUN: monarch-opt %examples/ir/tensor_parallel.mlir | FileCheck %s
// RUN: monarch-opt %examples/ir/tensor_parallel.mlir --mlir-print-op-generic | monarch-opt | FileCheck %s
// RUN: monarch-opt --verify-roundtrip %examples/ir/tensor_parallel.mlir | FileCheck %s

// examples/ir/tensor_parallel.mlir: a column-parallel then row-parallel MLP
// over the four "gpus" of a 1x4 mesh.

// CHECK-LABEL: shard.grid @tp_grid(shape = 1x4)
// CHECK-NEXT:  monarch.proc_mesh @mesh(hosts = 1, gpus = 4) grid @tp_grid

// Per-rank shards: 16x64 -> 16x16 (columns), 64x8 -> 16x8 (rows).
// CHECK-LABEL: monarch.actor_class @TPMLP {
// CHECK-NEXT:    monarch.state @w1 : tensor<16x16xf32>
// CHECK-NEXT:    monarch.state @w2 : tensor<16x8xf32>
// CHECK-NEXT:    monarch.endpoint @load_weights(%arg0: tensor<16x16xf32> {monarch.dist = #monarch.dist<{{\[\[\], \["gpus"\]\]}}>}, %arg1: tensor<16x8xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}) {
// CHECK-NEXT:      {{^ *}}state_set @w1 = %arg0 : tensor<16x16xf32>
// CHECK-NEXT:      {{^ *}}state_set @w2 = %arg1 : tensor<16x8xf32>
// CHECK-NEXT:      {{^ *}}return{{$}}
// CHECK-NEXT:    }

// CHECK-NEXT:    monarch.endpoint @hidden(%arg0: tensor<8x16xf32>) -> tensor<8x64xf32> {
// CHECK:           linalg.matmul ins(%arg0, %{{.*}} : tensor<8x16xf32>, tensor<16x16xf32>) outs(%{{.*}} : tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK:           %[[H:.*]] = linalg.generic
// CHECK:           %[[FULL:.*]] = all_gather %[[H]] over ["gpus"] axis 1 : tensor<8x16xf32> -> tensor<8x64xf32>
// CHECK-NEXT:      {{^ *}}return %[[FULL]] : tensor<8x64xf32>
// CHECK-NEXT:    }

// CHECK-NEXT:    monarch.endpoint @forward(%arg0: tensor<8x16xf32>) -> tensor<8x8xf32> {
// CHECK:           linalg.matmul ins(%arg0, %{{.*}} : tensor<8x16xf32>, tensor<16x16xf32>) outs(%{{.*}} : tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK:           %[[P:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:      %[[Y:.*]] = all_reduce %[[P]] over ["gpus"] sum : tensor<8x8xf32>
// CHECK-NEXT:      {{^ *}}return %[[Y]] : tensor<8x8xf32>
// CHECK-NEXT:    }

// CHECK-NEXT:    monarch.endpoint @forward_partial(%arg0: tensor<8x16xf32>) -> (tensor<8x8xf32> {monarch.dist = #monarch.dist<{{\[\[\], \[\]\]}} partial sum>}) {
// CHECK:           %[[PP:.*]] = linalg.matmul ins(%{{.*}}, %{{.*}} : tensor<8x16xf32>, tensor<16x8xf32>) outs(%{{.*}} : tensor<8x8xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:      {{^ *}}return %[[PP]] : tensor<8x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
// CHECK-NEXT:  monarch.actor_mesh @tp = @TPMLP on @mesh

// CHECK-LABEL: func.func @setup(%arg0: tensor<16x64xf32>, %arg1: tensor<64x8xf32>) {
// CHECK-NEXT:    %[[COLS:.*]] = shard.sharding @tp_grid split_axes = {{\[\[\], \[1\]\]}} : !shard.sharding
// CHECK-NEXT:    %[[ROWS:.*]] = shard.sharding @tp_grid split_axes = {{\[\[}}1]] : !shard.sharding
// CHECK-NEXT:    %[[W1F:.*]] = monarch.feed %arg0 to @mesh : tensor<16x64xf32>
// CHECK-NEXT:    %[[W1:.*]] = shard.shard %[[W1F]] to %[[COLS]] : tensor<16x64xf32>
// CHECK-NEXT:    %[[W2F:.*]] = monarch.feed %arg1 to @mesh : tensor<64x8xf32>
// CHECK-NEXT:    %[[W2:.*]] = shard.shard %[[W2F]] to %[[ROWS]] : tensor<64x8xf32>
// CHECK-NEXT:    monarch.broadcast @tp::@load_weights(%[[W1]], %[[W2]]) : tensor<16x64xf32>, tensor<64x8xf32>
// CHECK-NEXT:    return

// CHECK-LABEL: func.func @mlp(%arg0: tensor<8x16xf32>) -> (tensor<8x8xf32>, tensor<8x64xf32>, tensor<8x8xf32>) {
// CHECK-NEXT:    %[[X:.*]] = monarch.feed %arg0 to @mesh : tensor<8x16xf32>
// CHECK-NEXT:    %[[Y:.*]] = monarch.call @tp::@forward(%[[X]]) : (tensor<8x16xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[H:.*]] = monarch.call @tp::@hidden(%[[X]]) : (tensor<8x16xf32>) -> tensor<8x64xf32>
// CHECK-NEXT:    %[[P:.*]] = monarch.call @tp::@forward_partial(%[[X]]) : (tensor<8x16xf32>) -> tensor<8x8xf32>
// CHECK-NEXT:    %[[YR:.*]] = monarch.fetch %[[Y]] from @mesh : tensor<8x8xf32>
// CHECK-NEXT:    %[[HR:.*]] = monarch.fetch %[[H]] from @mesh : tensor<8x64xf32>
// CHECK-NEXT:    %[[PR:.*]] = monarch.fetch %[[P]] from @mesh : tensor<8x8xf32>
// CHECK-NEXT:    return %[[YR]], %[[HR]], %[[PR]] : tensor<8x8xf32>, tensor<8x64xf32>, tensor<8x8xf32>
