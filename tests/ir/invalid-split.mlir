// RUN: monarch-opt %s --split-input-file --verify-diagnostics
//
// Verifier diagnostics of the split stage: control messages, awaits and data
// channels.

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
func.func @step() {
  // expected-error @+1 {{'monarch.control_msg' op must invoke at least one endpoint}}
  %t = monarch.control_msg to @m invoke [] : !monarch.token
  return
}

// -----

monarch.actor_class @A {
  monarch.endpoint @f() {
    monarch.return
  }
}
func.func @step() {
  // expected-error @+1 {{'monarch.control_msg' op @nomesh does not name a monarch.proc_mesh or monarch.mesh_slice}}
  %t = monarch.control_msg to @nomesh invoke [@a::@f] : !monarch.token
  return
}

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f() {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @step() {
  // A flat symbol must be a worker program; @f is an endpoint name.
  // expected-error @+1 {{'monarch.control_msg' op @f does not name a worker program}}
  %t = monarch.control_msg to @m invoke [@a::@f, @f] : !monarch.token
  return
}

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
func.func @step() {
  // expected-error @+1 {{'monarch.control_msg' op @s0 does not name a monarch.actor_mesh}}
  %t = monarch.control_msg to @m invoke [@s0::@forward] : !monarch.token
  return
}

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f() {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @step() {
  // expected-error @+1 {{'monarch.control_msg' op actor class @A has no endpoint @backward}}
  %t = monarch.control_msg to @m invoke [@a::@backward] : !monarch.token
  return
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
monarch.actor_class @A {
  monarch.endpoint @f() {
    monarch.return
  }
}
monarch.actor_mesh @a0 = @A on @s0
monarch.actor_mesh @a1 = @A on @s1
func.func @step() {
  // A control_msg to a mesh the actor isn't on.
  // expected-error @+1 {{'monarch.control_msg' op invokes @a1::@f but actor mesh @a1 is on @s1, not on @s0 or a slice of it}}
  %t = monarch.control_msg to @s0 invoke [@a0::@f, @a1::@f] : !monarch.token
  return
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.actor_class @A {
  monarch.endpoint @f() {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @step() {
  // The actor mesh covers the whole mesh; a message to a slice of it is not
  // enough.
  // expected-error @+1 {{'monarch.control_msg' op invokes @a::@f but actor mesh @a is on @m, not on @s0 or a slice of it}}
  %t = monarch.control_msg to @s0 invoke [@a::@f] : !monarch.token
  return
}

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f() {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @step(%x: tensor<4xf32>) {
  // Control messages carry scalars only.
  // expected-error @+1 {{'monarch.control_msg' op operand #0 must be variadic of signless integer or floating-point or index, but got 'tensor<4xf32>'}}
  %t = monarch.control_msg to @m invoke [@a::@f] args(%x : tensor<4xf32>) : !monarch.token
  return
}

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.actor_class @A {
  monarch.endpoint @f() {
    monarch.return
  }
}
monarch.actor_mesh @a = @A on @m
func.func @step() {
  // expected-error @+1 {{invalid kind of type specified: expected monarch.token, but found '!monarch.event'}}
  %t = monarch.control_msg to @m invoke [@a::@f] : !monarch.event
  return
}

// -----

func.func @step() {
  // expected-error @+1 {{'monarch.await' op must await at least one token}}
  "monarch.await"() : () -> ()
  return
}

// -----

func.func @step(%e: !monarch.event) {
  // expected-error @+1 {{'monarch.await' op operand #0 must be variadic of Completion of a control message, but got '!monarch.event'}}
  monarch.await %e : !monarch.event
  return
}

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{'monarch.channel' op @nomesh does not name a monarch.proc_mesh or monarch.mesh_slice}}
monarch.channel @c from @m to @nomesh : tensor<8x4xf32>

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{'monarch.channel' op @g does not name a monarch.proc_mesh or monarch.mesh_slice}}
monarch.channel @c from @g to @m : tensor<8x4xf32>

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// expected-error @+1 {{'monarch.channel' op attribute 'type' failed to satisfy constraint: type attribute of ranked tensor of any type values}}
monarch.channel @c from @m to @m : f32

// -----

func.func @step(%y: tensor<8x4xf32>) {
  // expected-error @+1 {{'monarch.channel_send' op @c0 does not name a monarch.channel}}
  monarch.channel_send @c0, %y : tensor<8x4xf32>
  return
}

// -----

shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
func.func @step() -> tensor<8x4xf32> {
  // A mesh is not a channel.
  // expected-error @+1 {{'monarch.channel_recv' op @m does not name a monarch.channel}}
  %y = monarch.channel_recv @m : tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
monarch.channel @c0 from @s0 to @s1 : tensor<8x4xf32>
func.func @step(%y: tensor<4x8xf32>) {
  // expected-error @+1 {{'monarch.channel_send' op type 'tensor<4x8xf32>' does not match channel @c0 of type 'tensor<8x4xf32>'}}
  monarch.channel_send @c0, %y : tensor<4x8xf32>
  return
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
monarch.channel @c0 from @s0 to @s1 : tensor<8x4xf32>
func.func @step() -> tensor<8x4xbf16> {
  // expected-error @+1 {{'monarch.channel_recv' op type 'tensor<8x4xbf16>' does not match channel @c0 of type 'tensor<8x4xf32>'}}
  %y = monarch.channel_recv @c0 : tensor<8x4xbf16>
  return %y : tensor<8x4xbf16>
}

// -----

shard.grid @g(shape = 1x4)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
monarch.mesh_slice @s0 of @m(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @s1 of @m(hosts = 0 to 1, gpus = 2 to 4) grid @half
monarch.channel @c0 from @s0 to @s1 : tensor<8x4xf32>
func.func @step(%lr: f32) {
  // expected-error @+1 {{'monarch.channel_send' op operand #0 must be ranked tensor of any type values, but got 'f32'}}
  "monarch.channel_send"(%lr) <{channel = @c0}> : (f32) -> ()
  return
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
func.func @w(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
  return %x : tensor<4xf32>
}
func.func @bad_feed(%x: tensor<8xf32>) {
  // expected-error @+1 {{'monarch.feed_input' op feeds 'tensor<8xf32>' but input #0 of @w is 'tensor<4xf32>'}}
  monarch.feed_input %x to @w input 0 : tensor<8xf32>
  return
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
func.func @w(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
  return %x : tensor<4xf32>
}
func.func @bad_index() -> tensor<4xf32> {
  // expected-error @+1 {{'monarch.fetch_output' op worker program @w has 1 outputs, no #1}}
  %r = monarch.fetch_output @w output 1 : tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
func.func @w(%x: tensor<4xf32>) -> tensor<4xf32> attributes {monarch.worker_for = @mesh} {
  return %x : tensor<4xf32>
}
func.func @bad_type() -> tensor<4xi32> {
  // expected-error @+1 {{'monarch.fetch_output' op fetches 'tensor<4xi32>' but output #0 of @w is 'tensor<4xf32>'}}
  %r = monarch.fetch_output @w output 0 : tensor<4xi32>
  return %r : tensor<4xi32>
}

// -----

func.func @plain(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @not_worker(%x: tensor<4xf32>) {
  // expected-error @+1 {{'monarch.feed_input' op @plain does not name a worker program}}
  monarch.feed_input %x to @plain input 0 : tensor<4xf32>
  return
}

// -----

shard.grid @g(shape = 2)
monarch.proc_mesh @mesh(gpus = 2) grid @g
monarch.proc_mesh @other(gpus = 2) grid @g
func.func @w() attributes {monarch.worker_for = @other} {
  return
}
func.func @wrong_mesh() {
  // expected-error @+1 {{'monarch.control_msg' op invokes worker program @w of @other on @mesh}}
  %t = monarch.control_msg to @mesh invoke [@w] : !monarch.token
  monarch.await %t : !monarch.token
  return
}

// -----

// expected-error @+1 {{'monarch.worker_for' names @nowhere which is not a monarch.proc_mesh}}
func.func @w() attributes {monarch.worker_for = @nowhere} {
  return
}

// -----

// expected-error @+1 {{'monarch.worker_for' must be a mesh symbol on a function}}
func.func @w() attributes {monarch.worker_for = 3 : i64} {
  return
}
