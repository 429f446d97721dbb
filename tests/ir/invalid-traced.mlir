// RUN: monarch-opt %s --split-input-file --verify-diagnostics
//
// Verifier diagnostics of the traced stage: actor classes, state, endpoints,
// collectives inside endpoints, actor meshes, calls, feeds, fetches and
// transfers.

monarch.actor_class @A {
  // expected-error @+1 {{'func.func' op is not allowed in a monarch.actor_class; only monarch.state and monarch.endpoint are}}
  func.func @helper() {
    return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{'arith.constant' op is not allowed in a monarch.actor_class}}
  %c = arith.constant 0 : i32
}

// -----

// expected-error @+1 {{'monarch.state' op expects parent op 'monarch.actor_class'}}
monarch.state @w : tensor<4x4xf32>

// -----

monarch.actor_class @A {
  // expected-error @+1 {{state must have a static shape, got 'tensor<?x4xf32>'}}
  monarch.state @w : tensor<?x4xf32>
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{dist #monarch.dist<[["gpus"]]> has 1 entries for a state of rank 2}}
  monarch.state @w : tensor<4x4xf32> dist #monarch.dist<[["gpus"]]>
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{state cannot be a partial sum}}
  monarch.state @w : tensor<4xf32> dist #monarch.dist<[[]] partial sum>
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{a scalar state cannot be split}}
  monarch.state @n : i64 dist #monarch.dist<[]>
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{state must be a statically shaped tensor or a scalar, got 'index'}}
  monarch.state @step : index
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{state must be a statically shaped tensor or a scalar, got 'memref<4xf32>'}}
  monarch.state @buf : memref<4xf32>
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{state must be a statically shaped tensor or a scalar, got 'tensor<*xf32>'}}
  monarch.state @w : tensor<*xf32>
}

// -----

monarch.actor_class @A {
  monarch.state @w : tensor<4xf32>
  // expected-note @-1 {{see existing symbol definition here}}
  // expected-error @+1 {{redefinition of symbol named 'w'}}
  monarch.endpoint @w() {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{'monarch.endpoint' op must have a body}}
  monarch.endpoint @f(%x: tensor<4xf32>)
}

// -----

// expected-error @+1 {{'monarch.endpoint' op expects parent op 'monarch.actor_class'}}
monarch.endpoint @f() {
  monarch.return
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    // expected-error @+1 {{returns 0 values but endpoint @f declares 1}}
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) {
    // expected-error @+1 {{returns 1 values but endpoint @f declares 0}}
    monarch.return %x : tensor<8xf32>
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4xf32>, %y: tensor<8xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
    // expected-error @+1 {{value #1 has type 'tensor<8xf32>' but endpoint @f returns 'tensor<4xf32>'}}
    monarch.return %x, %y : tensor<4xf32>, tensor<8xf32>
  }
}

// -----

func.func @f(%x: tensor<4xf32>) {
  // expected-error @+1 {{'monarch.return' op expects parent op 'monarch.endpoint'}}
  monarch.return %x : tensor<4xf32>
}

// -----

func.func @f() -> tensor<4xf32> {
  // expected-error @+1 {{'monarch.state_get' op must be inside a monarch.endpoint}}
  %w = monarch.state_get @w : tensor<4xf32>
  return %w : tensor<4xf32>
}

// -----

func.func @f(%w: tensor<4xf32>) {
  // expected-error @+1 {{'monarch.state_set' op must be inside a monarch.endpoint}}
  monarch.state_set @w = %w : tensor<4xf32>
  return
}

// -----

