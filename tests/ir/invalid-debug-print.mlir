// RUN: monarch-opt %s --split-input-file --verify-diagnostics

// Verifier diagnostics of monarch.debug_print and monarch.print_buffers:
// formats whose fields name no value, specs the printer does not support,
// values it cannot print, operands that are not buffers.

func.func @field_past_the_values(%x: tensor<4xf32>) {
  // expected-error @+1 {{format: format field '{1}' names value 1, but there are 1}}
  monarch.debug_print "{0} {1}" %x : tensor<4xf32>
  return
}

// -----

func.func @unbalanced(%x: tensor<4xf32>) {
  // expected-error @+1 {{format: unclosed '{' in the format at offset 3}}
  monarch.debug_print "x: {0" %x : tensor<4xf32>
  return
}

// -----

func.func @automatic_numbering_is_the_tracers(%x: tensor<4xf32>) {
  // expected-error @+1 {{format field '{}' does not name a value by position}}
  monarch.debug_print "x: {}" %x : tensor<4xf32>
  return
}

// -----

func.func @grouping_spec(%x: tensor<4xf32>) {
  // expected-error @+1 {{unsupported format spec ',.2f'}}
  monarch.debug_print "x: {0:,.2f}" %x : tensor<4xf32>
  return
}

// -----

func.func @complex(%x: tensor<4xcomplex<f32>>) {
  // expected-error @+1 {{prints value #0 of type 'tensor<4xcomplex<f32>>'; printable values are tensors and scalars of float, integer and bool element types}}
  monarch.debug_print "x: {0}" %x : tensor<4xcomplex<f32>>
  return
}

// -----

func.func @dynamic(%x: tensor<?xf32>) {
  // expected-error @+1 {{prints value #0 of dynamic shape 'tensor<?xf32>'}}
  monarch.debug_print "x: {0}" %x : tensor<?xf32>
  return
}

// -----

shard.grid @g(shape = 1)
monarch.proc_mesh @mesh(gpus = 1) grid @g
monarch.plan @p on @mesh signature () -> () {
  monarch.rank_program rank 0 arena 16 {
    // expected-error @+1 {{operand #0 is not a #monarch.buf}}
    monarch.print_buffers "{0}" [1 : i64]
  }
}

// -----

shard.grid @g(shape = 1)
monarch.proc_mesh @mesh(gpus = 1) grid @g
monarch.plan @p on @mesh signature () -> () {
  monarch.rank_program rank 0 arena 16 {
    // expected-error @+1 {{format: single '}' in the format at offset 1}}
    monarch.print_buffers "a}" [#monarch.buf<0, tensor<4xf32>>]
  }
}

// -----

shard.grid @g(shape = 1)
monarch.proc_mesh @mesh(gpus = 1) grid @g
monarch.plan @p on @mesh signature () -> () {
  monarch.rank_program rank 0 arena 16 {
    // expected-error @+1 {{buffer #monarch.buf<64, tensor<4xf32>> (offset 64, 16 bytes) lies outside the arena of 16 bytes of rank 0}}
    monarch.print_buffers "{0}" [#monarch.buf<64, tensor<4xf32>>]
  }
}
