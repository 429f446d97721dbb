// RUN: monarch-opt %s | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --mlir-print-op-generic | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --verify-roundtrip | FileCheck %s

// Round trip of the traced stage: meshes, actor classes with state and
// endpoints (with and without #monarch.dist), the collectives of endpoint
// bodies, actor meshes, calls, broadcasts, feeds, fetches and transfers.
// Inside a monarch.endpoint the ops of the monarch dialect print without the
// `monarch.` prefix (monarch is the endpoint's default dialect), so the
// checks anchor them at the start of the line.
//
// FileCheck reads `[[` as a variable, so checks of nested arrays such as
// #monarch.dist<[["gpus"], []]> spell the brackets inside a {{regex}}.

shard.grid @grid(shape = 2x4)
shard.grid @half_grid(shape = 1x2)
shard.grid @one_grid(shape = 1x1)

// CHECK-LABEL: shard.grid @grid(shape = 2x4)
// CHECK-NEXT:  shard.grid @half_grid(shape = 1x2)
// CHECK-NEXT:  shard.grid @one_grid(shape = 1x1)

//===----------------------------------------------------------------------===//
// monarch.proc_mesh, monarch.mesh_slice
//===----------------------------------------------------------------------===//

// CHECK-NEXT:  monarch.proc_mesh @mesh(hosts = 2, gpus = 4) grid @grid{{$}}
monarch.proc_mesh @mesh(hosts = 2, gpus = 4) grid @grid

// Dimension names that are not bare identifiers print quoted; names that
// are identifiers print bare even when written quoted or when they are
// keywords (`i32`, `to`). The attribute dictionary comes last.
// Left out: a name holding `"`, `\` or a non-printable character (e.g.
// "a\"b") prints unescaped as "a"b" and does not parse back (dialect bug,
// see the report).
// CHECK-NEXT:  monarch.proc_mesh @odd_mesh("data-par" = 2, i32 = 4) grid @grid{{$}}
monarch.proc_mesh @odd_mesh("data-par" = 2, i32 = 4) grid @grid
// CHECK-NEXT:  monarch.proc_mesh @kw_mesh(to = 2, gpus = 4) grid @grid {note = "extra"}{{$}}
monarch.proc_mesh @kw_mesh(to = 2, "gpus" = 4) grid @grid {note = "extra"}

// CHECK-NEXT:  monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid{{$}}
monarch.mesh_slice @s0_mesh of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half_grid
// CHECK-NEXT:  monarch.mesh_slice @s1_mesh of @mesh(hosts = 1 to 2, gpus = 2 to 4) grid @half_grid{{$}}
monarch.mesh_slice @s1_mesh of @mesh(hosts = 1 to 2, gpus = 2 to 4) grid @half_grid
// A slice of a slice.
// CHECK-NEXT:  monarch.mesh_slice @s01_mesh of @s0_mesh(hosts = 0 to 1, gpus = 1 to 2) grid @one_grid{{$}}
monarch.mesh_slice @s01_mesh of @s0_mesh(hosts = 0 to 1, gpus = 1 to 2) grid @one_grid
// CHECK-NEXT:  monarch.mesh_slice @odd_slice of @odd_mesh("data-par" = 1 to 2, i32 = 0 to 2) grid @half_grid{{$}}
monarch.mesh_slice @odd_slice of @odd_mesh("data-par" = 1 to 2, i32 = 0 to 2) grid @half_grid

//===----------------------------------------------------------------------===//
// monarch.actor_class, monarch.state, monarch.endpoint, monarch.return,
// monarch.state_get, monarch.state_set, #monarch.dist and the collectives
//===----------------------------------------------------------------------===//