monarch.actor_class @A {
  monarch.state @w : tensor<4xf32>
  monarch.endpoint @f() {
    // expected-error @+1 {{actor class @A has no state @v}}
    %v = monarch.state_get @v : tensor<4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @g() {
    monarch.return
  }
  monarch.endpoint @f(%x: tensor<4xf32>) {
    // An endpoint is not state.
    // expected-error @+1 {{actor class @A has no state @g}}
    monarch.state_set @g = %x : tensor<4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @f() {
    // expected-error @+1 {{type 'tensor<4x8xf32>' does not match state @w of type 'tensor<4x4xf32>'}}
    %w = monarch.state_get @w : tensor<4x8xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.state @w : tensor<4x4xf32>
  monarch.endpoint @f(%x: tensor<4x4xf16>) {
    // expected-error @+1 {{type 'tensor<4x4xf16>' does not match state @w of type 'tensor<4x4xf32>'}}
    monarch.state_set @w = %x : tensor<4x4xf16>
    monarch.return
  }
}

// -----

//===----------------------------------------------------------------------===//
// Collectives inside endpoints (checks that need only the op).
//===----------------------------------------------------------------------===//

func.func @f(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'monarch.all_reduce' op names actor mesh dimensions and must be inside a monarch.endpoint}}
  %r = monarch.all_reduce %g over ["gpus"] sum : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @f(%g: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'monarch.broadcast_from' op names actor mesh dimensions and must be inside a monarch.endpoint}}
  %r = monarch.broadcast_from %g over ["gpus"] root 0 : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @f(%g: tensor<2xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'monarch.all_gather' op names actor mesh dimensions and must be inside a monarch.endpoint}}
  %r = monarch.all_gather %g over ["gpus"] axis 0 : tensor<2xf32> -> tensor<8xf32>
  return %r : tensor<8xf32>
}

// -----

func.func @f(%g: tensor<8xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'monarch.reduce_scatter' op names actor mesh dimensions and must be inside a monarch.endpoint}}
  %r = monarch.reduce_scatter %g over ["gpus"] axis 0 sum : tensor<8xf32> -> tensor<2xf32>
  return %r : tensor<2xf32>
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // expected-error @+1 {{'monarch.all_reduce' op must name at least one mesh dimension}}
    %r = monarch.all_reduce %g over [] sum : tensor<4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // expected-error @+1 {{'monarch.broadcast_from' op must name at least one mesh dimension}}
    %r = monarch.broadcast_from %g over [] root 0 : tensor<4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // expected-error @+1 {{'monarch.all_reduce' op duplicate mesh dimension "gpus"}}
    %r = monarch.all_reduce %g over ["gpus", "hosts", "gpus"] max : tensor<4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<2xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op mesh dimension names must be non-empty}}
    %r = monarch.all_gather %g over [""] axis 0 : tensor<2xf32> -> tensor<8xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: f32) {
    // expected-error @+1 {{'monarch.all_reduce' op operand #0 must be ranked tensor of any type values, but got 'f32'}}
    %r = "monarch.all_reduce"(%g) <{dims = ["gpus"], reduction = 0 : i32}> : (f32) -> f32
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // expected-error @+1 {{expected string or keyword containing one of the following enum values for attribute 'reduction' [sum, prod, max, min, avg]}}
    %r = monarch.all_reduce %g over ["gpus"] mean : tensor<4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<2x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op element types differ: 'f32' vs 'f16'}}
    %r = monarch.all_gather %g over ["gpus"] axis 0 : tensor<2x4xf32> -> tensor<8x4xf16>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<2x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op operand and result ranks differ}}
    %r = monarch.all_gather %g over ["gpus"] axis 0 : tensor<2x4xf32> -> tensor<32xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<2x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op axis 2 is out of range for rank 2}}
    %r = monarch.all_gather %g over ["gpus"] axis 2 : tensor<2x4xf32> -> tensor<2x4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<2x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op attribute 'axis' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    %r = monarch.all_gather %g over ["gpus"] axis -1 : tensor<2x4xf32> -> tensor<8x4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<2x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op dimension 1 must be equal on both sides, got 4 and 8}}
    %r = monarch.all_gather %g over ["gpus"] axis 0 : tensor<2x4xf32> -> tensor<8x8xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op axis 0 of size 6 is not a multiple of 4}}
    %r = monarch.all_gather %g over ["gpus"] axis 0 : tensor<4x4xf32> -> tensor<6x4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<8x4xf32>) {
    // A "gather" that shrinks.
    // expected-error @+1 {{'monarch.all_gather' op axis 0 of size 2 is not a multiple of 8}}
    %r = monarch.all_gather %g over ["gpus"] axis 0 : tensor<8x4xf32> -> tensor<2x4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<8x4xf32>) {
    // expected-error @+1 {{'monarch.reduce_scatter' op element types differ: 'i32' vs 'f32'}}
    %r = monarch.reduce_scatter %g over ["gpus"] axis 0 sum : tensor<8x4xf32> -> tensor<2x4xi32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<8x4xf32>) {
    // expected-error @+1 {{'monarch.reduce_scatter' op operand and result ranks differ}}
    %r = monarch.reduce_scatter %g over ["gpus"] axis 0 sum : tensor<8x4xf32> -> tensor<2x4x1xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<8x4xf32>) {
    // expected-error @+1 {{'monarch.reduce_scatter' op axis 5 is out of range for rank 2}}
    %r = monarch.reduce_scatter %g over ["gpus"] axis 5 sum : tensor<8x4xf32> -> tensor<2x4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<8x4xf32>) {
    // expected-error @+1 {{'monarch.reduce_scatter' op dimension 0 must be equal on both sides, got 2 and 8}}
    %r = monarch.reduce_scatter %g over ["gpus"] axis 1 sum : tensor<8x4xf32> -> tensor<2x1xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<8x4xf32>) {
    // expected-error @+1 {{'monarch.reduce_scatter' op axis 0 of size 8 is not a multiple of 3}}
    %r = monarch.reduce_scatter %g over ["gpus"] axis 0 sum : tensor<8x4xf32> -> tensor<3x4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // expected-error @+1 {{'monarch.broadcast_from' op attribute 'root' failed to satisfy constraint: 64-bit signless integer attribute whose value is non-negative}}
    %r = monarch.broadcast_from %g over ["gpus"] root -1 : tensor<4xf32>
    monarch.return
  }
}

