// RUN: monarch-opt %s --monarch-compile-to-planned | FileCheck %s
// RUN: monarch-compile %s --print-plan | FileCheck %s --check-prefix=PLAN
// RUN: sed '/monarch.topology/d' %s | monarch-opt --monarch-compile-to-planned | FileCheck %s --check-prefix=ONEHOST
//
// A mesh of two hosts with two GPUs each: monarch-plan-transfers labels
// every transfer with the link it crosses (an all_reduce over "gpus" stays
// on one host's NVLink; one over the whole mesh and the transfer from host
// 0's slice to host 1's cross the network) and monarch-schedule costs them
// with the topology's figures (2 us / 10 us latencies instead of the
// default 20 us). Without the topology nothing is labelled.

// CHECK:       monarch.rank_program rank 0 arena 4096 attributes {monarch.critical_path_us = 1.206400e+01
// CHECK:         monarch.collective all_reduce sum {{.*}} on @step.worker.mesh.comm0 stream 2 link nvlink
// CHECK:         monarch.collective all_reduce sum {{.*}} on @step.worker.mesh.comm1 stream 2 link network
// CHECK:         monarch.send {{.*}} to 2 on @step.worker.mesh.comm1 stream 1 group 0 link network
// CHECK:       monarch.rank_program rank 2
// CHECK:         monarch.collective all_reduce sum {{.*}} on @step.worker.mesh.comm2 stream 2 link nvlink
// CHECK:         monarch.recv {{.*}} from 0 on @step.worker.mesh.comm1 stream 1 group 0 link network

// The ExecutionPlan records the hosts.
// PLAN:      topology:
// PLAN-NEXT:   @mesh  host host0  ranks [0, 1]
// PLAN-NEXT:   @mesh  host host1  ranks [2, 3]

// ONEHOST:     monarch.rank_program rank 0 arena 4096 attributes {monarch.critical_path_us = 4.{{[0-9]+}}e+01
// ONEHOST-NOT: link
shard.grid @grid(shape = 2x2)
shard.grid @half(shape = 1x2)
monarch.proc_mesh @mesh(hosts = 2, gpus = 2) grid @grid
monarch.topology for @mesh hosts ["hosts"] intra nvlink(450.0 GBps, 2.0 us) inter network(25.0 GBps, 10.0 us)
monarch.mesh_slice @h0 of @mesh(hosts = 0 to 1, gpus = 0 to 2) grid @half
monarch.mesh_slice @h1 of @mesh(hosts = 1 to 2, gpus = 0 to 2) grid @half
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