// CHECK-LABEL: monarch.actor_class @Worker {
// CHECK-NEXT:    monarch.state @w : tensor<4x4xf32>{{$}}
// CHECK-NEXT:    monarch.state @step : i64{{$}}
// CHECK-NEXT:    monarch.state @scale : f32 {tag = 1 : i64}{{$}}
monarch.actor_class @Worker {
  monarch.state @w : tensor<4x4xf32>
  monarch.state @step : i64
  monarch.state @scale : f32 {tag = 1 : i64}

  // An endpoint without #monarch.dist, reading and writing state, with
  // every reduction kind of monarch.all_reduce.
  // CHECK-NEXT:    monarch.endpoint @reduce_all(%arg0: tensor<4x4xf32>, %arg1: f32) -> tensor<4x4xf32> {
  // CHECK-NEXT:      %0 = state_get @w : tensor<4x4xf32>
  // CHECK-NEXT:      %1 = all_reduce %arg0 over ["gpus"] sum : tensor<4x4xf32>
  // CHECK-NEXT:      %2 = all_reduce %1 over ["gpus"] prod : tensor<4x4xf32>
  // CHECK-NEXT:      %3 = all_reduce %2 over ["gpus"] max : tensor<4x4xf32>
  // CHECK-NEXT:      %4 = all_reduce %3 over ["gpus"] min : tensor<4x4xf32>
  // CHECK-NEXT:      %5 = all_reduce %4 over ["hosts", "gpus"] avg : tensor<4x4xf32>
  // CHECK-NEXT:      {{^ *}}state_set @w = %5 : tensor<4x4xf32>
  // CHECK-NEXT:      %6 = state_get @scale : f32
  // CHECK-NEXT:      {{^ *}}state_set @scale = %arg1 : f32
  // CHECK-NEXT:      {{^ *}}return %0 : tensor<4x4xf32>
  // CHECK-NEXT:    }
  monarch.endpoint @reduce_all(%g: tensor<4x4xf32>, %s: f32) -> tensor<4x4xf32> {
    %w = monarch.state_get @w : tensor<4x4xf32>
    %a = monarch.all_reduce %g over ["gpus"] sum : tensor<4x4xf32>
    %b = monarch.all_reduce %a over ["gpus"] prod : tensor<4x4xf32>
    %c = monarch.all_reduce %b over ["gpus"] max : tensor<4x4xf32>
    %d = monarch.all_reduce %c over ["gpus"] min : tensor<4x4xf32>
    %e = monarch.all_reduce %d over ["hosts", "gpus"] avg : tensor<4x4xf32>
    monarch.state_set @w = %e : tensor<4x4xf32>
    %old = monarch.state_get @scale : f32
    monarch.state_set @scale = %s : f32
    monarch.return %w : tensor<4x4xf32>
  }

  // #monarch.dist on arguments and results (split, multi-dimension split,
  // partial), with all_gather, reduce_scatter and broadcast_from.
  // CHECK-NEXT:    monarch.endpoint @shards(%arg0: tensor<2x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, %arg1: tensor<1x4xf32> {monarch.dist = #monarch.dist<{{\[\["hosts", "gpus"\], \[\]\]}}>}, %arg2: tensor<4x4xf32>, %arg3: tensor<1x1xf32> {monarch.dist = #monarch.dist<{{\[\["hosts"\], \["gpus"\]\]}}>}) -> (tensor<8x4xf32>, tensor<2x4xf32> {monarch.dist = #monarch.dist<{{\[\["gpus"\], \[\]\]}}>}, tensor<4x4xf32> {monarch.dist = #monarch.dist<{{\[\[\], \[\]\]}} partial sum>}, tensor<4x4xf32> {monarch.dist = #monarch.dist<{{\[\[\], \[\]\]}} partial max>}) {
  // CHECK-NEXT:      %0 = all_gather %arg0 over ["gpus"] axis 0 : tensor<2x4xf32> -> tensor<8x4xf32>
  // CHECK-NEXT:      %1 = reduce_scatter %0 over ["gpus"] axis 0 sum : tensor<8x4xf32> -> tensor<2x4xf32>
  // CHECK-NEXT:      %2 = reduce_scatter %arg2 over ["hosts"] axis 1 avg : tensor<4x4xf32> -> tensor<4x2xf32>
  // CHECK-NEXT:      %3 = all_gather %2 over ["hosts"] axis 1 : tensor<4x2xf32> -> tensor<4x4xf32>
  // CHECK-NEXT:      %4 = broadcast_from %arg2 over ["gpus"] root 3 : tensor<4x4xf32>
  // CHECK-NEXT:      %5 = broadcast_from %4 over ["hosts", "gpus"] root 7 : tensor<4x4xf32>
  // CHECK-NEXT:      {{^ *}}return %0, %1, %3, %5 : tensor<8x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  // CHECK-NEXT:    }
  monarch.endpoint @shards(
      %x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>},
      %y: tensor<1x4xf32> {monarch.dist = #monarch.dist<[["hosts", "gpus"], []]>},
      %z: tensor<4x4xf32>,
      %u: tensor<1x1xf32> {monarch.dist = #monarch.dist<[["hosts"], ["gpus"]]>})
      -> (tensor<8x4xf32>,
          tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>},
          tensor<4x4xf32> {monarch.dist = #monarch.dist<[[], []] partial sum>},
          tensor<4x4xf32> {monarch.dist = #monarch.dist<[[], []] partial max>}) {
    %full = monarch.all_gather %x over ["gpus"] axis 0 : tensor<2x4xf32> -> tensor<8x4xf32>
    %part = monarch.reduce_scatter %full over ["gpus"] axis 0 sum : tensor<8x4xf32> -> tensor<2x4xf32>
    %cols = monarch.reduce_scatter %z over ["hosts"] axis 1 avg : tensor<4x4xf32> -> tensor<4x2xf32>
    %back = monarch.all_gather %cols over ["hosts"] axis 1 : tensor<4x2xf32> -> tensor<4x4xf32>
    %b1 = monarch.broadcast_from %z over ["gpus"] root 3 : tensor<4x4xf32>
    %b2 = monarch.broadcast_from %b1 over ["hosts", "gpus"] root 7 : tensor<4x4xf32>
    monarch.return %full, %part, %back, %b2 : tensor<8x4xf32>, tensor<2x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>
  }

  // all_to_all moving a split from dimension 0 to 1, and keeping the shape.
  // CHECK-NEXT:    monarch.endpoint @exchange(%arg0: tensor<2x8xf32>) -> (tensor<8x2xf32>, tensor<8x2xf32>) {
  // CHECK-NEXT:      %0 = all_to_all %arg0 over ["gpus"] split 1 concat 0 : tensor<2x8xf32> -> tensor<8x2xf32>
  // CHECK-NEXT:      %1 = all_to_all %0 over ["gpus"] split 0 concat 0 : tensor<8x2xf32> -> tensor<8x2xf32>
  // CHECK-NEXT:      {{^ *}}return %0, %1 : tensor<8x2xf32>, tensor<8x2xf32>
  // CHECK-NEXT:    }
  monarch.endpoint @exchange(%x: tensor<2x8xf32>) -> (tensor<8x2xf32>, tensor<8x2xf32>) {
    %y = monarch.all_to_all %x over ["gpus"] split 1 concat 0 : tensor<2x8xf32> -> tensor<8x2xf32>
    %z = monarch.all_to_all %y over ["gpus"] split 0 concat 0 : tensor<8x2xf32> -> tensor<8x2xf32>
    monarch.return %y, %z : tensor<8x2xf32>, tensor<8x2xf32>
  }

  // An endpoint with no arguments and no results.
  // CHECK-NEXT:    monarch.endpoint @noop() {
  // CHECK-NEXT:      {{^ *}}return{{$}}
  // CHECK-NEXT:    }
  // CHECK-NEXT:  }
  monarch.endpoint @noop() {
    monarch.return
  }
}

// Upstream ops inside an endpoint keep their dialect prefix.
// CHECK-LABEL: monarch.actor_class @Stage {
// CHECK-NEXT:    monarch.state @w : tensor<4x4xf32>
// CHECK-NEXT:    monarch.endpoint @forward(%arg0: tensor<8x4xf32>) -> tensor<8x4xf32> {
// CHECK-NEXT:      %0 = state_get @w : tensor<4x4xf32>
// CHECK-NEXT:      %1 = tensor.empty() : tensor<8x4xf32>
// CHECK-NEXT:      %cst = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:      %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:      %3 = linalg.matmul ins(%arg0, %0 : tensor<8x4xf32>, tensor<4x4xf32>) outs(%2 : tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:      {{^ *}}return %3 : tensor<8x4xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:  }
monarch.actor_class @Stage {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @forward(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
    %w = monarch.state_get @w : tensor<4x4xf32>
    %init = tensor.empty() : tensor<8x4xf32>
    %zero = arith.constant 0.0 : f32
    %acc = linalg.fill ins(%zero : f32) outs(%init : tensor<8x4xf32>) -> tensor<8x4xf32>
    %y = linalg.matmul ins(%x, %w : tensor<8x4xf32>, tensor<4x4xf32>) outs(%acc : tensor<8x4xf32>) -> tensor<8x4xf32>
    monarch.return %y : tensor<8x4xf32>
  }
}

//===----------------------------------------------------------------------===//
// monarch.actor_mesh
//===----------------------------------------------------------------------===//

// CHECK-NEXT:  monarch.actor_mesh @workers = @Worker on @mesh{{$}}
// CHECK-NEXT:  monarch.actor_mesh @s0 = @Stage on @s0_mesh{{$}}
// CHECK-NEXT:  monarch.actor_mesh @s1 = @Stage on @s1_mesh {note}{{$}}
// CHECK-NEXT:  monarch.actor_mesh @s01 = @Stage on @s01_mesh{{$}}
monarch.actor_mesh @workers = @Worker on @mesh
monarch.actor_mesh @s0 = @Stage on @s0_mesh
monarch.actor_mesh @s1 = @Stage on @s1_mesh {note}
monarch.actor_mesh @s01 = @Stage on @s01_mesh

//===----------------------------------------------------------------------===//
// monarch.feed, monarch.call, monarch.broadcast, monarch.transfer,
// monarch.fetch (global types in the controller)
//===----------------------------------------------------------------------===//

// CHECK-LABEL: func.func @controller(%arg0: tensor<8x4xf32>, %arg1: tensor<4x4xf32>, %arg2: f32, %arg3: tensor<2x4xf32>) -> (tensor<8x4xf32>, tensor<4x4xf32>) {
// CHECK-NEXT:    %0 = monarch.feed %arg0 to @mesh : tensor<8x4xf32>
// CHECK-NEXT:    %1 = monarch.feed %arg1 to @mesh : tensor<4x4xf32>
// CHECK-NEXT:    %2 = monarch.feed %arg3 to @mesh : tensor<2x4xf32>
// CHECK-NEXT:    %3 = monarch.call @workers::@reduce_all(%1, %arg2) : (tensor<4x4xf32>, f32) -> tensor<4x4xf32>
// CHECK-NEXT:    %4:4 = monarch.call @workers::@shards(%0, %0, %1, %2) {note} : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>) -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
// CHECK-NEXT:    monarch.call @workers::@noop() : () -> (){{$}}
// CHECK-NEXT:    monarch.broadcast @workers::@reduce_all(%1, %arg2) : tensor<4x4xf32>, f32{{$}}
// CHECK-NEXT:    monarch.broadcast @workers::@noop(){{$}}
// CHECK-NEXT:    monarch.broadcast @workers::@noop() {note}{{$}}
// CHECK-NEXT:    %5 = monarch.feed %arg0 to @s0_mesh : tensor<8x4xf32>
// CHECK-NEXT:    %6 = monarch.call @s0::@forward(%5) : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %7 = monarch.transfer %6 from @s0_mesh to @s1_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %8 = monarch.call @s1::@forward(%7) : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %9 = monarch.transfer %8 from @s1_mesh to @mesh {note} : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %10 = monarch.transfer %9 from @mesh to @s01_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
// CHECK-NEXT:    %11 = monarch.call @s01::@forward(%10) : (tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK-NEXT:    %12 = monarch.fetch %11 from @s01_mesh : tensor<8x4xf32>
// CHECK-NEXT:    %13 = monarch.fetch %4#2 from @mesh {note} : tensor<4x4xf32>
// CHECK-NEXT:    return %12, %13 : tensor<8x4xf32>, tensor<4x4xf32>
// CHECK-NEXT:  }
func.func @controller(%x: tensor<8x4xf32>, %w: tensor<4x4xf32>, %lr: f32, %u: tensor<2x4xf32>)
    -> (tensor<8x4xf32>, tensor<4x4xf32>) {
  %xm = monarch.feed %x to @mesh : tensor<8x4xf32>
  %wm = monarch.feed %w to @mesh : tensor<4x4xf32>
  %um = monarch.feed %u to @mesh : tensor<2x4xf32>
  %r = monarch.call @workers::@reduce_all(%wm, %lr) : (tensor<4x4xf32>, f32) -> tensor<4x4xf32>
  // Global 8x4 split over gpus (4) and over hosts x gpus (8); 2x4 split 2x4.
  %s:4 = monarch.call @workers::@shards(%xm, %xm, %wm, %um) {note}
      : (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<2x4xf32>)
      -> (tensor<8x4xf32>, tensor<8x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>)
  monarch.call @workers::@noop() : () -> ()
  monarch.broadcast @workers::@reduce_all(%wm, %lr) : tensor<4x4xf32>, f32
  monarch.broadcast @workers::@noop()
  monarch.broadcast @workers::@noop() {note}
  %a = monarch.feed %x to @s0_mesh : tensor<8x4xf32>
  %h = monarch.call @s0::@forward(%a) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %h1 = monarch.transfer %h from @s0_mesh to @s1_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
  %y = monarch.call @s1::@forward(%h1) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %y1 = monarch.transfer %y from @s1_mesh to @mesh {note} : tensor<8x4xf32> -> tensor<8x4xf32>
  %y2 = monarch.transfer %y1 from @mesh to @s01_mesh : tensor<8x4xf32> -> tensor<8x4xf32>
  %z = monarch.call @s01::@forward(%y2) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %out = monarch.fetch %z from @s01_mesh : tensor<8x4xf32>
  %p = monarch.fetch %s#2 from @mesh {note} : tensor<4x4xf32>
  return %out, %p : tensor<8x4xf32>, tensor<4x4xf32>
}

// Feeds and fetches of scalars and of sharded values (shard.shard on the
// mesh's grid).
// CHECK-LABEL: func.func @scalars_and_shards(%arg0: f32, %arg1: tensor<8x4xf32>) -> (f32, tensor<8x4xf32>) {
// CHECK-NEXT:    %0 = monarch.feed %arg0 to @mesh : f32
// CHECK-NEXT:    %1 = monarch.fetch %0 from @mesh : f32
// CHECK-NEXT:    %sharding = shard.sharding @grid split_axes = {{\[\[}}1]] : !shard.sharding
// CHECK-NEXT:    %2 = monarch.feed %arg1 to @mesh : tensor<8x4xf32>
// CHECK-NEXT:    %sharding_annotated = shard.shard %2 to %sharding : tensor<8x4xf32>
// CHECK-NEXT:    %3 = monarch.fetch %sharding_annotated from @mesh : tensor<8x4xf32>
// CHECK-NEXT:    return %1, %3 : f32, tensor<8x4xf32>
// CHECK-NEXT:  }
// CHECK-NEXT:  }
func.func @scalars_and_shards(%s: f32, %x: tensor<8x4xf32>) -> (f32, tensor<8x4xf32>) {
  %sm = monarch.feed %s to @mesh : f32
  %sr = monarch.fetch %sm from @mesh : f32
  %rows = shard.sharding @grid split_axes = [[1]] : !shard.sharding
  %xm = monarch.feed %x to @mesh : tensor<8x4xf32>
  %xs = shard.shard %xm to %rows : tensor<8x4xf32>
  %xr = monarch.fetch %xs from @mesh : tensor<8x4xf32>
  return %sr, %xr : f32, tensor<8x4xf32>
}