// -----

//===----------------------------------------------------------------------===//
// monarch.actor_mesh, and collectives checked against the spawning mesh.
//===----------------------------------------------------------------------===//

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
// expected-error @+1 {{'monarch.actor_mesh' op @Missing does not name a monarch.actor_class}}
monarch.actor_mesh @a = @Missing on @m

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
// A symbol that is not an actor class.
// expected-error @+1 {{'monarch.actor_mesh' op @m does not name a monarch.actor_class}}
monarch.actor_mesh @a = @m on @m

// -----

monarch.actor_class @A {
}
// expected-error @+1 {{'monarch.actor_mesh' op @nomesh does not name a monarch.proc_mesh or monarch.mesh_slice}}
monarch.actor_mesh @a = @A on @nomesh

// -----

monarch.actor_class @A {
}
// An actor mesh is not a proc mesh.
monarch.actor_mesh @b = @A on @b
// expected-error @-1 {{'monarch.actor_mesh' op @b does not name a monarch.proc_mesh or monarch.mesh_slice}}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // expected-error @+1 {{'monarch.all_reduce' op names mesh dimension "cpus" but actor mesh @a is spawned on @m which has dimensions [hosts, gpus]}}
    %r = monarch.all_reduce %g over ["cpus"] sum : tensor<4xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

