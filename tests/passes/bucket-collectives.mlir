// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-bucket-collectives --split-input-file | FileCheck %s
// The bucketed form verifies, and monarch-plan-transfers takes it from there.
// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-bucket-collectives --monarch-plan-transfers --monarch-verify-plan --split-input-file | FileCheck %s --check-prefix=PLAN
// bucket-bytes=0 turns it off.
// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-bucket-collectives=bucket-bytes=0 --split-input-file | FileCheck %s --check-prefix=OFF
// A bound smaller than four times a member leaves that member alone.
// RUN: monarch-opt %s --monarch-specialize-ranks --monarch-bucket-collectives=bucket-bytes=128 --split-input-file | FileCheck %s --check-prefix=SMALL

// Three gradient all_reduces of a data-parallel backward on two ranks (a
// bias of 16, a weight of 4x4, and a second bias that depends on the first
// reduced one). The first two share a bucket, reduced where the second was;
// the op that used the first result moves after the bucket; the third
// depends on the bucket, so it stays an all_reduce of its own after it.

// CHECK-LABEL: func.func private @step.worker.mesh.rank0(
// CHECK-SAME:    %[[GA:[^:]*]]: tensor<16xf32>, %[[GB:[^:]*]]: tensor<4x4xf32>
// CHECK:         %[[FB:.*]] = tensor.collapse_shape %[[GB]] {{\[\[}}0, 1]] : tensor<4x4xf32> into tensor<16xf32>
// CHECK-NEXT:    %[[CAT:.*]] = tensor.concat dim(0) %[[GA]], %[[FB]] : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32>
// CHECK-NEXT:    %[[R:.*]] = monarch.all_reduce %[[CAT]] over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<32xf32>
// CHECK-NEXT:    %[[A:.*]] = tensor.extract_slice %[[R]][0] [16] [1] : tensor<32xf32> to tensor<16xf32>
// CHECK-NEXT:    %[[B0:.*]] = tensor.extract_slice %[[R]][16] [16] [1] : tensor<32xf32> to tensor<16xf32>
// CHECK-NEXT:    %[[B:.*]] = tensor.expand_shape %[[B0]] {{\[\[}}0, 1]] output_shape [4, 4] : tensor<16xf32> into tensor<4x4xf32>
// CHECK-NEXT:    %[[D:.*]] = linalg.add ins(%[[A]], %[[A]] :
// CHECK:         %[[C:.*]] = monarch.all_reduce %[[D]] over ["gpus"] sum {plan.group = array<i64: 0, 1>} : tensor<16xf32>
// CHECK-NOT:     monarch.all_reduce
// CHECK:         return %[[A]], %[[B]], %[[C]]
// CHECK-LABEL: func.func private @step.worker.mesh.rank1(
// CHECK:         tensor.concat
// CHECK:         monarch.all_reduce %{{.*}} : tensor<32xf32>
// CHECK:         monarch.all_reduce %{{.*}} : tensor<16xf32>

// A scalar joins a bucket as a vector of one.
// CHECK-LABEL: func.func private @step.worker.mesh.rank0(%{{[^:]*}}: tensor<f32>
// CHECK:         tensor.expand_shape %{{.*}} [] output_shape [1] : tensor<f32> into tensor<1xf32>
// CHECK:         monarch.all_reduce %{{.*}} : tensor<17xf32>
// CHECK:         tensor.collapse_shape %{{.*}} [] : tensor<1xf32> into tensor<f32>

// PLAN-LABEL:  monarch.rank_program rank 0
// PLAN-COUNT-2:  monarch.collective all_reduce sum
// PLAN-NOT:      monarch.collective
// PLAN-LABEL:  monarch.rank_program rank 1

// OFF-LABEL: func.func private @step.worker.mesh.rank0(
// OFF-NOT:     tensor.concat
// OFF-COUNT-3: monarch.all_reduce

