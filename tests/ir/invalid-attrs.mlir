// RUN: monarch-opt %s --split-input-file --verify-diagnostics
//
// Diagnostics of the #monarch.dist and #monarch.buf attributes and of the
// dialect's checks on discardable `monarch.*` attributes.

monarch.actor_class @A {
  // expected-error @+1 {{unknown reduction 'mean'}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.dist = #monarch.dist<[["gpus"]] partial mean>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{each #monarch.dist entry must be an array of mesh dimension names}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.dist = #monarch.dist<["gpus"]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{mesh dimension names in #monarch.dist must be non-empty strings}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.dist = #monarch.dist<[[0]]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{mesh dimension names in #monarch.dist must be non-empty strings}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.dist = #monarch.dist<[[@gpus]]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{mesh dimension names in #monarch.dist must be non-empty strings}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.dist = #monarch.dist<[[""]]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{mesh dimension "gpus" appears more than once in #monarch.dist}}
  monarch.endpoint @f(%x: tensor<8x8xf32> {monarch.dist = #monarch.dist<[["gpus"], ["hosts", "gpus"]]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // The same name twice in one entry is rejected too (with the same message).
  // expected-error @+1 {{mesh dimension "gpus" appears more than once in #monarch.dist}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.dist = #monarch.dist<[["gpus", "gpus"]]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{expected attribute value}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.dist = #monarch.dist<>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{on argument #0 has 1 entries but the tensor has rank 2}}
  monarch.endpoint @f(%x: tensor<8x4xf32> {monarch.dist = #monarch.dist<[["gpus"]]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{on argument #1 has 3 entries but the tensor has rank 2}}
  monarch.endpoint @f(%a: f32, %x: tensor<8x4xf32> {monarch.dist = #monarch.dist<[["gpus"], [], []]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{on result #0 has 2 entries but the tensor has rank 1}}
  monarch.endpoint @f(%x: tensor<8xf32>) -> (tensor<8xf32> {monarch.dist = #monarch.dist<[[], []]>}) {
    monarch.return %x : tensor<8xf32>
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{on argument #0 requires a ranked tensor, got 'f32'}}
  monarch.endpoint @f(%x: f32 {monarch.dist = #monarch.dist<[]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{on argument #0 requires a ranked tensor, got 'tensor<*xf32>'}}
  monarch.endpoint @f(%x: tensor<*xf32> {monarch.dist = #monarch.dist<[]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error @+1 {{on result #0 requires a ranked tensor, got 'i32'}}
  monarch.endpoint @f(%x: i32) -> (i32 {monarch.dist = #monarch.dist<[] partial sum>}) {
    monarch.return %x : i32
  }
}

// -----

monarch.actor_class @A {
  // expected-error-re @+1 {{'{{"?}}monarch.dist{{"?}}' must be a #monarch.dist attribute}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.dist = [["gpus"]]}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error-re @+1 {{'{{"?}}monarch.dist{{"?}}' must be a #monarch.dist attribute}}
  monarch.endpoint @f(%x: tensor<8xf32>) -> (tensor<8xf32> {monarch.dist = "gpus"}) {
    monarch.return %x : tensor<8xf32>
  }
}

// -----

monarch.actor_class @A {
  // expected-error-re @+1 {{unknown monarch argument attribute '{{"?}}monarch.split{{"?}}'}}
  monarch.endpoint @f(%x: tensor<8xf32> {monarch.split = #monarch.dist<[["gpus"]]>}) {
    monarch.return
  }
}

// -----

monarch.actor_class @A {
  // expected-error-re @+1 {{unknown monarch result attribute '{{"?}}monarch.layout{{"?}}'}}
  monarch.endpoint @f(%x: tensor<8xf32>) -> (tensor<8xf32> {monarch.layout = 1 : i64}) {
    monarch.return %x : tensor<8xf32>
  }
}

// -----

// expected-error-re @+1 {{'{{"?}}monarch.dist{{"?}}' is only valid on endpoint arguments and results}}
func.func @f() attributes {monarch.dist = #monarch.dist<[]>} {
  return
}

// -----

// expected-error-re @+1 {{unknown monarch attribute '{{"?}}monarch.stage{{"?}}'}}
func.func @f() attributes {monarch.stage = 0 : i64} {
  return
}

// -----

// `monarch.rank` marks the code of one rank (monarch-specialize-ranks).
// expected-error @+1 {{'monarch.rank' must be a non-negative i64 on a function}}
func.func @f() attributes {monarch.rank = -1 : i64} {
  return
}

// -----

// expected-error @+1 {{'monarch.rank' must be a non-negative i64 on a function}}
monarch.actor_class @A attributes {monarch.rank = 0 : i64} {
}

// -----

// `monarch.dist` describes endpoint signatures only.
// expected-error @+1 {{'monarch.dist' is only valid on endpoint arguments and results}}
func.func @f(%x: tensor<8xf32> {monarch.dist = #monarch.dist<[["gpus"]]>}) {
  return
}

// -----

// expected-error @+1 {{'monarch.dist' is only valid on endpoint arguments and results}}
func.func @f() -> (tensor<8xf32> {monarch.dist = #monarch.dist<[["gpus"]]>}) {
  %c = arith.constant dense<0.0> : tensor<8xf32>
  return %c : tensor<8xf32>
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{buffer offset must be non-negative, got -16}}
    monarch.feed_buffer 0 into #monarch.buf<-16, tensor<4xf32>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{buffer type must have a static shape, got 'tensor<?x4xf32>'}}
    monarch.feed_buffer 0 into #monarch.buf<0, tensor<?x4xf32>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{buffer element type must be an integer or float, got 'index'}}
    monarch.feed_buffer 0 into #monarch.buf<0, tensor<4xindex>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // expected-error @+1 {{buffer element type must be an integer or float, got 'complex<f32>'}}
    monarch.feed_buffer 0 into #monarch.buf<0, tensor<4xcomplex<f32>>>
  }
}

// -----

shard.grid @g(shape = 4)
monarch.proc_mesh @m(gpus = 4) grid @g
monarch.plan @p on @m {
  monarch.rank_program rank 0 arena 64 {
    // An unranked tensor is not a RankedTensorType.
    // expected-error @+2 {{invalid kind of type specified: expected builtin.tensor}}
    // expected-error @+1 {{failed to parse Monarch_BufferAttr parameter 'type'}}
    monarch.feed_buffer 0 into #monarch.buf<0, tensor<*xf32>>
  }
}
