// RUN: monarch-opt %s --monarch-to-partitioned --monarch-to-split --monarch-specialize-ranks --monarch-plan-transfers -o %t.classes
// RUN: monarch-opt %s --monarch-to-partitioned --monarch-to-split --monarch-specialize-ranks --monarch-plan-transfers=rank-classes=false -o %t.each
// RUN: diff %t.classes %t.each
// RUN: monarch-opt %s --monarch-to-partitioned --monarch-to-split --monarch-specialize-ranks=classes=1 --monarch-plan-transfers -o %t.spec
// RUN: diff %t.spec %t.each
// RUN: FileCheck %s < %t.classes
//
// monarch-plan-transfers lowers the first rank of each class of ranks whose
// functions are equal but for their collectives' groups, and gives the
// others a copy of its program with their own peers, communicators, links
// and offsets: the plan is the one lowering every rank builds (the diff),
// from rank functions or from class functions (specialize-ranks classes=1,
// which gives host 0's four ranks one function).
// Here every rank of host 0 runs the same function, but the transfer from
// host 0's four ranks to host 1's first two gives ranks 0 and 1 a send and
// ranks 2 and 3 none: those two are lowered on their own, not copied.
// docs/spmd-classes.md; plan-transfers-rank-classes-dtp.mlir is the
// pipeline step of the scale benchmark.

// CHECK:       monarch.communicator @step.worker.mesh.comm0 on @mesh ranks [0, 1, 2, 3]
// CHECK:       monarch.communicator @step.worker.mesh.comm1 on @mesh ranks [0, 1, 2, 3, 4, 5, 6, 7]
// CHECK:       monarch.rank_program rank 0
// CHECK:         monarch.collective all_reduce sum {{.*}} on @step.worker.mesh.comm0 stream 2 link nvlink
// CHECK:         monarch.collective all_reduce sum {{.*}} on @step.worker.mesh.comm1 stream 2 link network
// CHECK:         monarch.send {{.*}} to 4 on @step.worker.mesh.comm1 stream 1 {{.*}}link network
// CHECK:       monarch.rank_program rank 1
// CHECK:         monarch.collective all_reduce sum {{.*}} on @step.worker.mesh.comm0
// CHECK:         monarch.send {{.*}} to 5 on @step.worker.mesh.comm1 stream 1 {{.*}}link network
// CHECK:       monarch.rank_program rank 2
// CHECK-NOT:     monarch.send
// CHECK:       monarch.rank_program rank 3
// CHECK-NOT:     monarch.send
// CHECK:       monarch.rank_program rank 4
// CHECK:         monarch.collective all_reduce sum {{.*}} on @step.worker.mesh.comm2 stream 2 link nvlink
// CHECK:         monarch.recv {{.*}} from 0 on @step.worker.mesh.comm1 stream 1 {{.*}}link network
// CHECK:       monarch.rank_program rank 5
// CHECK:         monarch.recv {{.*}} from 1 on @step.worker.mesh.comm1
// CHECK:       monarch.rank_program rank 6
// CHECK-NOT:     monarch.recv
// CHECK:       monarch.rank_program rank 7
shard.grid @grid(shape = 2x4)
shard.grid @row(shape = 1x4)
shard.grid @pair(shape = 1x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 4) grid @grid
monarch.topology for @mesh hosts ["hosts"] intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)
monarch.mesh_slice @h0 of @mesh(hosts = 0 to 1, gpus = 0 to 4) grid @row
monarch.mesh_slice @h1 of @mesh(hosts = 1 to 2, gpus = 0 to 2) grid @pair
monarch.actor_class @Sum {
  monarch.endpoint @local(%x: tensor<256xf32>) -> tensor<256xf32> {
    %y = monarch.all_reduce %x over ["gpus"] sum : tensor<256xf32>
    monarch.return %y : tensor<256xf32>
  }
  monarch.endpoint @global(%x: tensor<256xf32>) -> tensor<256xf32> {
    %y = monarch.all_reduce %x over ["hosts", "gpus"] sum : tensor<256xf32>
    monarch.return %y : tensor<256xf32>
  }
  monarch.endpoint @same(%x: tensor<256xf32>) -> tensor<256xf32> {
    monarch.return %x : tensor<256xf32>
  }
}
monarch.actor_mesh @all = @Sum on @mesh
monarch.actor_mesh @first = @Sum on @h0
func.func @step(%arg0: tensor<256xf32>) -> (tensor<256xf32>, tensor<256xf32>, tensor<256xf32>) {
  %0 = monarch.feed %arg0 to @mesh : tensor<256xf32>
  %1 = monarch.call @all::@local(%0) : (tensor<256xf32>) -> tensor<256xf32>
  %2 = monarch.call @all::@global(%0) : (tensor<256xf32>) -> tensor<256xf32>
  %3 = monarch.feed %arg0 to @h0 : tensor<256xf32>
  %5 = monarch.call @first::@same(%3) : (tensor<256xf32>) -> tensor<256xf32>
  %4 = monarch.transfer %5 from @h0 to @h1 : tensor<256xf32> -> tensor<256xf32>
  %r1 = monarch.fetch %1 from @mesh : tensor<256xf32>
  %r2 = monarch.fetch %2 from @mesh : tensor<256xf32>
  %r3 = monarch.fetch %4 from @h1 : tensor<256xf32>
  return %r1, %r2, %r3 : tensor<256xf32>, tensor<256xf32>, tensor<256xf32>
}