shard.grid @g(shape = 2x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // Nested regions of an endpoint are checked as well.
    scf.execute_region {
      // expected-error @+1 {{'monarch.broadcast_from' op names mesh dimension "x" but actor mesh @a is spawned on @s which has dimensions [hosts, gpus]}}
      %r = monarch.broadcast_from %g over ["x"] root 0 : tensor<4xf32>
      scf.yield
    }
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @s

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<2xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op names mesh dimension "tp" but actor mesh @a is spawned on @m}}
    %r = monarch.all_gather %g over ["tp"] axis 0 : tensor<2xf32> -> tensor<8xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<8xf32>) {
    // expected-error @+1 {{'monarch.reduce_scatter' op names mesh dimension "tp" but actor mesh @a is spawned on @m}}
    %r = monarch.reduce_scatter %g over ["tp"] axis 0 sum : tensor<8xf32> -> tensor<2xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // expected-error @+1 {{'monarch.broadcast_from' op root 4 is outside the 4 ranks of the group on @a}}
    %r = monarch.broadcast_from %g over ["gpus"] root 4 : tensor<4xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%g: tensor<4xf32>) {
    // The group spans both dimensions: 2 * 4 = 8 ranks.
    // expected-error @+1 {{'monarch.broadcast_from' op root 8 is outside the 8 ranks of the group on @a}}
    %r = monarch.broadcast_from %g over ["hosts", "gpus"] root 8 : tensor<4xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
// A gather by 2 over "gpus": right on the 2-gpu slice @s, wrong on the
// 4-gpu mesh @m.
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op axis 0 of the full tensor must be 4 (the group size on @whole) times 2, got 4}}
    %y = monarch.all_gather %x over ["gpus"] axis 0 : tensor<2x4xf32> -> tensor<4x4xf32>
    monarch.return
  }
}
monarch.actor_mesh @on_slice = @A on @s
monarch.actor_mesh @whole = @A on @m

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4x8xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op axis 1 of the full tensor must be 8 (the group size on @a) times 8, got 16}}
    %y = monarch.all_gather %x over ["hosts", "gpus"] axis 1 : tensor<4x8xf32> -> tensor<4x16xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8x4xf32>) {
    // For reduce_scatter the result is the small side: 2 * 2 != 8.
    // expected-error @+1 {{'monarch.reduce_scatter' op axis 0 of the full tensor must be 2 (the group size on @a) times 2, got 8}}
    %y = monarch.reduce_scatter %x over ["hosts"] axis 0 sum : tensor<8x4xf32> -> tensor<2x4xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

// Gathered and scattered axes must be static.
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<?x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op axis 0 must have a static size}}
    %y = monarch.all_gather %x over ["gpus"] axis 0 : tensor<?x4xf32> -> tensor<?x4xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<0x4xf32>) {
    // expected-error @+1 {{'monarch.all_gather' op axis 0 of the per-rank tensor must have a positive size}}
    %y = monarch.all_gather %x over ["gpus"] axis 0 : tensor<0x4xf32> -> tensor<0x4xf32>
    monarch.return
  }
}

// -----

//===----------------------------------------------------------------------===//
// monarch.call and monarch.broadcast
//===----------------------------------------------------------------------===//

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    monarch.return %x : tensor<8xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'monarch.call' op callee @a must have the form @actor_mesh::@endpoint}}
  %y = monarch.call @a(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op callee @a::@A::@f must have the form @actor_mesh::@endpoint}}
  monarch.broadcast @a::@A::@f(%x) : tensor<8xf32>
  return
}

// -----

