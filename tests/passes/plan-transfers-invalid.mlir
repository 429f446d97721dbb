// RUN: monarch-opt %s --monarch-plan-transfers --split-input-file --verify-diagnostics
// RUN: not monarch-opt %s --split-input-file --monarch-plan-transfers="backend=mpi" 2>&1 | FileCheck %s --check-prefix=BACKEND
// BACKEND: monarch-plan-transfers: unknown backend 'mpi' (expected gloo or nccl)

// Channels between two proc meshes need one rank space for both; plans do
// not have it yet and say so at the channel.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  shard.grid @grid2(shape = 2)
  monarch.proc_mesh @other(gpus = 2) grid @grid2
  monarch.actor_class @mlp.mesh.0.class {
    monarch.endpoint @run(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32> {monarch.dist = #monarch.dist<[[], ["gpus"]]>}, %arg2: tensor<8x8xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) -> tensor<4x8xf32> {
      %c0 = arith.constant 0 : index
      %cst = arith.constant 0.000000e+00 : f32
      %0 = tensor.empty() : tensor<4x8xf32>
      %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %2 = tensor.empty() : tensor<4x8xf32>
      %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %4 = linalg.matmul ins(%arg0, %arg1 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%1 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %5 = process_index over ["gpus"] : index
      %6 = arith.cmpi eq, %5, %c0 : index
      %7 = scf.if %6 -> (tensor<4x8xf32>) {
        scf.yield %3 : tensor<4x8xf32>
      } else {
        %10 = tensor.empty() : tensor<4x8xf32>
        %11 = linalg.fill ins(%cst : f32) outs(%10 : tensor<4x8xf32>) -> tensor<4x8xf32>
        scf.yield %11 : tensor<4x8xf32>
      }
      %8 = linalg.matmul ins(%4, %arg2 : tensor<4x8xf32>, tensor<8x8xf32>) outs(%7 : tensor<4x8xf32>) -> tensor<4x8xf32>
      %9 = all_reduce %8 over ["gpus"] sum : tensor<4x8xf32>
      return %9 : tensor<4x8xf32>
    }
  }
  monarch.actor_mesh @mlp.mesh.0 = @mlp.mesh.0.class on @mesh
  monarch.actor_class @mlp.other.1.class {
    monarch.endpoint @run(%arg0: tensor<4x8xf32>) -> tensor<4x8xf32> {
      %0 = tensor.empty() : tensor<4x8xf32>
      %1 = linalg.add ins(%arg0, %arg0 : tensor<4x8xf32>, tensor<4x8xf32>) outs(%0 : tensor<4x8xf32>) -> tensor<4x8xf32>
      return %1 : tensor<4x8xf32>
    }
  }
  monarch.actor_mesh @mlp.other.1 = @mlp.other.1.class on @other
  monarch.channel @mlp.ch0 from @mesh to @other : tensor<4x8xf32>
  func.func @mlp.worker.mesh(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x8xf32>) attributes {monarch.worker_for = @mesh} {
    %0 = monarch.call @mlp.mesh.0::@run(%arg0, %arg1, %arg2) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<4x8xf32>
    // expected-error @+1 {{channel @mlp.ch0 crosses proc meshes; plans move tensors between slices of one proc mesh only for now}}
    monarch.channel_send @mlp.ch0, %0 : tensor<4x8xf32>
    return
  }
  func.func @mlp.worker.other() -> tensor<4x8xf32> attributes {monarch.worker_for = @other} {
    %0 = monarch.channel_recv @mlp.ch0 : tensor<4x8xf32>
    %1 = monarch.call @mlp.other.1::@run(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
    return %1 : tensor<4x8xf32>
  }
  func.func @mlp(%arg0: tensor<4x8xf32>, %arg1: tensor<8x16xf32>, %arg2: tensor<16x8xf32>) -> tensor<4x8xf32> {
    %0 = monarch.control_msg to @mesh invoke [@mlp.worker.mesh] : !monarch.token
    %1 = monarch.control_msg to @other invoke [@mlp.worker.other] : !monarch.token
    monarch.feed_input %arg0 to @mlp.worker.mesh input 0 : tensor<4x8xf32>
    monarch.feed_input %arg1 to @mlp.worker.mesh input 1 : tensor<8x16xf32>
    monarch.feed_input %arg2 to @mlp.worker.mesh input 2 : tensor<16x8xf32>
    %2 = monarch.fetch_output @mlp.worker.other output 0 : tensor<4x8xf32>
    monarch.await %0, %1 : !monarch.token, !monarch.token
    return %2 : tensor<4x8xf32>
  }
}

