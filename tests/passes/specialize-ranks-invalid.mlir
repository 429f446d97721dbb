// RUN: monarch-opt %s --monarch-specialize-ranks --split-input-file --verify-diagnostics

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


// -----

// Tensor work outside an endpoint has no rank to run on.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  func.func @step.worker.mesh() -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
    // expected-error @+1 {{'tensor.empty' op cannot be planned inside a worker program}}
    %0 = tensor.empty() : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}

// -----

// Rank queries are folded per rank only at the top of an endpoint.
module {
  shard.grid @grid(shape = 2)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.actor_class @C {
    monarch.endpoint @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      %t = arith.constant true
      // expected-error @+1 {{'scf.if' op uses actor state, rank queries or calls inside a region; planning supports them only at the top of an endpoint}}
      %y = scf.if %t -> (tensor<4xf32>) {
        %i = monarch.process_index over ["gpus"] : index
        scf.yield %x : tensor<4xf32>
      } else {
        scf.yield %x : tensor<4xf32>
      }
      monarch.return %y : tensor<4xf32>
    }
  }
  monarch.actor_mesh @a = @C on @mesh
  func.func @step.worker.mesh(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
    %y = monarch.call @a::@f(%x) : (tensor<4xf32>) -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// A value computed on one slice used on another without a channel.
module {
  shard.grid @grid(shape = 2)
  shard.grid @one(shape = 1)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.mesh_slice @s0_mesh of @mesh(gpus = 0 to 1) grid @one
  monarch.mesh_slice @s1_mesh of @mesh(gpus = 1 to 2) grid @one
  monarch.actor_class @C {
    monarch.endpoint @f(%x: tensor<4xf32>) -> tensor<4xf32> {
      monarch.return %x : tensor<4xf32>
    }
  }
  monarch.actor_mesh @a0 = @C on @s0_mesh
  monarch.actor_mesh @a1 = @C on @s1_mesh
  func.func @step.worker.mesh(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
    %y = monarch.call @a0::@f(%x) : (tensor<4xf32>) -> tensor<4xf32>
    // expected-error @+1 {{'monarch.call' op argument #0 is not available on rank 1}}
    %z = monarch.call @a1::@f(%y) : (tensor<4xf32>) -> tensor<4xf32>
    return %z : tensor<4xf32>
  }
}

// -----

// Between overlapping meshes a rank keeps what it would send itself; here
// it sends nothing.
module {
  shard.grid @grid(shape = 2)
  shard.grid @one(shape = 1)
  monarch.proc_mesh @mesh(gpus = 2) grid @grid
  monarch.mesh_slice @s0_mesh of @mesh(gpus = 0 to 1) grid @one
  monarch.channel @ch from @mesh to @s0_mesh : tensor<4xf32>
  func.func @step.worker.mesh() -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
    // expected-error @+1 {{'monarch.channel_recv' op receives from this rank, which sends nothing on the channel}}
    %0 = monarch.channel_recv @ch : tensor<4xf32>
    return %0 : tensor<4xf32>
  }
}