func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'monarch.call' op @nope does not name a monarch.actor_mesh}}
  %y = monarch.call @nope::@f(%x) : (tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) {
    monarch.return
  }
}
func.func @main(%x: tensor<8xf32>) {
  // Calling through the class instead of an actor mesh.
  // expected-error @+1 {{'monarch.broadcast' op @A does not name a monarch.actor_mesh}}
  monarch.broadcast @A::@f(%x) : tensor<8xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
// Invocations are code: one at module level is rejected before any symbol
// is resolved.
// expected-error @+1 {{'monarch.broadcast' op must be inside a function or endpoint body}}
monarch.broadcast @a::@f()
monarch.actor_mesh @a = @Missing on @m

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.state @w : tensor<8xf32>
  monarch.endpoint @f(%x: tensor<8xf32>) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op actor class @A has no endpoint @g}}
  monarch.broadcast @a::@g(%x) : tensor<8xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.state @w : tensor<8xf32>
}
monarch.actor_mesh @a = @A on @m
func.func @main() -> tensor<8xf32> {
  // State is not an endpoint.
  // expected-error @+1 {{'monarch.call' op actor class @A has no endpoint @w}}
  %w = monarch.call @a::@w() : () -> tensor<8xf32>
  return %w : tensor<8xf32>
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f() {
    monarch.return
  }
}
// The actor mesh itself reports the mesh it cannot find.
// expected-error @+1 {{'monarch.actor_mesh' op @nomesh does not name a monarch.proc_mesh or monarch.mesh_slice}}
monarch.actor_mesh @a = @A on @nomesh

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    monarch.return %x : tensor<8xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'monarch.call' op passes 2 arguments but endpoint @f takes 1}}
  %y = monarch.call @a::@f(%x, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>, %lr: f32) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op passes 1 arguments but endpoint @f takes 2}}
  monarch.broadcast @a::@f(%x) : tensor<8xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>, %lr: f32) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>, %lr: f64) {
  // expected-error @+1 {{'monarch.broadcast' op argument #1 has type 'f64' but endpoint @f expects 'f32'}}
  monarch.broadcast @a::@f(%x, %lr) : tensor<8xf32>, f64
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  // An all-empty split is replicated: per-rank and global types are equal.
  monarch.endpoint @f(%x: tensor<8x4xf32> {monarch.dist = #monarch.dist<[[], []]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<2x4xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op argument #0 has type 'tensor<2x4xf32>' but endpoint @f expects 'tensor<8x4xf32>'}}
  monarch.broadcast @a::@f(%x) : tensor<2x4xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []] partial sum>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op argument #0 of endpoint @f cannot be partial}}
  monarch.broadcast @a::@f(%x) : tensor<8x4xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8x4xf16>) {
  // expected-error @+1 {{'monarch.broadcast' op argument #0 of type 'tensor<8x4xf16>' cannot be distributed to endpoint @f type 'tensor<2x4xf32>'}}
  monarch.broadcast @a::@f(%x) : tensor<8x4xf16>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<32xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op argument #0 of type 'tensor<32xf32>' cannot be distributed to endpoint @f type 'tensor<2x4xf32>'}}
  monarch.broadcast @a::@f(%x) : tensor<32xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2xf32> {monarch.dist = #monarch.dist<[["gpus"]]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: f32) {
  // expected-error @+1 {{'monarch.broadcast' op argument #0 of type 'f32' cannot be distributed to endpoint @f type 'tensor<2xf32>'}}
  monarch.broadcast @a::@f(%x) : f32
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["tp"], []]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8x4xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op argument #0: mesh has no dimension "tp"}}
  monarch.broadcast @a::@f(%x) : tensor<8x4xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<6x4xf32>) {
  // #monarch.dist splitting that is not divisible.
  // expected-error @+1 {{'monarch.broadcast' op argument #0: tensor dimension 0 of size 6 is not divisible by 4 ranks}}
  monarch.broadcast @a::@f(%x) : tensor<6x4xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4x1xf32> {monarch.dist = #monarch.dist<[[], ["hosts", "gpus"]]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<4x12xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op argument #0: tensor dimension 1 of size 12 is not divisible by 8 ranks}}
  monarch.broadcast @a::@f(%x) : tensor<4x12xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<4x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) -> tensor<4x4xf32> {
    monarch.return %x : tensor<4x4xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8x4xf32>) -> tensor<4x4xf32> {
  // Per-rank shape mismatch: 8 rows over 4 gpus are 2 per rank, not 4.
  // expected-error @+1 {{'monarch.call' op argument #0 of type 'tensor<8x4xf32>' is split by #monarch.dist<[["gpus"], []]> into per-rank 'tensor<2x4xf32>' but endpoint @f expects 'tensor<4x4xf32>'}}
  %y = monarch.call @a::@f(%x) : (tensor<8x4xf32>) -> tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

shard.grid @g(shape = 2x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.mesh_slice @s of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @s
func.func @main(%x: tensor<8x4xf32>) {
  // The split uses the actor mesh's (slice's) shape: 2 gpus, not 4.
  // expected-error @+1 {{into per-rank 'tensor<4x4xf32>' but endpoint @f expects 'tensor<2x4xf32>'}}
  monarch.broadcast @a::@f(%x) : tensor<8x4xf32>
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    monarch.return %x : tensor<8xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) {
  // expected-error @+1 {{'monarch.call' op expects 2 results but endpoint @f returns 1}}
  %y:2 = monarch.call @a::@f(%x) : (tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>)
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    monarch.return %x : tensor<8xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) {
  // expected-error @+1 {{'monarch.call' op expects 0 results but endpoint @f returns 1}}
  monarch.call @a::@f(%x) : (tensor<8xf32>) -> ()
  return
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) -> tensor<8xf32> {
    monarch.return %x : tensor<8xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) -> tensor<8xi32> {
  // expected-error @+1 {{'monarch.call' op result #0 has type 'tensor<8xi32>' but endpoint @f expects 'tensor<8xf32>'}}
  %y = monarch.call @a::@f(%x) : (tensor<8xf32>) -> tensor<8xi32>
  return %y : tensor<8xi32>
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  // A partial result is not split: its global type is the per-rank type.
  monarch.endpoint @f(%x: tensor<8xf32>) -> (tensor<8xf32> {monarch.dist = #monarch.dist<[[]] partial sum>}) {
    monarch.return %x : tensor<8xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<8xf32>) -> tensor<32xf32> {
  // expected-error @+1 {{'monarch.call' op result #0 has type 'tensor<32xf32>' but endpoint @f expects 'tensor<8xf32>'}}
  %y = monarch.call @a::@f(%x) : (tensor<8xf32>) -> tensor<32xf32>
  return %y : tensor<32xf32>
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2xf32>) -> (tensor<2xf32> {monarch.dist = #monarch.dist<[["gpus"]]>}) {
    monarch.return %x : tensor<2xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<2xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'monarch.call' op result #0 of type 'tensor<16xf32>' is split by #monarch.dist<[["gpus"]]> into per-rank 'tensor<4xf32>' but endpoint @f expects 'tensor<2xf32>'}}
  %y = monarch.call @a::@f(%x) : (tensor<2xf32>) -> tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2xf32>) -> (tensor<2xf32> {monarch.dist = #monarch.dist<[["gpus"]]>}) {
    monarch.return %x : tensor<2xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<2xf32>) -> tensor<10xf32> {
  // expected-error @+1 {{'monarch.call' op result #0: tensor dimension 0 of size 10 is not divisible by 4 ranks}}
  %y = monarch.call @a::@f(%x) : (tensor<2xf32>) -> tensor<10xf32>
  return %y : tensor<10xf32>
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2xf32>) -> (tensor<2xf32> {monarch.dist = #monarch.dist<[["gpus"]]>}) {
    monarch.return %x : tensor<2xf32>
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<2xf32>) -> tensor<8xf64> {
  // expected-error @+1 {{'monarch.call' op result #0 of type 'tensor<8xf64>' cannot be distributed to endpoint @f type 'tensor<2xf32>'}}
  %y = monarch.call @a::@f(%x) : (tensor<2xf32>) -> tensor<8xf64>
  return %y : tensor<8xf64>
}

// -----

// A split dimension must be static.
shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x4xf32> {monarch.dist = #monarch.dist<[["gpus"], []]>}) {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @main(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'monarch.broadcast' op argument #0: tensor dimension 0 is split over the mesh and must have a static size}}
  monarch.broadcast @a::@f(%x) : tensor<?x4xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// monarch.feed, monarch.fetch, monarch.transfer
//===----------------------------------------------------------------------===//

func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'monarch.feed' op @nomesh does not name a monarch.proc_mesh or monarch.mesh_slice}}
  %y = monarch.feed %x to @nomesh : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @main(%x: tensor<8xf32>) -> tensor<8xf32> {
  // A function is not a mesh.
  // expected-error @+1 {{'monarch.fetch' op @main does not name a monarch.proc_mesh or monarch.mesh_slice}}
  %y = monarch.fetch %x from @main : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
func.func @main(%x: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'monarch.feed' op requires the same type for all operands and results}}
  %y = "monarch.feed"(%x) <{mesh = @m}> : (tensor<8xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf16> {
  // expected-error @+1 {{'monarch.transfer' op element type changes from 'f32' to 'f16'; transfers move bytes and cannot cast}}
  %y = monarch.transfer %x from @s0 to @s1 : tensor<8x4xf32> -> tensor<8x4xf16>
  return %y : tensor<8x4xf16>
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
func.func @main(%x: tensor<8x4xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'monarch.transfer' op shape changes from 'tensor<8x4xf32>' to 'tensor<4x8xf32>'; both ends must hold the same tensor}}
  %y = monarch.transfer %x from @s0 to @s1 : tensor<8x4xf32> -> tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'monarch.transfer' op transfers from @s0 to itself; use shard.shard to reshard inside a mesh}}
  %y = monarch.transfer %x from @s0 to @s0 : tensor<8x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 2) grid @half
func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'monarch.transfer' op @nowhere does not name a monarch.proc_mesh or monarch.mesh_slice}}
  %y = monarch.transfer %x from @m to @nowhere : tensor<8x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 2) grid @half
func.func @main(%x: tensor<8x4xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'monarch.transfer' op @nowhere does not name a monarch.proc_mesh or monarch.mesh_slice}}
  %y = monarch.transfer %x from @nowhere to @m : tensor<8x4xf32> -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
func.func @main(%x: f32) -> f32 {
  // A non-tensor where a tensor is required.
  // expected-error @+1 {{'monarch.transfer' op operand #0 must be ranked tensor of any type values, but got 'f32'}}
  %y = "monarch.transfer"(%x) <{from = @s0, to = @s1}> : (f32) -> f32
  return %y : f32
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
func.func @main(%x: tensor<*xf32>) -> tensor<*xf32> {
  // expected-error @+1 {{'monarch.transfer' op operand #0 must be ranked tensor of any type values, but got 'tensor<*xf32>'}}
  %y = "monarch.transfer"(%x) <{from = @s0, to = @s1}> : (tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

func.func @outside() -> index {
  // expected-error @+1 {{'monarch.process_index' op names actor mesh dimensions and must be inside a monarch.endpoint}}
  %i = monarch.process_index over ["gpus"] : index
  return %i : index
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f() -> index {
    // expected-error @+1 {{'monarch.process_index' op names mesh dimension "hosts" but actor mesh @a is spawned on @m which has dimensions [gpus]}}
    %i = monarch.process_index over ["hosts"] : index
    monarch.return %i : index
  }
}
monarch.actor_mesh @a = @A on @m

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x8xf32>) {
    // expected-error @+1 {{'monarch.all_to_all' op split dimension 1 (8 -> 2) and concat dimension 0 (2 -> 4) must change by the same factor}}
    %y = monarch.all_to_all %x over ["gpus"] split 1 concat 0 : tensor<2x8xf32> -> tensor<4x2xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x8x3xf32>) {
    // expected-error @+1 {{'monarch.all_to_all' op dimension 2 must be equal on both sides, got 3 and 1}}
    %y = monarch.all_to_all %x over ["gpus"] split 1 concat 0 : tensor<2x8x3xf32> -> tensor<8x2x1xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x8xf32>) {
    // expected-error @+1 {{'monarch.all_to_all' op axis 2 is out of range for rank 2}}
    %y = monarch.all_to_all %x over ["gpus"] split 2 concat 0 : tensor<2x8xf32> -> tensor<2x8xf32>
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<8xf32>) {
    // expected-error @+1 {{'monarch.all_to_all' op dimension 0 must be equal on both sides, got 8 and 4}}
    %y = monarch.all_to_all %x over ["gpus"] split 0 concat 0 : tensor<8xf32> -> tensor<4xf32>
    monarch.return
  }
}

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<2x8xf32>) {
    // A factor of 4 on a group of 2.
    // expected-error @+1 {{'monarch.all_to_all' op exchanges 4 blocks but the group on @a has 2 ranks}}
    %y = monarch.all_to_all %x over ["hosts"] split 1 concat 0 : tensor<2x8xf32> -> tensor<8x2xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<6xf32>) {
    // expected-error @+1 {{'monarch.all_to_all' op dimension 0 of size 6 does not split into the 4 ranks of the group on @a}}
    %y = monarch.all_to_all %x over ["gpus"] split 0 concat 0 : tensor<6xf32> -> tensor<6xf32>
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m

// -----

monarch.actor_class @A {
  monarch.endpoint @f(%x: tensor<?x8xf32>) {
    // expected-error @+1 {{'monarch.all_to_all' op needs static shapes}}
    %y = monarch.all_to_all %x over ["gpus"] split 1 concat 0 : tensor<?x8xf32> -> tensor<?x2xf32>
    monarch.return
  }
}