// SMALL-LABEL: func.func private @step.worker.mesh.rank0(
// SMALL-NOT:     tensor.concat
// SMALL-COUNT-3: monarch.all_reduce

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @step.mesh.0.class {
    monarch.endpoint @run(%ga: tensor<16xf32>, %gb: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>) {
      %a = all_reduce %ga over ["gpus"] sum : tensor<16xf32>
      %e = tensor.empty() : tensor<16xf32>
      %d = linalg.add ins(%a, %a : tensor<16xf32>, tensor<16xf32>) outs(%e : tensor<16xf32>) -> tensor<16xf32>
      %b = all_reduce %gb over ["gpus"] sum : tensor<4x4xf32>
      %c = all_reduce %d over ["gpus"] sum : tensor<16xf32>
      return %a, %b, %c : tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>
    }
  }
  monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
  func.func @step.worker.mesh(%arg0: tensor<16xf32>, %arg1: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>) attributes {monarch.worker_for = @mesh} {
    %0:3 = monarch.call @step.mesh.0::@run(%arg0, %arg1) : (tensor<16xf32>, tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>)
    return %0#0, %0#1, %0#2 : tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>
  }
  func.func @step(%arg0: tensor<16xf32>, %arg1: tensor<4x4xf32>) -> (tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>) {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<16xf32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<4x4xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<16xf32>
    %2 = monarch.fetch_output @step.worker.mesh output 1 : tensor<4x4xf32>
    %3 = monarch.fetch_output @step.worker.mesh output 2 : tensor<16xf32>
    monarch.await %0 : !monarch.token
    return %1, %2, %3 : tensor<16xf32>, tensor<4x4xf32>, tensor<16xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @step.mesh.0.class {
    monarch.endpoint @run(%ga: tensor<f32>, %gb: tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>) {
      %a = all_reduce %ga over ["gpus"] sum : tensor<f32>
      %b = all_reduce %gb over ["gpus"] sum : tensor<4x4xf32>
      return %a, %b : tensor<f32>, tensor<4x4xf32>
    }
  }
  monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
  func.func @step.worker.mesh(%arg0: tensor<f32>, %arg1: tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>) attributes {monarch.worker_for = @mesh} {
    %0:2 = monarch.call @step.mesh.0::@run(%arg0, %arg1) : (tensor<f32>, tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>)
    return %0#0, %0#1 : tensor<f32>, tensor<4x4xf32>
  }
  func.func @step(%arg0: tensor<f32>, %arg1: tensor<4x4xf32>) -> (tensor<f32>, tensor<4x4xf32>) {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<f32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<4x4xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<f32>
    %2 = monarch.fetch_output @step.worker.mesh output 1 : tensor<4x4xf32>
    monarch.await %0 : !monarch.token
    return %1, %2 : tensor<f32>, tensor<4x4xf32>
  }
}

// -----

// One bucket is open per key: the two reductions over "hosts" share one
// past the independent all_reduce over "gpus" between them (the order the
// partitioner leaves a 2x2 backward in, each gradient reduced where it is
// made), which stays where it was.

// CHECK-LABEL: func.func private @step.worker.mesh.rank0(
// CHECK-SAME:    %[[HA:[^:]*]]: tensor<16xf32>, %[[GT:[^:]*]]: tensor<16xf32>, %[[HB:[^:]*]]: tensor<16xf32>
// CHECK-NEXT:    %[[T:.*]] = monarch.all_reduce %[[GT]] over ["gpus"] sum
// CHECK-NEXT:    %[[CAT:.*]] = tensor.concat dim(0) %[[HA]], %[[HB]] : (tensor<16xf32>, tensor<16xf32>) -> tensor<32xf32>
// CHECK-NEXT:    monarch.all_reduce %[[CAT]] over ["hosts"] sum {plan.group = array<i64: 0, 2>} : tensor<32xf32>
// CHECK-NOT:     monarch.all_reduce
// CHECK:         return

module {
  shard.grid @grid(shape = 2x2)
  monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
  monarch.actor_class @step.mesh.0.class {
    monarch.endpoint @run(%ga: tensor<16xf32>, %gt: tensor<16xf32>, %gb: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
      %a = all_reduce %ga over ["hosts"] sum : tensor<16xf32>
      %t = all_reduce %gt over ["gpus"] sum : tensor<16xf32>
      %b = all_reduce %gb over ["hosts"] sum : tensor<16xf32>
      return %a, %t, %b : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
    }
  }
  monarch.actor_mesh @step.mesh.0 = @step.mesh.0.class on @mesh
  func.func @step.worker.mesh(%arg0: tensor<16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) attributes {monarch.worker_for = @mesh} {
    %0:3 = monarch.call @step.mesh.0::@run(%arg0, %arg1, %arg2) : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
    return %0#0, %0#1, %0#2 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  }
  func.func @step(%arg0: tensor<16xf32>, %arg1: tensor<16xf32>, %arg2: tensor<16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
    %0 = monarch.control_msg to @mesh invoke [@step.worker.mesh] : !monarch.token
    monarch.feed_input %arg0 to @step.worker.mesh input 0 : tensor<16xf32>
    monarch.feed_input %arg1 to @step.worker.mesh input 1 : tensor<16xf32>
    monarch.feed_input %arg2 to @step.worker.mesh input 2 : tensor<16xf32>
    %1 = monarch.fetch_output @step.worker.mesh output 0 : tensor<16xf32>
    %2 = monarch.fetch_output @step.worker.mesh output 1 : tensor<16xf32>
    %3 = monarch.fetch_output @step.worker.mesh output 2 : tensor<16xf32>
    monarch.await %0 : !monarch.token
    return %1, %2, %3 : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
  }
}
