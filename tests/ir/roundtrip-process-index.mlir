// RUN: monarch-opt %s | monarch-opt | FileCheck %s
// RUN: monarch-opt %s --verify-roundtrip | FileCheck %s

// monarch.process_index: per-rank code asks for its index along mesh dims.

shard.grid @g(shape = 2x4)
monarch.proc_mesh @m(hosts = 2, gpus = 4) grid @g
// CHECK-LABEL: monarch.actor_class @A
// CHECK:         monarch.endpoint @f() -> (index, index)
// CHECK-NEXT:      %[[G:.*]] = process_index over ["gpus"] : index
// CHECK-NEXT:      %[[HG:.*]] = process_index over ["hosts", "gpus"] : index
// CHECK-NEXT:      return %[[G]], %[[HG]] : index, index
monarch.actor_class @A {
  monarch.endpoint @f() -> (index, index) {
    %g = monarch.process_index over ["gpus"] : index
    %hg = monarch.process_index over ["hosts", "gpus"] : index
    monarch.return %g, %hg : index, index
  }
}
monarch.actor_mesh @a = @A on @m
