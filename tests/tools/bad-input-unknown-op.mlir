// An op that the monarch dialect does not define is an error at its position,
// in both the custom and the generic form; monarch-opt exits non-zero.
//
// RUN: not monarch-opt %s --split-input-file 2>&1 | FileCheck %s

// CHECK-NOT: PLEASE submit a bug report
shard.grid @g(shape = 1x4)
monarch.proc_mesh @m(hosts = 1, gpus = 4) grid @g
// CHECK: bad-input-unknown-op.mlir:[[@LINE+1]]:1: error: custom op 'monarch.frobnicate' is unknown
monarch.frobnicate @m

// -----

func.func @f() {
  // CHECK: bad-input-unknown-op.mlir:[[@LINE+1]]:3: error: unregistered operation 'monarch.frobnicate' found in dialect ('monarch') that does not allow unknown operations
  "monarch.frobnicate"() : () -> ()
  return
}

// -----

// A typo of a real op.
// CHECK: bad-input-unknown-op.mlir:[[@LINE+1]]:1: error: custom op 'monarch.procmesh' is unknown
monarch.procmesh @m(gpus = 4) grid @g

// -----

// An unknown dialect.
// CHECK: bad-input-unknown-op.mlir:[[@LINE+1]]:1: error: Dialect `monarc' not found for custom op 'monarc.proc_mesh'
monarc.proc_mesh @m(gpus = 4) grid @g
// CHECK-NOT: Stack dump
